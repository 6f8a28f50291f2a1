"""The network policy of a run: outbound connections blocked or recorded, except to allowed hosts.

Two mechanisms, one per kind of agent:

- **In-process Python agents**: :class:`NetworkPolicy`, a context manager enforced at the socket level. It
  patches ``socket.socket.connect``, ``connect_ex`` and ``sendto`` (through which ``socket.create_connection``,
  ``http.client`` and ``urllib.request``, urllib3 and requests, httpx/httpcore and asyncio's
  ``loop.sock_connect`` / ``create_connection`` / streams all pass) and the name lookups ``socket.getaddrinfo``,
  ``gethostbyname`` and ``gethostbyname_ex``. While active it applies to the whole process, every thread
  included. Code that opens sockets outside Python's ``socket`` module (a C extension with its own network
  stack, uvloop's event loop) is not seen: run such agents as subprocesses under :func:`sandbox_command`.
- **Subprocess agents** (an agent CLI): :func:`sandbox_command` wraps the command in bubblewrap (``bwrap``)
  with its own empty network namespace and process namespace, the work folder bound read-write and the rest
  of the file system read-only. The mock server stays reachable at its usual ``127.0.0.1:PORT`` through a
  :class:`PortBridge` (Unix sockets bound into the sandbox, relayed on both sides), and nothing else does.
  Without bubblewrap nothing is enforced, and the returned ``enforced`` says so.

Name lookups in "block" mode: a lookup of a name that is not allowed is refused (:class:`NetworkBlocked`)
and recorded with the name, before any DNS query leaves the machine; a lookup of an address literal or of
``localhost`` goes through (it asks no server) and the connection is judged by its address.

Examples
--------
A listener on this machine stands in for the internet; the policy refuses the connection and records it:

>>> import socket
>>> listener = socket.create_server(("127.0.0.1", 0))
>>> port = listener.getsockname()[1]
>>> with NetworkPolicy("block") as policy:
...     try:
...         socket.create_connection(("127.0.0.1", port), timeout=5)
...     except NetworkBlocked as err:
...         print(str(err).replace(str(port), "PORT"))
[Errno 111] network blocked: 127.0.0.1:PORT is not on the allow list
>>> policy.calls == [{"host": "127.0.0.1", "port": port, "method": None, "path": None, "action": "blocked"}]
True
>>> listener.close()
"""

from __future__ import annotations

import errno
import ipaddress
import re
import shutil
import socket
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from agentab.harness._bridge import INSIDE as BRIDGE_INSIDE
from agentab.harness._bridge import RELAY, PortBridge
from agentab.errors import HarnessError, NetworkBlocked
from agentab.harness._patch import Patches

__all__ = ["NetworkPolicy", "NetworkBlocked", "SandboxCommand", "sandbox_command", "sandbox_available", "PortBridge",
           "MODES"]

#: The network modes: refuse and record, let through and record, let through and record nothing.
MODES = ("block", "record", "allow")
_INET = (socket.AF_INET, socket.AF_INET6)
#: Bytes of a recorded connection kept while looking for its HTTP request line.
_REQUEST_LINE_BYTES = 8192
_REQUEST_LINE = re.compile(rb"^([A-Z][A-Z-]{1,15}) (\S+) HTTP/\d(?:\.\d)?\r?\n")
_LOCAL_NAMES = ("localhost", "localhost.", "ip6-localhost")
#: Names of this machine's loopback: allowing one (the mock server's 127.0.0.1) allows the others.
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _check_mode(mode: Any, what: str = "mode") -> str:
    if mode not in MODES:
        raise HarnessError(f"`{what}` must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return mode


def _norm_host(host: Any) -> str:
    """A host as compared: lower case, brackets off, addresses in their canonical form."""
    text = str(host).strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_address(text.split("%")[0]))
    except ValueError:
        return text


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True


def _port(port: Any) -> int | None:
    """A port as recorded: an int, a service name looked up locally (/etc/services), else None."""
    if port is None:
        return None
    if isinstance(port, bytes):
        port = port.decode("ascii", "replace")
    try:
        return int(port)
    except (TypeError, ValueError):
        pass
    try:
        return socket.getservbyname(str(port), "tcp")
    except OSError:
        return None


def _request_line(data: bytes) -> tuple[str, str] | None:
    """``(method, path)`` of an HTTP/1 request's first line (the query left out), or None."""
    match = _REQUEST_LINE.match(data)
    if match is None:
        return None
    target = match.group(2).decode("latin-1")
    if "://" in target:  # absolute form, as sent to a proxy
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    return match.group(1).decode("ascii"), target.split("?", 1)[0].split("#", 1)[0] or "/"


class NetworkPolicy:
    """Block or record outbound connections of the Python process while active.

    Parameters
    ----------
    mode : {"block", "record", "allow"}
        "block": a connection to a host not allowed raises :class:`NetworkBlocked` (``connect_ex`` returns
        ``ECONNREFUSED``) and is recorded with action "blocked". "record": it goes through and is recorded
        with action "recorded", with the HTTP method and path read from the first bytes sent when it
        speaks plain HTTP/1 (null over TLS). "allow": nothing is patched, nothing recorded.
    allow : sequence of str or (str, int)
        Hosts (any port) or ``(host, port)`` pairs always let through and never recorded. A name allows
        the addresses it resolves to while the policy is active; ``127.0.0.1``, ``::1`` and ``localhost``
        are one host (allowing the mock server at ``127.0.0.1:PORT`` lets ``localhost:PORT`` through on
        either address family). Add more with :meth:`allow`.

    Notes
    -----
    The policy is process-wide while active: it covers every thread (an agent's worker threads included)
    and every asyncio event loop built on Python sockets. It is thread-safe. Entering it again (the same
    policy, or a second one inside) is safe; every policy puts back exactly what it replaced when it exits,
    in whatever order nested policies exit. Unix-domain sockets are not network and are never judged.
    Each connection attempt (each address tried) is one entry of :attr:`calls`; a refused name lookup
    is one entry with the name.

    Examples
    --------
    >>> with NetworkPolicy("block", allow=[("127.0.0.1", 8080), "mock.internal"]) as policy:
    ...     policy.allowed("127.0.0.1", 8080), policy.allowed("127.0.0.1", 9), policy.allowed("mock.internal", 9)
    (True, False, True)
    >>> NetworkPolicy("deny")
    Traceback (most recent call last):
    ...
    agentab.errors.HarnessError: `mode` must be one of 'block', 'record', 'allow', got 'deny'
    """

    def __init__(self, mode: Literal["block", "record", "allow"] = "block",
                 allow: Sequence[str | tuple[str, int]] = ()) -> None:
        self.mode = _check_mode(mode)
        self._lock = threading.RLock()
        self._hosts: set[str] = set()
        self._pairs: set[tuple[str, int]] = set()
        self._names: dict[str, str] = {}  # address -> the name it was looked up by
        self._calls: list[dict[str, Any]] = []
        self._pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # socket -> (entry, bytes)
        self._patches: Patches | None = None
        self._depth = 0
        if isinstance(allow, str) or (isinstance(allow, tuple) and len(allow) == 2 and isinstance(allow[1], int)):
            raise HarnessError(f"`allow` must be a list of hosts or (host, port) pairs, got {allow!r}")
        for item in allow:
            if isinstance(item, str):
                self.allow(item)
            elif isinstance(item, (tuple, list)) and len(item) == 2:
                self.allow(item[0], item[1])
            else:
                raise HarnessError(f"`allow` entries must be a host or a (host, port) pair, got {item!r}")

    def allow(self, host: str, port: int | None = None) -> "NetworkPolicy":
        """Let connections to ``host`` (on ``port`` only, when given) through; returns the policy.

        Examples
        --------
        >>> policy = NetworkPolicy().allow("127.0.0.1", 8000)
        >>> policy.allowed("127.0.0.1", 8000), policy.allowed("localhost", 8000), policy.allowed("::1", 8001)
        (True, True, False)
        """
        if not isinstance(host, str) or not host.strip():
            raise HarnessError(f"an allowed host must be non-empty text, got {host!r}")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
            raise HarnessError(f"an allowed port must be an integer in 1..65535, got {port!r}")
        name = _norm_host(host)
        names = _LOOPBACK if name in _LOOPBACK else (name,)  # the loopback is one host, however it is named
        with self._lock:
            for name in names:
                if port is None:
                    self._hosts.add(name)
                else:
                    self._pairs.add((name, port))
        return self

    def allowed(self, host: str, port: int | None) -> bool:
        """Whether a connection to ``host:port`` goes through unrecorded (``port=None``: any port of it)."""
        with self._lock:
            names = {_norm_host(host)}
            names |= {self._names[n] for n in tuple(names) if n in self._names}
            if names & self._hosts:
                return True
            if port is None:
                return any(h in names for h, _ in self._pairs)
            return any((n, port) in self._pairs for n in names)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every attempt judged so far: ``{"host", "port", "method", "path", "action"}`` (copies)."""
        with self._lock:
            return [dict(call) for call in self._calls]

    def __enter__(self) -> "NetworkPolicy":
        with self._lock:
            self._depth += 1
            if self._depth == 1 and self.mode != "allow":
                self._patches = Patches()
                self._install(self._patches)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._patches is not None:
                self._patches.restore()
                self._patches = None

    def _install(self, patches: Patches) -> None:
        cls = socket.socket
        patches.install(cls, "connect", lambda orig: lambda sock, address: self._connect(orig, sock, address))
        patches.install(cls, "connect_ex", lambda orig: lambda sock, address: self._connect(orig, sock, address, True))
        patches.install(cls, "sendto", lambda orig: lambda sock, *args: self._sendto(orig, sock, args))
        patches.install(socket, "getaddrinfo", lambda orig: lambda *a, **k: self._lookup(
            lambda: orig(*a, **k), a[0] if a else k.get("host"), a[1] if len(a) > 1 else k.get("port")))
        for name in ("gethostbyname", "gethostbyname_ex"):
            patches.install(socket, name, lambda orig: lambda host: self._lookup(lambda: orig(host), host, None))
        if self.mode == "record":
            for name in ("send", "sendall"):
                patches.install(cls, name, lambda orig: lambda sock, data, *a: self._sent(orig, sock, data, a))
            patches.install(cls, "sendmsg", lambda orig: lambda sock, buffers, *a: self._sent(
                orig, sock, buffers, a, many=True))

    def _judge(self, host: Any, port: Any) -> dict[str, Any] | None:
        """The entry of an attempt on ``host:port`` (recorded here), or None when it is allowed."""
        host, port = str(host), _port(port)
        if self.allowed(host, port):
            return None
        with self._lock:
            shown = self._names.get(_norm_host(host), host)
            entry = {"host": shown, "port": port, "method": None, "path": None,
                     "action": "blocked" if self.mode == "block" else "recorded"}
            self._calls.append(entry)
        return entry

    def _connect(self, orig: Callable, sock: socket.socket, address: Any, ex: bool = False) -> Any:
        if sock.family not in _INET or not isinstance(address, tuple) or len(address) < 2:
            return orig(sock, address)
        entry = self._judge(address[0], address[1])
        if entry is not None and entry["action"] == "blocked":
            if ex:
                return errno.ECONNREFUSED
            raise NetworkBlocked(entry["host"], entry["port"])
        if entry is not None:
            with self._lock:
                self._pending[sock] = (entry, b"")
        return orig(sock, address)

    def _sendto(self, orig: Callable, sock: socket.socket, args: tuple) -> Any:
        address = args[-1] if len(args) >= 2 else None
        if sock.family in _INET and isinstance(address, tuple) and len(address) >= 2:
            entry = self._judge(address[0], address[1])
            if entry is not None and entry["action"] == "blocked":
                raise NetworkBlocked(entry["host"], entry["port"])
        return orig(sock, *args)

    def _lookup(self, call: Callable[[], Any], host: Any, port: Any) -> Any:
        """A name lookup: literals and localhost pass; an allowed name passes; others are blocked or recorded."""
        text = host.decode("ascii", "replace") if isinstance(host, bytes) else host
        if not isinstance(text, str) or _is_literal(_norm_host(text)) or _norm_host(text) in _LOCAL_NAMES:
            return call()
        name = _norm_host(text)
        if not self.allowed(name, _port(port)):
            if self.mode == "block":
                entry = self._judge(name, port)
                raise NetworkBlocked(entry["host"] if entry else name, _port(port))
            try:
                result = call()
            except OSError:
                self._judge(name, port)  # record mode: the attempt ends at its lookup, recorded with its name
                raise
        else:
            result = call()
        self._remember(name, result)
        return result

    def _remember(self, name: str, result: Any) -> None:
        """Map the addresses a lookup returned to the name looked up, for the allow list and the entries."""
        addresses: list[str] = []
        if isinstance(result, str):
            addresses = [result]
        elif isinstance(result, tuple) and len(result) == 3:  # gethostbyname_ex
            addresses = list(result[2])
        elif isinstance(result, list):
            addresses = [info[4][0] for info in result if len(info) == 5 and info[4]]
        with self._lock:
            for address in addresses:
                self._names[_norm_host(address)] = name

    def _sent(self, orig: Callable, sock: socket.socket, data: Any, args: tuple, many: bool = False) -> Any:
        if self._pending:
            with self._lock:
                pending = self._pending.get(sock)
                if pending is not None:
                    entry, seen = pending
                    chunk = b"".join(bytes(b) for b in data) if many else bytes(data)
                    seen = (seen + chunk)[:_REQUEST_LINE_BYTES]
                    parsed = _request_line(seen)
                    if parsed is not None:
                        entry["method"], entry["path"] = parsed
                    if parsed is not None or b"\n" in seen or len(seen) >= _REQUEST_LINE_BYTES:
                        del self._pending[sock]
                    else:
                        self._pending[sock] = (entry, seen)
        return orig(sock, data, *args)


@dataclass(frozen=True)
class SandboxCommand:
    """A command ready to run in a sandbox (or as is, when there is none).

    Attributes
    ----------
    argv : tuple of str
        What to execute.
    enforced : str
        One line saying what is enforced (for the record's metadata).
    tool : str or None
        ``"bwrap"``, or None when nothing is enforced.

    Examples
    --------
    >>> SandboxCommand(("agent",), "nothing enforced: bubblewrap (bwrap) is not installed", None).tool is None
    True
    """

    argv: tuple[str, ...]
    enforced: str
    tool: str | None


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def sandbox_available() -> bool:
    """Whether bubblewrap is installed and can make a sandbox here (user namespaces allowed).

    Examples
    --------
    >>> isinstance(sandbox_available(), bool)
    True
    """
    tool = _bwrap()
    if tool is None:
        return False
    try:
        probe = subprocess.run([tool, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                                "--unshare-net", "--die-with-parent", "--", "true"],
                               capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _under_tmp(program: str) -> list[str]:
    """Read-only binds, over the fresh ``/tmp``, of what the command needs that lives in the machine's ``/tmp``:
    this Python (a virtual environment or a checkout there, its ``sys.path``) and the command's own program."""
    found = shutil.which(program)
    places = {sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path, *([str(Path(found).parent)] if found else [])}
    tmp = Path("/tmp")
    inside = sorted({str(Path(p).resolve()) for p in places if p and Path(p).exists()
                     and Path(p).resolve().is_relative_to(tmp) and Path(p).resolve() != tmp})
    kept = [p for p in inside if not any(p != q and Path(p).is_relative_to(q) for q in inside)]  # outermost only
    return [arg for p in kept for arg in ("--ro-bind", p, p)]


def sandbox_command(argv: Sequence[str], workdir: str | Path, *,
                    network: Literal["block", "record", "allow"] = "block",
                    bridge: PortBridge | None = None) -> SandboxCommand:
    """Wrap a subprocess agent's command in bubblewrap: no network, only its work folder writable.

    Parameters
    ----------
    argv : sequence of str
        The agent's command.
    workdir : str or Path
        The run's sandbox folder: bound read-write at the same path, and the command's working directory.
        The rest of the file system is read-only, ``/tmp`` is a fresh empty folder, ``/dev`` and ``/proc``
        are the sandbox's own, and the command dies with its parent.
    network : {"block", "record", "allow"}
        "block": the command gets its own network namespace with only a loopback of its own, so no
        connection leaves it (127.0.0.1 inside is not the machine's). "record": a subprocess's
        connections cannot be recorded without a proxy, so they are blocked as for "block", and
        ``enforced`` says so. "allow": the machine's network is shared (the file system rules remain).
    bridge : PortBridge, optional
        An open :class:`~agentab.harness._bridge.PortBridge` of ports on this machine (the mock server's)
        that the command may still reach at ``127.0.0.1:PORT`` without network: a relay inside the
        sandbox pipes them through the bridge's Unix sockets, then runs the command.

    Returns
    -------
    SandboxCommand
        ``argv`` to execute, ``enforced`` (one line for the record's metadata), ``tool``. Without
        bubblewrap, ``argv`` is the command as given and ``enforced`` says nothing is enforced.

    Examples
    --------
    >>> import shutil, tempfile
    >>> work = tempfile.mkdtemp()
    >>> cmd = sandbox_command(["python", "agent.py"], work)
    >>> cmd.argv[-2:], cmd.tool in ("bwrap", None)
    (('python', 'agent.py'), True)
    >>> shutil.rmtree(work)
    """
    _check_mode(network, "network")
    argv = tuple(str(a) for a in argv)
    if not argv:
        raise HarnessError("`argv` must name a command, got an empty list")
    work = Path(workdir).resolve()
    if not work.is_dir():
        raise HarnessError(f"`workdir` must be an existing folder, got {str(workdir)!r}")
    tool = _bwrap()
    if tool is None:
        return SandboxCommand(argv, "nothing enforced: bubblewrap (bwrap) is not installed, so the command ran "
                                    "unsandboxed with the machine's network and file system", None)
    wrapped = [tool, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
               *_under_tmp(argv[0]), "--bind", str(work), str(work), "--chdir", str(work), "--unshare-pid",
               "--die-with-parent"]
    files = f"file system read-only except {work} and a fresh /tmp"
    if network == "allow":
        return SandboxCommand(tuple(wrapped) + ("--",) + argv, f"bwrap: network shared (allowed); {files}", "bwrap")
    wrapped.append("--unshare-net")
    note = " ('record' is not possible for a subprocess: its connections were refused, not recorded)" \
        if network == "record" else ""
    reach = ""
    if bridge is not None and bridge.ports:
        wrapped += ["--bind", str(Path(bridge.socket_path(bridge.ports[0])).parent), BRIDGE_INSIDE]
        argv = (sys.executable, "-I", "-S", "-c", RELAY, BRIDGE_INSIDE, ",".join(map(str, bridge.ports)), "--") + argv
        reach = " except 127.0.0.1:" + ",".join(map(str, bridge.ports)) + " (bridged)"
    enforced = f"bwrap: no network{reach} (own network namespace){note}; {files}"
    return SandboxCommand(tuple(wrapped) + ("--",) + argv, enforced, "bwrap")
