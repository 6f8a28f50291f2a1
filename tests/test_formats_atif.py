"""Harbor's ATIF trajectories (format "atif", agentab.formats.atif): real trajectories from Harbor's tests/golden.

The fixtures (tests/data/atif/, see its README) are Harbor's own golden ATIF files, laid out as a Harbor job
writes them (``<task>__<7 characters>/agent/trajectory.json``). No real ``result.json`` was found, so the tests
that need a verdict write one beside a copy, in the shape of Harbor's ``TrialResult``. Expected values are
counted from the raw JSON with plain ``json``, not with the reader.
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agentab
from agentab import formats
from agentab.formats import Item
from agentab.formats._missing import settle
from agentab.formats.atif import DEFAULTS, FORMAT, VERSIONS
from agentab.formats.decode import Prepared
from agentab.formats.record import TOKENS_WITH_STEP

DATA = Path(__file__).parent / "data" / "atif"
SUMMARIZED = DATA / "hello-world__Summ1Ab" / "agent" / "trajectory.json"
LINEAR = DATA / "hello-world__Linear2" / "agent" / "trajectory.json"
BAD_JSON = DATA / "hello-world__BadJso3" / "agent" / "trajectory.json"
TIMEOUT = DATA / "hello-world__Timeou4" / "agent" / "trajectory.json"
OPENHANDS = DATA / "hello-world__OpenHa5" / "agent" / "trajectory.json"
NO_FUNCTIONS = DATA / "hello-world__NoFunc6" / "agent" / "trajectory.json"


def raw(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def items(path: Path, **fields: str) -> list[Item]:
    """The reader's items, each record as a dict: a run built in columns (the fast path) gives its ``to_record()``."""
    return [replace(item, record=item.record.to_record()) if isinstance(item.record, Prepared) else item
            for item in FORMAT.read_file(path, {**DEFAULTS, **fields})]


def record_of(path: Path, **fields: str) -> dict[str, Any]:
    (item,) = items(path, **fields)
    assert item.record is not None, (item.field, item.reason)
    return item.record


def rejection_of(path: Path, **fields: str) -> Item:
    (item,) = items(path, **fields)
    assert item.record is None and item.reason, item
    return item


def lacking_of(path: Path, key: str, **fields: str) -> Item:
    """The rejection the loader gives a run that lacks ``key`` (and only it) when nothing fills it."""
    (item,) = items(path, **fields)
    assert item.record is not None and list(item.missing) == [key] and key not in item.record, item
    assert isinstance(item.record["steps"], list)
    settled = settle(item)
    assert settled.record is None and settled.reason
    return settled


def load(records: list[dict[str, Any]]) -> agentab.Traces:
    """Validate converted records with agentab's record decoder (what every format ends in)."""
    return agentab.load_traces(records)


def trial_result(task: str, trial: str, reward: Any = 1.0, **extra: Any) -> dict[str, Any]:
    """A Harbor TrialResult (harbor.models.trial.result) as result.json holds it."""
    out = {
        "id": "0b6f7c1e-4a43-4d55-9a55-0d8d4c9f1e20", "task_name": task, "trial_name": trial,
        "trial_uri": f"file:///jobs/j1/{trial}", "task_id": {"path": f"tasks/{task}"}, "source": "examples",
        "task_checksum": "abc123", "config": {"trial_name": trial, "job_id": "j1"},
        "agent_info": {"name": "terminus-2", "version": "2.0.0", "model_info": {"name": "gpt-4o", "provider": "openai"}},
        "agent_result": {"n_input_tokens": 100, "n_cache_tokens": 0, "n_output_tokens": 10, "cost_usd": 0.01},
        "verifier_result": {"rewards": {"reward": reward}} if reward is not None else None,
        "exception_info": None,
        "started_at": "2025-11-01T10:00:00Z", "finished_at": "2025-11-01T10:02:00Z",
        "agent_execution": {"started_at": "2025-11-01T10:00:10Z", "finished_at": "2025-11-01T10:01:40.5Z"},
    }
    out.update(extra)
    return out


def trial_copy(tmp_path: Path, source: Path, result: dict[str, Any] | None) -> Path:
    """A copy of a fixture's trial folder, with ``result`` as its result.json; the copied trajectory.json."""
    trial = source.parent.parent
    target = tmp_path / trial.name
    shutil.copytree(trial, target)
    if result is not None:
        (target / "result.json").write_text(json.dumps(result))
    return target / "agent" / "trajectory.json"


def calls_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for s in doc["steps"] if not s.get("is_copied_context") for c in s.get("tool_calls") or []]


def model_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in doc["steps"] if s["source"] == "agent" and not s.get("is_copied_context")]


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
def test_sniff_claims_every_fixture_and_no_other_format_does():
    for path in sorted(DATA.rglob("*.json")):
        head = path.read_bytes()[:65536]
        assert FORMAT.sniff(head, path.name), path
        others = [f.name for f in formats.available().values() if f.name != "atif" and f.sniff(head, path.name)]
        assert others == [], (path, others)


@pytest.mark.parametrize("head", [
    b'{"run_id": "r1", "task_id": "t", "seed": 0, "steps": [], "outcome": true}',
    b'{"schema_version": 1, "task_name": "t", "trial_name": "t__abcdefg"}',  # no task_checksum: not Harbor's
    b'[{"schema_version": "ATIF-v1.5", "agent": {}, "steps": []}]',
    b'{"messages": [{"role": "user", "content": "\\"schema_version\\": \\"ATIF-v1.5\\""}]}',
])
def test_sniff_rejects_other_shapes(head):
    assert not FORMAT.sniff(head, "x.json")


# --------------------------------------------------------------------------- #
# The real fixtures, against counts from the raw JSON
# --------------------------------------------------------------------------- #
def test_summarized_run_counts_match_the_raw_file(tmp_path):
    doc = raw(SUMMARIZED)
    path = trial_copy(tmp_path, SUMMARIZED, trial_result("hello-world", "hello-world__Summ1Ab"))
    rec = record_of(path)
    calls = calls_of(doc)
    assert [s["tool"] for s in rec["steps"]] == [c["function_name"] for c in calls]
    assert [s["args"] for s in rec["steps"]] == [c["arguments"] for c in calls]
    assert len(rec["steps"]) == 7
    # every model call of the root, plus the three summarization sub-agents (their non-copied agent steps)
    subs = [raw(SUMMARIZED.parent / f"trajectory.summarization-1-{k}.json") for k in ("summary", "questions", "answers")]
    counted = model_steps(doc) + [s for sub in subs for s in model_steps(sub)]
    tokens_in = sum(s["metrics"]["prompt_tokens"] for s in counted)
    tokens_out = sum(s["metrics"]["completion_tokens"] for s in counted)
    assert (tokens_in, tokens_out) == (doc["final_metrics"]["total_prompt_tokens"],
                                       doc["final_metrics"]["total_completion_tokens"]) == (7802, 1030)
    assert (rec["tokens_in"], rec["tokens_out"]) == (tokens_in, tokens_out)  # the run's totals, every model call
    cached = [s["metrics"].get("cached_tokens") for s in counted]
    if None not in cached:
        assert rec["tokens_cached"] == sum(cached) == doc["final_metrics"]["total_cached_tokens"]
    runs = load([rec]).runs
    assert runs.loc[0, "tokens"] == tokens_in + tokens_out
    assert runs.loc[0, "cost_usd"] == pytest.approx(doc["final_metrics"]["total_cost_usd"])
    assert runs.loc[0, "outcome"] == 1.0
    assert runs.loc[0, "task_id"] == "hello-world" and runs.loc[0, "run_id"] == "hello-world__Summ1Ab"
    assert runs.loc[0, "latency_s"] == pytest.approx(90.5)
    assert runs.loc[0, "model"] == "openai/gpt-4o" and runs.loc[0, "harness"] == "terminus-2"
    assert pd_isna(runs.loc[0, "n_errors"])  # ATIF records no tool errors: unknown, not 0
    assert [r["found"] for r in rec["metadata"]["subagents"]] == [True, True, True]


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_terminus_results_without_call_ids_are_the_calls_observations(tmp_path):
    doc = raw(SUMMARIZED)
    rec = record_of(trial_copy(tmp_path, SUMMARIZED, trial_result("hello-world", "t__abcdefg")))
    step = doc["steps"][1]
    assert step["observation"]["results"][0].get("source_call_id") is None
    assert rec["steps"][0]["observation"] == {"content": step["observation"]["results"][0]["content"]}
    assert rec["steps"][0]["metadata"]["tool_call_id"] == step["tool_calls"][0]["tool_call_id"]
    assert rec["steps"][0]["tokens_in"] == step["metrics"]["prompt_tokens"]
    assert rec["steps"][0]["cost_usd"] == step["metrics"]["cost_usd"]
    if "cached_tokens" in step["metrics"]:
        assert rec["steps"][0]["tokens_cached"] == step["metrics"]["cached_tokens"]


def test_openhands_results_matched_by_source_call_id(tmp_path):
    doc = raw(OPENHANDS)
    rec = record_of(trial_copy(tmp_path, OPENHANDS, trial_result("hello-world", "hello-world__OpenHa5", 0.0)))
    calls = calls_of(doc)
    assert [s["tool"] for s in rec["steps"]] == [c["function_name"] for c in calls] == ["str_replace_editor", "finish"]
    answered = {r["source_call_id"]: r["content"] for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])}
    assert rec["steps"][0]["observation"] == {"content": answered["call_fake_1"]}
    assert rec["steps"][1]["observation"] is None  # `finish` was never answered
    runs = load([rec]).runs
    assert runs.loc[0, "tokens"] == sum(s["metrics"]["prompt_tokens"] + s["metrics"]["completion_tokens"]
                                        for s in model_steps(doc)) == 300
    assert runs.loc[0, "outcome"] == 0.0


def test_invalid_json_step_is_listed_and_its_tokens_carried(tmp_path):
    doc = raw(BAD_JSON)
    rec = record_of(trial_copy(tmp_path, BAD_JSON, trial_result("hello-world", "hello-world__BadJso3")))
    assert len(rec["steps"]) == len(calls_of(doc)) == 3
    assert rec["metadata"]["observations_without_tool_call"] == ["steps[1]"]
    first = doc["steps"][1]["metrics"], doc["steps"][2]["metrics"]
    assert rec["steps"][0]["tokens_in"] == first[0]["prompt_tokens"] + first[1]["prompt_tokens"]
    total = sum(s["metrics"]["prompt_tokens"] + s["metrics"]["completion_tokens"] for s in model_steps(doc))
    assert load([rec]).runs.loc[0, "tokens"] == total == 2617


def test_linear_history_run_has_text_actions_only_and_is_rejected(tmp_path):
    root, cont = raw(LINEAR), raw(LINEAR.parent / "trajectory.cont-1.json")
    assert calls_of(root) == calls_of(cont) == []  # this golden run wrote its commands in the message text
    untooled = [s for d in (root, cont) for s in model_steps(d) if (s.get("observation") or {}).get("results")]
    path = trial_copy(tmp_path, LINEAR, trial_result("hello-world", "hello-world__Linear2"))
    item = rejection_of(path)
    assert item.field == "steps[1].observation" and f"({len(untooled)} such steps)" in item.reason
    assert len(untooled) == 7
    # the continuation file read on its own is part of the run, not a run
    assert items(path.parent / "trajectory.cont-1.json") == []


def test_continuation_is_one_run_and_a_missing_subagent_leaves_tokens_unknown(tmp_path):
    path = trial_copy(tmp_path, LINEAR, trial_result("hello-world", "hello-world__Linear2"))
    root, cont = raw(path), raw(path.parent / "trajectory.cont-1.json")
    call = {"tool_call_id": "c1", "function_name": "bash_command", "arguments": {"keystrokes": "ls\n"}}
    root["steps"][1]["tool_calls"] = [call]
    cont["steps"][4]["tool_calls"] = [dict(call, tool_call_id="c2")]
    path.write_text(json.dumps(root))
    (path.parent / "trajectory.cont-1.json").write_text(json.dumps(cont))
    rec = record_of(path)
    assert rec["metadata"]["continuations"] == ["trajectory.cont-1.json:"]
    assert [s["metadata"]["tool_call_id"] for s in rec["steps"]] == ["c1", "c2"]
    # the summarization sub-agents it refers to are not beside it: their tokens are unknown, not 0
    assert [r["found"] for r in rec["metadata"]["subagents"]] == [False, False, False]
    runs = load([rec]).runs
    assert pd_isna(runs.loc[0, "tokens"])
    assert rec["steps"][0]["tokens_in"] == root["steps"][1]["metrics"]["prompt_tokens"]
    assert runs.loc[0, "cost_usd"] == pytest.approx(cont["final_metrics"]["total_cost_usd"])
    (path.parent / "trajectory.cont-1.json").unlink()
    assert rejection_of(path).field == "continued_trajectory_ref"


def test_a_part_file_without_its_trajectory_is_read_as_a_run(tmp_path):
    part = tmp_path / "hello-world__Summ1Ab" / "agent" / "trajectory.summarization-1-answers.json"
    part.parent.mkdir(parents=True)
    shutil.copy(SUMMARIZED.parent / part.name, part)
    item = lacking_of(part, "outcome")  # read (not skipped): a run of its own, with no result.json
    assert item.field == "outcome"


def test_text_actions_without_tool_calls_are_rejected_not_zero_steps():
    item = rejection_of(NO_FUNCTIONS)
    assert item.field == "steps[2].observation"
    assert "no tool call" in item.reason


def test_no_result_json_is_a_rejection_not_a_made_up_outcome():
    item = lacking_of(TIMEOUT, "outcome")
    assert len(record_of(TIMEOUT, outcome="agent.name")["steps"]) > 0  # the run itself is read whole
    assert item.field == "outcome" and "result.json" in item.reason


def test_whole_job_folder_with_results(tmp_path):
    for source in (SUMMARIZED, BAD_JSON, TIMEOUT, OPENHANDS):
        trial = source.parent.parent.name
        trial_copy(tmp_path, source, trial_result("hello-world", trial, 1.0 if "Ti" not in trial else 0.0))
    found = [item for p in sorted(tmp_path.rglob("*.json")) for item in items(p)]
    assert all(item.record is not None for item in found), [(i.field, i.reason) for i in found]
    runs = load([item.record for item in found]).runs
    assert sorted(runs["run_id"]) == sorted(p.parent.parent.name for p in (SUMMARIZED, BAD_JSON, TIMEOUT, OPENHANDS))
    assert runs["n_steps"].sum() == sum(len(calls_of(raw(p))) for p in (SUMMARIZED, BAD_JSON, TIMEOUT, OPENHANDS))
    assert runs["seed"].nunique() == 4


def test_a_named_load_leaves_companion_files_unopened_with_the_same_runs(tmp_path, monkeypatch):
    for source in (SUMMARIZED, BAD_JSON, TIMEOUT, OPENHANDS):
        trial = source.parent.parent.name
        trial_copy(tmp_path, source, trial_result("hello-world", trial, 1.0 if "Ti" not in trial else 0.0))
        (tmp_path / trial / "config.json").write_text("{}")
    multi = tmp_path / "task-a__abcdefg"  # a multi-step trial: steps/<name>/agent/trajectory.json
    (multi / "steps" / "build" / "agent").mkdir(parents=True)
    shutil.copy(TIMEOUT, multi / "steps" / "build" / "agent" / "trajectory.json")
    (multi / "result.json").write_text(json.dumps(trial_result(
        "task-a", "task-a__abcdefg", reward=None,
        step_results=[{"step_name": "build", "verifier_result": {"rewards": {"reward": 0.25}}}])))
    alone = tmp_path / "lonely__zzzzzzz"  # a result.json with no trajectory: still read (a rejection)
    alone.mkdir()
    (alone / "result.json").write_text(json.dumps(trial_result("lonely", "lonely__zzzzzzz")))
    opened = []
    read_file = FORMAT.read_file
    every = dict(formats.available())
    monkeypatch.setattr(formats, "get", lambda name: every[name])
    every["atif"] = replace(FORMAT, read_file=lambda path, fields: opened.append(path.name) or read_file(path, fields))
    named = agentab.load_traces(tmp_path, format="atif", strict=False)
    assert sorted(opened) == ["result.json", *["trajectory.json"] * 5]  # the lonely trial's result.json only
    every["atif"] = replace(every["atif"], companions=None)  # every file opened, each companion giving no run
    opened.clear()
    every_file = agentab.load_traces(tmp_path, format="atif", strict=False)
    assert len(opened) == len(list(tmp_path.rglob("*.json")))
    assert named.runs.drop(columns="source").equals(every_file.runs.drop(columns="source"))
    assert named.steps.equals(every_file.steps) and len(named.runs) == 5
    assert list(named.rejected["field"]) == list(every_file.rejected["field"]) == ["agent/trajectory.json"]
    assert [Path(s).name for s in named.sources].count("result.json") == 1
    assert [Path(s).name for s in every_file.sources].count("config.json") == 4
    parts = [str(p) for p in sorted(tmp_path.rglob("*.json"))]
    assert all("cont-" not in p and "summarization" not in p for p in FORMAT.companions(parts))


# --------------------------------------------------------------------------- #
# result.json
# --------------------------------------------------------------------------- #
def test_reward_rules(tmp_path):
    path = trial_copy(tmp_path, TIMEOUT, trial_result("hello-world", "x__abcdefg", reward=None,
                                                      exception_info={"exception_type": "AgentTimeoutError",
                                                                      "exception_message": "timed out"}))
    item = lacking_of(path, "outcome")
    assert item.field == "result.json.verifier_result" and "AgentTimeoutError" in item.reason
    result = trial_result("hello-world", "x__abcdefg")
    result["verifier_result"] = {"rewards": {"pass": 1, "style": 0.5}}
    (path.parent.parent / "result.json").write_text(json.dumps(result))
    assert "several rewards" in rejection_of(path).reason
    assert record_of(path, outcome="result.verifier_result.rewards.style")["outcome"] == 0.5
    result["verifier_result"] = {"rewards": {"pass": 1}}
    (path.parent.parent / "result.json").write_text(json.dumps(result))
    assert record_of(path)["outcome"] == 1.0
    (path.parent.parent / "result.json").write_text("{not json")
    assert rejection_of(path).field == "result.json"


def test_task_from_folder_and_fields(tmp_path):
    doc = raw(TIMEOUT)
    doc["extra"] = {"arm": "v2", "reward": True}
    plain = tmp_path / "runs" / "trajectory.json"
    plain.parent.mkdir()
    plain.write_text(json.dumps(doc))
    assert lacking_of(plain, "task_id", outcome="extra.reward").field == "task_id"
    rec = record_of(plain, outcome="extra.reward", task_id="agent.name", arm="extra.arm", seed="steps.0.step_id")
    assert (rec["task_id"], rec["arm"], rec["seed"], rec["outcome"]) == ("terminus-2", "v2", 1, True)
    assert rec["run_id"] == doc["session_id"]
    assert lacking_of(plain, "outcome", outcome="extra.nope", task_id="agent.name").field == "extra.nope"
    assert rejection_of(plain, outcome="extra.reward", task_id="agent.name", arm="extra.nope").field == "extra.nope"
    # a run id the user maps to a path that is not there: absent, not the rules' fallback; the seed with it
    (item,) = items(plain, outcome="extra.reward", task_id="agent.name", run_id="extra.run")
    assert list(item.missing) == ["run_id", "seed"] and "run_id" not in item.record
    assert settle(item).field == "extra.run"


def test_multi_step_trial_reads_its_step_result(tmp_path):
    trial = tmp_path / "task-a__abcdefg"
    agent = trial / "steps" / "build" / "agent"
    agent.mkdir(parents=True)
    shutil.copy(TIMEOUT, agent / "trajectory.json")
    result = trial_result("task-a", "task-a__abcdefg", reward=None,
                          step_results=[{"step_name": "build", "verifier_result": {"rewards": {"reward": 0.25}}}])
    (trial / "result.json").write_text(json.dumps(result))
    rec = record_of(agent / "trajectory.json")
    assert (rec["run_id"], rec["task_id"], rec["outcome"]) == ("task-a__abcdefg:build", "task-a", 0.25)


def test_bookkeeping_files_give_no_run(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps(trial_result("t", "t__abcdefg")))
    (tmp_path / "config.json").write_text("{}")
    assert FORMAT.sniff((tmp_path / "result.json").read_bytes(), "result.json")
    assert rejection_of(tmp_path / "result.json").field == "agent/trajectory.json"  # a trial with no trajectory
    (tmp_path / "agent").mkdir()
    shutil.copy(TIMEOUT, tmp_path / "agent" / "trajectory.json")
    assert items(tmp_path / "result.json") == [] and items(tmp_path / "config.json") == []
    (tmp_path / "other.json").write_text('{"a": 1}')
    assert rejection_of(tmp_path / "other.json").field == "schema_version"
    (tmp_path / "broken.json").write_text('{"schema_version": "ATIF-v1.5", ')
    assert "malformed JSON" in rejection_of(tmp_path / "broken.json").reason


# --------------------------------------------------------------------------- #
# Versions and bad entries (in memory: fields give the run identity and outcome)
# --------------------------------------------------------------------------- #
OBJ_FIELDS = {**DEFAULTS, "task_id": "agent.name", "outcome": "extra.reward"}


def objects(doc: dict[str, Any]) -> Item:
    (item,) = FORMAT.read_objects([doc], "<records>", OBJ_FIELDS)
    return item


def base() -> dict[str, Any]:
    doc = copy.deepcopy(raw(OPENHANDS))
    doc["extra"] = {"reward": 1}
    return doc


@pytest.mark.parametrize("version", VERSIONS)
def test_every_defined_version_reads(version):
    doc = base()
    doc["schema_version"] = version
    assert objects(doc).record is not None


@pytest.mark.parametrize("version", ["ATIF-v2.0", "ATIF-v1.9", "1.5", None])
def test_unknown_versions_are_rejected_by_name(version):
    doc = base()
    doc["schema_version"] = version
    item = objects(doc)
    assert item.field == "schema_version" and repr(version) in item.reason


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(steps=[]), "steps"),
    (lambda d: d["steps"][4].update(source="tool"), "steps[4].source"),
    (lambda d: d["steps"][4]["tool_calls"][0].update(arguments="ls"), "steps[4].tool_calls[0].arguments"),
    (lambda d: d["steps"][4]["tool_calls"][0].pop("function_name"), "steps[4].tool_calls[0].function_name"),
    (lambda d: d["steps"][4]["observation"]["results"][0].update(source_call_id="nope"),
     "steps[4].observation.results[0].source_call_id"),
    (lambda d: d["steps"][4]["metrics"].update(prompt_tokens=-1), "steps[4].metrics.prompt_tokens"),
    (lambda d: d["steps"][4].update(timestamp=12), "steps[4].timestamp"),
    (lambda d: d["steps"][4].update(observation={"content": "x"}), "steps[4].observation"),
    (lambda d: d["steps"][4]["tool_calls"].append(dict(d["steps"][4]["tool_calls"][0])), "steps[4].tool_calls[1].tool_call_id"),
])
def test_bad_entries_are_rejections_naming_the_entry(edit, field):
    doc = base()
    edit(doc)
    item = objects(doc)
    assert item.record is None and item.field == field, (item.field, item.reason)


def test_missing_metrics_leave_tokens_unknown_and_parallel_calls_marked():
    doc = base()
    step = doc["steps"][4]
    step["tool_calls"].append({"tool_call_id": "c2", "function_name": "execute_bash", "arguments": {"command": "ls"}})
    rec = objects(doc).record
    assert TOKENS_WITH_STEP not in rec["steps"][0]["metadata"]
    assert rec["steps"][1]["metadata"][TOKENS_WITH_STEP] == 0 and "tokens_in" not in rec["steps"][1]
    assert load([rec]).runs.loc[0, "tokens"] == 300
    del doc["steps"][5]["metrics"]
    rec = objects(doc).record
    runs = load([rec]).runs
    assert pd_isna(runs.loc[0, "tokens"]) and "tokens_in" not in rec["steps"][2]


def test_copied_context_and_deterministic_steps():
    doc = base()
    doc["steps"][4]["is_copied_context"] = True
    doc["steps"][5]["llm_call_count"] = 0
    del doc["steps"][5]["metrics"]
    rec = objects(doc).record
    assert [s["tool"] for s in rec["steps"]] == ["finish"]
    assert (rec["steps"][0]["tokens_in"], rec["steps"][0]["tokens_out"]) == (0, 0)  # no model call: truly none


def test_embedded_subagents_count_by_trajectory_id():
    doc = base()
    doc["schema_version"] = "ATIF-v1.7"
    sub = {"schema_version": "ATIF-v1.7", "trajectory_id": "sub-1", "agent": {"name": "helper", "version": "1"},
           "steps": [{"step_id": 1, "source": "agent", "message": "hi",
                      "metrics": {"prompt_tokens": 40, "completion_tokens": 2, "cost_usd": 0.1}}]}
    doc["subagent_trajectories"] = [sub]
    doc["steps"][4]["observation"]["results"].append({"subagent_trajectory_ref": [{"trajectory_id": "sub-1"}]})
    del doc["final_metrics"]
    rec = objects(doc).record
    assert load([rec]).runs.loc[0, "tokens"] == 300 + 42
    assert rec["cost_usd"] == pytest.approx(0.00075 + 0.0006 + 0.1)


def test_run_without_tool_calls_keeps_its_tokens_as_the_run_totals():
    doc = base()
    for step in doc["steps"]:
        step.pop("tool_calls", None)
        step.pop("observation", None)
    rec = objects(doc).record
    assert rec["steps"] == [] and (rec["tokens_in"], rec["tokens_out"]) == (220, 80)
    assert load([rec]).runs.loc[0, "tokens"] == 300


def test_a_trajectory_outside_a_trial_may_carry_its_task_and_reward_in_extra(tmp_path):
    example = json.loads(FORMAT.example)
    path = tmp_path / "runs.json"
    path.write_text(FORMAT.example)
    assert FORMAT.sniff(path.read_bytes(), path.name)
    rec = record_of(path)
    assert (rec["task_id"], rec["outcome"], rec["metadata"]["outcome_from"]) == ("t1", 1.0, "extra.reward")
    assert rec["run_id"] == example["session_id"]
    runs = load([rec]).runs
    assert runs.loc[0, "n_steps"] == 1 and runs.loc[0, "tokens"] == 600
    trial = trial_copy(tmp_path, TIMEOUT, trial_result("hello-world", "hello-world__Timeou4", 0.0))
    doc = raw(trial)
    doc["extra"] = {"reward": 1.0}
    trial.write_text(json.dumps(doc))
    assert record_of(trial)["outcome"] == 0.0  # result.json's verdict wins over the trajectory's own
