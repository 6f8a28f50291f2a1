"""The "otel" format: OTLP/JSON exports of GenAI spans, produced here by the real OpenTelemetry SDK.

Fixtures are not typed by hand: spans are made with ``opentelemetry-sdk``
(TracerProvider + SimpleSpanProcessor + InMemorySpanExporter), encoded with
the OTLP exporter's own encoder (``opentelemetry-exporter-otlp-proto-common``:
``encode_spans`` -> an ``ExportTraceServiceRequest``) and printed with
protobuf's ``MessageToDict``. That printer writes ids (``bytes`` fields) in
base64, while the OTLP/JSON specification requires trace and span ids as
lowercase hex, so :func:`otlp_batch` converts ``traceId``/``spanId``/
``parentSpanId`` to hex, as the Collector's file exporter writes them; enums
are written as integers (``use_integers_for_enums``), as the specification
requires, unless a test asks for protobuf's enum names.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import inspect
import itertools
import json
import warnings
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")

from google.protobuf.json_format import MessageToDict
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
)

import agentab
import agentab.formats
from agentab.formats.decode import Prepared
from agentab.formats.otel import FIELDS, FORMAT

T0 = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z in unix nanoseconds
RESOURCE = {"agentab.task_id": "fix-test", "agentab.seed": 3, "agentab.arm": "candidate"}


# --------------------------------------------------------------------------- #
# Making spans with the SDK and writing them as OTLP/JSON
# --------------------------------------------------------------------------- #
class Sdk:
    """A tracer whose finished spans are kept in memory (one resource)."""

    def __init__(self, resource: dict | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create(RESOURCE if resource is None else resource))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("agentab-tests")
        self.open: list[ReadableSpan] = []

    def span(self, name: str, start_ms: float, end_ms: float | None, parent=None, attributes: dict | None = None,
             error: str | None = None):
        """A span from ``start_ms`` to ``end_ms`` (milliseconds after T0); ``end_ms=None`` leaves it open for good."""
        span = self.begin(name, start_ms, parent, attributes)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        if end_ms is None:
            self.open.append(_still_open(span))
        else:
            span.end(end_time=T0 + int(end_ms * 1e6))
        return span

    def begin(self, name: str, start_ms: float, parent=None, attributes: dict | None = None):
        """A span started at ``start_ms``, to be ended by the caller (``end(span, ms)``)."""
        if parent is None:
            ctx = otel_context.Context()  # a root span
        elif isinstance(parent, SpanContext):
            ctx = otel_trace.set_span_in_context(NonRecordingSpan(parent))  # a remote parent
        else:
            ctx = otel_trace.set_span_in_context(parent)
        return self.tracer.start_span(name, context=ctx, attributes=attributes, start_time=T0 + int(start_ms * 1e6))

    def spans(self) -> list[ReadableSpan]:
        """Every span: the finished ones (in the order they ended), then the open ones."""
        return list(self.exporter.get_finished_spans()) + self.open


def end(span, ms: float) -> None:
    span.end(end_time=T0 + int(ms * 1e6))


def _still_open(span) -> ReadableSpan:
    """A snapshot of a span that has not ended, as an exporter would see it if it exported it now.

    SDK processors only export ended spans, so an open span (a tool call
    never answered, e.g. the process was killed) is simulated by building
    the public :class:`ReadableSpan` from the live span's own fields, with
    no end time: the encoder then leaves ``endTimeUnixNano`` out.
    """
    return ReadableSpan(name=span.name, context=span.get_span_context(), parent=span.parent,
                        resource=span.resource, attributes=dict(span.attributes), kind=span.kind,
                        status=span.status, start_time=span.start_time, end_time=None,
                        instrumentation_scope=span.instrumentation_scope)


def _hex(value: str) -> str:
    return base64.b64decode(value).hex()


def otlp_batch(spans, hex_ids: bool = True, integer_enums: bool = True) -> dict:
    """One OTLP/JSON batch (``{"resourceSpans": [...]}``) of SDK spans."""
    batch = MessageToDict(encode_spans(spans), use_integers_for_enums=integer_enums)
    if hex_ids:
        for resource_spans in batch["resourceSpans"]:
            for scope in resource_spans.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = _hex(span[key])
    return batch


def write_lines(path: Path, *batches) -> Path:
    """Write one batch per line (each batch a list of spans, a dict, or raw text)."""
    lines = []
    for batch in batches:
        if isinstance(batch, str):
            lines.append(batch)
        else:
            lines.append(json.dumps(batch if isinstance(batch, dict) else otlp_batch(batch)))
    path.write_text("\n".join(lines) + "\n")
    return path


def read(path: Path, fields: dict | None = None) -> list:
    """The items of a file, each run as its trace-record dict."""
    return as_records(FORMAT.read_file(path, {**FIELDS, **(fields or {})}))


def as_records(items) -> list:
    """Items with each run (built in the decoder's columns) as its trace-record dict."""
    return [dataclasses.replace(item, record=item.record.to_record()) if isinstance(item.record, Prepared) else item
            for item in items]


def records(items) -> list[dict]:
    assert all(item.reason is None for item in items), [item.reason for item in items if item.reason]
    return [item.record for item in items]


def tool_attrs(tool: str, args: dict | None = None, result=None, call_id: str | None = None) -> dict:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
    if args is not None:
        attrs["gen_ai.tool.call.arguments"] = json.dumps(args)
    if result is not None:
        attrs["gen_ai.tool.call.result"] = result if isinstance(result, str) else json.dumps(result)
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = call_id
    return attrs


def chat_attrs(tokens_in: int | None, tokens_out: int | None, model: str = "gpt-test") -> dict:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": model}
    if tokens_in is not None:
        attrs["gen_ai.usage.input_tokens"] = tokens_in
    if tokens_out is not None:
        attrs["gen_ai.usage.output_tokens"] = tokens_out
    return attrs


def agent_attrs(outcome=True, **extra) -> dict:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "coder", "agentab.outcome": outcome,
            **extra}


def react_run(sdk: Sdk, offset_ms: float = 0, outcome=True, parent=None, agent_usage: bool = True, **agent_extra):
    """A ReAct-style run made with the SDK; returns the agent span.

    Timeline (ms after T0 + offset): agent 0-1200; chat 100-150 (100/10
    tokens); tool ``read_file`` 200-300; chat 400-450 (200/20); tool
    ``run_tests`` 500-600 failing; chat 700-750 (300/30); tool ``write_file``
    800-, never ended; chat 1000-1050 (50/5), the final answer. The agent
    span also carries the run's total usage (650/65), as many agent
    frameworks record it. Spans are created out of start order (the failing
    tool first) so that the export order differs from the start order.
    """
    o = offset_ms
    attrs = agent_attrs(outcome, **agent_extra)
    if agent_usage:
        attrs.update({"gen_ai.usage.input_tokens": 650, "gen_ai.usage.output_tokens": 65})
    agent = sdk.begin("invoke_agent coder", o + 0, parent=parent, attributes=attrs)
    sdk.span("execute_tool run_tests", o + 500, o + 600, agent,
             {**tool_attrs("run_tests", {"path": "tests/"}), "error.type": "TestFailure"}, error="2 tests failed")
    sdk.span("chat gpt-test", o + 100, o + 150, agent, chat_attrs(100, 10))
    sdk.span("execute_tool read_file", o + 200, o + 300, agent,
             tool_attrs("read_file", {"path": "src/main.py"}, {"bytes": 4096}, call_id="call_1"))
    sdk.span("chat gpt-test", o + 400, o + 450, agent, chat_attrs(200, 20))
    sdk.span("chat gpt-test", o + 700, o + 750, agent, chat_attrs(300, 30))
    sdk.span("execute_tool write_file", o + 800, None, agent, tool_attrs("write_file", {"path": "src/main.py"}))
    sdk.span("chat gpt-test", o + 1000, o + 1050, agent, chat_attrs(50, 5))
    end(agent, o + 1200)
    return agent


# --------------------------------------------------------------------------- #
# One run: steps, arguments, observations, order, tokens, run-level fields
# --------------------------------------------------------------------------- #
def test_invoke_agent_span_becomes_a_run_with_tool_steps(tmp_path):
    sdk = Sdk()
    agent = react_run(sdk)
    (item,) = read(write_lines(tmp_path / "traces.jsonl", sdk.spans()))
    assert item.line == 1 and item.reason is None
    rec = item.record
    trace_id = format(agent.get_span_context().trace_id, "032x")
    span_id = format(agent.get_span_context().span_id, "016x")
    assert rec["run_id"] == trace_id  # no gen_ai.conversation.id: the trace id
    assert (rec["task_id"], rec["seed"], rec["arm"], rec["outcome"]) == ("fix-test", 3, "candidate", True)
    assert rec["latency_s"] == pytest.approx(1.2)

    # steps in order of start time, not of export
    assert [s["tool"] for s in rec["steps"]] == ["read_file", "run_tests", "write_file"]
    assert [s["index"] for s in rec["steps"]] == [0, 1, 2]
    read_file, run_tests, write_file = rec["steps"]
    assert read_file["args"] == {"path": "src/main.py"}
    assert read_file["observation"] == {"status": "ok", "result": {"bytes": 4096}}
    assert read_file["metadata"]["tool_call_id"] == "call_1"
    assert read_file["started_at"] == "2026-01-01T00:00:00.200000000Z"
    assert read_file["ended_at"] == "2026-01-01T00:00:00.300000000Z"
    assert run_tests["observation"] == {"status": "error", "error": "2 tests failed"}
    assert write_file["observation"] is None and "ended_at" not in write_file  # never answered, kept

    # tokens: the chat spans' usage, once (not the agent span's copy of it too)
    assert [(s["tokens_in"], s["tokens_out"]) for s in rec["steps"]] == [(100, 10), (200, 20), (350, 35)]
    meta = rec["metadata"]
    assert (rec["tokens_in"], rec["tokens_out"]) == (650, 65) and "tokens_in" not in meta  # the run's totals
    assert meta["model"] == "gpt-test" and meta["harness"] == "coder" and meta["provider"] == "openai"
    assert meta["trace_id"] == trace_id and meta["span_id"] == span_id
    assert meta["started_at"] == "2026-01-01T00:00:00.000000000Z"

    traces = agentab.load_traces([rec])
    run = traces.runs.iloc[0]
    assert (run["n_steps"], run["n_errors"], run["tokens_in"], run["tokens_out"]) == (3, 1, 650, 65)
    assert run["model"] == "gpt-test" and run["harness"] == "coder"
    steps = traces.steps
    assert list(steps["status"].astype(object).where(steps["status"].notna(), None)) == ["ok", "error", None]
    assert steps.loc[1, "error"] == "2 tests failed"
    assert steps.loc[0, "started_at"].value == T0 + 200_000_000


def test_tokens_sum_of_model_calls_whatever_their_order(tmp_path):
    # usage on the agent span AND its chat children: the children's sum, each token once
    sdk = Sdk()
    agent = sdk.span("invoke_agent coder", 0, 100, attributes=agent_attrs(
        **{"gen_ai.usage.input_tokens": 9999, "gen_ai.usage.output_tokens": 9999}))
    chats = [(5, 11, 1), (25, 13, 2), (45, 17, 3), (85, 19, 4)]  # after the last tool: to the last step
    for start, tokens_in, tokens_out in chats:
        sdk.span("chat m", start, start + 2, agent, chat_attrs(tokens_in, tokens_out))
    for start in (60, 10, 30):
        sdk.span(f"execute_tool t{start}", start, start + 5, agent, tool_attrs(f"t{start}"))
    (rec,) = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    assert sum(s["tokens_in"] for s in rec["steps"]) == sum(c[1] for c in chats)
    assert sum(s["tokens_out"] for s in rec["steps"]) == sum(c[2] for c in chats)
    # chat at 5 -> t10; chat at 25 -> t30; chat at 45 -> t60; chat at 85 -> the last step, t60
    assert [(s["tool"], s["tokens_in"]) for s in rec["steps"]] == [("t10", 11), ("t30", 13), ("t60", 17 + 19)]


def test_agent_span_usage_used_when_no_child_records_usage(tmp_path):
    sdk = Sdk()
    agent = sdk.span("invoke_agent coder", 0, 100, attributes=agent_attrs(
        **{"gen_ai.usage.input_tokens": 700, "gen_ai.usage.output_tokens": 70}))
    sdk.span("chat m", 5, 8, agent, chat_attrs(None, None))
    sdk.span("execute_tool a", 10, 20, agent, tool_attrs("a"))
    sdk.span("execute_tool b", 30, 40, agent, tool_attrs("b"))
    (rec,) = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    # the second step received none: its own counts are unknown (not 0), its model call counted at step 0
    assert [(s.get("tokens_in"), s.get("tokens_out")) for s in rec["steps"]] == [(700, 70), (None, None)]
    assert [s["metadata"].get("tokens_with_step") for s in rec["steps"]] == [None, 0]
    assert agentab.load_traces([rec]).runs.loc[0, "tokens"] == 770


def test_no_usage_means_unknown_tokens_and_a_run_without_steps_keeps_its_total(tmp_path):
    sdk = Sdk()
    agent = sdk.span("invoke_agent coder", 0, 100, attributes=agent_attrs())
    sdk.span("execute_tool a", 10, 20, agent, tool_attrs("a"))
    sdk2 = Sdk({**RESOURCE, "agentab.seed": 4})
    answer_only = sdk2.span("invoke_agent coder", 0, 100, attributes=agent_attrs())
    sdk2.span("chat m", 5, 8, answer_only, chat_attrs(40, 4))
    with_tools, without = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans(), sdk2.spans())))
    assert with_tools["steps"][0].get("tokens_in") is None and "tokens_in" not in with_tools
    assert without["steps"] == [] and (without["tokens_in"], without["tokens_out"]) == (40, 4)
    runs = agentab.load_traces([with_tools, without]).runs
    assert runs["tokens_in"].isna().iloc[0]


def test_model_call_inside_a_tool_counts_for_that_tool(tmp_path):
    # an agent used as a tool: its model calls (and its own sub-agent span) are inside the tool span
    sdk = Sdk()
    agent = sdk.span("invoke_agent coder", 0, 100, attributes=agent_attrs())
    sdk.span("chat m", 1, 2, agent, chat_attrs(10, 1))
    tool = sdk.span("execute_tool ask_expert", 5, 50, agent, tool_attrs("ask_expert", {"q": "why?"}))
    sub = sdk.span("invoke_agent expert", 6, 49, tool, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "expert",
        "gen_ai.usage.input_tokens": 500, "gen_ai.usage.output_tokens": 50})
    sdk.span("chat m", 7, 8, sub, chat_attrs(300, 30))
    sdk.span("execute_tool search", 10, 20, sub, tool_attrs("search", {"q": "x"}))
    sdk.span("chat m", 21, 22, sub, chat_attrs(200, 20))
    sdk.span("execute_tool done", 60, 70, agent, tool_attrs("done"))
    (rec,) = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    assert rec["metadata"]["harness"] == "coder"  # the outer agent is the run; the expert is inside it
    # the sub-agent's own total (500) is replaced by its model calls' (300 + 200), both inside ask_expert
    assert [(s["tool"], s.get("tokens_in")) for s in rec["steps"]] == [("ask_expert", 10 + 300 + 200),
                                                                        ("search", None), ("done", None)]
    assert [s["metadata"].get("tokens_with_step") for s in rec["steps"]] == [None, 0, 0]
    assert rec["tokens_in"] == 510


# --------------------------------------------------------------------------- #
# Older attribute names, other vocabularies, field mapping
# --------------------------------------------------------------------------- #
def test_older_attribute_names(tmp_path):
    sdk = Sdk()
    agent = sdk.span("invoke_agent legacy", 0, 100, attributes={
        "gen_ai.operation.name": "invoke_agent", "agentab.outcome": 0.5})
    sdk.span("chat m", 1, 2, agent, {"gen_ai.operation.name": "chat", "gen_ai.system": "anthropic",
                                     "gen_ai.response.model": "claude-test",
                                     "gen_ai.usage.prompt_tokens": 11, "gen_ai.usage.completion_tokens": 1})
    # a tool span named by the convention's span name only, tool name in tool.name, arguments in tool.arguments
    sdk.span("execute_tool", 10, 20, agent, {"tool.name": "grep", "tool.arguments": '{"pattern": "TODO"}'})
    sdk.span("completion", 21, 22, agent, {"openinference.span.kind": "LLM", "llm.model_name": "claude-test",
                                           "llm.usage.prompt_tokens": 22, "llm.usage.completion_tokens": 2})
    # OpenInference: span kind TOOL, arguments in input.value, result in output.value
    sdk.span("lookup", 30, 40, agent, {"openinference.span.kind": "TOOL", "tool.name": "lookup",
                                       "input.value": '{"id": 7}', "output.value": "found it"})
    sdk.span("llm", 41, 42, agent, {"openinference.span.kind": "LLM", "llm.token_count.prompt": 33,
                                    "llm.token_count.completion": 3})
    sdk.span("execute_tool final", 50, 60, agent, {"gen_ai.operation.name": "execute_tool", "tool.name": "final"})
    (rec,) = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    assert [s["tool"] for s in rec["steps"]] == ["grep", "lookup", "final"]
    assert [s["args"] for s in rec["steps"]] == [{"pattern": "TODO"}, {"id": 7}, {}]
    assert rec["steps"][1]["observation"] == {"status": "ok", "result": "found it"}
    assert [(s["tokens_in"], s["tokens_out"]) for s in rec["steps"]] == [(11, 1), (22, 2), (33, 3)]
    meta = rec["metadata"]
    assert (meta["model"], meta["provider"], meta["harness"]) == ("claude-test", "anthropic", "legacy")
    assert rec["outcome"] == 0.5
    agentab.load_traces([rec])


def test_a_root_span_without_invoke_agent_is_a_run(tmp_path):
    sdk = Sdk()
    root = sdk.span("my_agent.run", 0, 100, attributes={"agentab.outcome": False})
    sdk.span("execute_tool ls", 10, 20, root, tool_attrs("ls", {"path": "."}))
    (rec,) = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    assert rec["outcome"] is False and [s["tool"] for s in rec["steps"]] == ["ls"]
    assert "harness" not in rec["metadata"]


def test_spans_of_no_agent_are_skipped(tmp_path):
    sdk = Sdk({"service.name": "web"})
    request = sdk.span("GET /health", 0, 1, attributes={"http.request.method": "GET"})
    sdk.span("SELECT", 0.2, 0.5, request, {"db.system": "postgresql"})
    assert read(write_lines(tmp_path / "t.jsonl", sdk.spans())) == []


def test_fields_mapping_override(tmp_path):
    sdk = Sdk({"eval.case": "case-9", "service.name": "agent"})
    agent = sdk.span("invoke_agent coder", 0, 100, attributes={
        "gen_ai.operation.name": "invoke_agent", "eval.trial": 2, "eval.passed": True, "eval.variant": "B",
        "eval.run": "run-17", "app.model": "my-model", "app.harness": "react-v3", "app.cost": 0.25,
        "app.wall_s": 7, "gen_ai.request.model": "ignored", "agentab.task_id": "ignored"})
    sdk.span("execute_tool ls", 10, 20, agent, tool_attrs("ls"))
    mapping = {"run_id": "eval.run", "task_id": "eval.case", "seed": "eval.trial", "outcome": "eval.passed",
               "arm": "eval.variant", "model": "app.model", "harness": "app.harness", "cost_usd": "app.cost",
               "latency_s": "app.wall_s"}
    (rec,) = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans()), mapping))
    assert (rec["run_id"], rec["task_id"], rec["seed"], rec["outcome"], rec["arm"]) == ("run-17", "case-9", 2, True, "B")
    assert (rec["metadata"]["model"], rec["metadata"]["harness"]) == ("my-model", "react-v3")
    assert (rec["cost_usd"], rec["latency_s"]) == (0.25, 7)
    (rec,) = records(read(tmp_path / "t.jsonl", {**mapping, "latency_s": "app.absent"}))
    assert rec["latency_s"] == pytest.approx(0.1)  # not recorded: the run span's duration


# --------------------------------------------------------------------------- #
# Several runs, batches, documents, encodings
# --------------------------------------------------------------------------- #
def test_several_runs_in_one_trace(tmp_path):
    sdk = Sdk({"agentab.seed": 0})
    evaluation = sdk.begin("evaluation", 0, attributes={"agentab.arm": "baseline"})
    first = react_run(sdk, 0, parent=evaluation, **{"agentab.task_id": "task-a"})
    second = react_run(sdk, 2000, outcome=False, parent=evaluation, **{"agentab.task_id": "task-b"})
    end(evaluation, 5000)
    recs = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    assert [r["task_id"] for r in recs] == ["task-a", "task-b"]
    assert [r["arm"] for r in recs] == ["baseline", "baseline"]  # from the enclosing span
    trace_id = format(first.get_span_context().trace_id, "032x")
    assert [r["run_id"] for r in recs] == [f"{trace_id}:{format(s.get_span_context().span_id, '016x')}"
                                           for s in (first, second)]
    assert all(len(r["steps"]) == 3 and r["tokens_in"] == 650 for r in recs)
    assert agentab.load_traces(recs).runs["outcome"].tolist() == [True, False]


def test_run_ids_from_conversation_ids(tmp_path):
    sdk = Sdk()
    for offset, (conversation, seed) in enumerate([("conv-1", 0), ("conv-2", 1), ("conv-2", 2)]):
        agent = sdk.span("invoke_agent coder", offset * 100, offset * 100 + 50, attributes=agent_attrs(
            **{"gen_ai.conversation.id": conversation, "agentab.seed": seed}))
        sdk.span("execute_tool ls", offset * 100 + 1, offset * 100 + 2, agent, tool_attrs("ls"))
    recs = records(read(write_lines(tmp_path / "t.jsonl", sdk.spans())))
    ids = [r["run_id"] for r in recs]
    assert ids[0] == "conv-1"
    assert ids[1].startswith("conv-2:") and ids[2].startswith("conv-2:") and ids[1] != ids[2]  # shared: qualified
    assert agentab.load_traces(recs).runs["run_id"].nunique() == 3


def test_run_split_across_batches(tmp_path):
    sdk = Sdk()
    react_run(sdk)
    spans = sdk.spans()  # the agent span ended last: it is second to last (before the open tool span)
    agent_at = next(i for i, s in enumerate(spans) if s.name.startswith("invoke_agent"))
    path = write_lines(tmp_path / "t.jsonl", spans[:3], spans[3:agent_at], [spans[agent_at]], spans[agent_at + 1:])
    (item,) = read(path)
    assert item.line == 3  # the line of the batch holding the run span
    assert len(item.record["steps"]) == 3 and item.record["tokens_in"] == 650


def test_one_document_a_list_of_batches_and_gzip(tmp_path):
    sdk = Sdk()
    react_run(sdk)
    spans = sdk.spans()
    (expected,) = records(read(write_lines(tmp_path / "lines.jsonl", spans)))
    pretty = tmp_path / "one.json"
    pretty.write_text(json.dumps(otlp_batch(spans), indent=2))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([otlp_batch(spans[:4]), otlp_batch(spans[4:])], indent=1))
    zipped = tmp_path / "lines.jsonl.gz"
    zipped.write_bytes(gzip.compress((tmp_path / "lines.jsonl").read_bytes()))
    for path, line in ((pretty, 1), (listed, 2), (zipped, 1)):
        (item,) = read(path)
        assert item.record == expected and item.line == line, path.name
    in_memory = as_records(FORMAT.read_objects([otlp_batch(spans)], "<objects>", FIELDS))
    assert [i.record for i in in_memory] == [expected]


def test_base64_ids_and_enum_names_are_read_too(tmp_path):
    # protobuf's own JSON printer: base64 ids and "STATUS_CODE_ERROR"; the reader gives the same record
    sdk = Sdk()
    react_run(sdk)
    spans = sdk.spans()
    (expected,) = records(read(write_lines(tmp_path / "hex.jsonl", spans)))
    raw = otlp_batch(spans, hex_ids=False, integer_enums=False)
    assert any(s.get("status", {}).get("code") == "STATUS_CODE_ERROR"
               for s in raw["resourceSpans"][0]["scopeSpans"][0]["spans"])
    (rec,) = records(read(write_lines(tmp_path / "b64.jsonl", raw)))
    assert rec == expected


# --------------------------------------------------------------------------- #
# Bad input: one rejection per record read, naming line, span and attribute
# --------------------------------------------------------------------------- #
def test_orphan_spans_are_a_rejection(tmp_path):
    good = Sdk()
    react_run(good)
    orphans = Sdk()
    missing_parent = SpanContext(trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0x00F067AA0BA902B7,
                                 is_remote=True, trace_flags=TraceFlags(1))
    orphans.span("execute_tool ls", 10, 20, missing_parent, tool_attrs("ls"))
    orphans.span("execute_tool cat", 30, 40, missing_parent, tool_attrs("cat"))
    items = read(write_lines(tmp_path / "t.jsonl", good.spans(), orphans.spans()))
    assert len(items) == 3  # the run, and each orphan tree
    assert items[0].record is not None
    for item in items[1:]:
        assert item.record is None and item.line == 2
        assert "span tree with no run" in item.reason and "0af7651916cd43dd8448eb211c80319c" in item.reason
        assert "00f067aa0ba902b7" in item.reason


def test_malformed_line_is_a_rejection(tmp_path):
    sdk = Sdk()
    react_run(sdk)
    path = write_lines(tmp_path / "t.jsonl", sdk.spans(), '{"resourceSpans": [', '{"spans": []}', "")
    items = read(path)
    assert [i.line for i in items] == [1, 2, 3]
    assert items[0].record is not None
    assert items[1].record is None and items[1].reason.startswith("malformed JSON")
    assert items[2].record is None and "not an OTLP trace batch" in items[2].reason


def test_missing_ids_are_left_to_the_loader_naming_span_and_attribute(tmp_path):
    # a required field the file lacks is no rejection: the item names it (Item.missing) for the loader to
    # fill (fields={"path": ...}, outcomes=) or reject; a value of the wrong type is still a rejection
    sdk = Sdk({"agentab.task_id": "t"})  # no seed anywhere
    agent = react_run(sdk)
    path = write_lines(tmp_path / "t.jsonl", sdk.spans())
    (item,) = read(path)
    assert item.reason is None and item.record["seed"] is None and item.record["task_id"] == "t"
    (field, reason), = item.missing.values()
    assert list(item.missing) == ["seed"] and field == "agentab.seed"
    assert format(agent.get_span_context().trace_id, "032x") in reason
    assert format(agent.get_span_context().span_id, "016x") in reason
    (item,) = read(path, {"task_id": "eval.case"})  # mapped to an absent attribute
    assert item.reason is None and list(item.missing) == ["task_id", "seed"] and item.record["task_id"] is None
    assert item.missing["task_id"][0] == "eval.case" and "task_id" in item.missing["task_id"][1]
    (item,) = read(path, {"seed": "agentab.task_id"})  # present, but not an integer
    assert item.field == "agentab.task_id" and "expected an integer" in item.reason


def test_malformed_tool_arguments_are_a_rejection(tmp_path):
    sdk = Sdk()
    agent = sdk.span("invoke_agent coder", 0, 100, attributes=agent_attrs())
    tool = sdk.span("execute_tool ls", 10, 20, agent, {"gen_ai.operation.name": "execute_tool",
                                                       "gen_ai.tool.name": "ls",
                                                       "gen_ai.tool.call.arguments": '{"path": '})
    (item,) = read(write_lines(tmp_path / "t.jsonl", sdk.spans()))
    assert item.record is None and item.field == "gen_ai.tool.call.arguments"
    assert format(tool.get_span_context().span_id, "016x") in item.reason and "not JSON" in item.reason


def test_duplicate_exports_and_parent_cycles(tmp_path):
    # an exporter retry can write a batch twice: each span is read once
    sdk = Sdk()
    react_run(sdk)
    batch = otlp_batch(sdk.spans())
    (item,) = read(write_lines(tmp_path / "twice.jsonl", batch, batch))
    assert item.line == 1 and len(item.record["steps"]) == 3
    # corrupted links (the SDK cannot make them): the agent span's parent set to its own child
    spans = batch["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agent = next(s for s in spans if s["name"].startswith("invoke_agent"))
    agent["parentSpanId"] = next(s["spanId"] for s in spans if s is not agent)
    (item,) = read(write_lines(tmp_path / "cycle.jsonl", batch))
    assert item.record is None and "cycle" in item.reason and item.field == "parentSpanId"


def test_sniff():
    sdk = Sdk()
    react_run(sdk)
    head = json.dumps(otlp_batch(sdk.spans())).encode()[:65536]
    assert FORMAT.sniff(head, "traces.jsonl")
    assert not FORMAT.sniff(b'{"run_id": "r1", "task_id": "t", "seed": 0, "steps": []}', "runs.jsonl")
    assert FORMAT.name == "otel" and FORMAT.read_objects is not None


def test_example_is_one_valid_line():
    (item,) = as_records(FORMAT.read_objects([json.loads(FORMAT.example)], "<example>", FIELDS))
    assert "\n" not in FORMAT.example and item.record["steps"][0]["tool"] == "read_file"
    agentab.load_traces([item.record])


# --------------------------------------------------------------------------- #
# Through agentab.load_traces
# --------------------------------------------------------------------------- #
def _mixed_file(tmp_path: Path) -> tuple[Path, list]:
    runs = Sdk()
    evaluation = runs.begin("evaluation", 0)
    for i, task in enumerate(["a", "b", "c"]):
        react_run(runs, i * 2500, outcome=i != 1, parent=evaluation, **{"agentab.task_id": task})
    end(evaluation, 9000)
    orphans = Sdk()
    orphans.span("execute_tool ls", 1, 2, SpanContext(trace_id=1, span_id=2, is_remote=True,
                                                               trace_flags=TraceFlags(1)), tool_attrs("ls"))
    path = write_lines(tmp_path / "mixed.jsonl", runs.spans(), orphans.spans(), "{oops")
    return path, read(path)


def test_every_record_validates(tmp_path):
    _, items = _mixed_file(tmp_path)
    recs = [i.record for i in items if i.record is not None]
    assert len(recs) == 3 and len(items) == 5
    traces = agentab.load_traces(recs)
    assert len(traces.runs) == 3 and traces.runs["n_steps"].tolist() == [3, 3, 3]
    assert traces.runs["tokens_in"].tolist() == [650, 650, 650]


def _varied_file(tmp_path: Path) -> Path:
    """Runs of every shape: nested runs under an evaluation span, a sub-agent inside a tool, no usage, no
    steps, a shared conversation id, an out-of-order tool, a duplicate export, an orphan, a bad line, a
    seed that is no integer, non-text attribute values."""
    sdk = Sdk()
    evaluation = sdk.begin("evaluation", 0, attributes={"agentab.arm": "baseline"})
    for i in range(3):
        react_run(sdk, i * 2500, outcome=i != 1, parent=evaluation, **{"agentab.task_id": f"t{i}"})
    end(evaluation, 9000)
    agent = sdk.span("invoke_agent coder", 0, 100, attributes=agent_attrs(**{"agentab.seed": 7}))
    tool = sdk.span("execute_tool ask", 5, 50, agent, tool_attrs("ask", {"q": "why?"}, [1, 2], call_id=42))
    sub = sdk.span("invoke_agent expert", 6, 49, tool, {"gen_ai.operation.name": "invoke_agent",
                                                        "gen_ai.usage.input_tokens": 500})
    sdk.span("chat m", 7, 8, sub, chat_attrs(300, None))
    sdk.span("execute_tool search", 10, 20, sub, tool_attrs("search", {"q": "x"}, "plain text"))
    sdk.span("chat m", 60, 61, agent, chat_attrs(5, 6))
    bare = sdk.span("invoke_agent coder", 0, 10, attributes=agent_attrs(
        **{"agentab.seed": 8, "gen_ai.conversation.id": "c"}))
    sdk.span("chat m", 1, 2, bare, chat_attrs(3, 4))
    again = sdk.span("invoke_agent coder", 20, 30, attributes=agent_attrs(
        **{"agentab.seed": 9, "gen_ai.conversation.id": "c"}))
    sdk.span("execute_tool late", 25, 26, again, tool_attrs("late"), error="boom")
    sdk.span("execute_tool early", 21, 22, again, {"gen_ai.operation.name": "execute_tool", "tool.name": "early"})
    no_seed = Sdk({"agentab.task_id": "x", "agentab.seed": "seven"})  # a seed that is no integer: a rejection
    no_seed.span("invoke_agent coder", 0, 10, attributes=agent_attrs())
    orphan = Sdk()
    orphan.span("execute_tool ls", 1, 2, SpanContext(trace_id=1, span_id=2, is_remote=True,
                                                     trace_flags=TraceFlags(1)), tool_attrs("ls"))
    spans = sdk.spans()
    return write_lines(tmp_path / "varied.jsonl", spans[:7], spans[7:], otlp_batch(spans[:4]), no_seed.spans(),
                       orphan.spans(), "{oops")


@pytest.mark.parametrize("strict", [False, True])
def test_runs_in_columns_load_as_their_records_do(tmp_path, monkeypatch, strict):
    # the reader gives runs in the decoder's columns (Prepared), skipping a record of dicts and its schema
    # check; loading their trace-record dicts through the full validation gives the same tables
    import pandas as pd

    import agentab.formats.otel as otel_module

    path = _varied_file(tmp_path)
    fast = agentab.load_traces(path, format="otel", strict=False)
    assert len(fast.runs) == 6 and fast.n_read == 9 and fast.steps["tool"].nunique() == 7
    arm = agentab.load_traces(path, format="otel", strict=False, arm="baseline")  # rejects the runs of candidate
    assert len(arm.runs) == 3  # the evaluation's three; the other three say candidate (on their resource)
    as_dicts = dataclasses.replace(FORMAT, read_file=lambda p, f: iter(as_records(FORMAT.read_file(p, f))))
    monkeypatch.setattr(otel_module, "FORMAT", as_dicts)
    checked = agentab.load_traces(path, format="otel", strict=False)
    arm_checked = agentab.load_traces(path, format="otel", strict=False, arm="baseline")
    for name in ("runs", "steps", "rejected"):
        pd.testing.assert_frame_equal(getattr(fast, name), getattr(checked, name))
        pd.testing.assert_frame_equal(getattr(arm, name), getattr(arm_checked, name))
    if strict:
        with pytest.raises(agentab.TraceError) as via_dicts:
            agentab.load_traces(path, format="otel")
        monkeypatch.undo()
        with pytest.raises(agentab.TraceError) as via_columns:
            agentab.load_traces(path, format="otel")
        assert str(via_columns.value) == str(via_dicts.value)


def test_load_traces_reads_otel_files(tmp_path):
    assert "format" in inspect.signature(agentab.load_traces).parameters
    assert agentab.formats.get("otel") is FORMAT
    path, items = _mixed_file(tmp_path)
    for fmt in ("otel", "auto"):
        traces = agentab.load_traces(path, format=fmt, strict=False)
        assert len(traces.runs) + len(traces.rejected) == len(items) == 5
        assert sorted(traces.runs["task_id"].astype(str)) == ["a", "b", "c"]
    with pytest.raises(agentab.TraceError, match="span tree with no run"):
        agentab.load_traces(path, format="otel")


# --------------------------------------------------------------------------- #
# Reading: blocks, times beyond Arrow's range
# --------------------------------------------------------------------------- #
def test_byte_order_mark_crlf_and_blank_lines(tmp_path, monkeypatch):
    # a byte-order mark, CRLF line ends, blank lines and no final newline: read span by span, as the same lines
    # without them are read in columns; line numbers count the blank lines; splits() reads the first line in
    # blocks
    import agentab.formats.otel as otel_module

    sdk = Sdk()
    for i in range(3):
        react_run(sdk, i * 2000, **{"agentab.seed": i})
    spans = sdk.spans()
    lines = [json.dumps(otlp_batch(spans[k:k + 4])) for k in range(0, len(spans), 4)]
    text = "\r\n".join(lines[:2]) + "\r\n\n  \n" + "\n".join(lines[2:])
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    odd = read(path)
    assert len(records(odd)) == 3
    plain = read(write_lines(tmp_path / "plain.jsonl", *(json.loads(line) for line in lines)))
    shift = {line: line + (2 if line > 2 else 0) for line in range(1, len(lines) + 1)}
    assert [(item.line, item.record) for item in odd] == [(shift[item.line], item.record) for item in plain]
    document = tmp_path / "t.json"
    document.write_text(json.dumps(otlp_batch(spans), indent=1))
    for block in (1, 7, 100):
        monkeypatch.setattr(otel_module, "_BLOCK", block)
        assert otel_module.splits(path) and not otel_module.splits(document)
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read(gz) == odd


def test_step_times_beyond_2262_reject_the_run(tmp_path):
    # 2**63 ns is 2262-04-11: no datetime64[ns] holds a later time, and past year 9999 nothing formats it
    def attr(key, value):
        return {"key": key, "value": {"stringValue": value} if isinstance(value, str) else {"boolValue": value}}

    for late in (2**63 + 5, 10**30):
        agent = {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "invoke_agent coder", "startTimeUnixNano": str(T0),
                 "endTimeUnixNano": str(T0 + 10**9), "attributes": [
                     attr("gen_ai.operation.name", "invoke_agent"), attr("agentab.task_id", "t"),
                     attr("agentab.outcome", True), {"key": "agentab.seed", "value": {"intValue": "1"}}]}
        tools = [{"traceId": "ab" * 16, "spanId": f"{k + 2:016x}", "parentSpanId": "01" * 8,
                  "name": f"execute_tool t{k}", "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                  "attributes": [attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", f"t{k}")]}
                 for k, (start, end) in enumerate([(T0 + 5, T0 + 9), (late, late + 10**9)])]
        batch = {"resourceSpans": [{"scopeSpans": [{"spans": [agent, *tools]}]}]}
        (item,) = read(write_lines(tmp_path / "t.jsonl", batch))
        assert item.record is None and item.field == "startTimeUnixNano"
        assert "out of range (after the year 2262)" in item.reason
        # the run span's own time, too
        agent["endTimeUnixNano"] = str(late)
        tools[1]["startTimeUnixNano"], tools[1]["endTimeUnixNano"] = str(T0 + 20), str(T0 + 30)
        (item,) = read(write_lines(tmp_path / "t.jsonl", batch))
        assert item.record is None and item.field == "endTimeUnixNano"


def test_non_finite_doubles_are_never_numbers(tmp_path):
    # OTLP/JSON writes NaN and infinities as text ("NaN", "Infinity"); JSON and our record have no such number
    def agent(outcome: dict, extra: list) -> dict:
        return {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "invoke_agent coder", "startTimeUnixNano": str(T0),
                "endTimeUnixNano": str(T0 + 10**9), "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                    {"key": "agentab.task_id", "value": {"stringValue": "t"}},
                    {"key": "agentab.seed", "value": {"intValue": "1"}},
                    {"key": "agentab.outcome", "value": outcome}, *extra]}

    tool = {"traceId": "ab" * 16, "spanId": "02" * 8, "parentSpanId": "01" * 8, "name": "execute_tool fit",
            "startTimeUnixNano": str(T0 + 5), "endTimeUnixNano": str(T0 + 9), "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.call.arguments", "value": {"kvlistValue": {"values": [
                    {"key": "tolerance", "value": {"doubleValue": "NaN"}},
                    {"key": "scale", "value": {"doubleValue": 0.5}}]}}}]}
    for outcome in ("NaN", "Infinity", "-Infinity"):
        batch = {"resourceSpans": [{"scopeSpans": [{"spans": [agent({"doubleValue": outcome}, []), tool]}]}]}
        (item,) = read(write_lines(tmp_path / "t.jsonl", batch))
        assert item.record is None and item.field == "agentab.outcome"
        assert "expected a bool or a finite number" in item.reason
    cost = {"key": "run.cost", "value": {"doubleValue": "Infinity"}}
    batch = {"resourceSpans": [{"scopeSpans": [{"spans": [agent({"doubleValue": 1.0}, [cost]), tool]}]}]}
    (item,) = read(write_lines(tmp_path / "t.jsonl", batch), {"cost_usd": "run.cost"})
    assert item.record is None and item.field == "run.cost"
    (item,) = read(write_lines(tmp_path / "t.jsonl", batch))
    assert item.record["steps"][0]["args"] == {"tolerance": "NaN", "scale": 0.5}
    traces = agentab.load_traces([batch], format="otel")  # in memory, a float NaN too
    batch["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][3]["value"] = {"doubleValue": float("nan")}
    with pytest.raises(agentab.TraceError, match="expected a bool or a finite number"):
        agentab.load_traces([batch], format="otel")
    assert traces.steps.loc[0, "args"] == '{"scale":0.5,"tolerance":"NaN"}'


# --------------------------------------------------------------------------- #
# A large file read in parts by several processes
# --------------------------------------------------------------------------- #
@pytest.fixture
def split_small_files(monkeypatch):
    """Make every file 'large' and split it evenly (the column reader declining the whole file, as it does a
    file with a record to reject), and record what each parallel read did."""
    import agentab.traces._parallel
    import agentab.formats.otel as otel_module
    import agentab.traces._reader

    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)  # the workers read every part but the first
    monkeypatch.setattr(otel_module, "FORMAT", dataclasses.replace(FORMAT, read_whole=lambda path, fields: None))
    calls = []
    read_parallel = agentab.traces._reader.read_parallel
    monkeypatch.setattr(agentab.traces._reader, "read_parallel",
                        lambda *a, **k: calls.append(read_parallel(*a, **k)) or calls[-1])
    return calls


def _assert_same(a, b):
    import pandas as pd

    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.rejected, b.rejected)
    assert a.n_read == b.n_read


def _runs_by_trace(n: int, **extra) -> list[list]:
    """``n`` SDK runs, each run's spans as one batch (in export order)."""
    sdk = Sdk()
    for i in range(n):
        react_run(sdk, i * 2000, **{"agentab.seed": i, **extra})
    by_trace: dict[int, list] = {}
    for span in sdk.spans():
        by_trace.setdefault(span.context.trace_id, []).append(span)
    return list(by_trace.values())


def test_parts_read_in_several_processes_equal_one_read(tmp_path, split_small_files):
    runs = _runs_by_trace(12)
    orphan = Sdk()
    remote = SpanContext(trace_id=7, span_id=9, is_remote=True, trace_flags=TraceFlags(1))
    orphan.span("execute_tool ls", 0, 5, remote, tool_attrs("ls", {}))
    path = write_lines(tmp_path / "t.jsonl", *runs[:5], "{not json", *runs[5:9], orphan.spans(), *runs[9:])
    serial = agentab.load_traces(path, format="otel", workers=1, strict=False)
    for workers in (2, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a worker that failed would warn
            _assert_same(agentab.load_traces(path, format="otel", workers=workers, strict=False), serial)
    assert split_small_files == [True, True]  # both read in parts, by worker processes
    assert len(serial.runs) == 12 and serial.n_read == 14
    assert list(serial.rejected["line"]) == [6, 11]
    with pytest.raises(agentab.TraceError, match=r"line 6: malformed JSON"):
        agentab.load_traces(path, format="otel", workers=2)


@pytest.mark.parametrize("shared", ["trace", "conversation"])
def test_parts_sharing_a_trace_or_run_id_are_read_in_one_piece(tmp_path, split_small_files, shared):
    # a run whose spans are at both ends of the file, or two runs with one conversation id at both ends: the
    # parts would convert differently from the whole file, so the file is read in one piece
    if shared == "trace":
        runs = _runs_by_trace(8)
        lines = [runs[0][:3], *runs[1:], runs[0][3:]]
    else:
        runs = _runs_by_trace(8, **{"gen_ai.conversation.id": "conv"})
        lines = [runs[0], *(_runs_by_trace(6)), runs[1]]
    path = write_lines(tmp_path / "t.jsonl", *lines)
    serial = agentab.load_traces(path, format="otel", workers=1)
    _assert_same(agentab.load_traces(path, format="otel", workers=2), serial)
    assert split_small_files == [False]
    assert len(serial.runs) == 8
    if shared == "conversation":
        assert serial.runs["run_id"].str.startswith("conv:").sum() == 2


def test_a_failed_otel_worker_costs_only_time(tmp_path, split_small_files, monkeypatch):
    import agentab.traces._parallel

    def cannot_start(*args, **kwargs):
        raise OSError("no processes here")

    monkeypatch.setattr(agentab.traces._parallel, "_launch", cannot_start)
    path = write_lines(tmp_path / "t.jsonl", *_runs_by_trace(6), "{oops")
    with pytest.warns(RuntimeWarning, match=r"worker process failed \(could not start: no processes here\)"):
        parallel = agentab.load_traces(path, format="otel", workers=2, strict=False)
    _assert_same(parallel, agentab.load_traces(path, format="otel", workers=1, strict=False))
    assert split_small_files == [True]


def test_a_large_file_the_column_reader_reads_is_read_whole(tmp_path, monkeypatch):
    import agentab.traces._parallel
    import agentab.traces._reader

    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_MIN_BYTES", 0)
    # each trace's spans over two lines, as a collector exporting by time writes them: its parts would share traces
    halves = [half for spans in _runs_by_trace(6) for half in (spans[:len(spans) // 2], spans[len(spans) // 2:])]
    path = write_lines(tmp_path / "t.jsonl", *halves)
    monkeypatch.setattr(agentab.traces._parallel, "_launch", lambda *a, **k: pytest.fail("no worker for this file"))
    whole = agentab.load_traces(path, format="otel", workers=2)
    _assert_same(whole, agentab.load_traces(path, format="otel", workers=1))
    assert len(whole.runs) == 6


def test_a_document_is_not_split(tmp_path, split_small_files):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([otlp_batch(spans) for spans in _runs_by_trace(4)], indent=1))
    assert len(agentab.load_traces(path, format="otel", workers=2).runs) == 4
    assert split_small_files == []  # one document: read whole, never in parts


# --------------------------------------------------------------------------- #
# The column reader (agentab.formats.otel._columns) against the span-by-span one
# --------------------------------------------------------------------------- #
def _any(value) -> dict:
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def _random_otlp(rng) -> bytes:
    """A random OTLP/JSON file: traces of random span trees (agents, sub-agents, tools, model calls, other
    spans; every way of naming kinds, tools, tokens, models; times missing or in any order; ids on spans,
    ancestors or resources; shared conversation ids; several runs per trace), spans scattered over lines."""
    def hex_id(digits: int) -> str:
        return "".join(rng.choice(list("0123456789abcdef"), digits))

    spans_by_resource: dict[int, list] = {0: [], 1: []}
    t0 = 1_767_225_600 * 10**9
    for _ in range(int(rng.integers(1, 6))):
        trace = hex_id(32) if rng.random() < 0.9 else hex_id(32).upper()
        resource = int(rng.integers(0, 2))
        spans: list[dict] = []
        for k in range(int(rng.integers(1, 14))):
            parent = spans[int(rng.integers(0, len(spans)))] if spans and rng.random() < 0.97 else None
            what = rng.choice(["agent", "agent", "tool", "tool", "tool", "chat", "chat", "http", "oi", "named", "tl"])
            if not spans:  # the trace's root: a run, or an evaluation around runs (ids found on ancestors)
                what = rng.choice(["agent"] * 6 + ["evaluation"] * 3 + ["tool-run"])  # a tool span as a run, too
            attrs: dict = {}
            name = {"agent": "invoke_agent coder", "tool": "execute_tool t", "chat": "chat m", "http": "GET /",
                    "oi": "step", "named": rng.choice(["execute_tool ls", "invoke_agent sub", "chat x"]),
                    "evaluation": "evaluation", "tool-run": "execute_tool solo", "tl": "ls.tool"}[what]
            if what in ("agent", "tool", "chat"):
                attrs["gen_ai.operation.name"] = {"agent": "invoke_agent", "tool": "execute_tool",
                                                  "chat": rng.choice(["chat", "text_completion"])}[what]
            if what == "oi":
                attrs["openinference.span.kind"] = str(rng.choice(["AGENT", "TOOL", "LLM", "CHAIN"]))
                if rng.random() < 0.5:  # OpenInference: input.value with or without its mime type
                    attrs["input.value"] = str(rng.choice(['{"q": 1}', "plain words", "[1]", ""]))
                    if rng.random() < 0.7:
                        attrs["input.mime_type"] = str(rng.choice(["application/json", "text/plain"]))
            if what == "tl":  # OpenLLMetry / Traceloop
                attrs["traceloop.span.kind"] = str(rng.choice(["tool", "tool", "task", "workflow", "agent"]))
                attrs["traceloop.entity.name"] = str(rng.choice(["ls", "plan"]))
                if rng.random() < 0.7:
                    attrs["traceloop.entity.input"] = json.dumps(
                        {"args": [] if rng.random() < 0.8 else [1], "kwargs": {"p": int(rng.integers(0, 9))}})
                if rng.random() < 0.5:
                    attrs["traceloop.entity.output"] = str(rng.choice(['{"ok": 1}', '"done"']))
            if what in ("agent", "evaluation", "tool-run") or (what == "oi" and rng.random() < 0.5):
                if rng.random() < 0.97:
                    attrs["agentab.task_id"] = str(rng.choice(["a", "b", "c"])) if rng.random() < 0.8 else 7
                if rng.random() < 0.97:
                    attrs["agentab.seed"] = int(rng.integers(0, 4))
                attrs["agentab.outcome"] = bool(rng.random() < 0.5) if rng.random() < 0.7 else float(rng.random())
                if what == "evaluation":
                    attrs["agentab.arm"] = str(rng.choice(["baseline", "candidate"]))
                if rng.random() < 0.3:
                    attrs["gen_ai.conversation.id"] = str(rng.choice(["c1", "c2"]))
                if rng.random() < 0.4:
                    attrs["gen_ai.request.model"] = "m-agent"
                if rng.random() < 0.3:
                    attrs["gen_ai.agent.name"] = "named-agent"
            if what in ("tool", "named", "oi", "tool-run") or rng.random() < 0.1:
                choice = rng.random()
                if choice < 0.6:
                    attrs["gen_ai.tool.name"] = str(rng.choice(["ls", "cat", "grep"]))
                elif choice < 0.8:
                    attrs["tool.name"] = str(rng.choice(["ls", "cat"]))
                if rng.random() < 0.7:
                    attrs["gen_ai.tool.call.arguments"] = json.dumps({"p": int(rng.integers(0, 9)), "a": "x"})
                if rng.random() < 0.6:
                    attrs[str(rng.choice(["gen_ai.tool.call.result", "output.value"]))] = str(rng.choice(
                        ['{"ok": true, "n": 3}', "plain text", "[1, 2]", ""]))
                if rng.random() < 0.5:
                    attrs["gen_ai.tool.call.id"] = str(hex_id(4)) if rng.random() < 0.8 else int(rng.integers(9))
                if rng.random() < 0.2:
                    attrs["error.type"] = "Boom"
            if what in ("chat", "agent", "oi") and rng.random() < 0.7:
                names = rng.choice([("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
                                    ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens"),
                                    ("llm.token_count.prompt", "llm.token_count.completion")])
                if rng.random() < 0.9:
                    attrs[str(names[0])] = int(rng.integers(0, 500))
                if rng.random() < 0.8:
                    attrs[str(names[1])] = int(rng.integers(0, 50))
                if rng.random() < 0.3:
                    attrs["gen_ai.response.model"] = str(rng.choice(["m1", "m2"]))
                if rng.random() < 0.3:
                    attrs[str(rng.choice(["gen_ai.provider.name", "gen_ai.system"]))] = "p"
                if rng.random() < 0.3:  # cached and reasoning tokens, by any family's name
                    attrs[str(rng.choice(["gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details"
                                          ".cache_read", "gen_ai.usage.cache_read_input_tokens"]))] = int(
                        rng.integers(0, 100))
                if rng.random() < 0.3:
                    attrs[str(rng.choice(["gen_ai.usage.reasoning_tokens", "gen_ai.usage.reasoning.output_tokens",
                                          "llm.token_count.completion_details.reasoning"]))] = int(rng.integers(0, 9))
                if rng.random() < 0.2:  # an array value of an attribute no field reads
                    attrs["gen_ai.response.finish_reasons"] = ["stop"]
                if rng.random() < 0.04:  # tool calls in the model's output messages (steps when a run has no tool span)
                    attrs["gen_ai.completion.0.tool_calls.0.name"] = "ls"
                    attrs["gen_ai.completion.0.tool_calls.0.arguments"] = '{"path": "."}'
                    attrs["gen_ai.completion.0.tool_calls.0.id"] = str(rng.choice(["c1", "c2"]))
            if what == "http" and rng.random() < 0.3:
                attrs["agentab.arm"] = str(rng.choice(["baseline", "candidate"]))
            start = t0 + int(rng.integers(0, 50)) * 1000
            span_id = hex_id(16) if rng.random() < 0.97 else "00000000000000aa"  # reused: in another trace, too
            span = {"traceId": trace, "spanId": span_id, "name": name, "kind": 1,
                    "attributes": [{"key": key, "value": _any(value)} for key, value in attrs.items()]}
            if parent is not None:
                span["parentSpanId"] = parent["spanId"]
            elif rng.random() < 0.1:  # its parent is in another file: an orphan
                span["parentSpanId"] = hex_id(16)
            if rng.random() < 0.9:
                span["startTimeUnixNano"] = str(start)
            if rng.random() < 0.85:
                span["endTimeUnixNano"] = str(start + int(rng.integers(-100, 5000)) * 1000)
            if rng.random() < 0.15:
                span["status"] = {"code": 2, "message": str(rng.choice(["", "failed"]))}
            spans.append(span)
        spans_by_resource[resource].extend(spans)
    resources = [
        {"attributes": [{"key": "agentab.task_id", "value": {"stringValue": "r"}},
                        {"key": "agentab.seed", "value": {"intValue": "9"}}]},
        {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
    ]
    lines = []
    for resource, spans in spans_by_resource.items():
        order = rng.permutation(len(spans))
        cuts = sorted(set(rng.integers(0, len(spans) + 1, 2).tolist()) | {0, len(spans)})
        for a, b in itertools.pairwise(cuts):
            chunk = [spans[i] for i in order[a:b]]
            lines.append(json.dumps({"resourceSpans": [{"resource": resources[resource],
                                                        "scopeSpans": [{"scope": {"name": "x"}, "spans": chunk}]}]}))
    if rng.random() < 0.05:  # an exporter's retry: a batch written twice
        lines.append(lines[0])
    rng.shuffle(lines)
    return ("\n".join(lines) + "\n").encode()


def _items_compared(items) -> list:
    return [(item.line, item.field, item.reason, item.record.to_record() if isinstance(item.record, Prepared)
             else item.record, item.missing) for item in items]


@pytest.mark.slow
def test_column_reader_gives_the_span_reader_s_items():
    # random files: wherever the column reader reads a file, its items and keys are the span reader's
    import numpy as np

    from agentab.formats.otel import _columns as _otel_columns
    from agentab.formats.otel import _span_runs, _spans

    rng = np.random.default_rng(20261130)
    read_here = 0
    for trial in range(400):
        data = _random_otlp(rng)
        fast = _otel_columns.read(data, 1, FIELDS)
        slow = _span_runs.read(_spans.batches_of_bytes(data), FIELDS)
        if fast is None:
            continue
        read_here += 1
        assert _items_compared(fast.items) == _items_compared(slow.items), trial
        assert fast.keys == slow.keys, trial
    assert read_here >= 200  # most files have no rejection: the column reader reads them


def test_column_reader_reads_the_fixtures(tmp_path):
    # the SDK-made files of these tests: read by the column reader, as the span reader reads them
    from agentab.formats.otel import _columns as _otel_columns
    from agentab.formats.otel import _span_runs, _spans

    sdk = Sdk()
    evaluation = sdk.begin("evaluation", 0, attributes={"agentab.arm": "baseline"})
    for i in range(3):
        react_run(sdk, i * 2500, outcome=i != 1, parent=evaluation, **{"agentab.task_id": f"t{i}"})
    end(evaluation, 9000)
    data = write_lines(tmp_path / "t.jsonl", sdk.spans()[:5], sdk.spans()[5:]).read_bytes()
    fast = _otel_columns.read(data, 1, FIELDS)
    assert fast is not None and len(fast.items) == 3
    slow = _span_runs.read(_spans.batches_of_bytes(data), FIELDS)
    assert _items_compared(fast.items) == _items_compared(slow.items) and fast.keys == slow.keys
    # what it leaves to the span reader, which reads (or rejects) each of these
    line = FORMAT.example.encode()
    assert _otel_columns.read(line + b"\n", 1, FIELDS) is not None
    for other in (b"\xef\xbb\xbf" + line, line + b"\n\n" + line, line + b"\n{oops}",
                  line.replace(b'"intValue":"0"', b'"intValue":0'),
                  line.replace(b'"5b8efff798038103d269b633813fc60c"', b'"W47/95gDgQPSabYzgT/GDA=="'),
                  line.replace(b'{"stringValue":"fix-test"}', b'{"arrayValue":{"values":[]}}'),
                  line.replace(b'"scopeSpans"', b'"instrumentationLibrarySpans"'), line + b"\n" + line):
        assert _otel_columns.read(other, 1, FIELDS) is None, other[:80]


@pytest.mark.parametrize("path, value", [
    (("span", 1, "status"), {"code": 2.0}), (("span", 1, "status"), {"code": "2"}),
    (("span", 1, "startTimeUnixNano"), 1767225601000000000), (("span", 1, "startTimeUnixNano"), " 1767225601000000000"),
    (("span", 1, "startTimeUnixNano"), "-5"), (("span", 1, "endTimeUnixNano"), "0"),
    (("span", 1, "attributes", 1, "value"), {"stringValue": 5}), (("span", 1, "attributes", 1, "value"), {}),
    (("span", 0, "attributes", 1, "value"), {"boolValue": "true"}),
    (("span", 0, "attributes", 1, "value"), {"doubleValue": 1}),
    (("span", 0, "attributes", 1, "value"), {"intValue": "1", "stringValue": "yes"}),
    (("resource", 1, "value"), {"intValue": 0}), (("resource", 1, "value"), {"intValue": " 7"}),
    (("resource", 1, "value"), {"intValue": "seven"}), (("resource", 1, "value"), {"doubleValue": 7}),
    (("resource", 1, "value"), {"doubleValue": "7"}), (("span", 1, "name"), 5), (("span", 1, "traceId"), 5),
    (("span", 1, "attributes"), None), (("span", 1, "status"), None), (("span", 1, "status"), {"message": 5}),
    (("span", 1, "parentSpanId"), None), (("span", 1, "parentSpanId"), "EEE19B7EC3C1B174"),
    (("span", 1, "spanId"), "EEE19B7EC3C1B174"),
])
def test_column_reader_on_odd_values(path, value):
    # each value of another JSON type or shape than the specification's: the column reader leaves the file to
    # the span reader, or reads it as the span reader does
    from agentab.formats.otel import _columns as _otel_columns
    from agentab.formats.otel import _span_runs, _spans

    batch = json.loads(FORMAT.example)
    node = batch["resourceSpans"][0]
    node = node["scopeSpans"][0]["spans"][path[1]] if path[0] == "span" else node["resource"]["attributes"][path[1]]
    for key in path[2:-1]:
        node = node[key]
    node[path[-1]] = value
    data = json.dumps(batch).encode() + b"\n"
    fast = _otel_columns.read(data, 1, FIELDS)
    slow = _span_runs.read(_spans.batches_of_bytes(data), FIELDS)
    if fast is not None:
        assert _items_compared(fast.items) == _items_compared(slow.items) and fast.keys == slow.keys
