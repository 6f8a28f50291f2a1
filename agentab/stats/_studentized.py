"""Studentized statistics over the permutations of a design: the estimate, its standard error, and their ratio.

Every test of a mean-like effect (rates, means, pass^k) or of Cliff's delta divides the effect by a
standard error computed on the same resample, and compares that ratio with its permutation
distribution (:mod:`agentab.stats._inversion`), so the test stays valid when the arms' task
heterogeneity differs and the interval can be read off the same distribution.

==========================  ===========================================================================
design                      standard error of the effect (on every permutation)
==========================  ===========================================================================
paired                      the one-sample standard error of the per-task values over tasks: of the
                            task differences for means; of the tasks' influence values (delta method)
                            for Cliff's delta
clustered / independent     Welch's: ``sqrt(s_b^2 / n_b + s_c^2 / n_c)`` over tasks (or runs); for
                            Cliff's delta over the units' influence values in each arm
==========================  ===========================================================================

In the paired design the task-level t statistic is an increasing function of the mean difference
under sign flips (the sum of squares is the same for every flip), so its sign-flip p-value is that of
the mean difference; ties between flip patterns are broken by a flip-invariant secondary key
(:func:`tie_weights`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentab.stats._design import CountDesign, Design
from agentab.stats._inversion import NullDistribution, ShiftNull, studentize
from agentab.stats._kernels import cliff_delta

__all__ = ["paired_mean", "tie_weights", "TIE_BREAK", "two_sample_mean", "two_values_mean", "paired_ordinal", "two_sample_ordinal", "Studentized"]


@dataclass(frozen=True)
class Studentized:
    """The observed effect, its standard error and the permutation distribution to judge them by."""

    effect: float
    se: float
    null: NullDistribution | ShiftNull

    @property
    def t(self) -> float:
        """The observed studentized statistic (0/0 is 0, x/0 is +-inf)."""
        return float(studentize(self.effect, self.se))


# --------------------------------------------------------------------------- #
# Sign flips of the paired design
# --------------------------------------------------------------------------- #
def _one_sample_se(mean: np.ndarray, square_sum: float, n: int) -> np.ndarray:
    """Standard error of a mean of ``n`` values from their mean and (flip-invariant) sum of squares."""
    if n < 2:
        return np.full(np.shape(mean), np.nan)
    var = (square_sum - n * mean**2) / (n - 1)
    var = np.where(var <= 1e-12 * square_sum / (n - 1), 0.0, var)  # all values equal up to rounding
    return np.sqrt(var / n)


#: Weight of the secondary key that breaks ties between sign-flip patterns (see :func:`tie_weights`).
TIE_BREAK = 1e-6


def tie_weights(score: np.ndarray) -> np.ndarray:
    """``1 + TIE_BREAK * rank(score) / n``: the task weights of the paired statistic, breaking ties.

    Per-task differences of rates take few values (multiples of 1 / seeds), so many sign-flip
    patterns give exactly the observed mean and the test, counting them all as "as extreme", spends
    only part of alpha (size 0.02-0.03 where a tie-free sign-flip test reaches 0.05). Weighting each
    task by ``1 + 1e-6 x`` the rank of a flip-invariant score (the task's mean over both arms; ties in
    the score share their average rank) orders the tied patterns without reordering any others (the
    secondary key moves a mean by at most 1e-6 of its scale), so the test stays exact under sign
    flips and stays a test of the task-averaged difference. It uses no task labels: renaming tasks
    changes nothing.

    Examples
    --------
    >>> tie_weights(np.array([0.5, 0.0, 0.5])) - 1
    array([8.33333333e-07, 3.33333333e-07, 8.33333333e-07])
    """
    from scipy.stats import rankdata  # scipy.stats is heavy: imported when first needed

    n = len(score)
    return 1.0 + TIE_BREAK * rankdata(score) / max(n, 1)


def paired_mean(
    design: Design, d: np.ndarray, n_resamples: int, rng: np.random.Generator, *, exact: bool, origin: float = 0.0,
    score: np.ndarray | None = None,
) -> Studentized:
    """The mean of the per-task differences ``d``, its standard error, and their sign-flip distribution
    (:class:`~agentab.stats._inversion.ShiftNull`: every flipped weighted mean with its weighted mean sign;
    ``score`` orders ties, see :func:`tie_weights`)."""
    n = len(d)
    u = tie_weights(np.zeros(n) if score is None else score)
    du = d * u
    a_parts, k_parts = [], []
    for swap in design.swaps(n_resamples, rng, exact=exact):
        sign = 1 - 2 * swap.view(np.int8)  # -1 where the task swaps: the products are exactly -du or du
        a_parts.append((sign * du).sum(axis=1) / n)
        k_parts.append((sign * u).sum(axis=1) / n)
    a, k = np.concatenate(a_parts), np.concatenate(k_parts)
    size = 2.0**n if exact else float(n_resamples)
    effect = float(d.mean())
    se = float(_one_sample_se(np.array(effect), float(d @ d), n))
    scale = max(float(np.abs(d).max()) if n else 0.0, 1e-4 * origin)  # rounding of task means far from 0
    null = ShiftNull(float(du.mean()), a, k, np.ones(len(a)), exact, size, scale, float(u.mean()))
    return Studentized(effect, se, null)


# --------------------------------------------------------------------------- #
# Reassignments of units between arms (clustered and independent designs)
# --------------------------------------------------------------------------- #
def _welch(w_base: np.ndarray, w_cand: np.ndarray, v: np.ndarray, v2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Difference of the arms' weighted means of ``v`` and Welch's standard error; weights count units."""
    out = []
    for w in (w_base, w_cand):
        n = w.sum(axis=1)
        mean = (w @ v) / n
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(n > 1, (w @ v2 - n * mean**2) / (n - 1), np.nan)
        var = np.where(var <= 1e-12 * np.maximum(w @ v2, 1e-300) / np.maximum(n - 1, 1), 0.0, var)
        out.append((mean, var / n))
    (mb, vb), (mc, vc) = out
    return mc - mb, np.sqrt(vb + vc)


def two_sample_mean(design: Design, summaries: np.ndarray, n_resamples: int, rng: np.random.Generator, *, exact: bool) -> Studentized:
    """Welch-studentized difference of the arms' unit means under reassignments of whole units.

    Values are centred on their overall mean first (the permutation leaves it unchanged), so the
    variances are not sums of large squares minus large squares.
    """
    v = np.asarray(summaries, dtype=float)
    origin = float(np.max(np.abs(v[np.isfinite(v)]))) if np.isfinite(v).any() else 0.0
    center = float(np.mean(v[np.isfinite(v)])) if np.isfinite(v).any() else 0.0
    v = np.where(np.isfinite(v), v - center, 0.0)
    v2 = v * v
    effect, se = _welch(*design.observed(), v, v2)
    parts = [studentize(*_welch(wb, wc, v, v2)) for wb, wc in design.permutations(n_resamples, rng, exact=exact)]
    size = float(design.n_permutations(limit=n_resamples) or n_resamples) if exact else float(n_resamples)
    null = NullDistribution.from_values(np.concatenate(parts), exact=exact, size=size, atol=_atol(origin, float(se[0])))
    return Studentized(float(effect[0]), float(se[0]), null)


def _atol(origin: float, se: float) -> float:
    """The t-scale tie tolerance for values as large as ``origin``: their rounding error over the standard error."""
    return 1e-12 * origin / se if se > 0 and np.isfinite(se) else 0.0


def two_values_mean(design: CountDesign) -> Studentized:
    """Welch-studentized difference of means of a metric with two values: the exact hypergeometric law.

    Under the permutation of runs between arms the candidate's count of the larger value is
    hypergeometric (Fisher's exact test in its randomisation form); every count on the support is one
    value of the studentized difference, weighted by its probability. The support is cut to 40
    standard deviations around the mean (beyond, the probabilities are below 1e-300).
    """
    import math

    from scipy import stats as sps  # scipy.stats is heavy: imported when first needed

    n_base, n_cand = design.n_runs
    total, high = n_base + n_cand, int(design.base_counts[1] + design.cand_counts[1])
    mean = n_cand * high / total
    sd = math.sqrt(max(n_cand * (high / total) * (1 - high / total) * (total - n_cand) / max(total - 1, 1), 1e-12))
    low_k, high_k = max(0, n_cand - (total - high)), min(high, n_cand)
    k = np.arange(max(low_k, math.floor(mean - 40 * sd - 1)), min(high_k, math.ceil(mean + 40 * sd + 1)) + 1)
    probs = np.exp(sps.hypergeom.logpmf(k, total, high, n_cand))
    pool = (design.base_counts + design.cand_counts).astype(float)
    cand = np.stack([n_cand - k, k], axis=1).astype(float)
    levels = design.levels.astype(float)
    v = levels - levels.mean()
    effect, se = _welch(*design.observed(), v, v * v)
    t = studentize(*_welch(pool[None, :] - cand, cand, v, v * v))
    log_count = math.lgamma(total + 1) - math.lgamma(n_cand + 1) - math.lgamma(n_base + 1)
    null = NullDistribution.from_values(t, probs, exact=True, size=float(round(math.exp(log_count))) if log_count < 40 else math.inf)
    return Studentized(float(effect[0]), float(se[0]), null)


# --------------------------------------------------------------------------- #
# Cliff's delta: influence values of the arms' level distributions
# --------------------------------------------------------------------------- #
def _order_matrix(k: int) -> np.ndarray:
    """``A`` with ``delta = c @ A @ b``: +1 where the candidate's level is above the baseline's, -1 below."""
    i, j = np.indices((k, k))
    return np.sign(i - j).astype(float)


def _cliff_welch(w_base: np.ndarray, w_cand: np.ndarray, shares: np.ndarray, outer: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cliff's delta between the arms' weighted level distributions, and its delta-method standard error.

    Delta is bilinear in the two distributions, ``c @ A @ b``: a baseline unit with level shares ``u``
    has influence ``(c @ A) . (u - b)``, a candidate unit ``(A @ b) . (u - c)``; the variance of each
    arm's mean influence is a quadratic form in the arm's covariance of shares.
    """
    k = shares.shape[1]
    means, covs, sizes = [], [], []
    for w in (w_base, w_cand):
        n = w.sum(axis=1)
        mean = (w @ shares) / n[:, None]
        second = ((w @ outer) / n[:, None]).reshape(-1, k, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            cov = (second - mean[:, :, None] * mean[:, None, :]) * np.where(n > 1, n / (n - 1), np.nan)[:, None, None]
        means.append(mean)
        covs.append(cov)
        sizes.append(n)
    b, c = means
    g_base, g_cand = c @ order, b @ order.T
    var = np.einsum("bi,bij,bj->b", g_base, covs[0], g_base) / sizes[0]
    var = var + np.einsum("bi,bij,bj->b", g_cand, covs[1], g_cand) / sizes[1]
    return cliff_delta(b, c), np.sqrt(np.maximum(var, 0.0))


def two_sample_ordinal(design: Design, shares: np.ndarray, n_resamples: int, rng: np.random.Generator, *, exact: bool) -> Studentized:
    """Studentized Cliff's delta under reassignments of whole units (tasks, runs, or count cells)."""
    order = _order_matrix(shares.shape[1])
    outer = (shares[:, :, None] * shares[:, None, :]).reshape(len(shares), -1)
    effect, se = _cliff_welch(*design.observed(), shares, outer, order)
    parts = [studentize(*_cliff_welch(wb, wc, shares, outer, order)) for wb, wc in design.permutations(n_resamples, rng, exact=exact)]
    size = float(design.n_permutations(limit=n_resamples) or n_resamples) if exact else float(n_resamples)
    return Studentized(float(effect[0]), float(se[0]), NullDistribution.from_values(np.concatenate(parts), exact=exact, size=size))


def _cliff_paired(swap: np.ndarray, base: np.ndarray, cand: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cliff's delta of the task-averaged distributions after swapping the arms of the tasks in ``swap``,
    and the one-sample standard error of the tasks' influence values."""
    n = base.shape[0]
    s = swap.astype(float)
    keep = 1.0 - s
    b = (keep @ base + s @ cand) / n
    c = (keep @ cand + s @ base) / n
    g_base, g_cand = c @ order, b @ order.T
    h = keep * (g_base @ base.T + g_cand @ cand.T) + s * (g_base @ cand.T + g_cand @ base.T)
    if n < 2:
        return cliff_delta(b, c), np.full(len(swap), np.nan)
    var = h.var(axis=1, ddof=1)
    scale = np.maximum(np.mean(h * h, axis=1), 1e-300)
    var = np.where(var <= 1e-12 * scale, 0.0, var)
    return cliff_delta(b, c), np.sqrt(var / n)


def paired_ordinal(design: Design, base: np.ndarray, cand: np.ndarray, n_resamples: int, rng: np.random.Generator, *,
                   exact: bool) -> Studentized:
    """Studentized Cliff's delta under sign flips (arm swaps) of whole tasks; ``base``/``cand``: tasks x levels shares."""
    order = _order_matrix(base.shape[1])
    n = base.shape[0]
    effect, se = _cliff_paired(np.zeros((1, n), dtype=bool), base, cand, order)
    parts = [studentize(*_cliff_paired(swap, base, cand, order)) for swap in design.swaps(n_resamples, rng, exact=exact)]
    size = 2.0**n if exact else float(n_resamples)
    return Studentized(float(effect[0]), float(se[0]), NullDistribution.from_values(np.concatenate(parts), exact=exact, size=size))
