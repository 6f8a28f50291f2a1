"""Permutation p-values and percentile bootstrap intervals over the weights of a design (quantiles).

Rates, means, pass^k and Cliff's delta are tested and given intervals by
:mod:`agentab.stats._inference`; quantiles, whose standard error has no cheap
consistent estimate per permutation, keep the raw permutation test and the
percentile bootstrap here.

References
----------
- Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be
  zero. *Statistical Applications in Genetics and Molecular Biology* 9(1):39.
  Monte Carlo p-values are ``(1 + #{T* as extreme}) / (1 + B)``; an exact
  enumeration needs no correction.
- Efron, B. & Tibshirani, R. (1993), *An Introduction to the Bootstrap*,
  ch. 13 (percentile intervals).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.stats._design import Design

__all__ = ["Resampled", "resample", "pvalues", "percentile_interval"]

Kernel = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Resampled:
    """Observed statistics with their null and bootstrap distributions."""

    base: np.ndarray  # (m,)
    cand: np.ndarray  # (m,)
    effect: np.ndarray  # (m,)
    null: np.ndarray | None  # (n_perm, m)
    exact: bool
    boot_base: np.ndarray  # (B, m)
    boot_cand: np.ndarray  # (B, m)
    boot_effect: np.ndarray  # (B, m)


def resample(
    design: Design,
    kernel: Kernel,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    test: bool = True,
    scale: float = 1.0,
) -> Resampled:
    """Evaluate ``kernel`` on the data, its permutations and its bootstrap resamples.

    The permutation distribution is enumerated exactly when it has at most
    ``n_resamples`` members, and sampled otherwise. Permutations are drawn
    before bootstrap resamples, both from ``rng``.

    Effects are weighted sums, so the same value can come out of different
    resamples with different rounding (1/3 as 0.33333333333333331 and
    0.33333333333333337), and no effect as +-1e-17. Values within
    ``1e-10 * scale`` of zero or of the observed effect are set to exactly
    that value, so ties are ties in the p-value and in the interval. ``scale`` is the size of the data (its largest absolute value).
    """
    tol = tie_tolerance(scale)
    # Kernels that read a paired design's task-level draws directly (QuantileKernel) say so by these methods.
    paired = design.kind == "paired" and hasattr(kernel, "swapped") and hasattr(kernel, "bootstrapped")
    base, cand, effect = kernel(*design.observed())
    effect = _snap(effect[0], np.zeros_like(effect[0]), tol)
    null = None
    exact = False
    if test:
        exact = design.n_permutations(limit=n_resamples) is not None
        if paired:  # the same sign flips as design.permutations, without the (resamples x cells) matrices
            batches = [kernel.swapped(swap)[2] for swap in design.swaps(n_resamples, rng, exact=exact)]
        else:
            batches = [kernel(wb, wc)[2] for wb, wc in design.permutations(n_resamples, rng, exact=exact)]
        null = snap_ties(np.concatenate(batches, axis=0), effect, tol)
    if paired:  # the same task counts as design.bootstrap
        parts = []
        for counts in design.task_counts(n_resamples, rng):
            parts.append(kernel.bootstrapped(counts))
            del counts  # before the next batch is drawn: one batch of counts in memory, not two
    else:
        parts = [kernel(wb, wc) for wb, wc in design.bootstrap(n_resamples, rng)]
    boot = snap_ties(np.concatenate([p[2] for p in parts]), effect, tol)
    return Resampled(
        base[0],
        cand[0],
        effect,
        null,
        exact,
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        boot,
    )


def tie_tolerance(scale: float) -> float:
    """Distance below which two effects are the same value: ``1e-10`` of the data's scale."""
    return 1e-10 * (scale if scale > 0 else 1.0)


def snap_ties(values: np.ndarray, effect: np.ndarray, tol: float) -> np.ndarray:
    """Resampled effects with those within ``tol`` of zero or of the observed ``effect`` set to it."""
    return _snap(_snap(values, 0.0, tol), effect, tol)


def combine_tails(greater: Any, less: Any, alternative: str) -> Any:
    """The p-value for ``alternative`` from the two one-sided ones; two-sided doubles the smaller (capped at 1)."""
    if alternative == "greater":
        return greater
    if alternative == "less":
        return less
    return np.minimum(1.0, 2.0 * np.minimum(greater, less))


def _snap(values: np.ndarray, target: np.ndarray | float, tol: float) -> np.ndarray:
    """``values`` with every entry within ``tol`` of ``target`` (broadcast by column) set to it."""
    target = np.broadcast_to(np.asarray(target, dtype=float), values.shape)
    return np.where(np.abs(values - target) <= tol, target, values)


def pvalues(null: np.ndarray, observed: np.ndarray, alternative: str, *, exact: bool) -> np.ndarray:
    """Permutation p-values, one per column of ``null``.

    ``"greater"`` counts null values at least as large as the observed one,
    ``"less"`` at most as large; ``"two-sided"`` doubles the smaller of the two
    (capped at 1), as ``scipy.stats.permutation_test`` does. Values within a
    relative 1e-10 of the observed statistic count as ties, so rounding error
    in weighted sums cannot split a tie. Monte Carlo p-values add one to the
    count and to the number of resamples (Phipson & Smyth 2010).

    Examples
    --------
    >>> null = np.array([[-2.0], [-1.0], [0.0], [1.0], [2.0]])
    >>> pvalues(null, np.array([2.0]), "greater", exact=True)
    array([0.2])
    >>> pvalues(null, np.array([2.0]), "two-sided", exact=False)
    array([0.66666667])
    """
    scale = np.maximum(np.abs(observed), np.max(np.abs(null), axis=0, initial=0.0))
    gamma = 1e-10 * np.where(scale > 0, scale, 1.0)
    adjust = 0 if exact else 1
    n = len(null)
    greater = (np.sum(null >= observed - gamma, axis=0) + adjust) / (n + adjust)
    less = (np.sum(null <= observed + gamma, axis=0) + adjust) / (n + adjust)
    return combine_tails(greater, less, alternative)


def percentile_interval(boot: np.ndarray, confidence_level: float, *, discrete: bool = False) -> tuple[float, float]:
    """Percentile bootstrap interval (Efron & Tibshirani 1993, ch. 13).

    With ``discrete`` (bootstrap distributions of quantiles, which take few
    distinct values) the bounds are values the bootstrap distribution takes:
    the lower bound rounds down and the upper bound up, never interpolating
    between two of them (so the interval of a step count is whole steps, and
    infinite ratios stay infinite). Otherwise numpy's linear interpolation,
    as ``scipy.stats.bootstrap``. NaN anywhere gives a NaN interval.
    """
    if len(boot) == 0 or np.isnan(boot).any() or (not discrete and not np.isfinite(boot).all()):
        return np.nan, np.nan
    alpha = 1.0 - confidence_level
    if discrete:
        low = np.percentile(boot, 100 * alpha / 2, method="lower")
        high = np.percentile(boot, 100 * (1 - alpha / 2), method="higher")
    else:
        low, high = np.percentile(boot, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)
