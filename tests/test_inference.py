"""The studentized permutation tests and their inverted intervals, against references written here from their definitions.

Every reference below enumerates the permutations itself (``itertools.product`` for sign flips,
``itertools.combinations`` for reassignments) and computes the statistic with scipy
(``ttest_1samp``, ``ttest_ind(equal_var=False)``, ``brunnermunzel``) or from runs, never through
agentab. The conventions compared are those of the design notes:

- two-sided p-value: ``min(1, 2 * smaller tail)``; exact tails count permutations tied with the
  observed statistic (within a relative 1e-9 on the t scale, 1e-12 of the largest task difference on
  the mean scale, far below any real gap in these data); Monte Carlo tails are ``(1 + count) / (1 + B)``;
- a decision rejects at ``p < alpha`` with ``alpha = 1 - confidence_level``;
- paired interval: ``{theta : sign-flip p-value of d - theta >= alpha}``;
- two-sample interval: ``[estimate - se * x_hi, estimate - se * x_lo]`` with ``x_lo``, ``x_hi`` the
  extreme values of the permutation distribution of ``t*`` that the two-sided test does not reject.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from agentab.errors import StatsWarning
from agentab.stats import (
    mean_difference,
    ordinal_superiority,
    pass_k_difference,
    rate_difference,
)

#: Relative tie tolerance of the references on the t scale (the same permutation value reached by sums in another order).
T_TIES = 1e-9


# --------------------------------------------------------------------------- #
# References
# --------------------------------------------------------------------------- #
def _signs(n: int) -> np.ndarray:
    """Every sign pattern of ``n`` tasks, one per row (the first row flips nothing)."""
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def _two_sided(greater: float, less: float) -> float:
    return min(1.0, 2.0 * min(greater, less))


def _tails(null: np.ndarray, observed: float, tol: float) -> tuple[float, float]:
    """Exact tails ``P(null >= observed)`` and ``P(null <= observed)``, ties within ``tol`` counted in both."""
    return float(np.mean(null >= observed - tol)), float(np.mean(null <= observed + tol))


def _tie_weights(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """The documented tie-breaking task weights, rebuilt here: ``1 + 1e-6 * rank(task mean over both arms) / T``,
    average ranks for ties (scipy.stats.rankdata); ``base``/``cand`` are the per-task summaries."""
    score = (np.asarray(cand, dtype=float) + np.asarray(base, dtype=float)) / 2
    return 1.0 + 1e-6 * sps.rankdata(score) / len(score)


def _flip_pvalue(d: np.ndarray, theta: float = 0.0, alternative: str = "two-sided", u: np.ndarray | None = None) -> float:
    """Sign-flip p-value of the (``u``-weighted) mean of ``d - theta`` over all ``2^len(d)`` flips."""
    e = (d - theta) * (np.ones(len(d)) if u is None else u)
    means = (_signs(len(e)) * e).mean(axis=1)
    greater, less = _tails(means, e.mean(), 1e-12 * max(float(np.abs(e).max()), 1e-300))
    return {"greater": greater, "less": less, "two-sided": _two_sided(greater, less)}[alternative]


def _mid_p(null: np.ndarray, observed: float, tol: float) -> float:
    """Two-sided exact mid-p value: the permutations tied with ``observed`` count half in each tail."""
    tied = float(np.mean(np.abs(null - observed) <= tol))
    greater, less = _tails(null, observed, tol)
    return _two_sided(greater - tied / 2, less - tied / 2)


def _flip_pvalue_t(d: np.ndarray, u: np.ndarray) -> float:
    """The same test with the one-sample t statistic (scipy.stats.ttest_1samp) of every flipped weighted vector."""
    t = sps.ttest_1samp(_signs(len(d)) * d * u, 0.0, axis=1).statistic
    assert np.isfinite(t).all()  # the datasets below have no flipped vector with every value equal
    observed = float(t[0])
    return _two_sided(*_tails(t, observed, T_TIES * max(1.0, abs(observed))))


def _welch_t(cand: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Welch's t of candidate minus baseline, by scipy, on rows (0/0 read as 0, x/0 as +-inf)."""
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t = sps.ttest_ind(cand, base, equal_var=False, axis=-1).statistic
    return np.nan_to_num(np.asarray(t, dtype=float), nan=0.0, posinf=np.inf, neginf=-np.inf)


def _reassignments(pooled: np.ndarray, n_cand: int) -> tuple[np.ndarray, np.ndarray]:
    """Every split of ``pooled`` into a candidate arm of ``n_cand`` units and a baseline arm (one row each)."""
    n = len(pooled)
    cand, base = [], []
    for chosen in itertools.combinations(range(n), n_cand):
        mask = np.zeros(n, dtype=bool)
        mask[list(chosen)] = True
        cand.append(pooled[mask])
        base.append(pooled[~mask])
    return np.array(cand), np.array(base)


def _null_pvalue(null: np.ndarray, tau: float) -> float:
    """Two-sided exact p-value of ``tau`` against the enumerated studentized values ``null``."""
    tol = 0.0 if np.isinf(tau) else T_TIES * max(1.0, abs(tau))
    return _two_sided(*_tails(null, tau, tol))


def _accepted_range(null: np.ndarray, alpha: float) -> tuple[float, float]:
    """``(x_lo, x_hi)``: the smallest and largest values of ``null`` whose two-sided p-value is at least ``alpha``."""
    accepted = [v for v in np.unique(null) if _null_pvalue(null, float(v)) >= alpha]
    return float(min(accepted)), float(max(accepted))


def _bm_statistic(cand: np.ndarray, base: np.ndarray) -> np.ndarray:
    """scipy's Brunner-Munzel statistic on rows, positive when the candidate ranks higher; 0/0 -> 0, x/0 -> +-inf."""
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t = np.asarray(sps.brunnermunzel(base, cand, axis=-1).statistic, dtype=float)
    return np.where(np.isnan(t), 0.0, t)


def _check_interval_by_pvalue(low: float, high: float, pvalue_at, alpha: float, clip: tuple[float, float] | None = None) -> None:
    """Just inside each bound (and across the interval) the reference p-value is >= alpha, just outside < alpha.

    The p-value is a step function of the hypothesised effect; a bound sits on a step, so the
    reference is probed ``eps = 1e-7 * width`` on each side: far beyond the tie tolerances
    (1e-9 relative), far below the gap to any other step in these data. A bound at the edge of
    the metric's range (``clip``) is only probed inside.
    """
    assert np.isfinite(low) and np.isfinite(high) and low < high
    eps = 1e-7 * (high - low)
    for theta in np.r_[low + eps, np.linspace(low, high, 13)[1:-1], high - eps]:
        assert pvalue_at(theta) >= alpha, theta
    if clip is None or low > clip[0]:
        assert pvalue_at(low - eps) < alpha
    if clip is None or high < clip[1]:
        assert pvalue_at(high + eps) < alpha


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tasks x seeds array -> the runs and the task of every run."""
    values = np.asarray(values, dtype=float)
    return values.ravel(), np.repeat(np.arange(values.shape[0]), values.shape[1])


# --------------------------------------------------------------------------- #
# 1. Paired: every sign flip
# --------------------------------------------------------------------------- #
def _paired_datasets() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(20261201)
    out = []
    # binary, 3 seeds, 8 tasks: zero and tied differences
    out.append(("binary-8x3", np.array([[1, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 0, 0]]),
                np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0], [1, 1, 1], [1, 1, 1], [0, 1, 1], [1, 1, 1], [1, 0, 1]])))
    # binary, 1 seed, 10 tasks: differences in {-1, 0, 1}
    out.append(("binary-10x1", np.array([[0], [0], [1], [0], [1], [0], [0], [1], [0], [1]]),
                np.array([[1], [1], [1], [1], [0], [1], [0], [1], [1], [1]])))
    # binary, 4 seeds, 6 tasks
    out.append(("binary-6x4", (rng.random((6, 4)) < 0.3).astype(float), (rng.random((6, 4)) < 0.8).astype(float)))
    # continuous on a grid of 0.5 (tied and zero differences), 2 seeds, 9 tasks
    base = np.round(2 * rng.normal(0, 1, (9, 2))) / 2
    cand = base + np.round(2 * rng.normal(0.6, 0.8, (9, 2))) / 2
    cand[[1, 4]] = base[[1, 4]]  # two tasks with no difference at all
    out.append(("grid-9x2", base, cand))
    # continuous, 1 seed, 7 tasks, no ties
    out.append(("normal-7x1", rng.normal(0, 1, (7, 1)), rng.normal(1.2, 1, (7, 1))))
    return out


@pytest.mark.parametrize(("name", "base", "cand"), _paired_datasets(), ids=[c[0] for c in _paired_datasets()])
@pytest.mark.parametrize("level", [0.95, 0.9])
def test_paired_pvalue_and_interval_match_full_enumeration(name, base, cand, level):
    """Reference: all 2^T sign flips of the task differences, by itertools.product; p of the mean and of
    scipy.stats.ttest_1samp's t on every flipped vector (the same p: t is increasing in the mean under
    flips); the interval probed by the enumerated p-value of ``H0: effect = theta`` at its bounds."""
    x, tasks = _runs(base)
    y, _ = _runs(cand)
    binary = name.startswith("binary")
    fn = rate_difference if binary else mean_difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = fn(x, y, x_strata=tasks, y_strata=tasks, confidence_level=level, rng=0)
        ones = {alt: fn(x, y, x_strata=tasks, y_strata=tasks, alternative=alt, rng=0).pvalue for alt in ("greater", "less")}
        mid = fn(x, y, x_strata=tasks, y_strata=tasks, confidence_level=level, mid_p=True, rng=0)
    bm, cm = np.asarray(base, dtype=float).mean(axis=1), np.asarray(cand, dtype=float).mean(axis=1)
    d, u = cm - bm, _tie_weights(bm, cm)
    assert res.design_kind == "paired" and res.exact is True
    assert f"exact, all {2 ** len(d)}" in res.method
    reference = _flip_pvalue(d, u=u)
    assert _flip_pvalue_t(d, u) == reference
    assert res.pvalue == pytest.approx(reference, rel=1e-12)
    # ties broken: never less evidence than the plain mean's sign-flip test
    assert res.pvalue <= _flip_pvalue(d) + 1e-12
    # the smallest p-value of any data with these |differences|: the flipped means are the same set for all of them
    means = (_signs(len(d)) * d * u).mean(axis=1)
    tol = 1e-12 * float(np.abs(d).max())
    smallest = min(_two_sided(*_tails(means, float(v), tol)) for v in np.unique(means))
    assert res.smallest_pvalue == pytest.approx(smallest, rel=1e-12)
    for alt, p in ones.items():
        assert p == pytest.approx(_flip_pvalue(d, alternative=alt, u=u), rel=1e-12)
    assert mid.pvalue == pytest.approx(_mid_p(means, float((d * u).mean()), tol), rel=1e-12)
    assert tuple(mid.confidence_interval) == tuple(res.confidence_interval)  # mid-p reports the exact test's interval
    alpha = round(1 - level, 12)  # the documented alpha: 1 - 0.95 is 0.050000000000000044 in floating point
    low, high = res.confidence_interval
    _check_interval_by_pvalue(low, high, lambda theta: _flip_pvalue(d, theta, u=u), alpha, clip=(-1.0, 1.0) if binary else None)
    assert (res.pvalue < alpha) == (low > 0 or high < 0)


# --------------------------------------------------------------------------- #
# 2. Paired, 14-16 tasks: every flip (2^T resamples asked for)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("n_tasks", "p_base", "p_cand", "seed"), [(16, 0.4, 0.7, 1), (14, 0.5, 0.5, 2), (15, 0.3, 0.75, 3)])
def test_paired_16_tasks_match_full_enumeration(n_tasks, p_base, p_cand, seed):
    """Reference: all 2^T sign flips (T = 14-16 tasks, 3 seeds, binary) enumerated in numpy, as agentab does
    when asked for 2^T resamples: the same p-value and the same interval (probed at its bounds by the
    enumerated p-value of ``H0: effect = theta``); with 999 resamples, a Monte Carlo p-value within its error."""
    rng = np.random.default_rng(seed)
    base = (rng.random((n_tasks, 3)) < p_base).astype(float)
    cand = (rng.random((n_tasks, 3)) < p_cand).astype(float)
    x, tasks = _runs(base)
    y, _ = _runs(cand)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = rate_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=2**n_tasks, rng=0)
        drawn = rate_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=999, rng=0)
    assert res.exact is True and res.n_permutations == 2**n_tasks and drawn.exact is False
    d, u = cand.mean(axis=1) - base.mean(axis=1), _tie_weights(base.mean(axis=1), cand.mean(axis=1))
    reference = _flip_pvalue(d, u=u)
    assert res.pvalue == pytest.approx(reference, rel=1e-12)
    assert abs(drawn.pvalue - reference) <= 4 * math.sqrt(max(reference, 0.01) * 2 / 1000) + 2 / 1000
    low, high = res.confidence_interval
    _check_interval_by_pvalue(low, high, lambda theta: _flip_pvalue(d, theta, u=u), 0.05, clip=(-1.0, 1.0))
    assert (res.pvalue < 0.05) == (low > 0 or high < 0)


def test_paired_integer_values_match_full_enumeration():
    """Reference: all 2^14 sign flips of the task differences of an integer metric (0-5, 2 seeds per
    task), enumerated by agentab too when asked for 2^14 resamples."""
    rng = np.random.default_rng(8)
    base = rng.integers(0, 6, (14, 2)).astype(float)
    cand = np.clip(base + rng.integers(-1, 3, (14, 2)), 0, 5)
    x, tasks = _runs(base)
    y, _ = _runs(cand)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = mean_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=2**14, rng=0)
    assert res.exact is True
    d, u = cand.mean(axis=1) - base.mean(axis=1), _tie_weights(base.mean(axis=1), cand.mean(axis=1))
    assert res.pvalue == pytest.approx(_flip_pvalue(d, u=u), rel=1e-12)
    low, high = res.confidence_interval
    _check_interval_by_pvalue(low, high, lambda theta: _flip_pvalue(d, theta, u=u), 0.05)


def _pass_hat(successes: np.ndarray, k: int) -> np.ndarray:
    """Unbiased per-task pass^k, C(c, k) / C(n, k) over the seeds of each row (tau-bench, eq. 1)."""
    n = successes.shape[1]
    return np.array([math.comb(int(c), k) / math.comb(n, k) for c in successes.sum(axis=1)])


@pytest.mark.parametrize("case", ["pass^2", "unequal seeds"])
def test_paired_pass_k_and_unequal_seeds_match_full_enumeration(case):
    """Reference: all 2^T sign flips of per-task differences computed here: of the unbiased pass^2
    (math.comb, 9 tasks x 4 seeds), and of task means with 1-4 seeds per task and arm (10 tasks; every
    task weighs the same whatever its seeds); the interval probed at its bounds."""
    rng = np.random.default_rng(9)
    if case == "pass^2":
        base = (rng.random((9, 4)) < 0.5).astype(float)
        cand = (rng.random((9, 4)) < 0.8).astype(float)
        x, tasks = _runs(base)
        y, _ = _runs(cand)
        xs = ys = tasks
        d, u = _pass_hat(cand, 2) - _pass_hat(base, 2), _tie_weights(_pass_hat(base, 2), _pass_hat(cand, 2))
        fn, clip = (lambda *a, **k: pass_k_difference(*a, k=2, **k)), (-1.0, 1.0)
    else:
        base_runs = [rng.normal(t / 3, 1, int(rng.integers(1, 5))) for t in range(10)]
        cand_runs = [rng.normal(t / 3 + 0.7, 1, int(rng.integers(1, 5))) for t in range(10)]
        x, xs = _flat(base_runs)
        y, ys = _flat(cand_runs)
        d = np.array([c.mean() - b.mean() for b, c in zip(base_runs, cand_runs)])
        u = _tie_weights(np.array([b.mean() for b in base_runs]), np.array([c.mean() for c in cand_runs]))
        fn, clip = mean_difference, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = fn(x, y, x_strata=xs, y_strata=ys, rng=0)
    assert res.design_kind == "paired" and res.exact is True
    assert res.statistic == pytest.approx(d.mean(), rel=1e-12)
    assert res.pvalue == pytest.approx(_flip_pvalue(d, u=u), rel=1e-12)
    low, high = res.confidence_interval
    _check_interval_by_pvalue(low, high, lambda theta: _flip_pvalue(d, theta, u=u), 0.05, clip=clip)


# --------------------------------------------------------------------------- #
# 3. Clustered: every reassignment of whole tasks
# --------------------------------------------------------------------------- #
def _clustered_data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """5 baseline and 6 candidate tasks (other ids), 1-3 seeds each: runs and task ids per arm."""
    rng = np.random.default_rng(seed)
    x, xs, y, ys = [], [], [], []
    for t in range(5):
        k = int(rng.integers(1, 4))
        x += list(rng.normal(rng.normal(0, 1), 0.5, k))
        xs += [f"b{t}"] * k
    for t in range(6):
        k = int(rng.integers(1, 4))
        y += list(rng.normal(rng.normal(1.0, 2.0), 0.5, k))
        ys += [f"c{t}"] * k
    return np.array(x), np.array(xs), np.array(y), np.array(ys)


def _task_means(values: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    return np.array([values[tasks == t].mean() for t in dict.fromkeys(tasks)])


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_clustered_pvalue_and_interval_match_all_reassignments(seed):
    """Reference: all C(11, 5) = 462 reassignments of the 11 task means (itertools.combinations), Welch's
    t of each by scipy.stats.ttest_ind(equal_var=False); the interval [est - se * x_hi, est - se * x_lo]
    from the enumerated values and Welch's standard error of the task means."""
    x, xs, y, ys = _clustered_data(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = mean_difference(x, y, x_strata=xs, y_strata=ys, rng=0)
        ones = {alt: mean_difference(x, y, x_strata=xs, y_strata=ys, alternative=alt, rng=0).pvalue for alt in ("greater", "less")}
        mid = mean_difference(x, y, x_strata=xs, y_strata=ys, mid_p=True, rng=0).pvalue
    assert res.design_kind == "clustered" and res.exact is True and res.n_permutations == math.comb(11, 5)
    base_means, cand_means = _task_means(x, xs), _task_means(y, ys)
    observed = float(_welch_t(cand_means, base_means))
    cand_rows, base_rows = _reassignments(np.r_[base_means, cand_means], 6)
    null = _welch_t(cand_rows, base_rows)
    assert res.pvalue == pytest.approx(_null_pvalue(null, observed), rel=1e-12)
    tol = T_TIES * max(1.0, abs(observed))
    assert (ones["greater"], ones["less"]) == pytest.approx(_tails(null, observed, tol), rel=1e-12)
    assert mid == pytest.approx(_mid_p(null, observed, tol), rel=1e-12)
    assert res.smallest_pvalue == pytest.approx(min(_null_pvalue(null, float(v)) for v in np.unique(null)), rel=1e-12)
    estimate = cand_means.mean() - base_means.mean()
    se = math.sqrt(cand_means.var(ddof=1) / 6 + base_means.var(ddof=1) / 5)
    assert estimate / se == pytest.approx(observed, rel=1e-12)
    assert res.statistic == pytest.approx(estimate, rel=1e-12)
    x_lo, x_hi = _accepted_range(null, 0.05)
    low, high = res.confidence_interval
    # agentab widens each bound by its tie tolerance, 1e-9 * max(1, |x|) on the t scale
    assert low == pytest.approx(estimate - se * x_hi, rel=1e-8, abs=2e-9 * se * max(1.0, abs(x_hi)))
    assert high == pytest.approx(estimate - se * x_lo, rel=1e-8, abs=2e-9 * se * max(1.0, abs(x_lo)))
    _check_interval_by_pvalue(low, high, lambda theta: _null_pvalue(null, (estimate - theta) / se), 0.05)
    assert (res.pvalue < 0.05) == (low > 0 or high < 0)


@pytest.mark.parametrize(("n_base", "n_cand", "p_base", "p_cand", "values"), [(60, 50, 0.4, 0.6, (0, 1)), (45, 70, 0.2, 0.3, (2, 5))])
def test_two_valued_independent_runs_match_the_hypergeometric_law(n_base, n_cand, p_base, p_cand, values):
    """Reference: the candidate's count of the larger value is hypergeometric under the permutation of
    runs (scipy.stats.hypergeom); each count gives one Welch t (scipy.stats.ttest_ind on the runs it
    implies; 0/0 -> 0, x/0 -> +-inf), so the exact p-value and the interval
    [est - se * x_hi, est - se * x_lo] are sums over the support, weighted by the pmf."""
    rng = np.random.default_rng(n_base)
    low_v, high_v = values
    x = np.where(rng.random(n_base) < p_base, high_v, low_v).astype(float)
    y = np.where(rng.random(n_cand) < p_cand, high_v, low_v).astype(float)
    fn = rate_difference if values == (0, 1) else mean_difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = fn(x, y, rng=0)
    assert "hypergeometric" in res.method and res.exact is True
    total, high = n_base + n_cand, int((x == high_v).sum() + (y == high_v).sum())
    ks = np.arange(max(0, n_cand - (total - high)), min(high, n_cand) + 1)
    pmf = sps.hypergeom.pmf(ks, total, high, n_cand)
    cand_rows = np.array([np.r_[np.full(k, high_v), np.full(n_cand - k, low_v)] for k in ks], dtype=float)
    base_rows = np.array([np.r_[np.full(high - k, high_v), np.full(n_base - high + k, low_v)] for k in ks], dtype=float)
    null = _welch_t(cand_rows, base_rows)
    observed = float(_welch_t(y, x))
    tol = T_TIES * max(1.0, abs(observed))
    greater, less = float(pmf[null >= observed - tol].sum()), float(pmf[null <= observed + tol].sum())
    assert res.pvalue == pytest.approx(_two_sided(greater, less), rel=1e-9)
    order = np.argsort(null)
    t_sorted, w_sorted = null[order], pmf[order]
    at_most, at_least = np.cumsum(w_sorted), np.cumsum(w_sorted[::-1])[::-1]  # no ties: one count, one t
    assert len(np.unique(np.round(t_sorted, 9))) == len(t_sorted)
    accepted = t_sorted[np.minimum(1.0, 2 * np.minimum(at_most, at_least)) >= 0.05]
    estimate = y.mean() - x.mean()
    se = math.sqrt(x.var(ddof=1) / n_base + y.var(ddof=1) / n_cand)
    lo, hi = res.confidence_interval
    assert lo == pytest.approx(estimate - se * accepted.max(), rel=1e-8)
    assert hi == pytest.approx(estimate - se * accepted.min(), rel=1e-8)


def test_monte_carlo_pvalues_follow_phipson_smyth_and_agree_with_enumeration():
    """Reference: full enumeration of the 2^13 sign flips (paired, continuous task differences, so no
    exact shortcut at 2000 < 8192 resamples) and of the C(16, 8) = 12870 reassignments (clustered, 8 + 8
    tasks, 2000 resamples). A Monte Carlo two-sided p is 2 (1 + count) / (1 + B) (capped at 1), so
    p (1 + B) / 2 is a whole number, and it lies within 5 Monte Carlo standard deviations of the exact p."""
    rng = np.random.default_rng(10)
    b = 2000
    base, cand = rng.normal(0, 1, (13, 2)), rng.normal(0.0, 1, (13, 2))
    x, tasks = _runs(base)
    y, _ = _runs(cand)
    xb = rng.normal(0, 1, 16)
    xs = np.repeat([f"b{t}" for t in range(8)], 2)
    yc = rng.normal(0.5, 1.5, 16)
    ys = np.repeat([f"c{t}" for t in range(8)], 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        paired = mean_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=b, rng=1)
        clustered = mean_difference(xb, yc, x_strata=xs, y_strata=ys, n_resamples=b, rng=1)
    d = cand.mean(axis=1) - base.mean(axis=1)
    bm, cm = _task_means(xb, xs), _task_means(yc, ys)
    cand_rows, base_rows = _reassignments(np.r_[bm, cm], 8)
    exact = {"paired": _flip_pvalue(d, u=_tie_weights(base.mean(axis=1), cand.mean(axis=1))), "clustered": _null_pvalue(_welch_t(cand_rows, base_rows), float(_welch_t(cm, bm)))}
    for name, res in (("paired", paired), ("clustered", clustered)):
        assert res.exact is False and res.design_kind == name
        count = res.pvalue * (1 + b) / 2
        assert res.pvalue == 1.0 or count == pytest.approx(round(count), abs=1e-6), (name, res.pvalue)
        p = exact[name]
        assert 0.01 < p < 0.5  # a p-value the check can resolve
        assert abs(res.pvalue - p) <= 5 * 2 * math.sqrt(p / 2 * (1 - p / 2) / b), (name, res.pvalue, p)


# --------------------------------------------------------------------------- #
# 4. Ordinal: Brunner-Munzel over every reassignment of runs; Cliff's delta over every flip
# --------------------------------------------------------------------------- #
ORDINAL_INDEPENDENT = [
    ([0, 1, 1, 2, 3, 0, 2], [1, 2, 3, 3, 2, 3]),
    ([0, 0, 1, 1, 1, 2, 0], [2, 3, 3, 1, 2, 3]),
    ([2, 2, 1, 0, 3, 1, 2], [1, 2, 0, 2, 1, 3]),
    ([0, 0, 0, 0, 0, 3, 3], [0, 3, 3, 3, 3, 3]),  # two levels: heavy ties
]


@pytest.mark.parametrize(("x", "y"), ORDINAL_INDEPENDENT)
def test_ordinal_independent_matches_brunner_munzel_enumeration(x, y):
    """Reference: all C(13, 6) = 1716 reassignments of 7 + 6 runs, each scored by
    scipy.stats.brunnermunzel(baseline, candidate).statistic (positive when the candidate ranks higher;
    0/0 read as 0, x/0 as +-inf); Cliff's delta as the mean of sign(y - x) over all pairs; the interval
    [delta - se * x_hi, delta - se * x_lo] (clipped to [-1, 1]) with se = delta / the observed statistic."""
    x, y = np.array(x, dtype=float), np.array(y, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = {alt: ordinal_superiority(x, y, alternative=alt, rng=0) for alt in ("two-sided", "greater", "less")}
    two = res["two-sided"]
    assert two.exact is True and two.design_kind == "independent" and two.n_permutations == math.comb(13, 6)
    cand_rows, base_rows = _reassignments(np.r_[x, y], 6)
    null = _bm_statistic(cand_rows, base_rows)
    assert np.isinf(null).any() == (x.tolist() != ORDINAL_INDEPENDENT[0][0])  # complete separation: x/0, in all but the first
    observed = float(_bm_statistic(y, x))
    tol = T_TIES * max(1.0, abs(observed))
    greater, less = _tails(null, observed, tol)
    assert two.pvalue == pytest.approx(_two_sided(greater, less), rel=1e-12)
    assert res["greater"].pvalue == pytest.approx(greater, rel=1e-12)  # the sign: greater = candidate ranks higher
    assert res["less"].pvalue == pytest.approx(less, rel=1e-12)
    delta = float(np.mean(np.sign(y[:, None] - x[None, :])))
    assert two.statistic == pytest.approx(delta, abs=1e-12)
    assert np.isfinite(observed) and observed != 0
    se = delta / observed
    x_lo, x_hi = _accepted_range(null, 0.05)
    low, high = two.confidence_interval
    # agentab widens each bound by its tie tolerance, 1e-9 * max(1, |x|) on the t scale
    assert low == pytest.approx(max(-1.0, delta - se * x_hi), rel=1e-8, abs=2e-9 * se * max(1.0, abs(x_hi)))
    assert high == pytest.approx(min(1.0, delta - se * x_lo), rel=1e-8, abs=2e-9 * se * max(1.0, abs(x_lo)))
    assert (two.pvalue < 0.05) == (low > 0 or high < 0)


def _paired_cliff_t(base: list[np.ndarray], cand: list[np.ndarray]) -> float:
    """Cliff's delta of the task-averaged arms over its delta-method standard error, from runs.

    Every task weighs 1/T in its arm, a run 1/(T n_t). ``G_c(v)`` is P(candidate > v) - P(candidate < v)
    and ``G_b(v)`` is P(baseline < v) - P(baseline > v) under those weights; task ``t``'s influence is
    mean G_c over its baseline runs plus mean G_b over its candidate runs (the linearisation of the
    bilinear delta = sum of w_x w_y sign(y - x)), and se = sd(influences, ddof=1) / sqrt(T). A variance
    below 1e-12 of the mean squared influence is 0 (rounding of equal values); then 0/0 -> 0, x/0 -> +-inf.
    """
    n = len(base)
    bx = np.concatenate(base)
    cy = np.concatenate(cand)
    wb = np.concatenate([np.full(len(b), 1.0 / (n * len(b))) for b in base])
    wc = np.concatenate([np.full(len(c), 1.0 / (n * len(c))) for c in cand])

    def g_cand(v: np.ndarray) -> np.ndarray:  # placement of values v among the candidate runs
        return np.sign(cy[None, :] - v[:, None]) @ wc

    def g_base(v: np.ndarray) -> np.ndarray:
        return np.sign(v[:, None] - bx[None, :]) @ wb

    delta = float(wb @ g_cand(bx))
    h = np.array([g_cand(b).mean() + g_base(c).mean() for b, c in zip(base, cand)])
    var = h.var(ddof=1)
    if var <= 1e-12 * np.mean(h * h):
        var = 0.0
    se = math.sqrt(var / n)
    if se == 0:
        return 0.0 if abs(delta) < 1e-12 else math.copysign(math.inf, delta)
    return delta / se


def _paired_ordinal_data(seed: int, n_tasks: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    base, cand = [], []
    for _ in range(n_tasks):
        level = rng.normal(1.5, 1.0)
        base.append(np.clip(np.round(rng.normal(level, 0.8, int(rng.integers(1, 4)))), 0, 3))
        cand.append(np.clip(np.round(rng.normal(level + 0.6, 0.8, int(rng.integers(1, 4)))), 0, 3))
    return base, cand


def _flat(arms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate(arms), np.concatenate([np.full(len(a), t) for t, a in enumerate(arms)])


@pytest.mark.parametrize(("seed", "n_tasks"), [(11, 6), (12, 7), (13, 8)])
def test_ordinal_paired_matches_flip_enumeration_and_is_invariant(seed, n_tasks):
    """Reference: all 2^T arm swaps of whole tasks (T = 6-8, 1-3 seeds per arm and task, levels 0-3), each
    scored by the run-level delta-method statistic of :func:`_paired_cliff_t` (written from runs, not
    from level shares). Also: relabelling the levels (0-3 as 0, 1, 5, 10) changes nothing, and swapping
    the arms negates delta and its interval and keeps the two-sided p-value."""
    base, cand = _paired_ordinal_data(seed, n_tasks)
    x, xs = _flat(base)
    y, ys = _flat(cand)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = ordinal_superiority(x, y, x_strata=xs, y_strata=ys, rng=0)
        relabel = np.array([0.0, 1.0, 5.0, 10.0])
        again = ordinal_superiority(relabel[x.astype(int)], relabel[y.astype(int)], x_strata=xs, y_strata=ys, rng=0)
        swapped = ordinal_superiority(y, x, x_strata=ys, y_strata=xs, rng=0)
    assert res.design_kind == "paired" and res.exact is True
    null = []
    for signs in _signs(n_tasks):
        b = [bt if s > 0 else ct for s, bt, ct in zip(signs, base, cand)]
        c = [ct if s > 0 else bt for s, bt, ct in zip(signs, base, cand)]
        null.append(_paired_cliff_t(b, c))
    null = np.array(null)
    assert res.pvalue == pytest.approx(_null_pvalue(null, float(null[0])), rel=1e-12)
    assert (again.pvalue, again.statistic, *again.confidence_interval) == pytest.approx(
        (res.pvalue, res.statistic, *res.confidence_interval), rel=1e-12, abs=1e-15
    )
    assert swapped.statistic == pytest.approx(-res.statistic, abs=1e-12)
    assert swapped.pvalue == pytest.approx(res.pvalue, rel=1e-12)
    assert tuple(swapped.confidence_interval) == pytest.approx((-res.confidence_interval[1], -res.confidence_interval[0]), rel=1e-9, abs=1e-12)


def _clustered_cliff(base: list[np.ndarray], cand: list[np.ndarray]) -> tuple[float, float]:
    """Cliff's delta between task-averaged arms of different tasks and its delta-method standard error, from runs.

    A run weighs 1 / (n_arm n_t). A baseline task's influence is the mean over its runs of
    P(candidate > x) - P(candidate < x), a candidate task's the mean over its runs of
    P(baseline < y) - P(baseline > y); se^2 = var(baseline influences) / n_b + var(candidate
    influences) / n_c (ddof 1). With one run per task this is the Brunner-Munzel standard error.
    """
    bx, cy = np.concatenate(base), np.concatenate(cand)
    wb = np.concatenate([np.full(len(b), 1.0 / (len(base) * len(b))) for b in base])
    wc = np.concatenate([np.full(len(c), 1.0 / (len(cand) * len(c))) for c in cand])
    h_base = np.array([(np.sign(cy[None, :] - b[:, None]) @ wc).mean() for b in base])
    h_cand = np.array([(np.sign(c[:, None] - bx[None, :]) @ wb).mean() for c in cand])
    delta = float(wb @ (np.sign(cy[None, :] - bx[:, None]) @ wc))
    var = h_base.var(ddof=1) / len(base) + h_cand.var(ddof=1) / len(cand)
    return delta, math.sqrt(var if var > 1e-14 else 0.0)


@pytest.mark.parametrize("seed", [21, 22])
def test_ordinal_clustered_matches_reassignment_enumeration(seed):
    """Reference: all C(10, 5) = 252 reassignments of 5 + 5 tasks (1-3 runs each, levels 0-3), each scored
    by delta / se of :func:`_clustered_cliff` (from runs; 0/0 -> 0, x/0 -> +-inf); the interval
    [delta - se * x_hi, delta - se * x_lo] cut to [-1, 1]."""
    rng = np.random.default_rng(seed)
    base = [np.clip(np.round(rng.normal(rng.normal(1.2, 0.8), 0.7, int(rng.integers(1, 4)))), 0, 3) for _ in range(5)]
    cand = [np.clip(np.round(rng.normal(rng.normal(2.0, 0.8), 0.7, int(rng.integers(1, 4)))), 0, 3) for _ in range(5)]
    x, xs = _flat(base)
    y, ys = _flat(cand)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = ordinal_superiority(x, y, x_strata=np.char.add("b", xs.astype(str)), y_strata=np.char.add("c", ys.astype(str)), rng=0)
    assert res.design_kind == "clustered" and res.exact is True and res.n_permutations == 252
    units = base + cand
    null = []
    for chosen in itertools.combinations(range(10), 5):
        c = [units[i] for i in chosen]
        b = [units[i] for i in range(10) if i not in chosen]
        delta, se = _clustered_cliff(b, c)
        null.append(0.0 if delta == 0 and se == 0 else (delta / se if se > 0 else math.copysign(math.inf, delta)))
    null = np.array(null)
    delta, se = _clustered_cliff(base, cand)
    observed = delta / se
    assert res.statistic == pytest.approx(delta, abs=1e-12)
    assert res.pvalue == pytest.approx(_null_pvalue(null, observed), rel=1e-12)
    x_lo, x_hi = _accepted_range(null, 0.05)
    low, high = res.confidence_interval
    assert low == pytest.approx(max(-1.0, delta - se * x_hi), rel=1e-8, abs=2e-9 * se * max(1.0, abs(x_hi)))
    assert high == pytest.approx(min(1.0, delta - se * x_lo), rel=1e-8, abs=2e-9 * se * max(1.0, abs(x_lo)))


# --------------------------------------------------------------------------- #
# 5. The decision and the interval agree, on random small designs
# --------------------------------------------------------------------------- #
@st.composite
def _designs(draw):
    kind = draw(st.sampled_from(["paired", "clustered", "independent"]))
    metric = draw(st.sampled_from(["binary", "continuous", "ordinal"]))
    n_base = draw(st.integers(2, 12))
    n_cand = n_base if kind == "paired" else draw(st.integers(2, 12))
    seeds = draw(st.integers(1, 5))
    equal_seeds = draw(st.booleans())
    shift = draw(st.sampled_from([0.0, 0.5, 1.5]))
    # levels on a grid of 0.005, so that p-values equal to alpha (0.05 = 1/20, 0.1, 0.2 ...) do occur
    level = draw(st.integers(160, 198)) / 200
    n_resamples = draw(st.integers(99, 999))
    seed = draw(st.integers(0, 2**32 - 1))
    return kind, metric, n_base, n_cand, seeds, equal_seeds, shift, level, n_resamples, seed


def _simulate(kind, metric, n_base, n_cand, seeds, equal_seeds, shift, seed):
    """Runs and task ids of a design with task effects: baseline, then candidate."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1, max(n_base, n_cand))
    arms = []
    for arm, n in ((0, n_base), (1, n_cand)):
        values, tasks = [], []
        for t in range(n):
            k = seeds if equal_seeds else int(rng.integers(1, seeds + 1))
            level = (difficulty[t] if kind == "paired" else rng.normal(0, 1)) + shift * arm
            v = level + rng.normal(0, 1, k)
            if metric == "binary":
                v = (v > 0.5).astype(float)
            elif metric == "ordinal":
                v = np.clip(np.round(v + 1.5), 0, 3)
            values.append(v)
            tasks.append([f"{'t' if kind == 'paired' else 'bc'[arm]}{t}"] * k)
        arms.append((np.concatenate(values), np.concatenate(tasks)))
    (x, xs), (y, ys) = arms
    if kind == "independent":
        return x, None, y, None
    return x, xs, y, ys


def _pass_1(*args, **kwargs):
    return pass_k_difference(*args, k=1, **kwargs)


def _calls(metric: str, with_tasks: bool) -> list:
    if metric == "binary":
        calls = [rate_difference, mean_difference]
        return calls + [_pass_1] if with_tasks else calls
    return [mean_difference] if metric == "continuous" else [ordinal_superiority, mean_difference]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(_designs())
def test_decision_agrees_with_interval(design):
    """Reference: the definitions themselves. With ``alpha = 1 - confidence_level`` (rounded to 12
    decimals, the documented convention: 1 - 0.95 is 0.050000000000000044 in floating point), the
    two-sided p-value is below alpha exactly when the interval excludes 0; the interval contains the
    statistic; the same seed gives the same result. On 0/1 data, rate_difference, mean_difference and
    pass^1 are one test (pass^1 of a task is its success rate): the same p-value, and the rate's
    interval is the mean's cut to [-1, 1]."""
    kind, metric, n_base, n_cand, seeds, equal_seeds, shift, level, n_resamples, seed = design
    x, xs, y, ys = _simulate(kind, metric, n_base, n_cand, seeds, equal_seeds, shift, seed)
    alpha = round(1 - level, 12)
    results = {}
    for fn in _calls(metric, xs is not None):
        kwargs = {"x_strata": xs, "y_strata": ys, "confidence_level": level, "n_resamples": n_resamples, "rng": seed % 1000}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatsWarning)
            res = fn(x, y, **kwargs)
            again = fn(x, y, **kwargs)
        low, high = res.confidence_interval
        results[fn] = res
        assert not (np.isnan(low) or np.isnan(high) or np.isnan(res.pvalue))
        assert (res.pvalue < alpha) == (low > 0 or high < 0), (res.pvalue, low, high, res.method)
        event("rejects" if res.pvalue < alpha else ("p == alpha" if res.pvalue == alpha else "does not reject"))
        event("an infinite bound" if np.isinf([low, high]).any() else "finite bounds")
        if np.isfinite(res.statistic):
            assert low <= res.statistic <= high, (low, res.statistic, high)
        assert (again.statistic, again.pvalue, *again.confidence_interval) == (res.statistic, res.pvalue, low, high)
        assert res.design_kind == kind or (res.design_kind == "independent" and (seeds == 1 or not equal_seeds))
    if metric == "binary":
        rate, mean = results[rate_difference], results[mean_difference]
        for other in [mean] + ([results[_pass_1]] if _pass_1 in results else []):
            assert other.pvalue == pytest.approx(rate.pvalue, rel=1e-12)
        low, high = mean.confidence_interval
        assert tuple(rate.confidence_interval) == pytest.approx((max(low, -1.0), min(high, 1.0)), rel=1e-12, abs=1e-15)
        if _pass_1 in results:
            assert tuple(results[_pass_1].confidence_interval) == pytest.approx(tuple(rate.confidence_interval), rel=1e-12, abs=1e-15)


#: Changes of units (a, b): x -> a x + b, with an origin b no more than 1e4 times the spread (larger: test_ties_survive_a_large_common_origin).
UNIT_CHANGES = [(1e6, 0.0), (1e-6, 0.0), (2.5, 100.0), (1e3, -1e4), (0.01, 3.0)]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(_designs(), st.sampled_from(UNIT_CHANGES))
def test_mean_difference_is_invariant_to_units(design, transform):
    """Reference: the definitions are unit-free. Changing the metric's units and origin (a x + b, a > 0:
    tokens counted in millions, seconds in microseconds) leaves every studentized statistic and so the
    p-value unchanged, and scales the interval by a; ties (levels 0-3) are ties in any units."""
    kind, metric, n_base, n_cand, seeds, equal_seeds, shift, level, n_resamples, seed = design
    x, xs, y, ys = _simulate(kind, "continuous" if metric == "continuous" else "ordinal", n_base, n_cand, seeds, equal_seeds, shift, seed)
    a, b = transform
    kwargs = {"x_strata": xs, "y_strata": ys, "confidence_level": level, "n_resamples": n_resamples, "rng": seed % 1000}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = mean_difference(x, y, **kwargs)
        moved = mean_difference(a * x + b, a * y + b, **kwargs)
    if "dynamic programming" in res.method and "dynamic programming" not in moved.method:
        # the exact law needs integer task sums below MAX_DP_SUPPORT: the units decide whether it applies
        event("exact in the original units only")
        return
    assert moved.pvalue == pytest.approx(res.pvalue, rel=1e-9), (res.method, moved.method)
    assert moved.statistic == pytest.approx(a * res.statistic, rel=1e-6, abs=1e-9 * a * max(1.0, abs(b) / a))
    scaled = tuple(a * v for v in res.confidence_interval)
    assert tuple(moved.confidence_interval) == pytest.approx(scaled, rel=1e-6, abs=1e-9 * a * max(1.0, abs(b) / a))


@pytest.mark.parametrize(
    ("x", "xs", "y", "ys"),
    [
        ([3, 2, 1, 2, 1, 0], [0, 0, 1, 1, 2, 2], [1, 2, 1, 1, 0, 3], [0, 0, 1, 1, 2, 2]),  # paired, p 1.0 -> 0.75
        ([0, 0, 3, 0, 1, 1], ["a", "a", "b", "b", "c", "c"], [1, 1, 2, 2, 0, 1], ["d", "d", "e", "e", "f", "f"]),  # 0.8 -> 0.6
    ],
    ids=["paired", "clustered"],
)
def test_ties_survive_a_large_common_origin(x, xs, y, ys):
    """Reference: exact enumeration (2^3 flips; C(6, 3) reassignments) is unit-free: the p-value of levels
    0-3 recorded as 1e-6 x level - 5 (a large origin, a tiny spread) is that of the levels."""
    x, y = np.array(x, dtype=float), np.array(y, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = mean_difference(x, y, x_strata=xs, y_strata=ys)
        moved = mean_difference(1e-6 * x - 5, 1e-6 * y - 5, x_strata=xs, y_strata=ys)
    assert res.exact and moved.exact
    assert moved.pvalue == pytest.approx(res.pvalue, rel=1e-9)


@pytest.mark.parametrize(
    ("fn", "x", "y", "kwargs", "expected"),
    [
        pytest.param(mean_difference, [0.0, 0.0], [1.0, 1.0], {}, (-np.inf, np.inf), id="mean-2+2"),
        pytest.param(rate_difference, [0, 0], [1, 1], {}, (-1.0, 1.0), id="rate-2+2"),
        pytest.param(
            ordinal_superiority, [2, 1], [1, 2], {"x_strata": [0, 1], "y_strata": [0, 1], "confidence_level": 0.8},
            (-1.0, 1.0), id="ordinal-paired-2",
        ),
    ],
)
def test_an_accepted_infinite_statistic_leaves_the_interval_unbounded(fn, x, y, kwargs, expected):
    """Reference: the definition of the interval. Here t* = -inf and t* = +inf (both arms constant: x/0)
    each carry at least alpha/2 of the permutation distribution (2 + 2 runs: 1/6 each; 2 paired tasks:
    1/4 each), so the test rejects no effect on either side: the interval is unbounded (then cut to the
    metric's range [-1, 1])."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = fn(x, y, **kwargs)
    assert res.pvalue >= 1 - res.confidence_level
    assert tuple(res.confidence_interval) == expected


@pytest.mark.parametrize(("n_resamples", "level"), [(99, 0.98), (199, 0.99)])
def test_monte_carlo_floor_above_half_alpha_leaves_the_interval_unbounded(n_resamples, level):
    """Reference: the Monte Carlo p-value (1 + count) / (1 + B). Its two-sided value is at least 2 / (B + 1),
    which here equals alpha, so no effect is rejected: the interval is the whole line."""
    x = np.arange(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = mean_difference(x, x + 30, n_resamples=n_resamples, confidence_level=level, rng=0)
    assert res.exact is False and res.pvalue == pytest.approx(2 / (n_resamples + 1))
    assert tuple(res.confidence_interval) == (-np.inf, np.inf)


def test_repeated_infinite_statistics_raise_no_numpy_warning():
    """Reference: none needed. 4 + 4 constant runs, 60 Monte Carlo reassignments: the separating one
    (t* = +inf, both arms constant) is drawn twice with this seed; no RuntimeWarning may escape."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        warnings.simplefilter("error", RuntimeWarning)
        mean_difference([0.0] * 4, [1.0] * 4, n_resamples=60, rng=1)


@pytest.mark.parametrize("dataset", ["paired", "clustered"])
def test_a_pvalue_equal_to_alpha_does_not_reject(dataset):
    """Reference: counting. Paired: 5 tasks whose differences are all positive, so the observed mean is
    the only largest of 2^5 flips and p = 2 / 32 = 0.0625. Clustered: 3 + 3 tasks with every candidate
    task above every baseline task, so the observed Welch t is the only largest of C(6, 3) = 20 and
    p = 2 / 20 = 0.1. At alpha = p the test does not reject and the interval holds 0; at a slightly
    larger alpha it rejects and the interval excludes 0."""
    if dataset == "paired":
        base, cand = np.zeros((5, 2)), np.array([[1, 1], [1, 0], [1, 1], [0, 1], [1, 1]], dtype=float)
        x, tasks = _runs(base)
        y, _ = _runs(cand)
        kwargs, p, level = {"x_strata": tasks, "y_strata": tasks}, 2 / 32, 0.9375
    else:
        # two seeds per task (one run per task would make the runs the units)
        x = np.repeat([0.1, 0.5, 0.2], 2) + np.tile([0.0, 0.02], 3)
        y = np.repeat([1.0, 1.7, 1.1], 2) + np.tile([0.0, 0.02], 3)
        kwargs = {"x_strata": np.repeat(["b0", "b1", "b2"], 2), "y_strata": np.repeat(["c0", "c1", "c2"], 2)}
        p, level = 2 / 20, 0.9
    for confidence_level, rejects in ((level, False), (level - 0.001, True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatsWarning)
            res = mean_difference(x, y, confidence_level=confidence_level, rng=0, **kwargs)
        assert res.exact is True and res.design_kind == dataset
        assert res.pvalue == pytest.approx(p, rel=1e-12)
        low, high = res.confidence_interval
        assert (low > 0 or high < 0) is rejects, (confidence_level, low, high)


# --------------------------------------------------------------------------- #
# 6. Monte Carlo paths against scipy.stats.permutation_test
# --------------------------------------------------------------------------- #
def _welch_statistic(x, y, axis=-1):
    return sps.ttest_ind(y, x, equal_var=False, axis=axis).statistic


def _bm_scipy(x, y, axis=-1):
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t = sps.brunnermunzel(x, y, axis=axis).statistic
    return np.where(np.isnan(t), 0.0, t)


def _welch_case() -> tuple:
    rng = np.random.default_rng(17)
    x, y = rng.normal(0.0, 1.0, 40), rng.normal(0.8, 2.0, 35)
    estimate = y.mean() - x.mean()
    return mean_difference, _welch_statistic, x, y, estimate, math.sqrt(x.var(ddof=1) / 40 + y.var(ddof=1) / 35)


def _brunner_munzel_case() -> tuple:
    rng = np.random.default_rng(18)
    x = rng.choice(4, 80, p=[0.2, 0.3, 0.3, 0.2]).astype(float)
    y = rng.choice(4, 70, p=[0.05, 0.2, 0.35, 0.4]).astype(float)
    delta = float(np.mean(np.sign(y[:, None] - x[None, :])))
    return ordinal_superiority, _bm_scipy, x, y, delta, delta / float(_bm_scipy(x, y))


@pytest.mark.parametrize("case", [_welch_case, _brunner_munzel_case], ids=["welch", "brunner-munzel"])
def test_monte_carlo_matches_scipy_permutation_test(case):
    """Reference: scipy.stats.permutation_test (permutation_type="independent", 20000 resamples) of
    Welch's t (scipy.stats.ttest_ind, equal_var=False; 40 + 35 runs with unequal variances) and of the
    Brunner-Munzel statistic (scipy.stats.brunnermunzel; 80 + 70 runs on levels 0-3, which agentab draws
    as multivariate hypergeometric counts); the interval [est - se * q_hi, est - se * q_lo] with q_lo,
    q_hi read off scipy's null distribution by the same rule (the extreme values whose Monte Carlo
    two-sided p-value, (1 + count) / (1 + B), is at least alpha).

    Tolerances come from the Monte Carlo error of both sides (agentab: B = 5000, scipy: B = 20000):
    - p-value: a two-sided p is twice a tail frequency with sd sqrt(p_t (1 - p_t) / B), p_t = p / 2;
      allowed: 5 x the sd of the difference of the two estimates.
    - endpoint: the sample quantile at probability q = alpha / 2 has sd sqrt(q (1 - q) / B) / f(x_q)
      (the asymptotic law of a sample quantile), f the null density at the quantile, estimated from
      scipy's null as the share within +-0.2 of it divided by 0.4; allowed: 5 x the sd of the
      difference, times se (the endpoint is est - se * quantile).
    """
    fn, statistic, x, y, estimate, se = case()
    b_agentab, b_scipy = 5000, 20000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = fn(x, y, n_resamples=b_agentab, rng=3)
    assert res.design_kind == "independent" and res.exact is False
    ref = sps.permutation_test(
        (x, y), statistic, permutation_type="independent", vectorized=True, n_resamples=b_scipy,
        alternative="two-sided", rng=np.random.default_rng(4),
    )
    assert res.statistic == pytest.approx(estimate, rel=1e-12)
    assert ref.statistic == pytest.approx(estimate / se, rel=1e-12)

    def tail_sd(p: float, b: int) -> float:
        return 2 * math.sqrt(p / 2 * (1 - p / 2) / b)

    p = ref.pvalue
    assert 0.005 < p < 0.5  # the comparison has power to detect an error
    assert abs(res.pvalue - p) <= 5 * math.hypot(tail_sd(p, b_agentab), tail_sd(p, b_scipy)), (res.pvalue, p)

    null = np.sort(ref.null_distribution)
    alpha = 0.05
    # Monte Carlo two-sided p-value of every value of scipy's null, ties within T_TIES counted in both tails
    tol = T_TIES * np.maximum(1.0, np.abs(null))
    greater = (1 + len(null) - np.searchsorted(null, null - tol, side="left")) / (1 + b_scipy)
    less = (1 + np.searchsorted(null, null + tol, side="right")) / (1 + b_scipy)
    accepted = null[np.minimum(1.0, 2 * np.minimum(greater, less)) >= alpha]
    q_lo, q_hi = float(accepted.min()), float(accepted.max())
    q = alpha / 2
    low, high = res.confidence_interval
    for quantile, bound in ((q_hi, low), (q_lo, high)):
        density = np.mean(np.abs(null - quantile) <= 0.2) / 0.4
        sd = math.sqrt(q * (1 - q)) / density * math.hypot(1 / math.sqrt(b_agentab), 1 / math.sqrt(b_scipy))
        tol = 5 * sd * se
        assert tol < 0.1 * (high - low)  # a tolerance that can fail
        assert abs(bound - (estimate - se * quantile)) <= tol, (bound, estimate - se * quantile, tol)


# --------------------------------------------------------------------------- #
# Notes on discreteness and on few informative tasks
# --------------------------------------------------------------------------- #
def _tasks_differing(n_tasks: int, n_differ: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """3 seeds per task; the first ``n_differ`` tasks gain one success in the candidate arm, the others tie."""
    base = np.zeros((n_tasks, 3))
    base[::2] = 1.0  # half the tasks always succeed, half never
    base[:n_differ] = [1.0, 0.0, 0.0]
    cand = base.copy()
    cand[:n_differ] = [1.0, 1.0, 0.0]
    x, tasks = _runs(base)
    y, _ = _runs(cand)
    return x, y, tasks


@pytest.mark.parametrize(("n_tasks", "n_differ"), [(8, 5), (20, 6), (20, 12), (30, 30)])
def test_notes_say_when_alpha_is_out_of_reach_and_when_coverage_is_approximate(n_tasks, n_differ):
    """Reference: counting. With k tasks whose arms differ (all in the same direction) the most extreme
    sign-flip pattern has probability 2^-k, so the smallest two-sided p-value is 2^(1-k); alpha = 0.05 is
    out of reach when that is not below it (k <= 5). Below 10 differing tasks (with others tied) the
    interval is marked approximate."""
    x, y, tasks = _tasks_differing(n_tasks, n_differ)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = rate_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=2**min(n_tasks, 16), rng=0)
    out_of_reach = 2.0 ** (1 - n_differ) >= 0.05
    assert res.smallest_pvalue == pytest.approx(2.0 ** (1 - n_differ), rel=1e-9) or not res.exact
    said = [n for n in res.warnings if "no difference can be significant" in n]
    assert bool(said) == out_of_reach
    if out_of_reach:
        assert f"only {n_differ} of {n_tasks} tasks differ between the arms" in said[0]
        assert res.pvalue >= 0.05
    approximate = [n for n in res.warnings if "reliably holds its coverage" in n]
    assert bool(approximate) == (n_differ < min(n_tasks, 10))
