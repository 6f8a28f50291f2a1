"""Statistics as functions of cell weights, vectorised over resamples.

A kernel is built once from the runs of a :class:`~agentab.stats._design.Design`
and then evaluated on weight matrices ``(w_base, w_cand)`` of shape
``(batch, n_cells)``. It returns each arm's estimate and the effect, each of
shape ``(batch, m)`` for ``m`` statistics (one, or one per quantile).

Every kernel reduces a cell to what the statistic needs (a mean, a vector of
level shares, or its sorted runs), so a resample costs O(cells), O(cells x
levels) or O(runs) rather than a reshuffle of the raw data.
"""

from __future__ import annotations

import numpy as np

from agentab.stats._design import CountDesign, Design

__all__ = ["MeanKernel", "OrdinalKernel", "QuantileKernel", "cell_means", "pass_hat_k"]


def cell_means(values: np.ndarray, design: Design) -> np.ndarray:
    """Mean of the runs in every cell."""
    if isinstance(design, CountDesign):
        return design.levels.astype(float)  # a cell is one value
    total = np.bincount(design.cell, weights=values, minlength=design.n_cells)
    size = np.bincount(design.cell, minlength=design.n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / size


def pass_hat_k(successes: np.ndarray, trials: np.ndarray, k: int) -> np.ndarray:
    """Unbiased estimate of pass^k (all ``k`` attempts succeed) per task.

    ``C(c, k) / C(n, k)`` for ``c`` successes in ``n`` attempts (Yao et al.
    2024, tau-bench, eq. 1; the analogue of Chen et al. 2021's unbiased
    pass@k). Averaging ``(c / n) ** k`` instead is biased upwards.

    Examples
    --------
    >>> pass_hat_k(np.array([5, 4, 0]), np.array([5, 5, 5]), 5)
    array([1., 0., 0.])
    >>> pass_hat_k(np.array([4]), np.array([5]), 2).round(6)  # (4 * 3) / (5 * 4)
    array([0.6])
    """
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    out = np.ones_like(successes)
    for i in range(k):
        out *= np.clip(successes - i, 0, None) / (trials - i)
    return out


def _weighted_average(w: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Rows of ``w`` (resamples x cells) as weights over ``values`` (cells x d): product first, then
    one division per row, rather than normalising the whole weight matrix."""
    total = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ values) / total


class _ArmAverage:
    """A statistic of the arms' task averages of a vector per cell.

    Subclasses set ``values`` (cells x d) and define ``summarise(base, cand)``,
    which maps the arms' averages (rows x d each) to each arm's estimate and
    the effect.
    """

    values: np.ndarray

    def summarise(self, base: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def averages(self, w_base: np.ndarray, w_cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _weighted_average(w_base, self.values), _weighted_average(w_cand, self.values)

    def __call__(self, w_base: np.ndarray, w_cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.summarise(*self.averages(w_base, w_cand))


class MeanKernel(_ArmAverage):
    """Task-averaged mean of a per-cell summary; effect = candidate - baseline."""

    def __init__(self, summaries: np.ndarray):
        self.values = np.asarray(summaries, dtype=float)[:, None]

    def summarise(self, base: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return base, cand, cand - base


def cliff_delta(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Cliff's delta ``P(Y > X) - P(Y < X)`` between level distributions (last axis), Y ~ cand, X ~ base.

    With ``F`` the baseline's cumulative shares, ``sum_i cand_i (F(i - 1) - (1 - F(i)))``;
    equal to ``2 PS - 1`` with ``PS = sum_i cand_i (F(i - 1) + base_i / 2)``.
    """
    below = np.cumsum(base, axis=-1) - base
    above = 1.0 - below - base
    return np.sum(cand * (below - above), axis=-1)


class OrdinalKernel(_ArmAverage):
    """Cliff's delta between the arms' task-averaged level distributions.

    Each arm's distribution over the ordered levels is the average of its
    tasks' level shares. With ``p`` (baseline) and ``r`` (candidate) level
    probabilities, the probability of superiority is
    ``PS = P(Y > X) + P(Y = X) / 2 = sum_i r_i (F_p(i - 1) + p_i / 2)`` and
    Cliff's delta ``2 PS - 1 = P(Y > X) - P(Y < X)``; both depend on the
    order of the levels only, never on their spacing. The arms' estimates are
    mean levels, a descriptive figure.
    """

    def __init__(self, codes: np.ndarray, levels: np.ndarray, design: Design):
        k = len(levels)
        self.levels = np.asarray(levels, dtype=float)
        if isinstance(design, CountDesign):
            self.values = np.eye(k)  # a cell is one level
            return
        counts = np.zeros((design.n_cells, k))
        np.add.at(counts, (design.cell, codes), 1.0)
        self.values = counts / counts.sum(axis=1, keepdims=True)

    def summarise(self, base: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (base @ self.levels)[:, None], (cand @ self.levels)[:, None], cliff_delta(base, cand)[:, None]


class QuantileKernel:
    """Difference of the arms' quantiles; each arm's quantile is weighted by task.

    The quantile is the inverse of the empirical distribution function
    (Hyndman & Fan 1996, definition 1; numpy's ``method="inverted_cdf"``):
    the smallest observed value ``v`` with ``F(v) >= q``, where ``F`` gives
    each task weight 1 shared equally by its runs. With one run per task, or
    equal seeds per task, it is the ordinary sample quantile of that
    definition. It is always an observed value.
    """

    #: Relative tolerance on cumulative weights, so that ``j / n >= q`` holds
    #: exactly when it does in exact arithmetic.
    TOL = 1e-9

    #: Use per-cell shares of distinct values when there are at most this many
    #: (counts such as steps or retries): a matrix product instead of a pass over runs.
    MAX_LEVELS = 128

    def __init__(self, values: np.ndarray, design: Design, q: np.ndarray):
        self.q = np.asarray(q, dtype=float)
        if isinstance(design, CountDesign):
            self.shares, self.sorted = np.eye(len(design.levels)), design.levels
            return
        levels, codes = np.unique(values, return_inverse=True)
        self.shares = None
        if len(levels) <= self.MAX_LEVELS and len(levels) < len(values):
            shares = np.zeros((design.n_cells, len(levels)))
            np.add.at(shares, (design.cell, codes.reshape(-1)), design.run_weight)
            self.shares = shares
            self.sorted = levels
            return
        order = np.argsort(values, kind="stable")
        self.sorted = values[order]
        self.cell = design.cell[order]
        self.run_weight = design.run_weight[order]

    def quantiles(self, w: np.ndarray) -> np.ndarray:
        n = len(self.sorted)
        if self.shares is not None:
            cumulative = np.cumsum(w @ self.shares, axis=1)
        else:
            cumulative = np.cumsum(w[:, self.cell] * self.run_weight, axis=1)
        cumulative /= cumulative[:, -1:]
        # Rows shifted by their index form one increasing array: one search finds every row's position.
        rows = np.arange(len(w))
        cumulative += rows[:, None]
        targets = rows[:, None] + (self.q - self.TOL)[None, :]
        index = np.searchsorted(cumulative.ravel(), targets.ravel(), side="left").reshape(targets.shape)
        index = np.minimum(index - rows[:, None] * n, n - 1)
        return self.sorted[index]

    def __call__(self, w_base: np.ndarray, w_cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        base = self.quantiles(w_base)
        cand = self.quantiles(w_cand)
        return base, cand, cand - base
