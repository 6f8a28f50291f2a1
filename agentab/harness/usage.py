"""Token usage of model calls, read at the HTTP transport without changing the agent's code.

:func:`capture_usage` patches ``Client.send`` and ``AsyncClient.send`` of httpx and of httpx2 (whichever
is installed; the OpenAI and Anthropic Python clients send through one of them: openai 3.x and anthropic
2.x default to httpx2 and accept an httpx client) and reads the usage every model response reports:

- OpenAI Chat Completions (and legacy Completions), ``POST .../chat/completions``: ``usage.prompt_tokens``,
  ``completion_tokens``, ``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``;
  streamed, in the last chunk (sent only when the request asks ``stream_options={"include_usage": True}``).
- OpenAI Responses, ``POST .../responses``: ``usage.input_tokens``, ``output_tokens``,
  ``input_tokens_details.cached_tokens``, ``output_tokens_details.reasoning_tokens``; streamed, in the
  ``response.completed`` (or ``.incomplete`` / ``.failed``) event.
- Anthropic Messages, ``POST .../messages`` (and Vertex AI's ``:rawPredict`` / ``:streamRawPredict``):
  ``tokens_in`` is ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` (every prompt
  token, as agentab's readers count them), ``tokens_cached`` is ``cache_read_input_tokens``, ``tokens_out``
  is ``output_tokens`` and ``tokens_reasoning`` is ``output_tokens_details.thinking_tokens``; streamed,
  from ``message_start`` updated by every ``message_delta``.

A streamed response is read as it passes: the client still receives every byte, in the same chunks; the
call's entry is complete when the stream ends or is closed. A count the response does not report is None,
never 0. Requests to any other path (a model list, a file upload) make no entry.

Examples
--------
>>> import httpx
>>> body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
...         "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}
>>> client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=body)))
>>> with capture_usage() as usage:
...     _ = client.post("https://api.example.test/v1/chat/completions", json={"model": "gpt-4o-mini"})
>>> call = usage.calls[0]
>>> call["provider"], call["model"], call["tokens_in"], call["tokens_out"], call["tokens_cached"]
('openai', 'gpt-4o-mini', 12, 3, None)
"""

from __future__ import annotations

import importlib
import json
import threading
import zlib
from datetime import datetime, timezone
from typing import Any, Callable

from agentab.harness._patch import Patches

__all__ = ["capture_usage", "UsageCapture", "HTTP_MODULES"]

#: The HTTP client packages whose clients are patched, when installed.
HTTP_MODULES = ("httpx", "httpx2")
#: Largest non-streamed body kept to read its usage, in bytes (a larger one's counts are None).
MAX_BODY_BYTES = 64 * 1024 * 1024
_FINAL_RESPONSE_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _api(method: str, path: str) -> str | None:
    """The model API a request calls, from its method and path, or None when it is no model call."""
    if method.upper() != "POST":
        return None
    path = path.rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat.completions"
    if path.endswith("/completions"):
        return "completions"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages") or path.endswith(":rawPredict") or path.endswith(":streamRawPredict"):
        return "messages"
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _detail(usage: dict, key: str, field: str) -> int | None:
    details = usage.get(key)
    return _count(details.get(field)) if isinstance(details, dict) else None


def _counts(api: str, usage: dict) -> dict[str, int | None]:
    """tokens_in, tokens_out, tokens_cached, tokens_reasoning of one call's usage object."""
    if api in ("chat.completions", "completions"):
        tin, tout = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
        reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    elif api == "responses":
        tin, tout = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
        cached = _detail(usage, "input_tokens_details", "cached_tokens")
        reasoning = _detail(usage, "output_tokens_details", "reasoning_tokens")
    else:  # Anthropic: input_tokens leaves out the tokens written to and read from the cache
        tin, tout = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
        cached = _count(usage.get("cache_read_input_tokens"))
        written = _count(usage.get("cache_creation_input_tokens"))
        if tin is not None:
            tin += (cached or 0) + (written or 0)
        reasoning = _detail(usage, "output_tokens_details", "thinking_tokens")
    # a part larger than its whole would make the record invalid: such a part is unknown, not wrong
    cached = None if cached is not None and (tin is None or cached > tin) else cached
    reasoning = None if reasoning is not None and (tout is None or reasoning > tout) else reasoning
    return {"tokens_in": tin, "tokens_out": tout, "tokens_cached": cached, "tokens_reasoning": reasoning}


def _is_model_body(value: dict) -> bool:
    """Whether a JSON object is a model's answer (a whole body or a streamed event), not any API's JSON."""
    kind, obj = value.get("type"), value.get("object")
    return (obj in ("chat.completion", "chat.completion.chunk", "text_completion", "response")
            or kind in ("message", "message_start", "message_delta")
            or (isinstance(kind, str) and kind.startswith("response.") and isinstance(value.get("response"), dict)))


class _Call:
    """One model call: its entry, and the reading of its response body (whole, or streamed past)."""

    def __init__(self, entry: dict[str, Any], api: str, headers: Any, settle: Callable[["_Call"], None]) -> None:
        self.entry, self.api, self._settle = entry, api, settle
        self.usage: dict[str, Any] = {}
        self.model: str | None = None
        self.confirmed = False  # a model's answer was seen (not an error body, not another API's JSON)
        self._sse = "text/event-stream" in headers.get("content-type", "")
        self._decoder = _decoder(headers.get("content-encoding", ""))
        self._text = b""
        self._body = bytearray()
        self._final_out = False  # Anthropic streams: message_start's output count is a placeholder
        self._done = False

    # -- the body, whole or in chunks -------------------------------------------------------------------
    def whole(self, content: bytes) -> None:
        """Read a body already read by the client (already decoded)."""
        self._decoder = None
        self.feed(content, decoded=True)
        self.finish()

    def feed(self, chunk: bytes, decoded: bool = False) -> None:
        """Read one chunk as it passes; never raises (the agent's stream must not break)."""
        if self._done or self._decoder is False:
            return
        try:
            data = chunk if decoded or self._decoder is None else self._decoder.decompress(chunk)
            if self._sse:
                self._events(data)
            elif len(self._body) + len(data) <= MAX_BODY_BYTES:
                self._body += data
            else:
                self._decoder = False  # too large to keep: its counts stay unknown
        except Exception:  # noqa: BLE001 - a body we cannot read leaves the counts unknown
            self._decoder = False

    def _events(self, data: bytes) -> None:
        """Server-sent events: every complete ``data:`` payload that is a JSON object is read."""
        self._text += data
        *blocks, self._text = self._text.replace(b"\r\n", b"\n").split(b"\n\n")
        for block in blocks:
            payload = b"\n".join(line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:"))
            if payload and payload != b"[DONE]":
                self._read(payload)

    def _read(self, payload: bytes) -> None:
        try:
            value = json.loads(payload)
        except ValueError:
            return
        if isinstance(value, dict) and _is_model_body(value):
            self.confirmed = True
            self._object(value)

    def _object(self, value: dict) -> None:
        """Take usage and model from a whole response body or from one streamed event."""
        kind = value.get("type")
        if kind == "message_start" and isinstance(value.get("message"), dict):
            value = value["message"]
        elif kind in _FINAL_RESPONSE_EVENTS + ("response.created",) and isinstance(value.get("response"), dict):
            value = value["response"]
        elif kind in ("message", "message_delta") or not self._sse:
            self._final_out = True
        if isinstance(value.get("model"), str) and value["model"]:
            self.model = value["model"]
        usage = value.get("usage")
        if isinstance(usage, dict):  # a later report (message_delta, the last chunk) updates an earlier one
            self.usage.update({k: v for k, v in usage.items() if v is not None})

    def finish(self) -> None:
        """Fill the entry (once): the counts read, the model, the end time; then settle it."""
        if self._done:
            return
        self._done = True
        if self._sse and self._text.strip() and self._decoder is not False:
            self._events(b"\n\n")  # a last event without its blank line
        elif self._body and self._decoder is not False:
            self._read(bytes(self._body))
        counts = _counts(self.api, self.usage) if self.usage else dict.fromkeys(
            ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning"))
        if self.api == "messages" and self._sse and not self._final_out:
            counts["tokens_out"] = counts["tokens_reasoning"] = None  # the stream ended before its message_delta
        self.entry.update(counts)
        if self.model:
            self.entry["model"] = self.model
        self.entry["ended_at"] = _now()
        self._settle(self)


def _decoder(encoding: str) -> Any:
    """A decompressor for a streamed body's content encoding; None for identity; False when unreadable."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    return False  # br, zstd, several encodings: the client decodes them, the counts stay unknown


def _taps(module: Any) -> tuple[type, type]:
    """Stream classes of ``module`` (httpx or httpx2) that pass every chunk on and show it to a call."""

    class Tap(module.SyncByteStream):
        def __init__(self, inner: Any, call: _Call) -> None:
            self._inner, self._call = inner, call

        def __iter__(self):
            for chunk in self._inner:
                self._call.feed(chunk)
                yield chunk
            self._call.finish()

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._call.finish()

    class AsyncTap(module.AsyncByteStream):
        def __init__(self, inner: Any, call: _Call) -> None:
            self._inner, self._call = inner, call

        async def __aiter__(self):
            async for chunk in self._inner:
                self._call.feed(chunk)
                yield chunk
            self._call.finish()

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._call.finish()

    return Tap, AsyncTap


class UsageCapture:
    """The model calls seen while active (see :func:`capture_usage`).

    Attributes
    ----------
    calls : list of dict
        One entry per model call answered (a model's answer was read: a whole body or a stream, once it
        ended or was closed), in the order the answers ended: ``{"provider", "model", "tokens_in",
        "tokens_out", "tokens_cached", "tokens_reasoning", "started_at", "ended_at", "url"}`` plus ``"api"``
        (``"chat.completions"``, ``"completions"``, ``"responses"``, ``"messages"``) and ``"status"`` (the HTTP
        status). Times are ISO 8601 in UTC. A count the answer did not report is None.
    failed : list of dict
        Calls to a model API's path that got an error status (a 429, a 500) or no response at all (status
        None): the same keys, every count None. They cost no tokens as far as anyone knows; they are kept
        apart so that the sums over ``calls`` stay known. A 2xx answer on such a path that is not a
        model's (another API's ``POST /v1/messages``, say the mock server's) is in neither.
    modules : tuple of str
        The HTTP client packages patched (those of :data:`HTTP_MODULES` installed).

    Examples
    --------
    >>> import httpx
    >>> client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(429, json={})))
    >>> with capture_usage() as usage:
    ...     _ = client.post("https://api.example.test/v1/messages", json={"model": "claude-x"})
    >>> usage.calls, [(call["model"], call["status"], call["tokens_in"]) for call in usage.failed]
    ([], [('claude-x', 429, None)])
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[dict[str, Any]] = []
        self._failures: list[dict[str, Any]] = []
        self._patches: Patches | None = None
        self._depth = 0
        self.modules: tuple[str, ...] = ()

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every model call answered so far, in the order their answers ended (copies)."""
        with self._lock:
            return [dict(call) for call in self._calls]

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Calls to a model API that got an error status or no response, in the order they ended (copies)."""
        with self._lock:
            return [dict(call) for call in self._failures]

    def __enter__(self) -> "UsageCapture":
        with self._lock:
            self._depth += 1
            if self._depth > 1:
                return self
        patches, found = Patches(), []
        for name in HTTP_MODULES:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            tap, async_tap = _taps(module)
            patches.install(module.Client, "send", lambda orig, tap=tap: self._sync_send(orig, tap))
            patches.install(module.AsyncClient, "send", lambda orig, tap=async_tap: self._async_send(orig, tap))
            found.append(name)
        self._patches, self.modules = patches, tuple(found)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth > 0 or self._patches is None:
                return
            patches, self._patches = self._patches, None
        patches.restore()

    def _sync_send(self, orig: Callable, tap: type) -> Callable:
        def send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            entry = self._start(request)
            if entry is None:
                return orig(client, request, *args, **kwargs)
            try:
                response = orig(client, request, *args, **kwargs)
            except BaseException:
                self._failed(entry)
                raise
            self._observe(response, entry, tap)
            return response
        return send

    def _async_send(self, orig: Callable, tap: type) -> Callable:
        async def send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            entry = self._start(request)
            if entry is None:
                return await orig(client, request, *args, **kwargs)
            try:
                response = await orig(client, request, *args, **kwargs)
            except BaseException:
                self._failed(entry)
                raise
            self._observe(response, entry, tap)
            return response
        return send

    def _start(self, request: Any) -> dict[str, Any] | None:
        """The entry of a call to a model API's path, made as it is sent; None for any other request."""
        try:
            api = _api(request.method, request.url.path)
        except Exception:  # noqa: BLE001 - not a request we understand: not a model call
            return None
        if api is None:
            return None
        return {"provider": "anthropic" if api == "messages" else "openai", "model": _request_model(request),
                "tokens_in": None, "tokens_out": None, "tokens_cached": None, "tokens_reasoning": None,
                "started_at": _now(), "ended_at": None, "url": str(request.url), "api": api, "status": None}

    def _failed(self, entry: dict[str, Any]) -> None:
        """A call that got no response (a connection error, a timeout): listed in ``failed``."""
        entry["ended_at"] = _now()
        with self._lock:
            self._failures.append(entry)

    def _observe(self, response: Any, entry: dict[str, Any], tap: type) -> None:
        """Read the call's body now (already read by the client) or as it streams past (through ``tap``)."""
        entry["status"] = response.status_code
        call = _Call(entry, entry["api"], response.headers, self._settle)
        if hasattr(response, "_content"):  # read by the client already (send without stream=True)
            call.whole(response.content)
        else:
            response.stream = tap(response.stream, call)

    def _settle(self, call: _Call) -> None:
        """A finished call: a model's answer goes to ``calls``; an error status to ``failed``; else nowhere."""
        status = call.entry["status"]
        with self._lock:
            if call.confirmed and status is not None and status < 400:
                self._calls.append(call.entry)
            elif status is None or status >= 400:
                self._failures.append(call.entry)


def _request_model(request: Any) -> str | None:
    """The model the request asked for (the response's own ``model`` replaces it when it has one)."""
    try:
        body = json.loads(request.content)
    except Exception:  # noqa: BLE001 - a streamed or non-JSON request body: the model is read from the response
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) and model else None


def capture_usage() -> UsageCapture:
    """Capture the token usage of every OpenAI and Anthropic model call made through httpx or httpx2.

    Returns
    -------
    UsageCapture
        A context manager; its ``calls`` hold one entry per model call (see :class:`UsageCapture`).

    Notes
    -----
    Process-wide while active (every thread, every client, made before or inside the block) and
    thread-safe; entering it again, or nesting two captures, is safe (each sees every call), and exiting
    puts ``send`` back exactly. httpx is imported only when the capture is entered: agentab imports without
    it, and with neither httpx nor httpx2 installed the capture sees nothing (``modules`` is empty).
    Clients on other transports (aiohttp used directly, requests, Bedrock's binary event stream) are not
    read.

    Examples
    --------
    >>> with capture_usage() as usage:
    ...     pass
    >>> usage.calls
    []
    """
    return UsageCapture()
