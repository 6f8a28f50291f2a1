"""mini-SWE-agent trajectories (format "mini-swe-agent"): real v1 files, v2 files written by the real library.

The fixtures (tests/data/mini_swe_agent/, README there) are counted here with plain json and regexes, not
with the reader. The v2 objects built in this file follow mini-SWE-agent's docs/usage/output_files.md and its
models/utils/actions_text.py / actions_toolcall.py (usage and format errors, which the scripted models omit).
"""

from __future__ import annotations

import copy
import csv
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

import agentab
import agentab.formats
from agentab import load_traces
from agentab.formats._missing import settle
from agentab.formats.decode import Prepared
from agentab.formats.messages import OPENAI
from agentab.formats.mini_swe_agent import FORMAT

DATA = Path(__file__).parent / "data" / "mini_swe_agent"
FILES = sorted(DATA.glob("*__*.traj.json"))  # the real SWE-bench runs (v1)
SCRIPTED = sorted(DATA.glob("v2_*.traj.json"))  # mini-swe-agent 2.4.6 run with its scripted test models
#: task -> SWE-bench's "resolved" (from each instance's report.json, see the README)
REPORTS = {row["task_id"]: row["outcome"] == "true" for row in csv.DictReader((DATA / "outcomes.csv").open())}
REGISTERED = "mini-swe-agent" in agentab.formats.available()


def read(path: Path, fields: dict | None = None) -> list:
    return list(FORMAT.read_file(path, {**FORMAT.fields, **(fields or {})}))


def as_dict(item: agentab.formats.Item) -> dict:
    """The item's trace record as a dict: a run the reader built in columns gives its ``to_record()``, without the
    fields it lacks (``Item.missing``)."""
    rec = item.record
    if isinstance(rec, Prepared):
        rec = {key: value for key, value in rec.to_record().items() if key not in (item.missing or {})}
    return rec


def record(path: Path) -> dict:
    (item,) = read(path)
    assert item.record is not None, (item.field, item.reason)
    return as_dict(item)


def with_outcome(rec: dict) -> dict:
    """The record with its SWE-bench verdict joined, as an outcomes table would."""
    return {**rec, "outcome": REPORTS[rec["task_id"]]}


def hand_count(raw: dict) -> dict[str, Any]:
    """Tool calls, errors, tokens and cost of a v1 trajectory, counted from the raw JSON."""
    block = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
    msgs = raw["messages"]
    calls = errors = tin = tout = cached = 0
    cost = 0.0
    for i, msg in enumerate(msgs):
        if msg["role"] != "assistant":
            continue
        usage = msg["extra"]["response"]["usage"]
        tin += usage["prompt_tokens"]
        tout += usage["completion_tokens"]
        cached += (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        cost += msg["extra"].get("cost", usage.get("cost", 0.0))
        if len(block.findall(msg["content"])) == 1:
            calls += 1
            reply = msgs[i + 1]["content"]
            code = re.match(r"<returncode>(-?\d+)</returncode>", reply)
            errors += bool(code and code.group(1) != "0") or reply.startswith("The last command <command>")
    return {"calls": calls, "errors": errors, "tokens_in": tin, "tokens_out": tout, "cost": cost, "cached": cached,
            "model_calls": sum(m["role"] == "assistant" for m in msgs)}


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sniff_claims_the_real_files_which_openai_would_otherwise_take(path):
    head = path.read_bytes()[:65536]
    assert FORMAT.sniff(head, path.name)
    assert OPENAI.sniff(head, path.name)  # why mini-swe-agent must be tried before "openai" in detect()


def test_sniff_keys_on_the_signature_only():
    assert FORMAT.sniff(b'{"trajectory_format": "mini-swe-agent-1.1", "messages": []}', "x.json")
    assert FORMAT.sniff(b'{"info": {"mini_version": "2.0.0", "model_stats": {"api_calls": 1', "x.json")
    assert FORMAT.sniff(b'{\n "info": {\n  "exit_status": "Submitted",\n  "submission": "diff', "x.traj.json")
    others = [b'{"run_id": "r", "task_id": "t", "seed": 0, "outcome": true, "messages": [{"role": "user"}]}',
              b'{"environment": "swe_main", "trajectory": [], "info": {"model_stats": {"api_calls": 1}}}',
              b'{"info": {"model_stats": {"instance_cost": 1}, "swe_agent_version": "1.0"}}',
              b'[{"trajectory_format": "mini-swe-agent-1"}]', b'{"resourceSpans": []}']
    assert not any(FORMAT.sniff(head, "x.json") for head in others)
    fixtures = [p for p in (Path(__file__).parent / "data").rglob("*") if p.is_file() and DATA not in p.parents]
    for path in fixtures:
        head = path.read_bytes()[:65536]
        if path.suffix == ".gz":
            head = gzip.decompress(path.read_bytes())[:65536]
        assert not FORMAT.sniff(head, path.name), path


# --------------------------------------------------------------------------- #
# The real files against hand counts
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_file_matches_hand_counts(path):
    raw = json.loads(path.read_text())
    want = hand_count(raw)
    rec = record(path)
    steps = rec["steps"]
    assert len(steps) == want["calls"]
    assert all(s["tool"] == "bash" and set(s["args"]) == {"command"} for s in steps)
    assert sum(s["observation"].get("status") == "error" for s in steps) == want["errors"]
    assert sum(s["tokens_in"] for s in steps) == want["tokens_in"]
    assert sum(s["tokens_out"] for s in steps) == want["tokens_out"]
    assert sum(s["cost_usd"] for s in steps) == pytest.approx(want["cost"])
    assert sum(s["tokens_cached"] for s in steps) == want["cached"]
    usages = [m["extra"]["response"]["usage"] for m in raw["messages"] if m["role"] == "assistant"]
    reasoning = [(u.get("completion_tokens_details") or {}).get("reasoning_tokens") for u in usages]
    apart = sum(r for r, u in zip(reasoning, usages) if r is not None and r > u["completion_tokens"])
    assert rec["metadata"].get("tokens_reasoning_apart", 0) == apart  # Gemini's, above its completion tokens
    if apart:  # those calls' reasoning is not a part of their output: unknown there, and in the run's total
        assert "tokens_reasoning" not in steps[0] and "tokens_reasoning" not in rec
    assert (rec["tokens_in"], rec["tokens_out"]) == (want["tokens_in"], want["tokens_out"])  # every model call
    assert rec["cost_usd"] == raw["info"]["model_stats"]["instance_cost"]
    assert rec["metadata"]["format_errors"] == want["model_calls"] - want["calls"]
    assert rec["metadata"]["api_calls"] == raw["info"]["model_stats"]["api_calls"] == want["model_calls"]
    assert rec["task_id"] == raw["instance_id"] and rec["run_id"] == str(path)
    assert rec["metadata"]["model"] == raw["info"]["config"]["model"]["model_name"]
    assert "outcome" not in rec  # the verdict is in SWE-bench's report, not in the trajectory
    (item,) = FORMAT.read_file(path, FORMAT.fields)
    assert list(item.missing) == ["outcome"] and item.missing["outcome"][0] == "outcome"
    assert "SWE-bench's evaluation report" in settle(item).reason
    last = steps[-1]
    assert last["observation"] == {"content": raw["messages"][-1]["content"], "submission": True}
    assert last["args"]["command"].startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


def test_real_files_load_once_the_outcome_is_joined():
    runs = load_traces([with_outcome(record(p)) for p in FILES]).runs.set_index("task_id")
    for path in FILES:
        raw = json.loads(path.read_text())
        want = hand_count(raw)
        row = runs.loc[raw["instance_id"]]
        assert (row.n_steps, row.n_errors) == (want["calls"], want["errors"])
        assert row.tokens == want["tokens_in"] + want["tokens_out"]
        assert row.cost_usd == pytest.approx(raw["info"]["model_stats"]["instance_cost"])
        assert bool(row.outcome) is REPORTS[raw["instance_id"]]


def test_without_an_outcome_the_run_is_rejected_naming_it():
    traces = load_traces([record(FILES[0]), with_outcome(record(FILES[1]))], strict=False)
    assert len(traces.runs) == 1
    assert traces.rejected.loc[0, "field"] == "outcome"
    rec = record(FILES[0])
    mapped = {**json.loads(FILES[0].read_text()), "outcome": 1.0}
    (item,) = FORMAT.read_objects([mapped], "mem", FORMAT.fields)
    assert item.record["outcome"] == 1.0 and item.record["task_id"] == rec["task_id"]


def test_timeout_and_format_error_in_the_real_file():
    path = DATA / "matplotlib__matplotlib-25287.traj.json"
    raw = json.loads(path.read_text())
    steps = record(path)["steps"]
    timeouts = [s for s in steps if s["observation"].get("error") == "timeout"]
    assert len(timeouts) == 1 and "returncode" not in timeouts[0]["observation"]
    replies = [m["content"] for m in raw["messages"]]
    assert sum(r.startswith("Please always provide EXACTLY ONE action") for r in replies) == 1
    assert sum(r.startswith("The last command <command>") for r in replies) == 1


def test_gzip_file(tmp_path):
    path = tmp_path / "run.traj.json.gz"
    path.write_bytes(gzip.compress(FILES[1].read_bytes()))
    rec = record(path)
    assert rec["steps"] == record(FILES[1])["steps"]
    assert rec["run_id"] == str(path)


# --------------------------------------------------------------------------- #
# Unknown stays missing
# --------------------------------------------------------------------------- #
def v1(messages: list, instance_id: str | None = None, **info: Any) -> dict:
    base = {"exit_status": "Submitted", "submission": "diff", "model_stats": {"instance_cost": 0.03, "api_calls": 2},
            "mini_version": "1.15.0"}
    out = {"info": {**base, **info}, "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    if instance_id is not None:
        out["instance_id"] = instance_id
    return out


def said(text: str, usage: dict | None = None, **extra: Any) -> dict:
    out: dict[str, Any] = {"role": "assistant", "content": text, "extra": dict(extra)}
    if usage is not None:
        out["extra"]["response"] = {"usage": usage}
    return out


def user(text: str, **extra: Any) -> dict:
    return {"role": "user", "content": text, **({"extra": extra} if extra else {})}


START = [{"role": "system", "content": "You are ..."}, user("Please solve this issue: ...")]


def convert(traj: dict, name: str = "mem") -> Any:
    (item,) = FORMAT.read_objects([traj], name, FORMAT.fields)
    return item


def test_missing_usage_and_cost_stay_missing_never_zero():
    traj = v1([*START, said("```bash\nls\n```"), user("<returncode>0</returncode>\n<output>\na\n</output>"),
               said("```bash\ncat a\n```", {"prompt_tokens": 10, "completion_tokens": 2}),
               user("<returncode>2</returncode>\n<output>\nno\n</output>")],
              model_stats={"instance_cost": 0.0, "api_calls": 2}, instance_id="t1")
    rec = convert(traj).record
    first, second = rec["steps"]
    assert "tokens_in" not in first and "cost_usd" not in first and "tokens_in" not in rec
    assert (second["tokens_in"], second["tokens_out"]) == (10, 2)
    assert "cost_usd" not in rec and rec["metadata"]["instance_cost"] == 0.0
    assert second["observation"] == {"status": "error", "returncode": 2, "content": "no\n", "error": "returncode 2"}
    runs = load_traces([{**rec, "outcome": False}]).runs
    assert runs.tokens.isna().all() and runs.cost_usd.isna().all()


def test_a_format_error_call_counts_on_the_next_step_and_unknown_poisons():
    traj = v1([*START, said("two\n```bash\nls\n```\n```bash\npwd\n```", {"prompt_tokens": 5, "completion_tokens": 1}),
               user("Please always provide EXACTLY ONE action in triple backticks, found 2 actions."),
               said("```bash\nls\n```", {"prompt_tokens": 7, "completion_tokens": 3}),
               user("<returncode>0</returncode>\n<output>\n</output>"),
               said("no block", None), user("Please always provide EXACTLY ONE action")], instance_id="t")
    rec = convert(traj).record
    (step,) = rec["steps"]
    assert rec["metadata"]["format_errors"] == 2
    assert "tokens_in" not in step and "tokens_out" not in step  # the last call reports none: the sum is unknown
    traj["messages"][-2] = said("no block", {"prompt_tokens": 1, "completion_tokens": 1})
    (step,) = convert(traj).record["steps"]
    assert (step["tokens_in"], step["tokens_out"]) == (13, 5)


def test_a_run_without_steps_keeps_its_tokens_as_the_run_totals():
    traj = v1([*START, said("thinking", {"prompt_tokens": 4, "completion_tokens": 1}), user("Please always ...")],
              instance_id="t", exit_status="LimitsExceeded", submission="")
    rec = convert(traj).record
    assert rec["steps"] == [] and (rec["tokens_in"], rec["tokens_out"]) == (4, 1)
    assert load_traces([{**rec, "outcome": False}]).runs.loc[0, "tokens"] == 5
    assert rec["metadata"]["has_patch"] is False


def test_identity_defaults_and_mapping(tmp_path):
    path = tmp_path / "sympy__sympy-1.traj.json"
    raw = v1([*START])
    path.write_text(json.dumps(raw))
    rec = record(path)
    assert (rec["run_id"], rec["task_id"], rec["seed"]) == (str(path), "sympy__sympy-1", 0)
    assert rec["metadata"]["seed_assumed"] is True
    path.write_text(json.dumps({**raw, "trial": 3, "resolved": True}))
    (item,) = read(path, {"seed": "trial", "outcome": "resolved"})
    assert (as_dict(item)["seed"], as_dict(item)["outcome"]) == (3, True)
    assert "seed_assumed" not in as_dict(item)["metadata"]
    item = convert(v1([*START]))  # in memory, no instance id and no file name: the task is absent
    assert list(item.missing) == ["task_id", "outcome"] and "task_id" not in item.record
    assert settle(item).field == "instance_id" and "no file name to use" in settle(item).reason


# --------------------------------------------------------------------------- #
# Rejections name the entry
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("bad", "field"), [
    (user("Traceback: something else"), "messages[3].content"),
    ("not a message", "messages[3]"),
    ({"role": "critic", "content": "?"}, "messages[3].role"),
])
def test_an_entry_the_reader_does_not_understand_is_a_rejection_naming_it(bad, field):
    traj = v1([*START, said("```bash\nls\n```"), bad], instance_id="t", exit_status="LimitsExceeded")
    item = convert(traj)
    assert item.record is None and item.field == field


def test_bad_shapes_are_rejections():
    assert convert([1]).reason.startswith("expected a mini-swe-agent trajectory")
    assert convert({"info": {}, "messages": {}}).field == "messages"
    bad_usage = v1([*START, said("```bash\nls\n```", {"prompt_tokens": -1})], instance_id="t")
    item = convert(bad_usage)
    assert item.field == "messages[2].extra.response.usage.prompt_tokens"
    assert convert(v1([*START], instance_id="t", model_stats={"instance_cost": "1"})).field == \
        "info.model_stats.instance_cost"
    bad_cost = v1([*START, said("```bash\nls\n```", {"prompt_tokens": 1, "cost": -0.5})], instance_id="t")
    assert convert(bad_cost).field == "messages[2].extra.response.usage.cost"
    bad_regex = v1([*START], instance_id="t", config={"agent": {"action_regex": "(unclosed"}})
    assert convert(bad_regex).field == "info.config.agent.action_regex"
    two_groups = v1([*START, said("```bash\nls\n```", {"prompt_tokens": 1})], instance_id="t",
                    config={"agent": {"action_regex": "```(bash)\\n(.*?)\n```"}})
    item = convert(two_groups)  # a typed rejection, not a crash on findall's tuples
    assert item.field == "info.config.agent.action_regex" and "2 groups" in item.reason


def test_malformed_file(tmp_path):
    path = tmp_path / "x.traj.json"
    path.write_text('{"info": {"mini_version": "1.0"')
    (item,) = read(path)
    assert item.record is None and item.reason.startswith("malformed JSON")


# --------------------------------------------------------------------------- #
# v2 (trajectory_format mini-swe-agent-1.1): text mode and tool mode
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", SCRIPTED, ids=lambda p: p.name)
def test_v2_files_written_by_mini_swe_agent_match_hand_counts(path):
    raw = json.loads(path.read_text())
    assert FORMAT.sniff(path.read_bytes()[:65536], path.name) and OPENAI.sniff(path.read_bytes()[:65536], path.name)
    msgs = raw["messages"]
    actions = [a for m in msgs if m["role"] == "assistant" for a in m["extra"]["actions"]]
    replies = [m for m in msgs if m["role"] in ("user", "tool") and "returncode" in (m.get("extra") or {})]
    rec = record(path)
    steps = rec["steps"]
    assert [s["args"]["command"] for s in steps] == [a["command"] for a in actions]
    assert sum(s["observation"].get("status") == "error" for s in steps) == sum(
        m["extra"]["returncode"] != 0 for m in replies)
    assert sum(s.get("cost_usd", 0) for s in steps) == pytest.approx(
        sum(m["extra"]["cost"] for m in msgs if m["role"] == "assistant"))
    assert rec["cost_usd"] == raw["info"]["model_stats"]["instance_cost"]
    assert not any("tokens_in" in s or "tokens_out" in s for s in steps)  # the scripted models report no usage
    assert msgs[-1]["role"] == "exit" and steps[-1]["observation"]["submission"] is True
    assert steps[-1]["observation"]["status"] == "ok"
    runs = load_traces([{**rec, "outcome": True}]).runs
    assert runs.loc[0, "n_steps"] == len(actions) and runs.tokens.isna().all()
    assert [s["ended_at"] for s in steps[:-1]] == [m["extra"]["timestamp"] for m in replies]
    assert "ended_at" not in steps[-1]  # the submission is not a reply with a timestamp


def test_v2_scripted_timeout_and_parallel_calls():
    text = record(DATA / "v2_text_scripted.traj.json")["steps"]
    timeout = text[2]["observation"]
    assert (timeout["status"], timeout["returncode"]) == ("error", -1) and "timed out" in timeout["error"]
    tool = record(DATA / "v2_tool_scripted.traj.json")["steps"]
    assert [s["metadata"]["call_id"] for s in tool] == ["call_1", "call_2", "call_3"]
    assert tool[0]["metadata"]["message"] == tool[1]["metadata"]["message"]  # one response, two calls
    assert "cost_usd" in tool[0] and "cost_usd" not in tool[1]
    assert tool[0]["parallel"] == tool[1]["parallel"] == tool[0]["metadata"]["message"] and "parallel" not in tool[2]
    assert tool[1]["observation"] == {"status": "error", "returncode": 1, "content": "", "error": "returncode 1"}


def v2(messages: list, **info: Any) -> dict:
    base = {"model_stats": {"instance_cost": 0.05, "api_calls": 3}, "mini_version": "2.0.0",
            "exit_status": "Submitted", "submission": "diff --git a/f b/f", "config": {
                "model": {"model_name": "anthropic/claude-sonnet-4-5"},
                "model_type": "minisweagent.models.litellm_model.LitellmModel"}}
    return {"info": {**base, **info}, "messages": messages, "trajectory_format": "mini-swe-agent-1.1",
            "instance_id": "o__r-1"}


def reply(code: int, out: str, stamp: float, role: str = "user", **more: Any) -> dict:
    msg = {"role": role, "content": f"<returncode>{code}</returncode>\n<output>\n{out}</output>",
           "extra": {"raw_output": out, "returncode": code, "timestamp": stamp, "exception_info": "", **more}}
    return msg


EXIT = {"role": "exit", "content": "diff --git a/f b/f",
        "extra": {"exit_status": "Submitted", "submission": "diff --git a/f b/f"}}


def test_v2_text_mode():
    usage = {"prompt_tokens": 100, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 60}}
    traj = v2([*START,
               said("```mswea_bash_command\nls\n```", usage, actions=[{"command": "ls"}], cost=0.01,
                    timestamp=1706000000.0),
               reply(0, "a.py\n", 1706000001.0),
               {"role": "user", "content": "Please always provide EXACTLY ONE action", "extra": {
                   "interrupt_type": "FormatError", "cost": 0.02, "response": {"usage": usage}}},
               said("submit", usage, actions=[{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}],
                    cost=0.02, timestamp=1706000003.0),
               EXIT])
    rec = convert(traj).record
    first, last = rec["steps"]
    assert first["observation"] == {"status": "ok", "returncode": 0, "content": "a.py\n"}
    assert (first["started_at"], first["ended_at"]) == (1706000000.0, 1706000001.0)
    assert (first["tokens_in"], first["tokens_cached"], first["cost_usd"]) == (100, 60, 0.01)
    assert (last["tokens_in"], last["tokens_cached"], last["cost_usd"]) == (200, 120, pytest.approx(0.04))
    assert (rec["tokens_in"], rec["tokens_out"], rec["tokens_cached"]) == (300, 27, 180)  # the format error's too
    assert last["observation"] == {"status": "ok", "content": "diff --git a/f b/f", "submission": True}
    assert rec["metadata"]["format_errors"] == 1 and rec["metadata"]["model"] == "anthropic/claude-sonnet-4-5"
    assert load_traces([{**rec, "outcome": True}]).runs.loc[0, "n_steps"] == 2


def test_v2_tool_mode_with_two_calls_in_one_response():
    calls = [{"command": "ls", "tool_call_id": "c1"}, {"command": "sleep 99", "tool_call_id": "c2"}]
    traj = v2([*START,
               said("", {"prompt_tokens": 50, "completion_tokens": 5}, actions=calls, cost=0.01, timestamp=10.0),
               reply(0, "a\n", 11.0, role="tool", ),
               reply(-1, "", 12.0, role="tool", exception_info="timed out after 60s")],
              exit_status="LimitsExceeded", submission="")
    traj["messages"][3]["tool_call_id"] = "c1"
    traj["messages"][4]["tool_call_id"] = "c2"
    rec = convert(traj).record
    a, b = rec["steps"]
    assert (a["metadata"]["call_id"], b["metadata"]["call_id"]) == ("c1", "c2")
    assert a["tokens_in"] == 50 and "tokens_in" not in b and b["metadata"]["tokens_with_step"] == 0
    assert b["observation"]["status"] == "error" and b["observation"]["error"] == "timed out after 60s"
    runs = load_traces([{**rec, "outcome": False}]).runs
    assert (runs.loc[0, "n_errors"], runs.loc[0, "tokens"]) == (1, 55)
    wrong = copy.deepcopy(traj)
    wrong["messages"][4]["tool_call_id"] = "c9"
    assert convert(wrong).field == "messages[4].tool_call_id"


@pytest.mark.skipif(not REGISTERED, reason="the lead registers the format in agentab.formats")
def test_registered_and_detected():
    assert agentab.formats.detect(FILES[0].read_bytes()[:65536], FILES[0].name) == "mini-swe-agent"
    traces = load_traces(DATA, strict=False)
    assert len(traces.rejected) == len(FILES) + len(SCRIPTED) and set(traces.rejected.field) == {"outcome"}


def test_a_value_json_cannot_encode_is_a_rejection_quoting_it():
    # the shared describe (formats._base) quotes any value; the reader's own copy raised TypeError here
    from agentab.formats.mini_swe_agent import FORMAT as MINI

    traj = json.loads(FILES[0].read_text())
    traj["instance_id"] = object()
    (item,) = MINI.read_objects([traj], "<records>", MINI.fields)
    assert item.record is None and item.field == "instance_id" and "got object" in item.reason
