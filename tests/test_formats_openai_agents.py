"""The "openai-agents" trace format (agentab.formats.openai_agents): a real SDK export, hand-counted from raw JSON."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import agentab
from agentab.formats._missing import settle
from agentab.formats.claude_code import sniff as claude_sniff
from agentab.formats.messages import ANTHROPIC, OPENAI
from agentab.formats.openai_agents import FORMAT, handoff_tool, sniff
from agentab.formats.otel import FORMAT as OTEL

DATA = Path(__file__).parent / "data" / "openai_agents"
FIXTURE = DATA / "traces.jsonl"


def raw() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def hand_count(trace_id: str) -> dict[str, Any]:
    """Counts from the raw items with plain json, not with the reader."""
    spans = [s for s in raw() if s["object"] == "trace.span" and s["trace_id"] == trace_id]
    calls = [s for s in spans if s["span_data"]["type"] == "function"]
    gens = [s["span_data"]["usage"] for s in spans if s["span_data"]["type"] == "generation"]
    return {"calls": len(calls), "errors": sum(s["error"] is not None for s in calls),
            "tin": sum(u["input_tokens"] for u in gens), "tout": sum(u["output_tokens"] for u in gens),
            "cached": sum(u["input_tokens_details"]["cached_tokens"] for u in gens),
            "reasoning": sum(u["output_tokens_details"]["reasoning_tokens"] for u in gens),
            "handoffs": sum(s["span_data"]["type"] == "handoff" for s in spans),
            "agents": [s["span_data"]["name"] for s in sorted(spans, key=lambda s: s["started_at"])
                       if s["span_data"]["type"] == "agent"],
            "tools": [s["span_data"]["name"] for s in sorted(calls, key=lambda s: s["started_at"])]}


def record(item: Any) -> dict[str, Any]:
    """The item's trace record as a dict (the reader builds runs in columns)."""
    rec = item.record
    return rec if isinstance(rec, dict) else rec.to_record()


def tool_steps(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in rec["steps"] if s.get("kind", "tool") == "tool"]


def traces() -> list[dict[str, Any]]:
    return [t for t in raw() if t["object"] == "trace"]


def test_fixture_hand_counts() -> None:
    first, second = traces()
    assert hand_count(first["id"]) == {"calls": 3, "errors": 1, "tin": 590, "tout": 70, "cached": 64,
                                       "reasoning": 12, "handoffs": 1, "agents": ["triage", "fixer"],
                                       "tools": ["read_file", "run_tests", "run_tests"]}
    assert hand_count(second["id"])["calls"] == 1


def test_reads_runs_with_steps_tokens_and_agents() -> None:
    items = list(FORMAT.read_file(FIXTURE, FORMAT.fields))
    assert len(items) == 2
    first, second = items
    rec = record(first)
    want = hand_count(traces()[0]["id"])
    assert rec["run_id"] == traces()[0]["id"] and rec["task_id"] == "fix-add" and rec["seed"] == 0
    assert rec["outcome"] is True
    tools = tool_steps(rec)
    assert [s["tool"] for s in tools] == want["tools"]
    assert sum(s["observation"]["status"] == "error" for s in tools) == want["errors"]
    # the run's totals: every generation, the final answer (no function call) included
    assert (rec["tokens_in"], rec["tokens_out"]) == (want["tin"], want["tout"])
    assert (rec["tokens_cached"], rec["tokens_reasoning"]) == (want["cached"], want["reasoning"])
    assert tools[0]["args"] == {"path": "src/app.py"} and tools[0]["tokens_cached"] == 64
    assert tools[1]["observation"]["error"] == "Error running tool (non-fatal)"
    assert {s["agent"] for s in tools} == {"fixer"} and rec["agents"] == want["agents"]
    (handoff,) = [s for s in rec["steps"] if s.get("kind") == "handoff"]
    assert handoff["tool"] == "transfer_to_fixer" and handoff["args"] == {"to": "fixer"}
    assert handoff["agent"] == "triage" and handoff["index"] == 0
    # the two run_tests calls came from one generation: one parallel id, tokens at the first
    assert tools[1]["parallel"] == tools[2]["parallel"] and "parallel" not in tools[0]
    assert tools[2]["metadata"]["tokens_with_step"] == tools[1]["index"] and "tokens_in" not in tools[2]
    meta = rec["metadata"]
    assert meta["harness"] == "openai-agents" and "agents" not in meta and "handoff_path" not in meta
    assert meta["model"] == "scripted-model" and meta["workflow_name"] == "fix-bug"
    task = next(s["span_data"]["data"] for s in raw() if s.get("trace_id") == rec["run_id"]
                and s["span_data"]["type"] == "custom" and s["span_data"]["name"] == "task")
    assert meta["sdk_run_usage"]["input_tokens"] == task["usage"]["input_tokens"] == want["tin"]
    spans = [s for s in raw() if s.get("trace_id") == rec["run_id"]]
    wall = (max(datetime.fromisoformat(s["ended_at"]) for s in spans)
            - min(datetime.fromisoformat(s["started_at"]) for s in spans)).total_seconds()
    assert rec["latency_s"] == pytest.approx(wall, abs=1e-6)
    # the second trace's metadata has no outcome: absent, with a reason saying how to map one
    assert list(second.missing) == ["outcome"] and "outcome" not in second.record and second.record["steps"]
    settled = settle(second)
    assert settled.record is None and settled.field == "agentab.outcome" and "fields=" in settled.reason


def test_records_load_through_the_decoder() -> None:
    items = list(FORMAT.read_file(FIXTURE, {**FORMAT.fields, "outcome": "group_id"}))
    assert all(item.record is None for item in items)  # "exp-1" is not a verdict: rejected, not guessed
    objs = raw()
    for obj in objs:
        if obj["object"] == "trace":
            obj["metadata"]["agentab.outcome"] = "false" if obj["metadata"]["agentab.seed"] == "1" else "true"
    records = [record(item) for item in FORMAT.read_objects(objs, "<test>", FORMAT.fields)]
    loaded = agentab.load_traces(records)
    runs = loaded.runs.set_index("seed")
    assert len(runs) == 2
    first, second = (hand_count(t["id"]) for t in traces())
    assert runs.loc[0, "n_steps"] == first["calls"] and runs.loc[0, "tokens"] == first["tin"] + first["tout"]
    assert runs.loc[0, "n_handoffs"] == first["handoffs"]
    direct = agentab.load_traces(FIXTURE, format="openai-agents", strict=False).runs
    assert direct["tokens"].iloc[0] == first["tin"] + first["tout"] and direct["n_handoffs"].iloc[0] == 1
    assert runs.loc[1, "n_steps"] == second["calls"] and runs.loc[1, "tokens"] == second["tin"] + second["tout"]


def test_unknown_usage_is_missing_not_zero() -> None:
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "2",
                                                         "agentab.outcome": "0.5"}},
            {"object": "trace.span", "id": "s1", "trace_id": "t1", "parent_id": None,
             "started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
             "span_data": {"type": "response", "response_id": "r", "usage": None}, "error": None},
            {"object": "trace.span", "id": "s2", "trace_id": "t1", "parent_id": None,
             "started_at": "2026-01-01T00:00:02+00:00", "ended_at": None,
             "span_data": {"type": "function", "name": "f", "input": "", "output": None}, "error": None}]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    rec = record(item)
    step = rec["steps"][0]
    assert "tokens_in" not in step and step["metadata"]["tokens_unknown"] is True and "tokens_in" not in rec
    assert step["observation"] is None and step["args"] == {} and rec["outcome"] == 0.5
    loaded = agentab.load_traces([rec])
    assert loaded.runs["tokens"].isna().all()


def test_no_steps_tokens_go_to_the_run_totals() -> None:
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "true"}},
            {"object": "trace.span", "id": "s1", "trace_id": "t1", "parent_id": None, "started_at": None,
             "ended_at": None, "span_data": {"type": "generation", "usage": {"input_tokens": 5, "output_tokens": 2}},
             "error": None}]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    rec = record(item)
    assert rec["steps"] == [] and (rec["tokens_in"], rec["tokens_out"]) == (5, 2)
    assert "tokens_cached" not in rec and "tokens_in" not in rec["metadata"]
    assert agentab.load_traces([rec]).runs["tokens"].iloc[0] == 7


@pytest.mark.parametrize(("span", "field"), [
    ({"span_data": {"type": "telepathy"}}, "span_data.type"),
    ({"span_data": "x"}, "span_data"),
    ({"span_data": {"type": "function", "name": "f", "input": "not json"}}, "span_data.input"),
    ({"span_data": {"type": "function", "name": "f"}, "started_at": "yesterday"}, "started_at"),
    ({"span_data": {"type": "function", "name": "f"}, "started_at": "2026-01-01T00:00:05Z",
      "ended_at": "2026-01-01T00:00:04Z"}, "ended_at"),
    ({"span_data": {"type": "function", "name": ""}}, "span_data.name"),
    ({"span_data": {"type": "function", "name": "f"}, "parent_id": ["s0"]}, "parent_id"),  # (was a TypeError)
    ({"span_data": {"type": "agent", "name": "a"}, "id": {"n": 1}}, "id"),
    ({"span_data": {"type": "generation", "usage": {"input_tokens": -1, "output_tokens": 0}}}, "span_data.usage"),
])
def test_bad_spans_reject_their_run_by_field(span: dict[str, Any], field: str) -> None:
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "true"}},
            {"object": "trace.span", "id": "s1", "trace_id": "t1", "parent_id": None, "error": None, **span}]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    assert item.record is None and item.field == field and item.line == 2


def test_other_objects_are_rejections() -> None:
    items = list(FORMAT.read_objects([{"object": "response"}, [1]], "<test>", FORMAT.fields))
    assert [item.field for item in items] == ["object", "object"] and all(i.record is None for i in items)


def test_json_array_and_ingest_payload(tmp_path: Path) -> None:
    objs = raw()
    (tmp_path / "a.json").write_text(json.dumps(objs), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps({"data": objs}), encoding="utf-8")
    lines = "".join(json.dumps({"data": objs[i:i + 5]}) + "\n" for i in range(0, len(objs), 5))
    (tmp_path / "c.jsonl").write_text(lines, encoding="utf-8")
    for name in ("a.json", "b.json", "c.jsonl"):
        items = list(FORMAT.read_file(tmp_path / name, FORMAT.fields))
        assert len(items) == 2 and items[0].record is not None and len(tool_steps(record(items[0]))) == 3


def test_mapping_fields_from_the_trace() -> None:
    objs = [o for o in raw() if o.get("trace_id", o["id"]) == traces()[1]["id"]]
    fields = {**FORMAT.fields, "task_id": "workflow_name", "outcome": "agentab.seed"}
    (item,) = FORMAT.read_objects(objs, "<test>", fields)
    assert record(item)["task_id"] == "fix-bug" and record(item)["outcome"] == 1.0


def test_sniff_is_specific() -> None:
    head = FIXTURE.read_bytes()[:65536]
    assert sniff(head, FIXTURE.name)
    for other in (OTEL, OPENAI, ANTHROPIC):
        assert not other.sniff(head, FIXTURE.name)
    assert not claude_sniff(head, FIXTURE.name)
    assert not sniff(b'{"run_id": "r", "task_id": "t", "seed": 0, "steps": [], "outcome": true}', "x.jsonl")
    assert not sniff(b'{"resourceSpans": []}', "x.json")
    for path in sorted((Path(__file__).parent / "data").rglob("*.json*")):
        if "openai_agents" not in path.parts and path.suffix in (".json", ".jsonl"):
            assert not sniff(path.read_bytes()[:65536], path.name), path


def test_tokens_follow_each_agents_calls() -> None:
    """Each generation's usage goes to the step it made (the triage agent's to its handoff); the final answer's,
    which made none, only to the run's totals."""
    rec = record(next(FORMAT.read_file(FIXTURE, FORMAT.fields)))
    spans = [s for s in raw() if s.get("trace_id") == traces()[0]["id"]]
    gens = sorted((s for s in spans if s["span_data"]["type"] == "generation"), key=lambda s: s["started_at"])
    used = [(g["span_data"]["usage"]["input_tokens"], g["span_data"]["usage"]["output_tokens"]) for g in gens]
    assert used == [(50, 7), (120, 18), (180, 30), (240, 15)]
    assert [(s.get("tokens_in"), s.get("tokens_out")) for s in rec["steps"]] == [(50, 7), (120, 18), (180, 30),
                                                                                 (None, None)]
    assert rec["tokens_in"] == sum(t for t, _ in used) and rec["tokens_out"] == sum(t for _, t in used)


def _span(sid: str, kind: str, start: int, parent: str | None = None, **data: Any) -> dict[str, Any]:
    return {"object": "trace.span", "id": sid, "trace_id": "t1", "parent_id": parent,
            "started_at": f"2026-01-01T00:00:{start:02d}+00:00", "ended_at": f"2026-01-01T00:00:{start + 1:02d}+00:00",
            "span_data": {"type": kind, **data}, "error": data.pop("error", None)}


def test_parallel_calls_share_their_response_and_other_spans_are_counted() -> None:
    usage = {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 4},
             "output_tokens_details": {"reasoning_tokens": 2}}
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "false"}},
            _span("a1", "agent", 0, name="main"),
            _span("g1", "response", 1, "a1", usage=usage),
            _span("f1", "function", 2, "a1", name="x", input="{}", output="1"),
            _span("f2", "function", 2, "a1", name="y", input='{"k": 1}', output="2"),
            _span("g2", "response", 5, "a1", usage=usage),
            _span("gr", "guardrail", 6, "a1", name="g", triggered=True),
            _span("m1", "mcp_tools", 7, "a1", server="s", result=["t"]),
            _span("h1", "handoff", 8, "a1", from_agent="main", to_agent="other")]
    objs[-1]["error"] = {"message": "boom", "data": None}
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    rec = record(item)
    assert rec["outcome"] is False
    first, second, handoff = rec["steps"]
    assert (first["tokens_in"], first["tokens_out"]) == (10, 3) and first["tokens_cached"] == 4
    assert first["tokens_reasoning"] == 2 and first["parallel"] == second["parallel"] == "g1"
    assert "tokens_in" not in second and second["metadata"]["tokens_with_step"] == 0
    # g2 made the handoff: its tokens are the handoff step's; the handoff's error is its observation's
    assert handoff["kind"] == "handoff" and handoff["tool"] == "transfer_to_other" and handoff["agent"] == "main"
    assert handoff["tokens_in"] == 10 and handoff["observation"]["status"] == "error"
    assert rec["agents"] == ["main", "other"] and (rec["tokens_in"], rec["tokens_cached"]) == (20, 8)
    meta = rec["metadata"]
    assert meta["guardrails"] == 1 and meta["guardrails_triggered"] == 1 and meta["mcp_tools_spans"] == 1
    assert "span_errors" not in meta and meta["span_types"]["function"] == 2
    loaded = agentab.load_traces([rec])
    assert loaded.runs["tokens"].iloc[0] == 26 and loaded.runs["n_steps"].iloc[0] == 2


def test_parallel_sibling_points_at_its_response() -> None:
    usage = {"input_tokens": 10, "output_tokens": 3}
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "1"}},
            _span("g1", "generation", 1, usage=usage),
            _span("f1", "function", 2, name="x"), _span("f2", "function", 3, name="y"),
            _span("f3", "function", 4, name="z"), _span("g2", "generation", 5, usage=usage),
            _span("f4", "function", 6, name="w")]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    steps = record(item)["steps"]
    assert [s["metadata"].get("tokens_with_step") for s in steps] == [None, 0, 0, None]
    assert [s.get("parallel") for s in steps] == ["g1", "g1", "g1", None]
    assert "tokens_in" not in steps[1] and steps[3]["tokens_in"] == 10
    assert agentab.load_traces([record(item)]).runs["tokens"].iloc[0] == 26


def test_handoff_tool_names_as_the_sdk() -> None:
    assert handoff_tool("Refund Agent") == "transfer_to_refund_agent" and handoff_tool("fixer") == "transfer_to_fixer"


def test_load_traces_detects_and_reads_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through load_traces as a user would, with the format registered for the test (the registry is the lead's)."""
    import gzip

    from agentab import formats

    registered = formats.available()
    monkeypatch.setattr(formats, "available", lambda: {**registered, "openai-agents": FORMAT})
    loaded = agentab.load_traces(FIXTURE, strict=False)
    assert len(loaded.runs) == 1 and len(loaded.rejected) == 1
    assert loaded.runs["n_steps"].iloc[0] == hand_count(traces()[0]["id"])["calls"]
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(FIXTURE.read_bytes()))
    again = agentab.load_traces(tmp_path / "t.jsonl.gz", format="openai-agents", strict=False)
    assert len(again.runs) == 1


def _exported(n_traces: int, bad_line_at: int | None = None) -> str:
    """JSON Lines of ``n_traces`` copies of the fixture's first trace (new ids), each written in one stretch."""
    items = [x for x in raw() if x.get("id") == traces()[0]["id"] or x.get("trace_id") == traces()[0]["id"]]
    lines = []
    for k in range(n_traces):
        for item in items:
            copy = dict(item)
            copy["id" if item["object"] == "trace" else "trace_id"] = f"trace_{k:04d}"
            if item["object"] == "trace.span":
                copy["id"] = f"{item['id']}_{k}"
                if item.get("parent_id"):
                    copy["parent_id"] = f"{item['parent_id']}_{k}"
            lines.append(json.dumps(copy))
    if bad_line_at is not None:
        lines.insert(bad_line_at, "{not json")
    return "".join(line + "\n" for line in lines)


def _parts(path: Path, cuts: list[int]) -> list[Any]:
    """The parts of ``path`` cut at the starts of the given lines (0-based), as the parallel loader reads them."""
    from agentab.formats.openai_agents import read_part

    data = path.read_bytes()
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10][:-1]
    bounds = [0, *(starts[c] for c in cuts), len(data)]
    return [read_part(path, a, b, data.count(b"\n", 0, a) + 1) for a, b in zip(bounds, bounds[1:])]


def test_parts_read_as_the_whole_file(tmp_path: Path) -> None:
    """Cut anywhere, the parts move their edges to a trace's first line: their traces are the whole file's, in order,
    with the same lines; a cut inside a trace's stretch is moved, so the parts share no trace."""
    from agentab.formats.openai_agents import read_file, splits

    path = tmp_path / "export.jsonl"
    path.write_text(_exported(6), encoding="utf-8")
    assert splits(path)
    whole = [(i.line, record(i)) for i in read_file(path)]
    n_lines = len(path.read_text().splitlines())
    for cuts in ([n_lines // 2], [3, n_lines // 3, n_lines - 2], [1]):
        parts = _parts(path, cuts)
        keys = [p.keys for p in parts]
        assert all(a.isdisjoint(b) for i, a in enumerate(keys) for b in keys[i + 1:]), cuts
        assert [(i.line, record(i)) for p in parts for i in p.items] == whole


def test_a_later_part_with_a_line_of_its_own_sends_the_file_whole(tmp_path: Path) -> None:
    """A malformed line is a rejection a serial read gives before every run: a later part holding one shares a key
    with the first part, so the loader reads the file in one piece (and a JSON array is never read in parts)."""
    from agentab.formats.openai_agents import splits

    path = tmp_path / "export.jsonl"
    text = _exported(6, bad_line_at=None)
    n_lines = len(text.splitlines())
    path.write_text(_exported(6, bad_line_at=n_lines - 3), encoding="utf-8")
    first, last = _parts(path, [n_lines // 2])
    assert not first.keys.isdisjoint(last.keys)
    (tmp_path / "array.json").write_text(json.dumps(raw()), encoding="utf-8")
    assert not splits(tmp_path / "array.json")


def test_an_object_over_two_lines_is_read_line_by_line(tmp_path: Path) -> None:
    """Three objects on three lines, not one on each (the second spread over two, two on the last): read line by
    line, lines 2 and 3 are malformed JSON, never the spans read under other lines' numbers."""
    lines = _exported(1).splitlines()
    second = lines[1].replace(", ", ",\n", 1)
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join([lines[0], second + " " + lines[2], *lines[3:]]) + "\n", encoding="utf-8")
    problems = [(item.line, item.reason) for item in FORMAT.read_file(path, FORMAT.fields) if item.record is None]
    assert [line for line, _ in problems][:2] == [2, 3] and all("JSON" in reason for _, reason in problems[:2])


def _one_run(spans: list[dict[str, Any]]) -> Any:
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "true"}}]
    objs += [{"object": "trace.span", "id": f"s{k}", "trace_id": "t1", "parent_id": None, "error": None, **span}
             for k, span in enumerate(spans)]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    return item


@pytest.mark.parametrize(("started", "ended", "expected"), [
    ("2026-01-01T00:00:01.250000+00:00", "2026-01-01T00:00:02+00:00", ("2026-01-01T00:00:01.250000000Z", 0.75)),
    ("2026-01-01T00:00:01Z", "2026-01-01T00:00:03.5Z", ("2026-01-01T00:00:01.000000000Z", 2.5)),
    ("2026-01-01T00:00:01", "2026-01-01T02:00:01+02:00", ("2026-01-01T00:00:01.000000000Z", 0.0)),  # naive: UTC
    ("2026-01-01T05:30:00+05:30", None, ("2026-01-01T00:00:00.000000000Z", None)),
])
def test_span_times_as_read(started: str, ended: str | None, expected: tuple[str, float | None]) -> None:
    # the SDK's own shape, Z, a time without an offset (UTC) and another offset: one instant each
    rec = record(_one_run([{"started_at": started, "ended_at": ended,
                            "span_data": {"type": "function", "name": "f", "input": "{}", "output": "x"}}]))
    assert (rec["steps"][0]["started_at"], rec.get("latency_s")) == expected


@pytest.mark.parametrize(("started", "ended", "field", "reason"), [
    ("2300-01-01T00:00:00+00:00", None, "started_at", "a time out of range (years 1678-2262): 2300-01-01T00:00:00+00:00"),
    ("2026-01-01T00:00:00+00:00", "2300-01-01T00:00:00+01:00", "ended_at",
     "a time out of range (years 1678-2262): 2300-01-01T00:00:00+01:00"),
    ("2026-02-30T00:00:00+00:00", None, "started_at", 'expected an ISO-8601 time, got str "2026-02-30T00:00:00+00:00"'),
    (1767225600, None, "started_at", "expected an ISO-8601 time, got int 1767225600"),
    ("2026-01-01T00:00:00+00:00", 5, "ended_at", "expected an ISO-8601 time, got int 5"),
    ("2026-01-01T00:00:02+00:00", "2026-01-01T00:00:01+00:00", "ended_at", "ended_at precedes started_at"),
])
def test_span_times_rejected_by_field(started: Any, ended: Any, field: str, reason: str) -> None:
    item = _one_run([{"started_at": started, "ended_at": ended,
                      "span_data": {"type": "function", "name": "f", "input": "{}"}}])
    assert (item.record, item.field, item.reason) == (None, field, reason)


def test_a_time_out_of_range_on_a_span_that_is_no_step_is_kept() -> None:
    # only a step's times go to the decoder (nanoseconds): an agent span's far-off end is the wall time's
    rec = record(_one_run([{"started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2300-01-01T00:00:00+00:00",
                            "span_data": {"type": "agent", "name": "a"}},
                           {"started_at": "2026-01-01T00:00:01+00:00", "ended_at": "2026-01-01T00:00:02+00:00",
                            "span_data": {"type": "function", "name": "f", "input": "{}"}}]))
    wall = (datetime.fromisoformat("2300-01-01T00:00:00+00:00") - datetime.fromisoformat("2026-01-01T00:00:00+00:00"))
    assert len(rec["steps"]) == 1 and rec["latency_s"] == wall.total_seconds()


@pytest.mark.parametrize(("usage", "expected"), [
    ({"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 3},
      "output_tokens_details": {"reasoning_tokens": 2}}, (9, 4, 3, 2)),
    ({"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 10},
      "output_tokens_details": {"reasoning_tokens": 5}}, (9, 4, None, None)),  # a part above its whole: unknown
    ({"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": True},
      "output_tokens_details": {"reasoning_tokens": -1}}, (9, 4, None, None)),  # not counts: unknown
    ({"input_tokens": 9, "output_tokens": 4, "cached_input_tokens": 2, "output_tokens_details": None},
     (9, 4, 2, None)),
])
def test_usage_counts_as_read(usage: dict[str, Any], expected: tuple[Any, ...]) -> None:
    rec = record(_one_run([{"started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
                            "span_data": {"type": "generation", "usage": usage}},
                           {"started_at": "2026-01-01T00:00:01+00:00", "ended_at": "2026-01-01T00:00:02+00:00",
                            "span_data": {"type": "function", "name": "f", "input": "{}"}}]))
    step = rec["steps"][0]
    assert tuple(step.get(k) for k in ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning")) == expected


@pytest.mark.parametrize("usage", [{"input_tokens": True, "output_tokens": 1}, {"input_tokens": 1},
                                   {"input_tokens": 1.0, "output_tokens": 1}, [1, 2]])
def test_usage_without_counts_is_rejected(usage: Any) -> None:
    item = _one_run([{"started_at": None, "ended_at": None, "span_data": {"type": "generation", "usage": usage}}])
    assert (item.record, item.field) == (None, "span_data.usage")


def _with_prompts(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with what the SDK's own models record on a generation span: the prompt (every message so far) as
    ``input``, the completion as ``output``; a response span's ``input`` too."""
    out = json.loads(json.dumps(objs))
    history: list[dict[str, Any]] = [{"role": "system", "content": "You fix bugs."}]
    for obj in out:
        data = obj.get("span_data") or {}
        if data.get("type") in ("generation", "response"):
            history = [*history, {"role": "user", "content": [{"type": "text", "text": f"turn {len(history)}"}]}]
            data["input"] = history
            data["output"] = [{"role": "assistant", "content": None,
                               "tool_calls": [{"id": "c1", "type": "function",
                                               "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}}]}]
    return out


def test_prompts_and_completions_change_nothing(tmp_path: Path) -> None:
    """A generation's prompt and completion are kept undecoded (never read): every form of the file, and the same
    items in memory, give the runs they give without them."""
    objs = raw()
    fuller = _with_prompts(objs)
    assert sum(isinstance((o.get("span_data") or {}).get("input"), list) for o in fuller) == 6
    plain = [(i.line, record(i)) for i in FORMAT.read_objects(objs, "<test>", FORMAT.fields)]
    assert [(i.line, record(i)) for i in FORMAT.read_objects(fuller, "<test>", FORMAT.fields)] == plain
    def forms(items: list[dict[str, Any]]) -> dict[str, str]:
        return {"a.jsonl": "".join(json.dumps(o) + "\n" for o in items), "b.json": json.dumps(items),
                "c.json": json.dumps({"data": items}),
                "d.jsonl": "".join(json.dumps({"data": items[i:i + 5]}) + "\n" for i in range(0, len(items), 5)),
                "e.jsonl": "".join(json.dumps(o) + "\n" for o in items) + "{not json\n"}  # read line by line

    for (name, text), without in zip(forms(fuller).items(), forms(objs).values()):
        (tmp_path / name).write_text(text, encoding="utf-8")
        (tmp_path / f"plain-{name}").write_text(without, encoding="utf-8")
        items = [(i.line, i.reason, i.record and record(i)) for i in FORMAT.read_file(tmp_path / name, FORMAT.fields)]
        assert items == [(i.line, i.reason, i.record and record(i))
                         for i in FORMAT.read_file(tmp_path / f"plain-{name}", FORMAT.fields)], name
        runs = [rec for _, _, rec in items if rec is not None]
        assert len(runs) == 2 and [tool_steps(rec)[0]["args"] for rec in runs] == [{"path": "src/app.py"}] * 2, name
        assert len(items) == 2 + (name == "e.jsonl")


def test_a_function_span_with_object_input_and_output_reads_them_whole() -> None:
    """A function span's ``input`` and ``output`` are read whole whatever their JSON type (the SDK writes text)."""
    objs = raw()
    span = next(o for o in objs if o.get("span_data", {}).get("type") == "function")
    span["span_data"]["input"] = {"path": "src/a.py", "lines": [1, {"to": 9}]}
    span["span_data"]["output"] = {"status": "ok", "bytes": [1, 2]}
    first = next(i for i in FORMAT.read_objects(objs, "<test>", FORMAT.fields) if i.record is not None)
    step = next(s for s in tool_steps(record(first)) if s["metadata"]["span_id"] == span["id"])
    assert step["args"] == {"path": "src/a.py", "lines": [1, {"to": 9}]}
    assert step["observation"]["output"] == {"status": "ok", "bytes": [1, 2]}


def test_an_in_memory_span_that_is_not_json_is_a_rejection() -> None:
    objs = raw()
    span = next(o for o in objs if o.get("span_data", {}).get("type") == "function")
    span["span_data"]["input"] = {"path": object()}
    items = list(FORMAT.read_objects(objs, "<test>", FORMAT.fields))
    bad = [i for i in items if i.record is None]
    assert len(bad) == 1 and "not JSON" in bad[0].reason


def test_a_turns_usage_counts_when_no_generation_is_recorded() -> None:
    """A custom ``Model`` records no generation span: the SDK's ``turn`` custom spans give the tokens (their usage
    a plain object of the span's data, ``cached_input_tokens`` its cached count)."""
    turn = {"type": "custom", "name": "turn",
            "data": {"sdk_span_type": "turn", "usage": {"input_tokens": 9, "output_tokens": 4,
                                                         "cached_input_tokens": 3, "requests": 1}}}
    rec = record(_one_run([{"started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:00:01+00:00",
                            "span_data": turn},
                           {"started_at": "2026-01-01T00:00:01+00:00", "ended_at": "2026-01-01T00:00:02+00:00",
                            "span_data": {"type": "function", "name": "f", "input": "{}"}}]))
    step = rec["steps"][0]
    assert tuple(step.get(k) for k in ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning")) == (9, 4, 3,
                                                                                                            None)
    bad = {**turn, "data": {"sdk_span_type": "turn", "usage": "many"}}
    item = _one_run([{"started_at": None, "ended_at": None, "span_data": bad}])
    assert (item.record, item.field) == (None, "span_data.usage")
