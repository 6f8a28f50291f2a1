"""A bridge from a sandbox without network to chosen ports of this machine (the mock server) over Unix sockets.

A bubblewrap sandbox with ``--unshare-net`` has a loopback of its own: its 127.0.0.1 is not the machine's,
so a subprocess agent could not reach the run's mock server. :class:`PortBridge` listens, outside, on one
Unix socket per port in a folder of its own and pipes each connection to ``127.0.0.1:PORT``;
:data:`RELAY` is the small program that runs first inside the sandbox: it listens on the sandbox's
``127.0.0.1:PORT`` for every bridged port, pipes each connection to the folder's Unix socket (the folder is
bound into the sandbox), then runs the agent's command and exits with its status. The agent reaches the
bridged ports at their usual address, and nothing else.

Examples
--------
>>> import socket
>>> server = socket.create_server(("127.0.0.1", 0))
>>> port = server.getsockname()[1]
>>> with PortBridge([port]) as bridge:
...     client = socket.socket(socket.AF_UNIX)
...     client.connect(bridge.socket_path(port))
...     client.sendall(b"ping")
...     conn, _ = server.accept()
...     print(conn.recv(4))
...     conn.close(); client.close()
b'ping'
>>> server.close()
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import Sequence

from agentab.errors import HarnessError

__all__ = ["PortBridge", "RELAY", "INSIDE"]

#: Where the bridge's folder is bound inside the sandbox (under its fresh /tmp).
INSIDE = "/tmp/.agentab-bridge"
_POLL_S = 0.05
_CHUNK = 65536

#: The relay run inside the sandbox: ``python -c RELAY FOLDER PORT,PORT,... -- ARGV...``.
RELAY = r'''
import socket, subprocess, sys, threading
folder, ports, argv = sys.argv[1], [int(p) for p in sys.argv[2].split(",") if p], sys.argv[4:]

def pipe(src, dst, done):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    with done[0]:
        done[1] += 1
        last = done[1] == 2
    if last:
        src.close(); dst.close()

def serve(listener, path):
    while True:
        conn, _ = listener.accept()
        up = socket.socket(socket.AF_UNIX)
        try:
            up.connect(path)
        except OSError:
            conn.close(); up.close(); continue
        done = [threading.Lock(), 0]
        threading.Thread(target=pipe, args=(conn, up, done), daemon=True).start()
        threading.Thread(target=pipe, args=(up, conn, done), daemon=True).start()

for port in ports:
    listener = socket.create_server(("127.0.0.1", port))
    threading.Thread(target=serve, args=(listener, f"{folder}/{port}.sock"), daemon=True).start()
try:
    sys.exit(subprocess.call(argv))
except OSError as exc:
    print(f"agentab sandbox: cannot run {argv[0]!r}: {exc}", file=sys.stderr)
    sys.exit(127)
'''


class PortBridge:
    """Unix sockets, one per port, each piped to ``host:PORT`` on this machine; a context manager.

    Parameters
    ----------
    ports : sequence of int
        The ports to bridge (the mock server's).
    host : str
        Where they listen on this machine.
    """

    def __init__(self, ports: Sequence[int], host: str = "127.0.0.1") -> None:
        ports = tuple(ports)
        if not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports):
            raise HarnessError(f"bridged ports must be integers in 1..65535, got {list(ports)!r}")
        self.ports, self.host = tuple(dict.fromkeys(ports)), host
        self.folder: Path | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def socket_path(self, port: int) -> str:
        """The Unix socket of ``port`` on this machine (only while the bridge is open)."""
        if self.folder is None:
            raise HarnessError("the port bridge is not open: use it in a `with` block")
        return str(self.folder / f"{port}.sock")

    def __enter__(self) -> "PortBridge":
        if self.folder is not None:
            raise HarnessError("the port bridge is already open")
        self._stop.clear()
        self.folder = Path(tempfile.mkdtemp(prefix="agentab-bridge-"))
        for port in self.ports:
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(self.socket_path(port))
            listener.listen(64)
            listener.settimeout(_POLL_S)
            self._start(self._accept, listener, port)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.folder is None:
            return
        self._stop.set()
        with self._lock:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def _start(self, target, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="agentab-bridge")
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept(self, listener: socket.socket, port: int) -> None:
        with listener:
            while not self._stop.is_set():
                try:
                    conn, _ = listener.accept()
                except (TimeoutError, socket.timeout):
                    continue
                except OSError:
                    return
                conn.settimeout(None)
                try:
                    up = socket.create_connection((self.host, port), timeout=30)
                    up.settimeout(None)
                except OSError:
                    conn.close()
                    continue
                with self._lock:
                    self._open.update((conn, up))
                done = [threading.Lock(), 0]
                self._start(self._pipe, conn, up, done)
                self._start(self._pipe, up, conn, done)

    def _pipe(self, src: socket.socket, dst: socket.socket, done: list) -> None:
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with done[0]:
            done[1] += 1
            last = done[1] == 2
        if last:
            with self._lock:
                self._open.difference_update((src, dst))
            src.close()
            dst.close()
