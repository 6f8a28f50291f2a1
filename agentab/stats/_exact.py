"""Exact permutation p-values: the hypergeometric law of a two-valued metric, and sign flips of integer task sums.

Used by :mod:`agentab.stats.two_sample` instead of Monte Carlo resampling wherever the permutation
distribution is known in closed form or by a small dynamic programme.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentab.stats._design import CountDesign
from agentab.stats._resampling import combine_tails

__all__ = ["MAX_DP_SUPPORT", "_integer_task_differences", "_hypergeometric_pvalue", "_sign_flip_exact_pvalue"]


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
