"""The harness's network policy (agentab.harness.network).

Reliability rule (issue 23): every test targets only listeners on 127.0.0.1 made here. A listener that is not
on the allow list stands in for "the internet"; a blocked attempt must leave it with nothing to accept and be
recorded. No test connects, or tries to connect, to a public or private-range address: names are resolved by
a stand-in ``getaddrinfo`` installed under the policy, so no DNS query leaves the machine either.
"""

from __future__ import annotations

import asyncio
import errno
import select
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentab.harness import network
from agentab.harness.network import NetworkBlocked, NetworkPolicy, sandbox_available, sandbox_command

PATCHED = ("connect", "connect_ex", "sendto", "send", "sendall", "sendmsg")
FUNCTIONS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "create_connection")


@pytest.fixture
def listener():
    """A TCP listener on 127.0.0.1 (not allowed: "the internet"), closed afterwards."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def port_of(server: socket.socket) -> int:
    return server.getsockname()[1]


def untouched(server: socket.socket) -> bool:
    """Nothing is waiting to be accepted (a loopback connect completes its handshake before it returns)."""
    return select.select([server], [], [], 0)[0] == []


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes and contexts (clients wrap the socket error in their own)."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__ or getattr(exc, "reason", None)
        exc = exc if isinstance(exc, BaseException) else None
    return seen


def blocked_entry(port: int, host: str = "127.0.0.1") -> dict:
    return {"host": host, "port": port, "method": None, "path": None, "action": "blocked"}


def state() -> dict:
    return {"class": {k: socket.socket.__dict__.get(k, "absent") for k in PATCHED},
            "module": {k: getattr(socket, k) for k in FUNCTIONS}}


# --- block mode, one client at a time ---------------------------------------------------------------------

def test_socket_connect_and_create_connection_are_refused_and_recorded(listener):
    port = port_of(listener)
    with NetworkPolicy("block") as policy:
        with pytest.raises(NetworkBlocked) as err:
            socket.create_connection(("127.0.0.1", port), timeout=5)
        sock = socket.socket()
        with pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", port))
        assert sock.connect_ex(("127.0.0.1", port)) == errno.ECONNREFUSED
        sock.close()
    assert isinstance(err.value, PermissionError) and err.value.port == port
    assert untouched(listener)
    assert policy.calls == [blocked_entry(port)] * 3


def test_urllib_request_is_refused(listener):
    port = port_of(listener)
    with NetworkPolicy() as policy, pytest.raises(urllib.error.URLError) as err:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/data", timeout=5)
    assert any(isinstance(e, NetworkBlocked) for e in chain(err.value))
    assert untouched(listener) and policy.calls == [blocked_entry(port)]


def test_httpx_sync_and_async_are_refused(listener):
    httpx = pytest.importorskip("httpx")
    port = port_of(listener)
    url = f"http://127.0.0.1:{port}/v1/chat"

    async def fetch():
        async with httpx.AsyncClient() as client:
            await client.post(url, json={})

    with NetworkPolicy() as policy:
        with pytest.raises(httpx.ConnectError) as sync_err:
            httpx.post(url, json={})
        with pytest.raises(httpx.ConnectError) as async_err:
            asyncio.run(fetch())
    assert any(isinstance(e, NetworkBlocked) for e in chain(sync_err.value))
    assert any(isinstance(e, NetworkBlocked) for e in chain(async_err.value))
    assert untouched(listener) and policy.calls == [blocked_entry(port)] * 2


def test_requests_and_urllib3_are_refused(listener):
    requests = pytest.importorskip("requests")
    urllib3 = pytest.importorskip("urllib3")
    port = port_of(listener)
    with NetworkPolicy() as policy:
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/", timeout=5)
        with pytest.raises(urllib3.exceptions.HTTPError):
            urllib3.PoolManager(retries=False).request("GET", f"http://127.0.0.1:{port}/")
    assert untouched(listener) and policy.calls == [blocked_entry(port)] * 2


def test_asyncio_streams_and_sock_connect_are_refused(listener):
    port = port_of(listener)

    async def attempts():
        with pytest.raises(NetworkBlocked):
            await asyncio.open_connection("127.0.0.1", port)
        loop = asyncio.get_running_loop()
        sock = socket.socket()
        sock.setblocking(False)
        with pytest.raises(NetworkBlocked):
            await loop.sock_connect(sock, ("127.0.0.1", port))
        sock.close()

    with NetworkPolicy() as policy:
        asyncio.run(attempts())
    assert untouched(listener) and policy.calls == [blocked_entry(port)] * 2


def test_threads_are_covered(listener):
    port = port_of(listener)
    errors: list[BaseException] = []

    def worker():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError as exc:
            errors.append(exc)

    with NetworkPolicy() as policy:
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(errors) == 4 and all(isinstance(e, NetworkBlocked) for e in errors)
    assert untouched(listener) and policy.calls == [blocked_entry(port)] * 4


def test_udp_sendto_is_refused(listener):
    port = port_of(listener)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with NetworkPolicy() as policy, pytest.raises(NetworkBlocked):
        udp.sendto(b"x", ("127.0.0.1", port))
    udp.close()
    assert policy.calls == [blocked_entry(port)]


# --- what goes through --------------------------------------------------------------------------------------

def test_allowed_listener_is_reached_and_not_recorded(listener):
    port = port_of(listener)
    with NetworkPolicy("block", allow=[("127.0.0.1", port)]) as policy:
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        conn, _ = listener.accept()
        client.sendall(b"hello")
        assert conn.recv(5) == b"hello"
        conn.close()
        client.close()
    assert policy.calls == []


def test_localhost_reaches_an_allowed_127_0_0_1_without_a_blocked_ipv6_attempt(listener):
    port = port_of(listener)
    with NetworkPolicy("block", allow=[("127.0.0.1", port)]) as policy:
        socket.create_connection(("localhost", port), timeout=5).close()  # may try ::1 first: also loopback
    listener.accept()[0].close()
    assert policy.calls == []


def test_gethostbyname_of_a_name_not_allowed_is_refused(monkeypatch):
    asked = []
    monkeypatch.setattr(socket, "gethostbyname", lambda host: asked.append(host) or "127.0.0.1")
    monkeypatch.setattr(socket, "gethostbyname_ex", lambda host: asked.append(host) or (host, [], ["127.0.0.1"]))
    with NetworkPolicy() as policy:
        with pytest.raises(NetworkBlocked):
            socket.gethostbyname("api.example.test")
        with pytest.raises(NetworkBlocked):
            socket.gethostbyname_ex("api.example.test")
        assert socket.gethostbyname("127.0.0.1") == "127.0.0.1"  # a literal asks no server
    assert asked == ["127.0.0.1"]
    assert policy.calls == [blocked_entry(None, "api.example.test")] * 2


def test_allow_added_while_active(listener):
    port = port_of(listener)
    with NetworkPolicy() as policy:
        with pytest.raises(NetworkBlocked):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        policy.allow("127.0.0.1", port)
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    listener.accept()[0].close()
    assert policy.calls == [blocked_entry(port)]


def test_other_port_of_an_allowed_pair_is_blocked(listener):
    port = port_of(listener)
    with NetworkPolicy(allow=[("127.0.0.1", port + 1 if port < 65535 else port - 1)]) as policy:
        with pytest.raises(NetworkBlocked):
            socket.create_connection(("127.0.0.1", port), timeout=5)
    assert untouched(listener) and policy.calls == [blocked_entry(port)]


def test_unix_sockets_are_not_network(tmp_path):
    path = str(tmp_path / "s.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    with NetworkPolicy() as policy:
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)
        client.close()
    server.close()
    assert policy.calls == []


def test_allow_mode_patches_nothing():
    before = state()
    with NetworkPolicy("allow") as policy:
        assert state() == before
    assert policy.calls == []


# --- record mode ------------------------------------------------------------------------------------------

def test_record_mode_lets_through_and_reads_the_request_line(listener):
    port = port_of(listener)
    received = []

    def serve():
        conn, _ = listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(4096)
        received.append(data)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    with NetworkPolicy("record") as policy:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/items?token=secret", timeout=5).read()
    thread.join()
    assert body == b"ok" and received[0].startswith(b"GET /v1/items?token=secret HTTP/1.1")
    assert policy.calls == [{"host": "127.0.0.1", "port": port, "method": "GET", "path": "/v1/items",
                             "action": "recorded"}]


def test_record_mode_asyncio_stream(listener):
    port = port_of(listener)

    async def talk():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /submit HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    with NetworkPolicy("record") as policy:
        asyncio.run(talk())
    conn, _ = listener.accept()
    assert conn.recv(100).startswith(b"POST /submit")
    conn.close()
    assert policy.calls == [{"host": "127.0.0.1", "port": port, "method": "POST", "path": "/submit",
                             "action": "recorded"}]


def test_record_mode_non_http_bytes_leave_method_null(listener):
    port = port_of(listener)
    with NetworkPolicy("record") as policy:
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        client.sendall(b"\x16\x03\x01 not http\n")
        client.close()
    listener.accept()[0].close()
    assert policy.calls == [{"host": "127.0.0.1", "port": port, "method": None, "path": None,
                             "action": "recorded"}]


# --- name lookups -----------------------------------------------------------------------------------------

@pytest.fixture
def fake_dns(monkeypatch, listener):
    """A stand-in getaddrinfo (installed before the policy, so the policy wraps it): every name is the listener."""
    asked: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port_of(listener)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def test_block_mode_refuses_the_lookup_and_records_the_name(fake_dns, listener):
    with NetworkPolicy() as policy:
        with pytest.raises(NetworkBlocked):
            socket.getaddrinfo("api.example.test", 443)
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen("http://api.example.test/v1", timeout=5)
    assert fake_dns == [] and untouched(listener)
    assert policy.calls == [blocked_entry(443, "api.example.test"), blocked_entry(80, "api.example.test")]


def test_allowed_name_resolves_and_connects(fake_dns, listener):
    port = port_of(listener)
    with NetworkPolicy(allow=["mock.example.test"]) as policy:
        socket.create_connection(("mock.example.test", port), timeout=5).close()
    listener.accept()[0].close()
    assert fake_dns == ["mock.example.test"] and policy.calls == []


def test_record_mode_names_the_host_it_looked_up(fake_dns, listener):
    port = port_of(listener)
    with NetworkPolicy("record") as policy:
        client = socket.create_connection(("api.example.test", port), timeout=5)
        client.sendall(b"DELETE /rows/7 HTTP/1.1\r\n\r\n")
        client.close()
    listener.accept()[0].close()
    assert policy.calls == [{"host": "api.example.test", "port": port, "method": "DELETE", "path": "/rows/7",
                             "action": "recorded"}]


# --- entering and exiting ---------------------------------------------------------------------------------

def test_exit_restores_everything_exactly(listener):
    before = state()
    policy = NetworkPolicy("record")
    with policy:
        assert state() != before
        with policy:  # the same policy again
            pass
        assert state() != before  # still active in the outer with
    assert state() == before
    assert "connect" not in socket.socket.__dict__  # inherited from _socket.socket again


def test_nested_policies_both_judge_and_restore_in_any_order(listener):
    port = port_of(listener)
    before = state()
    outer, inner = NetworkPolicy("record"), NetworkPolicy("block")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    outer.__exit__(None, None, None)  # out of order: the outer leaves first
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    inner.__exit__(None, None, None)
    assert state() == before
    assert inner.calls == [blocked_entry(port)] * 2 and outer.calls == []
    assert untouched(listener)


def test_exit_after_an_error_restores(listener):
    before = state()
    with pytest.raises(RuntimeError), NetworkPolicy():
        raise RuntimeError("agent crashed")
    assert state() == before


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "deny"}, "`mode` must be one of"),
    ({"allow": "localhost"}, "`allow` must be a list"),
    ({"allow": [("h", 0)]}, "an allowed port must be"),
    ({"allow": [3]}, "`allow` entries must be"),
    ({"allow": [""]}, "an allowed host must be"),
])
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        NetworkPolicy(**kwargs)
    assert "\n" not in str(err.value)


# --- subprocess agents: bubblewrap ------------------------------------------------------------------------

needs_bwrap = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap (bwrap) is not usable here")


@needs_bwrap
def test_inside_bwrap_a_local_listener_is_unreachable(listener, tmp_path):
    port = port_of(listener)
    code = ("import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
            "except OSError as e:\n    print('refused', type(e).__name__)\nelse:\n    print('connected')\n")
    cmd = sandbox_command([sys.executable, "-c", code], tmp_path)
    out = subprocess.run(cmd.argv, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("refused") and untouched(listener)
    assert cmd.tool == "bwrap" and "no network" in cmd.enforced


@needs_bwrap
def test_inside_bwrap_only_the_workdir_is_writable(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))  # not under /tmp, writable outside the sandbox
    try:
        code = ("import sys\nfor path in sys.argv[1:]:\n    try:\n        open(path, 'w').write('x')\n"
                "    except OSError as e:\n        print(path, 'refused', e.errno)\n    else:\n"
                "        print(path, 'written')\n")
        targets = [str(work / "ok.txt"), str(outside / "escape.txt"), str(work.parent / "sibling.txt")]
        cmd = sandbox_command([sys.executable, "-c", code, *targets], work)
        out = subprocess.run(cmd.argv, capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
        assert out[0].endswith("written") and "refused" in out[1]  # read-only outside the workdir
        # next to the workdir is the sandbox's own fresh /tmp: the write lands there and vanishes with it
        assert (work / "ok.txt").read_text() == "x"
        assert not (outside / "escape.txt").exists() and not (work.parent / "sibling.txt").exists()
    finally:
        for path in outside.iterdir():
            path.unlink()
        outside.rmdir()


@needs_bwrap
def test_bwrap_runs_in_the_workdir_and_allow_shares_the_network(tmp_path):
    cmd = sandbox_command([sys.executable, "-c", "import os; print(os.getcwd())"], tmp_path, network="allow")
    out = subprocess.run(cmd.argv, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == str(tmp_path.resolve())
    assert "--unshare-net" not in cmd.argv and "--die-with-parent" in cmd.argv


def test_record_for_a_subprocess_is_blocked_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(network, "_bwrap", lambda: "/usr/bin/bwrap")
    cmd = sandbox_command(["agent"], tmp_path, network="record")
    assert "--unshare-net" in cmd.argv and "not recorded" in cmd.enforced and "\n" not in cmd.enforced


def test_without_bwrap_nothing_is_enforced_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(network, "_bwrap", lambda: None)
    cmd = sandbox_command(["agent", "--flag"], tmp_path)
    assert cmd.argv == ("agent", "--flag") and cmd.tool is None
    assert cmd.enforced.startswith("nothing enforced") and not sandbox_available()


@pytest.mark.parametrize("args, message", [
    ((["agent"], "missing-folder"), "`workdir` must be an existing folder"),
    (([], "."), "`argv` must name a command"),
])
def test_sandbox_command_bad_arguments(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        sandbox_command(*args)
    with pytest.raises(ValueError, match="`network` must be one of"):
        sandbox_command(["agent"], tmp_path, network="open")


@needs_bwrap
def test_bridge_lets_the_sandbox_reach_the_mock_server_and_nothing_else(listener, tmp_path):
    from agentab.harness.mock_server import MockServer
    from agentab.harness.network import PortBridge

    other = port_of(listener)
    with MockServer({"GET /v1/items/{n}": lambda request, seed: {"n": request.params["n"], "seed": seed}},
                    seed=5) as server, PortBridge([server.port]) as bridge:
        code = ("import json, socket, sys, urllib.request\n"
                f"print(json.load(urllib.request.urlopen('{server.url}/v1/items/3', timeout=10)))\n"
                f"try:\n    socket.create_connection(('127.0.0.1', {other}), timeout=5)\n"
                "except OSError:\n    print('refused')\n")
        cmd = sandbox_command([sys.executable, "-c", code], tmp_path, bridge=bridge)
        out = subprocess.run(cmd.argv, capture_output=True, text=True, timeout=60)
        port = server.port
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["{'n': '3', 'seed': 5}", "refused"]
    assert [(r["method"], r["path"]) for r in server.requests] == [("GET", "/v1/items/3")]
    assert untouched(listener) and f"127.0.0.1:{port} (bridged)" in cmd.enforced


@needs_bwrap
def test_the_command_exit_status_passes_through_the_relay(tmp_path):
    from agentab.harness.network import PortBridge

    with PortBridge([65000]) as bridge:
        cmd = sandbox_command([sys.executable, "-c", "raise SystemExit(3)"], tmp_path, bridge=bridge)
        assert subprocess.run(cmd.argv, capture_output=True, timeout=60).returncode == 3
        missing = sandbox_command(["/nonexistent/agent"], tmp_path, bridge=bridge)
        assert subprocess.run(missing.argv, capture_output=True, timeout=60).returncode == 127


def test_bridge_closes_cleanly(listener):
    from agentab.harness.network import PortBridge

    before = set(threading.enumerate())
    port = port_of(listener)
    with PortBridge([port]) as bridge:
        path = bridge.socket_path(port)
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)
        conn, _ = listener.accept()
        client.sendall(b"abc")
        assert conn.recv(3) == b"abc"
        conn.sendall(b"xyz")
        assert client.recv(3) == b"xyz"
    client.close()
    conn.close()
    assert set(threading.enumerate()) - before == set() and not Path(path).exists()
    with pytest.raises(ValueError, match="bridged ports must be"):
        PortBridge([0])


def _processes_with(marker: str) -> list[str]:
    """Pids whose command line holds ``marker`` (bwrap's own process left out)."""
    found = []
    for pid in filter(str.isdigit, __import__("os").listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv and not argv[0].endswith(b"bwrap"):
            found.append(pid)
    return found


@needs_bwrap
def test_killing_the_sandbox_kills_the_agent_and_its_children(tmp_path):
    import time

    marker = f"{61 + (id(tmp_path) % 1000) / 1000:.3f}"  # a sleep length no other process here uses
    cmd = sandbox_command(["sh", "-c", f"sleep {marker} & sleep {marker}; wait"], tmp_path)
    proc = subprocess.Popen(cmd.argv)
    try:
        for _ in range(200):  # until both sleeps run (bounded; not a timing assertion)
            if len(_processes_with(marker)) >= 2:
                break
            time.sleep(0.05)
        assert len(_processes_with(marker)) >= 2
    finally:
        proc.kill()
        proc.wait()
    for _ in range(200):  # the kernel tears the pid namespace down: wait for it, bounded
        if not _processes_with(marker):
            break
        time.sleep(0.05)
    assert _processes_with(marker) == []
