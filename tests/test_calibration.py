"""Calibration of agentab.stats by simulation (CI-sized; the full version is
``benchmarks/validate_calibration.py``).

Data come from task-level models with strong task effects (intra-task
correlation about 0.5 on the observed scale, 5 seeds per task, 30 tasks per
arm). Under the null the permutation test must reject at its nominal 5%:
every assertion checks the rejection rate against a binomial acceptance band
computed for the number of simulations (the 0.05% and 99.95% quantiles, so a
correct test fails about once in a thousand assertions; the seeds are fixed,
so the outcome is deterministic). The clustered tests also check that the
same data analysed without task ids (runs treated as independent) over-reject,
which is why the task-aware designs exist.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats as sps

from agentab.errors import StatsWarning
from agentab.stats import mean_difference, ordinal_superiority, quantile_difference, rate_difference

ALPHA = 0.05
N_TASKS = 30
SEEDS = 5
CUTS = np.array([-0.5, 0.4, 1.2])  # ordinal 0-3 from a latent normal


# --------------------------------------------------------------------------- #
# Task-level models: task parameters, and the runs of a task given its parameter
# --------------------------------------------------------------------------- #
def _binary_tasks(n, rng):
    return rng.beta(0.5, 0.5, n)  # ICC = 1 / (0.5 + 0.5 + 1) = 0.5


def _binary_runs(p, rng):
    return (rng.random(len(p)) < p).astype(float)


def _ordinal_tasks(n, rng):
    return rng.normal(0.0, 1.2, n)  # latent task sd 1.2: observed-scale ICC about 0.5


def _ordinal_runs(mu, rng):
    return np.digitize(mu + rng.normal(size=len(mu)), CUTS).astype(float)


def _continuous_tasks(n, rng):
    return rng.normal(0.0, 1.0, n)  # ICC 0.5


def _continuous_runs(mu, rng):
    return mu + (rng.chisquare(8, len(mu)) - 8) / 4.0  # unit variance, skewness 1


def _cost_tasks(n, rng):
    return rng.normal(0.0, 0.6, n)  # log-scale ICC 0.5


def _cost_runs(mu, rng):
    return np.exp(np.log(0.05) + mu + rng.normal(0.0, 0.6, len(mu)))


KINDS = {
    "binary": (_binary_tasks, _binary_runs, rate_difference),
    "ordinal": (_ordinal_tasks, _ordinal_runs, ordinal_superiority),
    "continuous": (_continuous_tasks, _continuous_runs, mean_difference),
}

TASK_IDS = np.repeat(np.arange(N_TASKS), SEEDS)
OTHER_TASK_IDS = np.repeat(np.arange(N_TASKS, 2 * N_TASKS), SEEDS)


def _band(n_sims: int, p: float) -> tuple[float, float]:
    """Acceptance band for a binomial share: its 0.05% and 99.95% quantiles."""
    return sps.binom.ppf(0.0005, n_sims, p) / n_sims, sps.binom.ppf(0.9995, n_sims, p) / n_sims


def _streams(seed: int, n_sims: int, per_sim: int):
    """Independent generators, ``per_sim`` for each simulation."""
    for ss in np.random.SeedSequence(seed).spawn(n_sims):
        yield [np.random.default_rng(s) for s in ss.spawn(per_sim)]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        yield


# --------------------------------------------------------------------------- #
# Type I error
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kind", list(KINDS))
def test_paired_null_rejects_at_nominal_rate(kind):
    """Same tasks in both arms; each task's candidate runs come from its baseline distribution."""
    tasks, runs, test = KINDS[kind]
    n_sims = 400
    rejected = 0
    for data, analysis in _streams(1000 + list(KINDS).index(kind), n_sims, 2):
        theta = np.repeat(tasks(N_TASKS, data), SEEDS)
        x, y = runs(theta, data), runs(theta, data)
        res = test(x, y, x_strata=TASK_IDS, y_strata=TASK_IDS, n_resamples=199, rng=analysis)
        assert res.details["design_kind"] == "paired"
        rejected += res.pvalue <= ALPHA
    low, high = _band(n_sims, ALPHA)
    assert low <= rejected / n_sims <= high, (kind, rejected / n_sims, (low, high))


@pytest.mark.parametrize("kind", list(KINDS))
def test_clustered_null_rejects_at_nominal_rate_and_naive_over_rejects(kind):
    """Different tasks per arm, from the same task population.

    The task-aware test (whole tasks permuted) holds its level; the same data
    without task ids (150 runs per arm taken as independent) over-rejects:
    with ICC 0.5 and 5 seeds the design effect is 3, and the naive rejection
    rate is about 2 (1 - Phi(1.96 / sqrt(3))) = 0.26 (measured: 0.25-0.28).
    """
    tasks, runs, test = KINDS[kind]
    n_sims = 400
    rejected = naive_rejected = 0
    for data, analysis, naive_analysis in _streams(2000 + list(KINDS).index(kind), n_sims, 3):
        x = runs(np.repeat(tasks(N_TASKS, data), SEEDS), data)
        y = runs(np.repeat(tasks(N_TASKS, data), SEEDS), data)
        res = test(x, y, x_strata=TASK_IDS, y_strata=OTHER_TASK_IDS, n_resamples=199, rng=analysis)
        assert res.details["design_kind"] == "clustered"
        rejected += res.pvalue <= ALPHA
        naive = test(x, y, n_resamples=199, rng=naive_analysis)
        naive_rejected += naive.pvalue <= ALPHA
    low, high = _band(n_sims, ALPHA)
    assert low <= rejected / n_sims <= high, (kind, rejected / n_sims, (low, high))
    assert naive_rejected / n_sims > 0.15, (kind, naive_rejected / n_sims)


def test_quantile_p50_independent_null_rejects_at_nominal_rate():
    """Median of a long-tailed cost, runs without task ids, both arms from one distribution."""
    n_sims = 400
    rejected = 0
    for data, analysis in _streams(3000, n_sims, 2):
        x = _cost_runs(_cost_tasks(N_TASKS * SEEDS, data), data)  # a fresh task per run: i.i.d. runs
        y = _cost_runs(_cost_tasks(N_TASKS * SEEDS, data), data)
        res = quantile_difference(x, y, q=0.5, n_resamples=199, rng=analysis)
        assert res.details["design_kind"] == "independent"
        rejected += res.pvalue <= ALPHA
    low, high = _band(n_sims, ALPHA)
    assert low <= rejected / n_sims <= high, (rejected / n_sims, (low, high))


# --------------------------------------------------------------------------- #
# Coverage
# --------------------------------------------------------------------------- #
def test_paired_bca_interval_covers_the_task_averaged_effect():
    """Paired continuous metric whose effect varies across tasks.

    Candidate task mean mu_t + d_t with d_t ~ N(0.3, 0.3^2): the true
    task-averaged effect is E[d_t] = 0.3. The 95% BCa interval over tasks
    must cover it in about 95% of simulations.
    """
    n_sims = 300
    truth = 0.3
    covered = 0
    for data, analysis in _streams(4000, n_sims, 2):
        mu = _continuous_tasks(N_TASKS, data)
        mu_cand = mu + data.normal(truth, 0.3, N_TASKS)
        x = _continuous_runs(np.repeat(mu, SEEDS), data)
        y = _continuous_runs(np.repeat(mu_cand, SEEDS), data)
        res = mean_difference(x, y, x_strata=TASK_IDS, y_strata=TASK_IDS, n_resamples=999, rng=analysis)
        assert res.details["ci_method"] == "BCa"
        covered += res.confidence_interval.low <= truth <= res.confidence_interval.high
    low, high = _band(n_sims, 0.95)
    assert low <= covered / n_sims <= high, (covered / n_sims, (low, high))
