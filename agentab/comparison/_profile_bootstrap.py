"""The task-cluster bootstrap of a profile's cells (:mod:`agentab.comparison.profiles`).

Each arm's resamples are multinomial task counts (resamples x tasks): a resample keeps every run of each
drawn task, so a rate, share or mean is a weighted mean of the per-task means (one matrix product) and a
quantile is read off the cumulative run weights of the presorted values, in batches of at most
:data:`BATCH` weights (the results do not depend on the batch size).
"""

from __future__ import annotations

import numpy as np

from agentab._vocabulary import QUANTILE_TOL, quantile, task_weights

__all__ = ["BATCH", "MIN_TASKS", "mean_cell", "percentile_interval", "quantile_cells", "task_draws"]

#: Fewest tasks with a known value for a cell to get an interval (a bootstrap over fewer is not one).
MIN_TASKS = 5
#: Bootstrap weights held at once (resamples x runs), so memory stays bounded; results do not depend on it.
BATCH = 2_000_000


def task_draws(tasks: np.ndarray, arms: list[np.ndarray], n_resamples: int, rng: np.random.Generator,
               clustered: bool) -> tuple[bool, list[tuple[np.ndarray, np.ndarray]]]:
    """Per arm: each run's task as a local code, and the bootstrap's task counts (resamples x tasks, floats).

    Joint (one draw for every arm) when the arms ran the same tasks; else one draw per arm, in order.
    """
    local = []
    for rows in arms:
        ids, codes = np.unique(tasks[rows], return_inverse=True)
        local.append((ids, codes.reshape(-1)))
    joint = clustered and len(arms) > 1 and all(np.array_equal(ids, local[0][0]) for ids, _ in local)
    if joint:
        n = len(local[0][0])
        shared = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(float)
        return True, [(codes, shared) for _, codes in local]
    draws = []
    for ids, codes in local:
        n = len(ids)
        draws.append((codes, rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(float)))
    return False, draws


def mean_cell(values: np.ndarray, tasks: np.ndarray, weights: np.ndarray, level: float) -> tuple:
    """A rate, share or mean with tasks weighing the same, and its percentile bootstrap interval."""
    known = ~np.isnan(values)
    n_tasks_all = weights.shape[1]
    counts = np.bincount(tasks[known], minlength=n_tasks_all)
    sums = np.bincount(tasks[known], weights=values[known], minlength=n_tasks_all)
    has = counts > 0
    if not has.any():
        return np.nan, np.nan, np.nan, 0, 0
    means = sums[has] / counts[has]
    estimate = float(means.mean())
    if has.sum() < MIN_TASKS:
        return estimate, np.nan, np.nan, int(has.sum()), int(known.sum())
    drawn = weights[:, has] if not has.all() else weights
    total = drawn.sum(axis=1)
    replicates = (drawn @ means)[total > 0] / total[total > 0]
    low, high = percentile_interval(replicates, level, discrete=False)
    return estimate, low, high, int(has.sum()), int(known.sum())


def quantile_cells(values: np.ndarray, tasks: np.ndarray, weights: np.ndarray, qs: list[float],
                    level: float) -> list[tuple]:
    """Quantiles (agentab's, tasks weighing the same) and their percentile bootstrap intervals."""
    known = ~np.isnan(values)
    x, t = values[known], tasks[known]
    n_tasks = len(np.unique(t))
    if len(x) == 0:
        return [(np.nan, np.nan, np.nan, 0, 0) for _ in qs]
    estimates = [quantile(x, q, task_weights(t)) for q in qs]
    if n_tasks < MIN_TASKS:
        return [(e, np.nan, np.nan, n_tasks, len(x)) for e in estimates]
    order = np.argsort(x, kind="stable")
    x, t = x[order], t[order]
    per_run = 1.0 / np.bincount(t, minlength=weights.shape[1])[t]
    replicates: list[list[np.ndarray]] = [[] for _ in qs]
    step = max(1, BATCH // len(x))
    for start in range(0, weights.shape[0], step):
        cumulative = np.take(weights[start:start + step], t, axis=1)  # a new array, worked on in place
        cumulative *= per_run
        np.cumsum(cumulative, axis=1, out=cumulative)
        valid = cumulative[:, -1] > 0
        cumulative = cumulative[valid]
        cumulative /= cumulative[:, -1:]
        for k, q in enumerate(qs):
            index = np.minimum((cumulative < q - QUANTILE_TOL).sum(axis=1), len(x) - 1)
            replicates[k].append(x[index])
    out = []
    for e, reps in zip(estimates, replicates):
        low, high = percentile_interval(np.concatenate(reps), level, discrete=True)
        out.append((e, low, high, n_tasks, len(x)))
    return out


def percentile_interval(replicates: np.ndarray, level: float, *, discrete: bool) -> tuple[float, float]:
    """Percentile interval: bounds the distribution takes (``discrete``) or linearly interpolated."""
    if len(replicates) == 0:
        return np.nan, np.nan
    tail = 100 * (1 - level) / 2
    if discrete:
        return (float(np.percentile(replicates, tail, method="lower")),
                float(np.percentile(replicates, 100 - tail, method="higher")))
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)
