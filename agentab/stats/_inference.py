"""The test and the interval of a mean-like effect or of Cliff's delta, read off one permutation distribution.

:func:`mean_inference` (rates, means, pass^k) and :func:`ordinal_inference` (Cliff's delta) choose
the permutation scheme of the design and the exact path where one exists, build the studentized
null distribution (:mod:`agentab.stats._studentized`), and return the p-value and the interval that
inverts the same test (:mod:`agentab.stats._inversion`), with the words that say which was used.

==============================================  ==============================================
data                                            permutation distribution of the studentized effect
==============================================  ==============================================
paired, ``2^tasks <= n_resamples``              every sign flip (exact)
paired otherwise                                ``n_resamples`` random sign flips
independent runs of a two-valued metric         the exact hypergeometric law of the count
clustered / independent, few reassignments      every reassignment of units (exact)
clustered / independent otherwise               ``n_resamples`` random reassignments
==============================================  ==============================================
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.stats._design import CountDesign
from agentab.stats._inversion import ShiftNull, alpha_of
from agentab.stats._studentized import (
    Studentized,
    paired_mean,
    paired_ordinal,
    two_sample_mean,
    two_sample_ordinal,
    two_values_mean,
)

__all__ = ["Inference", "mean_inference", "ordinal_inference", "MID_P_CAVEAT", "MIN_INFORMATIVE_TASKS", "FEW_INFORMATIVE"]

#: Below this many tasks whose arms differ (with others tied), a paired interval's coverage is approximate.
MIN_INFORMATIVE_TASKS = 10
#: The note then given (``benchmarks/validate_grid.py`` measured the shortfall).
FEW_INFORMATIVE = (
    "only {differ} of {tasks} tasks differ between the arms: with so few informative tasks no interval (this one, "
    "a t-interval or a bootstrap) reliably holds its coverage (simulated: 0.80-0.92 at 95% when most tasks always "
    "or never succeed); read the interval as approximate, and add tasks"
)

#: What a mid-p value is and is not, said wherever one is given.
MID_P_CAVEAT = (
    "mid-p value (ties at the observed statistic count half): less conservative with few tasks, but not a "
    "valid level-alpha test (its size can exceed alpha); use it to read the evidence, not to gate a release"
)


@dataclass(frozen=True)
class Inference:
    """The p-value and interval of one effect, from one studentized permutation distribution."""

    effect: float
    se: float
    pvalue: float
    low: float
    high: float
    exact: bool
    n_permutations: float
    smallest_pvalue: float
    test_words: str
    ci_words: str
    notes: tuple[str, ...]


def _scheme(data: Any) -> tuple[bool, str]:
    d = data.design
    exact = d.n_permutations(limit=data.n_resamples) is not None
    what = {
        "paired": "sign flips of whole tasks",
        "clustered": "whole tasks reassigned between arms",
        "independent": "runs permuted between arms",
    }[d.kind]
    how = f"exact, all {d.n_permutations(limit=data.n_resamples)}" if exact else f"Monte Carlo, {data.n_resamples} resamples"
    return exact, f"{what}; {how}"


def mean_inference(data: Any, summaries: np.ndarray, *, test: bool, mid_p: bool, bounds: tuple[float, float] | None) -> Inference:
    """Studentized permutation test and inverted interval of the task-averaged difference of ``summaries``."""
    d = data.design
    if isinstance(d, CountDesign) and len(d.levels) == 2:
        st = two_values_mean(d)
        words = "runs permuted between arms; exact: the hypergeometric law of the candidate's count"
    elif d.kind == "paired":
        diff = summaries[d.cand_cells] - summaries[d.base_cells]
        exact, words = _scheme(data)
        origin = float(np.max(np.abs(summaries[np.isfinite(summaries)]), initial=0.0))
        score = (summaries[d.cand_cells] + summaries[d.base_cells]) / 2
        st = paired_mean(d, diff, data.n_resamples, data.rng, exact=exact, origin=origin, score=score)
        words += "; ties between flips broken by the tasks' mean over both arms"
        differ = int(np.sum(np.abs(diff) > 1e-12 * max(float(np.abs(diff).max()), 1e-300)))
        why = f"only {differ} of {len(diff)} tasks differ between the arms" if differ < len(diff) else f"{len(diff)} tasks"
        inf = _finish(data, st, f"task-level t statistic; {words}", test=test, mid_p=mid_p, bounds=bounds, why=why)
        if 0 < differ < min(len(diff), MIN_INFORMATIVE_TASKS):
            inf = dataclasses.replace(inf, notes=inf.notes + (FEW_INFORMATIVE.format(differ=differ, tasks=len(diff)),))
        return inf
    else:
        exact, words = _scheme(data)
        st = two_sample_mean(d, summaries, data.n_resamples, data.rng, exact=exact)
    return _finish(data, st, f"Welch-studentized difference; {words}", test=test, mid_p=mid_p, bounds=bounds)


def ordinal_inference(data: Any, shares: np.ndarray, *, mid_p: bool) -> Inference:
    """Studentized permutation test and inverted interval of Cliff's delta; ``shares``: cells x levels."""
    d = data.design
    exact, words = _scheme(data)
    if d.kind == "paired":
        st = paired_ordinal(d, shares[d.base_cells], shares[d.cand_cells], data.n_resamples, data.rng, exact=exact)
    else:
        st = two_sample_ordinal(d, shares, data.n_resamples, data.rng, exact=exact)
    return _finish(data, st, f"delta over its delta-method standard error; {words}", test=True, mid_p=mid_p, bounds=(-1.0, 1.0))


def _finish(
    data: Any, st: Studentized, words: str, *, test: bool, mid_p: bool, bounds: tuple[float, float] | None, why: str | None = None
) -> Inference:
    null = st.null
    alpha = alpha_of(data.confidence_level)
    if isinstance(null, ShiftNull):
        p = null.pvalue(data.alternative, mid_p=mid_p) if test else float("nan")
        low, high = null.interval(data.confidence_level)
        smallest = null.smallest_pvalue(data.alternative)
    else:
        p = null.pvalue(st.t, data.alternative, mid_p=mid_p) if test else float("nan")
        low, high = null.interval(st.effect, st.se, data.confidence_level)
        smallest = null.smallest_pvalue(data.alternative)
    if bounds is not None:
        low = max(low, bounds[0]) if not np.isnan(low) else low
        high = min(high, bounds[1]) if not np.isnan(high) else high
    notes = []
    constant = st.se == 0 and st.effect == 0 and _one_value(null)
    if constant:
        notes.append("every unit has the same value in both arms: nothing varies, so the interval is the single point 0")
    elif test and smallest >= alpha and not any("smallest attainable p-value" in n for n in data.notes):
        notes.append(
            f"with these data the smallest attainable p-value is {smallest:.3g} ({why or _why_discrete(data)}): "
            f"no difference can be significant at {alpha:g} by this test; add tasks"
        )
    if st.se == 0 and not constant and np.isfinite(low) and low == high:
        notes.append("the standard error is 0 (every unit shows the same difference): the interval has no width")
    if mid_p and test:
        notes.append(MID_P_CAVEAT + "; the interval is the exact test's")
    test_words = f"studentized permutation test ({words}{'; mid-p' if mid_p else ''})" if test else ""
    ci_words = "interval: the effects this test does not reject (test inversion)" if test else (
        f"interval: the effects the studentized permutation test ({words}) does not reject (test inversion)"
    )
    return Inference(st.effect, st.se, p, low, high, null.exact, null.size, smallest, test_words, ci_words, tuple(notes))


def _one_value(null: Any) -> bool:
    """Whether every permutation gives the same statistic (all values tied)."""
    if isinstance(null, ShiftNull):
        return bool(np.all(null.a == null.a[0]))
    return len(null.values) == 1


def _why_discrete(data: Any) -> str:
    return f"{data.design.label}: the permutation distribution has few distinct values"
