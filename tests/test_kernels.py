"""Fast resampling paths: the count design and exact quantile distributions agree with the generic path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import agentab.stats._design as design_module
import agentab.stats._inputs as inputs_module
import agentab.stats._quantiles as quantiles_module
import agentab.stats.two_sample as two_sample
from agentab.errors import StatsWarning
from agentab.stats import mean_difference, ordinal_superiority, quantile_difference, rate_difference
from agentab.stats._design import CountDesign, count_design
from agentab.stats._quantiles import bootstrap_order_statistics, permuted_order_statistics, rank_of

pytestmark = pytest.mark.filterwarnings("ignore::agentab.errors.StatsWarning")


def _generic(monkeypatch):
    """Switch both fast paths off."""
    monkeypatch.setattr(inputs_module, "count_design", lambda *a, **k: None)
    monkeypatch.setattr(two_sample, "EXACT_QUANTILE_RUNS", 10**12)


def _mc_close(a: float, b: float, n: int, k: float = 4.0) -> None:
    """Two Monte Carlo p-values (n resamples each) agree within k standard errors of their difference."""
    p = max(min((a + b) / 2, 1 - 1e-3), 1e-3)
    assert abs(a - b) <= k * np.sqrt(2 * p * (1 - p) / n) + 2 / n


def test_count_design_is_chosen_for_few_values_and_many_runs():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 4, 600).astype(float)
    assert isinstance(count_design(values, 300, 300), CountDesign)
    assert count_design(rng.normal(size=600), 300, 300) is None  # many distinct values
    assert count_design(values[:8], 4, 4) is None  # few permutations: enumerate exactly instead
    res = ordinal_superiority(values[:300], values[300:], rng=0)
    assert "Monte Carlo" in res.method and res.design == "independent runs (300 + 300)"


@pytest.mark.parametrize("fn", [rate_difference, ordinal_superiority, mean_difference])
def test_count_design_agrees_with_the_generic_path(fn, monkeypatch):
    rng = np.random.default_rng(1)
    levels = 2 if fn is rate_difference else 4
    x = rng.integers(0, levels, 400).astype(float)
    y = np.minimum(levels - 1, rng.integers(0, levels, 350) + (rng.random(350) < 0.15)).astype(float)
    fast = fn(x, y, n_resamples=4000, rng=3)
    _generic(monkeypatch)
    slow = fn(x, y, n_resamples=4000, rng=3)
    assert fast.statistic == pytest.approx(slow.statistic, abs=1e-12)
    assert fast.estimates == pytest.approx(slow.estimates, abs=1e-12)
    _mc_close(fast.pvalue, slow.pvalue, 4000)
    width = slow.confidence_interval.high - slow.confidence_interval.low
    assert fast.confidence_interval.low == pytest.approx(slow.confidence_interval.low, abs=0.1 * width)
    assert fast.confidence_interval.high == pytest.approx(slow.confidence_interval.high, abs=0.1 * width)
    assert fast.ci_method == slow.ci_method == "test inversion"


def test_exact_quantile_path_agrees_with_the_generic_path(monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.lognormal(0, 1, 1500)
    y = rng.lognormal(0.15, 1, 1300)
    fast = quantile_difference(x, y, q=(0.5, 0.9), n_resamples=3000, rng=4)
    _generic(monkeypatch)
    slow = quantile_difference(x, y, q=(0.5, 0.9), n_resamples=3000, rng=4)
    np.testing.assert_array_equal(fast.statistic, slow.statistic)
    np.testing.assert_array_equal(fast.ratio, slow.ratio)
    for a, b in zip(fast.pvalue, slow.pvalue):
        _mc_close(a, b, 3000)
    width = slow.confidence_interval.high - slow.confidence_interval.low
    for bound in ("low", "high"):
        for j in range(2):
            a, b = getattr(fast.confidence_interval, bound)[j], getattr(slow.confidence_interval, bound)[j]
            assert a == pytest.approx(b, abs=0.1 * width[j])


def test_permuted_order_statistics_match_brute_force():
    n, n_cand, size = 24, 10, 60_000
    rb, rc = np.array([7, 12]), np.array([5])
    rng = np.random.default_rng(5)
    pb, pc = permuted_order_statistics(n, n_cand, rb, rc, size, rng)
    keys = rng.random((size, n)).argsort(axis=1)
    cand = np.sort(keys[:, :n_cand], axis=1)
    base = np.sort(keys[:, n_cand:], axis=1)
    joint_fast = np.bincount(pb[:, 1] * n + pc[:, 0], minlength=n * n) / size
    joint_brute = np.bincount(base[:, 11] * n + cand[:, 4], minlength=n * n) / size
    assert np.abs(joint_fast - joint_brute).max() < 0.006  # ~5 SE of a cell near its largest probability
    marginal_fast = np.bincount(pb[:, 0], minlength=n) / size
    marginal_brute = np.bincount(base[:, 6], minlength=n) / size
    assert np.abs(marginal_fast - marginal_brute).max() < 0.01


def test_bootstrap_order_statistic_distribution_is_exact():
    n, rank = 15, 8
    # P(X*_(8) = x_(j)) by enumeration is impractical; the closed form is checked against simulation
    rng = np.random.default_rng(6)
    size = 200_000
    exact = np.bincount(bootstrap_order_statistics(n, rank, size, rng), minlength=n) / size
    brute = np.bincount(np.sort(rng.integers(0, n, (size, n)), axis=1)[:, rank - 1], minlength=n) / size
    assert np.abs(exact - brute).max() < 0.005
    assert rank_of(20, 0.95) == 19 and rank_of(100, 0.5) == 50


def test_fast_paths_do_not_depend_on_the_batch_size(monkeypatch):
    rng = np.random.default_rng(7)
    discrete = (rng.integers(0, 4, 500).astype(float), rng.integers(0, 4, 450).astype(float))
    continuous = (rng.lognormal(0, 1, 1200), rng.lognormal(0, 1, 1100))
    runs = lambda: (  # noqa: E731
        ordinal_superiority(*discrete, n_resamples=500, rng=8),
        quantile_difference(*continuous, q=(0.5, 0.95), n_resamples=500, rng=8),
    )
    before = runs()
    monkeypatch.setattr(design_module, "BATCH_CELLS", 64)
    monkeypatch.setattr(quantiles_module, "BATCH_CELLS", 64)
    after = runs()
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.pvalue, b.pvalue)
        np.testing.assert_array_equal(a.confidence_interval.low, b.confidence_interval.low)
        np.testing.assert_array_equal(a.confidence_interval.high, b.confidence_interval.high)


def test_no_warning_leaks_from_the_fast_paths():
    rng = np.random.default_rng(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        quantile_difference(rng.lognormal(0, 1, 2500), rng.lognormal(0, 1, 2500), n_resamples=300, rng=0)
        rate_difference(rng.random(3000) < 0.3, rng.random(3000) < 0.35, n_resamples=300, rng=0)
    assert StatsWarning


def test_two_valued_metric_is_exact_and_one_sided_equals_fisher():
    from scipy import stats as sps

    rng = np.random.default_rng(11)
    x, y = rng.random(400) < 0.4, rng.random(380) < 0.5
    table = np.array([[y.sum(), len(y) - y.sum()], [x.sum(), len(x) - x.sum()]])
    for alternative in ("greater", "less"):
        res = rate_difference(x, y, alternative=alternative, rng=0)
        assert res.exact is True
        assert res.pvalue == pytest.approx(sps.fisher_exact(table, alternative=alternative).pvalue, rel=1e-10)
    two = rate_difference(x, y, rng=0)
    assert two.pvalue == pytest.approx(min(1.0, 2 * sps.fisher_exact(table, alternative="greater").pvalue), rel=1e-10)


def test_paired_monte_carlo_is_within_its_error_of_the_enumerated_pvalue():
    """15 tasks x 3 seeds: 999 random flips against all 2^15 (n_resamples=2**15 enumerates them)."""
    rng = np.random.default_rng(12)
    tasks, seeds = 15, 3
    ids = np.repeat(np.arange(tasks), seeds)
    x = (rng.random(tasks * seeds) < 0.4).astype(float)
    y = (rng.random(tasks * seeds) < 0.6).astype(float)
    drawn = rate_difference(x, y, x_strata=ids, y_strata=ids, n_resamples=999, rng=0)
    every = rate_difference(x, y, x_strata=ids, y_strata=ids, n_resamples=2**15, rng=0)
    assert drawn.exact is False and every.exact is True and every.n_permutations == 2**15
    p = every.pvalue
    assert abs(drawn.pvalue - p) <= 4 * np.sqrt(p * (1 - p) / 999) + 2 / 1000
    assert 0.001 < p <= 1
