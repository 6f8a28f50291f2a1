"""Two-sample tests for agent metrics, with designs that respect tasks.

Every function compares a baseline sample ``x`` with a candidate sample ``y``
(effects are candidate minus baseline) and accepts the task of every run
(``x_strata``, ``y_strata``). The task is the unit of replication: p-values
come from permutations of whole tasks, so the variation of the effect across
tasks is in them.

Rates, means, pass^k and Cliff's delta are tested by a *studentized*
permutation test (the effect over its standard error on every permutation),
which stays valid when the arms' task heterogeneity differs, and their
interval is the set of effects that same test does not reject, so it excludes
0 exactly when the two-sided p-value is below ``1 - confidence_level``
(:mod:`agentab.stats._inference`). Quantiles keep the raw permutation test
and a percentile bootstrap over the same units.

==========================  ==================================================
design                      permutation (studentized by) / bootstrap
==========================  ==================================================
paired (same tasks)         sign flips of per-task differences (the task-level
                            t statistic) / resample tasks with both arms
clustered (other tasks)     reassign whole tasks to arms (Welch's t on task
                            means) / resample tasks within each arm
independent (no task ids)   permute runs (Welch's t; Brunner-Munzel for Cliff's
                            delta) / resample runs within each arm
==========================  ==================================================

Every task weighs the same in its arm whatever its number of seeds: the
estimand is the task-averaged difference, as a benchmark score averages over
tasks. With equal seeds per task it is the plain difference.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from agentab.stats._design import CountDesign
from agentab.stats._design import _label as task_label  # noqa: F401  (read by compare: one task identity)
from agentab.stats._inference import mean_inference, ordinal_inference
from agentab.stats._inputs import (  # MAX_MAGNITUDE, magnitude_problem: read by compare and plan
    MAX_MAGNITUDE,  # noqa: F401
    _bootstrap_words,
    _emit,
    _Input,
    _permutation_words,
    _result_fields,
    _scale,
    _two_sample_iv,
    magnitude_problem,  # noqa: F401
)
from agentab.stats._kernels import (
    MeanKernel,
    OrdinalKernel,
    QuantileKernel,
    cell_means,
    pass_hat_k,
)
from agentab.stats._quantiles import EXACT_QUANTILE_RUNS, independent_quantiles, ratio
from agentab.stats._resampling import percentile_interval, pvalues, resample
from agentab.stats._results import (
    ConfidenceInterval,
    Estimates,
    OrdinalResult,
    QuantileResult,
    TwoSampleResult,
)

__all__ = ["rate_difference", "mean_difference", "mean_estimates", "ordinal_superiority", "quantile_difference", "pass_k_difference"]

#: Below this many runs beyond a tail quantile, the quantile is fragile.
MIN_TAIL_RUNS = 20


# --------------------------------------------------------------------------- #
# Shared computation
# --------------------------------------------------------------------------- #
def _welch_from_counts(levels: np.ndarray, base: np.ndarray, cand: np.ndarray, alternative: str) -> Any:
    """Welch's t-test from value counts (scipy.stats.ttest_ind_from_stats)."""

    def moments(counts: np.ndarray) -> tuple[float, float, float]:
        n = counts.sum()
        mean = counts @ levels / n
        var = counts @ (levels - mean) ** 2 / (n - 1) if n > 1 else np.nan
        return mean, np.sqrt(var), n

    (mb, sb, nb), (mc, sc, nc) = moments(base), moments(cand)
    from scipy import stats as sps  # scipy.stats is heavy: imported when first needed

    return sps.ttest_ind_from_stats(mc, sc, nc, mb, sb, nb, equal_var=False, alternative=alternative)


def _mean_like(
    data: _Input,
    summaries: np.ndarray,
    statistic: str,
    extra: dict[str, Any],
    *,
    test: bool = True,
    mid_p: bool = False,
    bounds: tuple[float, float] | None = None,
) -> TwoSampleResult:
    base, cand, effect = (float(v[0, 0]) for v in MeanKernel(summaries)(*data.design.observed()))
    inf = mean_inference(data, summaries, test=test, mid_p=mid_p, bounds=bounds)
    effect = 0.0 if abs(effect) <= 1e-10 * max(_scale(summaries), 1e-300) else effect
    method = f"{statistic}; {inf.test_words + '; ' if test else ''}{inf.ci_words}"
    return TwoSampleResult(
        effect,
        inf.pvalue,
        ConfidenceInterval(inf.low, inf.high),
        Estimates(base, cand),
        method,
        data.design.label,
        extra,
        _emit(data.notes + list(inf.notes), statistic),
        **_result_fields(data, inf, "test inversion", inf.n_permutations if test else 0),
        smallest_pvalue=inf.smallest_pvalue if test else None,
    )


# --------------------------------------------------------------------------- #
# Public functions
# --------------------------------------------------------------------------- #
def rate_difference(
    x: Any,
    y: Any,
    *,
    x_strata: Any = None,
    y_strata: Any = None,
    paired: bool | str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: Any = None,
    mid_p: bool = False,
) -> TwoSampleResult:
    """Difference in success rate (candidate - baseline) of a binary metric.

    Parameters
    ----------
    x, y : array_like of bool or {0, 1}
        Baseline and candidate outcomes, one per run; NaN marks a missing
        value (excluded and counted).
    x_strata, y_strata : array_like, optional
        The task of every run. With them, the design is paired (same tasks in
        both arms) or clustered (different tasks); without them, runs are
        treated as independent.
    paired : {"auto", True, False}
        ``"auto"`` pairs when at least half of all tasks (and at least two)
        were run by both arms; tasks run by one arm are then dropped and
        counted in ``details``.
    alternative : {"two-sided", "greater", "less"}
        "greater": the candidate's rate is higher. Two-sided p-values double
        the smaller one-sided p-value.
    confidence_level : float
        Of the two-sided interval.
    n_resamples : int
        Random permutations, when the permutation distribution is neither
        small enough to enumerate nor known exactly.
    rng : numpy.random.Generator or int, optional
        Source of randomness; the same seed gives the same result.
    mid_p : bool
        Report the mid-p value (ties with the observed statistic count half):
        less conservative with few tasks, but not a valid level-alpha test;
        the interval stays the exact test's. Off by default.

    Returns
    -------
    TwoSampleResult
        ``statistic`` is the task-averaged difference of rates, ``estimates``
        the two task-averaged rates; ``smallest_pvalue`` the smallest p-value
        these data's permutation distribution can give.

    Notes
    -----
    Paired: sign flips of whole tasks of the task-level t statistic, which
    under sign flips is an increasing function of the mean difference (so the
    p-value is that of the mean: exact by enumeration, else Monte Carlo; ties
    between flip patterns are broken by a flip-invariant key, the rank of each
    task's mean over both arms, weighted 1e-6); the interval is
    the set of effects ``theta`` for which the sign-flip test of the shifted
    differences ``d - theta`` is not rejected (Hartigan 1969), read exactly off
    the same flips. Clustered and independent: whole units reassigned between
    arms, Welch's t studentizing the difference (Janssen 1997; Chung & Romano
    2013), and the interval of effects whose studentized statistic the same
    permutation distribution does not reject. A two-valued metric with many
    independent runs uses the exact hypergeometric law of the candidate's count
    (Fisher's exact test in its randomisation form, with Welch's t). The
    interval excludes 0 exactly when the two-sided p-value is below
    ``1 - confidence_level``.

    Examples
    --------
    >>> import numpy as np
    >>> from agentab.stats import rate_difference
    >>> tasks = np.repeat(np.arange(12), 3)
    >>> rng = np.random.default_rng(0)
    >>> base = rng.random(36) < 0.4
    >>> cand = rng.random(36) < 0.7
    >>> res = rate_difference(base, cand, x_strata=tasks, y_strata=tasks, rng=1)
    >>> res.design
    'paired by task (12 tasks)'
    >>> round(res.statistic, 3), round(res.pvalue, 3)
    (0.389, 0.012)
    """
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    bad = ~np.isin(data.values, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"a binary metric takes 0/1 (or booleans); found {float(data.values[bad][0])!r}")
    return _mean_like(data, cell_means(data.values, data.design), "difference in success rate", {}, mid_p=mid_p, bounds=(-1.0, 1.0))


def mean_difference(
    x: Any,
    y: Any,
    *,
    x_strata: Any = None,
    y_strata: Any = None,
    paired: bool | str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: Any = None,
    test: bool = True,
    mid_p: bool = False,
) -> TwoSampleResult:
    """Difference in means (candidate - baseline) of a continuous metric.

    Parameters are those of :func:`rate_difference`, with ``x`` and ``y`` any
    real numbers; ``test=False`` reports the interval only (``pvalue`` is
    NaN; the interval still inverts the permutation test). ``details["welch"]`` holds Welch's t-test as a cross-check
    (on per-task differences in a paired design, on task means in a
    clustered one), from :func:`scipy.stats.ttest_1samp` /
    :func:`scipy.stats.ttest_ind`.

    Returns
    -------
    TwoSampleResult

    Examples
    --------
    >>> import numpy as np
    >>> from agentab.stats import mean_difference
    >>> rng = np.random.default_rng(0)
    >>> res = mean_difference(rng.normal(0, 1, 40), rng.normal(1, 1, 40), rng=0)
    >>> res.design, round(res.statistic, 2), res.pvalue < 0.001
    ('independent runs (40 + 40)', 1.36, True)
    """
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    means = cell_means(data.values, data.design)
    d = data.design
    from scipy import stats as sps  # scipy.stats is heavy: imported when first needed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if d.kind == "paired":
            t = sps.ttest_1samp(means[d.cand_cells] - means[d.base_cells], 0.0, alternative=data.alternative)
        elif isinstance(d, CountDesign):
            t = _welch_from_counts(means, d.base_counts, d.cand_counts, data.alternative)
        else:
            t = sps.ttest_ind(means[d.cand_cells], means[d.base_cells], equal_var=False, alternative=data.alternative)
    welch = {"statistic": float(t.statistic), "pvalue": float(t.pvalue)}
    return _mean_like(data, means, "difference in means", {"welch": welch}, test=test, mid_p=mid_p)


def mean_estimates(
    x: Any,
    y: Any,
    *,
    x_strata: Any = None,
    y_strata: Any = None,
    paired: bool | str = "auto",
) -> TwoSampleResult:
    """Task-averaged means of each arm and their difference, without resampling.

    A descriptive figure (for the mean of a long-tailed metric, which its
    tail drags): the same estimand and design handling as
    :func:`mean_difference`, but ``pvalue`` and the interval are NaN, and it
    costs one pass over the data.

    Examples
    --------
    >>> from agentab.stats import mean_estimates
    >>> res = mean_estimates([1.0, 2.0, 3.0], [2.0, 4.0], x_strata=["a", "a", "b"], y_strata=["a", "b"])
    >>> res.estimates, res.statistic  # task a: 1.5 -> 2, task b: 3 -> 4
    (Estimates(baseline=2.25, candidate=3.0), 0.75)
    """
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, "two-sided", 0.95, 1, None)
    kernel = MeanKernel(cell_means(data.values, data.design))
    base, cand, effect = (float(v[0, 0]) for v in kernel(*data.design.observed()))
    nan = float("nan")
    notes = [n for n in data.notes if "smallest attainable p-value" not in n]
    return TwoSampleResult(
        effect,
        nan,
        ConfidenceInterval(nan, nan),
        Estimates(base, cand),
        "difference in task-averaged means (descriptive; no test, no interval)",
        data.design.label,
        {},
        _emit(notes, "means"),
        **{**_result_fields(data, None, None), "n_resamples": 0, "confidence_level": None, "alternative": None,
           "seed": None},
    )


def pass_k_difference(
    x: Any,
    y: Any,
    *,
    x_strata: Any,
    y_strata: Any,
    k: int | None = None,
    paired: bool | str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: Any = None,
    mid_p: bool = False,
) -> TwoSampleResult:
    """Difference in pass^k: the chance that ``k`` attempts at a task all succeed.

    Per task, pass^k is estimated without bias by ``C(c, k) / C(n, k)`` (``c``
    successes in ``n`` seeds; Yao et al. 2024, "tau-bench", eq. 1), then
    averaged over tasks; the test and interval treat the per-task values like
    :func:`rate_difference` treats rates.

    Parameters other than ``k`` are those of :func:`rate_difference`; task
    ids are required.

    Parameters
    ----------
    k : int, optional
        Attempts that must all succeed; by default the fewest seeds any task
        has in either arm. Every task needs at least ``k`` seeds.

    Returns
    -------
    TwoSampleResult

    Examples
    --------
    >>> import numpy as np
    >>> from agentab.stats import pass_k_difference
    >>> tasks = np.repeat(np.arange(10), 4)
    >>> base = np.r_[np.tile([1, 1, 0, 1], 6), np.ones(16)]   # 4 of 10 tasks always pass
    >>> cand = np.r_[np.tile([1, 1, 1, 1], 8), np.zeros(8)]   # 8 of 10 tasks always pass
    >>> res = pass_k_difference(base, cand, x_strata=tasks, y_strata=tasks, rng=0)
    >>> res.details["k"], res.estimates
    (4, Estimates(baseline=0.4, candidate=0.8))
    """
    if x_strata is None or y_strata is None:
        raise ValueError("pass^k needs the task of every run (`x_strata`, `y_strata`)")
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    if not np.isin(data.values, (0.0, 1.0)).all():
        raise ValueError("pass^k needs a binary metric (0/1 or booleans)")
    d = data.design
    trials = np.bincount(d.cell, minlength=d.n_cells)
    successes = np.bincount(d.cell, weights=data.values, minlength=d.n_cells)
    fewest = int(trials.min())
    if k is None:
        k = fewest
    if int(k) != k or k < 1:
        raise ValueError(f"`k` must be a positive integer, got {k!r}")
    if k > fewest:
        raise ValueError(f"pass^{k} needs at least {k} seeds per task; the fewest any task has is {fewest}")
    summaries = pass_hat_k(successes, trials, int(k))
    return _mean_like(data, summaries, f"difference in pass^{k}", {"k": int(k)}, mid_p=mid_p, bounds=(-1.0, 1.0))


def ordinal_superiority(
    x: Any,
    y: Any,
    *,
    x_strata: Any = None,
    y_strata: Any = None,
    paired: bool | str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: Any = None,
    mid_p: bool = False,
) -> TwoSampleResult:
    """Cliff's delta of an ordinal metric (e.g. a 0-3 rubric), by permutation.

    ``statistic`` is Cliff's delta, ``P(Y > X) - P(Y < X)`` for a candidate
    run ``Y`` and a baseline run ``X`` (Cliff 1993, Psychological Bulletin
    114:494-509); ``probability_of_superiority`` is
    ``P(Y > X) + P(Y = X) / 2 = (delta + 1) / 2``, the Mann-Whitney
    ``U / (n_x n_y)`` (Vargha & Delaney 2000's A). Both depend only on the
    order of the levels, so relabelling the levels (0-3 as 1-4, or 0, 1, 5,
    10) changes nothing; ties are counted on the exact distinct values, not
    within a floating-point tolerance.

    The p-value is a studentized permutation test of delta over its
    delta-method standard error (for independent runs the statistic is
    Brunner & Munzel's (2000), :func:`scipy.stats.brunnermunzel`, and the test
    is Neubert & Brunner's (2007) studentized permutation test, valid when the
    arms' spreads differ, where the Mann-Whitney test is not); the interval is
    the set of deltas the same test does not reject. ``estimates`` are mean
    levels, a descriptive figure only: levels are not equally spaced.
    ``levels`` and ``shares`` give each arm's
    (task-averaged) share of every level, and ``shift`` the
    candidate's share minus the baseline's.

    Parameters are those of :func:`rate_difference`.

    Returns
    -------
    TwoSampleResult

    Examples
    --------
    >>> import numpy as np
    >>> from agentab.stats import ordinal_superiority
    >>> base = np.array([0, 1, 1, 2, 2, 2, 3, 0, 1, 2])
    >>> cand = np.array([1, 2, 2, 3, 3, 3, 3, 1, 2, 3])
    >>> res = ordinal_superiority(base, cand, rng=0)
    >>> round(res.statistic, 2), round(res.probability_of_superiority, 3)
    (0.51, 0.755)
    >>> res.shift.round(6)
    array([-0.2, -0.1, -0.1,  0.4])
    """
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    if isinstance(data.design, CountDesign):
        levels, codes = data.design.levels, data.design.cell
    else:
        levels, codes = np.unique(data.values, return_inverse=True)
    kernel = OrdinalKernel(codes.reshape(-1), levels, data.design)
    inf = ordinal_inference(data, kernel.values, mid_p=mid_p)
    base_share, cand_share = (sh[0] for sh in kernel.averages(*data.design.observed()))
    base, cand, delta = (float(v[0, 0]) for v in kernel(*data.design.observed()))
    delta = 0.0 if abs(delta) <= 1e-10 else delta
    method = f"Cliff's delta (= 2 x probability of superiority - 1); {inf.test_words}; {inf.ci_words}"
    return OrdinalResult(
        delta,
        inf.pvalue,
        ConfidenceInterval(inf.low, inf.high),
        Estimates(base, cand),
        method,
        data.design.label,
        {},
        _emit(data.notes + list(inf.notes), "ordinal comparison"),
        **_result_fields(data, inf, "test inversion", inf.n_permutations),
        smallest_pvalue=inf.smallest_pvalue,
        probability_of_superiority=(delta + 1.0) / 2.0,
        levels=levels,
        shares=Estimates(base_share, cand_share),
        shift=cand_share - base_share,
    )


def quantile_difference(
    x: Any,
    y: Any,
    q: Any = (0.5, 0.95),
    *,
    x_strata: Any = None,
    y_strata: Any = None,
    paired: bool | str = "auto",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: Any = None,
    test: bool = True,
) -> QuantileResult:
    """Differences and ratios of quantiles (e.g. p50 and p95 of cost).

    For long-tailed metrics (tokens, dollars, latency, step counts) the mean
    is dragged by a few runs; quantiles say what a typical (p50) and a bad
    (p95) run costs. ``statistic`` is candidate minus baseline for each
    ``q``; ``ratio`` is candidate / baseline (1 when both are 0, infinite
    when only the baseline's is 0).

    The quantile is the inverse of the empirical distribution function
    (Hyndman & Fan 1996, definition 1, numpy's ``method="inverted_cdf"``),
    with each task weighing the same; it is always an observed value. The
    p-value is a permutation test of the difference (doubling the smaller
    tail); intervals for the difference and the ratio are percentile
    bootstrap intervals, never BCa, whose corrections misbehave on the
    discrete, tie-heavy bootstrap distribution of a sample quantile
    (Efron & Tibshirani 1993, sec. 14.3; tea-tasting avoids it for the same
    reason); their bounds are values the bootstrap distribution takes (no
    interpolation between the few values a quantile takes). A warning is given when fewer than 20 runs of an arm lie
    beyond a tail quantile.

    Parameters other than ``q`` and ``test`` are those of
    :func:`rate_difference`.

    Parameters
    ----------
    q : float or sequence of float
        Probabilities in (0, 1).
    test : bool
        Run the permutation test (set False for intervals only).

    Returns
    -------
    QuantileResult
        Array fields (statistic, pvalue, interval bounds, estimates, ratio)
        are aligned with ``q``; scalars when ``q`` is a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> from agentab.stats import quantile_difference
    >>> rng = np.random.default_rng(0)
    >>> base = rng.lognormal(10, 1, 400)
    >>> cand = rng.lognormal(10, 0.6, 400)
    >>> res = quantile_difference(base, cand, q=(0.5, 0.95), rng=0)
    >>> np.round(res.ratio, 2), bool(res.pvalue[1] < 0.001)
    (array([1.04, 0.51]), True)
    """
    scalar = np.ndim(q) == 0
    qs = np.atleast_1d(np.asarray(q, dtype=float))
    if qs.ndim != 1 or len(qs) == 0 or not np.all((qs > 0) & (qs < 1)):
        raise ValueError(f"`q` must be probabilities strictly between 0 and 1, got {q!r}")
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    d = data.design
    if d.kind == "independent" and not isinstance(d, CountDesign) and sum(d.n_runs) >= EXACT_QUANTILE_RUNS:
        res = independent_quantiles(data, qs, test)
    else:
        kernel = QuantileKernel(data.values, d, qs)
        res = resample(d, kernel, n_resamples=data.n_resamples, rng=data.rng, test=test, scale=_scale(data.values))
    p = pvalues(res.null, res.effect, data.alternative, exact=res.exact) if test else np.full(len(qs), np.nan)
    by_q: list[list[str]] = [[] for _ in qs]
    lows, highs, rlows, rhighs = [], [], [], []
    boot_ratio = ratio(res.boot_cand, res.boot_base)
    ratios = ratio(res.cand, res.base)
    for j, qj in enumerate(qs):
        low, high = percentile_interval(res.boot_effect[:, j], data.confidence_level, discrete=True)
        lows.append(low)
        highs.append(high)
        rl, rh = percentile_interval(boot_ratio[:, j], data.confidence_level, discrete=True)
        if np.isinf(ratios[j]):
            by_q[j].append(f"the p{100 * qj:g} ratio is infinite (the baseline's is 0): judge it by the difference")
        rlows.append(rl)
        rhighs.append(rh)
        beyond = [round(n * (1 - qj), 9) for n in d.n_runs]
        if qj > 0.5 and min(beyond) < MIN_TAIL_RUNS:
            by_q[j].append(
                f"p{100 * qj:g} rests on about {beyond[0]:.0f} baseline and {beyond[1]:.0f} candidate runs "
                f"beyond it (fewer than {MIN_TAIL_RUNS}): treat its interval with caution"
            )
    out = (lambda a: float(a[0])) if scalar else (lambda a: np.asarray(a, dtype=float))
    test_words = _permutation_words(d, res.exact, data.n_resamples) + "; " if test else ""
    method = (
        "difference of quantiles (inverse ECDF, tasks weighted equally); "
        f"{test_words}{_bootstrap_words(d, 'percentile')} (BCa is unreliable for quantiles)"
    )
    return QuantileResult(
        out(res.effect),
        out(p),
        ConfidenceInterval(out(lows), out(highs)),
        Estimates(out(res.base), out(res.cand)),
        method,
        d.label,
        {},
        _emit(data.notes + [n for notes in by_q for n in notes], "quantile comparison"),
        **_result_fields(data, res, "percentile"),
        notes_by_q=tuple(tuple(n) for n in by_q),
        q=out(qs),
        ratio=out(ratios),
        ratio_interval=ConfidenceInterval(out(rlows), out(rhighs)),
    )
