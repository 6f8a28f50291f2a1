"""The "openhands" trace format (agentab.formats.openhands): real OpenHands output counted by hand, and the rules."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agentab
from agentab import formats
from agentab.formats import Item
from agentab.formats._missing import settle
from agentab.formats.decode import Prepared
from agentab.formats.messages import ANTHROPIC, OPENAI
from agentab.formats.openhands import FIELDS, FORMAT, history_steps, sniff

DATA = Path(__file__).parent / "data" / "openhands"
OUTPUT = DATA / "multi_swe_bench_output.jsonl.gz"
STREAM = DATA / "basic_gui_mode.json"
NOT_STEPS = {"message", "finish", "system", "recall"}


def as_dict(item: agentab.formats.Item) -> dict[str, Any]:
    """The item's trace record as a dict: a run the reader built in columns gives its ``to_record()``, without the
    fields it lacks (``Item.missing``)."""
    rec = item.record
    if isinstance(rec, Prepared):
        rec = {key: value for key, value in rec.to_record().items() if key not in (item.missing or {})}
    return rec


def lines() -> list[dict[str, Any]]:
    with gzip.open(OUTPUT, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def evaluated(resolved: list[bool]) -> list[dict[str, Any]]:
    """The fixture's lines with the report SWE-bench's evaluation would add (the fixture is inference output)."""
    out = lines()
    for line, verdict in zip(out, resolved):
        line["test_result"]["report"] = {"resolved": verdict, "empty_generation": False}
    return out


def load(items: list[Item]) -> agentab.Traces:
    assert all(item.record is not None for item in items), [(i.field, i.reason) for i in items if i.record is None]
    return agentab.load_traces([as_dict(item) for item in items])


def hand_count(line: dict[str, Any]) -> dict[str, int]:
    """Tool calls, errors and token totals of one output line, read from the raw JSON."""
    history = line["history"]
    actions = {e["id"]: e for e in history if "action" in e}
    steps = [e for e in history if "action" in e and e["source"] == "agent" and e["action"] not in NOT_STEPS]
    step_ids = {e["id"] for e in steps}
    errors = 0
    for e in history:
        if "observation" in e and e.get("cause") in step_ids:
            code = (e.get("extras", {}).get("metadata") or {}).get("exit_code")
            errors += e["observation"] == "error" or code not in (None, 0)
    responses = {}
    for e in actions.values():
        meta = e.get("tool_call_metadata")
        if meta:
            responses[meta["model_response"]["id"]] = meta["model_response"]["usage"]
    return {"steps": len(steps), "errors": errors,
            "tokens_in": sum(u["prompt_tokens"] for u in responses.values()),
            "tokens_out": sum(u["completion_tokens"] for u in responses.values()),
            "refused": sum(e.get("observation") == "error" and e.get("cause") is None for e in history)}


# --------------------------------------------------------------------------- #
# The real fixtures
# --------------------------------------------------------------------------- #
def test_real_output_without_report_lacks_its_outcome_not_its_task():
    items = list(FORMAT.read_file(OUTPUT, FIELDS))
    assert len(items) == 3 and all(list(item.missing) == ["outcome"] for item in items)
    assert [len(as_dict(item)["steps"]) for item in items] == [22, 32, 49]  # the record is whole but the outcome
    rejected = [settle(item) for item in items]
    assert all(item.record is None for item in rejected)
    assert {item.field for item in rejected} == {"test_result.report.resolved"}
    assert all("no outcome" in item.reason and "eval_infer" in item.reason for item in rejected)
    assert [item.line for item in rejected] == [1, 2, 3]


def test_real_output_steps_errors_tokens_match_the_raw_file():
    raw = lines()
    counted = [hand_count(line) for line in raw]
    assert [c["steps"] for c in counted] == [22, 32, 49]  # also counted by eye in the file
    # the per-response usage adds up to OpenHands' own accumulated totals
    assert [c["tokens_in"] for c in counted] == [line["metrics"]["accumulated_token_usage"]["prompt_tokens"]
                                                  for line in raw]
    items = list(FORMAT.read_objects(evaluated([True, False, False]), "out.jsonl", FIELDS))
    traces = load(items)
    runs = traces.runs.set_index("task_id").loc[[line["instance_id"] for line in raw]]
    assert list(runs.n_steps) == [c["steps"] for c in counted]
    assert list(runs.n_errors) == [c["errors"] for c in counted] == [5, 2, 12]
    assert list(runs.tokens_in) == [c["tokens_in"] for c in counted] == [565158, 410169, 938015]
    assert list(runs.tokens_out) == [c["tokens_out"] for c in counted] == [2558, 5156, 5627]
    assert list(runs.outcome.astype(bool)) == [True, False, False]
    # accumulated_cost is 0.0 with no priced call (metrics.costs empty): unknown, not free
    assert runs.cost_usd.isna().all()
    assert set(runs.model) == {"openai/openrouter-llama-4-maverick"} and set(runs.harness) == {"CodeActAgent"}
    records = [as_dict(item) for item in items]
    assert [r["metadata"]["refused_calls"] for r in records] == [c["refused"] for c in counted] == [0, 1, 1]
    # one call per model response (no parallel group) and no cache counts in the usage (prompt_tokens_details null)
    assert all("parallel" not in s and "tokens_cached" not in s for r in records for s in r["steps"])
    assert [r["metadata"]["accumulated_cost"] for r in records] == [0.0, 0.0, 0.0]
    assert not any("tokens_not_in_events" in r["metadata"] for r in records)  # the events hold every response
    assert records[2]["metadata"]["error"].startswith("RuntimeError: Agent reached maximum iteration")
    assert records[0]["metadata"]["events"] == {"system": 1, "message": 1, "recall": 1, "finish": 1}
    assert "finish" not in records[2]["metadata"]["events"]  # the run that hit the iteration limit
    assert records[0]["run_id"] == "out.jsonl:ponylang__ponyc-4595" and records[0]["seed"] == 0


def test_real_output_first_steps_tools_args_and_observations():
    items = list(FORMAT.read_objects(evaluated([True, True, True]), "out", FIELDS))
    steps = as_dict(items[0])["steps"]
    raw = lines()[0]["history"]
    first = next(e for e in raw if e.get("action") == "run")
    assert steps[0]["tool"] == "execute_bash" and steps[0]["args"] == first["args"]
    assert steps[0]["observation"]["status"] == "ok" and steps[0]["observation"]["type"] == "run"
    assert steps[0]["started_at"] == first["timestamp"]
    usage = first["tool_call_metadata"]["model_response"]["usage"]
    assert (steps[0]["tokens_in"], steps[0]["tokens_out"]) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert {s["tool"] for s in steps} == {"execute_bash", "str_replace_editor", "think"}
    failed = [s for s in steps if s["observation"]["status"] == "error"]
    assert all(s["observation"]["error"].startswith("exit code ") for s in failed)


def test_real_event_stream_steps_and_tokens():
    events = json.loads(STREAM.read_text())
    steps, counts = history_steps(events)
    calls = [e for e in events if e.get("source") == "agent" and e.get("action") in ("run", "edit")]
    assert [s["tool"] for s in steps] == [e["tool_call_metadata"]["function_name"] for e in calls]
    assert len(steps) == 4
    codes = [e["extras"]["metadata"]["exit_code"] for e in events if e.get("observation") == "run"]
    assert codes == [0, -1]
    assert [s["observation"]["status"] for s in steps] == ["ok", "ok", "ok", "error"]
    assert steps[3]["observation"]["error"] == "exit code -1"
    usage = [e["tool_call_metadata"]["model_response"]["usage"] for e in calls]
    assert sum(s["tokens_in"] for s in steps) == sum(u["prompt_tokens"] for u in usage) == 17297
    assert sum(s["tokens_out"] for s in steps) == sum(u["completion_tokens"] for u in usage)
    assert counts["events"] == {"change_agent_state": 1, "message": 2}
    # a stream records no verdict: the outcome is absent, saying so
    (item,) = FORMAT.read_file(STREAM, FIELDS)
    assert len(as_dict(item)["steps"]) == 4 and list(item.missing) == ["outcome"]
    item = settle(item)
    assert item.record is None and "no outcome" in item.reason and "event stream" in item.reason


def test_sniff_claims_the_fixtures_and_nothing_else():
    with gzip.open(OUTPUT, "rb") as fh:
        head = fh.read(formats.HEAD_BYTES)
    assert sniff(head, OUTPUT.name)
    assert sniff(STREAM.read_bytes()[: formats.HEAD_BYTES], STREAM.name)
    for other in (OPENAI.example, ANTHROPIC.example, formats.RECORD.example):
        assert not sniff(other.encode(), "x.jsonl")
    swe_agent = {"environment": "swe_main", "trajectory": [{"action": "ls", "observation": "a.py", "thought": ""}],
                 "history": [{"role": "system", "content": "x", "agent": "main"}], "info": {"instance_id": "a"}}
    assert not sniff(json.dumps(swe_agent).encode(), "a.traj")
    assert not sniff(b'{"instance_id": "a", "history": [[{"action": "run"}, {"observation": "run"}]]}', "o.jsonl")
    assert sniff(FORMAT.example.encode(), "output.jsonl")
    long_instruction = json.dumps({"instance_id": "a", "test_result": {}, "instruction": "x" * 70000})
    assert sniff(long_instruction.encode()[: formats.HEAD_BYTES], "output.jsonl")
    assert not sniff(b'{"instance_id": "a", "model_patch": "diff", "model_name_or_path": "m"}', "preds.jsonl")


# --------------------------------------------------------------------------- #
# The rules, on small histories
# --------------------------------------------------------------------------- #
def action(i: int, name: str, response: str | None = "r1", usage: tuple[int, int] | None = (100, 10),
           function: str | None = None, **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"id": i, "timestamp": f"2025-01-01T00:00:{i:02d}", "source": "agent", "action": name,
                             "args": {"command": "ls"}, **extra}
    if response is not None:
        model: dict[str, Any] = {"id": response}
        if usage is not None:
            model["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        event["tool_call_metadata"] = {"function_name": function or name, "tool_call_id": f"c{i}",
                                       "model_response": model}
    return event


def observation(i: int, cause: int | None, kind: str = "run", **extras: Any) -> dict[str, Any]:
    return {"id": i, "timestamp": f"2025-01-01T00:00:{i:02d}", "source": "agent", "cause": cause,
            "observation": kind, "content": "out", "extras": extras}


def line(history: list[Any], **top: Any) -> dict[str, Any]:
    return {"instance_id": "t1", "test_result": {"report": {"resolved": True}}, "history": history, **top}


def convert(obj: Any, **fields: str) -> dict[str, Any]:
    (item,) = FORMAT.read_objects([obj], "<test>", {**FIELDS, **fields})
    assert item.record is not None, (item.field, item.reason)
    return as_dict(item)


def rejection(obj: Any, **fields: str) -> Item:
    (item,) = FORMAT.read_objects([obj], "<test>", {**FIELDS, **fields})
    assert item.record is None and item.reason, item
    return item


def test_parallel_calls_of_one_response_count_its_tokens_once():
    rec = convert(line([
        action(1, "run", "r1", (100, 10)), action(2, "read", "r1", (100, 10), function="str_replace_editor"),
        observation(3, 1, exit_code=0), observation(4, 2, "read"),
        action(5, "finish", "r2", (50, 5)),
    ]))
    first, second = rec["steps"]
    assert (first["tokens_in"], first["tokens_out"]) == (150, 15)  # its response, and the finish's on the last step
    assert "tokens_in" not in second and second["metadata"]["tokens_with_step"] == 0  # a sibling: own share unknown
    assert first["parallel"] == second["parallel"] == "r1"  # one model response
    traces = load([Item(1, record=rec)])
    assert (traces.runs.tokens_in.iloc[0], traces.runs.tokens_out.iloc[0]) == (150, 15)


def test_parallel_sibling_is_unknown_with_tokens_with_step():
    rec = convert(line([action(1, "run", "r1", (100, 10)), action(2, "run", "r1", (100, 10)),
                        action(3, "run", "r2", (7, 1))]))
    steps = rec["steps"]
    assert "tokens_in" not in steps[1] and steps[1]["metadata"]["tokens_with_step"] == 0
    assert (steps[0]["tokens_in"], steps[2]["tokens_in"]) == (100, 7)
    assert [s.get("parallel") for s in steps] == ["r1", "r1", None]
    assert [s["observation"] for s in steps] == [None, None, None]  # never answered


def test_no_usage_is_unknown_not_zero():
    rec = convert(line([action(1, "run", response=None), observation(2, 1, exit_code=0)],
                       metrics={"accumulated_cost": 0.0, "costs": []}))
    assert "tokens_in" not in rec["steps"][0]
    row = load([Item(1, record=rec)]).runs.iloc[0]
    assert pd.isna(row.tokens_in) and pd.isna(row.tokens_out)
    assert row.cost_usd == 0.0  # no tokens were reported: the zero is the file's


def test_cost_kept_when_priced_and_unknown_when_a_sum_of_zeros():
    priced = convert(line([], metrics={"accumulated_cost": 0.25, "costs": [{"cost": 0.25}],
                                       "accumulated_token_usage": {"prompt_tokens": 9, "completion_tokens": 1}}))
    assert priced["cost_usd"] == 0.25 and priced["metadata"]["accumulated_prompt_tokens"] == 9
    unpriced = convert(line([], metrics={"accumulated_cost": 0.0, "costs": [],
                                         "accumulated_token_usage": {"prompt_tokens": 9, "completion_tokens": 1}}))
    assert "cost_usd" not in unpriced and unpriced["metadata"]["accumulated_cost"] == 0.0
    assert "cost_usd" not in convert(line([]))


def test_errors_from_error_observations_and_exit_codes():
    rec = convert(line([
        action(1, "run"), observation(2, 1, exit_code=2),  # older layout: extras.exit_code
        action(3, "run", "r2"), observation(4, 3, metadata={"exit_code": 0}),
        action(5, "edit", "r3"), observation(6, 5, "error"),
        observation(7, None, "error"),  # a call OpenHands refused: no action, no cause
        action(8, "run", "r4"), observation(9, 8, "user_rejected"),
    ]))
    obs = [s["observation"] for s in rec["steps"]]
    assert [o["status"] for o in obs] == ["error", "ok", "error", "error"]
    assert obs[0]["error"] == "exit code 2" and obs[2]["error"] == "out"
    assert rec["metadata"]["refused_calls"] == 1
    assert rec["steps"][0]["ended_at"] == "2025-01-01T00:00:02"
    assert load([Item(1, record=rec)]).runs.n_errors.iloc[0] == 3


def test_not_understood_entries_are_rejections_naming_them():
    assert rejection(line([action(1, "run"), "oops"])).field == "history[1]"
    item = rejection(line([action(1, "run"), {"id": 2, "action": "teleport", "source": "agent"}]))
    assert item.field == "history[1].action" and "teleport" in item.reason
    item = rejection(line([action(1, "run"), observation(2, 1, "hologram")]))
    assert item.field == "history[1].observation"
    item = rejection(line([{"id": 1, "source": "agent", "content": "?"}]))
    assert item.field == "history[0]" and "neither an action nor an observation" in item.reason
    item = rejection(line([action(1, "run"), observation(2, 1), observation(3, 1)]))
    assert item.field == "history[2].cause" and "second observation" in item.reason
    item = rejection(line([[{"action": "run"}, {"observation": "run"}]]))
    assert item.field == "history[0]"
    assert rejection(line([action(1, "run", args=[1])])).field == "history[0].args"


def test_an_unknown_action_with_tool_call_metadata_is_a_step():
    rec = convert(line([action(1, "new_tool_kind", function="fancy")]))
    assert rec["steps"][0]["tool"] == "fancy"


def test_run_fields_task_outcome_and_overrides():
    (item,) = FORMAT.read_objects([{"history": []}], "<test>", FIELDS)
    assert list(item.missing) == ["task_id", "outcome"] and as_dict(item)["run_id"] == "<test>:1"
    assert settle(item).field == "instance_id" and settle(item).reason.startswith("no task_id")
    (item,) = FORMAT.read_objects([line([], test_result={"git_patch": ""})], "<test>", FIELDS)
    assert item.missing["outcome"][0] == "test_result.report.resolved" and as_dict(item)["task_id"] == "t1"
    assert convert({"instance_id": 3, "report": {"resolved": False}, "history": []})["outcome"] is False
    rec = convert(line([], score=0.5, run="a", attempt=2), outcome="score", run_id="run", seed="attempt")
    assert (rec["outcome"], rec["run_id"], rec["seed"]) == (0.5, "a", 2)
    assert rejection(line([], attempt="2"), seed="attempt").reason.startswith("seed must be an integer")
    assert rejection(line([], test_result={"report": {"resolved": "yes"}})).reason.startswith("outcome must be")
    assert rejection([1]).reason.startswith("expected an OpenHands output line")


def test_a_run_without_steps_keeps_its_model_tokens_as_the_runs():
    rec = convert(line([action(1, "message", "r1", (30, 3)), action(2, "finish", "r2", (20, 2))]))
    assert rec["steps"] == [] and (rec["tokens_in"], rec["tokens_out"]) == (50, 5)
    row = load([Item(1, record=rec)]).runs.iloc[0]
    assert (row.n_steps, row.tokens_in, row.tokens_out) == (0, 50, 5)


def test_files_json_lines_arrays_and_malformed_lines(tmp_path):
    good = line([action(1, "run"), observation(2, 1, exit_code=0)])
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(good) + "\n\n{not json\n" + json.dumps({**good, "instance_id": "t2"}) + "\n")
    items = list(FORMAT.read_file(path, FIELDS))
    assert [(i.line, i.record is not None) for i in items] == [(1, True), (3, False), (4, True)]
    assert items[1].reason.startswith("malformed JSON")
    array = tmp_path / "runs.json"
    array.write_text(json.dumps([good, good]))
    assert [as_dict(i)["run_id"] for i in FORMAT.read_file(array, FIELDS)] == [f"{array}:t1"] * 2
    single = tmp_path / "one.json"
    single.write_text(json.dumps(good, indent=2))
    assert [as_dict(i)["task_id"] for i in FORMAT.read_file(single, FIELDS)] == ["t1"]
    stream = tmp_path / "django-1.json"
    stream.write_text(json.dumps(good["history"]))
    (item,) = FORMAT.read_file(stream, FIELDS)
    assert as_dict(item)["task_id"] == "django-1" and "event stream" in settle(item).reason


def test_in_memory_event_stream_is_one_run():
    (item,) = FORMAT.read_objects(copy.deepcopy(json.loads(STREAM.read_text())), "gui", FIELDS)
    assert as_dict(item)["run_id"] == "gui" and len(as_dict(item)["steps"]) == 4
    why = "no outcome: an OpenHands event stream records no verdict of an external check"
    assert item.missing == {"outcome": (None, why)}


@pytest.mark.parametrize("where", ["steps", "runs"])
def test_fixture_loads_through_the_record_decoder(where):
    traces = load(list(FORMAT.read_objects(evaluated([True, False, True]), "o", FIELDS)))
    assert len(traces.runs) == 3
    assert len(getattr(traces, where)) == (3 if where == "runs" else 22 + 32 + 49)


# --------------------------------------------------------------------------- #
# The OpenHands SDK (V1) history
# --------------------------------------------------------------------------- #
SDK = DATA / "sdk_openagentsafety_output.jsonl.gz"


def sdk_lines() -> list[dict[str, Any]]:
    with gzip.open(SDK, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_real_sdk_output_steps_errors_and_unknown_tokens():
    raw = sdk_lines()
    with gzip.open(SDK, "rb") as fh:
        assert sniff(fh.read(formats.HEAD_BYTES), SDK.name)
    calls, errors = [], []
    for line_ in raw:
        history = line_["history"]
        calls.append(sum(e["kind"] == "ActionEvent" and e["action"]["kind"] != "FinishAction" for e in history))
        errors.append(sum(e["kind"] == "ObservationEvent" and (e["observation"].get("metadata") or {}).get("exit_code")
                          not in (None, 0) for e in history))
    assert calls == [8, 9] and errors == [1, 8]
    # no report: rejected for the outcome; the file's own score can be mapped
    assert {settle(item).field for item in FORMAT.read_file(SDK, FIELDS)} == {"test_result.report.resolved"}
    items = list(FORMAT.read_file(SDK, {**FIELDS, "outcome": "test_result.final_score.result"}))
    traces = load(items)
    runs = traces.runs.set_index("task_id").loc[[line_["instance_id"] for line_ in raw]]
    assert list(runs.n_steps) == calls and list(runs.n_errors) == errors
    assert runs.tokens_in.isna().all() and runs.tokens_out.isna().all() and runs.cost_usd.isna().all()
    assert set(runs.model) == {"litellm_proxy/neulab/gpt-4o-2024-08-06"}
    first = as_dict(items[0])["steps"][0]
    event = raw[0]["history"][0]
    assert first["tool"] == "execute_bash" and first["args"]["command"] == event["action"]["command"]
    assert "kind" not in first["args"] and first["observation"]["type"] == "ExecuteBashObservation"
    assert as_dict(items[0])["metadata"]["events"] == {"finish": 1}
    failed = [s for s in items[1].record["steps"] if s["observation"]["status"] == "error"]
    assert {s["observation"]["error"] for s in failed} == {"exit code 1"}


def sdk_action(i: int, tool: str = "execute_bash", response: str = "r1", **extra: Any) -> dict[str, Any]:
    return {"kind": "ActionEvent", "id": f"a{i}", "source": "agent", "tool_name": tool, "tool_call_id": f"c{i}",
            "action": {"kind": "ExecuteBashAction", "command": "ls"}, "llm_response_id": response, **extra}


def sdk_obs(i: int, action_id: str | None, **observation: Any) -> dict[str, Any]:
    return {"kind": "ObservationEvent", "id": f"o{i}", "source": "environment", "action_id": action_id,
            "tool_call_id": None, "observation": {"kind": "ExecuteBashObservation", **observation}}


def test_sdk_pairing_errors_and_rejections():
    rec = convert(line([
        {"kind": "SystemPromptEvent", "id": "s", "source": "agent"},
        sdk_action(1), sdk_action(2, response="r1"),
        sdk_obs(3, "a2", is_error=True, output="boom"), sdk_obs(4, "a1", metadata={"exit_code": 0}),
        sdk_action(5, "str_replace_editor", "r2"),
        {"kind": "AgentErrorEvent", "id": "e", "source": "agent", "tool_name": "str_replace_editor",
         "tool_call_id": "c5", "error": "invalid path"},
        {"kind": "AgentErrorEvent", "id": "e2", "source": "agent", "tool_name": "x", "tool_call_id": "zz",
         "error": "unknown tool"},
        sdk_action(6, response="r3", action=None, tool_call={"arguments": '{"command": "pwd"}'}),
        {"kind": "UserRejectObservation", "id": "u", "action_id": "a6", "rejection_reason": "no"},
        {"kind": "MessageEvent", "id": "m", "source": "agent"},
    ]))
    steps = rec["steps"]
    assert [s["observation"]["status"] for s in steps] == ["ok", "error", "error", "error"]
    assert steps[1]["observation"]["error"] == "boom" and steps[2]["observation"]["error"] == "invalid path"
    assert steps[1]["metadata"]["parallel_with_step"] == 0 and steps[3]["args"] == {"command": "pwd"}
    assert rec["metadata"]["refused_calls"] == 1
    assert rec["metadata"]["events"] == {"SystemPromptEvent": 1, "MessageEvent": 1}
    assert all("tokens_in" not in s for s in steps)
    item = rejection(line([sdk_action(1), {"kind": "TeleportEvent", "id": "t"}]))
    assert item.field == "history[1].kind" and "TeleportEvent" in item.reason
    item = rejection(line([sdk_action(1), sdk_obs(2, "a1"), sdk_obs(3, "a1")]))
    assert item.field == "history[2].action_id"


def test_reported_totals_top_up_what_the_events_miss():
    usage = {"accumulated_token_usage": {"prompt_tokens": 1000, "completion_tokens": 90}}
    # a text-only reply (no tool_call_metadata) used tokens the events do not show
    rec = convert(line([action(1, "run", "r1", (100, 10)), action(2, "run", "r2", (200, 20)),
                        {"id": 3, "source": "agent", "action": "message", "args": {}}], metrics=usage))
    steps = rec["steps"]
    assert (steps[0]["tokens_in"], steps[1]["tokens_in"], steps[1]["tokens_out"]) == (100, 900, 80)
    assert rec["metadata"]["tokens_not_in_events"] == {"tokens_in": 700, "tokens_out": 60}
    row = load([Item(1, record=rec)]).runs.iloc[0]
    assert (row.tokens_in, row.tokens_out) == (1000, 90)
    # events without usage (the SDK's): the run's totals are known, each step's share is not
    rec = convert(line([sdk_action(1, response="a"), sdk_action(2, response="b")], metrics=usage))
    assert "tokens_in" not in rec["steps"][0] and rec["steps"][0]["metadata"]["tokens_with_step"] == 1
    row = load([Item(1, record=rec)]).runs.iloc[0]
    assert (row.tokens_in, row.tokens_out) == (1000, 90)
    # the totals agree with the events: nothing changes
    rec = convert(line([action(1, "run", "r1", (1000, 90))], metrics=usage))
    assert "tokens_not_in_events" not in rec["metadata"] and rec["steps"][0]["tokens_in"] == 1000
