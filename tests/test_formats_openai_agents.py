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
from agentab.formats.openai_agents import FORMAT, sniff
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
            "tools": [s["span_data"]["name"] for s in sorted(calls, key=lambda s: s["started_at"])]}


def traces() -> list[dict[str, Any]]:
    return [t for t in raw() if t["object"] == "trace"]


def test_fixture_hand_counts() -> None:
    first, second = traces()
    assert hand_count(first["id"]) == {"calls": 3, "errors": 1, "tin": 590, "tout": 70, "cached": 64,
                                       "reasoning": 12, "handoffs": 1,
                                       "tools": ["read_file", "run_tests", "run_tests"]}
    assert hand_count(second["id"])["calls"] == 1


def test_reads_runs_with_steps_tokens_and_agents() -> None:
    items = list(FORMAT.read_file(FIXTURE, FORMAT.fields))
    assert len(items) == 2
    first, second = items
    rec = first.record
    want = hand_count(traces()[0]["id"])
    assert rec["run_id"] == traces()[0]["id"] and rec["task_id"] == "fix-add" and rec["seed"] == 0
    assert rec["outcome"] is True
    assert [s["tool"] for s in rec["steps"]] == want["tools"]
    assert sum(s["observation"]["status"] == "error" for s in rec["steps"]) == want["errors"]
    assert sum(s.get("tokens_in", 0) for s in rec["steps"]) == want["tin"]
    assert sum(s.get("tokens_out", 0) for s in rec["steps"]) == want["tout"]
    assert sum(s["metadata"].get("tokens_cached", 0) for s in rec["steps"]) == want["cached"]
    assert sum(s["metadata"].get("tokens_reasoning", 0) for s in rec["steps"]) == want["reasoning"]
    assert rec["steps"][0]["args"] == {"path": "src/app.py"}
    assert rec["steps"][1]["observation"]["error"] == "Error running tool (non-fatal)"
    assert {s["metadata"]["agent"] for s in rec["steps"]} == {"fixer"}
    meta = rec["metadata"]
    assert meta["handoffs"] == want["handoffs"] and meta["handoff_path"] == [["triage", "fixer"]]
    assert meta["agents"] == ["triage", "fixer"] and meta["harness"] == "openai-agents"
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
    records = [item.record for item in FORMAT.read_objects(objs, "<test>", FORMAT.fields)]
    loaded = agentab.load_traces(records)
    runs = loaded.runs.set_index("seed")
    assert len(runs) == 2
    first, second = (hand_count(t["id"]) for t in traces())
    assert runs.loc[0, "n_steps"] == first["calls"] and runs.loc[0, "tokens"] == first["tin"] + first["tout"]
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
    step = item.record["steps"][0]
    assert "tokens_in" not in step and step["metadata"]["tokens_unknown"] is True
    assert step["observation"] is None and step["args"] == {} and item.record["outcome"] == 0.5
    loaded = agentab.load_traces([item.record])
    assert loaded.runs["tokens"].isna().all()


def test_no_steps_tokens_go_to_run_metadata() -> None:
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "true"}},
            {"object": "trace.span", "id": "s1", "trace_id": "t1", "parent_id": None, "started_at": None,
             "ended_at": None, "span_data": {"type": "generation", "usage": {"input_tokens": 5, "output_tokens": 2}},
             "error": None}]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    assert item.record["steps"] == [] and item.record["metadata"]["tokens_in"] == 5
    assert item.record["metadata"]["tokens_out"] == 2


@pytest.mark.parametrize(("span", "field"), [
    ({"span_data": {"type": "telepathy"}}, "span_data.type"),
    ({"span_data": "x"}, "span_data"),
    ({"span_data": {"type": "function", "name": "f", "input": "not json"}}, "span_data.input"),
    ({"span_data": {"type": "function", "name": "f"}, "started_at": "yesterday"}, "started_at"),
    ({"span_data": {"type": "function", "name": "f"}, "started_at": "2026-01-01T00:00:05Z",
      "ended_at": "2026-01-01T00:00:04Z"}, "ended_at"),
    ({"span_data": {"type": "function", "name": ""}}, "span_data.name"),
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
        assert len(items) == 2 and items[0].record is not None and len(items[0].record["steps"]) == 3


def test_mapping_fields_from_the_trace() -> None:
    objs = [o for o in raw() if o.get("trace_id", o["id"]) == traces()[1]["id"]]
    fields = {**FORMAT.fields, "task_id": "workflow_name", "outcome": "agentab.seed"}
    (item,) = FORMAT.read_objects(objs, "<test>", fields)
    assert item.record["task_id"] == "fix-bug" and item.record["outcome"] == 1.0


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
    """Each generation's usage goes to the next step of its agent; the triage agent's (no steps) to the last step."""
    rec = next(FORMAT.read_file(FIXTURE, FORMAT.fields)).record
    spans = [s for s in raw() if s.get("trace_id") == traces()[0]["id"]]
    gens = sorted((s for s in spans if s["span_data"]["type"] == "generation"), key=lambda s: s["started_at"])
    used = [(g["span_data"]["usage"]["input_tokens"], g["span_data"]["usage"]["output_tokens"]) for g in gens]
    assert used == [(50, 7), (120, 18), (180, 30), (240, 15)]
    assert [(s["tokens_in"], s["tokens_out"]) for s in rec["steps"]] == [(120, 18), (180, 30), (240 + 50, 15 + 7)]


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
    rec = item.record
    assert rec["outcome"] is False
    first, second = rec["steps"]
    assert (first["tokens_in"], first["tokens_out"]) == (10, 3) and first["metadata"]["tokens_cached"] == 4
    assert second["tokens_in"] == 10 and "tokens_with_step" not in second["metadata"]  # the later call: last step
    assert second["metadata"].get("tokens_reasoning") == 2 and second["tokens_out"] == 3
    meta = rec["metadata"]
    assert meta["guardrails"] == 1 and meta["guardrails_triggered"] == 1 and meta["mcp_tools_spans"] == 1
    assert meta["handoffs"] == 1 and meta["span_errors"] == 1 and meta["span_types"]["function"] == 2
    loaded = agentab.load_traces([rec])
    assert loaded.runs["tokens"].iloc[0] == 26


def test_parallel_sibling_points_at_its_response() -> None:
    usage = {"input_tokens": 10, "output_tokens": 3}
    objs = [{"object": "trace", "id": "t1", "metadata": {"agentab.task_id": "a", "agentab.seed": "0",
                                                         "agentab.outcome": "1"}},
            _span("g1", "generation", 1, usage=usage),
            _span("f1", "function", 2, name="x"), _span("f2", "function", 3, name="y"),
            _span("f3", "function", 4, name="z"), _span("g2", "generation", 5, usage=usage),
            _span("f4", "function", 6, name="w")]
    (item,) = FORMAT.read_objects(objs, "<test>", FORMAT.fields)
    steps = item.record["steps"]
    assert [s["metadata"].get("tokens_with_step") for s in steps] == [None, 0, 0, None]
    assert "tokens_in" not in steps[1] and steps[3]["tokens_in"] == 10
    assert agentab.load_traces([item.record]).runs["tokens"].iloc[0] == 26


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
