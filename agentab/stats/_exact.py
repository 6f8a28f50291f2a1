"""Exact permutation laws: sign flips of integer task sums.

Used by :mod:`agentab.stats._studentized` instead of Monte Carlo resampling wherever the permutation
distribution is known by a small dynamic programme (the hypergeometric law of a two-valued metric is
there too, in :func:`~agentab.stats._studentized.two_values_mean`).
"""

from __future__ import annotations

from typing import Any

import numpy as np


__all__ = ["MAX_DP_SUPPORT", "MAX_JOINT_WORK", "_integer_task_differences", "sign_flip_law", "sign_flip_joint_law"]


#: Largest sum of |task differences| for the exact dynamic programme (its support is twice that).
MAX_DP_SUPPORT = 200_000


def _integer_task_differences(data: Any, summaries: np.ndarray) -> np.ndarray | None:
    """Per-task differences of the statistic's cell summaries, scaled by the runs per cell, when
    they are integers (run sums of 0/1 or integer values) and every cell has the same number of
    runs: the sign-flip statistic is then their signed sum."""
    d = data.design
    if d.kind != "paired":
        return None
    sizes = np.bincount(d.cell, minlength=d.n_cells)
    if not (sizes == sizes[0]).all():
        return None
    diff = (summaries[d.cand_cells] - summaries[d.base_cells]) * sizes[0]
    rounded = np.round(diff)
    if not np.allclose(diff, rounded, rtol=0, atol=1e-9) or np.abs(rounded).sum() > MAX_DP_SUPPORT:
        return None
    return rounded.astype(np.int64)


def sign_flip_law(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact sign-flip law of ``sum(diff)`` for integers ``diff``: its support and probabilities.

    Under the null each task's difference enters with sign +1 or -1 with probability 1/2,
    independently; the law of the signed sum is built task by task on the integer grid by
    convolution (Pesarin & Salmaso 2010, *Permutation Tests for Complex Data*, sec. 2.6, on the
    dynamic-programming form of the paired permutation test). Points of probability 0 are dropped.

    Examples
    --------
    >>> sums, probs = sign_flip_law(np.array([1, 2]))
    >>> sums.tolist(), probs.tolist()
    ([-3, -1, 1, 3], [0.25, 0.25, 0.25, 0.25])
    """
    size = np.abs(diff)
    total = int(size.sum())
    probs = np.zeros(2 * total + 1)
    probs[total] = 1.0
    for step in size[size > 0]:
        shifted = np.zeros_like(probs)
        shifted[step:] += probs[:-step]
        shifted[:-step] += probs[step:]
        probs = 0.5 * shifted
    support = np.arange(-total, total + 1)
    keep = probs > 0
    return support[keep], probs[keep]


#: Largest (support of the sum) x (tasks + 1) x tasks for the exact joint law of the sum and the number of flips.
MAX_JOINT_WORK = 2 * 10**8


def sign_flip_joint_law(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The exact joint sign-flip law of ``sum(s * diff)`` and the number of flipped tasks, or None when too large.

    The number of flips is what inverting the test needs besides the sum (testing a shifted
    effect moves the sum by the shift times ``sum(s)``). Built by convolution over tasks on the
    grid (sum, flips); tasks with a zero difference move only the count of flips.

    Returns ``(sums, flips, probs)`` over the points of positive probability, or None when the grid
    work exceeds :data:`MAX_JOINT_WORK`.

    Examples
    --------
    >>> sums, flips, probs = sign_flip_joint_law(np.array([1, 0]))
    >>> sorted(zip(sums.tolist(), flips.tolist(), probs.tolist()))
    [(-1, 1, 0.25), (-1, 2, 0.25), (1, 0, 0.25), (1, 1, 0.25)]
    """
    diff = np.asarray(diff, dtype=np.int64)
    n = len(diff)
    total = int(np.abs(diff).sum())
    if (2 * total + 1) * (n + 1) * max(n, 1) > MAX_JOINT_WORK:
        return None
    probs = np.zeros((2 * total + 1, n + 1))
    probs[total, 0] = 1.0
    for step in diff.tolist():
        new = _shifted(probs, step, 0)  # kept: the sum moves by d
        new += _shifted(probs, -step, 1)  # flipped: by -d, one more flip
        probs = 0.5 * new
    sums, flips = np.nonzero(probs > 0)
    return sums - total, flips, probs[sums, flips]


def _shifted(grid: np.ndarray, by_sum: int, by_flips: int) -> np.ndarray:
    """``grid`` moved ``by_sum`` rows and ``by_flips`` columns (what moves off the grid has probability 0)."""
    out = np.zeros_like(grid)
    rows = grid.shape[0]
    src = slice(max(0, -by_sum), rows - max(0, by_sum))
    dst = slice(max(0, by_sum), rows - max(0, -by_sum))
    cols = grid.shape[1] - by_flips
    out[dst, by_flips:] = grid[src, :cols]
    return out
