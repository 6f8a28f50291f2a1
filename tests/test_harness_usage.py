"""Token usage read at the HTTP transport (agentab.harness.usage), with the real OpenAI and Anthropic clients.

Every client here is given a mock transport (``httpx.MockTransport`` / ``httpx2.MockTransport``): no request
leaves the process, and each test also runs under ``NetworkPolicy("block")`` so that a connection attempt
would fail loudly instead of reaching anything.

Provenance of the response bodies: their shapes follow the providers' API references and the installed SDKs'
own types (openai 3.57: ``openai/types/chat/chat_completion.py``, ``chat_completion_chunk.py``,
``completion_usage.py``, ``responses/response.py``, ``responses/response_usage.py``; anthropic 2.15:
``anthropic/types/message.py``, ``usage.py``, ``message_delta_usage.py``, ``raw_message_*_event.py``).
OpenAI Chat Completions: the "chat completion object" and "chat completion chunk object" of the API
reference (platform.openai.com/docs/api-reference/chat), with the final usage chunk that
``stream_options={"include_usage": true}`` adds. OpenAI Responses: the "response object" and the streaming
events ``response.created`` ... ``response.completed`` (platform.openai.com/docs/api-reference/responses-streaming).
Anthropic Messages: the Message object of the API reference and the event flow of the streaming guide
(platform.claude.com/docs/en/build-with-claude/streaming: message_start with the input usage, content blocks,
ping, message_delta with the cumulative output usage, message_stop). Ids and counts are made up. Each test
also checks that the SDK itself parsed the body (its own view of the usage and text), so a body the SDK
would not accept fails here.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys

import pytest

from agentab.harness.network import NetworkPolicy
from agentab.harness.usage import capture_usage

httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

HTTP = {"httpx": httpx, "httpx2": httpx2}

CHAT = {
    "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion", "created": 1741570283,
    "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "The test fails on line 12.",
                                         "refusal": None, "annotations": []},
                 "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
              "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
    "service_tier": "default", "system_fingerprint": "fp_fc9f1d7035",
}


def chat_chunks(include_usage: bool) -> list[dict]:
    base = {"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
            "model": "o4-mini-2025-04-16", "system_fingerprint": "fp_44709d6fcb", "service_tier": "default"}
    deltas = [{"role": "assistant", "content": "", "refusal": None}, {"content": "Hello"}, {"content": "!"}, {}]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "logprobs": None,
                                    "finish_reason": "stop" if not d else None}]} for d in deltas]
    if include_usage:
        for chunk in chunks:
            chunk["usage"] = None
        chunks.append({**base, "choices": [], "usage": {
            "prompt_tokens": 19, "completion_tokens": 210, "total_tokens": 229,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 192, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}})
    return chunks


RESPONSES_USAGE = {"input_tokens": 328, "input_tokens_details": {"cached_tokens": 256, "cache_write_tokens": 0},
                   "output_tokens": 52, "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 380}


def response_object(status: str, usage: dict | None) -> dict:
    return {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", "object": "response",
        "created_at": 1741476542, "status": status, "error": None, "incomplete_details": None,
        "instructions": None, "max_output_tokens": None, "model": "gpt-4.1-2025-04-14",
        "output": [] if status == "in_progress" else [{
            "type": "message", "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
            "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Renamed the file.", "annotations": []}]}],
        "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
        "store": True, "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto",
        "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": None, "metadata": {},
    }


def responses_events() -> list[tuple[str, dict]]:
    item = {"id": "msg_67c", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    return [
        ("response.created", {"type": "response.created", "sequence_number": 0,
                              "response": response_object("in_progress", None)}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                        "output_index": 0, "item": item}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2,
                                        "item_id": "msg_67c", "output_index": 0, "content_index": 0,
                                        "delta": "Renamed the file.", "logprobs": []}),
        ("response.completed", {"type": "response.completed", "sequence_number": 3,
                                "response": response_object("completed", RESPONSES_USAGE)}),
    ]


MESSAGE = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", "role": "assistant",
    "model": "claude-sonnet-4-5-20250929", "content": [{"type": "text", "text": "Hi! My name is Claude."}],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 2051,
              "cache_read_input_tokens": 4000, "service_tier": "standard"},
}


def message_events() -> list[tuple[str, dict]]:
    start = {**MESSAGE, "content": [], "stop_reason": None,
             "usage": {"input_tokens": 472, "output_tokens": 2, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": 1024}}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Hello"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "!"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 15}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def sse(events: list, named: bool) -> bytes:
    lines = []
    for event in events:
        name, data = event if named else (None, event)
        lines.append((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n")
    if not named:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def chunked(body: bytes, size: int = 37) -> list[bytes]:
    """A body in small chunks, cutting events apart (as a network would)."""
    return [body[i:i + size] for i in range(0, len(body), size)]


def handler_for(http, routes: dict, seen: list | None = None):
    """A mock transport handler: path -> (status, body bytes or JSON, content type)."""

    def handler(request):
        if seen is not None:
            seen.append(request)
        status, body, kind = routes[request.url.path]
        if kind == "text/event-stream":
            return http.Response(status, headers={"content-type": kind}, stream=_Chunks(http, chunked(body)))
        return http.Response(status, json=body)

    return handler


def _Chunks(http, chunks):  # noqa: N802 - a stream of fixed chunks, sync and async
    class Chunks(http.SyncByteStream, http.AsyncByteStream):
        def __iter__(self):
            yield from chunks

        async def __aiter__(self):
            for chunk in chunks:
                yield chunk

    return Chunks()


def entry(call: dict) -> tuple:
    return (call["provider"], call["api"], call["model"], call["tokens_in"], call["tokens_out"],
            call["tokens_cached"], call["tokens_reasoning"], call["status"])


@pytest.fixture(autouse=True)
def no_network():
    with NetworkPolicy("block") as policy:
        yield
    assert policy.calls == []


# --- OpenAI ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("http_name", ["httpx", "httpx2"])
def test_openai_chat_completion_sync(http_name):
    http = HTTP[http_name]
    transport = http.MockTransport(handler_for(http, {"/v1/chat/completions": (200, CHAT, "json")}))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=http.Client(transport=transport))
    with capture_usage() as usage:
        completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert completion.usage.prompt_tokens_details.cached_tokens == 1024  # the SDK read the same body
    assert [entry(c) for c in usage.calls] == [
        ("openai", "chat.completions", "gpt-4o-2024-08-06", 1117, 46, 1024, 0, 200)]
    call = usage.calls[0]
    assert call["url"] == "https://api.openai.com/v1/chat/completions"
    assert call["started_at"] <= call["ended_at"] and http_name in usage.modules


@pytest.mark.parametrize("http_name", ["httpx", "httpx2"])
def test_openai_chat_stream_with_usage_passes_every_chunk(http_name):
    http = HTTP[http_name]
    body = sse(chat_chunks(include_usage=True), named=False)
    transport = http.MockTransport(handler_for(http, {"/v1/chat/completions": (200, body, "text/event-stream")}))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=http.Client(transport=transport))
    with capture_usage() as usage:
        stream = client.chat.completions.create(model="o4-mini", messages=[], stream=True,
                                                stream_options={"include_usage": True})
        assert usage.calls == []  # the answer has not been read yet
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello!" and chunks[-1].usage.completion_tokens == 210
    assert [entry(c) for c in usage.calls] == [
        ("openai", "chat.completions", "o4-mini-2025-04-16", 19, 210, 0, 192, 200)]
    assert usage.calls[0]["ended_at"] is not None


def test_openai_chat_stream_without_usage_counts_are_unknown():
    body = sse(chat_chunks(include_usage=False), named=False)
    transport = httpx.MockTransport(handler_for(httpx, {"/v1/chat/completions": (200, body, "text/event-stream")}))
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx.Client(transport=transport))
    with capture_usage() as usage:
        list(client.chat.completions.create(model="o4-mini", messages=[], stream=True))
    assert [entry(c) for c in usage.calls] == [
        ("openai", "chat.completions", "o4-mini-2025-04-16", None, None, None, None, 200)]


@pytest.mark.parametrize("http_name", ["httpx", "httpx2"])
def test_openai_responses_async_stream_and_whole(http_name):
    http = HTTP[http_name]
    body = sse(responses_events(), named=True)
    routes = {"/v1/responses": (200, body, "text/event-stream")}
    whole = {"/v1/responses": (200, response_object("completed", RESPONSES_USAGE), "json")}

    async def run():
        streaming = openai.AsyncOpenAI(api_key="sk-test", max_retries=0, http_client=http.AsyncClient(
            transport=http.MockTransport(handler_for(http, routes))))
        plain = openai.AsyncOpenAI(api_key="sk-test", max_retries=0, http_client=http.AsyncClient(
            transport=http.MockTransport(handler_for(http, whole))))
        events = [event async for event in await streaming.responses.create(model="gpt-4.1", input="x",
                                                                              stream=True)]
        response = await plain.responses.create(model="gpt-4.1", input="x")
        return events, response

    with capture_usage() as usage:
        events, response = asyncio.run(run())
    assert [e.type for e in events][-1] == "response.completed" and events[-1].response.usage.input_tokens == 328
    assert response.output_text == "Renamed the file."
    expected = ("openai", "responses", "gpt-4.1-2025-04-14", 328, 52, 256, 20, 200)
    assert [entry(c) for c in usage.calls] == [expected, expected]


# --- Anthropic ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("http_name", ["httpx2"])  # anthropic 2.x refuses an httpx (1) client
def test_anthropic_message_sync_and_async(http_name):
    http = HTTP[http_name]
    routes = {"/v1/messages": (200, MESSAGE, "json")}
    sync = anthropic.Anthropic(api_key="test", max_retries=0, http_client=http.Client(
        transport=http.MockTransport(handler_for(http, routes))))
    aclient = anthropic.AsyncAnthropic(api_key="test", max_retries=0, http_client=http.AsyncClient(
        transport=http.MockTransport(handler_for(http, routes))))
    with capture_usage() as usage:
        message = sync.messages.create(model="claude-sonnet-4-5", max_tokens=1024,
                                       messages=[{"role": "user", "content": "Hello"}])
        amessage = asyncio.run(aclient.messages.create(model="claude-sonnet-4-5", max_tokens=1024,
                                                       messages=[{"role": "user", "content": "Hello"}]))
    assert message.usage.cache_read_input_tokens == 4000 and amessage.content[0].text == "Hi! My name is Claude."
    # tokens_in counts every prompt token: 2095 uncached + 2051 written to the cache + 4000 read from it
    expected = ("anthropic", "messages", "claude-sonnet-4-5-20250929", 2095 + 2051 + 4000, 503, 4000, None, 200)
    assert [entry(c) for c in usage.calls] == [expected, expected]
    assert usage.calls[0]["url"] == "https://api.anthropic.com/v1/messages"


@pytest.mark.parametrize("http_name", ["httpx2"])
def test_anthropic_stream_sync_and_async(http_name):
    http = HTTP[http_name]
    routes = {"/v1/messages": (200, sse(message_events(), named=True), "text/event-stream")}
    sync = anthropic.Anthropic(api_key="test", max_retries=0, http_client=http.Client(
        transport=http.MockTransport(handler_for(http, routes))))
    aclient = anthropic.AsyncAnthropic(api_key="test", max_retries=0, http_client=http.AsyncClient(
        transport=http.MockTransport(handler_for(http, routes))))

    async def astream():
        async with aclient.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=[]) as stream:
            return await stream.get_final_message()

    with capture_usage() as usage:
        with sync.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=[]) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        afinal = asyncio.run(astream())
    assert text == "Hello!" and final.usage.output_tokens == 15 and afinal.content[0].text == "Hello!"
    expected = ("anthropic", "messages", "claude-sonnet-4-5-20250929", 472 + 1024, 15, 1024, None, 200)
    assert [entry(c) for c in usage.calls] == [expected, expected]


def test_anthropic_thinking_tokens_and_delta_input_update():
    events = message_events()
    events[-2] = ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                    "usage": {"output_tokens": 40, "input_tokens": 500,
                                              "cache_read_input_tokens": None,
                                              "output_tokens_details": {"thinking_tokens": 25}}})
    routes = {"/v1/messages": (200, sse(events, named=True), "text/event-stream")}
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=httpx2.Client(
        transport=httpx2.MockTransport(handler_for(httpx2, routes))))
    with capture_usage() as usage:
        list(client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=[], stream=True))
    # message_delta's input_tokens replace message_start's; its null cache_read leaves the earlier 1024
    assert entry(usage.calls[0])[3:7] == (500 + 1024, 40, 1024, 25)


# --- the transport itself -------------------------------------------------------------------------------

def test_stream_bytes_reach_the_client_unchanged_in_the_same_chunks():
    body = sse(message_events(), named=True)
    pieces = chunked(body, 11)

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(httpx, pieces))

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with capture_usage() as usage:
        with client.stream("POST", "https://api.anthropic.com/v1/messages", json={}) as response:
            received = list(response.iter_raw())
    assert received == pieces
    assert usage.calls[0]["tokens_out"] == 15


def test_gzip_encoded_stream_is_read_and_passed_on_encoded():
    body = sse(chat_chunks(include_usage=True), named=False)
    encoded = gzip.compress(body)

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
                              stream=_Chunks(httpx, chunked(encoded, 50)))

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with capture_usage() as usage:
        with client.stream("POST", "https://api.openai.com/v1/chat/completions", json={}) as response:
            decoded = response.read()
    assert decoded == body and usage.calls[0]["tokens_in"] == 19


def test_stream_closed_early_keeps_only_what_it_saw():
    body = sse(message_events(), named=True)
    first_event = body.index(b"\n\n") + 2
    pieces = [body[:10], body[10:first_event], body[first_event:]]

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(httpx, pieces))

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with capture_usage() as usage:
        with client.stream("POST", "https://api.anthropic.com/v1/messages", json={}) as response:
            next(response.iter_raw())  # 10 bytes: not even message_start: no model answer seen
        assert usage.calls == [] and usage.failed == []
        with client.stream("POST", "https://api.anthropic.com/v1/messages", json={}) as response:
            raw = response.iter_raw()
            next(raw), next(raw)  # message_start, then closed before its message_delta
    call = usage.calls[0]
    # the input count of message_start is known; its output count is a placeholder, so unknown
    assert (call["tokens_in"], call["tokens_out"], call["model"]) == (472 + 1024, None, MESSAGE["model"])
    assert call["ended_at"] is not None


def test_errors_and_other_requests_are_not_model_calls():
    seen: list = []
    routes = {"/v1/models": (200, {"object": "list", "data": []}, "json"),
              "/v1/chat/completions": (429, {"error": {"message": "Rate limit", "type": "requests"}}, "json")}
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx.Client(
        transport=httpx.MockTransport(handler_for(httpx, routes, seen))))
    with capture_usage() as usage:
        client.models.list()
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="gpt-4o", messages=[])
    assert len(seen) == 2 and usage.calls == []
    assert [entry(c) for c in usage.failed] == [("openai", "chat.completions", "gpt-4o", None, None, None, None, 429)]


def test_another_apis_messages_endpoint_is_not_a_model_call():
    """A mock API's ``POST /v1/messages`` (send a chat message) answers JSON that is no model's answer."""
    client = httpx.Client(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, json={"id": 7, "sent": True, "usage": {"input_tokens": 3}})))
    with capture_usage() as usage:
        client.post("http://127.0.0.1:9/v1/messages", json={"to": "ops", "text": "done"})
    assert usage.calls == [] and usage.failed == []


def test_a_call_without_response_is_failed_with_no_status():
    def handler(request):
        raise httpx.ConnectError("refused", request=request)

    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx.Client(
        transport=httpx.MockTransport(handler)))
    with capture_usage() as usage, pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="gpt-4o", messages=[])
    assert usage.calls == []
    call = usage.failed[0]
    assert (call["status"], call["tokens_in"], call["model"]) == (None, None, "gpt-4o") and call["ended_at"]


def test_counts_that_are_not_counts_are_unknown():
    body = {**CHAT, "usage": {"prompt_tokens": -1, "completion_tokens": True,
                              "prompt_tokens_details": {"cached_tokens": 5}}}
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=body)))
    with capture_usage() as usage:
        client.post("https://api.openai.com/v1/chat/completions", json={})
    # a cached count without a whole to be a part of is unknown too
    assert entry(usage.calls[0])[3:7] == (None, None, None, None)


def test_exit_restores_send_exactly_and_nesting_sees_every_call():
    before = {(name, cls): HTTP[name].__dict__[cls].__dict__.get("send")
              for name in HTTP for cls in ("Client", "AsyncClient")}
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=CHAT)))
    outer = capture_usage()
    with outer:
        with capture_usage() as inner, outer:
            client.post("https://api.openai.com/v1/chat/completions", json={})
        client.post("https://api.openai.com/v1/chat/completions", json={})
    client.post("https://api.openai.com/v1/chat/completions", json={})
    after = {(name, cls): HTTP[name].__dict__[cls].__dict__.get("send")
             for name in HTTP for cls in ("Client", "AsyncClient")}
    assert after == before and len(inner.calls) == 1 and len(outer.calls) == 2


def test_package_imports_and_captures_without_httpx():
    code = ("import sys\nsys.modules['httpx'] = None\nsys.modules['httpx2'] = None\n"
            "import agentab.harness.network, agentab.harness.mock_server\n"
            "from agentab.harness.usage import capture_usage\n"
            "with capture_usage() as usage:\n    pass\n"
            "print(usage.modules, usage.calls, 'httpx' in sys.modules and sys.modules['httpx'] is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "() [] False"
