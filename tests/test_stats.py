"""Tests of agentab.stats: two-sample tests whose unit of replication is the task.

Four kinds of check:

1. agreement with scipy on independent runs, within a Monte Carlo tolerance
   that is *computed* (about four Monte Carlo standard errors of the
   difference), never guessed;
2. exact permutation p-values equal to a brute-force enumeration written
   here with ``itertools`` and exact rational arithmetic;
3. the design (paired / clustered / independent), its estimand and the
   bookkeeping of dropped or missing runs;
4. invariances (hypothesis), edge cases with their errors and warnings, and
   pass^k against an enumeration of k-subsets.

Everything is seeded; no test touches numpy's global random state.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from itertools import combinations, product

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.special import ndtri

import agentab.stats._design as design_module
from agentab.errors import StatsWarning
from agentab.stats import (
    ConfidenceInterval,
    QuantileResult,
    TwoSampleResult,
    mean_difference,
    ordinal_superiority,
    pass_hat_k,
    pass_k_difference,
    quantile_difference,
    rate_difference,
)
from agentab.stats._resampling import tie_tolerance

FUNCTIONS = {
    "rate": rate_difference,
    "mean": mean_difference,
    "ordinal": ordinal_superiority,
    "quantile": quantile_difference,
}
SETTINGS = settings(
    max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def calm(fn, *args, **kwargs):
    """Call ``fn`` with StatsWarnings silenced (tiny samples warn on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        return fn(*args, **kwargs)


def stats_warnings(fn, *args, **kwargs):
    """Call ``fn`` and return (result, messages of the StatsWarnings it issued)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return result, [str(w.message) for w in caught if issubclass(w.category, StatsWarning)]


def close_result(a, b, rtol=1e-12):
    """Equality of two results' numbers up to floating-point summation order."""
    for field in ("statistic", "pvalue"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=rtol, atol=1e-15)
    np.testing.assert_allclose(a.confidence_interval, b.confidence_interval, rtol=rtol, atol=1e-15)
    np.testing.assert_allclose(a.estimates, b.estimates, rtol=rtol, atol=1e-15)


def same_result(a, b):
    """Bitwise equality of two results' numbers (NaN equal to NaN)."""
    for field in ("statistic", "pvalue"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(a.confidence_interval.low, b.confidence_interval.low)
    np.testing.assert_array_equal(a.confidence_interval.high, b.confidence_interval.high)
    np.testing.assert_array_equal(a.estimates.baseline, b.estimates.baseline)
    np.testing.assert_array_equal(a.estimates.candidate, b.estimates.candidate)


def p_tolerance(p_ref: float, n_resamples: int, n_estimates: int = 2) -> float:
    """Four Monte Carlo standard errors of a difference of two-sided p-values.

    A two-sided p-value is ``2 t`` with ``t`` a tail proportion of ``B``
    resamples, so its variance is ``4 t (1 - t) / B``; ``n_estimates`` Monte
    Carlo estimates (2: ours and scipy's; 1: ours against an exact or
    asymptotic value) add their variances. The ``+1`` correction of a Monte
    Carlo p-value adds at most ``2 / (B + 1)``.
    """
    t = min(max(p_ref / 2.0, 1.0 / n_resamples), 0.5)
    se = 2.0 * math.sqrt(t * (1.0 - t) / n_resamples) * math.sqrt(n_estimates)
    return 4.0 * se + 2.0 / (n_resamples + 1)


def t_quantile_tolerance(n_resamples: int, confidence_level: float = 0.95) -> float:
    """Four Monte Carlo standard errors of the difference of two estimates of a tail quantile of a t-like law.

    An interval's end is ``estimate - se * x`` with ``x`` the ``a`` quantile of a permutation
    distribution of B draws of a roughly standard normal statistic: its standard error is
    ``sqrt(a (1 - a) / B) / phi(z_a)``; two independent estimates (ours, scipy's) give ``sqrt(2)``.
    Returned in units of ``se``.
    """
    a = (1.0 - confidence_level) / 2.0
    phi = lambda z: math.exp(-z * z / 2.0) / math.sqrt(2.0 * math.pi)
    return 4.0 * math.sqrt(2.0) * math.sqrt(a * (1.0 - a) / n_resamples) / phi(float(ndtri(a)))


def percentile_band(boot: np.ndarray, level: float, n_resamples: int) -> tuple[float, float]:
    """Where another B-resample estimate of the ``level`` quantile of ``boot``'s
    distribution may lie: the quantiles of ``boot`` at ``level`` plus or minus
    four standard errors of the difference of two empirical CDFs
    (``sqrt(2 level (1 - level) / B)``). Working on the probability scale
    handles the discrete, tie-heavy bootstrap distribution of a quantile."""
    half = 4.0 * math.sqrt(2.0 * level * (1.0 - level) / n_resamples)
    lo, hi = np.percentile(boot, [100 * max(level - half, 0.0), 100 * min(level + half, 1.0)])
    return float(lo), float(hi)


# --- exact (rational) statistics of cells, each cell (task) weighing the same ---
def _mean_stat(base_cells, cand_cells):
    arm = lambda cells: sum(Fraction(sum(c), len(c)) for c in cells) / len(cells)
    return arm(cand_cells) - arm(base_cells)


def _shares(cells, levels):
    return [sum(Fraction(c.count(v), len(c)) for c in cells) / len(cells) for v in levels]


def _cliff_stat(base_cells, cand_cells):
    levels = sorted({v for c in base_cells + cand_cells for v in c})
    p, r = _shares(base_cells, levels), _shares(cand_cells, levels)
    ps = sum(r[i] * (sum(p[:i]) + p[i] / 2) for i in range(len(levels)))
    return 2 * ps - 1


def _weighted_quantile(cells, q):
    """Inverse of the task-weighted ECDF (Hyndman-Fan 1), in exact arithmetic."""
    pairs = sorted((v, Fraction(1, len(cells) * len(c))) for c in cells for v in c)
    cumulative = Fraction(0)
    for v, w in pairs:
        cumulative += w
        if cumulative >= q:
            return Fraction(v)
    return Fraction(pairs[-1][0])


def _quantile_stat(q):
    q = Fraction(str(q))
    return lambda base_cells, cand_cells: _weighted_quantile(cand_cells, q) - _weighted_quantile(base_cells, q)


def _exact_p(null, observed, alternative="two-sided"):
    """Exact permutation p-value: ties count on both sides, two-sided doubles the smaller tail."""
    n = len(null)
    greater = Fraction(sum(v >= observed for v in null), n)
    less = Fraction(sum(v <= observed for v in null), n)
    if alternative == "greater":
        return float(greater)
    if alternative == "less":
        return float(less)
    return float(min(Fraction(1), 2 * min(greater, less)))


def brute_unit_permutation(base_cells, cand_cells, statistic):
    """All ways to give len(cand_cells) of the pooled units to the candidate arm."""
    pool = list(base_cells) + list(cand_cells)
    null = []
    for chosen in combinations(range(len(pool)), len(cand_cells)):
        cand = [pool[i] for i in chosen]
        base = [pool[i] for i in range(len(pool)) if i not in chosen]
        null.append(statistic(base, cand))
    return null, statistic(list(base_cells), list(cand_cells))


def brute_sign_flips(base_cells, cand_cells, statistic):
    """All 2^T swaps of the arms of whole tasks (paired design)."""
    null = []
    for flips in product((False, True), repeat=len(base_cells)):
        base = [c if f else b for b, c, f in zip(base_cells, cand_cells, flips)]
        cand = [b if f else c for b, c, f in zip(base_cells, cand_cells, flips)]
        null.append(statistic(base, cand))
    return null, statistic(list(base_cells), list(cand_cells))


def cells_of(values, tasks):
    """Runs grouped by task, tasks in sorted order."""
    df = pd.DataFrame({"v": values, "t": tasks})
    return [[Fraction(float(v)) for v in g["v"]] for _, g in df.groupby("t", sort=True)]


def cliff_delta(a, b, axis=-1):
    """Cliff's delta of b over a, vectorised for scipy.stats.permutation_test."""
    a = np.moveaxis(a, axis, -1)
    b = np.moveaxis(b, axis, -1)
    gt = (b[..., :, None] > a[..., None, :]).mean(axis=(-2, -1))
    lt = (b[..., :, None] < a[..., None, :]).mean(axis=(-2, -1))
    return gt - lt


def mean_diff(a, b, axis=-1):
    return np.mean(b, axis=axis) - np.mean(a, axis=axis)


def quantile_diff(q):
    def statistic(a, b, axis=-1):
        return np.quantile(b, q, axis=axis, method="inverted_cdf") - np.quantile(a, q, axis=axis, method="inverted_cdf")

    return statistic


# --------------------------------------------------------------------------- #
# 1. Agreement with scipy on independent runs
# --------------------------------------------------------------------------- #
B_MC = 5000


@pytest.fixture(scope="module")
def continuous_pair():
    rng = np.random.default_rng(1)
    return rng.normal(0.0, 1.0, 40), rng.normal(0.45, 1.3, 35)


@pytest.fixture(scope="module")
def binary_pair():
    rng = np.random.default_rng(11)
    return (rng.random(60) < 0.4).astype(float), (rng.random(60) < 0.6).astype(float)


def _welch_t(a, b, axis=-1):
    return sps.ttest_ind(b, a, equal_var=False, axis=axis).statistic


def _check_mean_like_against_scipy(fn, x, y, lattice_step=0.0):
    """The studentized permutation test is scipy's permutation test of Welch's t; the interval is
    ``estimate - se * q`` for the tail quantiles ``q`` of that permutation distribution."""
    res = fn(x, y, n_resamples=B_MC, rng=2)
    assert res.design_kind == "independent"
    assert res.exact is (fn is rate_difference)  # two values: the hypergeometric law, exactly
    assert res.statistic == pytest.approx(np.mean(y) - np.mean(x), abs=1e-12)
    assert res.estimates == pytest.approx((np.mean(x), np.mean(y)), abs=1e-12)

    perm = sps.permutation_test(
        (x, y), _welch_t, permutation_type="independent", n_resamples=B_MC, vectorized=True, rng=np.random.default_rng(3)
    )
    assert 0.02 < perm.pvalue < 0.5, "data chosen so that the comparison of p-values is informative"
    assert abs(res.pvalue - perm.pvalue) <= p_tolerance(perm.pvalue, B_MC)

    welch = sps.ttest_ind(y, x, equal_var=False)
    se = res.statistic / welch.statistic
    q_lo, q_hi = np.quantile(perm.null_distribution, [0.025, 0.975])
    assert res.ci_method == "test inversion"
    tol = t_quantile_tolerance(B_MC) * se + lattice_step
    width = res.confidence_interval.high - res.confidence_interval.low
    assert tol < 0.15 * width, "tolerance must be tight enough to mean something"
    assert abs(res.confidence_interval.low - (res.statistic - se * q_hi)) <= tol
    assert abs(res.confidence_interval.high - (res.statistic - se * q_lo)) <= tol
    # and close to Welch's t-interval (the permutation law of t is near Student's t here)
    ci = welch.confidence_interval()
    assert abs(res.confidence_interval.low - ci.low) < 0.1 * width and abs(res.confidence_interval.high - ci.high) < 0.1 * width
    return res


def test_mean_difference_agrees_with_scipy(continuous_pair):
    x, y = continuous_pair
    res = _check_mean_like_against_scipy(mean_difference, x, y)
    welch = sps.ttest_ind(y, x, equal_var=False)
    assert res.details["welch"]["pvalue"] == pytest.approx(welch.pvalue, rel=1e-12)


def test_rate_difference_agrees_with_scipy(binary_pair):
    x, y = binary_pair
    # The bootstrap distribution of a difference of rates lives on a lattice of
    # step 1/n: an endpoint may jump by one step on top of the Monte Carlo error.
    _check_mean_like_against_scipy(rate_difference, x, y, lattice_step=1.0 / len(x))


def test_ordinal_superiority_agrees_with_mannwhitneyu_and_permutation_test():
    rng = np.random.default_rng(21)
    x = rng.choice(4, 60, p=[0.2, 0.3, 0.3, 0.2])
    y = rng.choice(4, 55, p=[0.1, 0.3, 0.3, 0.3])
    n_resamples = 20000  # the kernel is O(cells x levels): cheap, and a tighter check
    res = ordinal_superiority(x, y, n_resamples=n_resamples, rng=2)
    assert res.design_kind == "independent"
    mw = sps.mannwhitneyu(y, x)
    ps = res.probability_of_superiority
    assert ps == pytest.approx(mw.statistic / (len(x) * len(y)), rel=1e-12, abs=1e-15)
    assert res.statistic == pytest.approx(2 * ps - 1, abs=1e-15)
    assert res.statistic == pytest.approx(float(cliff_delta(x, y)), abs=1e-12)

    perm = sps.permutation_test(
        (x, y), _brunner_munzel, permutation_type="independent", n_resamples=n_resamples, vectorized=True,
        rng=np.random.default_rng(3), batch=1000,
    )
    assert 0.005 < perm.pvalue < 0.5
    assert abs(res.pvalue - perm.pvalue) <= p_tolerance(perm.pvalue, n_resamples)
    # The asymptotic Mann-Whitney p-value (tie and continuity corrected)
    # approximates the permutation p-value: on these data 0.01460 against
    # 0.01483 from 200 000 permutations. Allow ten times that approximation
    # error (0.002) on top of our Monte Carlo error.
    assert abs(res.pvalue - mw.pvalue) <= p_tolerance(mw.pvalue, n_resamples, n_estimates=1) + 0.002
    # Level shares: each arm's empirical distribution over the levels.
    np.testing.assert_array_equal(res.levels, [0, 1, 2, 3])
    np.testing.assert_allclose(res.shares.baseline, np.bincount(x, minlength=4) / len(x), atol=1e-12)
    np.testing.assert_allclose(res.shift, np.bincount(y, minlength=4) / len(y) - np.bincount(x, minlength=4) / len(x), atol=1e-12)


def _brunner_munzel(a, b, axis=-1):
    return sps.brunnermunzel(a, b, axis=axis).statistic  # positive when b (the candidate) tends higher


def test_ordinal_exact_equals_brute_force_brunner_munzel_permutation_test():
    """Without tasks, the studentized statistic of Cliff's delta is Brunner & Munzel's (scipy's), and the
    exact p-value is the share of all C(13, 6) reassignments of the runs at least as extreme
    (Neubert & Brunner 2007), enumerated here with scipy's statistic."""
    from itertools import combinations

    x = np.array([1.5, 3.0, 4.2, 7.0, 8.5, 9.1])
    y = np.array([2.0, 5.5, 6.0, 9.9, 10.0, 11.0, 12.5])
    pooled = np.r_[x, y]
    splits = list(combinations(range(13), 7))
    null = np.empty(len(splits))
    for i, chosen in enumerate(splits):
        mask = np.zeros(13, dtype=bool)
        mask[list(chosen)] = True
        null[i] = _brunner_munzel(pooled[~mask], pooled[mask])
    observed = _brunner_munzel(x, y)
    tol = 1e-9 * np.maximum(1.0, np.abs(observed))
    greater, less = np.mean(null >= observed - tol), np.mean(null <= observed + tol)
    refs = {"two-sided": min(1.0, 2 * min(greater, less)), "greater": greater, "less": less}
    for alternative, ref in refs.items():
        ours = calm(ordinal_superiority, x, y, alternative=alternative, rng=0)
        assert ours.exact is True
        assert ours.pvalue == pytest.approx(ref, abs=1e-12), alternative


@pytest.fixture(scope="module")
def cost_pair():
    rng = np.random.default_rng(31)
    return np.round(rng.lognormal(8.0, 1.0, 90)), np.round(rng.lognormal(8.15, 0.9, 80))


def test_quantile_point_estimates_equal_numpy_inverted_cdf(cost_pair):
    x, y = cost_pair
    q = (0.1, 0.25, 0.5, 0.8, 0.9, 0.95)
    res = calm(quantile_difference, x, y, q=q, n_resamples=50, rng=0)
    assert isinstance(res, QuantileResult)
    base = np.quantile(x, q, method="inverted_cdf")
    cand = np.quantile(y, q, method="inverted_cdf")
    np.testing.assert_array_equal(res.estimates.baseline, base)
    np.testing.assert_array_equal(res.estimates.candidate, cand)
    np.testing.assert_array_equal(res.statistic, cand - base)
    np.testing.assert_array_equal(res.ratio, cand / base)
    np.testing.assert_array_equal(res.q, q)
    # A scalar q gives scalars.
    one = calm(quantile_difference, x, y, q=0.5, n_resamples=50, rng=0)
    assert np.ndim(one.statistic) == 0 and np.ndim(one.pvalue) == 0 and np.ndim(one.confidence_interval.low) == 0
    assert one.statistic == cand[2] - base[2]


@pytest.mark.parametrize("q", [0.5, 0.8])
def test_quantile_difference_agrees_with_scipy(cost_pair, q):
    x, y = cost_pair
    res, _ = stats_warnings(quantile_difference, x, y, q=q, n_resamples=B_MC, rng=2)
    assert res.ci_method == "percentile"
    statistic = quantile_diff(q)
    perm = sps.permutation_test(
        (x, y), statistic, permutation_type="independent", n_resamples=B_MC, vectorized=True, rng=np.random.default_rng(3)
    )
    assert perm.statistic == res.statistic
    assert 0.01 < perm.pvalue < 0.5
    assert abs(res.pvalue - perm.pvalue) <= p_tolerance(perm.pvalue, B_MC)

    boot = sps.bootstrap(
        (x, y), statistic, method="percentile", n_resamples=B_MC, vectorized=True, rng=np.random.default_rng(4)
    )
    dist = boot.bootstrap_distribution
    for level, ours in ((0.025, res.confidence_interval.low), (0.975, res.confidence_interval.high)):
        lo, hi = percentile_band(dist, level, B_MC)
        assert lo <= ours <= hi, (level, ours, lo, hi)
    # The band is narrow compared with the interval, so the check has teeth.
    width = boot.confidence_interval.high - boot.confidence_interval.low
    assert np.subtract(*percentile_band(dist, 0.025, B_MC)[::-1]) < 0.25 * width


@st.composite
def weighted_design(draw):
    """Tasks with unequal seeds, paired or clustered; values either few distinct
    integers (step counts, many ties) or continuous (no ties)."""
    discrete = draw(st.booleans())
    value = st.integers(0, 6) if discrete else st.floats(0.0, 100.0, allow_nan=False, width=32)
    n_tasks = draw(st.integers(1, 5))
    seeds_x = draw(st.lists(st.integers(1, 4), min_size=n_tasks, max_size=n_tasks))
    seeds_y = draw(st.lists(st.integers(1, 4), min_size=n_tasks, max_size=n_tasks))
    xt = np.repeat([f"t{i}" for i in range(n_tasks)], seeds_x)
    yt = np.repeat([f"{'t' if draw(st.booleans()) else 'u'}{i}" for i in range(n_tasks)], seeds_y)
    x = np.array(draw(st.lists(value, min_size=len(xt), max_size=len(xt))), dtype=float)
    y = np.array(draw(st.lists(value, min_size=len(yt), max_size=len(yt))), dtype=float)
    return x, y, xt, yt


@SETTINGS
@given(weighted_design(), st.sampled_from([0.05, 0.2, 0.25, 0.5, 0.6, 0.75, 0.9, 0.95]))
def test_task_weighted_quantile_equals_exact_inverse_ecdf(sample, q):
    """Each arm's quantile is the inverse of the task-weighted ECDF (each task weighs 1)."""
    x, y, xt, yt = sample
    res = calm(quantile_difference, x, y, q=q, x_strata=xt, y_strata=yt, test=False, n_resamples=20, rng=0)
    kept_x = np.isin(xt, yt) if res.design_kind == "paired" else np.ones(len(x), bool)
    kept_y = np.isin(yt, xt) if res.design_kind == "paired" else np.ones(len(y), bool)
    qf = Fraction(str(q))
    base = _weighted_quantile(cells_of(x[kept_x], xt[kept_x]), qf)
    cand = _weighted_quantile(cells_of(y[kept_y], yt[kept_y]), qf)
    assert res.estimates == (float(base), float(cand))
    # an effect within the tie tolerance (1e-10 of the data's scale) of zero is exactly zero, as documented in
    # agentab.stats._resampling.resample (e.g. quantiles 0 and 1.2e-38 of data whose scale is 1)
    expected = float(cand) - float(base)
    tied = abs(expected) <= tie_tolerance(float(np.abs(np.r_[x, y]).max()))
    assert res.statistic == (0.0 if tied else expected)
    assert np.isnan(res.pvalue)  # test=False: intervals only
    assert res.confidence_interval.low <= res.statistic <= res.confidence_interval.high or res.n_units[0] < 2


def test_quantile_ratio_and_zero_baseline():
    x = np.array([0.0, 0.0, 0.0, 1.0, 2.0])
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    res = calm(quantile_difference, x, y, q=(0.5, 0.8), n_resamples=300, rng=0)
    assert np.isinf(res.ratio[0])  # baseline median is 0, candidate's 3: an unbounded increase
    assert res.ratio_interval.high[0] == np.inf
    assert res.ratio[1] == 4.0 / 1.0
    assert res.statistic[0] == 3.0
    assert any("ratio is infinite" in w for w in res.warnings)
    both_zero = calm(quantile_difference, np.zeros(6), np.r_[np.zeros(5), 1.0], q=0.5, n_resamples=300, rng=0)
    assert both_zero.ratio == 1.0  # 0 / 0: no change
    # quantile intervals are values the bootstrap distribution takes: whole steps for step counts
    steps = calm(quantile_difference, np.arange(40) % 9, (np.arange(44) % 11), q=0.5, n_resamples=500, rng=1)
    assert float(steps.confidence_interval.low).is_integer() and float(steps.confidence_interval.high).is_integer()


# --------------------------------------------------------------------------- #
# 2. Exact permutation p-values equal brute force
# --------------------------------------------------------------------------- #
TINY_X = [3.0, 1.0, 4.0]
TINY_Y = [1.0, 5.0, 9.0, 4.0]
TINY_CASES = {
    "mean": (mean_difference, TINY_X, TINY_Y, _mean_stat),
    "rate": (rate_difference, [0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0], _mean_stat),
    "ordinal": (ordinal_superiority, [0.0, 2.0, 1.0], [2.0, 3.0, 1.0, 2.0], _cliff_stat),
    "quantile": (lambda *a, **k: quantile_difference(*a, q=0.5, **k), TINY_X, TINY_Y, _quantile_stat(0.5)),
}


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("case", list(TINY_CASES))
def test_exact_independent_equals_enumeration(case, alternative):
    fn, x, y, statistic = TINY_CASES[case]
    null, observed = brute_unit_permutation([[Fraction(v)] for v in x], [[Fraction(v)] for v in y], statistic)
    assert len(null) == math.comb(7, 4) == 35
    res = calm(fn, x, y, alternative=alternative, rng=0)
    assert res.exact is True
    assert res.n_permutations == 35
    assert res.design_kind == "independent"
    assert "exact, all 35" in res.method
    assert float(res.statistic) == pytest.approx(float(observed), abs=1e-12)
    assert float(res.pvalue) == pytest.approx(_exact_p(null, observed, alternative), abs=1e-12)


def test_exact_path_switches_to_monte_carlo_above_n_resamples():
    res = calm(mean_difference, TINY_X, TINY_Y, n_resamples=34, rng=0)
    assert res.exact is False and "Monte Carlo, 34 resamples" in res.method
    res = calm(mean_difference, TINY_X, TINY_Y, n_resamples=35, rng=0)
    assert res.exact is True


# 5 tasks x 2 seeds; task "d" has a zero difference (a tie under its sign flip).
PAIRED_TASKS = np.repeat(list("abcde"), 2)
PAIRED_X = np.array([1, 2, 0, 0, 5, 3, 2, 2, 1, 0], dtype=float)
PAIRED_Y = np.array([3, 2, 1, 2, 4, 6, 1, 3, 4, 3], dtype=float)
PAIRED_CASES = {
    "mean": (mean_difference, PAIRED_X, PAIRED_Y, _mean_stat),
    "rate": (rate_difference, (PAIRED_X > 1).astype(float), (PAIRED_Y > 1).astype(float), _mean_stat),
    "ordinal": (ordinal_superiority, np.minimum(PAIRED_X, 3), np.minimum(PAIRED_Y, 3), _cliff_stat),
    "quantile": (lambda *a, **k: quantile_difference(*a, q=0.5, **k), PAIRED_X, PAIRED_Y, _quantile_stat(0.5)),
}


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("case", list(PAIRED_CASES))
def test_exact_paired_equals_enumeration_of_sign_flips(case, alternative):
    fn, x, y, statistic = PAIRED_CASES[case]
    # Rows of the candidate arm in another order: pairing is by task id, not position.
    order = np.random.default_rng(0).permutation(len(y))
    null, observed = brute_sign_flips(cells_of(x, PAIRED_TASKS), cells_of(y, PAIRED_TASKS), statistic)
    assert len(null) == 2**5
    res = calm(fn, x, y[order], x_strata=PAIRED_TASKS, y_strata=PAIRED_TASKS[order], alternative=alternative, rng=0)
    assert res.design_kind == "paired"
    assert res.exact is True and res.n_permutations == 32
    assert float(res.statistic) == pytest.approx(float(observed), abs=1e-12)
    plain = _exact_p(null, observed, alternative)
    if case == "rate":
        # task differences of a rate tie: the tie-broken test (tests/test_inference.py) never gives a larger p
        assert float(res.pvalue) <= plain + 1e-12
    else:
        assert float(res.pvalue) == pytest.approx(plain, abs=1e-12)


def test_exact_paired_mean_is_the_sign_flip_test_of_task_differences():
    """The same thing said the textbook way: flip the signs of the per-task mean differences."""
    d = (pd.Series(PAIRED_Y).groupby(PAIRED_TASKS).mean() - pd.Series(PAIRED_X).groupby(PAIRED_TASKS).mean()).to_numpy()
    signs = np.array(list(product((1, -1), repeat=5)))
    null = (signs * d).mean(axis=1)
    observed = d.mean()
    greater = np.mean(null >= observed - 1e-12)
    less = np.mean(null <= observed + 1e-12)
    res = calm(mean_difference, PAIRED_X, PAIRED_Y, x_strata=PAIRED_TASKS, y_strata=PAIRED_TASKS, rng=0)
    assert res.pvalue == pytest.approx(min(1.0, 2 * min(greater, less)), abs=1e-12)
    # sps.permutation_test with permutation_type="samples" is the same sign-flip test.
    ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf)
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12)


# Clustered: 3 + 3 disjoint tasks with unequal seeds.
CLUSTER_X = np.array([1, 2, 0, 0, 1, 4, 3, 3], dtype=float)
CLUSTER_XT = np.array(["a", "a", "b", "b", "b", "c", "c", "c"])
CLUSTER_Y = np.array([3, 2, 5, 4, 2, 3, 3], dtype=float)
CLUSTER_YT = np.array(["d", "d", "e", "f", "f", "f", "e"])
CLUSTER_CASES = {
    "mean": (mean_difference, CLUSTER_X, CLUSTER_Y, _mean_stat),
    "rate": (rate_difference, (CLUSTER_X > 1).astype(float), (CLUSTER_Y > 2).astype(float), _mean_stat),
    "ordinal": (ordinal_superiority, np.minimum(CLUSTER_X, 3), np.minimum(CLUSTER_Y, 3), _cliff_stat),
    "quantile": (lambda *a, **k: quantile_difference(*a, q=0.5, **k), CLUSTER_X, CLUSTER_Y, _quantile_stat(0.5)),
}


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("case", list(CLUSTER_CASES))
def test_exact_clustered_equals_enumeration_of_task_assignments(case, alternative):
    fn, x, y, statistic = CLUSTER_CASES[case]
    null, observed = brute_unit_permutation(cells_of(x, CLUSTER_XT), cells_of(y, CLUSTER_YT), statistic)
    assert len(null) == math.comb(6, 3) == 20
    res = calm(fn, x, y, x_strata=CLUSTER_XT, y_strata=CLUSTER_YT, alternative=alternative, rng=0)
    assert res.design_kind == "clustered"
    assert res.exact is True and res.n_permutations == 20
    assert float(res.statistic) == pytest.approx(float(observed), abs=1e-12)
    assert float(res.pvalue) == pytest.approx(_exact_p(null, observed, alternative), abs=1e-12)


# --------------------------------------------------------------------------- #
# 3. Designs
# --------------------------------------------------------------------------- #
def _task_data(n_tasks=12, seeds=3, task_sd=1.0, seed_sd=0.5, effect=0.3, seed=0, prefix="t"):
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, task_sd, n_tasks)
    tasks = np.repeat([f"{prefix}{i}" for i in range(n_tasks)], seeds)
    x = np.repeat(difficulty, seeds) + rng.normal(0, seed_sd, n_tasks * seeds)
    y = np.repeat(difficulty, seeds) + effect + rng.normal(0, seed_sd, n_tasks * seeds)
    return x, y, tasks


def test_design_is_chosen_from_task_ids():
    x, y, tasks = _task_data()
    paired = mean_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=500, rng=0)
    assert paired.design_kind == "paired"
    assert paired.design == "paired by task (12 tasks)"
    assert paired.n_units == (12, 12) and paired.n_runs == (36, 36)

    other = np.char.add("u", tasks[: 30])
    clustered = mean_difference(x, y[:30], x_strata=tasks, y_strata=other, n_resamples=500, rng=0)
    assert clustered.design_kind == "clustered"
    assert clustered.design == "independent tasks (12 + 10)"
    assert "whole tasks reassigned" in clustered.method and "Welch-studentized" in clustered.method

    independent = mean_difference(x, y[:30], n_resamples=500, rng=0)
    assert independent.design_kind == "independent"
    assert independent.design == "independent runs (36 + 30)"
    assert independent.n_units == (36, 30)

    # paired=False on shared tasks: clustered; "auto" pairs only when at least half the tasks are shared.
    forced = mean_difference(x, y, x_strata=tasks, y_strata=tasks, paired=False, n_resamples=500, rng=0)
    assert forced.design_kind == "clustered"
    few_shared = np.where(np.isin(tasks, ["t0", "t1", "t2", "t3", "t4"]), tasks, np.char.add("u", tasks))
    auto = mean_difference(x, y, x_strata=tasks, y_strata=few_shared, n_resamples=500, rng=0)
    assert auto.design_kind == "clustered"  # 5 shared of 19 tasks


def test_pairing_removes_task_difficulty():
    """Large task effects, small true effect: pairing by task makes it detectable."""
    x, y, tasks = _task_data(n_tasks=16, seeds=2, task_sd=3.0, seed_sd=0.3, effect=0.5, seed=3)
    paired = mean_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=2000, rng=0)
    unpaired = mean_difference(x, y, x_strata=tasks, y_strata=tasks, paired=False, n_resamples=2000, rng=0)
    assert paired.statistic == pytest.approx(unpaired.statistic)
    assert paired.pvalue < 0.01
    assert unpaired.pvalue > 0.3
    width = lambda r: r.confidence_interval.high - r.confidence_interval.low
    assert width(paired) < width(unpaired) / 3


def test_paired_true_without_task_ids_refuses_to_pair_by_position():
    with pytest.raises(ValueError, match="position"):
        mean_difference([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], paired=True)


def test_unequal_seeds_give_the_task_averaged_estimand():
    rng = np.random.default_rng(7)
    seeds_x = [1, 2, 5, 3, 2, 4, 1, 3]
    seeds_y = [3, 1, 2, 2, 5, 1, 2, 4]
    names = [f"task{i}" for i in range(8)]
    xt = np.repeat(names, seeds_x)
    yt = np.repeat(names, seeds_y)
    x = rng.normal(0, 1, len(xt)) + np.repeat(np.arange(8.0), seeds_x)
    y = rng.normal(0.5, 1, len(yt)) + np.repeat(np.arange(8.0), seeds_y)
    bx = pd.Series(x).groupby(xt).mean()
    by = pd.Series(y).groupby(yt).mean()
    res = mean_difference(x, y, x_strata=xt, y_strata=yt, n_resamples=1000, rng=0)
    assert res.design_kind == "paired"
    assert res.statistic == pytest.approx((by - bx).mean(), abs=1e-12)
    assert res.estimates == pytest.approx((bx.mean(), by.mean()), abs=1e-12)
    # It is not the plain difference of run means (that would weigh task 2 five times as much).
    assert abs(res.statistic - (y.mean() - x.mean())) > 0.05
    # Welch cross-check on per-task differences.
    assert res.details["welch"]["pvalue"] == pytest.approx(sps.ttest_1samp(by - bx, 0.0).pvalue, rel=1e-10)

    # Clustered (different tasks per arm): the difference of the arms' task-averaged means.
    yt_other = np.char.add("other", yt)
    clustered = mean_difference(x, y, x_strata=xt, y_strata=yt_other, n_resamples=1000, rng=0)
    assert clustered.design_kind == "clustered"
    assert clustered.statistic == pytest.approx(by.mean() - bx.mean(), abs=1e-12)

    # Rates, pass^1 and quantiles weigh tasks equally too.
    xb, yb = (x > 3).astype(float), (y > 3).astype(float)
    rate = rate_difference(xb, yb, x_strata=xt, y_strata=yt, n_resamples=1000, rng=0)
    rx = pd.Series(xb).groupby(xt).mean()
    ry = pd.Series(yb).groupby(yt).mean()
    assert rate.statistic == pytest.approx((ry - rx).mean(), abs=1e-12)
    pass1 = pass_k_difference(xb, yb, x_strata=xt, y_strata=yt, k=1, n_resamples=1000, rng=0)
    assert pass1.statistic == pytest.approx(rate.statistic, abs=1e-12)
    for q in (0.25, 0.5, 0.9):
        quant = calm(quantile_difference, x, y, q=q, x_strata=xt, y_strata=yt, n_resamples=200, rng=0)
        expected = _quantile_stat(q)(cells_of(x, xt), cells_of(y, yt))
        assert quant.statistic == pytest.approx(float(expected), abs=1e-12), q
        # the task-weighted quantile is an observed value of the arm
        assert quant.estimates.candidate in set(y)
    xo, yo = np.digitize(x, [1, 3, 5]), np.digitize(y, [1, 3, 5])
    ordinal = ordinal_superiority(xo, yo, x_strata=xt, y_strata=yt, n_resamples=1000, rng=0)
    assert ordinal.statistic == pytest.approx(float(_cliff_stat(cells_of(xo, xt), cells_of(yo, yt))), abs=1e-12)


def test_tasks_in_one_arm_only_are_dropped_and_counted():
    x, y, tasks = _task_data(n_tasks=6, seeds=3, seed=4)
    # baseline also ran task "extra_b" (3 runs); candidate ran "extra_c1", "extra_c2" (2 runs each)
    xx = np.r_[x, [9.0, 9.0, 9.0]]
    xt = np.r_[tasks, ["extra_b"] * 3]
    yy = np.r_[y, [-9.0, -9.0, -9.0, -9.0]]
    yt = np.r_[tasks, ["extra_c1", "extra_c1", "extra_c2", "extra_c2"]]
    with pytest.warns(StatsWarning, match=r"dropped from the paired comparison: 1 baseline \(3 runs\), 2 candidate \(4 runs\)"):
        res = mean_difference(xx, yy, x_strata=xt, y_strata=yt, n_resamples=500, rng=0)
    assert res.dropped_tasks == (1, 2)
    assert res.dropped_runs == (3, 4)
    assert res.n_runs == (18, 18)
    ref = mean_difference(x, y, x_strata=tasks, y_strata=tasks, n_resamples=500, rng=0)
    same_result(res, ref)


@pytest.mark.parametrize("name", ["rate", "mean", "ordinal", "quantile", "pass_k"])
def test_shuffling_one_arm_does_not_change_the_paired_result(name):
    x, y, tasks = _task_data(n_tasks=14, seeds=3, seed=5)
    if name in ("rate", "pass_k"):
        x, y = (x > 0).astype(float), (y > 0).astype(float)
    elif name == "ordinal":
        x, y = np.digitize(x, [-1, 0, 1]), np.digitize(y, [-1, 0, 1])
    fn = pass_k_difference if name == "pass_k" else FUNCTIONS[name]
    order = np.random.default_rng(99).permutation(len(y))
    a, _ = stats_warnings(fn, x, y, x_strata=tasks, y_strata=tasks, n_resamples=700, rng=8)
    b, _ = stats_warnings(fn, x, y[order], x_strata=tasks, y_strata=tasks[order], n_resamples=700, rng=8)
    assert a.design_kind == "paired"
    close_result(a, b)  # task means may be summed in another order


def test_clustered_analysis_of_clustered_data_is_wider_than_treating_runs_as_independent():
    # 20 tasks per arm, 5 seeds each, ICC about 0.8: the design effect is about 1 + 4 * 0.8 = 4.2.
    rng = np.random.default_rng(12)
    xt = np.repeat([f"a{i}" for i in range(20)], 5)
    yt = np.repeat([f"b{i}" for i in range(20)], 5)
    x = np.repeat(rng.normal(0, 2, 20), 5) + rng.normal(0, 1, 100)
    y = np.repeat(rng.normal(0, 2, 20), 5) + rng.normal(0, 1, 100)
    clustered = mean_difference(x, y, x_strata=xt, y_strata=yt, n_resamples=2000, rng=0)
    naive = mean_difference(x, y, n_resamples=2000, rng=0)
    assert clustered.design_kind == "clustered"
    assert clustered.statistic == pytest.approx(naive.statistic)  # equal seeds: same estimand
    width = lambda r: r.confidence_interval.high - r.confidence_interval.low
    assert width(clustered) > 1.6 * width(naive)  # sqrt(4.2) ~ 2
    assert clustered.pvalue > naive.pvalue


@pytest.mark.parametrize("design", ["independent", "paired"])
def test_large_samples_do_not_overflow(design):
    rng = np.random.default_rng(61)
    if design == "independent":
        x, y, xs, ys = rng.normal(0, 1, 600), rng.normal(0.2, 1, 600), None, None
    else:
        tasks = np.arange(1100)
        x, y, xs, ys = rng.normal(0, 1, 1100), rng.normal(0.2, 1, 1100), tasks, tasks
    res = mean_difference(x, y, x_strata=xs, y_strata=ys, n_resamples=200, rng=0)
    assert res.design_kind == design and res.exact is False
    assert res.pvalue == pytest.approx(2.0 / 201)


def test_numerically_equal_task_ids_pair():
    x, y, _ = _task_data(n_tasks=10, seeds=2, seed=62)
    int_ids = np.repeat(np.arange(10), 2)
    assert np.all(np.isin(int_ids, int_ids.astype(float)))
    res = mean_difference(x, y, x_strata=int_ids, y_strata=int_ids.astype(float), n_resamples=200, rng=0)
    assert res.design_kind == "paired"


# --------------------------------------------------------------------------- #
# 4. Invariances and properties
# --------------------------------------------------------------------------- #
levels_list = lambda lo, hi: st.lists(st.integers(0, 3), min_size=lo, max_size=hi)


@st.composite
def ordinal_samples(draw):
    """Two ordinal samples, with task ids (paired or clustered) or without."""
    kind = draw(st.sampled_from(["independent", "paired", "clustered"]))
    if kind == "independent":
        return kind, np.array(draw(levels_list(2, 12))), np.array(draw(levels_list(2, 12))), None, None
    n_tasks = draw(st.integers(2, 6))
    seeds = draw(st.integers(1, 3))
    tasks = np.repeat([f"t{i}" for i in range(n_tasks)], seeds)
    x = np.array(draw(st.lists(st.integers(0, 3), min_size=len(tasks), max_size=len(tasks))))
    y = np.array(draw(st.lists(st.integers(0, 3), min_size=len(tasks), max_size=len(tasks))))
    other = tasks if kind == "paired" else np.char.add("u", tasks)
    return kind, x, y, tasks, other


@SETTINGS
@given(ordinal_samples(), st.integers(0, 2**32 - 1))
def test_ordinal_is_invariant_to_increasing_relabelling(sample, seed):
    _, x, y, xs, ys = sample
    relabel = np.array([0.0, 1.0, 5.0, 10.0])
    a = calm(ordinal_superiority, x, y, x_strata=xs, y_strata=ys, n_resamples=199, rng=seed)
    b = calm(ordinal_superiority, relabel[x], relabel[y], x_strata=xs, y_strata=ys, n_resamples=199, rng=seed)
    assert a.statistic == b.statistic
    assert a.pvalue == b.pvalue
    np.testing.assert_array_equal(a.confidence_interval, b.confidence_interval)
    assert a.probability_of_superiority == b.probability_of_superiority
    np.testing.assert_array_equal(a.shift, b.shift)
    # Level 0 -> 1 .. 3 -> 4 is a shift of the mean levels by exactly one.
    c = calm(ordinal_superiority, x + 1, y + 1, x_strata=xs, y_strata=ys, n_resamples=199, rng=seed)
    assert c.statistic == a.statistic and c.pvalue == a.pvalue
    assert c.estimates.baseline == pytest.approx(a.estimates.baseline + 1)


@st.composite
def two_samples(draw, binary=False):
    """Continuous (or binary) samples with a random design."""
    kind = draw(st.sampled_from(["independent", "paired", "clustered"]))
    values = st.integers(0, 1) if binary else st.integers(-20, 20)
    if kind == "independent":
        x = draw(st.lists(values, min_size=2, max_size=12))
        y = draw(st.lists(values, min_size=2, max_size=12))
        return kind, np.array(x, float), np.array(y, float), None, None
    n_tasks = draw(st.integers(3, 7))
    seeds = draw(st.integers(1, 3))
    tasks = np.repeat([f"t{i}" for i in range(n_tasks)], seeds)
    x = np.array(draw(st.lists(values, min_size=len(tasks), max_size=len(tasks))), float)
    y = np.array(draw(st.lists(values, min_size=len(tasks), max_size=len(tasks))), float)
    return kind, x, y, tasks, (tasks if kind == "paired" else np.char.add("u", tasks))


def _call(name, x, y, xs, ys, **kwargs):
    if name == "quantile":
        return calm(quantile_difference, x, y, q=(0.5, 0.75), x_strata=xs, y_strata=ys, **kwargs)
    return calm(FUNCTIONS[name], x, y, x_strata=xs, y_strata=ys, **kwargs)


@SETTINGS
@given(two_samples(), st.sampled_from(["mean", "ordinal", "quantile"]), st.integers(0, 2**32 - 1))
def test_same_seed_same_result(sample, name, seed):
    _, x, y, xs, ys = sample
    a = _call(name, x, y, xs, ys, n_resamples=99, rng=seed)
    b = _call(name, x, y, xs, ys, n_resamples=99, rng=np.random.default_rng(seed))
    same_result(a, b)


@SETTINGS
@given(two_samples(), st.sampled_from(["mean", "ordinal", "quantile"]), st.integers(0, 2**32 - 1))
def test_swapping_arms_flips_the_effect(sample, name, seed):
    kind, x, y, xs, ys = sample
    a = _call(name, x, y, xs, ys, n_resamples=99, rng=seed)
    b = _call(name, y, x, ys, xs, n_resamples=99, rng=seed)
    np.testing.assert_allclose(b.statistic, -np.asarray(a.statistic), atol=1e-12)
    np.testing.assert_allclose(b.estimates.baseline, a.estimates.candidate, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b.estimates.candidate, a.estimates.baseline, rtol=1e-12, atol=1e-15)
    if kind == "paired":
        # Shared bootstrap counts and sign flips: the whole result mirrors,
        # BCa (mean, ordinal) and percentile (quantile) intervals alike.
        np.testing.assert_allclose(b.pvalue, a.pvalue, atol=1e-12)
        np.testing.assert_allclose(b.confidence_interval.low, -np.asarray(a.confidence_interval.high), atol=1e-9)
        np.testing.assert_allclose(b.confidence_interval.high, -np.asarray(a.confidence_interval.low), atol=1e-9)


@SETTINGS
@given(two_samples(), st.sampled_from(["rate", "mean", "ordinal", "quantile"]),
       st.sampled_from(["two-sided", "greater", "less"]), st.integers(0, 2**32 - 1))
def test_pvalues_are_in_the_unit_interval_and_never_zero(sample, name, alternative, seed):
    _, x, y, xs, ys = sample
    if name == "rate":
        x, y = (x > 0).astype(float), (y > 0).astype(float)
    n_resamples = 49
    res = _call(name, x, y, xs, ys, alternative=alternative, n_resamples=n_resamples, rng=seed)
    p = np.atleast_1d(res.pvalue)
    assert np.all((p > 0) & (p <= 1))
    if res.exact:
        assert np.all(p >= 1.0 / res.n_permutations - 1e-15)
    else:
        assert res.n_permutations == n_resamples
        assert np.all(p >= 1.0 / (n_resamples + 1) - 1e-15)  # Phipson & Smyth
    lo, hi = np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)
    assert np.all(lo <= hi)


@pytest.mark.filterwarnings("ignore:ordinal comparison. percentile interval instead of BCa")
def test_monte_carlo_pvalue_of_a_huge_effect_is_one_over_b_plus_one():
    x, y = np.arange(20.0), np.arange(100.0, 120.0)
    for fn in (mean_difference, ordinal_superiority):
        res = fn(x, y, n_resamples=99, rng=0)
        assert res.exact is False
        assert res.pvalue == pytest.approx(2.0 / 100, abs=1e-15)
        assert fn(x, y, alternative="greater", n_resamples=99, rng=0).pvalue == pytest.approx(1.0 / 100, abs=1e-15)
        assert fn(x, y, alternative="less", n_resamples=99, rng=0).pvalue == 1.0


def _batch_cases():
    x, y, tasks = _task_data(n_tasks=9, seeds=2, seed=6)
    other = np.char.add("u", tasks)
    return {
        "paired": (x, y, tasks, tasks),
        "clustered": (x, y[:14], tasks, other[:14]),
        "independent": (x, y[:14], None, None),
    }


def _batch_run(name, design):
    x, y, xs, ys = _batch_cases()[design]
    if name == "rate":
        x, y = (x > 0).astype(float), (y > 0).astype(float)
    if name == "ordinal":
        x, y = np.digitize(x, [-1, 0, 1]), np.digitize(y, [-1, 0, 1])
    return _call(name, x, y, xs, ys, n_resamples=300, rng=17)  # < 2^9: Monte Carlo in every design


@pytest.mark.parametrize("design", ["paired", "clustered", "independent"])
@pytest.mark.parametrize("name", ["rate", "mean", "ordinal", "quantile"])
def test_pvalue_does_not_depend_on_the_batch_size(monkeypatch, name, design):
    full = _batch_run(name, design)
    # binary data of independent runs are tested exactly, by the hypergeometric law
    assert full.exact is (name == "rate" and design == "independent")
    monkeypatch.setattr(design_module, "BATCH_CELLS", 5)  # one resample per batch
    small = _batch_run(name, design)
    np.testing.assert_allclose(small.pvalue, full.pvalue, rtol=1e-12)




@pytest.mark.parametrize(
    "design",
    [
        "paired",
        "clustered",
        "independent",
    ],
)
@pytest.mark.parametrize("name", ["rate", "mean", "ordinal", "quantile"])
def test_interval_does_not_depend_on_the_batch_size(monkeypatch, name, design):
    full = _batch_run(name, design)
    monkeypatch.setattr(design_module, "BATCH_CELLS", 5)
    small = _batch_run(name, design)
    close_result(small, full)  # a matrix product may round differently on another batch shape


# --------------------------------------------------------------------------- #
# 5. Edge cases: errors and warnings
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("fn", [rate_difference, mean_difference, ordinal_superiority, quantile_difference])
def test_empty_arm(fn):
    with pytest.raises(ValueError, match=r"`x \(baseline\)` has no values$"):
        fn([], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"`y \(candidate\)` has no values$"):
        fn([1.0, 0.0], [])


def test_all_nan_arm():
    with pytest.raises(ValueError, match=r"`y \(candidate\)` has no values after excluding missing ones"):
        mean_difference([1.0, 2.0, 3.0], [np.nan, np.nan])
    with pytest.raises(ValueError, match=r"`x \(baseline\)` has no values after excluding missing ones"):
        rate_difference([np.nan], [1.0, 0.0])


@pytest.mark.parametrize("name", ["rate", "mean", "ordinal", "quantile"])
def test_nan_values_are_excluded_and_counted(name):
    x, y, tasks = _task_data(n_tasks=10, seeds=2, seed=9)
    if name == "rate":
        x, y = (x > 0).astype(float), (y > 0).astype(float)
    if name == "ordinal":
        x, y = np.digitize(x, [-1, 0, 1]).astype(float), np.digitize(y, [-1, 0, 1]).astype(float)
    xn, yn = x.copy(), y.copy()
    xn[3] = np.nan
    yn[[0, 7]] = np.nan
    keep_x, keep_y = ~np.isnan(xn), ~np.isnan(yn)
    for xs, ys in ((None, None), (tasks, tasks)):
        with pytest.warns(StatsWarning, match="missing values excluded: 1 baseline, 2 candidate"):
            res = _call_loud(name, xn, yn, xs, ys)
        assert res.excluded == (1, 2)
        assert res.n_runs == (19, 18)
        clean = _call_loud(
            name, x[keep_x], y[keep_y], None if xs is None else xs[keep_x], None if ys is None else ys[keep_y]
        )
        assert clean.excluded == (0, 0)
        same_result(res, clean)


def _call_loud(name, x, y, xs, ys):
    kwargs = {"x_strata": xs, "y_strata": ys, "n_resamples": 300, "rng": 4}
    if name == "quantile":
        return quantile_difference(x, y, q=0.5, **kwargs)
    return FUNCTIONS[name](x, y, **kwargs)


def test_one_run_per_arm_warns():
    with pytest.warns(StatsWarning) as record:
        res = mean_difference([1.0], [2.0], rng=0)
    messages = [str(w.message) for w in record]
    assert any("only 1 run in an arm" in m for m in messages)
    assert any("smallest attainable p-value is 1" in m for m in messages)
    assert res.statistic == 1.0
    assert res.pvalue == 1.0  # exact: the two assignments give +1 and -1
    # One run per arm has no variance: no standard error, so no interval (NaN), as the note says.
    assert np.isnan(res.confidence_interval.low) and np.isnan(res.confidence_interval.high)
    assert res.ci_method == "test inversion"
    assert any("only 1 run" in w for w in res.warnings)
    with pytest.warns(StatsWarning) as record:
        mean_difference([1.0, 2.0, 3.0], [2.0, 2.5], x_strata=["a", "a", "b"], y_strata=["c", "c"], rng=0)
    assert any("only 1 task in an arm" in str(w.message) for w in record)


@pytest.mark.parametrize("name", ["rate", "mean", "ordinal"])
def test_all_values_tied(name):
    x, y = np.ones(6), np.ones(5)
    with pytest.warns(StatsWarning, match="every unit has the same value in both arms"):
        res = FUNCTIONS[name](x, y, n_resamples=500, rng=0)
    assert res.ci_method == "test inversion"
    assert res.pvalue == 1.0
    assert res.statistic == pytest.approx(0.0, abs=1e-12)
    assert res.confidence_interval == pytest.approx((0.0, 0.0), abs=1e-12)
    assert res.confidence_interval.low <= res.statistic <= res.confidence_interval.high




@pytest.mark.parametrize(
    "case",
    ["mean-constant-1", "mean-constant-0.1", "ordinal-constant", "rate-all-pass", "rate-all-pass-clustered", "mean-paired-identical"],
)
def test_identical_arms_give_pvalue_one(case):
    """Every permutation of constant (or identical paired) data gives the same effect: p must be 1."""
    rng = np.random.default_rng(0)
    tasks = np.repeat(np.arange(12), 3)
    x = rng.normal(size=36)
    calls = {
        "mean-constant-1": lambda: mean_difference(np.ones(6), np.ones(5), rng=0),
        "mean-constant-0.1": lambda: mean_difference(np.full(6, 0.1), np.full(5, 0.1), rng=0),
        "ordinal-constant": lambda: ordinal_superiority(np.full(6, 2), np.full(5, 2), rng=0),
        "rate-all-pass": lambda: rate_difference(np.ones(30), np.ones(40), rng=0),
        "rate-all-pass-clustered": lambda: rate_difference(
            np.ones(36), np.ones(30), x_strata=tasks, y_strata=np.repeat(np.arange(20, 30), 3), rng=0
        ),
        "mean-paired-identical": lambda: mean_difference(x, x, x_strata=tasks, y_strata=tasks, rng=0),
    }
    res = calm(calls[case])
    assert res.statistic == pytest.approx(0.0, abs=1e-12)
    assert res.pvalue == 1.0


def test_all_values_tied_quantile():
    res = calm(quantile_difference, np.full(6, 3.0), np.full(5, 3.0), q=0.5, n_resamples=500, rng=0)
    assert res.statistic == 0.0 and res.pvalue == 1.0
    assert res.confidence_interval == (0.0, 0.0)
    assert res.ratio == 1.0 and res.ratio_interval == (1.0, 1.0)


def test_rate_difference_rejects_non_binary_values():
    with pytest.raises(ValueError, match=r"binary metric takes 0/1 \(or booleans\); found .*2\.0"):
        rate_difference([0, 1, 1], [1, 2, 0])
    with pytest.raises(ValueError, match="binary metric takes 0/1"):
        rate_difference([0, 1, 0.5], [1, 1, 0])
    # booleans are fine, and NaN is missing, not non-binary
    res = calm(rate_difference, [True, False, True, np.nan], [True, True, True], rng=0)
    assert res.estimates == pytest.approx((2 / 3, 1.0))
    with pytest.raises(ValueError, match="pass\\^k needs a binary metric"):
        pass_k_difference([0, 2], [1, 1], x_strata=["a", "b"], y_strata=["a", "b"])


@pytest.mark.parametrize("q", [0.0, 1.0, -0.1, 1.5, (0.5, 1.0), (), np.nan])
def test_quantile_probability_outside_unit_interval(q):
    with pytest.raises(ValueError, match="`q` must be probabilities strictly between 0 and 1"):
        quantile_difference([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], q=q)


@pytest.mark.parametrize("fn", [rate_difference, mean_difference, ordinal_superiority, quantile_difference])
def test_infinite_values(fn):
    with pytest.raises(ValueError, match="`y` contains infinite values"):
        fn([1.0, 0.0], [1.0, np.inf])
    with pytest.raises(ValueError, match="`x` contains infinite values"):
        fn([-np.inf, 0.0], [1.0, 1.0])


def test_task_id_errors():
    with pytest.raises(ValueError, match=r"`y_strata` must give one task per run: 4 runs, got shape \(3,\)"):
        mean_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0], x_strata=["a", "b", "c"], y_strata=["a", "b", "c"])
    with pytest.raises(ValueError, match="for both samples"):
        mean_difference([1.0, 2.0], [1.0, 2.0], x_strata=["a", "b"])
    with pytest.raises(ValueError, match=r"`x_strata` has 1 missing task id\(s\), first at position 1"):
        mean_difference([1.0, 2.0], [1.0, 2.0], x_strata=["a", None], y_strata=["a", "b"])
    with pytest.raises(ValueError, match="share none"):
        mean_difference([1.0, 2.0], [1.0, 2.0], x_strata=["a", "b"], y_strata=["c", "d"], paired=True)
    with pytest.raises(ValueError, match="pass\\^k needs the task of every run"):
        pass_k_difference([1, 0], [1, 1], x_strata=None, y_strata=None)


def test_other_argument_errors():
    with pytest.raises(ValueError, match="`alternative` must be one of"):
        mean_difference([1.0, 2.0], [2.0, 3.0], alternative="two_sided")
    with pytest.raises(ValueError, match=r"`confidence_level` must be in \(0, 1\)"):
        mean_difference([1.0, 2.0], [2.0, 3.0], confidence_level=95)
    with pytest.raises(ValueError, match="`n_resamples` must be a positive integer"):
        mean_difference([1.0, 2.0], [2.0, 3.0], n_resamples=0)
    with pytest.raises(ValueError, match="`paired` must be 'auto', True or False"):
        mean_difference([1.0, 2.0], [2.0, 3.0], paired="yes")
    with pytest.raises(TypeError, match="`x` must be numeric"):
        mean_difference(["a", "b"], [2.0, 3.0])
    with pytest.raises(ValueError, match="`x` must be one-dimensional"):
        mean_difference([[1.0, 2.0]], [2.0, 3.0])


def test_pass_k_larger_than_fewest_seeds():
    tasks_x = ["a", "a", "a", "b", "b", "c", "c", "c"]
    tasks_y = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    x = [1, 1, 0, 1, 1, 0, 1, 1]
    y = [1, 1, 1, 1, 0, 1, 1, 1, 1]
    with pytest.raises(ValueError, match=r"pass\^3 needs at least 3 seeds per task; the fewest any task has is 2"):
        pass_k_difference(x, y, x_strata=tasks_x, y_strata=tasks_y, k=3)
    with pytest.raises(ValueError, match="`k` must be a positive integer"):
        pass_k_difference(x, y, x_strata=tasks_x, y_strata=tasks_y, k=0)
    res = calm(pass_k_difference, x, y, x_strata=tasks_x, y_strata=tasks_y, rng=0)
    assert res.details["k"] == 2  # default: the fewest seeds


def test_tail_quantile_warning():
    rng = np.random.default_rng(41)
    x, y = rng.lognormal(0, 1, 40), rng.lognormal(0, 1, 60)
    with pytest.warns(StatsWarning, match=r"p95.* rests on about 2 .*fewer than 20"):
        res = quantile_difference(x, y, q=(0.5, 0.95), n_resamples=300, rng=0)
    tail = [w for w in res.warnings if "rests on" in w]
    assert tail and all("p95" in w for w in tail)  # about 2 baseline and 3 candidate runs beyond p95
    assert any("3 " in w for w in tail)
    assert not any("p50" in w for w in res.warnings)
    # Enough runs beyond p95 (20 of 400): no warning.
    big = rng.lognormal(0, 1, (2, 400))
    _, caught = stats_warnings(quantile_difference, big[0], big[1], q=0.95, n_resamples=300, rng=0)
    assert not any("rests on" in m for m in caught)


def test_smallest_attainable_pvalue_warning():
    x, y, tasks = _task_data(n_tasks=4, seeds=2, seed=10)
    with pytest.warns(StatsWarning, match="with paired by task \\(4 tasks\\) the smallest attainable p-value is 0.125"):
        res = mean_difference(x, y, x_strata=tasks, y_strata=tasks, rng=0)
    assert res.pvalue >= 0.125
    x, y, tasks = _task_data(n_tasks=8, seeds=2, seed=10)
    _, caught = stats_warnings(mean_difference, x, y, x_strata=tasks, y_strata=tasks, rng=0)
    assert not any("smallest attainable" in m for m in caught)
    # One-sided tests attain half as small a p-value: 1/16 > 0.05 still warns, 1/32 does not.
    x, y, tasks = _task_data(n_tasks=5, seeds=2, seed=10)
    _, caught = stats_warnings(mean_difference, x, y, x_strata=tasks, y_strata=tasks, alternative="greater", rng=0)
    assert not any("smallest attainable" in m for m in caught)
    _, caught = stats_warnings(mean_difference, x, y, x_strata=tasks, y_strata=tasks, rng=0)
    assert any("smallest attainable p-value is 0.0625" in m for m in caught)


def test_result_objects():
    res = calm(mean_difference, [1.0, 2.0, 4.0], [2.0, 5.0, 6.0], rng=0)
    assert isinstance(res, TwoSampleResult)
    assert isinstance(res.confidence_interval, ConfidenceInterval)
    assert res.confidence_interval.low <= res.statistic <= res.confidence_interval.high
    assert "statistic=2" in repr(res) and "independent runs (3 + 3)" in repr(res)
    assert res.alternative == "two-sided" and res.confidence_level == 0.95


# --------------------------------------------------------------------------- #
# 6. pass^k
# --------------------------------------------------------------------------- #
def brute_pass_hat_k(outcomes, k):
    subsets = list(combinations(outcomes, k))
    return Fraction(sum(all(s) for s in subsets), len(subsets))


@SETTINGS
@given(st.lists(st.booleans(), min_size=1, max_size=9), st.data())
def test_pass_hat_k_equals_enumeration_of_k_subsets(outcomes, data):
    k = data.draw(st.integers(1, len(outcomes)))
    got = pass_hat_k(np.array([sum(outcomes)]), np.array([len(outcomes)]), k)
    assert got[0] == pytest.approx(float(brute_pass_hat_k(outcomes, k)), abs=1e-12)


def test_pass_hat_k_vectorised_and_unbiased_not_plugin():
    successes = np.array([0, 1, 2, 3, 4, 5, 3])
    trials = np.array([5, 5, 5, 5, 5, 5, 3])
    for k in (1, 2, 3):
        expected = [float(brute_pass_hat_k([1] * c + [0] * (n - c), k)) for c, n in zip(successes, trials)]
        np.testing.assert_allclose(pass_hat_k(successes, trials, k), expected, atol=1e-12)
    # (c/n)^k overestimates: 4 of 5 with k=2 is 0.6, not 0.64
    assert pass_hat_k(np.array([4]), np.array([5]), 2)[0] == pytest.approx(0.6)


def test_pass_k_difference_averages_brute_force_over_tasks():
    rng = np.random.default_rng(51)
    seeds_x = [4, 5, 3, 6, 4, 5, 3, 4]
    seeds_y = [5, 4, 4, 3, 6, 3, 5, 4]
    names = [f"t{i}" for i in range(8)]
    xt, yt = np.repeat(names, seeds_x), np.repeat(names, seeds_y)
    x = (rng.random(len(xt)) < np.repeat(rng.random(8), seeds_x)).astype(int)
    y = (rng.random(len(yt)) < np.repeat(rng.random(8), seeds_y)).astype(int)
    res = pass_k_difference(x, y, x_strata=xt, y_strata=yt, k=3, n_resamples=500, rng=0)
    per_task = lambda v, t: [float(brute_pass_hat_k(list(c), 3)) for c in cells_of(v, t)]
    base, cand = np.mean(per_task(x, xt)), np.mean(per_task(y, yt))
    assert res.details["k"] == 3 and res.design_kind == "paired"
    assert res.estimates == pytest.approx((base, cand), abs=1e-12)
    assert res.statistic == pytest.approx(cand - base, abs=1e-12)
    # The test is the paired sign-flip test of per-task pass^3 differences (2^8 = 256 <= 500: exact).
    d = np.array(per_task(y, yt)) - np.array(per_task(x, xt))
    ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf)
    assert res.exact is True
    assert res.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
