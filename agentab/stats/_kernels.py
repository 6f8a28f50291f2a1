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

from agentab.stats import _windowed
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

    Method: a window of the pooled sorted runs around the batch's quantile
    (:mod:`agentab.stats._windowed`). A resample's weight below the window is
    the product of its cell weights with each cell's weight below the
    window's start; only the runs inside the window get a cumulative pass;
    resamples whose quantile falls outside the window, or whose share at the
    crossing is within rounding reach of the threshold, are recomputed by the
    reference formula (a cumulative sum over every run). So every resample's
    quantile is the reference's, at O(cells + window) per resample instead of
    O(runs). Metrics with at most :attr:`MAX_LEVELS` distinct values use the
    same window over their levels.
    """

    #: Relative tolerance on cumulative weights, so that ``j / n >= q`` holds
    #: exactly when it does in exact arithmetic.
    TOL = _windowed.TOL

    #: Use per-cell shares of distinct values when there are at most this many
    #: (counts such as steps or retries): a matrix product instead of a pass over runs.
    MAX_LEVELS = 128

    def __init__(self, values: np.ndarray, design: Design, q: np.ndarray):
        self.q = np.asarray(q, dtype=float)
        self.n_tasks = len(design.base_cells) if design.kind == "paired" else 0
        self._windows: dict[str, dict] = {}  # windows kept between batches: time only, never results
        self._arms: dict[int, tuple[_windowed.Runs, np.ndarray]] = {}
        if isinstance(design, CountDesign):
            self.sorted = design.levels
            self.atoms: _windowed.Atoms = _windowed.Levels(np.eye(len(design.levels)))
            self.cell_total = np.ones(len(design.levels))
            return
        order = np.argsort(values, kind="stable")
        self.sorted = values[order]
        distinct = 1 + np.count_nonzero(self.sorted[1:] != self.sorted[:-1])
        if distinct <= self.MAX_LEVELS and distinct < len(values):
            levels, codes = np.unique(values, return_inverse=True)
            shares = np.zeros((design.n_cells, len(levels)))
            np.add.at(shares, (design.cell, codes.reshape(-1)), design.run_weight)
            self.sorted = levels
            self.atoms = _windowed.Levels(shares)
            self.cell_total = shares.sum(axis=1)
            return
        index = np.int32 if len(values) < 2**31 else np.int64  # half the memory of the design's cells
        cell = design.cell[order].astype(index, copy=False)
        cell_weight = _per_cell(design)
        if cell_weight is None:
            self.atoms = _windowed.Runs(cell, np.ascontiguousarray(design.run_weight[order]), design.n_cells)
        else:  # one weight per cell: gathered when needed, not kept per run (twice: pooled and per arm)
            self.atoms = _windowed.Runs(cell, None, design.n_cells, cell_weight)
        if design.gathered_weights() is not None:  # no array of one weight per run
            self.cell_total = _windowed.gathered_sums(design.cell, design.gathered_weights(), design.n_cells)
        else:
            self.cell_total = _windowed.cell_sums(design.cell, design.run_weight, design.n_cells)

    def positions(self, weights: _windowed.Weights, rows: np.ndarray | None = None, *,
                  arm: int | None = None, key: str | None = None) -> np.ndarray:
        """Positions in :attr:`sorted` of every row's quantiles.

        ``rows``: each row's index in its batch (the reference formula's rounding depends on it); ``arm``:
        the rows weigh only that arm's cells (0 baseline, 1 candidate), so only its runs are searched;
        ``key``: rows of the same kind share their windows from batch to batch (:mod:`_windowed`).
        """
        rows = np.arange(weights.n_rows) if rows is None else rows
        cache = None if key is None else self._windows.setdefault(key, {})
        if arm is None or not isinstance(self.atoms, _windowed.Runs):
            return _windowed.windowed_positions(self.atoms, weights, self.q, self.cell_total, rows, cache)
        if arm not in self._arms:
            # Zero-weight runs add exactly 0.0 to a cumulative sum, and the first run to reach the
            # threshold has a positive weight: searching the arm's own runs gives the same position.
            mine = (self.atoms.cell >= self.n_tasks) == bool(arm)
            index = np.flatnonzero(mine).astype(self.atoms.cell.dtype)
            self._arms[arm] = (self.atoms.subset(index), index)
        atoms, index = self._arms[arm]
        return index[_windowed.windowed_positions(atoms, weights, self.q, self.cell_total, rows, cache)]

    def quantiles(self, w: np.ndarray) -> np.ndarray:
        """Every row's quantiles for rows of cell weights ``w`` (resamples x cells): (resamples, len(q))."""
        return self.sorted[self.positions(_windowed.Dense(np.asarray(w, dtype=float)))]

    def __call__(self, w_base: np.ndarray, w_cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        base = self.quantiles(w_base)
        cand = self.quantiles(w_cand)
        return base, cand, cand - base

    def bootstrapped(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Paired design: the kernel on bootstrap rows of task counts (resamples x tasks), both arms."""
        base = self.sorted[self.positions(_windowed.TaskBlocks(counts, (0, 0), (1, 0)), arm=0, key="boot 0")]
        cand = self.sorted[self.positions(_windowed.TaskBlocks(counts, (0, 0), (0, 1)), arm=1, key="boot 1")]
        return base, cand, cand - base

    def swapped(self, swap: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Paired design: the kernel on rows of task sign flips (resamples x tasks, True: the arms swap)."""
        flip = swap.astype(float)
        base = self.sorted[self.positions(_windowed.TaskBlocks(flip, (1, 0), (-1, 1)), key="swap 0")]
        cand = self.sorted[self.positions(_windowed.TaskBlocks(flip, (0, 1), (1, -1)), key="swap 1")]
        return base, cand, cand - base


def _per_cell(design: Design) -> np.ndarray | None:
    """Each cell's run weight when all runs of a cell weigh the same (bit for bit), else None."""
    gathered = design.gathered_weights()
    if gathered is not None:
        return gathered  # every run's weight is gathered from these: the same floats by construction
    run_weight = design.run_weight
    if run_weight.dtype != np.float64:
        return None
    weight = np.zeros(design.n_cells)
    weight[design.cell] = run_weight  # one of each cell's weights: checked against every run below
    step = 1 << 18  # in pieces: no temporary of one float per run
    for lo in range(0, len(design.cell), step):
        if not np.array_equal(weight[design.cell[lo : lo + step]].view(np.uint64),
                              np.ascontiguousarray(run_weight[lo : lo + step]).view(np.uint64)):
            return None
    return weight
