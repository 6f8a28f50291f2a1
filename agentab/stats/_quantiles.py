"""Exact resampling distributions of sample quantiles of independent runs.

The quantile used everywhere in agentab is the inverse of the empirical
distribution function (Hyndman & Fan 1996, definition 1): with ``n`` sorted
values, the ``r``-th order statistic ``x_(r)`` with ``r = ceil(n q)``
(:func:`agentab._vocabulary.rank_of`, its one definition).

Bootstrap
    A bootstrap resample's ``r``-th order statistic is at most ``x_(j)``
    exactly when at least ``r`` of the ``n`` draws fall on the first ``j``
    positions, a Binomial(n, j / n) count, so
    ``P(X*_(r) <= x_(j)) = P(Binomial(n, j / n) >= r)`` (Efron 1982, *The
    Jackknife, the Bootstrap and Other Resampling Plans*, ch. 10; Hutson 1999,
    *J. Appl. Stat.* 26:343-353). One sort and one pass over ``j`` give the
    whole bootstrap distribution; a resample of the quantile is then one
    uniform draw and a binary search, O(log n), and the two arms are drawn
    independently, as the two-sample bootstrap resamples them.

Permutation
    Under a permutation of arm labels the candidate's runs are a uniformly
    random subset of the pooled sorted sample. The pooled sample is cut into
    blocks; the candidate's count in every block is one multivariate
    hypergeometric draw, which locates the block holding each arm's ``r``-th
    value; inside that block the candidate's positions are a uniformly
    random subset of the block's size, drawn directly. The result has exactly
    the distribution of the quantiles of a random relabelling, at a cost of
    O(blocks + block size) per resample instead of O(n).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentab._vocabulary import rank_of
from agentab.stats._design import BATCH_CELLS
from agentab.stats._inputs import _scale
from agentab.stats._resampling import Resampled, snap_ties, tie_tolerance

__all__ = ["rank_of", "bootstrap_order_statistics", "permuted_order_statistics", "EXACT_QUANTILE_RUNS",
           "independent_quantiles", "ratio"]


def bootstrap_order_statistics(n: int, rank: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """0-based positions of the ``rank``-th order statistic in ``size`` bootstrap resamples of ``n`` values."""
    from scipy.special import (
        betainc,  # imported when first needed: `import agentab` stays light
    )

    j = np.arange(1, n + 1)
    # P(at least `rank` of n draws on the first j positions) = P(Binomial(n, j/n) >= rank) = I_{j/n}(rank, n - rank + 1)
    cdf = betainc(rank, n - rank + 1, j / n)
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(size), side="left")


def permuted_order_statistics(
    n: int,
    n_cand: int,
    ranks_base: np.ndarray,
    ranks_cand: np.ndarray,
    size: int,
    rng: np.random.Generator | list[np.random.Generator],
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (0-based, in the pooled sorted sample of ``n``) of each arm's order statistics
    after ``size`` random relabellings that give the candidate ``n_cand`` runs.

    ``rng`` is one generator, or one for the block counts followed by one per
    rank (baseline ranks, then candidate ranks): separate streams make the
    draws independent of how resamples are split into batches.
    Returns arrays of shape (size, len(ranks)) for the baseline and the candidate.
    """
    streams = rng if isinstance(rng, list) else [rng] * (1 + len(ranks_base) + len(ranks_cand))
    block = max(1, int(math.sqrt(n)))
    edges = np.arange(0, n + block, block)
    edges[-1] = n
    edges = np.unique(edges)
    sizes = np.diff(edges)
    counts = streams[0].multivariate_hypergeometric(sizes, n_cand, size=size)  # candidate runs per block
    base_counts = sizes[None, :] - counts
    rows = np.arange(size)
    width = int(sizes.max())
    inside = np.arange(width)[None, :]
    targets = [(0, r) for r in ranks_base] + [(1, r) for r in ranks_cand]
    blocks, keys, positions = [], [], []
    for t, (arm, r) in enumerate(targets):
        cum = np.cumsum(counts if arm == 1 else base_counts, axis=1)
        b = (cum < r).sum(axis=1)  # the block holding this arm's r-th value
        before = np.where(b > 0, cum[rows, np.maximum(b - 1, 0)], 0)
        # The candidate's positions inside a block are a random subset of it; targets that
        # fall in the same block of the same resample must see the same subset.
        key = streams[1 + t].random((size, width))
        for other_b, other_key in zip(blocks, keys):
            same = other_b == b
            key[same] = other_key[same]
        blocks.append(b)
        keys.append(key)
        block_size = sizes[b]
        masked = np.where(inside < block_size[:, None], key, np.inf)
        order = np.argsort(masked, axis=1)
        chosen = np.zeros((size, width), dtype=bool)
        chosen[rows[:, None], order] = inside < counts[rows, b][:, None]  # the first n_cand of the ordering
        mine = chosen if arm == 1 else ~chosen & (inside < block_size[:, None])
        offset = (np.cumsum(mine, axis=1) < (r - before)[:, None]).sum(axis=1)
        positions.append(edges[b] + offset)
    n_base = len(ranks_base)
    return np.stack(positions[:n_base], axis=1), np.stack(positions[n_base:], axis=1)


#: From this many runs (no task ids) quantiles are resampled from their exact distributions.
EXACT_QUANTILE_RUNS = 2000


def independent_quantiles(data: Any, qs: np.ndarray, test: bool) -> Resampled:
    """Observed, permutation and bootstrap quantiles of independent runs without touching every run per resample.

    See :mod:`agentab.stats._quantiles`: the bootstrap draws each arm's order
    statistic from its exact distribution; the permutation locates each arm's
    order statistic in the pooled sample through block counts. Same
    distributions as the generic path, O(log n) and O(sqrt n) per resample.
    """
    n_base, n_cand = data.design.n_runs
    base = np.sort(data.values[:n_base])
    cand = np.sort(data.values[n_base:])
    rb = np.array([rank_of(n_base, q) for q in qs])
    rc = np.array([rank_of(n_cand, q) for q in qs])
    effect = cand[rc - 1] - base[rb - 1]
    null = None
    if test:
        pooled = np.sort(data.values)
        streams = [np.random.default_rng(s) for s in data.rng.integers(2**63, size=1 + 2 * len(qs))]
        width = int(math.sqrt(len(pooled))) + 1
        batch = max(1, BATCH_CELLS // (4 * width))
        parts = []
        for start in range(0, data.n_resamples, batch):
            size = min(batch, data.n_resamples - start)
            pb, pc = permuted_order_statistics(len(pooled), n_cand, rb, rc, size, streams)
            parts.append(pooled[pc] - pooled[pb])
        null = np.concatenate(parts)
    rng_base, rng_cand = (np.random.default_rng(s) for s in data.rng.integers(2**63, size=2))
    boot_base = np.stack([base[bootstrap_order_statistics(n_base, r, data.n_resamples, rng_base)] for r in rb], axis=1)
    boot_cand = np.stack([cand[bootstrap_order_statistics(n_cand, r, data.n_resamples, rng_cand)] for r in rc], axis=1)
    tol = tie_tolerance(_scale(data.values))
    return Resampled(
        base[rb - 1], cand[rc - 1], effect, None if null is None else snap_ties(null, effect, tol), False,
        boot_base, boot_cand, snap_ties(boot_cand - boot_base, effect, tol),
    )


def ratio(cand: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``cand / base``, with 0 / 0 = 1 (both zero: no change) and x / 0 = inf for x > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((cand == 0) & (base == 0), 1.0, cand / base)
