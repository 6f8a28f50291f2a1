"""One vocabulary for every layer: metric kinds, directions, alternatives and the quantile.

Every list here is the only copy in the package; the checks that accept these words are in
:mod:`agentab._checks`. The module imports numpy only, so every layer (``stats`` included) may use it.

The quantile
    agentab's ``q``-quantile of ``n`` values is the inverse of the empirical distribution function
    (Hyndman & Fan 1996, definition 1): the smallest value whose cumulative share of the weight reaches
    ``q``; with equal weights, the ``ceil(n q)``-th smallest value. With task weights (each task weighing
    the same, shared by its runs) it is the quantile of the mixture of the tasks' distributions, which
    :func:`agentab.compare`, :func:`agentab.summarize`, the reports and the plans all use, so one set of
    runs shows one p95 everywhere.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

__all__ = ["ALTERNATIVES", "ALTERNATIVE_ALIASES", "DEFAULT_DIRECTION", "DIRECTIONS", "KINDS", "QUANTILE_KINDS", "QUANTILE_TOL",
           "quantile", "rank_of", "task_weights"]

#: Kinds of metric, each routed to its own test.
KINDS = ("binary", "ordinal", "count", "cost", "continuous")
#: The long-tailed kinds, compared by quantiles (p50, p95), never by their mean.
QUANTILE_KINDS = ("count", "cost")
#: Which way is better.
DIRECTIONS = ("higher", "lower", "neither")
#: Which way is better when a kind is given without a direction.
DEFAULT_DIRECTION = MappingProxyType(
    {"binary": "higher", "ordinal": "higher", "continuous": "higher", "cost": "lower", "count": "lower"})
#: The alternative hypotheses, in scipy's words.
ALTERNATIVES = ("two-sided", "greater", "less")
#: statsmodels' words for the one-sided alternatives, accepted at the boundary and translated once.
ALTERNATIVE_ALIASES = MappingProxyType({"larger": "greater", "smaller": "less"})
#: Cumulative shares this close below ``q`` count as reaching it (floating-point sums of weights).
QUANTILE_TOL = 1e-9


def rank_of(n: int, q: float) -> int:
    """1-based rank of the ``q``-quantile among ``n`` equally weighted values: ``ceil(n q)``, within ``[1, n]``.

    Examples
    --------
    >>> rank_of(100, 0.95), rank_of(5, 0.5), rank_of(3, 0.01)
    (95, 3, 1)
    """
    return min(n, max(1, math.ceil(round(n * q, 9))))


def task_weights(tasks: np.ndarray) -> np.ndarray:
    """Run weights that give every task the same total weight (1 / runs of its task).

    Examples
    --------
    >>> task_weights(np.array(["a", "a", "b"])).tolist()
    [0.5, 0.5, 1.0]
    """
    _, codes, counts = np.unique(np.asarray(tasks), return_inverse=True, return_counts=True)
    return 1.0 / counts[codes.reshape(-1)]


def quantile(values: np.ndarray, q: float, weights: np.ndarray | None = None) -> float:
    """agentab's ``q``-quantile of ``values``: the inverse (weighted) empirical distribution function.

    Missing values (NaN) must be removed first; an empty array gives NaN.

    Examples
    --------
    >>> x = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    >>> quantile(x, 0.5), quantile(x, 0.95), quantile(x, 0.2)
    (3.0, 5.0, 1.0)
    >>> quantile(np.array([1.0, 2.0, 10.0]), 0.5, weights=np.array([0.5, 0.5, 1.0]))
    2.0
    """
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return float("nan")
    if weights is None:
        return float(np.partition(values, rank_of(len(values), q) - 1)[rank_of(len(values), q) - 1])
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(np.asarray(weights, dtype=float)[order])
    cumulative /= cumulative[-1]
    index = min(int(np.searchsorted(cumulative, q - QUANTILE_TOL, side="left")), len(values) - 1)
    return float(values[order][index])
