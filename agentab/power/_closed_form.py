"""The closed-form power of a :class:`~agentab.power._arguments.Question`, and the runs it needs.

Every kind reduces to ``r``, the effect over the standard error of its test
statistic with one independent run per arm (:func:`ratio_per_root_n`); the
power of ``n`` effective runs per arm (runs over the design effect) is then
that of a z-test (a t-test for continuous metrics) with mean ``r sqrt(n)``
(:func:`formula_power`), and :func:`solve_runs` inverts it. Paired designs
(``q.paired``): continuous metrics take the paired t-test on the tasks'
differences, ``r = d_z`` (:func:`agentab.stats.power.paired_d`) with
``tasks - 1`` degrees of freedom; binary metrics McNemar's test by Connor's
(1987) formula (:func:`agentab.stats.power.connor_power`), whose null and
alternative variances differ, so ``r`` only gives its sign. See
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

__all__ = ["MAX_RUNS", "candidate_shares", "check_direction", "formula_power", "ordinal_log_or", "paired_tasks",
           "ratio_per_root_n", "solve_runs"]

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
    if q.paired:
        if q.kind == "binary":
            return effect / math.sqrt(q.discordant)  # the sign, and the null's standardised effect
        return float(core.paired_d(effect, q.correlation))
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
    if q.paired and q.kind == "binary":
        return core.connor_power(effect, q.discordant, n_eff, q.alpha, q.alternative)
    r = ratio_per_root_n(q, effect)
    if q.paired:  # the paired t-test on the tasks' differences of means
        tasks = np.asarray(runs, dtype=float) / q.seeds
        return core.t_power(r * np.sqrt(n_eff), np.maximum(tasks - 1, 1.0), q.alpha, q.alternative)
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
    if q.paired and q.kind == "binary":
        return _connor_runs(q, effect, target)

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


def _connor_runs(q: Question, effect: float, target: float) -> float:
    """Pairs (runs per arm before the design effect, unrounded) by Connor's closed form; at least 2."""
    za, zb = core.critical_value(q.alpha, q.alternative), core.z_quantile(target)
    if za * math.sqrt(q.discordant) + zb * math.sqrt(q.discordant - effect**2) <= 0:
        return 2.0  # the target is below the power of no pairs at all
    n = core.connor_pairs(effect, q.discordant, q.alpha, target, q.alternative)
    if n > MAX_RUNS:
        raise PowerError(f"no sample size up to {MAX_RUNS:,} pairs reaches power {target:g}: the effect is too small")
    return max(2.0, n)


def paired_tasks(q: Question, exact: float, target: float) -> int:
    """Fewest whole tasks of a paired design reaching ``target``: ``exact`` independent pairs after the design
    effect, then one task more while the t-test's fewer degrees of freedom (seeds > 1) leave it short."""
    tasks = max(2, math.ceil(exact * q.design_effect / q.seeds - 1e-9))
    while tasks < MAX_RUNS and float(formula_power(q, q.effect, tasks * q.seeds)) < target:
        tasks += 1
    return tasks
