"""The variance components a plan reports (``Plan.variance_components``) and the cost plans that use them.

Pilots are simulated with a known between-task, task-by-arm (the per-task effect's variance) and
within-task variance; the plan's table must recover them, say which it measured and which it assumed,
and a two-arm cost plan must plan from its measured task-by-arm variance in the formula and in
``Plan.simulate`` alike.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from agentab.power import plan
from agentab.power._variance import VarianceComponents, measure


def _frame(tasks: np.ndarray, values_a: np.ndarray, values_b: np.ndarray | None) -> pd.DataFrame:
    parts = [pd.DataFrame({"task_id": tasks, "arm": "baseline", "y": values_a})]
    if values_b is not None:
        parts.append(pd.DataFrame({"task_id": tasks, "arm": "candidate", "y": values_b}))
    return pd.concat(parts, ignore_index=True)


def continuous_pilot(n_tasks: int, seeds: int, effect_sd: float, seed: int, two_arms: bool = True):
    """Task effects N(0, 1), per-task effect 0.3 + N(0, effect_sd^2), run noise N(0, 0.7^2)."""
    rng = np.random.default_rng(seed)
    u, d = rng.normal(0, 1, n_tasks), 0.3 + effect_sd * rng.standard_normal(n_tasks)
    t = np.repeat(np.arange(n_tasks), seeds)
    a = u[t] + rng.normal(0, 0.7, t.size)
    b = u[t] + d[t] + rng.normal(0, 0.7, t.size)
    return _frame(t.astype(str), a, b if two_arms else None), {"between": 1 + effect_sd**2 / 2, "task_by_arm": effect_sd**2,
                                                               "within": 0.49}


def binary_pilot(n_tasks: int, seeds: int, logit_sd: float, seed: int):
    """Task success rates Beta(2, 2); the candidate's shifted by 0.3 + N(0, logit_sd^2) log odds.

    The truth is that of the drawn tasks (the estimator's target): the variance of their true rates and
    of their true differences.
    """
    rng = np.random.default_rng(seed)
    p_a = rng.beta(2, 2, n_tasks)
    p_b = 1 / (1 + np.exp(-(np.log(p_a / (1 - p_a)) + 0.3 + logit_sd * rng.standard_normal(n_tasks))))
    t = np.repeat(np.arange(n_tasks), seeds)
    a = (rng.random(t.size) < p_a[t]).astype(float)
    b = (rng.random(t.size) < p_b[t]).astype(float)
    truth = {"between": (p_a.var(ddof=1) + p_b.var(ddof=1)) / 2, "task_by_arm": (p_b - p_a).var(ddof=1),
             "within": float(np.mean(np.concatenate([p_a * (1 - p_a), p_b * (1 - p_b)])))}
    return _frame(t.astype(str), a, b), truth


def cost_pilot(n_tasks: int, seeds: int, tau: float, seed: int, two_arms: bool = True):
    """log cost = task effect N(0, 0.6^2) + run noise N(0, 0.5^2); the candidate's shifted by log 0.8 + N(0, tau^2)."""
    rng = np.random.default_rng(seed)
    u, s = rng.normal(0, 0.6, n_tasks), math.log(0.8) + tau * rng.standard_normal(n_tasks)
    t = np.repeat(np.arange(n_tasks), seeds)
    a = np.exp(u[t] + rng.normal(0, 0.5, t.size))
    b = np.exp(u[t] + s[t] + rng.normal(0, 0.5, t.size))
    truth = {"between": 0.36 + tau**2 / 2, "task_by_arm": tau**2, "within": 0.25}
    return _frame(t.astype(str), a, b if two_arms else None), truth


def _check_recovered(vc: VarianceComponents, truth: dict, rel: float) -> None:
    for name in ("between", "task_by_arm", "within"):
        assert getattr(vc, name) == pytest.approx(truth[name], rel=rel), name
    assert vc.sources == ("measured",) * 4


# --------------------------------------------------------------------------- recovery and intervals


def test_a_large_two_arm_continuous_pilot_recovers_its_components_and_the_intervals_hold_them():
    frame, truth = continuous_pilot(1500, 3, 0.6, seed=1)
    p = plan(frame, "y", 0.2, kind="continuous")
    vc = p.variance_components
    assert vc.scale == "metric's" and vc.shared_tasks == 1500
    _check_recovered(vc, truth, rel=0.12)
    assert vc.ratio == pytest.approx(0.6 / math.sqrt(truth["between"]), rel=0.08)
    for name, ci in zip(("between", "task_by_arm", "within"), vc.intervals):
        assert ci[0] <= truth[name] <= ci[1], name
        assert ci[0] <= getattr(vc, name) <= ci[1]


def test_a_large_two_arm_binary_pilot_recovers_the_task_by_arm_variance_on_the_success_scale():
    frame, truth = binary_pilot(1500, 3, 1.0, seed=2)
    p = plan(frame, "y", 0.05, kind="binary")
    vc = p.variance_components
    assert vc.scale == "success (0/1)"
    _check_recovered(vc, truth, rel=0.2)
    low, high = vc.intervals[1]
    assert low <= truth["task_by_arm"] <= high
    assert any(f"(variance {vc.task_by_arm:.4g})" in a for a in p.assumptions)  # the plan used what the table shows


def test_a_large_two_arm_cost_pilot_recovers_the_log_scale_task_by_arm_sd():
    frame, truth = cost_pilot(1500, 3, 0.5, seed=3)
    p = plan(frame, "y", -0.2, kind="cost")
    vc = p.variance_components
    assert vc.scale == "log(value)"
    _check_recovered(vc, truth, rel=0.15)
    assert math.sqrt(vc.task_by_arm) == pytest.approx(0.5, rel=0.08)
    assert vc.intervals[1][0] <= 0.25 <= vc.intervals[1][1]
    assert p.model.log_sd == pytest.approx(math.sqrt(vc.task_by_arm))


@pytest.mark.parametrize("kind", ["continuous", "cost"])
def test_an_effect_that_is_the_same_on_every_task_measures_about_zero(kind):
    if kind == "continuous":
        frame, _ = continuous_pilot(800, 3, 0.0, seed=4)
        p = plan(frame, "y", 0.2, kind=kind)
    else:
        frame, _ = cost_pilot(800, 3, 0.0, seed=4)
        p = plan(frame, "y", -0.2, kind=kind)
    vc = p.variance_components
    assert vc.task_by_arm < 0.03 * vc.between and vc.ratio < 0.2
    assert vc.intervals[1][0] == 0.0  # truncated at 0: the interval's lower end is the floor


def test_the_estimator_is_the_anova_of_each_arm_and_the_bootstrap_is_seeded():
    from agentab.stats.power import anova

    frame, _ = continuous_pilot(40, 3, 0.5, seed=5)
    base, cand = frame[frame.arm == "baseline"], frame[frame.arm == "candidate"]
    point, ci, shared = measure(base.y.to_numpy(), base.task_id.to_numpy(), cand.y.to_numpy(), cand.task_id.to_numpy(),
                                rng=np.random.default_rng(0))
    fit_a, fit_b = anova(base.y.to_numpy(), base.task_id.to_numpy()), anova(cand.y.to_numpy(), cand.task_id.to_numpy())
    assert point["between"] == pytest.approx((fit_a.between + fit_b.between) / 2)
    assert point["within"] == pytest.approx((fit_a.within + fit_b.within) / 2)  # balanced: the pooled is the mean
    d = cand.groupby("task_id").y.mean() - base.groupby("task_id").y.mean()
    assert point["task_by_arm"] == pytest.approx(max(0.0, d.var() - (fit_a.within + fit_b.within) / 3))
    again = measure(base.y.to_numpy(), base.task_id.to_numpy(), cand.y.to_numpy(), cand.task_id.to_numpy(),
                    rng=np.random.default_rng(0))
    assert again[1] == ci and shared == 40
    first, second = plan(frame, "y", 0.3, kind="continuous"), plan(frame, "y", 0.3, kind="continuous")
    assert first.variance_components == second.variance_components
    other = plan(frame, "y", 0.3, kind="continuous", seed=99).variance_components
    assert other.intervals != first.variance_components.intervals and other.between == first.variance_components.between


# --------------------------------------------------------------------------- measured or assumed, and shown


def test_the_table_says_what_was_measured_and_what_assumed():
    two, _ = continuous_pilot(30, 3, 0.5, seed=6)
    one = two[two.arm == "baseline"]
    assumed = plan(one, "y", 0.5, kind="continuous").variance_components
    assert assumed.sources == ("measured", "assumed", "measured", "assumed")
    assert assumed.ratio == 0.83 and assumed.task_by_arm == pytest.approx(0.83**2 * assumed.between)
    assert assumed.intervals[1] is None and assumed.intervals[3] is None and assumed.intervals[0] is not None
    chosen = plan(two, "y", 0.5, kind="continuous", heterogeneity=0.4).variance_components
    assert chosen.sources[1] == "assumed" and chosen.ratio == 0.4
    independent = plan(two, "y", 0.5, kind="continuous", design="independent").variance_components
    assert independent.sources[1] == "measured (not used: independent design)"
    frame = independent.frame()
    assert list(frame["component"]) == ["between-task", "task-by-arm", "within-task", "ratio"]
    assert set(frame.columns) >= {"estimate", "sd", "low", "high", "source", "scale"}


def test_a_one_arm_cost_plan_states_its_assumed_zero_heterogeneity_and_its_sensitivity():
    frame, _ = cost_pilot(30, 3, 0.0, seed=7, two_arms=False)
    p = plan(frame, "y", -0.2, kind="cost")
    vc = p.variance_components
    assert vc.sources == ("measured", "assumed", "measured", "assumed") and vc.task_by_arm == 0 and vc.ratio == 0
    assert any("heterogeneity 0 is assumed for cost" in a for a in p.assumptions)
    assert any("log of run time (heterogeneity 0.91)" in n and "this design's power is" in n for n in p.notes)
    assert p.model.log_sd == 0
    text = str(p)
    assert "Variance components on the log(value) scale" in text and "task-by-arm" in text and "assumed" in text
    assert "Variance components" in p._repr_html_()
    json.dumps(p.to_dict())
    varied = plan(frame, "y", -0.2, kind="cost", heterogeneity=0.8)
    assert varied.variance_components.ratio == 0.8 and varied.model.log_sd > 0
    assert any("sensitivity to the assumed heterogeneity 0.8" in n for n in varied.notes)


def test_a_one_run_pilot_says_its_components_cannot_be_separated():
    frame, _ = continuous_pilot(40, 1, 0.5, seed=8)
    vc = plan(frame, "y", 0.5, kind="continuous").variance_components
    assert all(s.startswith("not separable") for s in vc.sources) and math.isnan(vc.between)


# --------------------------------------------------------------------------- cost plans from two arms


def test_a_two_arm_cost_plan_needs_more_tasks_when_the_effect_varies_more():
    tasks = [plan(cost_pilot(200, 3, tau, seed=9)[0], "y", -0.2, kind="cost", seeds_per_task=3).tasks
             for tau in (0.0, 0.3, 0.6)]
    assert tasks[0] < tasks[1] < tasks[2]
    assert tasks[2] > 1.5 * tasks[0]


def test_a_heterogeneous_cost_plan_is_what_agentabs_test_achieves():
    """The formula and ``Plan.simulate`` draw the same population (per-task log shifts N(mu, tau^2)):
    200 simulated experiments (s.e. 0.028) must land within 3.5 s.e. plus 0.05 of the plan (the p95 formula
    is conservative; test_power.py's cost check allows the same model slack and Monte Carlo level)."""
    frame, _ = cost_pilot(60, 3, 0.5, seed=10)
    p = plan(frame, "y", -0.3, kind="cost", seeds_per_task=3, quantile=0.5)
    assert p.model.log_sd > 0.2
    sim = p.simulate(200, n_resamples=199, seed=3)
    assert abs(sim.power - p.power) <= 3.5 * math.sqrt(p.power * (1 - p.power) / 200) + 0.05, (sim.power, p.power)
    alike = plan(frame[frame.arm == "baseline"], "y", -0.3, kind="cost", seeds_per_task=3, quantile=0.5)
    assert alike.tasks < p.tasks


@pytest.mark.parametrize("kind", ["continuous", "binary"])
def test_plan_simulate_draws_the_heterogeneity_a_two_arm_pilot_measured(kind):
    """``Plan.simulate`` must draw the population the formula plans for. Before the fix, a measured
    task-by-arm variance reached the formula but not the task model, so every simulated task shifted
    alike and a planned 0.80 simulated as 0.98 (continuous, 30 x 3 pilot, per-task effect SD 1)."""
    if kind == "continuous":
        frame, _ = continuous_pilot(30, 3, 1.0, seed=3)
        p = plan(frame, "y", 0.25, kind="continuous", seeds_per_task=3, baseline="baseline")
        assert p.model.effect_sd > 0.5
    else:
        frame, _ = binary_pilot(40, 3, 1.5, seed=4)
        p = plan(frame, "y", 0.1, kind="binary", seeds_per_task=3, baseline="baseline")
        assert p.model.log_or_sd > 0.3
    sim = p.simulate(200, n_resamples=199, seed=5)
    assert abs(sim.power - p.power) <= 3.5 * math.sqrt(p.power * (1 - p.power) / 200) + 0.03, (sim.power, p.power)
