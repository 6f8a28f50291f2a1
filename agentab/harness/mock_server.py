"""A mock API server per run: a local HTTP server serving a task's declared endpoints, recording every request.

The server listens on 127.0.0.1 on a free port, in a background thread, for as long as its ``with`` block
lasts. Endpoints are declared as ``"METHOD /path"`` (exact paths; ``{name}`` matches one path segment) and
answer with a JSON value, a :class:`Response`, or a callable ``(request, seed)`` returning either, so a
response may depend on the run's seed (held-out API payloads).

Examples
--------
>>> import json, urllib.request
>>> endpoints = {
...     "GET /v1/items": [{"id": 1}],
...     "GET /v1/items/{item_id}": lambda request, seed: {"id": request.params["item_id"], "seed": seed},
...     "POST /v1/items": Response(201, {"created": True}),
... }
>>> with MockServer(endpoints, seed=7) as server:
...     with urllib.request.urlopen(server.url + "/v1/items/42?full=1") as answer:
...         print(answer.status, json.load(answer))
200 {'id': '42', 'seed': 7}
>>> [(r["method"], r["path"], r["query"], r["status"]) for r in server.requests]
[('GET', '/v1/items/42', {'full': '1'}, 200)]
"""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping, Union
from urllib.parse import parse_qsl, unquote, urlsplit

from agentab.errors import HarnessError

__all__ = ["MockServer", "Response", "Request", "METHODS"]

#: The HTTP methods an endpoint may declare.
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_KEY = re.compile(r"^([A-Z]+) (/\S*)$")
_PARAM = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")
#: Seconds an idle connection may hold a handler thread before it is dropped (so shutdown never hangs).
_IDLE_TIMEOUT_S = 30
#: Largest request body read, in bytes.
MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Response:
    """An endpoint's answer: status, body (JSON-encoded unless bytes) and extra headers.

    Examples
    --------
    >>> Response(404, {"error": "no such item"}).status
    404
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    """A request as an endpoint callable sees it.

    Attributes
    ----------
    method, path : str
        The HTTP method and the path (percent-decoded, without the query).
    params : dict of str to str
        The values of the endpoint's ``{name}`` path parameters.
    query : dict
        The query: name to value (a list of values when a name repeats).
    headers : dict of str to str
        The request headers (names lower case).
    body : Any
        The body decoded as JSON when it is JSON, else as text; None when empty.
    raw : bytes
        The body as received.
    """

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, Any]
    headers: dict[str, str]
    body: Any
    raw: bytes


Endpoint = Union[Any, Response, Callable[[Request, int], Any]]


@dataclass(frozen=True)
class _Route:
    key: str
    method: str
    pattern: re.Pattern | None  # None: an exact path
    path: str
    answer: Endpoint


def _route(key: Any, answer: Any) -> _Route:
    """One validated endpoint, or a one-line error naming the bad key."""
    match = _KEY.match(key) if isinstance(key, str) else None
    if match is None:
        raise HarnessError(f"endpoint key {key!r} must be 'METHOD /path', e.g. 'GET /v1/items'")
    method, path = match.groups()
    if method not in METHODS:
        raise HarnessError(f"endpoint {key!r}: method must be one of {', '.join(METHODS)}")
    if "?" in path or "#" in path:
        raise HarnessError(f"endpoint {key!r}: the path must not hold a query or fragment (paths match exactly)")
    segments, names = [], []
    for segment in path.split("/"):
        param = _PARAM.match(segment)
        if param:
            names.append(param.group(1))
            segments.append(f"(?P<{param.group(1)}>[^/]+)")
        elif "{" in segment or "}" in segment:
            raise HarnessError(f"endpoint {key!r}: a path parameter is a whole segment, '{{name}}' with name an identifier")
        else:
            segments.append(re.escape(segment))
    if len(set(names)) != len(names):
        raise HarnessError(f"endpoint {key!r}: a path parameter name repeats")
    if isinstance(answer, Response):
        _check_response(key, answer)
    elif not callable(answer):
        _check_json(key, answer)
    pattern = re.compile("/".join(segments) + r"\Z") if names else None
    return _Route(key, method, pattern, path, answer)


def _check_response(key: str, response: Response) -> None:
    status = response.status
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        raise HarnessError(f"endpoint {key!r}: status must be an integer in 100..599, got {status!r}")
    if not isinstance(response.headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in response.headers.items()):
        raise HarnessError(f"endpoint {key!r}: headers must map text to text")
    if not isinstance(response.body, bytes):
        _check_json(key, response.body)


def _check_json(key: str, value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HarnessError(f"endpoint {key!r}: the response is not JSON ({exc})") from None


def _routes(endpoints: Any) -> tuple[_Route, ...]:
    if not isinstance(endpoints, Mapping):
        raise HarnessError(f"`endpoints` must map 'METHOD /path' to a response, got {type(endpoints).__name__}")
    routes = [_route(key, answer) for key, answer in endpoints.items()]
    shapes: dict[tuple[str, str], str] = {}
    for route in routes:
        shape = (route.method, re.sub(r"\{[^/]*\}", "{}", route.path))
        if shape in shapes:
            raise HarnessError(f"endpoint {route.key!r} matches the same requests as {shapes[shape]!r}")
        shapes[shape] = route.key
    # exact paths first, then the parameterised ones in the order given
    return tuple(sorted(routes, key=lambda r: r.pattern is not None))


def _query(text: str) -> dict[str, Any]:
    query: dict[str, Any] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        if name in query:
            query[name] = (query[name] if isinstance(query[name], list) else [query[name]]) + [value]
        else:
            query[name] = value
    return query


def _decode_body(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class MockServer:
    """A local HTTP server on 127.0.0.1 serving declared endpoints; a context manager.

    Parameters
    ----------
    endpoints : mapping of str to endpoint
        ``"METHOD /path"`` to a JSON value (served as JSON with status 200), a :class:`Response`, or a
        callable ``(request, seed)`` returning either (an error raised by it is a 500 with a JSON body).
        Unknown routes answer 404 with a JSON body. Checked when the server is made: a bad key or value
        is a one-line :class:`~agentab.errors.HarnessError` naming the key.
    seed : int
        Passed to every callable endpoint.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:PORT`` while running.
    requests : list of dict
        Every request received: ``{"method", "path", "query", "body", "status", "at"}``.

    Examples
    --------
    >>> MockServer({"GET v1/items": []})
    Traceback (most recent call last):
    ...
    agentab.errors.HarnessError: endpoint key 'GET v1/items' must be 'METHOD /path', e.g. 'GET /v1/items'
    """

    def __init__(self, endpoints: Mapping[str, Endpoint], *, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise HarnessError(f"`seed` must be an integer, got {seed!r}")
        self.seed = seed
        self._routes = _routes(endpoints)
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        """The address the server listens on."""
        return "127.0.0.1"

    @property
    def port(self) -> int:
        """The port the server listens on (only while running)."""
        if self._server is None:
            raise HarnessError("the mock server is not running: use it in a `with` block")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the base of every endpoint (only while running)."""
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received so far, in order of arrival (copies)."""
        with self._lock:
            return [dict(r) for r in self._requests]

    def __enter__(self) -> "MockServer":
        if self._server is not None:
            raise HarnessError("the mock server is already running")
        server = _Server((self.host, 0), _handler(self))
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=f"agentab-mock-{self.port}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join()
        self._server = self._thread = None

    def _answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes, dict]:
        """Status, body bytes and headers for one request; the request is recorded."""
        parts = urlsplit(target)
        path, query = unquote(parts.path) or "/", _query(parts.query)
        route, params = self._find(method, path)
        if route is None:
            status, body, extra = 404, {"error": f"no endpoint {method} {path}"}, {}
        else:
            request = Request(method, path, params, query, headers, _decode_body(raw), raw)
            status, body, extra = self._call(route, request)
        with self._lock:
            self._requests.append({"method": method, "path": path, "query": query, "body": _decode_body(raw),
                                   "status": status, "at": _now()})
        if isinstance(body, bytes):
            return status, body, {"Content-Type": "application/octet-stream", **extra}
        return status, json.dumps(body).encode(), {"Content-Type": "application/json", **extra}

    def _find(self, method: str, path: str) -> tuple[_Route | None, dict[str, str]]:
        for route in self._routes:
            if route.method != method:
                continue
            if route.pattern is None:
                if route.path == path:
                    return route, {}
            else:
                match = route.pattern.match(path)
                if match:
                    return route, match.groupdict()
        return None, {}

    def _call(self, route: _Route, request: Request) -> tuple[int, Any, dict[str, str]]:
        answer = route.answer
        if callable(answer) and not isinstance(answer, Response):
            try:
                answer = answer(request, self.seed)
                if isinstance(answer, Response):
                    _check_response(route.key, answer)
                else:
                    _check_json(route.key, answer)
            except Exception as exc:  # the agent sees a server error; the server keeps serving
                return 500, {"error": f"endpoint {route.key!r} failed: {type(exc).__name__}: {exc}"}, {}
        if isinstance(answer, Response):
            return answer.status, answer.body, dict(answer.headers)
        return 200, answer, {}


class _Server(ThreadingHTTPServer):
    """The threaded server: request threads are joined on close (none outlives it), a deep accept queue."""

    daemon_threads = False
    block_on_close = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is no error of the server's; anything else is reported."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _handler(mock: MockServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class of one server (it answers through ``mock``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive thread at shutdown
        timeout = _IDLE_TIMEOUT_S
        server_version = "agentab-mock"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES or length < 0:
                self.send_error(413)
                return
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, body, extra = mock._answer(self.command, self.path, headers, raw)
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            no_body = self.command == "HEAD" or status in (204, 304) or status < 200
            self.send_header("Content-Length", "0" if no_body else str(len(body)))
            self.end_headers()
            if not no_body:
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            """Quiet: the requests are recorded in ``MockServer.requests``."""

    return Handler
