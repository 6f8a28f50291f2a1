"""The "swe-agent" trace format (agentab.formats.swe_agent): SWE-agent .traj files, checked against real ones.

The real fixtures (tests/data/swe_agent/, README there) are counted here with plain json, not with the reader.
"""

from __future__ import annotations

import copy
import dataclasses
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
from agentab.formats.swe_agent import FORMAT, convert, sniff
from agentab.traces import _load

DATA = Path(__file__).parent / "data" / "swe_agent"
FUNCTION_CALLING = DATA / "6e44b9__sweagenttestrepo-1c2844.traj"
TEXT_ACTIONS = DATA / "swe-agent__test-repo-i1.traj"
REPLAY = DATA / "marshmallow-code__marshmallow-1867.traj"
DEMONSTRATION = DATA / "humanevalfix-python-0.traj"
REAL = (FUNCTION_CALLING, TEXT_ACTIONS, REPLAY, DEMONSTRATION)


def raw(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def read(path: Path, **fields: str) -> Item:
    (item,) = FORMAT.read_file(path, fields)
    return item


def record(path: Path, **fields: str) -> dict[str, Any]:
    """The file's trace record as a dict: a run the reader built in columns gives its ``to_record()``, without the
    fields it lacks (``Item.missing``)."""
    item = read(path, **fields)
    assert item.record is not None, (item.field, item.reason)
    if isinstance(item.record, dict):
        return item.record
    return {key: value for key, value in item.record.to_record().items() if key not in (item.missing or {})}


def rejection(doc: Any, **fields: str) -> Item:
    (item,) = FORMAT.read_objects([doc], "<test>", fields)
    assert item.record is None and item.reason, item
    return item


def decoded(*records: dict[str, Any]) -> agentab.Traces:
    """Validate converted records with the record decoder, an outcome joined as a results table would give it."""
    return agentab.load_traces([{**rec, "outcome": True} for rec in records])


@pytest.fixture
def registered(monkeypatch):
    """The registry with this format in it, before "openai" (whose sniffer also matches a 1.x .traj's
    history of ``role`` / ``tool_calls`` messages), as the lead registers it; tests must not depend on that."""
    every = {name: fmt for name, fmt in formats.available().items() if name != FORMAT.name}
    every = {"record": every.pop("record"), FORMAT.name: FORMAT, **every}
    monkeypatch.setattr(formats, "available", lambda: dict(every))
    # and .traj among the file endings a folder is read for (agentab.traces._load.SUFFIXES, the lead's)
    monkeypatch.setattr(_load, "SUFFIXES", {**_load.SUFFIXES, ".traj": "array", ".traj.gz": "array"})


# --------------------------------------------------------------------------- #
# Real files, hand-counted from the raw JSON
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_steps_tools_tokens_cost_against_the_raw_file(path):
    doc = raw(path)
    rec = record(path)
    entries = doc["trajectory"]
    assert len(rec["steps"]) == sum(1 for e in entries if e["action"].strip()) == len(entries)
    assert [s["observation"]["content"] for s in rec["steps"]] == [e["observation"] for e in entries]
    stats = doc["info"]["model_stats"]
    if stats["tokens_sent"] > 0:  # the two real runs: the run's totals; no step's own share is recorded
        assert (rec["tokens_in"], rec["tokens_out"]) == (stats["tokens_sent"], stats["tokens_received"])
        assert not any("tokens_in" in s or "tokens_out" in s for s in rec["steps"])
        assert rec["cost_usd"] == stats["instance_cost"]
    else:  # the replay (11 api calls) and the human demonstration (0): 0 tokens and $0 written; unknown, not 0
        assert stats["api_calls"] == (11 if path == REPLAY else 0) and stats["instance_cost"] == 0
        assert "tokens_in" not in rec["steps"][0] and "cost_usd" not in rec and "tokens_in" not in rec
    assert "outcome" not in rec  # not in a .traj: SWE-bench's report holds it
    assert rec["metadata"]["exit_status"] == doc["info"]["exit_status"] == "submitted"
    assert rec["metadata"]["api_calls"] == stats["api_calls"]
    runs = decoded(rec).runs
    assert runs.n_steps.iloc[0] == len(entries)
    expected_tokens = stats["tokens_sent"] + stats["tokens_received"] if stats["tokens_sent"] else None
    assert (None if pd.isna(runs.tokens.iloc[0]) else runs.tokens.iloc[0]) == expected_tokens
    assert pd.isna(runs.n_errors.iloc[0])  # no step shows an error and SWE-agent records no exit codes
    assert pd.isna(runs.latency_s.iloc[0])  # no wall-clock time in a .traj


def test_real_function_calling_tools_and_arguments_are_the_history_calls():
    doc = raw(FUNCTION_CALLING)
    calls = [item["tool_calls"][0] for item in doc["history"] if item.get("tool_calls")]
    steps = record(FUNCTION_CALLING)["steps"]
    assert len(calls) == 4 and len(steps) == 5  # SWE-agent does not put the final step (submit) in its history
    for step, call in zip(steps, calls):
        assert step["tool"] == call["function"]["name"]
        assert step["args"] == json.loads(call["function"]["arguments"])
        assert step["metadata"]["tool_call_id"] == call["id"]
    assert [s["tool"] for s in steps] == ["find_file", "open", "edit", "bash", "submit"]
    assert steps[4]["args"] == {"command": doc["trajectory"][4]["action"]}
    assert [s["metadata"]["execution_time_s"] for s in steps] == [e["execution_time"] for e in doc["trajectory"]]
    assert not any("tokens_with_step" in s["metadata"] for s in steps)  # the tokens are the run's totals
    rec = record(FUNCTION_CALLING)
    assert rec["task_id"] == doc["replay_config"]["problem_statement"]["id"] == "SWE-agent__test-repo-i1"
    assert rec["metadata"]["model"] == doc["replay_config"]["agent"]["model"]["name"] == "gpt-4o"
    assert rec["metadata"]["execution_time_s"] == pytest.approx(sum(e["execution_time"] for e in doc["trajectory"]))
    assert rec["terminal_state"]["files_modified"] == ["tests/missing_colon.py"]
    assert "diff --git a/tests/missing_colon.py b/tests/missing_colon.py" in doc["info"]["submission"]


def test_real_text_actions_use_the_first_word_and_the_file_name_as_task():
    doc = raw(TEXT_ACTIONS)
    rec = record(TEXT_ACTIONS)
    actions = [e["action"] for e in doc["trajectory"]]
    assert [s["tool"] for s in rec["steps"]] == [a.split()[0] for a in actions]
    assert [s["tool"] for s in rec["steps"]] == ["find_file", "open", "edit", "python", "submit"]
    assert [s["args"] for s in rec["steps"]] == [{"command": a} for a in actions]
    assert "replay_config" not in doc and rec["task_id"] == "swe-agent__test-repo-i1"
    assert rec["metadata"]["task_from"] == "file name"
    # 0.x: no execution_time, and info.model_stats.total_cost is the batch's running total, not read
    assert "execution_time_s" not in rec["metadata"] and rec["cost_usd"] == doc["info"]["model_stats"]["instance_cost"]
    demos = [h for h in doc["history"] if h.get("is_demo")]
    assert demos  # the demonstration in the history is not a step
    assert rec["run_id"] == TEXT_ACTIONS.as_posix()


def test_real_files_detected_by_suffix_and_by_content(registered):
    for path in REAL:
        head = path.read_bytes()[: formats.HEAD_BYTES]
        assert sniff(head, path.name) and sniff(head, "run.json") and sniff(head, path.name + ".gz")
        assert formats.detect(head, path.name) == formats.detect(head, "run.json") == "swe-agent"


@pytest.mark.parametrize("head, name", [
    (b'{"info": {"exit_status": "Submitted"}, "messages": [{"role": "system"}], "trajectory_format": "mini-1"}',
     "x.traj.json"),
    (b'{"info": {}, "messages": [], "trajectory_format": "mini-swe-agent-1.1"}', "x.traj"),
    (b'{"instance_id": "a", "history": [{"action": "run", "observation": "x"}], "metrics": {}}', "output.jsonl"),
    (b'{"run_id": "r1", "task_id": "t", "seed": 0, "outcome": true, "steps": []}', "runs.jsonl"),
    (b'{"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {}, "steps": []}', "trajectory.json"),
    (b'{"version": 2, "status": "success", "eval": {"task": "t"}, "samples": []}', "log.json"),
    (b'[{"trajectory": [{"action": "ls", "observation": ""}]}]', "runs.json"),
    (b'{"steps": [], "trajectory": [{"action": "ls", "observation": ""}]}', "runs.json"),
    (b"not json", "x.traj"),
])
def test_sniff_claims_no_other_shape(head, name):
    assert not sniff(head, name)


def test_format_example_is_one_run_with_a_step():
    assert sniff(FORMAT.example.encode(), "runs.json")
    rec = convert(json.loads(FORMAT.example), "r1", "astropy__astropy-12907")
    assert len(rec["steps"]) == 1 and rec["steps"][0]["tool"] == "ls"
    assert decoded(rec).runs.tokens.iloc[0] == 940


# --------------------------------------------------------------------------- #
# Rules on variants of the real file
# --------------------------------------------------------------------------- #
def variant(**info: Any) -> dict[str, Any]:
    doc = copy.deepcopy(raw(FUNCTION_CALLING))
    doc["info"].update(info)
    return doc


def test_timeout_and_not_run_entries_show_errors_others_no_status():
    doc = variant()
    doc["trajectory"][1]["observation"] = ("The command 'python long.py' was cancelled because it took more than 30 "
                                           "seconds. Please try a different command that completes more quickly.")
    doc["trajectory"][2].update(observation="", execution_time=0.0)  # re-asked about: not run
    doc["trajectory"][3].update(observation="")  # ran (0.29 s) with no output: no status
    rec = convert(doc, "r1")
    statuses = [s["observation"].get("status") for s in rec["steps"]]
    assert statuses == [None, "error", "error", None, None]
    assert "timeout" in rec["steps"][1]["observation"]["error"]
    assert "not run" in rec["steps"][2]["observation"]["error"]
    assert decoded(rec).runs.n_errors.iloc[0] == 2


def test_entries_without_action_are_not_steps_and_are_counted():
    doc = variant()
    doc["trajectory"].insert(2, {"action": "", "observation": "", "thought": "I think", "response": "I think",
                                 "execution_time": 0.0, "state": {}})
    rec = convert(doc, "r1")
    assert len(rec["steps"]) == 5 and rec["metadata"]["entries_without_action"] == 1
    assert rec["metadata"]["entries"] == 6
    assert [s["tool"] for s in rec["steps"]][:4] == ["find_file", "open", "edit", "bash"]  # pairing kept
    assert [s["index"] for s in rec["steps"]] == [0, 1, 2, 3, 4]


def test_unknown_tokens_and_cost_stay_missing_never_zero():
    no_stats = variant()
    del no_stats["info"]["model_stats"]
    rec = convert(no_stats, "r1")
    assert all("tokens_in" not in s for s in rec["steps"]) and "cost_usd" not in rec
    assert pd.isna(decoded(rec).runs.tokens.iloc[0])
    free = variant(model_stats={"instance_cost": 0, "tokens_sent": 500, "tokens_received": 20, "api_calls": 5})
    rec = convert(free, "r1")
    assert "cost_usd" not in rec and rec["tokens_in"] == 500 and "tokens_in" not in rec["steps"][0]
    nothing = variant(model_stats={"instance_cost": 0, "tokens_sent": 0, "tokens_received": 0, "api_calls": 0})
    nothing["trajectory"] = []
    rec = convert(nothing, "r1")
    assert rec["steps"] == [] and rec["tokens_in"] == 0 and rec["cost_usd"] == 0.0
    assert decoded(rec).runs.tokens.iloc[0] == 0  # no call made: a true zero


def test_submission_files_created_modified_deleted():
    patch = ("diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x\n"
             "diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n"
             "diff --git a/src/m.py b/src/m.py\nindex 1..2 100644\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n"
             "-new file mode here is text\n+y\n")
    state = convert(variant(submission=patch), "r1")["terminal_state"]
    assert state == {"files_created": ["new.py"], "files_modified": ["src/m.py"], "files_deleted": ["old.py"]}
    assert "terminal_state" not in convert(variant(submission=None), "r1")
    assert convert(variant(submission=""), "r1")["terminal_state"]["files_modified"] == []


def test_replay_config_as_json_text_and_retry_loop_metadata():
    doc = variant(best_attempt_idx=1, swe_agent_version="1.1.0")
    doc["replay_config"] = json.dumps(doc["replay_config"])
    doc["attempts"] = [{"trajectory": [], "info": {}}, {"trajectory": [], "info": {}}]
    rec = convert(doc, "r1")
    assert rec["task_id"] == "SWE-agent__test-repo-i1" and rec["metadata"]["model"] == "gpt-4o"
    assert rec["metadata"]["attempts"] == 2 and rec["metadata"]["best_attempt_idx"] == 1
    assert rec["metadata"]["harness"] == "SWE-agent 1.1.0"


def test_fields_read_dotted_paths_and_a_missing_path_rejects():
    doc = variant(resolved=True)
    rec = convert(doc, "r1", None, {"outcome": "info.resolved", "arm": "replay_config.agent.model.name"})
    assert rec["outcome"] is True and rec["arm"] == "gpt-4o"
    (item,) = FORMAT.read_objects([variant()], "<test>", {"outcome": "info.resolved"})
    why = "outcome: no `info.resolved` in the .traj (a .traj records no verdict: SWE-bench's evaluation report holds it)"
    assert item.missing == {"outcome": ("info.resolved", why)}
    assert "outcome" not in item.record and len(item.record["steps"]) == 5
    assert (settle(item).field, settle(item).reason) == item.missing["outcome"]
    item = rejection(variant(), outcome="info.exit_status")
    assert item.field == "info.exit_status" and "true/false or a number" in item.reason


@pytest.mark.parametrize("change, field, words", [
    (lambda d: d.__setitem__("trajectory", {"a": 1}), "trajectory", "expected a list"),
    (lambda d: d.pop("trajectory"), "trajectory", "only `history`"),
    (lambda d: (d.pop("trajectory"), d.pop("history"), d.__setitem__("attempts", [])), "trajectory",
     "before an attempt was chosen"),
    (lambda d: d["trajectory"].__setitem__(3, "ls"), "trajectory[3]", "expected an object"),
    (lambda d: d["trajectory"][3].__setitem__("action", None), "trajectory[3].action", "command text"),
    (lambda d: d["trajectory"][3].__setitem__("action", ["ls"]), "trajectory[3].action", "command text"),
    (lambda d: d["trajectory"][2].__setitem__("observation", {"x": 1}), "trajectory[2].observation",
     "expected text"),
    (lambda d: d["trajectory"][0].__setitem__("execution_time", -1), "trajectory[0].execution_time", ">= 0"),
    (lambda d: d["info"]["model_stats"].__setitem__("tokens_sent", "7141"), "info.model_stats.tokens_sent",
     "whole number"),
    (lambda d: d["info"]["model_stats"].__setitem__("instance_cost", -0.5), "info.model_stats.instance_cost",
     "dollars"),
    (lambda d: d.__setitem__("info", []), "info", "expected an object"),
    (lambda d: d.__setitem__("history", {}), "history", "expected a list"),
    (lambda d: d["history"].__setitem__(4, "tool output"), "history[4]", "expected an object"),
    (lambda d: d["history"][2].__setitem__("tool_calls", {"id": "c"}), "history[2].tool_calls", "expected a list"),
    (lambda d: d["history"][2]["tool_calls"][0]["function"].__setitem__("arguments", "{bad"),
     "trajectory[0].tool_calls[0].function.arguments", "not JSON"),
    (lambda d: d["history"][2]["tool_calls"][0]["function"].__setitem__("arguments", "[1]"),
     "trajectory[0].tool_calls[0].function.arguments", "expected an object"),
    (lambda d: d["history"][2]["tool_calls"][0]["function"].pop("name"),
     "trajectory[0].tool_calls[0].function.name", "function name"),
])
def test_rejections_name_the_entry(change, field, words):
    doc = variant()
    change(doc)
    item = rejection(doc)
    assert item.field == field and words in item.reason


def test_in_memory_documents_need_a_task():
    doc = variant()
    del doc["replay_config"]
    (item,) = FORMAT.read_objects([doc], "<test>", {})
    assert list(item.missing) == ["task_id", "outcome"] and "task_id" not in item.record
    assert settle(item).field == "replay_config.problem_statement.id" and "fields={'task_id'" in settle(item).reason
    assert rejection([1, 2]).reason.startswith("not a SWE-agent .traj")
    (ok,) = FORMAT.read_objects([doc], "<mem>", {"task_id": "environment"})
    assert ok.record["task_id"] == "main" and ok.record["run_id"] == "<mem>[1]" and list(ok.missing) == ["outcome"]
    # a mapped path the document lacks: the task is still absent, named by that path
    doc["info"]["resolved"] = False
    (item,) = FORMAT.read_objects([doc], "<mem>", {"task_id": "info.instance", "outcome": "info.resolved"})
    assert item.missing == {"task_id": ("info.instance", "task_id: no `info.instance` in the .traj")}


def test_not_json_is_one_rejection(tmp_path):
    path = tmp_path / "broken.traj"
    path.write_text('{"trajectory": [')
    item = read(path)
    assert item.record is None and "not JSON" in item.reason


# --------------------------------------------------------------------------- #
# Through load_traces (with the format registered here)
# --------------------------------------------------------------------------- #
def test_load_traces_folder_auto_detects_and_needs_an_outcome(tmp_path, registered):
    for path in REAL:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    with gzip.open(tmp_path / "extra.traj.gz", "wb") as fh:
        fh.write(json.dumps(variant()).encode())
    traces = agentab.load_traces(tmp_path, strict=False)
    assert traces.n_read == len(REAL) + 1 and len(traces.runs) == 0  # every run lacks its outcome, none is made up
    assert set(traces.rejected.field) == {"outcome"}
    assert {fmt for _, fmt in traces.formats} == {"swe-agent"}


def test_load_traces_with_an_outcome_in_the_file(tmp_path, registered):
    for k, resolved in enumerate((True, False)):
        doc = variant(resolved=resolved)
        (tmp_path / f"run{k}.traj").write_text(json.dumps(doc))
    traces = agentab.load_traces(tmp_path, format="swe-agent", fields={"outcome": "info.resolved"}, arm="a")
    runs = traces.runs.sort_values("run_id")
    assert runs.outcome.tolist() == [True, False]
    assert runs.n_steps.tolist() == [5, 5] and runs.tokens.tolist() == [7141 + 243] * 2
    assert runs.cost_usd.tolist() == [pytest.approx(0.01952)] * 2
    assert runs.files_modified.tolist() == [1, 1]
    assert traces.steps.tool.tolist()[:5] == ["find_file", "open", "edit", "bash", "submit"]


def test_registry_stand_in_matches_format_fields():
    assert dataclasses.replace(FORMAT).suffixes == (".traj",) and FORMAT.name == "swe-agent"
    assert FORMAT.read_file is not None and FORMAT.read_objects is not None
