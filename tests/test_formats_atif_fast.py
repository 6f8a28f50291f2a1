"""ATIF's fast path (plain trajectories decoded without unread step keys, walked in one pass) gives exactly what the
reader's usual path gives: on Harbor's real trajectories (tests/data/atif, a result.json written beside each copy)
and on edited copies, each of which either takes the fast path or is read the usual way, as listed here."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agentab
from agentab.formats import atif
from agentab.formats._base import Reject
from agentab.formats._fast_path import Slow
from agentab.formats.atif import DEFAULTS, _fast

DATA = Path(__file__).parent / "data" / "atif"
TRIALS = sorted(p.parent.parent for p in DATA.glob("*/agent/trajectory.json"))
#: The real trajectories the fast path reads (the others: a continuation, sub-agents, a rejection).
PLAIN = ("hello-world__BadJso3", "hello-world__OpenHa5", "hello-world__Timeou4")


def result_json(trial: str, reward: Any = 1.0, **extra: Any) -> dict[str, Any]:
    """A Harbor TrialResult as result.json holds it (the shape tests/test_formats_atif.py writes)."""
    return {"id": "0b6f7c1e", "task_name": "hello-world", "trial_name": trial, "task_checksum": "abc123",
            "source": "examples", "verifier_result": {"rewards": {"reward": reward}}, "exception_info": None,
            "agent_execution": {"started_at": "2025-11-01T10:00:10Z", "finished_at": "2025-11-01T10:01:40.5Z"},
            **extra}


def write_trial(root: Path, name: str, doc: dict[str, Any] | bytes, result: dict[str, Any] | None = None) -> Path:
    agent = root / name / "agent"
    agent.mkdir(parents=True)
    path = agent / "trajectory.json"
    path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc, indent=2).encode())
    (root / name / "result.json").write_text(json.dumps(result if result is not None else result_json(name)))
    return path


def frames(folder: Path, fields: dict[str, str] | None) -> list[pd.DataFrame]:
    traces = agentab.load_traces({"a": folder}, format="atif", strict=False, fields=fields, workers=1)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def _off(*args: Any) -> Any:
    raise Slow


def assert_same(folder: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, str] | None = None) -> None:
    fast = frames(folder, fields)
    with monkeypatch.context() as patch:
        patch.setattr(atif, "fast_item", _off)  # the fast path off
        slow = frames(folder, fields)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)


def takes_fast_path(path: Path, fields: dict[str, str] | None = None) -> bool:
    try:
        _fast.item(path.read_bytes(), path, {**DEFAULTS, **(fields or {})})
    except (Slow, Reject):
        return False
    return True


def test_real_trials_read_the_same_both_ways(tmp_path, monkeypatch):
    for trial in TRIALS:
        shutil.copytree(trial, tmp_path / trial.name)
        (tmp_path / trial.name / "result.json").write_text(json.dumps(result_json(trial.name)))
        shutil.copytree(trial, tmp_path / "without-result" / trial.name)  # outcome left to the loader: dicts
    assert_same(tmp_path, monkeypatch)
    assert_same(tmp_path, monkeypatch, {"outcome": "agent.name"})  # an outcome of another type: usual path
    taken = {trial.name for trial in TRIALS if takes_fast_path(tmp_path / trial.name / "agent" / "trajectory.json")}
    assert taken == set(PLAIN)


# --------------------------------------------------------------------------- #
# Edited trajectories
# --------------------------------------------------------------------------- #
def _call(call_id: str, name: str = "bash", **args: Any) -> dict[str, Any]:
    return {"tool_call_id": call_id, "function_name": name, "arguments": args or {"cmd": "ls"}}


def base() -> dict[str, Any]:
    """A trajectory with each case of the rules: single and parallel calls, results by id and loose ones, a model
    call without tools (carried to the next call), a step with feedback but no call, trailing model calls."""
    metrics = {"prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 5, "cost_usd": 0.001}
    steps = [
        {"step_id": 1, "timestamp": "2025-11-01T10:00:00Z", "source": "system", "message": "be helpful"},
        {"step_id": 2, "timestamp": "2025-11-01T10:00:01Z", "source": "user", "message": "do it"},
        {"step_id": 3, "timestamp": "2025-11-01T10:00:02.5Z", "source": "agent", "message": "looking",
         "reasoning_content": "hmm", "model_name": "m", "tool_calls": [_call("c1", path="a.txt")],
         "observation": {"results": [{"source_call_id": "c1", "content": "a", "extra": {"exit": 0}}]},
         "metrics": {**metrics, "prompt_token_ids": [1, 2, 3], "logprobs": [-0.5]}},
        {"step_id": 4, "timestamp": "2025-11-01T10:00:03.123456789Z", "source": "agent", "message": "thinking",
         "metrics": metrics},
        {"step_id": 5, "timestamp": "2025-11-01T10:00:04Z", "source": "agent",
         "tool_calls": [_call("c2"), _call("c3", "edit", file="b")],
         "observation": {"results": [{"source_call_id": "c3", "content": "edited"},
                                     {"source_call_id": "c2", "content": "x"}, {"source_call_id": "c2", "content": "y"}]},
         "metrics": metrics},
        {"step_id": 6, "timestamp": "2025-11-01T10:00:05Z", "source": "agent",
         "tool_calls": [_call("c4"), _call("c5")], "observation": {"results": [{"content": "terminal output"}]},
         "metrics": metrics},
        {"step_id": 7, "timestamp": "2025-11-01T10:00:06Z", "source": "agent", "message": "bad json",
         "observation": {"results": [{"content": "parse error"}]}, "metrics": metrics},
        {"step_id": 8, "timestamp": "2025-11-01T10:00:07Z", "source": "agent", "tool_calls": [_call("c6")],
         "observation": {"results": [{"source_call_id": "c6", "content": None, "extra": [1]}]}, "metrics": metrics},
        {"step_id": 9, "timestamp": "2025-11-01T10:00:08Z", "source": "agent", "message": "done", "metrics": metrics},
    ]
    return {"schema_version": "ATIF-v1.5", "session_id": "s1", "agent": {"name": "terminus-2", "version": "2.0.0",
            "model_name": "openai/gpt-4o"}, "steps": steps, "notes": "n", "extra": {"seed": 7, "arm": "x"},
            "final_metrics": {"total_prompt_tokens": 700, "total_cost_usd": 0.007}}


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["steps"]


Edit = Callable[[dict[str, Any]], Any]

#: Edits the fast path reads itself.
FAST: dict[str, Edit] = {
    "as is": lambda d: None,
    "naive and +00:00 times": lambda d: (_steps(d)[2].update(timestamp="2025-11-01T10:00:02.5"),
                                         _steps(d)[4].update(timestamp="2025-11-01T10:00:04+00:00")),
    "no times": lambda d: [s.pop("timestamp") for s in _steps(d)],
    "some times": lambda d: _steps(d)[4].update(timestamp=None),
    "no metrics": lambda d: [s.pop("metrics", None) for s in _steps(d)],
    "metrics of one call missing": lambda d: _steps(d)[3].pop("metrics"),
    "trailing call unknown": lambda d: _steps(d)[8].pop("metrics"),
    "counts missing": lambda d: _steps(d)[2]["metrics"].pop("prompt_tokens"),
    "no cost": lambda d: [s.get("metrics", {}).pop("cost_usd", None) for s in _steps(d)],
    "no cached": lambda d: [s.get("metrics", {}).pop("cached_tokens", None) for s in _steps(d)],
    "no model call": lambda d: [s.update(llm_call_count=0) for s in _steps(d)],
    "copied context": lambda d: _steps(d)[2].update(is_copied_context=True),
    "no step ids": lambda d: [s.pop("step_id") for s in _steps(d)],
    "text step ids": lambda d: [s.update(step_id=f"s{k}") for k, s in enumerate(_steps(d))],
    "empty tool calls": lambda d: _steps(d)[3].update(tool_calls=[]),
    "null tool calls": lambda d: _steps(d)[3].update(tool_calls=None, observation=None),
    "user step observation": lambda d: _steps(d)[1].update(observation={"results": [{"content": "hi"}]}),
    "result without content": lambda d: _steps(d)[5]["observation"]["results"][0].pop("content"),
    "final cost as an integer": lambda d: d["final_metrics"].update(total_cost_usd=0),
    "no final metrics": lambda d: d.pop("final_metrics"),
    "no tool call at all": lambda d: d.update(steps=_steps(d)[:2] + [_steps(d)[3]]),
    "only the system prompt": lambda d: d.update(steps=_steps(d)[:1]),
    "text in another script": lambda d: _steps(d)[2].update(message="héllo ✓ 日本"),
    "null subagent reference": lambda d: _steps(d)[2]["observation"]["results"][0].update(
        subagent_trajectory_ref=None),
    "every schema version": lambda d: d.update(schema_version="ATIF-v1.0"),
    # values the decoder rejects, as it does the usual path's record
    "a day February lacks": lambda d: _steps(d)[2].update(timestamp="2025-02-30T10:00:00Z"),
    "a time with an offset": lambda d: _steps(d)[2].update(timestamp="2025-11-01T12:00:00+02:00"),
    "a time with a line break": lambda d: _steps(d)[2].update(timestamp="2025-11-01T10:00:00Z\n2025-11-01T10:00:00Z"),
    "a time not a time": lambda d: _steps(d)[2].update(timestamp="yesterday"),
    "a date alone": lambda d: _steps(d)[2].update(timestamp="2025-11-01"),
    "tokens beyond 64 bits": lambda d: _steps(d)[2]["metrics"].update(prompt_tokens=2**63),
    "sums beyond 64 bits": lambda d: [s.get("metrics", {}).update(prompt_tokens=2**62) for s in _steps(d)],
    "final cost as text": lambda d: d["final_metrics"].update(total_cost_usd="0.1"),
    "negative final cost": lambda d: d["final_metrics"].update(total_cost_usd=-0.1),
}

#: Edits read the usual way (each a rejection, or a case the fast path leaves to the reader's own rules).
SLOW: dict[str, Edit] = {
    "unknown top-level key": lambda d: d.update(custom=1),
    "unknown source": lambda d: _steps(d)[2].update(source="tool"),
    "text as a time number": lambda d: _steps(d)[2].update(timestamp=12),
    "negative tokens": lambda d: _steps(d)[2]["metrics"].update(prompt_tokens=-1),
    "float tokens": lambda d: _steps(d)[2]["metrics"].update(prompt_tokens=12.0),
    "negative cost": lambda d: _steps(d)[2]["metrics"].update(cost_usd=-1.0),
    "integer cost": lambda d: _steps(d)[2]["metrics"].update(cost_usd=1),
    "text cost": lambda d: _steps(d)[2]["metrics"].update(cost_usd="1"),
    "metrics not an object": lambda d: _steps(d)[2].update(metrics=[1]),
    "a call without an id": lambda d: _steps(d)[2]["tool_calls"][0].pop("tool_call_id"),
    "a call with an empty name": lambda d: _steps(d)[2]["tool_calls"][0].update(function_name=""),
    "arguments as text": lambda d: _steps(d)[2]["tool_calls"][0].update(arguments='{"cmd": "ls"}'),
    "two calls with one id": lambda d: _steps(d)[4]["tool_calls"][1].update(tool_call_id="c2"),
    "a result naming no call": lambda d: _steps(d)[2]["observation"]["results"][0].update(source_call_id="zz"),
    "a result naming no call of two": lambda d: _steps(d)[4]["observation"]["results"][0].update(
        source_call_id="zz"),
    "observation without results": lambda d: _steps(d)[2].update(observation={}),
    "results null": lambda d: _steps(d)[2].update(observation={"results": None}),
    "a result not an object": lambda d: _steps(d)[2].update(observation={"results": ["a"]}),
    "tool calls not a list": lambda d: _steps(d)[2].update(tool_calls={"a": 1}),
    "a step not an object": lambda d: _steps(d).append("step"),
    "parallel group an empty text": lambda d: _steps(d)[4].update(step_id=""),
    "parallel group an object": lambda d: _steps(d)[4].update(step_id={"a": 1}),
    "parallel group beyond 64 bits": lambda d: _steps(d)[4].update(step_id=2**64),
    "feedback without any call": lambda d: d.update(steps=_steps(d)[:2] + [_steps(d)[6]]),
    "a sub-agent": lambda d: _steps(d)[2]["observation"]["results"][0].update(
        subagent_trajectory_ref=[{"trajectory_id": "sub"}]),
    "a continuation": lambda d: d.update(continued_trajectory_ref="trajectory.cont-1.json"),
    "unknown version": lambda d: d.update(schema_version="ATIF-v9"),
    "no steps": lambda d: d.update(steps=[]),
    "steps not a list": lambda d: d.update(steps={}),
}


def _edited(name: str, edit: Edit) -> dict[str, Any]:
    doc = copy.deepcopy(base())
    edit(doc)
    return doc


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "usual"])
def test_edited_trajectories_read_the_same_both_ways(tmp_path, monkeypatch, fast):
    edits = FAST if fast else SLOW
    for k, (name, edit) in enumerate(edits.items()):
        path = write_trial(tmp_path, f"task{k}__abcdefg", _edited(name, edit))
        assert takes_fast_path(path, {"seed": "extra.seed"}) is fast, name
    write_trial(tmp_path, "plain__abcdefg", base())  # one run read, whatever the edits
    assert_same(tmp_path, monkeypatch, {"seed": "extra.seed"})
    assert_same(tmp_path, monkeypatch)  # the seed derived from the run id


RESULTS: dict[str, dict[str, Any] | None] = {
    "fast: a boolean reward": result_json("t", True),
    "fast: an integer reward": result_json("t", 1),
    "fast: one reward of another name": {**result_json("t"), "verifier_result": {"rewards": {"pass": 0.5}}},
    "fast: a failed trial with a reward": {**result_json("t"), "exception_info": {"exception_type": "Timeout"}},
    "fast: no agent execution": {k: v for k, v in result_json("t").items() if k != "agent_execution"},
    "slow: several rewards": {**result_json("t"), "verifier_result": {"rewards": {"a": 1.0, "b": 0.0}}},
    "fast: no verifier result (the outcome left to the loader)": {**result_json("t"), "verifier_result": None},
    "slow: a reward as text": result_json("t", "1"),
    "slow: not an object": [],  # type: ignore[dict-item]
}


def test_result_files_read_the_same_both_ways(tmp_path, monkeypatch):
    for k, (name, result) in enumerate(RESULTS.items()):
        path = write_trial(tmp_path, f"task{k}__abcdefg", base(), result)
        assert takes_fast_path(path) is name.startswith("fast"), name
    path = write_trial(tmp_path, "bad__abcdefg", base())
    (path.parent.parent / "result.json").write_text("{not json")
    assert not takes_fast_path(path)
    write_trial(tmp_path / "deeper", "steps", base())  # a trajectory outside a trial folder: its own extra
    assert_same(tmp_path, monkeypatch)


@pytest.mark.parametrize("fields", [
    {"seed": "extra.seed", "arm": "extra.arm"},
    {"outcome": "extra.seed", "task_id": "agent.name", "run_id": "session_id"},
    {"outcome": "result.verifier_result.rewards.reward", "latency_s": "final_metrics.total_cost_usd"},
    {"seed": "steps.0.step_id"},  # a path into the steps: the usual path
    {"seed": "*.seed"},
    {"seed": "agent.name"},  # text: the schema's rejection
    {"seed": "extra.missing"},
    {"arm": "agent.version"},  # an arm the loader's own arm ({"a": folder}) contradicts
    {"cost_usd": "agent.name"},
    {"latency_s": "extra.seed", "cost_usd": "extra.seed"},
])
def test_fields_read_the_same_both_ways(tmp_path, monkeypatch, fields):
    write_trial(tmp_path, "t__abcdefg", base())
    doc = base()
    doc["extra"]["arm"] = "a"
    write_trial(tmp_path, "u__abcdefg", doc)
    assert_same(tmp_path, monkeypatch, fields)


def test_bytes_the_typed_decoder_skips_are_still_checked(tmp_path, monkeypatch):
    """A step's ``message`` is skipped unread by the fast path's decoder: bytes that are not UTF-8 there must still
    reject the file, as the usual path's whole decode does."""
    raw = json.dumps(base()).encode().replace(b'"looking"', b'"look\xff\xfeing"')
    path = write_trial(tmp_path, "bad__abcdefg", raw)
    assert not takes_fast_path(path)
    write_trial(tmp_path, "good__abcdefg", base())
    assert_same(tmp_path, monkeypatch)
