"""Degenerate data never crashes ``compare`` or ``plan`` (issue 17, item 3).

Small designs are where the root finders and the variance arithmetic meet their edge cases: every
task all-success or all-failure (an ICC of 1), one task, one seed, arms that agree run for run,
tasks that one arm never ran. ``agentab.compare`` must always return a :class:`agentab.Comparison`
with a verdict (sample-size advice that cannot be computed is a reason line, "no sample-size advice:
<why>"), and ``agentab.power.plan`` returns a :class:`~agentab.power.Plan` or raises
:class:`agentab.PowerError` with a one-line reason, never a library's own exception.

Two regressions (the issue's crash, found by simulation: 6% of null experiments at 8 tasks x 3
seeds, ICC 0.7, raised scipy's "f(a) and f(b) must have different signs"), then hypothesis
properties over random small designs. Everything is seeded and derandomized.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentab
from agentab import CompareError, PowerError
from agentab._checks import MIN_DECISION_RESAMPLES
from agentab.comparison.decide import VERDICTS
from agentab.power import mde, plan, sample_size
from agentab.stats import power as core

B = MIN_DECISION_RESAMPLES  # the fewest resamples a decision accepts: these tests check that it returns, not what
SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
KINDS = {"outcome": "binary", "rubric": "ordinal", "cost": "cost", "score": "continuous"}
NO_ADVICE = "no sample-size advice: "


def deterministic_tasks() -> pd.DataFrame:
    """8 tasks x 3 seeds; every baseline task all-success or all-failure; the candidate +4 points, not significant."""
    base = [1, 1, 1, 1, 0, 0, 0, 0]
    cand = [[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]]
    rows = [{"arm": "baseline", "task_id": f"t{t}", "outcome": bool(base[t])} for t in range(8) for _ in range(3)]
    rows += [{"arm": "candidate", "task_id": f"t{t}", "outcome": bool(v)} for t in range(8) for v in cand[t]]
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- #
# The crash
# --------------------------------------------------------------------------- #
def test_compare_on_all_success_or_all_failure_tasks_gives_a_note():
    result = agentab.compare(deterministic_tasks(), metrics={"outcome": "binary"}, n_resamples=B, seed=0)
    assert result.decision.verdict == "inconclusive"
    advice = result.decision.reasons[-1]
    assert advice.startswith(NO_ADVICE), advice
    assert "every baseline task of the pilot is all-success or all-failure" in advice and "f(a)" not in advice
    assert result.plan is None
    assert NO_ADVICE in str(result)


def test_plan_on_all_success_or_all_failure_tasks_is_a_power_error():
    pilot = deterministic_tasks()
    for runs, design in ((pilot[pilot["arm"] == "baseline"], "paired"), (pilot, "paired"), (pilot, "independent")):
        with pytest.raises(PowerError, match=r"^every baseline task of the pilot is all-success or all-failure .*ICC of 1"):
            plan(runs, "outcome", 0.1, design=design)


def test_plan_on_tasks_that_each_keep_one_rubric_level_is_a_power_error():
    rows = [{"task_id": f"t{t}", "rubric": t % 4} for t in range(8) for _ in range(3)]
    with pytest.raises(PowerError, match="every baseline task of the pilot keeps one level in all its runs"):
        plan(pd.DataFrame(rows), "rubric", 1.5, kind="ordinal")


# --------------------------------------------------------------------------- #
# Random small designs
# --------------------------------------------------------------------------- #
@st.composite
def designs(draw) -> pd.DataFrame:
    """Runs of a small two-arm experiment: 1-10 tasks, 1-5 seeds (unequal), degenerate tasks and arms.

    Each task is all-failure, all-success or mixed (its rubric likewise; cost and score are random, all
    equal or one value per task), in the candidate as in the baseline or drawn afresh; the candidate runs
    the same tasks (paired), other tasks (independent), the same tasks with some missing, or a copy of
    the baseline's runs.
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_tasks = draw(st.integers(1, 10))
    shape = draw(st.sampled_from(["paired", "different", "missing", "equal"]))
    # Half the designs have no mixed baseline task at all (an ICC of 1: the crash).
    kinds = ["zero", "one"] if draw(st.booleans()) else ["zero", "one", "mixed"]
    how_tasks = st.lists(st.sampled_from(kinds), min_size=n_tasks, max_size=n_tasks)
    task_kinds = {"baseline": draw(how_tasks)}
    again = st.lists(st.sampled_from(["zero", "one", "mixed"]), min_size=n_tasks, max_size=n_tasks)
    task_kinds["candidate"] = task_kinds["baseline"] if draw(st.booleans()) else draw(again)
    amounts = draw(st.sampled_from(["random", "all equal", "one per task"]))  # cost and score

    def runs(arm: str, tasks: list[int]) -> list[dict]:
        rows = []
        for t in tasks:
            how = task_kinds[arm][t % n_tasks]
            for _ in range(draw(st.integers(1, 5))):
                outcome = {"zero": False, "one": True}.get(how, bool(rng.random() < 0.5))
                rubric = {"zero": 0, "one": 3}.get(how, int(rng.integers(0, 4)))
                cost = {"all equal": 1.0, "one per task": 1.0 + t}.get(amounts, float(np.round(rng.lognormal(), 3)))
                score = {"all equal": 0.5, "one per task": 0.5 * t}.get(amounts, float(rng.normal()))
                rows.append({"arm": arm, "task_id": f"t{t}", "outcome": outcome, "rubric": rubric, "cost": cost,
                             "score": score})
        return rows

    base = runs("baseline", list(range(n_tasks)))
    if shape == "equal":
        cand = [dict(r, arm="candidate") for r in base]
    elif shape == "different":
        cand = runs("candidate", list(range(n_tasks, n_tasks + draw(st.integers(1, 10)))))
    else:
        kept = [t for t in range(n_tasks) if shape == "paired" or rng.random() < 0.6] or [0]
        cand = runs("candidate", kept)
    return pd.DataFrame(base + cand)


#: What compare may refuse on these designs (every one has two arms with a value of every metric): a paired
#: design asked for (paired=True) on arms that share no task. The other impossible inputs are in
#: test_impossible_inputs_are_compare_errors.
PAIRED_WITHOUT_SHARED_TASKS = (r"^metric '[^']+' \([a-z]+\): a paired design needs tasks run by both arms; "
                               r"these samples share none$")


def _runs(arm: str, n: int, **fields) -> list[dict]:
    return [dict(dict(arm=arm, task_id=f"t{i}", outcome=bool(i % 2), rubric=i % 4, cost=1.0 + i, score=float(i)),
                 **fields) for i in range(n)]


@pytest.mark.parametrize("runs, kw, message", [
    (_runs("baseline", 4), dict(candidate="candidate"), "candidate arm 'candidate' not in column 'arm'"),
    (_runs("baseline", 4), {}, "column 'arm' has 1 arm(s) (baseline); a comparison needs two"),
    ([], {}, "column 'arm' has 0 arm(s) (none); a comparison needs two"),
    (_runs("baseline", 3) + _runs("candidate", 3) + _runs("other", 3), {}, "column 'arm' has 3 arms"),
    (_runs("baseline", 4) + _runs("candidate", 4, outcome=np.nan), {},
     "metric 'outcome' (binary): metric 'outcome' has no values in arm 'candidate'"),
    (_runs("baseline", 3, task_id=np.nan) + _runs("candidate", 3, task_id=np.nan), {},
     "column 'task_id' has 6 rows without a task"),
])
def test_impossible_inputs_are_compare_errors(runs, kw, message):
    data = pd.DataFrame(runs, columns=["arm", "task_id", *KINDS])
    with pytest.raises(CompareError) as info:
        agentab.compare(data, metrics=KINDS, n_resamples=B, seed=0, **kw)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize("primary, advice", [
    ("outcome", "the observed effect is zero"),
    ("rubric", "every baseline run of the primary metric has the same level: no variance to plan with"),
    ("score", "the baseline's runs of the primary metric are fewer than two, so the observed effect has no SD"),
])
def test_one_run_per_arm_gives_a_verdict_and_a_note(primary, advice):
    result = agentab.compare(pd.DataFrame(_runs("baseline", 1) + _runs("candidate", 1)), metrics=KINDS,
                             primary=primary, n_resamples=B, seed=0)
    assert result.decision.verdict == "inconclusive"
    assert result.decision.reasons[-1].startswith(NO_ADVICE + advice), result.decision.reasons[-1]


@pytest.mark.slow  # many random degenerate designs through compare: run by `pytest -m slow` (CI)
@SETTINGS
@given(data=designs(), primary=st.sampled_from(["outcome", "rubric", "cost p50", "cost p95", "score"]),
       paired=st.sampled_from(["auto", False, True]), min_effect=st.sampled_from([None, "some"]))
def test_compare_always_returns_a_verdict(data, primary, paired, min_effect):
    effect = None if min_effect is None else {"outcome": 0.1, "rubric": 2.0, "score": 0.5}.get(primary, -0.2)
    try:
        result = agentab.compare(data, metrics=KINDS, primary=primary, paired=paired, n_resamples=B, seed=0,
                                 min_effect=effect)
    except CompareError as exc:
        assert paired is True and re.match(PAIRED_WITHOUT_SHARED_TASKS, str(exc)), exc
        return
    assert isinstance(result, agentab.Comparison)
    assert result.decision.verdict in VERDICTS
    assert result.decision.verdict in str(result)
    advice = [r for r in result.decision.reasons if r.startswith((NO_ADVICE, "a new experiment of about"))]
    p_value = result.table.iloc[0]["p_value"]
    if result.decision.verdict == "inconclusive" and not p_value < 0.05:  # NaN too: one advice line, never a raise
        assert len(advice) == 1, result.decision.reasons
        assert advice[0].startswith(NO_ADVICE) == (result.plan is None), advice
    for reason in result.decision.reasons:
        assert "f(a)" not in reason and "\n" not in reason, reason


@SETTINGS
@given(data=designs(), metric=st.sampled_from(["outcome", "rubric", "cost", "score"]),
       design=st.sampled_from(["paired", "independent"]), one_arm=st.booleans(), seeds=st.sampled_from([None, 2]))
def test_plan_returns_or_raises_power_error(data, metric, design, one_arm, seeds):
    effect = {"outcome": 0.1, "rubric": 1.5, "cost": -0.2, "score": 0.5}[metric]
    pilot = data[data["arm"] == "baseline"] if one_arm else data
    try:
        p = plan(pilot, metric, effect, kind=KINDS[metric], design=design, seeds_per_task=seeds, quantile=0.5)
    except PowerError as exc:
        assert "\n" not in str(exc) and "f(a)" not in str(exc), exc
        return
    assert p.tasks >= 2 and 0 <= p.power <= 1
    str(p)


# --------------------------------------------------------------------------- #
# The other root finders and divisions of the power stage
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kind, kw", [
    ("binary", dict(baseline=0.5, power=0.01)),
    ("binary", dict(baseline=0.5, power=0.05)),
    ("binary", dict(baseline=0.5, power=0.03, alternative="greater")),
    ("continuous", dict(power=0.02)),
    ("ordinal", dict(baseline=[0.5, 0.5], power=0.01)),
])
def test_mde_at_a_power_below_alpha_is_a_power_error(kind, kw):
    # brentq's bracket: the power at (almost) no effect already reaches the target, so there is no sign change.
    with pytest.raises(PowerError, match=r"^power .* is reached with no effect at all"):
        mde(kind, 100, **kw)
    assert mde(kind, 100, **dict(kw, power=0.8)).effect > 0  # the same question at a real power has an answer


def test_sample_size_at_a_power_below_alpha_is_the_smallest_design():
    assert sample_size("binary", 0.1, baseline=0.5, power=0.01).runs_per_arm == 2


@pytest.mark.parametrize("values, groups", [([1.0, 2.0], [0, 0]), ([1.0, 2.0], [0, 1]), ([], [])])
def test_anova_without_two_tasks_and_a_repeated_run_is_a_power_error(values, groups):
    with pytest.raises(PowerError, match="needs two tasks and more runs than tasks"):
        core.anova(np.array(values), np.array(groups))


def test_log_odds_for_an_unreachable_delta_is_nan():
    assert math.isnan(core.log_odds_for_delta(np.array([0.5, 0.5]), 0.9999))
    assert math.isnan(core.log_odds_for_delta(np.array([0.0, 1.0]), 0.2))
    assert math.isnan(core.log_odds_for_delta(np.array([0.999999, 1e-6]), -0.5))
