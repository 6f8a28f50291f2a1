"""Hostile statistics input (issue 16, item 5): a correct result or a typed one-line error, never NaN beside a
p-value and never a raw library exception.

Each case was tried against compare, plan and the array functions of agentab.stats; every test here failed
before the change it guards (overflowing sums gave NaN means beside p = 0.002, mixed task ids compared 0 runs,
list-valued ids and repeated columns raised TypeError/AttributeError, a one-run candidate crashed in scipy's
brentq, huge effects raised OverflowError in the plan). Small data and few resamples: the file runs in seconds.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab import stats
from agentab.errors import CompareError, PowerError, StatsWarning
from agentab.stats.power import cliff_delta, log_odds_for_delta, po_shift

FAST = {"n_resamples": 999}
CONTINUOUS = {"metrics": {"score": ("continuous", "higher")}, "primary": "score", **FAST}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _frame(base, cand, base_tasks=None, cand_tasks=None, dtype=None) -> pd.DataFrame:
    base, cand = list(base), list(cand)
    base_tasks = [i % 10 for i in range(len(base))] if base_tasks is None else list(base_tasks)
    cand_tasks = [i % 10 for i in range(len(cand))] if cand_tasks is None else list(cand_tasks)
    return pd.DataFrame({
        "arm": ["baseline"] * len(base) + ["candidate"] * len(cand),
        "task_id": pd.Series(base_tasks + cand_tasks, dtype=object if dtype is None else dtype),
        "score": base + cand,
    })


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


# --------------------------------------------------------------------------- #
# Values whose sums or differences overflow float64
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kind, primary", [("continuous", "score"), ("cost", "score p50"), ("ordinal", "score")])
def test_values_near_float_max_are_refused_naming_the_column(kind, primary):
    rng = np.random.default_rng(0)
    base = 1.7e308 - rng.random(20) * 1e307
    data = _frame(base, base * 0.5)
    with pytest.raises(CompareError, match=r"metric 'score' has 40 value\(s\) beyond \+-1e\+100") as exc:
        agentab.compare(data, metrics={"score": kind}, primary=primary, **FAST)
    assert "1.7e+308" in _one_line(exc) and "overflow" in str(exc.value)


def test_overflowing_difference_is_never_a_nan_mean_beside_a_p_value():
    # The issue's case: +-1.7e308, whose difference (3.4e308) is beyond float64. It said "no significant
    # difference ... p = 0.002" beside NaN means; now it is refused.
    rng = np.random.default_rng(0)
    data = _frame(1.7e308 - rng.random(20) * 1e307, -1.7e308 + rng.random(20) * 1e307)
    with pytest.raises(CompareError, match="metric 'score'"):
        agentab.compare(data, **CONTINUOUS)


def test_values_up_to_the_bound_give_finite_results():
    rng = np.random.default_rng(1)
    data = _frame(rng.random(30) * 1e99, rng.random(30) * 1.5e99)
    result = agentab.compare(data, **CONTINUOUS)
    numbers = result.table[["baseline", "candidate", "effect", "ci_low", "ci_high", "p_value"]].to_numpy(float)
    assert np.isfinite(numbers).all()
    # Scale-free: the same p-value as the data divided by 1e99 (multiplying by a power of ten rounds a little).
    small = agentab.compare(_frame(data.score[:30] / 1e99, data.score[30:] / 1e99), **CONTINUOUS)
    assert result.table.p_value[0] == pytest.approx(small.table.p_value[0])
    assert result.table.effect[0] / 1e99 == pytest.approx(small.table.effect[0])


def test_huge_values_in_an_unrequested_metric_are_left_out_with_a_note():
    rng = np.random.default_rng(2)
    data = _frame(rng.random(20) < 0.5, rng.random(20) < 0.6)
    data["score"] = data["score"].astype(bool)
    data["huge"] = np.r_[np.full(20, 1e300), np.full(20, 2e300)]
    result = agentab.compare(data.rename(columns={"score": "outcome"}), **FAST)
    assert "huge" not in set(result.table.metric)
    assert any("metric 'huge'" in note and "left out" in note for note in result.notes)


def test_array_functions_refuse_huge_values_with_value_error():
    with pytest.raises(ValueError, match=r"`x` has 1 value\(s\) beyond \+-1e\+100"):
        stats.mean_difference([1e308, 1.0, 2.0], [1.0, 2.0, 3.0], n_resamples=99)
    with pytest.raises(ValueError, match=r"`y` has 2 value\(s\) beyond"):
        stats.quantile_difference([1.0, 2.0, 3.0], [1e200, 1e201, 3.0], n_resamples=99)


def test_plan_refuses_a_pilot_with_huge_values():
    rng = np.random.default_rng(3)
    pilot = pd.DataFrame({"task_id": np.arange(40) % 10, "score": rng.random(40) * 1e300})
    with pytest.raises(PowerError, match=r"column 'score' has 40 value\(s\) beyond \+-1e\+100"):
        agentab.power.plan(pilot, "score", 0.5, kind="continuous")


# --------------------------------------------------------------------------- #
# Task ids
# --------------------------------------------------------------------------- #
def test_text_task_ids_in_one_arm_and_integers_in_the_other_are_refused():
    # Was: the test paired "3" with 3 (it reads ids as text) while the compared runs matched values: 0 runs.
    rng = np.random.default_rng(4)
    data = _frame(rng.random(20), rng.random(20), base_tasks=[str(i % 10) for i in range(20)])
    with pytest.raises(CompareError, match=r"column 'task_id' holds task ids that are the same as text") as exc:
        agentab.compare(data, **CONTINUOUS)
    assert "'0' (str) and 0 (int)" in _one_line(exc)


def test_boolean_task_ids_mixed_with_integers_are_refused():
    # True == 1 as values (the compared runs) but "True" != "1" as text (the test's tasks).
    rng = np.random.default_rng(4)
    data = _frame(rng.random(20), rng.random(20), base_tasks=[i % 2 == 0 for i in range(20)],
                  cand_tasks=[i % 2 for i in range(20)])
    with pytest.raises(CompareError, match=r"column 'task_id' mixes boolean task ids with other values"):
        agentab.compare(data, **CONTINUOUS)


def test_integral_floats_and_integers_are_one_task_not_an_error():
    rng = np.random.default_rng(5)
    data = _frame(rng.random(20), rng.random(20), base_tasks=[float(i % 10) for i in range(20)])
    result = agentab.compare(data, **CONTINUOUS)
    assert result.design.kind == "paired"
    assert len(result.data) == 40


@pytest.mark.parametrize("bad", [[0], {"task": 0}, np.array([0, 1])])
def test_unhashable_task_ids_are_refused(bad):
    rng = np.random.default_rng(6)
    tasks = [i % 10 for i in range(20)]
    tasks[3] = bad
    data = _frame(rng.random(20), rng.random(20), base_tasks=tasks)
    with pytest.raises(CompareError, match=r"column 'task_id' has a task id that is not text or a number") as exc:
        agentab.compare(data, **CONTINUOUS)
    assert type(bad).__name__ in _one_line(exc)


def test_array_functions_refuse_ragged_list_task_ids():
    ids = np.empty(4, dtype=object)
    ids[:] = [[0], [1], [0, 1], [2]]
    with pytest.raises(ValueError, match=r"`x_strata` has a task id that is not text or a number at position 0"):
        stats.mean_difference([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], x_strata=ids, y_strata=[0, 1, 0, 2],
                              n_resamples=99)


def test_list_arm_labels_are_refused():
    data = _frame(range(20), range(20))
    data["arm"] = [["a"]] * 20 + [["b"]] * 20
    with pytest.raises(CompareError, match=r"column 'arm' has an arm label that is not text or a number"):
        agentab.compare(data, **CONTINUOUS)


def test_unhashable_model_and_harness_labels_are_described_not_a_type_error():
    rng = np.random.default_rng(13)
    data = _frame(rng.random(20), rng.random(20))
    data["model"] = [["gpt"]] * 40
    data["harness"] = [{"tools": 1}] * 40
    result = agentab.compare(data, **CONTINUOUS)
    assert result.arms.loc["baseline", "model"] == "['gpt']"
    assert result.arms.loc["candidate", "harness"] == "{'tools': 1}"


# --------------------------------------------------------------------------- #
# Repeated column names
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", ["arm", "task_id", "score"])
def test_repeated_column_names_are_refused(name):
    rng = np.random.default_rng(7)
    data = _frame(rng.random(20), rng.random(20))
    data["extra"] = data[name]
    data.columns = [*data.columns[:-1], name]
    with pytest.raises(CompareError, match=rf"repeated column names: '{name}' \(2 times\)"):
        agentab.compare(data, **CONTINUOUS)


def test_plan_refuses_repeated_column_names():
    pilot = pd.DataFrame(np.zeros((10, 3)), columns=["task_id", "score", "score"])
    with pytest.raises(PowerError, match="repeated column names: 'score'"):
        agentab.power.plan(pilot, "score", 0.5, kind="continuous")


# --------------------------------------------------------------------------- #
# A candidate arm with one run
# --------------------------------------------------------------------------- #
def test_one_run_candidate_at_the_top_level_gets_advice_not_a_scipy_error():
    # The observed Cliff's delta is exactly what moving every baseline run to the top level gives: no
    # proportional-odds shift reaches it, and brentq raised "f(a) and f(b) must have different signs".
    base = [3, 2, 3, 2, 1, 3, 3, 3, 3, 2, 0, 3, 3, 3, 2, 2, 3, 3, 3]
    tasks = [6, 3, 5, 6, 8, 3, 0, 6, 4, 7, 4, 3, 0, 4, 5, 6, 7, 1, 5]
    data = _frame([float(v) for v in base], [3.0], base_tasks=tasks, cand_tasks=[1])
    result = agentab.compare(data, metrics={"score": "ordinal"}, primary="score", **FAST)
    assert result.decision.verdict == "inconclusive"
    assert result.decision.reasons[-1].startswith("no sample-size advice: the observed effect is not a finite change")


@pytest.mark.parametrize("kind, primary", [("binary", "score"), ("ordinal", "score"), ("continuous", "score"),
                                           ("cost", "score p50")])
def test_one_run_candidates_never_raise_untyped(kind, primary):
    rng = np.random.default_rng(8)
    for trial in range(6):
        n = int(rng.integers(6, 25))
        values = rng.choice(4, n, p=rng.dirichlet(np.full(4, 0.3))).astype(float)
        cand = float(rng.integers(0, 4))
        if kind == "binary":
            values, cand = (values > 1).astype(float), float(cand > 1)
        data = _frame(values, [cand], base_tasks=rng.integers(0, max(2, n // 2), n), cand_tasks=[int(rng.integers(0, 3))])
        try:
            result = agentab.compare(data, metrics={"score": kind}, primary=primary, n_resamples=199)
        except CompareError:
            continue
        row = result.table.iloc[0]
        assert not (np.isfinite(row.p_value) and np.isnan(row.effect))


def test_log_odds_for_delta_is_nan_beyond_the_reachable_delta():
    shares = np.array([0.1, 0.2, 0.2, 0.5])
    top = 1 - shares[-1]  # every baseline run moved to the top level: the largest delta a shift reaches
    assert math.isnan(log_odds_for_delta(shares, top))
    assert math.isnan(log_odds_for_delta(shares, top + 0.01))
    inside = log_odds_for_delta(shares, 0.3)
    assert float(cliff_delta(shares, po_shift(shares, inside))) == pytest.approx(0.3)


def test_sample_size_with_unreachable_candidate_shares_is_a_power_error():
    with pytest.raises(PowerError, match="no proportional-odds shift"):
        agentab.power.sample_size(kind="ordinal", baseline=[0.5, 0.5], effect=[0.0, 1.0])


# --------------------------------------------------------------------------- #
# Found by trying hostile values on compare and plan
# --------------------------------------------------------------------------- #
def test_integers_beyond_float64_are_refused():
    data = _frame([10**400] * 20, [1] * 20)
    data["score"] = data["score"].astype(object)
    with pytest.raises(CompareError, match="metric 'score' has a value that is not a float64 number"):
        agentab.compare(data, **CONTINUOUS)


def test_complex_metrics_are_refused_not_truncated():
    rng = np.random.default_rng(9)
    data = _frame(rng.random(20) + 1j, rng.random(20) + 0j)
    with pytest.raises(CompareError, match="metric 'score' holds complex numbers"):
        agentab.compare(data, **CONTINUOUS)
    mixed = _frame([1.0] * 20, [1.0] * 20)
    mixed["score"] = pd.Series([1.0] * 39 + [2 + 3j], dtype=object)
    with pytest.raises(CompareError, match=r"metric 'score' has 1 non-numeric value\(s\), e.g. \(2\+3j\)"):
        agentab.compare(mixed, **CONTINUOUS)


def test_a_guardrail_margin_beyond_float_range_is_refused():
    rng = np.random.default_rng(14)
    data = _frame(rng.random(20), rng.random(20))
    data["tokens"] = rng.integers(1, 100, 40)
    with pytest.raises(CompareError, match=r"guardrail 'tokens': the margin of 'p95 <= \+1e400%' is beyond"):
        agentab.compare(data, guardrails={"tokens": "p95 <= +1e400%"}, **CONTINUOUS)


def test_a_cluster_that_is_not_a_column_name_is_refused():
    rng = np.random.default_rng(15)
    with pytest.raises(CompareError, match=r"`cluster` must name the task column \(or be None\), got \['task_id'\]"):
        agentab.compare(_frame(rng.random(20), rng.random(20)), cluster=["task_id"], **CONTINUOUS)


@pytest.mark.parametrize("kind, effect", [("continuous", 1e300), ("cost", 1e300), ("count", 1e7)])
def test_plan_refuses_effects_beyond_float_range(kind, effect):
    rng = np.random.default_rng(10)
    pilot = pd.DataFrame({"task_id": np.arange(40) % 10, "score": rng.integers(1, 50, 40).astype(float)})
    with pytest.raises(PowerError, match=r"effect .* is beyond \+-1e\+06"):
        agentab.power.plan(pilot, "score", effect, kind=kind)


def test_plan_with_an_odds_ratio_no_task_shift_reaches_is_a_power_error():
    # With between-task variance (ICC > 0) a shift of every task by 30 on the logit scale falls short of the
    # population Cliff's delta of an odds ratio of 1e13: brentq raised "f(a) and f(b) must have different signs".
    rng = np.random.default_rng(0)
    tasks = np.arange(60) % 12
    pilot = pd.DataFrame({"task_id": tasks, "score": np.clip(np.round(rng.normal(tasks % 4, 0.7)), 0, 3)})
    with pytest.raises(PowerError, match="no shift of the pilot's levels reaches the effect asked for"):
        agentab.power.plan(pilot, "score", 1e13, kind="ordinal")


def test_plan_with_a_vanishing_effect_says_no_design_reaches_it():
    rng = np.random.default_rng(11)
    pilot = pd.DataFrame({"task_id": np.arange(40) % 10, "score": rng.random(40)})
    with pytest.raises(PowerError, match="no design up to"):
        agentab.power.plan(pilot, "score", 1e-300, kind="continuous")


def test_compare_with_a_huge_min_effect_gives_advice_words_not_an_overflow():
    rng = np.random.default_rng(12)
    data = _frame(rng.random(40), rng.random(40))
    result = agentab.compare(data, min_effect=1e300, **CONTINUOUS)
    assert result.decision.reasons[-1].startswith("no sample-size advice: effect 1e+300 is beyond")


def test_power_refuses_n_beyond_the_searched_range():
    with pytest.raises(PowerError, match="n must be at most 100,000,000 runs per arm"):
        agentab.power.mde(kind="continuous", n=10**300)
