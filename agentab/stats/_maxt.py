"""Max-statistic (Westfall-Young) adjustment of several paired tests on the same tasks, by shared sign flips.

Each hypothesis ``h`` has one difference per task, ``d[h, t]`` (e.g. candidate ``h``'s task mean minus the
baseline's), all on the same tasks. Its statistic is the task-level t statistic of the paired two-arm test
(:func:`agentab.stats.rate_difference`, :func:`agentab.stats.mean_difference`): the mean of the
tie-weighted differences ``u * d`` (:func:`agentab.stats._studentized.tie_weights`) over its standard error.
One sign-flip pattern ``s`` (which tasks swap their arms) is applied to every hypothesis at once; the
adjusted p-value of ``h`` is the share of patterns whose largest ``|t|`` over the hypotheses still in play
reaches ``|t_h|`` (Westfall & Young 1993, free step-down, Algorithm 2.8: hypotheses taken in decreasing
``|t|``, each against the maximum over itself and the weaker ones, then made monotone). Every pattern is
enumerated when ``2^tasks <= n_resamples`` (exact: no Monte Carlo correction), else ``n_resamples``
patterns are drawn, one uniform per task and row, as the two-arm test draws them, so with the same
generator the two-arm test and this adjustment see the very same patterns; Monte Carlo p-values add one to
count and total (Phipson & Smyth 2010).

Why sign flips of every hypothesis together (and not permutations of all arm labels within each task):
flipping task ``t`` of hypothesis ``h`` swaps the two arms ``h`` compares, so the distribution of the
statistics of the true null hypotheses under the flips depends only on those hypotheses' own data (subset
pivotality), and the step-down controls the family-wise error in the strong sense; each marginal is
exactly the two-arm test's distribution, so an adjusted p-value is never below the two-arm one on the same
patterns. The flips are exact (finite-sample) when each task's vector of differences is symmetric about 0
under the null (e.g. symmetric within-task noise), and asymptotically valid otherwise: the flipped
statistics' correlation, ``sum_t d_i d_j`` normalised, estimates the true correlation of the
hypotheses' means (e.g. 1/2 for two candidates against one baseline). Permuting the labels of the baseline
and every candidate within each task would be exact under the global null of fully exchangeable arms, but
it mixes a truly different candidate's runs into the null of the others (no subset pivotality: only weak
control) and no longer shares the two-arm tests' patterns. ``benchmarks/validate_multi.py`` measures the
family-wise error of this adjustment under a simulated global null with binary outcomes and task effects.

References
----------
- Westfall, P. H. & Young, S. S. (1993). *Resampling-Based Multiple Testing*. Wiley.
- Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.stats._design import paired_design
from agentab.stats._inversion import T_TOLERANCE
from agentab.stats._studentized import _one_sample_se, tie_weights

__all__ = ["MaxTResult", "max_t", "max_t_families", "step_down", "T_TOLERANCE"]


@dataclass(frozen=True)
class MaxTResult:
    """Max-T adjusted p-values of paired tests on the same tasks under shared sign flips.

    Attributes
    ----------
    t : numpy.ndarray
        Each hypothesis' observed task-level t statistic (of the tie-weighted differences).
    pvalue : numpy.ndarray
        Each hypothesis' two-sided p-value alone on the same patterns (twice the smaller tail), the
        two-arm test's p-value when the patterns are the same.
    adjusted : numpy.ndarray
        Step-down max-|T| adjusted p-values, each at least its ``pvalue``.
    single_step : numpy.ndarray
        Single-step max-|T| adjusted p-values (at least ``adjusted``).
    exact : bool
        Every sign pattern enumerated.
    n_patterns : int
        Patterns enumerated or drawn.
    """

    t: np.ndarray
    pvalue: np.ndarray
    adjusted: np.ndarray
    single_step: np.ndarray
    exact: bool
    n_patterns: int


def _abs_t(a: np.ndarray, q: np.ndarray, n: int) -> np.ndarray:
    """``|t|`` of flipped weighted means ``a`` (patterns x hypotheses) whose sum of squares ``q`` flips keep: the
    paired test's standard error (:func:`agentab.stats._studentized._one_sample_se`), and a zero standard error
    gives ``inf`` unless the mean is 0 up to rounding."""
    se = _one_sample_se(a, q, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(a) / se
    return np.where(se == 0, np.where(np.abs(a) > 1e-12 * np.sqrt(q / n), np.inf, 0.0), t)


def _family(big: np.ndarray, t: np.ndarray, pvalue: np.ndarray, members: np.ndarray, exact: bool, size: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Step-down and single-step adjusted p-values of one family (``big``: |t| per pattern and hypothesis)."""
    adjust = 0 if exact else 1
    observed = np.abs(t[members])
    order = np.argsort(-observed, kind="stable")
    ranked = big[:, members[order]]
    suffix = np.maximum.accumulate(ranked[:, ::-1], axis=1)[:, ::-1]  # max over the hypothesis and weaker ones
    obs = observed[order]
    with np.errstate(invalid="ignore"):
        thr = np.where(np.isinf(obs), np.inf, obs - T_TOLERANCE * np.maximum(1.0, obs))
    step = ((suffix >= thr).sum(axis=0) + adjust) / (size + adjust)
    single = ((suffix[:, :1] >= thr).sum(axis=0) + adjust) / (size + adjust)
    out_step, out_single = np.empty(len(members)), np.empty(len(members))
    out_step[order] = np.maximum.accumulate(step)
    out_single[order] = single
    # Enumerated, |t| and the doubled tail count the same patterns (the flips are symmetric), so the maximum
    # never binds; drawn patterns are not symmetric, and the larger of the two keeps the promise.
    own = pvalue[members]
    out_step, out_single = np.maximum(out_step, own), np.maximum(out_single, own)
    if len(members) == 1:  # nothing to adjust: the test alone
        out_step = out_single = own.copy()
    return np.minimum(out_step, 1.0), np.minimum(out_single, 1.0)


def max_t(
    diffs: Any, scores: Any = None, *, n_resamples: int = 9999, rng: Any = None, scales: Any = None,
) -> MaxTResult:
    """Step-down max-|T| adjusted p-values of paired mean differences on the same tasks (see the module).

    Parameters
    ----------
    diffs : array_like, shape (hypotheses, tasks)
        Each hypothesis' per-task differences, tasks in the same order for all.
    scores : array_like, shape (hypotheses, tasks), optional
        Each hypothesis' flip-invariant tie key per task (the paired two-arm test uses the task's mean over
        both arms); None: no tie breaking.
    n_resamples : int
        Patterns drawn when ``2^tasks`` exceeds it; otherwise every pattern is enumerated.
    rng : numpy.random.Generator or int, optional
        The patterns' source (the two-arm test's generator gives its very patterns).
    scales : array_like, shape (hypotheses,), optional
        The scale of each hypothesis' values for the tie tolerance (default: its largest ``|d|``).

    Returns
    -------
    MaxTResult

    Examples
    --------
    >>> d = np.array([[1.0, 0.5, 0.8, 0.2, 0.9, 0.4, 0.3], [0.6, -0.2, 0.3, 0.4, -0.1, 0.2, 0.5]])
    >>> res = max_t(d, n_resamples=999)  # 2^7 = 128 patterns: every one enumerated
    >>> res.exact, res.n_patterns, [round(float(p), 4) for p in res.pvalue]
    (True, 128, [0.0156, 0.1094])
    >>> [round(float(p), 4) for p in res.adjusted], [round(float(p), 4) for p in res.single_step]
    ([0.0156, 0.1094], [0.0156, 0.1719])
    """
    d = np.atleast_2d(np.asarray(diffs, dtype=float))
    return max_t_families(d, [np.arange(len(d))], scores, n_resamples=n_resamples, rng=rng, scales=scales)[0]


def max_t_families(
    diffs: Any, families: Any, scores: Any = None, *, n_resamples: int = 9999, rng: Any = None, scales: Any = None,
) -> tuple[MaxTResult, ...]:
    """:func:`max_t` of several families of the same hypotheses on one set of sign patterns.

    ``families`` lists, per family, the rows of ``diffs`` it adjusts together (e.g. every candidate against
    the baseline, and every pair of arms); each result's arrays follow its family's rows. The patterns are
    drawn (or enumerated) once, so every family, and each hypothesis' own p-value, sees the same ones.

    Examples
    --------
    >>> d = np.array([[1.0, 0.5, 0.8, 0.2, 0.9, 0.4, 0.3], [0.6, -0.2, 0.3, 0.4, -0.1, 0.2, 0.5]])
    >>> both, alone = max_t_families(d, [[0, 1], [1]], n_resamples=999)
    >>> [round(float(p), 4) for p in both.adjusted], [round(float(p), 4) for p in alone.adjusted]
    ([0.0156, 0.1094], [0.1094])
    """
    d = np.atleast_2d(np.asarray(diffs, dtype=float))
    h, n = d.shape
    if n < 2 or not np.isfinite(d).all():
        raise ValueError(f"max_t needs finite differences on at least 2 tasks, got shape {d.shape}")
    u = np.vstack([tie_weights(np.zeros(n) if scores is None else np.asarray(s, dtype=float))
                   for s in (np.zeros((h, n)) if scores is None else np.atleast_2d(scores))])
    du = d * u
    m = du.mean(axis=1)
    q = (du * du).sum(axis=1)
    scale = np.abs(d).max(axis=1) if scales is None else np.asarray(scales, dtype=float)
    gamma = 1e-10 * np.where(scale > 0, scale, 1.0)
    exact = n * math.log(2) <= math.log(n_resamples) + 1e-9
    rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    swaps = paired_design(n).swaps(n_resamples, rng, exact=bool(exact))  # the two-arm paired test's very patterns
    a = np.concatenate([(1 - 2 * s.view(np.int8)).astype(float) @ du.T / n for s in swaps])  # signs -1.0 / 1.0
    size, adjust = len(a), (0 if exact else 1)
    t = np.where(m == 0, 0.0, _abs_t(m[None, :], q, n)[0] * np.sign(m))
    # Each hypothesis alone: the two-arm paired test's p-value (twice the smaller tail, its tie rule) on these patterns.
    greater = ((a >= m - gamma).sum(axis=0) + adjust) / (size + adjust)
    less = ((a <= m + gamma).sum(axis=0) + adjust) / (size + adjust)
    pvalue = np.minimum(1.0, 2.0 * np.minimum(greater, less))
    return step_down(_abs_t(a, q, n), t, pvalue, families, exact=bool(exact))


def step_down(big: np.ndarray, t: np.ndarray, pvalue: np.ndarray, families: Any, *, exact: bool
              ) -> tuple[MaxTResult, ...]:
    """The max-|T| adjustment of each family from the statistics on every pattern (the core of every max-T).

    ``big`` holds ``|T|`` per pattern (rows: every pattern enumerated, or each drawn one) and hypothesis
    (columns), ``t`` the observed statistics and ``pvalue`` each hypothesis' own p-value on the same patterns.
    """
    out = []
    for members in families:
        members = np.asarray(members, dtype=int)
        step, single = _family(big, t, pvalue, members, exact, len(big))
        out.append(MaxTResult(t[members], pvalue[members], step, single, exact, len(big)))
    return tuple(out)
