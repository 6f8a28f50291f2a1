"""Exact resampling distributions of sample quantiles of independent runs.

The quantile used everywhere in agentab is the inverse of the empirical
distribution function (Hyndman & Fan 1996, definition 1): with ``n`` sorted
values, the ``r``-th order statistic ``x_(r)`` with ``r = ceil(n q)``.

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

import numpy as np

__all__ = ["rank_of", "bootstrap_order_statistics", "permuted_order_statistics"]


def rank_of(n: int, q: float) -> int:
    """1-based rank of the inverse-ECDF ``q``-quantile among ``n`` values: ``ceil(n q)``.

    Examples
    --------
    >>> rank_of(100, 0.95), rank_of(5, 0.5), rank_of(3, 0.01)
    (95, 3, 1)
    """
    return min(n, max(1, math.ceil(round(n * q, 9))))


def bootstrap_order_statistics(n: int, rank: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """0-based positions of the ``rank``-th order statistic in ``size`` bootstrap resamples of ``n`` values."""
    from scipy.special import betainc  # imported when first needed: `import agentab` stays light

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
