"""Power arithmetic on numbers and arrays: the layer under :mod:`agentab.power`.

Nothing here knows of traces or DataFrames; alternatives are scipy's words
(``"two-sided"``, ``"greater"``, ``"less"``, see :data:`agentab._vocabulary.ALTERNATIVES`),
already checked by the caller. Three pieces:

- closed-form power of the normal, t, arcsine, Whitehead and Noether
  approximations (:func:`normal_power`, :func:`t_power`, :func:`critical_value`),
  and of paired designs: the paired t-test's effect size (:func:`paired_d`) and
  McNemar's test planned from the discordance (:func:`connor_pairs`,
  :func:`connor_power`; Connor 1987);
- variance components: one-way ANOVA (between-task and within-task variance,
  ICC with its F-based interval; :func:`anova`) and the linearised variance of
  agentab's two-sample statistics under a task model (:class:`Components`,
  :func:`dirichlet_components`), with the density at a quantile
  (:func:`quantile_density`; quantiles are :func:`agentab._vocabulary.quantile`);
- a vectorised simulation of agentab's ordinal permutation test for
  independent runs, where every simulated experiment is a pair of count
  vectors and every permutation a multivariate hypergeometric draw
  (:func:`ordinal_power_counts`).

References
----------
- Cohen, J. (1988). *Statistical Power Analysis for the Behavioral Sciences*,
  2nd ed. (arcsine effect size h; standardised difference d).
- Whitehead, J. (1993). Sample size calculations for ordered categorical
  data. *Statistics in Medicine* 12:2257-2271.
- Noether, G. E. (1987). Sample size determination for some common
  nonparametric tests. *JASA* 82:645-647.
- Searle, S. R. (1971). *Linear Models*, ch. 9; Donner, A. & Wells, G. (1986).
  A comparison of confidence interval methods for the intraclass correlation
  coefficient. *Biometrics* 42:401-412 (ANOVA ICC and its F-based interval,
  with the unbalanced-design group size n0).
- Miller, E. (2024). Adding error bars to evals: a statistical approach to
  language model evaluations. arXiv:2411.00640 (paired differences; the
  variance of a task-level mean is between-task plus within-task / seeds).
- Connor, R. J. (1987). Sample size for testing differences in proportions
  for the paired-sample design. *Biometrics* 43:207-211.
- Koenker, R. (2005). *Quantile Regression*, sec. 3.4 (Hall-Sheather
  bandwidth for the density at a quantile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab._vocabulary import quantile
from agentab.errors import PowerError
from agentab.stats._kernels import cliff_delta
from agentab.stats._resampling import pvalues, snap_ties, tie_tolerance

__all__ = [
    "Anova",
    "Components",
    "anova",
    "cliff_delta",
    "connor_pairs",
    "connor_power",
    "critical_value",
    "dirichlet_components",
    "exact_floor",
    "log_odds_for_delta",
    "normal_power",
    "ordinal_power_counts",
    "paired_d",
    "po_shift",
    "quantile_density",
    "quantile_tie",
    "t_power",
    "task_runs",
    "task_shares",
    "z_quantile",
]


def z_quantile(p: float) -> float:
    """Standard normal quantile."""
    from scipy.special import ndtri

    return float(ndtri(p))


def critical_value(alpha: float, alternative: str) -> float:
    """The standard normal critical value of a level-``alpha`` test: ``z_{1 - alpha/2}`` two-sided, else ``z_{1 - alpha}``.

    Examples
    --------
    >>> round(critical_value(0.05, "two-sided"), 3), round(critical_value(0.05, "greater"), 3)
    (1.96, 1.645)
    """
    return z_quantile(1 - alpha / 2) if alternative == "two-sided" else z_quantile(1 - alpha)


def normal_power(ratio: Any, alpha: float, alternative: str) -> Any:
    """Power of a z-test whose statistic has mean ``ratio`` (effect / standard error) and unit variance.

    Two-sided power counts both rejection regions, as statsmodels' ``NormalIndPower`` does.
    """
    from scipy.special import ndtr

    ratio = np.asarray(ratio, dtype=float)
    crit = critical_value(alpha, alternative)
    if alternative == "two-sided":
        return ndtr(ratio - crit) + ndtr(-ratio - crit)
    if alternative == "greater":
        return ndtr(ratio - crit)
    return ndtr(-ratio - crit)


def t_power(ncp: Any, df: Any, alpha: float, alternative: str, crit_scale: Any = 1.0) -> Any:
    """Power of a t-test with ``df`` degrees of freedom and noncentrality ``ncp`` (noncentral t).

    The same computation as statsmodels' ``ttest_power``. ``crit_scale``
    widens the critical value: a permutation test's null distribution is
    wider than the statistic's sampling distribution under the alternative
    by that factor (see :meth:`Components.power`).
    """
    from scipy.stats import nct, t

    ncp = np.asarray(ncp, dtype=float)
    df = np.asarray(df, dtype=float)
    if alternative == "two-sided":
        crit = t.isf(alpha / 2, df) * crit_scale
        # P(T < -crit) as P(T' > crit) with T' = -T (ncp negated): scipy's nct.cdf far in the lower tail can be NaN.
        return nct.sf(crit, df, ncp) + nct.sf(crit, df, -ncp)
    crit = t.isf(alpha, df) * crit_scale
    if alternative == "greater":
        return nct.sf(crit, df, ncp)
    return nct.sf(crit, df, -ncp)


def paired_d(d: Any, correlation: Any) -> Any:
    """The paired t-test's effect size ``d_z = d / sqrt(2 (1 - rho))``.

    ``d`` is the difference of the arms' means over one arm's standard
    deviation (Cohen's d), ``rho`` the correlation between the two arms'
    paired observations; ``d_z`` is the mean of the paired differences over
    their standard deviation (Cohen 1988, sec. 2.3.5), the effect size of
    R's ``pwr.t.test(type="paired")`` and statsmodels' ``TTestPower``.

    Examples
    --------
    >>> round(float(paired_d(0.5, 0.5)), 3)
    0.5
    >>> round(float(paired_d(0.5, 0.0)), 3)
    0.354
    """
    return np.asarray(d, dtype=float) / np.sqrt(2.0 * (1.0 - np.asarray(correlation, dtype=float)))


def connor_pairs(delta: float, discordant: float, alpha: float, power: float, alternative: str) -> float:
    """Pairs McNemar's test needs (unrounded), by Connor's (1987) formula.

    ``n = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2`` with
    ``psi = p10 + p01`` the share of discordant pairs, ``delta = p10 - p01``
    the difference of the two rates, ``z_a`` the critical value
    (:func:`critical_value`) and ``z_b = z_{power}``. The caller checks
    ``0 < |delta| <= psi <= 1`` and ``delta^2 < psi``.

    Examples
    --------
    >>> round(connor_pairs(0.1, 0.3, 0.05, 0.8, "two-sided"), 2)
    233.09
    """
    za, zb = critical_value(alpha, alternative), z_quantile(power)
    return (za * math.sqrt(discordant) + zb * math.sqrt(discordant - delta**2)) ** 2 / delta**2


def connor_power(delta: float, discordant: float, pairs: Any, alpha: float, alternative: str) -> Any:
    """Power of McNemar's test on ``pairs`` pairs: Connor's (1987) formula inverted.

    ``Phi((|delta| sqrt(n) - z_a sqrt(psi)) / sqrt(psi - delta^2))`` (the
    rejection region in the effect's direction, the one Connor's sample size counts); a one-sided test whose
    effect goes the other way uses ``-|delta|``. ``delta`` is signed as the
    alternative reads it (+ = ``"greater"``).

    Examples
    --------
    >>> round(float(connor_power(0.1, 0.3, 234, 0.05, "two-sided")), 3)
    0.802
    """
    from scipy.special import ndtr

    n = np.asarray(pairs, dtype=float)
    za = critical_value(alpha, alternative)
    shift = abs(delta) if alternative == "two-sided" else (delta if alternative == "greater" else -delta)
    return ndtr((shift * np.sqrt(n) - za * math.sqrt(discordant)) / math.sqrt(discordant - delta**2))


def po_shift(shares: np.ndarray, log_or: float) -> np.ndarray:
    """Level shares after a proportional-odds shift by ``log_or`` (levels ordered worst to best).

    Every cumulative logit ``logit P(Y <= j)`` moves down by ``log_or``, so an
    odds ratio above 1 moves mass to better levels (McCullagh 1980, JRSS B
    42:109-142). Works on the last axis; levels with no mass keep none.

    Examples
    --------
    >>> po_shift(np.array([0.5, 0.5]), np.log(3.0)).round(3)
    array([0.25, 0.75])
    """
    from scipy.special import expit, logit

    cum = np.clip(np.cumsum(shares, axis=-1)[..., :-1], 0.0, 1.0)
    with np.errstate(divide="ignore"):
        shifted = expit(logit(cum) - log_or)
    shape = shifted.shape[:-1] + (1,)
    full = np.concatenate([np.zeros(shape), shifted, np.ones(shape)], axis=-1)
    return np.diff(full, axis=-1)


def log_odds_for_delta(shares: np.ndarray, delta: float) -> float:
    """The proportional-odds log odds ratio that moves ``shares`` by Cliff's delta ``delta`` (NaN when none does).

    No shift reaches a delta beyond what moving every run to the top (or bottom) level gives: ``1 - top share``
    (a one-run candidate at the top level observes exactly that bound).
    """
    from scipy.optimize import brentq

    if not -0.999 < delta < 0.999 or np.count_nonzero(shares) < 2:
        return math.nan

    def gap(b: float) -> float:
        return float(cliff_delta(shares, po_shift(shares, b))) - delta

    if not gap(-30) < 0 < gap(30):
        return math.nan
    return float(brentq(gap, -30, 30))


@dataclass(frozen=True)
class Anova:
    """One-way ANOVA of runs grouped by task: variance components and the ICC."""

    n_groups: int
    n_runs: int
    n0: float  # effective runs per task (unbalanced designs)
    between: float  # variance of true task means, floored at 0
    within: float  # variance of runs about their task's mean
    icc: float
    icc_ci: tuple[float, float]


def anova(values: np.ndarray, groups: np.ndarray, confidence_level: float = 0.95) -> Anova:
    """Variance components and ICC(1) of ``values`` grouped by ``groups`` (Searle 1971; Donner & Wells 1986).

    ``MSB`` and ``MSW`` are the between- and within-group mean squares; the
    within variance is ``MSW``, the between variance ``(MSB - MSW) / n0``
    (floored at 0) with ``n0 = (N - sum n_i^2 / N) / (k - 1)``; the ICC is
    ``(MSB - MSW) / (MSB + (n0 - 1) MSW)`` and its interval comes from the F
    distribution of ``MSB / MSW``. Needs two groups and one group with two
    runs (the caller checks; else a :class:`~agentab.errors.PowerError`, not a division by zero).

    Examples
    --------
    >>> a = anova(np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0]), np.array([0, 0, 1, 1, 2, 2]))
    >>> round(a.icc, 3), round(a.within, 3)
    (0.5, 0.167)
    """
    from scipy.stats import f

    codes, index = np.unique(groups, return_inverse=True)
    k = len(codes)
    n_i = np.bincount(index).astype(float)
    n = float(len(values))
    if k < 2 or n <= k:
        raise PowerError(f"the ANOVA of runs by task needs two tasks and more runs than tasks, got {int(n)} run(s) "
                         f"of {k} task(s)")
    sums = np.bincount(index, weights=values)
    means = sums / n_i
    grand = values.mean()
    ssb = float(np.sum(n_i * (means - grand) ** 2))
    ssw = float(np.sum((values - means[index]) ** 2))
    msb = ssb / (k - 1)
    msw = ssw / (n - k)
    n0 = (n - np.sum(n_i**2) / n) / (k - 1)
    between = max(0.0, (msb - msw) / n0)
    if msw > 0:
        icc = between / (between + msw)
        ratio = msb / msw
        q = (1 + confidence_level) / 2
        f_low = ratio / f.ppf(q, k - 1, n - k)
        f_high = ratio * f.ppf(q, n - k, k - 1)
        ci = tuple(float(np.clip((x - 1) / (x + n0 - 1), 0.0, 1.0)) for x in (f_low, f_high))
    else:  # every task's runs agree: all variation is between tasks
        icc, ci = (1.0, (1.0, 1.0)) if msb > 0 else (0.0, (0.0, 0.0))
    return Anova(k, int(n), float(n0), float(between), float(msw), float(icc), ci)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Components:
    """Linearised variance of a task-averaged two-sample statistic, by source.

    The statistic is approximately ``mean_tasks(g_B) - mean_tasks(g_A)``,
    where ``g_A``/``g_B`` are per-run scores of the baseline/candidate arm.
    ``between_*`` is the variance of a task's true mean score, ``within_*``
    the variance of a run about its task's mean, ``covariance`` the
    covariance of one task's true means in the two arms (a paired design).
    With ``n`` tasks per arm and ``m`` seeds per task (Miller 2024):

    - independent tasks: ``V = (between_a + between_b) / n + (within_a + within_b) / (n m)``;
    - paired tasks: ``V = (between_a + between_b - 2 covariance) / n + (within_a + within_b) / (n m)``.
    """

    delta: float  # the effect on the statistic's scale
    between_a: float
    between_b: float
    covariance: float
    within_a: float
    within_b: float
    #: The permutation null's own (between, within) components, for statistics whose null is not
    #: the second-moment rule below (quantiles): ``V_0 = (between + within / m) / n``.
    null_paired: tuple[float, float] | None = None
    null_independent: tuple[float, float] | None = None

    def between(self, paired: bool) -> float:
        if paired:
            return max(0.0, self.between_a + self.between_b - 2.0 * self.covariance)
        return self.between_a + self.between_b

    @property
    def within(self) -> float:
        return self.within_a + self.within_b

    def variance(self, tasks: Any, seeds: Any, paired: bool) -> Any:
        tasks = np.asarray(tasks, dtype=float)
        return (self.between(paired) + self.within / np.asarray(seeds, dtype=float)) / tasks

    def power(self, tasks: Any, seeds: Any, paired: bool, alpha: float, alternative: str) -> Any:
        """Power of agentab's permutation test, by a t approximation.

        The statistic is centred on ``delta`` with variance ``V`` (above), t
        with ``tasks - 1`` (paired) or ``2 (tasks - 1)`` (independent)
        degrees of freedom. The permutation null is wider than that: flipping
        a task's arms spreads its difference around zero, so the null
        variance is the second moment ``V + delta^2 / n`` (paired), and
        reshuffling tasks between arms mixes the two arms' task means,
        ``V + delta^2 / (2 n)`` (independent), unless the null's components
        are given (``null_paired``, ``null_independent``); the critical value
        widens by the square root of the ratio (as the pooled variance does in the
        two-proportion test; Fleiss, Levin & Paik 2003, sec. 4.2).
        """
        tasks = np.asarray(tasks, dtype=float)
        var = self.variance(tasks, seeds, paired)
        se = np.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            ncp = np.where(se > 0, self.delta / np.where(se > 0, se, 1.0), np.sign(self.delta) * 1e6)
            null = self.null_paired if paired else self.null_independent
            if null is None:
                var0 = var + self.delta**2 / ((1.0 if paired else 2.0) * tasks)
            else:
                var0 = (null[0] + null[1] / np.asarray(seeds, dtype=float)) / tasks
            widen = np.where(var > 0, np.sqrt(var0 / np.where(var > 0, var, 1.0)), 1.0)
        df = tasks - 1 if paired else 2 * (tasks - 1)
        return t_power(ncp, np.maximum(df, 1.0), alpha, alternative, widen)

    def tasks_needed(
        self, seeds: int, paired: bool, alpha: float, target: float, alternative: str, limit: int = 10**7
    ) -> int | None:
        """Fewest tasks per arm reaching ``target`` power with ``seeds`` seeds per task (None above ``limit``).

        Never fewer than :func:`exact_floor`: below it no permutation p-value reaches ``alpha``.
        """
        if self.delta == 0:
            return None
        z = critical_value(alpha, alternative) + z_quantile(target)
        per_task = self.between(paired) + self.within / seeds
        floor = exact_floor(paired, alpha, alternative)
        try:
            guess = z * z * per_task / self.delta**2
        except (OverflowError, ZeroDivisionError):  # delta**2 beyond float64: huge (the floor will do) or tiny
            guess = 0.0 if abs(self.delta) > 1 else math.inf
        if not guess <= limit:  # also NaN
            return None
        start = max(floor, math.floor(guess))
        if start > limit:
            return None
        n = start
        while self.power(n, seeds, paired, alpha, alternative) < target:
            n = n + max(1, n // 50)
            if n > limit:
                return None
        # Step back through what the coarse steps may have skipped.
        while n > floor and self.power(n - 1, seeds, paired, alpha, alternative) >= target:
            n -= 1
        return int(n)


def placement_scores(shares: np.ndarray) -> np.ndarray:
    """``P(X < level) - P(X > level)`` for every level of a distribution: the run score of Cliff's delta.

    Examples
    --------
    >>> placement_scores(np.array([0.25, 0.5, 0.25]))
    array([-0.75,  0.  ,  0.75])
    """
    below = np.cumsum(shares, axis=-1) - shares
    return below - (1.0 - below - shares)


def dirichlet_components(
    shares: np.ndarray, icc: float, log_or: float, *, n_draws: int = 20_000,
    seed: int | np.random.SeedSequence = 12345, log_or_sd: float = 0.0,
) -> tuple[Components, np.ndarray]:
    """Components of Cliff's delta (the rate difference for two levels) under a task model.

    Each task's level shares are Dirichlet with mean ``shares`` and
    concentration ``(1 - icc) / icc``, which gives every run score the
    intra-task correlation ``icc``; a task's candidate shares are its
    baseline shares shifted by ``log_or`` on the cumulative-logit scale (the
    candidate keeps each task's difficulty). The statistic's run scores come
    from its linearisation: ``g_B(y) = P(X < y) - P(X > y)`` and
    ``g_A(x) = P(Y < x) - P(Y > x)`` with X, Y a baseline and a candidate run
    of the whole population (for two levels both are the outcome itself, up
    to a constant). Moments over tasks are averages over ``n_draws`` Dirichlet
    draws from ``seed`` (an integer or a SeedSequence, default 12345), the same
    draws for every ``log_or``, so the answer is deterministic and smooth in ``log_or``.
    With ``log_or_sd > 0`` the effect varies from task to task: task ``t`` shifts by
    ``log_or + log_or_sd z_t``, ``z_t`` standard normal draws that follow the Dirichlet draws
    from the same seed.

    Returns the components and the candidate's population level shares.
    """
    shares = np.asarray(shares, dtype=float)
    keep = shares > 0
    p = shares[keep] / shares[keep].sum()
    rng = np.random.default_rng(seed)
    theta = task_shares(p, icc, n_draws if icc > 0 or log_or_sd > 0 else 1, rng)
    if log_or_sd > 0:
        theta = np.broadcast_to(theta, (n_draws, len(p))) if len(theta) == 1 else theta
        theta_b = po_shift(theta, log_or + log_or_sd * rng.standard_normal(len(theta))[:, None])
    else:
        theta_b = po_shift(theta, log_or)
    r = theta_b.mean(axis=0)
    base_pop = theta.mean(axis=0)
    g_b = placement_scores(base_pop)  # P(X < y) - P(X > y)
    g_a = placement_scores(r)  # P(Y < x) - P(Y > x)
    mean_a = theta @ g_a
    mean_b = theta_b @ g_b
    comps = Components(
        delta=float(cliff_delta(base_pop, r)),
        between_a=float(mean_a.var()),
        between_b=float(mean_b.var()),
        covariance=float(np.mean((mean_a - mean_a.mean()) * (mean_b - mean_b.mean()))),
        within_a=float(np.mean(theta @ g_a**2 - mean_a**2)),
        within_b=float(np.mean(theta_b @ g_b**2 - mean_b**2)),
    )
    full = np.zeros(len(shares))
    full[keep] = r
    return comps, full


def task_shares(shares: np.ndarray, icc: float, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Level shares of ``n_tasks`` tasks: Dirichlet with mean ``shares`` and intra-task correlation ``icc``.

    The concentration ``(1 - icc) / icc`` gives every run score the ICC
    ``icc`` (the Dirichlet-multinomial; two levels: the beta-binomial).
    ``icc = 0`` gives every task the same shares. Shape (n_tasks, levels).
    """
    shares = np.asarray(shares, dtype=float)
    theta = np.zeros((n_tasks, len(shares)))
    keep = shares > 0
    if icc > 0 and np.count_nonzero(keep) > 1:
        concentration = (1.0 - min(icc, 1 - 1e-9)) / icc
        # Small Dirichlet parameters underflow to all-zero draws; a floor keeps every draw a distribution.
        theta[:, keep] = rng.dirichlet(np.maximum(concentration * shares[keep], 1e-3), size=n_tasks)
    else:
        theta[:] = shares
    return theta


def task_runs(theta: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """Level codes of ``m`` runs of each task with level shares ``theta`` (tasks x levels), task by task."""
    cum = np.cumsum(theta, axis=1)
    u = rng.random((len(theta), m))
    return np.minimum((u[:, :, None] > cum[:, None, :-1]).sum(axis=2), theta.shape[1] - 1).ravel()


def quantile_density(values: np.ndarray, q: float, weights: np.ndarray | None = None, bandwidth: float | None = None) -> float:
    """Density of ``values`` at their ``q`` quantile by a difference quotient (sparsity estimate).

    ``f = 2 h / (Q(q + h) - Q(q - h))`` with the Hall-Sheather bandwidth
    ``h = n^(-1/3) z^(2/3) (1.5 phi(Phi^-1(q))^2 / (2 Phi^-1(q)^2 + 1))^(1/3)``,
    ``z`` the 97.5% normal quantile (Koenker 2005, sec. 3.4); ``q +- h`` is
    kept inside the sample. ``weights`` weigh the runs (tasks equally).
    ``bandwidth`` replaces ``h`` (in probability units, at least ``2 / n``):
    power calculations use the quantile's own sampling spread at the planned
    size, the scale at which its estimate and its permutation null move.
    Returns ``inf`` when the quantile sits on a tie wide enough to cover the
    window (a point mass).
    """
    from scipy.stats import norm

    n = len(values)
    zq = norm.ppf(q)
    h = n ** (-1 / 3) * norm.ppf(0.975) ** (2 / 3) * (1.5 * norm.pdf(zq) ** 2 / (2 * zq**2 + 1)) ** (1 / 3)
    if bandwidth is not None:
        h = max(bandwidth, 2.0 / n)  # a window of at least a few observations
    lo, hi = max(q - h, 0.5 / n), min(q + h, 1 - 0.5 / n)
    spread = quantile(values, hi, weights) - quantile(values, lo, weights)
    return math.inf if spread <= 0 else (hi - lo) / spread


def quantile_tie(values: np.ndarray, q: float, weights: np.ndarray | None = None) -> tuple[float, float]:
    """agentab's ``q`` quantile of ``values`` (:func:`agentab._vocabulary.quantile`) and the (weighted) share of
    values equal to it."""
    x = np.asarray(values, dtype=float)
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)
    xq = quantile(x, q, weights)
    return xq, float(w[x == xq].sum() / w.sum())


def exact_floor(paired: bool, alpha: float, alternative: str) -> int:
    """Fewest tasks per arm with which a task-level permutation test can reach ``alpha`` at all.

    The smallest attainable p-value is 1 / (number of relabellings), doubled
    for a two-sided test: ``2^n`` sign flips of n paired tasks, ``C(2n, n)``
    splits of 2n independent tasks.
    """
    sides = 2.0 if alternative == "two-sided" else 1.0
    n = 2
    while sides / (2.0**n if paired else math.comb(2 * n, n)) > alpha:
        n += 1
    return n


def _subset_prefix_counts(n_total: int, n_cand: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` random subsets of ``n_cand`` of ``n_total`` positions, as prefix counts: shape (size, n_total + 1).

    Entry ``[b, k]`` is how many of subset ``b``'s positions lie below ``k``,
    so the subset's count in any range of positions is a difference of two
    entries.
    """
    member = np.zeros((size, n_total), dtype=np.int8)
    member[:, :n_cand] = 1
    member = rng.permuted(member, axis=1)
    prefix = np.zeros((size, n_total + 1), dtype=np.int32)
    np.cumsum(member, axis=1, out=prefix[:, 1:])
    return prefix


def ordinal_power_counts(
    p_base: np.ndarray,
    p_cand: np.ndarray,
    n_base: int,
    n_cand: int,
    *,
    n_sims: int,
    n_resamples: int,
    alpha: float,
    alternative: str,
    rng: np.random.Generator,
    batch: int = 250,
) -> tuple[float, np.ndarray]:
    """Power of agentab's ordinal permutation test (Cliff's delta) for independent runs, by simulation.

    Each simulated experiment draws the arms' level counts (multinomial).
    Its permutation null relabels the pooled runs ``n_resamples`` times:
    with the pooled runs sorted by level, a relabelling is a random subset
    of ``n_cand`` positions, and the candidate's count of a level is the
    subset's count in that level's range of positions (a multivariate
    hypergeometric draw). The subsets are drawn once per ``batch`` of
    experiments, as prefix counts, and read by every experiment of the batch
    with ``levels`` lookups each: each experiment's p-value is an exact Monte
    Carlo p-value (its permutations are independent of its data), and
    experiments of one batch share their permutations, which leaves the
    power estimate unbiased. Cliff's delta is linear in the candidate's
    counts given the pooled counts (the quadratic term cancels by
    antisymmetry), so a permutation costs O(levels). The p-value is
    agentab's (Phipson-Smyth, two-sided by doubling the smaller tail, ties
    snapped). Returns the rejection rate at ``alpha`` and the p-values.
    """
    pvals = []
    tol = tie_tolerance(1.0)
    k = len(p_base)
    for start in range(0, n_sims, batch):
        e = min(batch, n_sims - start)
        base = rng.multinomial(n_base, p_base, size=e)
        cand = rng.multinomial(n_cand, p_cand, size=e)
        pool = base + cand
        below = np.cumsum(pool, axis=1) - pool
        weight = (below - (n_base + n_cand - below - pool)) / (n_base * n_cand)  # (e, k): delta = cand . weight
        observed = np.sum(cand * weight, axis=1)
        observed = np.where(np.abs(observed) <= tol, 0.0, observed)
        edges = np.concatenate([np.zeros((e, 1), dtype=np.int64), np.cumsum(pool, axis=1)], axis=1)
        prefix = _subset_prefix_counts(n_base + n_cand, n_cand, n_resamples, rng)
        counts = np.diff(prefix[:, edges.ravel()].reshape(n_resamples, e, k + 1), axis=2)  # (B, e, k)
        null = np.einsum("bek,ek->be", counts, weight)
        null = snap_ties(null, observed, tol)
        pvals.append(pvalues(null, observed, alternative, exact=False))
    p = np.concatenate(pvals)
    return float(np.mean(p < alpha)), p
