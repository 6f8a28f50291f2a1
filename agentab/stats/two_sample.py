"""Two-sample tests for agent metrics, with designs that respect tasks.

Every function compares a baseline sample ``x`` with a candidate sample ``y``
(effects are candidate minus baseline) and accepts the task of every run
(``x_strata``, ``y_strata``). The task is the unit of replication: p-values
come from permutations of whole tasks and intervals from bootstrap resamples
of whole tasks, so the variation of the effect across tasks is in both.

==========================  ==================================================
design                      permutation / bootstrap
==========================  ==================================================
paired (same tasks)         sign flips of per-task differences (swap the arms
                            of whole tasks) / resample tasks with both arms
clustered (other tasks)     reassign whole tasks to arms / resample tasks
                            within each arm
independent (no task ids)   permute runs / resample runs within each arm
==========================  ==================================================

Every task weighs the same in its arm whatever its number of seeds: the
estimand is the task-averaged difference, as a benchmark score averages over
tasks. With equal seeds per task it is the plain difference.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.errors import StatsWarning
from agentab.stats._design import BATCH_CELLS, CountDesign, Design, count_design, make_design
from agentab.stats._kernels import MeanKernel, OrdinalKernel, QuantileKernel, cell_means, pass_hat_k
from agentab.stats._quantiles import bootstrap_order_statistics, permuted_order_statistics, rank_of
from agentab.stats._resampling import (
    Resampled,
    bca_interval,
    combine_tails,
    percentile_interval,
    pvalues,
    resample,
    snap_ties,
    tie_tolerance,
)
from agentab.stats._results import ConfidenceInterval, Estimates, QuantileResult, TwoSampleResult

__all__ = ["rate_difference", "mean_difference", "mean_estimates", "ordinal_superiority", "quantile_difference", "pass_k_difference"]

ALTERNATIVES = ("two-sided", "greater", "less")
#: Below this many runs beyond a tail quantile, the quantile is fragile.
MIN_TAIL_RUNS = 20


@dataclass(frozen=True)
class _Input:
    """Validated arguments shared by every two-sample function."""

    values: np.ndarray  # baseline runs then candidate runs, missing values removed
    design: Design
    alternative: str
    confidence_level: float
    n_resamples: int
    rng: np.random.Generator
    excluded: tuple[int, int]
    notes: list[str]


# --------------------------------------------------------------------------- #
# Input validation
# --------------------------------------------------------------------------- #
def _as_values(sample: Any, name: str) -> np.ndarray:
    try:
        values = np.asarray(sample, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be numeric (numbers or booleans): {exc}") from None
    if values.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional, got shape {values.shape}")
    if np.isinf(values).any():
        raise ValueError(f"`{name}` contains infinite values; remove or cap them first")
    return values


def _as_strata(strata: Any, n: int, name: str) -> np.ndarray:
    labels = np.asarray(strata)
    if labels.dtype.kind not in "iufUS":  # anything but plain numbers and text: look at every id
        labels = labels.astype(object)
    if labels.ndim != 1 or len(labels) != n:
        raise ValueError(f"`{name}` must give one task per run: {n} runs, got shape {labels.shape}")
    if labels.dtype.kind == "f":
        missing = np.isnan(labels)
    elif labels.dtype == object:
        missing = np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in labels], dtype=bool)
    else:
        missing = np.zeros(len(labels), dtype=bool)
    if missing.any():
        raise ValueError(f"`{name}` has {int(missing.sum())} missing task id(s), first at position {int(np.argmax(missing))}")
    return labels


def _two_sample_iv(
    x: Any,
    y: Any,
    x_strata: Any,
    y_strata: Any,
    paired: bool | str,
    alternative: str,
    confidence_level: float,
    n_resamples: int,
    rng: Any,
) -> _Input:
    xv = _as_values(x, "x")
    yv = _as_values(y, "y")
    if (x_strata is None) != (y_strata is None):
        raise ValueError("give task ids for both samples (`x_strata` and `y_strata`) or for neither")
    if x_strata is not None:
        xs = _as_strata(x_strata, len(xv), "x_strata")
        ys = _as_strata(y_strata, len(yv), "y_strata")
    if paired not in ("auto", True, False):
        raise ValueError(f"`paired` must be 'auto', True or False, got {paired!r}")
    if paired is True and x_strata is None:
        raise ValueError("a paired design needs the task of every run (`x_strata`, `y_strata`); runs are never paired by position")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"`alternative` must be one of {ALTERNATIVES}, got {alternative!r}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"`confidence_level` must be between 0 and 1, got {confidence_level!r}")
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive integer, got {n_resamples!r}")
    notes: list[str] = []
    keep_x = ~np.isnan(xv)
    keep_y = ~np.isnan(yv)
    excluded = (int((~keep_x).sum()), int((~keep_y).sum()))
    if sum(excluded):
        notes.append(f"missing values excluded: {excluded[0]} baseline, {excluded[1]} candidate")
    xv = xv if keep_x.all() else xv[keep_x]
    yv = yv if keep_y.all() else yv[keep_y]
    for name, v in (("x (baseline)", xv), ("y (candidate)", yv)):
        if len(v) == 0:
            raise ValueError(f"`{name}` has no values" + (" after excluding missing ones" if sum(excluded) else ""))
    if x_strata is not None:
        design, kb, kc = make_design(len(xv), len(yv), xs[keep_x], ys[keep_y], paired)
        if design.kind == "paired" and (design.n_runs[0] == 0 or len(design.base_cells) == 0):
            raise ValueError("a paired design needs tasks run by both arms; these samples share none")
        xv, yv = xv[kb], yv[kc]
        if sum(design.dropped_units):
            notes.append(
                f"tasks run by one arm only dropped from the paired comparison: {design.dropped_units[0]} baseline "
                f"({design.dropped_runs[0]} runs), {design.dropped_units[1]} candidate ({design.dropped_runs[1]} runs)"
            )
    else:
        design = count_design(np.concatenate([xv, yv]), len(xv), len(yv))
        if design is None:
            design, _, _ = make_design(len(xv), len(yv), None, None, paired)
    if min(design.n_units) < 2:
        notes.append(
            f"only {min(design.n_units)} {'task' if design.kind != 'independent' else 'run'} in an arm: "
            "there is no variation to test against and no interval worth the name"
        )
    count = design.n_permutations(limit=10**6)
    if count is not None:
        smallest = (2.0 if alternative == "two-sided" else 1.0) / count
        if smallest > 1 - confidence_level:
            notes.append(
                f"with {design.label} the smallest attainable p-value is {min(smallest, 1.0):.3g}: "
                "no difference can be significant at this level; add tasks"
            )
    return _Input(
        np.concatenate([xv, yv]),
        design,
        alternative,
        float(confidence_level),
        int(n_resamples),
        np.random.default_rng(rng),
        excluded,
        notes,
    )


# --------------------------------------------------------------------------- #
# Shared computation
# --------------------------------------------------------------------------- #
def _permutation_words(design: Design, exact: bool, n_resamples: int) -> str:
    what = {
        "paired": "sign flips of per-task differences",
        "clustered": "whole tasks reassigned between arms",
        "independent": "runs permuted between arms",
    }[design.kind]
    how = f"exact, all {design.n_permutations(limit=n_resamples)}" if exact else f"Monte Carlo, {n_resamples} resamples"
    return f"permutation test ({what}; {how})"


def _bootstrap_words(design: Design, ci_method: str) -> str:
    unit = {"paired": "tasks (both arms)", "clustered": "tasks within arm", "independent": "runs within arm"}[design.kind]
    return f"{ci_method} bootstrap over {unit}"


def _interval(data: _Input, kernel: Any, res: Any, bca: bool) -> tuple[ConfidenceInterval, str, list[str]]:
    notes = []
    if not bca:
        low, high = percentile_interval(res.boot_effect[:, 0], data.confidence_level)
        return ConfidenceInterval(low, high), "percentile", notes
    (low, high), fallback = bca_interval(
        res.boot_effect[:, 0], float(res.effect[0]), kernel.jackknife(data.design), data.confidence_level
    )
    if fallback:
        notes.append(f"percentile interval instead of BCa: {fallback}")
        return ConfidenceInterval(low, high), "percentile", notes
    return ConfidenceInterval(low, high), "BCa", notes


def _details(data: _Input, res: Any, ci_method: str, **extra: Any) -> dict[str, Any]:
    d = data.design
    return {
        "design_kind": d.kind,
        "exact": res.exact,
        "n_resamples": data.n_resamples,
        "n_permutations": len(res.null) if res.null is not None else 0,
        "ci_method": ci_method,
        "confidence_level": data.confidence_level,
        "alternative": data.alternative,
        "n_runs": d.n_runs,
        "n_units": d.n_units,
        "excluded": data.excluded,
        "dropped_tasks": d.dropped_units,
        "dropped_runs": d.dropped_runs,
        **extra,
    }


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


#: From this many runs (no task ids) quantiles are resampled from their exact distributions.
EXACT_QUANTILE_RUNS = 2000


def _independent_quantiles(data: _Input, qs: np.ndarray, test: bool) -> Resampled:
    """Observed, permutation and bootstrap quantiles of independent runs without touching every run per resample.

    See :mod:`agentab.stats._quantiles`: the bootstrap draws each arm's order
    statistic from its exact distribution; the permutation locates each arm's
    order statistic in the pooled sample through block counts. Same
    distributions as the generic path, O(log n) and O(sqrt n) per resample.
    """
    n_base, n_cand = data.design.n_runs
    base = np.sort(data.values[:n_base])
    cand = np.sort(data.values[n_base:])
    rb = np.array([rank_of(n_base, q) for q in qs])
    rc = np.array([rank_of(n_cand, q) for q in qs])
    effect = cand[rc - 1] - base[rb - 1]
    null = None
    if test:
        pooled = np.sort(data.values)
        streams = [np.random.default_rng(s) for s in data.rng.integers(2**63, size=1 + 2 * len(qs))]
        width = int(math.sqrt(len(pooled))) + 1
        batch = max(1, BATCH_CELLS // (4 * width))
        parts = []
        for start in range(0, data.n_resamples, batch):
            size = min(batch, data.n_resamples - start)
            pb, pc = permuted_order_statistics(len(pooled), n_cand, rb, rc, size, streams)
            parts.append(pooled[pc] - pooled[pb])
        null = np.concatenate(parts)
    rng_base, rng_cand = (np.random.default_rng(s) for s in data.rng.integers(2**63, size=2))
    boot_base = np.stack([base[bootstrap_order_statistics(n_base, r, data.n_resamples, rng_base)] for r in rb], axis=1)
    boot_cand = np.stack([cand[bootstrap_order_statistics(n_cand, r, data.n_resamples, rng_cand)] for r in rc], axis=1)
    tol = tie_tolerance(_scale(data.values))
    return Resampled(
        base[rb - 1], cand[rc - 1], effect, None if null is None else snap_ties(null, effect, tol), False,
        boot_base, boot_cand, snap_ties(boot_cand - boot_base, effect, tol),
    )


def _ratio(cand: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``cand / base``, with 0 / 0 = 1 (both zero: no change) and x / 0 = inf for x > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((cand == 0) & (base == 0), 1.0, cand / base)


def _scale(values: np.ndarray) -> float:
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if len(finite) else 1.0


def _emit(notes: list[str], what: str) -> tuple[str, ...]:
    for note in notes:
        warnings.warn(f"{what}: {note}", StatsWarning, stacklevel=4)
    return tuple(notes)


def _mean_like(
    data: _Input, summaries: np.ndarray, statistic: str, extra: dict[str, Any], test: bool = True
) -> TwoSampleResult:
    kernel = MeanKernel(summaries)
    integer = _integer_task_differences(data, summaries) if test else None
    use_dp = integer is not None and data.design.n_permutations(limit=data.n_resamples) is None
    two_values = test and isinstance(data.design, CountDesign) and len(data.design.levels) == 2
    res = resample(
        data.design,
        kernel,
        n_resamples=data.n_resamples,
        rng=data.rng,
        test=test and not (use_dp or two_values),
        scale=_scale(summaries),
    )
    if two_values:
        p = _hypergeometric_pvalue(data.design, data.alternative)
        res = dataclasses.replace(res, exact=True)
        log_count = data.design.log_n_permutations()  # never the exact integer: C(2e6, 1e6) takes minutes
        extra = {**extra, "n_permutations": round(math.exp(log_count)) if log_count < 40 else math.inf}
        test_words = "permutation test (runs permuted between arms; exact: the hypergeometric law of the candidate's count); "
    elif use_dp:
        p = _sign_flip_exact_pvalue(integer, data.alternative)
        res = dataclasses.replace(res, exact=True)
        extra = {**extra, "n_permutations": 2 ** len(integer)}
        test_words = (
            f"permutation test (sign flips of per-task differences; exact, all 2^{len(integer)} by dynamic "
            "programming over integer task sums); "
        )
    else:
        p = float(pvalues(res.null, res.effect, data.alternative, exact=res.exact)[0]) if test else np.nan
        test_words = f"{_permutation_words(data.design, res.exact, data.n_resamples)}; " if test else ""
    ci, ci_method, notes = _interval(data, kernel, res, bca=True)
    method = f"{statistic}; {test_words}{_bootstrap_words(data.design, ci_method)}"
    all_notes = data.notes + notes
    return TwoSampleResult(
        float(res.effect[0]),
        p,
        ci,
        Estimates(float(res.base[0]), float(res.cand[0])),
        method,
        data.design.label,
        _details(data, res, ci_method, **extra),
        _emit(all_notes, statistic),
    )


#: Largest sum of |task differences| for the exact dynamic programme (its support is twice that).
MAX_DP_SUPPORT = 200_000


def _integer_task_differences(data: _Input, summaries: np.ndarray) -> np.ndarray | None:
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


def _hypergeometric_pvalue(design: CountDesign, alternative: str) -> float:
    """Exact permutation p-value for a metric with two values (Fisher's exact test, randomisation form).

    With two values the difference of means is increasing in the candidate's
    count of the larger value, whose permutation distribution is
    hypergeometric (Fisher 1935; Lehmann & Romano 2005, sec. 4.5). The
    two-sided p-value doubles the smaller tail, like every other test here
    (``scipy.stats.fisher_exact`` instead sums the outcomes no more likely
    than the observed one).
    """
    n_base, n_cand = design.n_runs
    total, high = n_base + n_cand, int(design.base_counts[1] + design.cand_counts[1])
    observed = int(design.cand_counts[1])
    # Sum the probabilities on the support within 40 standard deviations of the mean (beyond it
    # they are below 1e-300): a vectorised log-pmf, where the library's tail sums are slow for
    # millions of runs.
    mean = n_cand * high / total
    sd = math.sqrt(max(n_cand * (high / total) * (1 - high / total) * (total - n_cand) / max(total - 1, 1), 1e-12))
    low_k, high_k = max(0, n_cand - (total - high)), min(high, n_cand)
    k = np.arange(max(low_k, math.floor(mean - 40 * sd - 1)), min(high_k, math.ceil(mean + 40 * sd + 1)) + 1)
    from scipy import stats as sps  # scipy.stats is heavy: imported when first needed

    pmf = np.exp(sps.hypergeom.logpmf(k, total, high, n_cand))
    greater, less = float(pmf[k >= observed].sum()), float(pmf[k <= observed].sum())
    p = float(combine_tails(greater, less, alternative))
    return max(p, np.finfo(float).tiny)


def _sign_flip_exact_pvalue(diff: np.ndarray, alternative: str) -> float:
    """Exact sign-flip p-value of ``sum(diff)`` by convolution over tasks.

    Under the null each task's difference enters with sign +1 or -1 with
    probability 1/2, independently; the distribution of the signed sum of
    integers is built task by task on the integer grid (Pesarin & Salmaso
    2010, *Permutation Tests for Complex Data*, sec. 2.6, on the
    dynamic-programming form of the paired permutation test).
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
    observed = int(diff.sum()) + total
    greater = probs[observed:].sum()
    less = probs[: observed + 1].sum()
    p = float(combine_tails(greater, less, alternative))
    return float(min(1.0, max(p, np.finfo(float).tiny)))


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
        Of the two-sided bootstrap interval.
    n_resamples : int
        Permutations (when the exact distribution is larger) and bootstrap
        resamples.
    rng : numpy.random.Generator or int, optional
        Source of randomness; the same seed gives the same result.

    Returns
    -------
    TwoSampleResult
        ``statistic`` is the task-averaged difference of rates, ``estimates``
        the two task-averaged rates.

    Notes
    -----
    The p-value comes from a permutation test of the difference at the level
    of the design's units; the interval is BCa (Efron 1987) over the same
    units, or percentile where BCa is undefined (all values tied, the
    observed value at the edge of the bootstrap distribution). With one run
    per unit and no tasks, the permutation test of a difference in
    proportions is Fisher's exact test in its randomisation form.

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
    (0.389, 0.014)
    """
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    bad = ~np.isin(data.values, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"a binary metric takes 0/1 (or booleans); found {float(data.values[bad][0])!r}")
    return _mean_like(data, cell_means(data.values, data.design), "difference in success rate", {})


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
) -> TwoSampleResult:
    """Difference in means (candidate - baseline) of a continuous metric.

    Parameters are those of :func:`rate_difference`, with ``x`` and ``y`` any
    real numbers; ``test=False`` skips the permutation test (``pvalue`` is
    NaN) and gives the interval only. ``details["welch"]`` holds Welch's t-test as a cross-check
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
    return _mean_like(data, means, "difference in means", {"welch": welch}, test=test)


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
    details = {
        "design_kind": data.design.kind,
        "n_runs": data.design.n_runs,
        "n_units": data.design.n_units,
        "excluded": data.excluded,
        "dropped_tasks": data.design.dropped_units,
        "dropped_runs": data.design.dropped_runs,
    }
    notes = [n for n in data.notes if "smallest attainable p-value" not in n]
    return TwoSampleResult(
        effect,
        nan,
        ConfidenceInterval(nan, nan),
        Estimates(base, cand),
        "difference in task-averaged means (descriptive; no test, no interval)",
        data.design.label,
        details,
        _emit(notes, "means"),
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
) -> TwoSampleResult:
    """Difference in pass^k: the chance that ``k`` attempts at a task all succeed.

    Per task, pass^k is estimated without bias by ``C(c, k) / C(n, k)`` (``c``
    successes in ``n`` seeds; Yao et al. 2024, "tau-bench", eq. 1), then
    averaged over tasks; the test and interval treat the per-task values like
    :func:`rate_difference` treats rates.

    Parameters
    ----------
    k : int, optional
        Attempts that must all succeed; by default the fewest seeds any task
        has in either arm. Every task needs at least ``k`` seeds.

    Other parameters are those of :func:`rate_difference`; task ids are
    required.

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
    return _mean_like(data, summaries, f"difference in pass^{k}", {"k": int(k)})


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
) -> TwoSampleResult:
    """Cliff's delta of an ordinal metric (e.g. a 0-3 rubric), by permutation.

    ``statistic`` is Cliff's delta, ``P(Y > X) - P(Y < X)`` for a candidate
    run ``Y`` and a baseline run ``X`` (Cliff 1993, Psychological Bulletin
    114:494-509); ``details["probability_of_superiority"]`` is
    ``P(Y > X) + P(Y = X) / 2 = (delta + 1) / 2``, the Mann-Whitney
    ``U / (n_x n_y)`` (Vargha & Delaney 2000's A). Both depend only on the
    order of the levels, so relabelling the levels (0-3 as 1-4, or 0, 1, 5,
    10) changes nothing; ties are counted on the exact distinct values, not
    within a floating-point tolerance.

    The p-value is a permutation test of delta (for independent runs this is
    the exact or Monte Carlo Mann-Whitney test, which
    :func:`scipy.stats.mannwhitneyu` approximates), the interval BCa
    bootstrap (percentile where BCa is undefined). ``estimates`` are mean
    levels, a descriptive figure only: levels are not equally spaced.
    ``details["levels"]``, ``details["shares"]`` give each arm's
    (task-averaged) share of every level, and ``details["shift"]`` the
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
    >>> round(res.statistic, 2), round(res.details["probability_of_superiority"], 3)
    (0.51, 0.755)
    >>> res.details["shift"].round(6)
    array([-0.2, -0.1, -0.1,  0.4])
    """
    data = _two_sample_iv(x, y, x_strata, y_strata, paired, alternative, confidence_level, n_resamples, rng)
    if isinstance(data.design, CountDesign):
        levels, codes = data.design.levels, data.design.cell
    else:
        levels, codes = np.unique(data.values, return_inverse=True)
    kernel = OrdinalKernel(codes.reshape(-1), levels, data.design)
    res = resample(data.design, kernel, n_resamples=data.n_resamples, rng=data.rng, scale=1.0)
    p = float(pvalues(res.null, res.effect, data.alternative, exact=res.exact)[0])
    ci, ci_method, notes = _interval(data, kernel, res, bca=True)
    base_share, cand_share = (s[0] for s in kernel.averages(*data.design.observed()))
    delta = float(res.effect[0])
    method = (
        f"Cliff's delta (= 2 x probability of superiority - 1); "
        f"{_permutation_words(data.design, res.exact, data.n_resamples)}; {_bootstrap_words(data.design, ci_method)}"
    )
    extra = {
        "probability_of_superiority": (delta + 1.0) / 2.0,
        "levels": levels,
        "shares": Estimates(base_share, cand_share),
        "shift": cand_share - base_share,
    }
    return TwoSampleResult(
        delta,
        p,
        ci,
        Estimates(float(res.base[0]), float(res.cand[0])),
        method,
        data.design.label,
        _details(data, res, ci_method, **extra),
        _emit(data.notes + notes, "ordinal comparison"),
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

    Parameters
    ----------
    q : float or sequence of float
        Probabilities in (0, 1).
    test : bool
        Run the permutation test (set False for intervals only).

    Other parameters are those of :func:`rate_difference`.

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
        res = _independent_quantiles(data, qs, test)
    else:
        kernel = QuantileKernel(data.values, d, qs)
        res = resample(d, kernel, n_resamples=data.n_resamples, rng=data.rng, test=test, scale=_scale(data.values))
    p = pvalues(res.null, res.effect, data.alternative, exact=res.exact) if test else np.full(len(qs), np.nan)
    by_q: list[list[str]] = [[] for _ in qs]
    lows, highs, rlows, rhighs = [], [], [], []
    boot_ratio = _ratio(res.boot_cand, res.boot_base)
    ratio = _ratio(res.cand, res.base)
    for j, qj in enumerate(qs):
        low, high = percentile_interval(res.boot_effect[:, j], data.confidence_level, discrete=True)
        lows.append(low)
        highs.append(high)
        rl, rh = percentile_interval(boot_ratio[:, j], data.confidence_level, discrete=True)
        if np.isinf(ratio[j]):
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
        _details(data, res, "percentile", notes=tuple(data.notes), notes_by_q=tuple(tuple(n) for n in by_q)),
        _emit(data.notes + [n for notes in by_q for n in notes], "quantile comparison"),
        q=out(qs),
        ratio=out(ratio),
        ratio_interval=ConfidenceInterval(out(rlows), out(rhighs)),
    )
