"""The max-T across candidates for ordinal and quantile primary metrics: brute force, bounds, the fallback."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from agentab import compare
from agentab.stats.arms import max_t_arms

METRICS = {"outcome": "binary", "rubric": "ordinal", "tokens": "cost"}


def runs(arms: int = 3, tasks: int = 8, seeds: int = 2, lift: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """A baseline "prod" and candidates c1.. on the same tasks; rubric 0-3 and tokens with task effects."""
    rng = np.random.default_rng(seed)
    level = rng.normal(0, 1, tasks)
    rows = []
    for i, a in enumerate(["prod", *(f"c{j}" for j in range(1, arms))]):
        shift = lift if i == 1 else 0.0
        for t in range(tasks):
            for s in range(seeds):
                latent = level[t] + shift + rng.normal(0, 1)
                rows.append({"arm": a, "task_id": f"t{t:02d}", "seed": s, "outcome": bool(latent > 0),
                             "rubric": int(np.digitize(latent, [-1.0, 0.0, 1.0])),
                             "tokens": float(np.round(np.exp(7 + 0.5 * level[t] - 0.3 * shift + rng.normal(0, 0.5))))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- #
# Brute force, written out without agentab's code
# --------------------------------------------------------------------------- #
def _cliff_t(base: list[np.ndarray], cand: list[np.ndarray], levels: np.ndarray) -> float:
    """Studentized Cliff's delta of the task-averaged level shares: delta over the SE of the tasks' influence values
    (each arm's runs per task given as arrays)."""
    share = lambda runs: np.array([[(v == lv).mean() for lv in levels] for v in runs])
    bs, cs = share(base), share(cand)
    n, k = bs.shape
    b, c = bs.mean(axis=0), cs.mean(axis=0)
    above = lambda dist, i: dist[i + 1:].sum()  # P(level > i)
    below = lambda dist, i: dist[:i].sum()  # P(level < i)
    delta = sum(c[i] * (below(b, i) - above(b, i)) for i in range(k))
    h = np.array([sum(bs[t, i] * (above(c, i) - below(c, i)) + cs[t, i] * (below(b, i) - above(b, i))
                      for i in range(k)) for t in range(n)])
    se = h.std(ddof=1) / np.sqrt(n)
    return 0.0 if se == 0 and delta == 0 else (np.inf * np.sign(delta) if se == 0 else delta / se)


def _quantile(runs: list[np.ndarray], q: float) -> float:
    """Inverse-ECDF quantile with every task weighing the same, shared by its runs."""
    v = np.concatenate(runs)
    w = np.concatenate([np.full(len(r), 1.0 / len(r) / len(runs)) for r in runs])
    order = np.argsort(v, kind="stable")
    return float(v[order][np.searchsorted(np.cumsum(w[order]), q - 1e-9)])


def _step_down(observed: np.ndarray, flipped: np.ndarray) -> np.ndarray:
    """Westfall-Young step-down over every pattern from |T| (patterns x hypotheses), the 1e-9 tie rule."""
    h = len(observed)
    order = np.argsort(-observed, kind="stable")
    step = np.empty(h)
    for j, hyp in enumerate(order):
        thr = observed[hyp] - 1e-9 * max(1.0, observed[hyp])
        step[hyp] = (flipped[:, order[j:]].max(axis=1) >= thr).mean()
    step[order] = np.maximum.accumulate(step[order])
    return step


def _brute(data: pd.DataFrame, pairs: list[tuple[str, str]], kind: str, q: float = 0.5) -> np.ndarray:
    """Step-down max-T of "b against a" for every pair, over every pattern of swapped tasks."""
    column = "rubric" if kind == "ordinal" else "tokens"
    tasks = sorted(data["task_id"].unique())
    per = {(a, t): g[column].to_numpy(dtype=float) for (a, t), g in data.groupby(["arm", "task_id"])}
    stats = []
    for pattern in itertools.product((False, True), repeat=len(tasks)):  # the first pattern swaps nothing
        row = []
        for a, b in pairs:
            x = [per[(b if s else a, t)] for t, s in zip(tasks, pattern)]
            y = [per[(a if s else b, t)] for t, s in zip(tasks, pattern)]
            if kind == "ordinal":
                row.append(_cliff_t(x, y, np.unique(np.concatenate(x + y))))
            else:
                row.append(_quantile(y, q) - _quantile(x, q))
        stats.append(row)
    flipped = np.array(stats)
    observed = flipped[0]
    if kind != "ordinal":
        rms = np.sqrt((flipped**2).mean(axis=0))
        flipped, observed = flipped / rms, observed / rms
    return _step_down(np.abs(observed), np.abs(flipped))


@pytest.mark.parametrize("primary, kind, q", [("rubric", "ordinal", 0.5), ("tokens p50", "quantile", 0.5),
                                              ("tokens p95", "quantile", 0.95)])
def test_compare_is_the_brute_force_max_t_over_every_sign_flip(primary, kind, q):
    data = runs(arms=4, tasks=8, seed=2)
    cands = ["c1", "c2", "c3"]
    multi = compare(data, baseline="prod", candidate=cands, metrics=METRICS, primary=primary, n_resamples=999)
    assert multi.settings.adjustment == "max-T step-down" and multi.settings.exact and multi.settings.n_patterns == 256
    expected = _brute(data, [("prod", c) for c in cands], kind, q)
    got = np.array([multi.candidates[c].table.loc[0, "p_adjusted"] for c in cands])
    p_two = multi.table["p_value"].to_numpy()
    np.testing.assert_allclose(got, np.maximum(expected, p_two), rtol=0, atol=1e-12)
    assert not multi.notes  # the max-T's marginals are the two-arm tests' p-values on the same flips


@pytest.mark.parametrize("primary", ["rubric", "tokens p50", "tokens p95"])
@pytest.mark.parametrize("tasks", [12, 24])
def test_adjusted_never_below_the_single_pair_p_value(primary, tasks):
    data = runs(arms=5, tasks=tasks, seeds=3, lift=1.5, seed=tasks)
    metrics = {primary.split()[0]: METRICS[primary.split()[0]]}
    multi = compare(data, baseline="prod", candidate="all", metrics=metrics, primary=primary, n_resamples=299)
    assert multi.settings.adjustment == "max-T step-down"
    for name, comp in list(multi.candidates.items())[:2]:
        alone = compare(data, baseline="prod", candidate=name, metrics=metrics, primary=primary, n_resamples=299)
        assert comp.table.loc[0, "p_value"] == alone.table.loc[0, "p_value"]
        assert comp.table.loc[0, "p_adjusted"] >= alone.table.loc[0, "p_value"]
    assert (multi.pairs["p_adjusted"] >= multi.pairs["p_value"] - 1e-12).all() and len(multi.pairs) == 10
    assert not multi.notes


@pytest.mark.parametrize("kind", ["ordinal", "quantile"])
def test_the_pairs_family_is_the_brute_force_on_every_pair(kind):
    data = runs(arms=3, tasks=7, seed=5)
    arms = ["prod", "c1", "c2"]
    column = "rubric" if kind == "ordinal" else "tokens"
    values = [data.loc[data["arm"] == a, column].to_numpy(float) for a in arms]
    tasks = [data.loc[data["arm"] == a, "task_id"].to_numpy() for a in arms]
    res = max_t_arms(values, tasks, [(0, 1), (0, 2), (1, 2)], [[0, 1, 2]], kind=kind, q=0.5, n_resamples=999)
    fam = res.families[0]
    assert fam.exact and fam.n_patterns == 128
    expected = _brute(data, [("prod", "c1"), ("prod", "c2"), ("c1", "c2")], kind)
    np.testing.assert_allclose(fam.adjusted, np.maximum(expected, fam.pvalue), rtol=0, atol=1e-12)
    assert (fam.adjusted >= fam.pvalue - 1e-12).all() and (fam.adjusted <= fam.single_step + 1e-12).all()


def test_holm_stays_for_unpaired_arms():
    data = runs(arms=3, tasks=20, seed=1)
    data = data[~((data["arm"] == "c1") & (data["task_id"] < "t10"))]
    data = data[~((data["arm"] != "c1") & (data["task_id"] >= "t10"))]  # c1 ran other tasks than the baseline
    multi = compare(data, baseline="prod", candidate="all", metrics=METRICS, primary="rubric", n_resamples=199)
    assert multi.settings.adjustment == "holm" and "not paired by task" in multi.adjustment and multi.pairs.empty
