"""The interaction test of ordinal (Cliff's delta) and quantile (cost, count) effects across slices."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab.comparison.slices import compare_slices
from agentab.stats.interaction import slice_interaction_runs


def _runs(rng: np.random.Generator, *, n: int = 30, slices: int = 3, seeds: int = 4, planted: bool, paired: bool,
          kind: str) -> tuple:
    """Runs of both arms with task effects (ICC 0.5 on the latent scale) and a common or a slice-varying lift."""
    task = np.repeat(np.arange(n * slices), seeds)
    label = task // n
    tasks = np.array([f"t{t:03d}" for t in task])
    level = rng.normal(0, 1, n * slices)
    lift = (np.array([0.0, 0.6, 1.2]) if planted else np.full(3, 0.6))[label]
    x = level[task] + rng.normal(0, 1, len(task))
    other = level if paired else rng.normal(0, 1, n * slices)
    y = other[task] + lift + rng.normal(0, 1, len(task))
    if kind == "ordinal":
        x, y = np.digitize(x, [-1.0, 0.0, 1.0]), np.digitize(y, [-1.0, 0.0, 1.0])
    else:
        x, y = np.round(np.exp(7 + x)), np.round(np.exp(7 + y))
    return x, y, label, tasks, (tasks if paired else np.char.add(tasks, "-c"))


@pytest.mark.parametrize("kind", ["ordinal", "quantile"])
@pytest.mark.parametrize("paired", [True, False])
def test_a_common_effect_is_no_interaction_and_a_planted_one_is_found(kind, paired):
    rng = np.random.default_rng(11)
    x, y, label, xt, yt = _runs(rng, planted=True, paired=paired, kind=kind, n=40)
    found = slice_interaction_runs(x, y, label, label, kind=kind, x_strata=xt, y_strata=yt, paired=paired, q=0.5,
                                   n_resamples=499, rng=np.random.default_rng(0))
    assert found.pvalue < 0.01 and found.design_kind == ("paired" if paired else "clustered")
    assert found.effects[0] < found.effects[2]
    pvalues = []
    for r in range(12):
        x, y, label, xt, yt = _runs(np.random.default_rng(100 + r), planted=False, paired=paired, kind=kind)
        pvalues.append(slice_interaction_runs(x, y, label, label, kind=kind, x_strata=xt, y_strata=yt, paired=paired,
                                              q=0.5, n_resamples=199, rng=np.random.default_rng(r)).pvalue)
    assert np.mean(np.array(pvalues) < 0.05) <= 0.25 and np.median(pvalues) > 0.2


def test_the_result_does_not_depend_on_the_batch_size(monkeypatch):
    import agentab.stats.interaction as module

    x, y, label, xt, yt = _runs(np.random.default_rng(3), planted=False, paired=True, kind="ordinal", n=10)
    first = slice_interaction_runs(x, y, label, label, kind="ordinal", x_strata=xt, y_strata=yt, paired=True,
                                   n_resamples=300, rng=np.random.default_rng(2))
    monkeypatch.setattr(module, "BATCH_VALUES", 500)
    second = slice_interaction_runs(x, y, label, label, kind="ordinal", x_strata=xt, y_strata=yt, paired=True,
                                    n_resamples=300, rng=np.random.default_rng(2))
    assert first.pvalue == second.pvalue and first.statistic == second.statistic


def _frame(kind: str) -> pd.DataFrame:
    x, y, label, xt, yt = _runs(np.random.default_rng(5), planted=True, paired=True, kind=kind, n=12, seeds=3)
    column = "rubric" if kind == "ordinal" else "tokens"
    rows = [pd.DataFrame({"arm": "baseline", "task_id": xt, column: x, "group": label}),
            pd.DataFrame({"arm": "candidate", "task_id": yt, column: y, "group": label})]
    return pd.concat(rows, ignore_index=True).assign(group=lambda d: d["group"].map({0: "a", 1: "b", 2: "c"}))


@pytest.mark.parametrize("kind, metrics, primary", [("ordinal", {"rubric": "ordinal"}, "rubric"),
                                                    ("quantile", {"tokens": "cost"}, "tokens p95"),
                                                    ("quantile", {"tokens": "cost"}, "tokens p50")])
def test_compare_slices_runs_it_on_the_slices_own_effects(kind, metrics, primary):
    data = _frame(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        result = compare_slices(data, "group", metrics=metrics, primary=primary, n_resamples=199, seed=1)
        again = compare_slices(data, "group", metrics=metrics, primary=primary, n_resamples=199, seed=1)
    assert 0 < result.interaction_pvalue <= 1 and result.interaction_pvalue == again.interaction_pvalue
    assert np.allclose(result.interaction.effects, result.slices["effect"], rtol=1e-12, atol=1e-12)
    assert result.interaction.n_units == (12, 12, 12)
    assert not any("no interaction test" in n for n in result.notes)
