"""The "otel" format on the attribute families real frameworks export: OpenInference, OpenLLMetry, pydantic-ai.

The fixtures in ``tests/data/otel_families/`` were produced by running the real instrumentation
libraries with a scripted model (``make_family_fixtures.py``; versions and licences in its README). Expected
values are counted here from the raw JSON with plain :mod:`json`, never with the reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentab
from agentab.errors import TraceError
from agentab.formats.decode import Prepared
from agentab.formats.otel import FIELDS, FORMAT, _columns, _span_runs, _spans

DATA = Path(__file__).parent / "data" / "otel_families"
#: Run identity as these files carry it: the task in the run span's name, the seed (text) on the resource.
IDENTITY = {"task_id": r"span.name:^solve (?P<task_id>[\w-]+)", "seed": "resource:eval.seed"}
#: Per family: the span-kind attribute and its tool value, input / output / cached / reasoning token names.
FAMILIES = {
    "openinference": ("openinference.span.kind", "TOOL", "llm.token_count.prompt", "llm.token_count.completion",
                      "llm.token_count.prompt_details.cache_read", "llm.token_count.completion_details.reasoning"),
    "openllmetry": ("traceloop.span.kind", "tool", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                    "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.reasoning_tokens"),
}


# --------------------------------------------------------------------------- #
# The raw files, read with plain json
# --------------------------------------------------------------------------- #
def _value(value: dict):
    (kind, raw), = value.items()
    return int(raw) if kind == "intValue" else raw


def raw_spans(path: Path) -> list[dict]:
    """Every span of an OTLP/JSON Lines file, attributes as a plain dict, resource attributes under "res"."""
    out = []
    for line in path.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            res = {kv["key"]: _value(kv["value"]) for kv in rs["resource"]["attributes"]}
            for scope in rs["scopeSpans"]:
                for span in scope["spans"]:
                    out.append({**span, "attrs": {kv["key"]: _value(kv["value"]) for kv in span["attributes"]},
                                "res": res})
    return out


def hand_counts(family: str) -> dict[str, dict]:
    """Per run (by the task in its root span's name): tool calls, failed tool calls, and token sums."""
    kind_key, tool_kind, tokens_in, tokens_out, cached, reasoning = FAMILIES[family]
    spans = raw_spans(DATA / f"{family}.jsonl")
    roots = {s["traceId"]: s["name"].split()[1].removesuffix(".workflow") for s in spans if not s.get("parentSpanId")}
    out: dict[str, dict] = {task: {"tools": 0, "errors": 0, "in": 0, "out": 0, "cached": 0, "reasoning": 0,
                                   "seed": None} for task in roots.values()}
    for s in spans:
        counts = out[roots[s["traceId"]]]
        counts["seed"] = s["res"]["eval.seed"]
        if s["attrs"].get(kind_key) == tool_kind:
            counts["tools"] += 1
            counts["errors"] += s.get("status", {}).get("code") == 2
        for key, name in (("in", tokens_in), ("out", tokens_out), ("cached", cached), ("reasoning", reasoning)):
            counts[key] += s["attrs"].get(name, 0)
    return out


def read_items(data: bytes, fields: dict | None = None) -> list:
    """The span-by-span reader's items, runs as trace-record dicts."""
    part = _span_runs.read(_spans.batches_of_bytes(data), {**FIELDS, **(fields or {})})
    return [(item.line, item.field, item.reason, item.record.to_record() if isinstance(item.record, Prepared)
             else item.record, item.missing) for item in part.items]


def column_items(data: bytes, fields: dict | None = None) -> list | None:
    part = _columns.read(data, 1, fields or {})
    return None if part is None else [
        (item.line, item.field, item.reason, item.record.to_record(), item.missing) for item in part.items]


def runs(family: str, fields: dict | None = None) -> dict[str, tuple[dict, dict]]:
    items = list(FORMAT.read_file(DATA / f"{family}.jsonl", {**FIELDS, **IDENTITY, **(fields or {})}))
    assert all(item.reason is None for item in items)
    return {item.record.task_id: (item.record.to_record(), item.missing) for item in items}


# --------------------------------------------------------------------------- #
# The real fixtures against their hand counts
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("family", list(FAMILIES))
def test_fixture_matches_its_hand_counts(family):
    expected = hand_counts(family)
    found = runs(family)
    assert sorted(found) == sorted(expected) == ["weather-oslo", "weather-paris"]
    for task, counts in expected.items():
        record, missing = found[task]
        steps = record["steps"]
        assert len(steps) == counts["tools"]
        assert sum(s["observation"]["status"] == "error" for s in steps) == counts["errors"]
        assert record["seed"] == int(counts["seed"])
        assert (record["tokens_in"], record["tokens_out"]) == (counts["in"], counts["out"])  # the run's totals
        assert sum(s.get("tokens_in") or 0 for s in steps) == counts["in"]  # every model call counted once
        for key, name in (("cached", "tokens_cached"), ("reasoning", "tokens_reasoning")):
            assert record.get(name, 0) == counts[key]
            assert sum(s.get(name, 0) for s in steps) == counts[key]
        # the file records no outcome: left to the loader (outcomes=), named, not a rejection
        assert record["outcome"] is None and list(missing) == ["outcome"]
        assert missing["outcome"][0] == "agentab.outcome" and "no attribute agentab.outcome" in missing["outcome"][1]
    paris = found["weather-paris"][0]
    assert paris["steps"][1]["args"] == {"city": "Atlantis"} and paris["steps"][1]["observation"]["status"] == "error"
    assert "unknown city: Atlantis" in paris["steps"][1]["observation"]["error"]
    assert paris["steps"][0]["observation"]["result"] == {"city": "Paris", "temperature_c": 18, "sky": "sunny"}
    assert paris["metadata"]["model"] == "gpt-4o-mini-2024-07-18"
    assert paris["metadata"]["harness"] == "solve weather-paris"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_parallel_tool_calls_of_one_response_count_its_tokens_once(family):
    # the first model response asked for two calls: its tokens are at the first, the second's are unknown
    # (not 0) and name the step they are counted at
    steps = runs(family)["weather-paris"][0]["steps"]
    assert [s["args"].get("city") for s in steps[:2]] == ["Paris", "Atlantis"]
    assert (steps[0]["tokens_in"], steps[0]["tokens_out"], steps[0]["tokens_cached"]) == (120, 30, 64)
    assert "tokens_in" not in steps[1] and "tokens_out" not in steps[1] and "tokens_cached" not in steps[1]
    assert steps[1]["metadata"]["tokens_with_step"] == 0
    oslo = runs(family)["weather-oslo"][0]  # no cached or reasoning tokens reported: unknown, never 0
    assert "tokens_cached" not in oslo and "tokens_reasoning" not in oslo


def test_openinference_plain_text_input_is_kept_as_text():
    # a TOOL span whose input.value is text/plain (a handoff) is a step with its text, never a rejection
    spans = raw_spans(DATA / "openinference.jsonl")
    (handoff,) = [s for s in spans if s["attrs"].get("input.mime_type") == "text/plain"
                  and s["attrs"].get("openinference.span.kind") == "TOOL"]
    step = runs("openinference")["weather-paris"][0]["steps"][-1]
    assert step["tool"] == handoff["attrs"]["tool.name"] == "transfer_to_travel_agent"
    assert step["args"] == {"input": handoff["attrs"]["input.value"]}
    assert step["observation"] == {"status": "ok", "result": handoff["attrs"]["output.value"]}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_column_reader_reads_the_family_files_as_the_span_reader_does(family):
    data = (DATA / f"{family}.jsonl").read_bytes()
    fast = column_items(data, IDENTITY)
    assert fast is not None and fast == read_items(data, IDENTITY)
    assert column_items(data) == read_items(data)  # the task id not found: missing alike


@pytest.mark.parametrize("family", list(FAMILIES))
def test_enum_names_read_as_numbers_are(family):
    # protobuf's JSON printer without use_integers_for_enums: "SPAN_KIND_CLIENT", "STATUS_CODE_ERROR"
    lines = (DATA / f"{family}.jsonl").read_text().splitlines()
    named = []
    for line in lines:
        batch = json.loads(line)
        for rs in batch["resourceSpans"]:
            for scope in rs["scopeSpans"]:
                for span in scope["spans"]:
                    span["kind"] = ["SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
                                    "SPAN_KIND_CLIENT"][span.get("kind", 0)]
                    if "status" in span and "code" in span["status"]:
                        span["status"]["code"] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK",
                                                  "STATUS_CODE_ERROR"][span["status"]["code"]]
        named.append(json.dumps(batch))
    assert '"STATUS_CODE_ERROR"' in named[-1] or any('"STATUS_CODE_ERROR"' in line for line in named)
    data = ("\n".join(lines) + "\n").encode()
    assert read_items(("\n".join(named) + "\n").encode(), IDENTITY) == read_items(data, IDENTITY)


# --------------------------------------------------------------------------- #
# Runs recorded by the model client's instrumentation alone: steps from the messages
# --------------------------------------------------------------------------- #
def _without_tool_spans(family: str) -> bytes:
    kind_key, tool_kind = FAMILIES[family][:2]
    lines = []
    for line in (DATA / f"{family}.jsonl").read_text().splitlines():
        batch = json.loads(line)
        for rs in batch["resourceSpans"]:
            for scope in rs["scopeSpans"]:
                scope["spans"] = [s for s in scope["spans"] if not any(
                    kv["key"] == kind_key and kv["value"].get("stringValue") == tool_kind for kv in s["attributes"])]
        lines.append(json.dumps(batch))
    return ("\n".join(lines) + "\n").encode()


def _tool_calls_in_outputs(family: str) -> dict[str, list[str]]:
    """Per task: the tool names the model's outputs ask for, in order, read from the raw attributes."""
    spans = raw_spans(DATA / f"{family}.jsonl")
    roots = {s["traceId"]: s["name"].split()[1].removesuffix(".workflow") for s in spans if not s.get("parentSpanId")}
    out: dict[str, list[str]] = {task: [] for task in roots.values()}
    for s in sorted(spans, key=lambda s: int(s["startTimeUnixNano"])):
        attrs = s["attrs"]
        if "gen_ai.output.messages" in attrs:
            out[roots[s["traceId"]]] += [part["name"] for message in json.loads(attrs["gen_ai.output.messages"])
                                         for part in message["parts"] if part["type"] == "tool_call"]
        names = sorted((key, value) for key, value in attrs.items()
                       if key.startswith("llm.output_messages.") and key.endswith(".tool_call.function.name"))
        out[roots[s["traceId"]]] += [value for _, value in names]
    return out


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_run_without_tool_spans_takes_its_steps_from_the_model_messages(family):
    data = _without_tool_spans(family)
    items = read_items(data, IDENTITY)
    expected = _tool_calls_in_outputs(family)
    assert sum(map(len, expected.values())) == 4  # Paris, Atlantis, forecast; Oslo
    by_task = {record["task_id"]: record for _, _, _, record, _ in items}
    for task, tools in expected.items():
        steps = by_task[task]["steps"]
        assert [s["tool"] for s in steps] == tools
        assert sum(s.get("tokens_in") or 0 for s in steps) == hand_counts(family)[task]["in"]
        assert all(s["metadata"]["tool_call_id"].startswith("call_") for s in steps)
    paris = by_task["weather-paris"]["steps"]
    assert paris[0]["args"] == {"city": "Paris"} and paris[0]["observation"]["result"]["city"] == "Paris"
    assert paris[1]["observation"] == {"status": "ok", "result": "error: unknown city: Atlantis"}  # messages: no flag
    assert paris[1]["metadata"]["tokens_with_step"] == 0
    assert column_items(data, IDENTITY) is None  # left to the span-by-span reader


def test_older_openllmetry_indexed_messages_and_llm_usage():
    # OpenLLMetry before the GenAI message lists: gen_ai.prompt.N.* / gen_ai.completion.N.*, llm.usage.*,
    # llm.request.type; a workflow span as the run
    def attrs(**values):
        return [{"key": k.replace("__", "."), "value": {"intValue": str(v)} if isinstance(v, int) else
                 {"stringValue": v}} for k, v in values.items()]

    trace, t0 = "0af7651916cd43dd8448eb211c80319c", 1767225600 * 10**9
    spans = [
        {"spanId": "00000000000000a1", "name": "solve t1.workflow", "startTimeUnixNano": str(t0),
         "endTimeUnixNano": str(t0 + 90), "attributes": attrs(traceloop__span__kind="workflow")},
        {"spanId": "00000000000000a2", "parentSpanId": "00000000000000a1", "name": "openai.chat",
         "startTimeUnixNano": str(t0 + 10), "endTimeUnixNano": str(t0 + 20), "attributes": attrs(
             llm__request__type="chat", **{"gen_ai.completion.0.tool_calls.0.name": "ls",
                                           "gen_ai.completion.0.tool_calls.0.arguments": '{"path": "."}',
                                           "gen_ai.completion.0.tool_calls.0.id": "c1"},
             llm__usage__prompt_tokens=50, llm__usage__completion_tokens=5,
             gen_ai__usage__cache_read_input_tokens=32)},
        {"spanId": "00000000000000a3", "parentSpanId": "00000000000000a1", "name": "openai.chat",
         "startTimeUnixNano": str(t0 + 30), "endTimeUnixNano": str(t0 + 40), "attributes": attrs(
             llm__request__type="chat", **{"gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.tool_call_id": "c1",
                                           "gen_ai.prompt.2.content": "a.txt"},
             llm__usage__prompt_tokens=70, llm__usage__completion_tokens=7, llm__usage__reasoning_tokens=3)},
    ]
    batch = {"resourceSpans": [{"resource": {"attributes": attrs(eval__seed="4")},
                                "scopeSpans": [{"spans": [{"traceId": trace, **s} for s in spans]}]}]}
    ((_, _, reason, record, missing),) = read_items((json.dumps(batch) + "\n").encode(), IDENTITY)
    assert reason is None and (record["task_id"], record["seed"]) == ("t1", 4) and list(missing) == ["outcome"]
    (step,) = record["steps"]
    assert (step["tool"], step["args"], step["observation"]) == ("ls", {"path": "."}, {"status": "ok",
                                                                                     "result": "a.txt"})
    assert (step["tokens_in"], step["tokens_out"]) == (120, 12)  # both model calls: the last goes to the last step
    assert (step["tokens_cached"], step["tokens_reasoning"]) == (32, 3)


# --------------------------------------------------------------------------- #
# pydantic-ai's older instrumentation layouts
# --------------------------------------------------------------------------- #
def _pydantic_run(version: int) -> bytes:
    def attr(key, value):
        return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}

    trace, t0 = "4bf92f3577b34da6a3ce929d0e0e4736", 1767225600 * 10**9
    chat = [attr("gen_ai.operation.name", "chat"), attr("gen_ai.usage.input_tokens", 40),
            attr("gen_ai.usage.output_tokens", 4)]
    if version == 1:  # messages as events (event_mode="attributes"), no tool span
        chat.append(attr("events", json.dumps([{"event.name": "gen_ai.choice", "message": {
            "role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "roll", "arguments": "{}"}}]}}])))
    spans = [{"spanId": "00000000000000b1", "name": "agent run", "startTimeUnixNano": str(t0),
              "endTimeUnixNano": str(t0 + 90), "attributes": [attr("agent_name", "dice"), attr("agentab.task_id", "d"),
                                                              attr("agentab.seed", 0), attr("agentab.outcome", 1)]},
             {"spanId": "00000000000000b2", "parentSpanId": "00000000000000b1", "name": "chat gpt-4o",
              "startTimeUnixNano": str(t0 + 10), "endTimeUnixNano": str(t0 + 20), "attributes": chat}]
    if version == 2:
        spans.append({"spanId": "00000000000000b3", "parentSpanId": "00000000000000b1", "name": "running tool",
                      "startTimeUnixNano": str(t0 + 30), "endTimeUnixNano": str(t0 + 40), "attributes": [
                          attr("gen_ai.tool.name", "roll"), attr("gen_ai.tool.call.id", "x"),
                          attr("tool_arguments", '{"sides": 6}'), attr("tool_response", "4"),
                          attr("logfire.msg", "running tool: roll")]})
    batch = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": trace, **s} for s in spans]}]}]}
    return (json.dumps(batch) + "\n").encode()


def test_pydantic_ai_instrumentation_version_2_is_read():
    # "agent run" / "running tool" spans, arguments in tool_arguments, the result in tool_response
    ((_, _, reason, record, missing),) = read_items(_pydantic_run(2))
    assert reason is None and missing is None and record["metadata"]["harness"] == "dice"
    (step,) = record["steps"]
    assert (step["tool"], step["args"], step["observation"]) == ("roll", {"sides": 6}, {"status": "ok", "result": 4})
    assert step["metadata"]["tool_call_id"] == "x" and step["tokens_in"] == 40
    assert column_items(_pydantic_run(2)) == read_items(_pydantic_run(2))
    traces = agentab.load_traces([json.loads(_pydantic_run(2))], format="otel")  # it carries every field
    assert traces.runs["n_steps"].tolist() == [1] and traces.steps["tool"].tolist() == ["roll"]


def test_pydantic_ai_instrumentation_version_1_events_are_a_rejection_by_name():
    ((_, field, reason, record, _),) = read_items(_pydantic_run(1))
    assert record is None and field == "events"
    assert reason.startswith("pydantic-ai instrumentation version 1 layout") and "version=3" in reason


# --------------------------------------------------------------------------- #
# fields=: run identity from span names and resources
# --------------------------------------------------------------------------- #
def test_fields_read_span_names_and_resources():
    data = (DATA / "openinference.jsonl").read_bytes()
    tasks = lambda items: sorted(str(record["task_id"]) for _, _, _, record, _ in items)  # noqa: E731
    assert tasks(read_items(data, {"task_id": "span.name", "seed": "resource:eval.seed"})) == [
        "solve weather-oslo", "solve weather-paris"]
    assert tasks(read_items(data, {"task_id": r"span.name:solve ([\w-]+)", "seed": "resource:eval.seed"})) == [
        "weather-oslo", "weather-paris"]
    items = read_items(data, {"task_id": "resource:service.name", "seed": "resource:eval.seed",
                              "arm": r"span.name:weather-(\w+)"})
    assert tasks(items) == ["weather-agent", "weather-agent"]
    assert sorted(record["arm"] for _, _, _, record, _ in items) == ["oslo", "paris"]
    # a name that does not match, an absent resource attribute: missing, with the reason
    items = read_items(data, {"task_id": r"span.name:^task-(\d+)", "seed": "resource:eval.epoch"})
    for _, _, reason, record, missing in items:
        assert reason is None and record["task_id"] is None and record["seed"] is None
        assert missing["task_id"][0] == r"span.name:^task-(\d+)" and "does not match" in missing["task_id"][1]
        assert missing["seed"][0] == "resource:eval.epoch" and "has no attribute eval.epoch" in missing["seed"][1]
    assert column_items(data, {"task_id": r"span.name:^task-(\d+)", "seed": "resource:eval.epoch"}) == items


def test_a_seed_from_text_must_be_a_whole_number():
    line = FORMAT.example.replace('{"key":"agentab.seed","value":{"intValue":"0"}}',
                                  '{"key":"agentab.seed","value":{"stringValue":"2.5"}}')
    ((_, field, reason, record, _),) = read_items(line.encode() + b"\n")
    assert record is None and field == "agentab.seed" and "expected an integer" in reason
    line = line.replace('"2.5"', '" 7"')
    ((_, _, _, record, _),) = read_items(line.encode() + b"\n")
    assert record["seed"] == 7


@pytest.mark.parametrize("spec, words", [(r"span.name:(a)(b)", "one capture group"),
                                         (r"span.name:solve (", "not a regular expression")])
def test_a_bad_name_pattern_is_an_error(spec, words):
    with pytest.raises(TraceError, match=words):
        list(FORMAT.read_file(DATA / "openinference.jsonl", {**FIELDS, "task_id": spec}))


def test_load_traces_with_fields_on_a_file_that_carries_everything(tmp_path):
    # the fixture with an outcome added to its resource: loads whole, with the fields= forms
    lines = []
    for line in (DATA / "openinference.jsonl").read_text().splitlines():
        batch = json.loads(line)
        batch["resourceSpans"][0]["resource"]["attributes"].append({"key": "eval.passed",
                                                                    "value": {"boolValue": True}})
        lines.append(json.dumps(batch))
    path = tmp_path / "oi.jsonl"
    path.write_text("\n".join(lines) + "\n")
    traces = agentab.load_traces(path, format="otel", fields={**IDENTITY, "outcome": "resource:eval.passed"})
    counts = hand_counts("openinference")
    runs_ = traces.runs.set_index("task_id")
    assert sorted(runs_.index) == ["weather-oslo", "weather-paris"]
    for task, expected in counts.items():
        assert runs_.loc[task, "n_steps"] == expected["tools"]
        assert runs_.loc[task, "n_errors"] == expected["errors"]
        assert runs_.loc[task, "tokens_in"] == expected["in"] and runs_.loc[task, "tokens_out"] == expected["out"]
    assert traces.runs["outcome"].tolist() == [True, True]
