"""Make the OTel attribute-family fixtures by running the real instrumentation libraries, offline.

An OpenAI client whose HTTP transport answers from a script (``httpx.MockTransport``: no network) drives
a small tool loop; the instrumentation libraries record it as they do in production, and the spans are
written as OTLP/JSON (the OTLP exporter's own protobuf encoder, ``encode_spans``, printed with protobuf's
JSON mapping; trace and span ids turned from base64 into lowercase hex and enums kept as integers, as
the OpenTelemetry Collector's file exporter writes them). Each family's file holds two runs:

- ``weather-paris``: the model asks for two tool calls in one response (parallel: Paris, and Atlantis,
  which fails), then one more call (``forecast``), then answers; its usage reports cached and reasoning
  tokens;
- ``weather-oslo``: one tool call, then the answer (no cached or reasoning tokens reported).

Families (see README.md for the versions):

- ``openinference.jsonl``: OpenInference (Arize Phoenix): ``openinference-instrumentation-openai`` for
  the LLM spans, ``openinference-instrumentation``'s ``OITracer`` for the AGENT and TOOL spans (the
  agent's own code, as Phoenix's docs show); a handoff is a TOOL span whose ``input.value`` is plain
  text (``text/plain``). One line per span (a ``SimpleSpanProcessor`` exporting each span as it ends).
- ``openllmetry.jsonl``: OpenLLMetry (Traceloop): ``opentelemetry-instrumentation-openai`` for the
  model spans, ``traceloop-sdk``'s ``@workflow`` / ``@tool`` decorators for the run and tool spans. One
  line per run (a batch).

Run with the libraries installed (not agentab's environment)::

    python -m venv /tmp/venv-otel && /tmp/venv-otel/bin/pip install openai opentelemetry-sdk \\
        opentelemetry-exporter-otlp-proto-common openinference-instrumentation-openai \\
        opentelemetry-instrumentation-openai traceloop-sdk
    /tmp/venv-otel/bin/python tests/data/otel_families/make_family_fixtures.py

The trace and span ids are random, so each run writes new ids; the counts the tests check do not change.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # the libraries are imported where they are used: pytest collects this file
    from openai import OpenAI

os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")

HERE = Path(__file__).parent
MODEL = "gpt-4o-mini-2024-07-18"
RESOURCE = {"service.name": "weather-agent", "eval.seed": "1"}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "forecast", "description": "Forecast for the next days",
                                      "parameters": {"type": "object",
                                                     "properties": {"city": {"type": "string"},
                                                                    "days": {"type": "integer"}},
                                                     "required": ["city", "days"]}}},
]


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _usage(prompt: int, completion: int, cached: int | None = None, reasoning: int | None = None) -> dict:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    return usage


#: The model's answers, per task, in order: (tool calls or None, final text, usage).
SCRIPT: dict[str, list[tuple[list[dict] | None, str | None, dict]]] = {
    "weather-paris": [
        ([_call("call_p1", "get_weather", {"city": "Paris"}), _call("call_p2", "get_weather", {"city": "Atlantis"})],
         None, _usage(120, 30, cached=64, reasoning=12)),
        ([_call("call_p3", "forecast", {"city": "Paris", "days": 2})], None, _usage(210, 20, cached=128, reasoning=0)),
        (None, "Paris: 18C and sunny, rain tomorrow. Atlantis: not found.", _usage(260, 40, cached=192, reasoning=8)),
    ],
    "weather-oslo": [
        ([_call("call_o1", "get_weather", {"city": "Oslo"})], None, _usage(100, 15)),
        (None, "Oslo: 4C and cloudy.", _usage(150, 25)),
    ],
}


def scripted_client(task: str) -> OpenAI:
    """An OpenAI client whose every chat completion is the next of the task's scripted answers."""
    try:  # the OpenAI SDK's HTTP client (httpx, or its fork httpx2 in OpenAI SDK 3.x)
        import httpx2 as httpx
    except ImportError:  # pragma: no cover
        import httpx  # type: ignore[no-redef]
    from openai import OpenAI

    answers = iter(SCRIPT[task])

    def handle(request: httpx.Request) -> httpx.Response:
        calls, text, usage = next(answers)
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        body = {"id": f"chatcmpl-{task}-{usage['prompt_tokens']}", "object": "chat.completion",
                "created": 1767225600, "model": MODEL, "system_fingerprint": "fp_test",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": usage}
        return httpx.Response(200, json=body)

    return OpenAI(api_key="sk-test", base_url="http://scripted.invalid/v1",
                  http_client=httpx.Client(transport=httpx.MockTransport(handle)))


def get_weather(city: str) -> dict:
    if city == "Atlantis":
        raise ValueError(f"unknown city: {city}")
    return {"city": city, "temperature_c": 18 if city == "Paris" else 4, "sky": "sunny" if city == "Paris" else "cloudy"}


def forecast(city: str, days: int) -> dict:
    return {"city": city, "days": [{"day": d + 1, "sky": "rain"} for d in range(days)]}


def agent_loop(client: OpenAI, task: str, tools: dict[str, Callable[..., Any]]) -> str:
    """The tool loop: ask, run every tool call of the answer (a failure goes back as an error message), repeat."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You answer weather questions with tools."},
                                      {"role": "user", "content": f"What is the weather for {task}?"}]
    while True:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            try:
                content = json.dumps(tools[call.function.name](**json.loads(call.function.arguments)))
            except ValueError as exc:
                content = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def otlp_lines(spans: list, per_span: bool) -> list[str]:
    """OTLP/JSON lines of finished SDK spans: one batch per span, or one for all."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    groups = [[span] for span in spans] if per_span else [spans]
    lines = []
    for group in groups:
        batch = MessageToDict(encode_spans(group), use_integers_for_enums=True)
        for rs in batch["resourceSpans"]:
            for scope in rs["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
        lines.append(json.dumps(batch, separators=(",", ":")))
    return lines


def openinference() -> list[str]:
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create(RESOURCE))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = OITracer(provider.get_tracer("weather-agent"), config=TraceConfig())
    tools = {"get_weather": tracer.tool(name="get_weather")(get_weather),
             "forecast": tracer.tool(name="forecast")(forecast)}
    for task in SCRIPT:
        with tracer.start_as_current_span(f"solve {task}", openinference_span_kind="agent") as agent:
            agent.set_input(f"What is the weather for {task}?")
            answer = agent_loop(scripted_client(task), task, tools)
            if task == "weather-paris":  # a handoff: a tool span whose input is plain text
                with tracer.start_as_current_span("transfer_to_travel_agent", openinference_span_kind="tool") as hand:
                    hand.set_tool(name="transfer_to_travel_agent", parameters={"type": "object"})
                    hand.set_input("The user also asked about flights to Paris.")
                    hand.set_output("travel_agent")
            agent.set_output(answer)
    OpenAIInstrumentor().uninstrument()
    return otlp_lines(sorted(exporter.get_finished_spans(), key=lambda s: s.end_time), per_span=True)


def openllmetry() -> list[str]:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import tool, workflow

    exporter = InMemorySpanExporter()
    Traceloop.init(app_name="weather-agent", exporter=exporter, disable_batch=True, telemetry_enabled=False,
                   resource_attributes={"eval.seed": "1"}, instruments=set())
    OpenAIInstrumentor().instrument()
    tools = {"get_weather": tool(name="get_weather")(get_weather), "forecast": tool(name="forecast")(forecast)}
    lines = []
    for task in SCRIPT:
        workflow(name=f"solve {task}")(lambda: agent_loop(scripted_client(task), task, tools))()
        lines += otlp_lines(exporter.get_finished_spans(), per_span=False)
        exporter.clear()
    return lines


def main() -> None:
    families = {"openinference": openinference, "openllmetry": openllmetry}
    for name in sys.argv[1:] or families:
        lines = families[name]()
        (HERE / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"{name}.jsonl: {len(lines)} lines")


if __name__ == "__main__":
    main()
