"""The closed-form power of a :class:`~agentab.power._arguments.Question`, and the runs it needs.

Every kind reduces to ``r``, the effect over the standard error of its test
statistic with one independent run per arm (:func:`ratio_per_root_n`); the
power of ``n`` effective runs per arm (runs over the design effect) is then
that of a z-test (a t-test for continuous metrics) with mean ``r sqrt(n)``
(:func:`formula_power`), and :func:`solve_runs` inverts it. See
:mod:`agentab.power.formulas` for the approximation of each kind.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from agentab._vocabulary import quantile
from agentab.errors import PowerError
from agentab.power._answers import effect_text
from agentab.power._arguments import Question
from agentab.stats import power as core

__all__ = ["MAX_RUNS", "candidate_shares", "check_direction", "formula_power", "ordinal_log_or", "ratio_per_root_n",
           "solve_runs"]

#: Most runs per arm a sample size is searched up to.
MAX_RUNS = 10**8


def ordinal_log_or(q: Question, effect: Any) -> float:
    """The proportional-odds log odds ratio of an ordinal effect (candidate shares: the one with equal Cliff's delta)."""
    if not isinstance(effect, np.ndarray):
        return math.log(effect)
    log_or = core.log_odds_for_delta(q.baseline, float(core.cliff_delta(q.baseline, effect)))
    if not math.isfinite(log_or):
        raise PowerError("effect: no proportional-odds shift of the baseline reaches the candidate shares' Cliff's delta")
    return log_or


def candidate_shares(q: Question, effect: Any) -> np.ndarray:
    """The candidate's level shares: as given, or the baseline's shifted by the odds ratio ``effect``."""
    if isinstance(effect, np.ndarray):
        return effect
    return core.po_shift(q.baseline, math.log(effect))


def ratio_per_root_n(q: Question, effect: Any) -> float:
    """Effect / standard error of the test statistic with one independent run per arm (signed: + = candidate larger).

    The formula power at ``n`` effective runs per arm is ``normal_power(r * sqrt(n))``.
    """
    if q.kind == "binary":
        h = 2 * math.asin(math.sqrt(q.baseline + effect)) - 2 * math.asin(math.sqrt(q.baseline))
        return h / math.sqrt(2.0)  # Cohen's h; var(h_hat) = 1/n1 + 1/n2
    if q.kind == "ordinal":
        cand = candidate_shares(q, effect)
        if q.method == "noether":
            ps = (float(core.cliff_delta(q.baseline, cand)) + 1.0) / 2.0
            return (ps - 0.5) * math.sqrt(6.0)  # N = (z + z)^2 / (12 c (1 - c) (PS - 1/2)^2), N = 2n, c = 1/2
        pbar = (q.baseline + cand) / 2.0
        return ordinal_log_or(q, effect) * math.sqrt(2.0 * (1.0 - np.sum(pbar**3)) / 12.0)
    if q.kind == "continuous":
        return effect / math.sqrt(2.0)
    xq, dens = quantile(q.baseline, q.quantile), core.quantile_density(q.baseline, q.quantile)
    if not math.isfinite(dens):
        raise PowerError(
            f"{q.kind}: the baseline's p{q.quantile * 100:g} sits on a run of tied values, so its density is undefined; "
            "use method='simulation'"
        )
    var1 = q.quantile * (1 - q.quantile) * (1.0 + (1.0 + effect) ** 2) / dens**2
    return effect * xq / math.sqrt(var1)


def formula_power(q: Question, effect: Any, runs: Any) -> Any:
    """Formula power at ``runs`` per arm (array), after the design effect."""
    n_eff = np.asarray(runs, dtype=float) / q.design_effect
    r = ratio_per_root_n(q, effect)
    if q.kind == "continuous":
        # Degrees of freedom of the effective sample (Kish): seeds at ICC > 0 count as n / design effect runs.
        return core.t_power(r * np.sqrt(n_eff), np.maximum(2 * n_eff - 2, 1.0), q.alpha, q.alternative)
    return core.normal_power(r * np.sqrt(n_eff), q.alpha, q.alternative)


def check_direction(q: Question, effect: Any) -> None:
    """Refuse a one-sided question whose effect goes the other way."""
    sign = ratio_per_root_n(q, effect)
    if (q.alternative == "greater" and sign < 0) or (q.alternative == "less" and sign > 0):
        raise PowerError(
            f"alternative={q.alternative!r} tests for a {'rise' if q.alternative == 'greater' else 'fall'}, "
            f"but effect {effect_text(q.kind, effect)} goes the other way"
        )


def solve_runs(q: Question, effect: Any, target: float) -> float:
    """Independent runs per arm (unrounded, before the design effect) at which the formula power is ``target``."""
    from scipy.optimize import brentq

    plain = replace(q, seeds=1, icc=0.0)

    def gap(log_n: float) -> float:
        return float(formula_power(plain, effect, math.exp(log_n))) - target

    lo, hi = math.log(2.0), math.log(float(MAX_RUNS))
    at_lo, at_hi = gap(lo), gap(hi)
    if at_lo >= 0:
        return 2.0
    if at_hi < 0:
        raise PowerError(f"no sample size up to {MAX_RUNS:,} runs per arm reaches power {target:g}: the effect is too small")
    if not (math.isfinite(at_lo) and math.isfinite(at_hi)):  # brentq needs a sign change, not a NaN
        raise PowerError(f"the {q.method} formula's power of effect {effect_text(q.kind, effect)} is undefined: "
                         "no sample size can be solved for")
    return math.exp(brentq(gap, lo, hi, xtol=1e-12))
