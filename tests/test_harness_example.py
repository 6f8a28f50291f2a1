"""The worked example: a scripted agent fixing a failing test, loop guard off and on, scored and compared."""

from __future__ import annotations

import json

import pytest

import agentab
from agentab.harness.example import STEP_CAP, example_spec, example_tasks, run_example


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    out = run_example(tmp_path_factory.mktemp("example"), n_tasks=4, n_seeds=3, workers=2)
    return out, agentab.score(agentab.load_traces(out), example_spec())


def test_the_fixture_is_a_failing_test_randomised_per_seed(tmp_path):
    task = example_tasks(2)[1]
    a, b = task.instance(0), task.instance(1)
    assert a.params != b.params and a["difficulty"] == b["difficulty"] == 0.8
    root = task.build(tmp_path / "repo", a)
    assert sorted(p.name for p in root.rglob("*.py")) == sorted([f"{a['module']}.py", f"test_{a['module']}.py"])
    assert f"RATE = {a['wrong']}" in (root / f"{a['module']}.py").read_text()
    with pytest.raises(ValueError):
        example_tasks(0)


def test_both_arms_are_recorded_and_the_guard_never_hits_the_cap(example):
    out, scores = example
    assert len(scores) == 2 * 4 * 3
    by_arm = scores.groupby("arm")
    assert by_arm["outcome"].mean()["loop-guard"] == 1.0
    assert not scores.loc[scores["arm"] == "loop-guard", "non_terminated"].any()
    assert scores.loc[scores["arm"] == "loop-guard", "loop"].sum() == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    capped = [r for r in records if r["metadata"]["stop_reason"] == "step_cap"]
    assert all(len(r["steps"]) == STEP_CAP and r["arm"] == "baseline" for r in capped)


def test_the_lucky_recovery_shape_appears_in_the_baseline(example):
    out, scores = example
    lucky = scores[(scores["arm"] == "baseline") & scores["accidental_recovery"].fillna(False).astype(bool)
                   & scores["loop"].astype(bool)]
    assert len(lucky), "no lucky recovery: right result after errors and a loop"
    assert (lucky["outcome"].astype(bool)).all() and (lucky["retries"] > 0).all()


def test_the_arms_compare(example):
    _, scores = example
    result = agentab.compare(scores, baseline="baseline", metrics=["outcome", "loop", "n_steps"], n_resamples=199)
    assert result.verdict in ("ship", "inconclusive")
    assert {row["metric"] for row in result.to_dict()["metrics"]} >= {"outcome", "loop"}
