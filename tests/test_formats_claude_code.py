"""The "claude-code" trace format (agentab.formats.claude_code): real Claude Code session files, hand-counted."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import agentab
from agentab.formats import Item
from agentab.formats._missing import settle
from agentab.formats.claude_code import FIELDS, FORMAT, sniff
from agentab.formats.decode import Prepared
from agentab.formats.inspect_ai import FORMAT as INSPECT
from agentab.formats.messages import ANTHROPIC, OPENAI
from agentab.formats.otel import FORMAT as OTEL

DATA = Path(__file__).parent / "data" / "claude_code"
FILES = sorted(DATA.glob("*.jsonl"))
#: The default mapping: task, seed and outcome from an ``agentab`` object the tests add to a session's first line.
MAPPED = dict(FIELDS)


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]


def with_identity(path: Path, tmp_path: Path, task: str = "t1", seed: int = 0, outcome: Any = True) -> Path:
    """A copy of a session whose first line carries a task, seed and outcome (what a user's mapping would give)."""
    lines = raw_lines(path)
    lines[0]["agentab"] = {"task_id": task, "seed": seed, "outcome": outcome}
    out = tmp_path / path.name
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return out


def item_of(path: Path, fields: dict[str, str] | None = None) -> Item:
    (item,) = FORMAT.read_file(path, MAPPED if fields is None else fields)
    return item


def record(item: Item) -> dict[str, Any]:
    """The item's trace record as a dict: a run the reader built in columns gives its ``to_record()``, without the
    fields it lacks (``Item.missing``)."""
    rec = item.record
    if isinstance(rec, Prepared):
        rec = {key: value for key, value in rec.to_record().items() if key not in (item.missing or {})}
    return rec


def record_of(path: Path, tmp_path: Path) -> dict[str, Any]:
    item = item_of(with_identity(path, tmp_path))
    assert item.record is not None, (item.field, item.reason)
    return record(item)


def hand_count(path: Path) -> dict[str, Any]:
    """Counted from the raw JSON: tool calls, errors, sidechain calls, and tokens once per response (its last line)."""
    calls = errors = side = 0
    agents: list[str] = []
    last_usage: dict[str, dict[str, Any]] = {}
    types: Counter[str] = Counter()
    for line in raw_lines(path):
        types[line["type"]] += 1
        message = line.get("message")
        if line["type"] not in ("user", "assistant") or not isinstance(message, dict):
            continue
        if line["type"] == "assistant" and message.get("usage") is not None:
            last_usage[message.get("id") or line["requestId"]] = message["usage"]
        for block in message["content"] if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_use" and line["type"] == "assistant":
                calls += 1
                side += line.get("isSidechain") is True
                agent = line.get("agentId") or "sidechain"
                if line.get("isSidechain") is True and agent not in agents:
                    agents.append(agent)
            if block.get("type") == "tool_result" and block.get("is_error") is True:
                errors += 1
    tin = sum(u["input_tokens"] + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0)
              for u in last_usage.values())
    tout = sum(u["output_tokens"] for u in last_usage.values())
    cached = sum(u.get("cache_read_input_tokens", 0) for u in last_usage.values())
    return {"calls": calls, "errors": errors, "side": side, "tin": tin, "tout": tout, "cached": cached,
            "types": dict(types), "responses": len(last_usage), "agents": agents}


def step_tokens(record: dict[str, Any], key: str) -> int:
    steps = record["steps"]
    return sum(step.get(key, 0) for step in steps) + (record["metadata"].get(key, 0) if not steps else 0)


# --------------------------------------------------------------------------- #
# Real fixtures, hand-counted
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_real_session_matches_hand_counts(path: Path, tmp_path: Path) -> None:
    rec = record_of(path, tmp_path)
    want = hand_count(path)
    steps = rec["steps"]
    assert len(steps) == want["calls"]
    failed = [s for s in steps if s["observation"] is not None and s["observation"]["status"] == "error"]
    assert len(failed) == want["errors"]
    assert sum("agent" in s for s in steps) == want["side"] and rec.get("agents", []) == want["agents"]
    # the run's totals: every response once, those without a tool call included
    assert (rec["tokens_in"], rec["tokens_out"], rec["tokens_cached"]) == (want["tin"], want["tout"], want["cached"])
    assert step_tokens(rec, "tokens_in") <= want["tin"] and step_tokens(rec, "tokens_out") <= want["tout"]
    assert step_tokens(rec, "tokens_cached") <= want["cached"]
    assert all(s.get("tokens_cached", 0) <= s.get("tokens_in", 0) for s in steps)
    assert rec["metadata"]["line_types"] == want["types"]
    assert rec["metadata"]["unread_lines"] == sum(n for t, n in want["types"].items() if t not in ("user", "assistant"))
    assert rec["metadata"]["harness"] == "claude-code"
    assert "cost_usd" not in rec  # no costUSD in these versions: unknown, not 0


def test_short_session_by_hand(tmp_path: Path) -> None:
    """short.jsonl: a Bash and a Glob call, both refused by the user (is_error true), in one streamed response."""
    rec = record_of(DATA / "short.jsonl", tmp_path)
    assert rec["run_id"] == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert [s["tool"] for s in rec["steps"]] == ["Bash", "Glob"]
    assert [s["observation"]["status"] for s in rec["steps"]] == ["error", "error"]
    first, second = rec["steps"]
    # one response (msg_01MKH1ccEGrZGNPvu8pYiiQa) carries both calls: counted once, on the first
    assert second["metadata"]["tokens_with_step"] == 0 and "tokens_in" not in second
    assert first["tokens_out"] == hand_count(DATA / "short.jsonl")["tout"]
    assert first["parallel"] == second["parallel"] == "msg_01MKH1ccEGrZGNPvu8pYiiQa"
    assert rec["metadata"]["model"] == "claude-opus-4-6"
    assert rec["metadata"]["line_types"]["system"] == 2


def test_sub_agent_file_is_its_own_run(tmp_path: Path) -> None:
    rec = record_of(DATA / "agent-aac57f5.jsonl", tmp_path)
    session = raw_lines(DATA / "agent-aac57f5.jsonl")[0]["sessionId"]
    assert rec["run_id"] == f"{session}:agent-aac57f5"
    assert rec["metadata"]["parent_session"] == session and rec["metadata"]["agent"] == "aac57f5"
    assert len(rec["steps"]) == 12 and all(s["agent"] == "aac57f5" for s in rec["steps"])
    assert rec["agents"] == ["aac57f5"]
    assert all(s["observation"] is not None for s in rec["steps"])


def test_sidechain_in_the_session_file(tmp_path: Path) -> None:
    """The main Task call and the sub-agent's Grep (cut: unanswered); a result whose call was cut is counted."""
    rec = record_of(DATA / "sidechain_integrated.jsonl", tmp_path)
    task, grep = rec["steps"]
    assert task["tool"] == "Task" and "agent" not in task and task["observation"]["status"] == "ok"
    assert task["metadata"]["sub_agent"] == "e1c84ba5"  # the agentId on the line answering the Task call
    assert grep["tool"] == "Grep" and grep["agent"] == "sidechain" and grep["observation"] is None
    assert rec["agents"] == ["sidechain"]
    assert rec["metadata"]["unmatched_results"] == 1
    # msg_017zj75dqWUNqVxCUrhqbTkf is written twice (text, then tool_use) with the same usage: counted once
    assert grep["tokens_in"] == 3 + 19830 and grep["tokens_out"] == 183
    # the main thread's last response (text only) is in the run's totals, not on a step
    assert task["tokens_out"] == 365 and rec["tokens_out"] == 365 + 190 + 183


def test_records_load_through_the_decoder(tmp_path: Path) -> None:
    items = [item_of(with_identity(path, tmp_path / path.stem, task=path.stem, seed=i))
             for i, path in enumerate(FILES) if (tmp_path / path.stem).mkdir() is None]
    traces = agentab.load_traces([record(item) for item in items])
    runs = traces.runs.set_index("run_id")
    assert len(runs) == len(FILES)
    for path in FILES:
        want = hand_count(path)
        run = runs[runs["task_id"] == path.stem].iloc[0]
        assert run["n_steps"] == want["calls"]
        assert run["tokens"] == want["tin"] + want["tout"]


def test_gzip_reads_the_same(tmp_path: Path) -> None:
    plain = with_identity(DATA / "short.jsonl", tmp_path)
    packed = tmp_path / "short.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert item_of(packed).record == item_of(plain).record


# --------------------------------------------------------------------------- #
# Missing is missing; rejections name what is wrong
# --------------------------------------------------------------------------- #
def test_unmapped_task_is_absent_with_a_reason_that_says_how() -> None:
    item = item_of(DATA / "short.jsonl")
    assert list(item.missing) == ["task_id", "seed", "outcome"] and record(item)["steps"]
    assert not {"task_id", "seed", "outcome"} & set(record(item))
    item = settle(item)
    assert item.record is None and item.field == "agentab.task_id" and item.line == 1
    assert "does not record the task" in item.reason and "fields=" in item.reason


def test_a_session_without_an_id_lacks_its_run_id() -> None:
    lines = [{k: v for k, v in line.items() if k != "sessionId"}
             for line in lines_of({"type": "user", "message": {"role": "user", "content": "hi"}})]
    (item,) = FORMAT.read_objects(lines, "<test>", MAPPED)
    assert item.missing == {"run_id": ("sessionId", "no run_id: no line has 'sessionId'")}
    assert "run_id" not in item.record and item.record["outcome"] == 1


def test_fields_map_the_identity_to_keys_of_the_lines(tmp_path: Path) -> None:
    path = with_identity(DATA / "short.jsonl", tmp_path)
    rec = record(item_of(path, {**FIELDS, "task_id": "gitBranch", "seed": "agentab.seed", "outcome": "agentab.outcome"}))
    assert rec["task_id"] == "master" and rec["seed"] == 0 and rec["outcome"] is True
    item = item_of(path, {**FIELDS, "seed": "version"})
    assert item.record is None and item.field == "version" and "seed has the wrong type" in item.reason


def lines_of(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"sessionId": "s1", "isSidechain": False, "parentUuid": None,
            "agentab": {"task_id": "t", "seed": 0, "outcome": 1}}
    return [{**base, **line} for line in extra]


def convert(lines: list[dict[str, Any]]) -> Item:
    (item,) = FORMAT.read_objects(lines, "<test>", MAPPED)
    return item


def test_no_usage_is_unknown_not_zero() -> None:
    item = convert(lines_of(
        {"type": "assistant", "message": {"id": "m1", "role": "assistant",
                                          "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "a", "is_error": False}]}}))
    step = item.record["steps"][0]
    assert "tokens_in" not in step and "tokens_out" not in step
    traces = agentab.load_traces([item.record])
    assert traces.runs["tokens"].isna().all()


def test_run_without_tools_keeps_its_tokens_in_the_run_totals() -> None:
    item = convert(lines_of({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
        {"type": "text", "text": "hi"}], "usage": {"input_tokens": 5, "output_tokens": 2,
                                                   "cache_read_input_tokens": 3}}}))
    assert item.record["steps"] == [] and "tokens_in" not in item.record["metadata"]
    assert (item.record["tokens_in"], item.record["tokens_out"], item.record["tokens_cached"]) == (8, 2, 3)


def test_streamed_usage_counts_the_last_line_once() -> None:
    call = {"type": "tool_use", "id": "c1", "name": "ls", "input": {}}
    item = convert(lines_of(
        {"type": "assistant", "requestId": "r1", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "text", "text": "x"}], "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "assistant", "requestId": "r1", "message": {"id": "m1", "role": "assistant", "content": [call],
                                                              "usage": {"input_tokens": 5, "output_tokens": 40}}}))
    step = item.record["steps"][0]
    assert (step["tokens_in"], step["tokens_out"]) == (5, 40)


def test_cost_usd_summed_per_response_when_every_response_has_it() -> None:
    def response(mid: str, cost: Any) -> dict[str, Any]:
        return {"type": "assistant", "costUSD": cost, "message": {"id": mid, "role": "assistant", "content": []}}
    full = convert(lines_of(response("m1", 0.25), response("m1", 0.25), response("m2", 0.5))).record
    assert full["cost_usd"] == pytest.approx(0.75)
    partial = convert(lines_of(response("m1", 0.25), response("m2", None))).record
    assert "cost_usd" not in partial and partial["metadata"]["cost_usd_reported"] == pytest.approx(0.25)


def test_unknown_line_types_are_counted() -> None:
    rec = convert(lines_of({"type": "assistant", "message": {"role": "assistant", "content": []}},
                           {"type": "brand-new-kind"}, {"type": "summary", "summary": "s"})).record
    assert rec["metadata"]["line_types"] == {"assistant": 1, "brand-new-kind": 1, "summary": 1}
    assert rec["metadata"]["unread_lines"] == 2


@pytest.mark.parametrize(("lines", "field"), [
    ([{"type": "assistant", "message": {"role": "assistant", "content": ["text"]}}], "message.content[0]"),
    ([{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "ls"}]}}],
     "message.content[0].id"),
    ([{"type": "assistant", "message": {"id": "m", "role": "assistant", "content": [],
                                        "usage": {"input_tokens": -1}}}], "message.usage.input_tokens"),
    ([{"type": "user", "message": "hello"}], "message"),
    ([{"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}}],
     "message.content[0].tool_use_id"),
])
def test_malformed_entries_are_rejections_naming_them(lines: list[dict[str, Any]], field: str) -> None:
    ok = {"type": "user", "message": {"role": "user", "content": "hello"}}
    item = convert(lines_of(ok, *lines))
    assert item.record is None and item.field == field and item.line == 2, item


def test_malformed_json_line_rejects_the_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text((DATA / "short.jsonl").read_text(encoding="utf-8") + '{"type": "user", "mess\n', encoding="utf-8")
    item = item_of(path)
    assert item.record is None and item.line == 16 and "malformed JSON" in item.reason


def test_an_object_over_two_lines_rejects_the_session_even_when_the_counts_agree(tmp_path: Path) -> None:
    """Three objects on three lines, not one on each (one spread over two, two on one line): read line by line,
    the first line is malformed JSON, not the session read with its line numbers shifted."""
    lines = (DATA / "short.jsonl").read_text(encoding="utf-8").splitlines()
    first = lines[0].replace(",", ",\n", 1)
    assert first != lines[0]
    path = tmp_path / "s.jsonl"
    path.write_text(first + " " + lines[1] + "\n" + "\n".join(lines[2:]) + "\n", encoding="utf-8")
    item = item_of(path)
    assert item.record is None and item.line == 1 and "malformed JSON" in item.reason


def test_empty_file_is_a_rejection(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n", encoding="utf-8")
    assert item_of(path).reason.startswith("an empty Claude Code session")


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_sniff_claims_real_sessions(path: Path) -> None:
    assert sniff(path.read_bytes()[:65536], path.name)


def test_sniff_does_not_claim_other_formats() -> None:
    others = [OPENAI.example, ANTHROPIC.example, OTEL.example, INSPECT.example,
              ('{"run_id": "r1", "task_id": "t", "seed": 0, "outcome": true, "steps": [], '
               '"metadata": {"sessionId": 1, "parentUuid": 2, "isSidechain": 3}}\n')]
    for text in others:
        assert not sniff(text.encode(), "x.jsonl")
    assert sniff(FORMAT.example.encode(), "x.jsonl")


def test_load_traces_reads_a_folder_of_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through load_traces as a user would, with the format registered for the test (the registry is the lead's)."""
    from agentab import formats

    registered = formats.available()
    monkeypatch.setattr(formats, "available", lambda: {**registered, "claude-code": FORMAT})
    for path in FILES:
        with_identity(path, tmp_path, task=path.stem)
    traces = agentab.load_traces(tmp_path, format="claude-code")
    assert len(traces.runs) == len(FILES)
    assert traces.runs["n_steps"].sum() == sum(hand_count(path)["calls"] for path in FILES)
    mapped = agentab.load_traces(tmp_path, format="claude-code", fields={"task_id": "cwd"})
    assert len(mapped.runs) == len(FILES)


def test_load_traces_rejects_unmapped_sessions_for_their_task(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentab import formats

    registered = formats.available()
    monkeypatch.setattr(formats, "available", lambda: {**registered, "claude-code": FORMAT})
    unmapped = agentab.load_traces(DATA, format="claude-code", strict=False)
    assert len(unmapped.runs) == 0 and set(unmapped.rejected["field"]) == {"agentab.task_id"}


def test_model_mapping_replaces_the_sessions_model() -> None:
    lines = lines_of({"type": "assistant", "name": "my-model", "message": {"role": "assistant", "model": "m0",
                                                                          "content": []}})
    (item,) = FORMAT.read_objects(lines, "<test>", {**MAPPED, "model": "name"})
    assert item.record["metadata"]["model"] == "my-model"
    assert convert(lines).record["metadata"]["model"] == "m0"


def test_task_result_totals_and_api_error_lines() -> None:
    """The toolUseResult of a Task call (shape and values of marot/spotter's session 258c7280, line 1480)."""
    task = {"type": "tool_use", "id": "c1", "name": "Task", "input": {"description": "Research Claude hook output"}}
    totals = {"status": "completed", "agentId": "a881341", "totalDurationMs": 32855, "totalTokens": 43179,
              "totalToolUseCount": 2}
    rec = convert(lines_of(
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [task]}},
        {"type": "user", "toolUseResult": totals, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "done"}]}]}},
        {"type": "assistant", "isApiErrorMessage": True, "message": {"id": "m2", "role": "assistant", "model":
            "<synthetic>", "content": [{"type": "text", "text": "API Error"}], "usage": {"input_tokens": 0,
                                                                                     "output_tokens": 0}}})).record
    meta = rec["steps"][0]["metadata"]
    assert (meta["sub_agent"], meta["sub_agent_tool_calls"], meta["sub_agent_tokens"],
            meta["sub_agent_duration_ms"]) == ("a881341", 2, 43179, 32855)
    assert rec["metadata"]["api_error_lines"] == 1 and "model" not in rec["metadata"]
    assert "tokens_in" not in rec["steps"][0]  # the synthetic line's zeros are not a model call's count


def test_bad_usage_is_named_on_the_line_that_has_it() -> None:
    def part(usage: Any) -> dict[str, Any]:
        return {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [], "usage": usage}}
    item = convert(lines_of(part({"input_tokens": 1, "output_tokens": 1}), part({"input_tokens": 1.5})))
    assert item.line == 2 and item.field == "message.usage.input_tokens", item


def test_several_session_ids_are_listed() -> None:
    rec = convert(lines_of({"type": "user", "message": {"role": "user", "content": "a"}},
                           {"type": "user", "sessionId": "s2", "message": {"role": "user", "content": "b"}})).record
    assert rec["run_id"] == "s1" and rec["metadata"]["session_ids"] == ["s1", "s2"]


def test_example_loads_by_name_and_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What tests/test_formats.py checks of every registered reader, with claude-code tried before anthropic."""
    from agentab import formats

    registered = formats.available()
    order = ["record", "otel", "claude-code", *(name for name in registered if name not in ("record", "otel"))]
    every = {**registered, "claude-code": FORMAT}
    monkeypatch.setattr(formats, "available", lambda: {name: every[name] for name in order})
    path = tmp_path / "runs.json"
    path.write_text(FORMAT.example + "\n")
    assert formats.detect(FORMAT.example.encode(), path.name) == "claude-code"
    for given in ("claude-code", "auto"):
        traces = agentab.load_traces(path, format=given)
        assert len(traces.runs) == 1 and len(traces.steps) == 1
        assert traces.formats == ((str(path), "claude-code"),)
    for path in FILES:  # the real sessions, detected
        head = path.read_bytes()[: formats.HEAD_BYTES]
        assert formats.detect(head, path.name) == "claude-code"


def test_a_line_or_call_written_twice_is_read_once() -> None:
    call = {"type": "tool_use", "id": "c1", "name": "ls", "input": {}}
    said = {"type": "assistant", "uuid": "u1", "message": {"id": "m1", "role": "assistant", "content": [call],
                                                           "usage": {"input_tokens": 5, "output_tokens": 1}}}
    again = {**said, "uuid": "u2", "message": {**said["message"], "id": "m2"}}
    rec = convert(lines_of(said, said, again)).record
    assert len(rec["steps"]) == 1 and rec["metadata"]["repeated_calls"] == 1
    assert rec["metadata"]["unread_lines"] == 1


def test_a_line_that_is_not_an_object_rejects_the_session() -> None:
    (item,) = FORMAT.read_objects([lines_of({"type": "user", "message": {"role": "user", "content": "a"}})[0], [1]],
                                  "<test>", MAPPED)
    assert item.record is None and item.line == 2 and "expected a JSON object" in item.reason
