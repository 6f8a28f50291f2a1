"""Several candidates against one baseline on the same tasks: shared sign flips and the max-T of every kind.

A comparison of ``k`` candidates with one baseline runs ``k`` paired two-arm tests whose sign-flip patterns
come from the same stream (one per metric, from the seed): :func:`shared_draws` draws them once for all
(the numbers stay bit for bit the two-arm tests').

:func:`max_t_arms` adjusts a primary metric across hypotheses "arm ``b`` against arm ``a``" (every candidate
against the baseline, and every pair of arms) by step-down max-|T| (Westfall & Young 1993, as
:func:`agentab.stats.max_t`) on one set of sign flips of whole tasks, the flips every pair's two-arm paired
test draws from the same generator. Flipping task ``t`` swaps, in every pair at once, the two arms the pair
compares (:mod:`agentab.stats._maxt` says why this gives subset pivotality and strong control). Each
hypothesis' statistic on every pattern is the one its two-arm test reads:

==============  ==================================================================================
``kind``        statistic per pattern
==============  ==================================================================================
``"ordinal"``   Cliff's delta over its delta-method standard error (the paired studentized test of
                :func:`agentab.stats.ordinal_superiority`, computed by the same function)
``"quantile"``  the difference of the arms' quantiles (task-weighted, :class:`QuantileKernel`), which
                the two-arm test does not studentize, divided by its root mean square over the
                patterns, so that every hypothesis' statistic has the same scale under the flips
==============  ==================================================================================

The standardisation of a quantile difference uses the patterns themselves (not an estimate per pattern),
so the max over hypotheses compares like with like while each hypothesis' own test, and its p-value, is the
raw permutation test of the two-arm comparison. Every pattern is enumerated when ``2^tasks <= n_resamples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.stats._design import make_design, shared_draws
from agentab.stats._inversion import NullDistribution, studentize
from agentab.stats._kernels import OrdinalKernel, QuantileKernel
from agentab.stats._maxt import MaxTResult, step_down
from agentab.stats._resampling import pvalues
from agentab.stats._studentized import _cliff_paired, _order_matrix

__all__ = ["shared_draws", "max_t_arms", "ArmsMaxT", "ARMS_KINDS"]

#: The statistics :func:`max_t_arms` adjusts.
ARMS_KINDS = ("ordinal", "quantile")


@dataclass(frozen=True)
class ArmsMaxT:
    """:func:`max_t_arms`'s result: each family's adjustment and every pair's effect and arm estimates.

    Attributes
    ----------
    families : tuple of MaxTResult
        One per family asked for (``t``: Cliff's delta over its standard error, or the standardised quantile
        difference; ``pvalue``: each hypothesis' own two-sided p-value on the patterns).
    effect : numpy.ndarray
        Each pair's effect, ``b`` against ``a`` (Cliff's delta, or the difference of quantiles).
    a, b : numpy.ndarray
        Each pair's arm estimates (mean levels for ordinal, the quantiles for quantile).
    """

    families: tuple[MaxTResult, ...]
    effect: np.ndarray
    a: np.ndarray
    b: np.ndarray


class _Pair:
    """One hypothesis: its paired design and the statistic on a batch of sign-flip patterns."""

    def __init__(self, x: np.ndarray, y: np.ndarray, x_tasks: np.ndarray, y_tasks: np.ndarray, kind: str, q: float):
        self.design, keep_x, keep_y = make_design(len(x), len(y), x_tasks, y_tasks, True)
        if not (keep_x.all() and keep_y.all()):
            raise ValueError("max_t_arms needs every arm on the same tasks")
        values = np.r_[x, y]
        d = self.design
        if kind == "ordinal":
            levels, codes = np.unique(values, return_inverse=True)
            kernel = OrdinalKernel(codes.reshape(-1), levels, d)
            self.base, self.cand = kernel.values[d.base_cells], kernel.values[d.cand_cells]
            self.order = _order_matrix(len(levels))
            estimates = kernel(*d.observed())
        else:
            self.kernel = QuantileKernel(values, d, np.array([q]))
            estimates = self.kernel(*d.observed())
        self.kind = kind
        self.a, self.b = float(estimates[0][0, 0]), float(estimates[1][0, 0])
        self.effect = float(estimates[2][0, 0])

    def on(self, swap: np.ndarray) -> np.ndarray:
        """The statistic on each pattern (rows of ``swap``): studentized delta, or the raw quantile difference."""
        if self.kind == "ordinal":
            return studentize(*_cliff_paired(swap, self.base, self.cand, self.order))
        return self.kernel(*self.design._swap(swap))[2][:, 0]


def max_t_arms(
    values: Sequence[Any], tasks: Sequence[Any], pairs: Sequence[tuple[int, int]], families: Any, *, kind: str,
    q: float = 0.5, n_resamples: int = 9999, rng: Any = None,
) -> ArmsMaxT:
    """Step-down max-|T| of Cliff's delta or of a quantile difference for pairs of arms on one set of flips.

    Parameters
    ----------
    values, tasks : sequence of array_like
        Each arm's runs (no missing values) and the task of every run; every arm has runs of the same tasks.
    pairs : sequence of (int, int)
        The hypotheses: arm ``b`` against arm ``a`` (effect ``b - a``, as a two-arm test with baseline ``a``).
    families : sequence of sequence of int
        Per family, the pairs it adjusts together (e.g. the candidates against the baseline; every pair).
    kind : {"ordinal", "quantile"}
    q : float
        The quantile (``kind="quantile"``).
    n_resamples : int
        Random patterns when ``2^tasks`` exceeds it; otherwise all are enumerated.
    rng : numpy.random.Generator or int, optional
        The patterns' source: the two-arm tests' generator gives their very patterns.

    Returns
    -------
    ArmsMaxT

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> tasks = np.repeat(np.arange(9), 2)
    >>> arms = [rng.integers(0, 4, 18), rng.integers(1, 4, 18), rng.integers(0, 4, 18)]
    >>> res = max_t_arms(arms, [tasks] * 3, [(0, 1), (0, 2)], [[0, 1]], kind="ordinal", n_resamples=999)
    >>> fam = res.families[0]
    >>> fam.exact, fam.n_patterns, bool((fam.adjusted >= fam.pvalue).all())
    (True, 512, True)
    """
    if kind not in ARMS_KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(ARMS_KINDS)}, got {kind!r}")
    arrays = [np.asarray(v, dtype=float) for v in values]
    labels = [np.asarray(t) for t in tasks]
    hyps = [_Pair(arrays[a], arrays[b], labels[a], labels[b], kind, q) for a, b in pairs]
    first = hyps[0].design
    exact = first.n_permutations(limit=n_resamples) is not None
    rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    # whole: the patterns are drawn once and every hypothesis reads each batch
    null = np.concatenate([np.column_stack([h.on(swap) for h in hyps])
                           for swap in first.swaps(n_resamples, rng, exact=exact)])
    if kind == "ordinal":
        t = np.array([float(studentize(*_cliff_paired(np.zeros((1, len(first.base_cells)), dtype=bool), h.base,
                                                      h.cand, h.order))[0]) for h in hyps])
        size = 2.0 ** len(first.base_cells) if exact else float(n_resamples)
        pvalue = np.array([NullDistribution.from_values(null[:, j], exact=exact, size=size).pvalue(t[j], "two-sided")
                           for j in range(len(hyps))])
        big = np.abs(null)
    else:
        effect = np.array([h.effect for h in hyps])
        pvalue = pvalues(null, effect, "two-sided", exact=exact)
        rms = np.sqrt(np.mean(null * null, axis=0))
        t, big = studentize(effect, rms), np.abs(studentize(null, rms[None, :]))
    res = step_down(big, t, pvalue, families, exact=exact)
    return ArmsMaxT(res, np.array([h.effect for h in hyps]), np.array([h.a for h in hyps]), np.array([h.b for h in hyps]))

