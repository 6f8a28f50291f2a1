"""How many runs an agent experiment needs: power, sample size and minimum detectable effect.

Three functions answer the three questions with the same arguments, as
statsmodels' ``solve_power`` does for whichever argument is missing:

- :func:`sample_size` -- runs (and tasks) per arm to reach a power;
- :func:`power` -- the power of a given number of runs per arm;
- :func:`mde` -- the smallest effect a given number of runs detects;

and :func:`plan` answers them from pilot runs (variances, the intra-task
correlation and the level or cost distribution measured on the pilot), with
the trade-off between tasks and seeds per task.

What ``effect`` and ``baseline`` mean, per ``kind``:

=============  ==================================  ============================================
kind           baseline                            effect
=============  ==================================  ============================================
binary         baseline success rate               absolute change (0.50 -> 0.60 is 0.10)
ordinal        baseline level shares (worst first) proportional odds ratio (or candidate shares)
continuous     (not used)                          standardised difference (Cohen's d)
cost, count    a pilot sample of the metric        relative change of the ``quantile`` (-0.2)
=============  ==================================  ============================================

Methods (``method=None`` takes the first):

- binary: ``"arcsine"`` (Cohen's h, as statsmodels' ``NormalIndPower`` with
  ``proportion_effectsize``), ``"simulation"`` (agentab's own test on
  simulated experiments);
- ordinal: ``"whitehead"`` (proportional odds; Whitehead 1993), ``"noether"``
  (Wilcoxon-Mann-Whitney; Noether 1987, no tie correction), ``"simulation"``
  (agentab's permutation test of Cliff's delta on simulated experiments);
- continuous: ``"t"`` (two-sample t, as statsmodels' ``TTestIndPower``);
- cost, count: ``"asymptotic"`` (the quantile's large-sample variance
  ``q (1 - q) / (n f(x_q)^2)`` with the density estimated from the pilot),
  ``"simulation"`` (the pilot's empirical distribution, the candidate's
  runs multiplied by ``1 + effect``, agentab's quantile permutation test).

Runs of one task are correlated: with ``seeds_per_task`` m and intra-task
correlation ``icc``, the variance of an arm's mean grows by the design
effect ``1 + (m - 1) icc`` (Kish 1965, *Survey Sampling*, sec. 5.4), so the
runs an experiment needs are the independent-run answer times the design
effect, rounded up to whole tasks.

References
----------
- Cohen, J. (1988). *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.
- Whitehead, J. (1993). Sample size calculations for ordered categorical data.
  *Statistics in Medicine* 12:2257-2271.
- Noether, G. E. (1987). Sample size determination for some common
  nonparametric tests. *JASA* 82:645-647.
- Kish, L. (1965). *Survey Sampling*. Wiley.
"""

from __future__ import annotations

import html
import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from agentab.errors import PowerError, StatsWarning
from agentab.stats import _power as core

__all__ = ["MinimumEffect", "SampleSize", "mde", "power", "sample_size"]

KINDS = ("binary", "ordinal", "continuous", "cost", "count")
METHODS = {
    "binary": ("arcsine", "simulation"),
    "ordinal": ("whitehead", "noether", "simulation"),
    "continuous": ("t",),
    "cost": ("asymptotic", "simulation"),
    "count": ("asymptotic", "simulation"),
}
ALTERNATIVES = ("two-sided", "larger", "smaller")
#: scipy's and agentab.stats' names for the one-sided alternatives.
_ALIASES = {"greater": "larger", "less": "smaller"}
_MAX_RUNS = 10**8


class _Text:
    """``str()`` and Jupyter display from the result's ``_lines()``."""

    def _lines(self) -> list[str]:
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _repr_html_(self) -> str:
        return "<div>" + "".join(f"<div>{html.escape(line)}</div>" for line in self._lines()) + "</div>"


@dataclass(frozen=True)
class SampleSize(_Text):
    """Runs per arm for a target power, or the power of given runs.

    Attributes
    ----------
    kind, effect, method, alpha, alternative
        The question as asked (``method`` says how it was answered).
    runs_per_arm : int
        Runs in each arm (whole tasks: ``tasks_per_arm * seeds_per_task``
        for :func:`sample_size`; as given for :func:`power`).
    tasks_per_arm, seeds_per_task : int
    power : float
        The power achieved by ``runs_per_arm`` (simulated for ``method="simulation"``).
    design_effect : float
        ``1 + (seeds_per_task - 1) icc``.
    exact_runs : float
        Independent runs per arm the formula asks for before rounding up and
        before the design effect (NaN for :func:`power`).
    mc_se : float or None
        Monte Carlo standard error of a simulated power.
    notes : tuple of str
    """

    kind: str
    effect: Any
    runs_per_arm: int
    tasks_per_arm: int
    seeds_per_task: int
    power: float
    method: str
    alpha: float
    alternative: str
    design_effect: float = 1.0
    exact_runs: float = math.nan
    mc_se: float | None = None
    notes: tuple[str, ...] = ()

    def _lines(self) -> list[str]:
        mc = f" (Monte Carlo s.e. {self.mc_se:.3f})" if self.mc_se is not None else ""
        lines = [
            f"{self.kind} metric, effect {_effect_text(self.kind, self.effect)}, alpha {self.alpha:g} ({self.alternative}), "
            f"method {self.method}",
            f"{self.runs_per_arm:,} runs per arm = {self.tasks_per_arm:,} tasks x {self.seeds_per_task} seed(s) per task"
            f" (design effect {self.design_effect:.2f})",
            f"power {self.power:.3f}{mc}",
        ]
        return lines + [f"note: {n}" for n in self.notes]


@dataclass(frozen=True)
class MinimumEffect(_Text):
    """The smallest effect that given runs per arm detect with the target power.

    ``effect`` is on the kind's scale (see the module docstring), in the
    direction of the alternative (an improvement for ``"two-sided"``: a
    higher rate or level, a lower cost); None when no effect in range reaches
    the power.
    """

    kind: str
    effect: float | None
    runs_per_arm: int
    tasks_per_arm: int
    seeds_per_task: int
    power: float
    method: str
    alpha: float
    alternative: str
    design_effect: float = 1.0
    notes: tuple[str, ...] = ()

    def _lines(self) -> list[str]:
        shown = "none in range" if self.effect is None else _effect_text(self.kind, self.effect)
        lines = [
            f"{self.kind} metric, {self.runs_per_arm:,} runs per arm = {self.tasks_per_arm:,} tasks x "
            f"{self.seeds_per_task} seed(s) (design effect {self.design_effect:.2f}), alpha {self.alpha:g} "
            f"({self.alternative}), method {self.method}",
            f"minimum detectable effect at power {self.power:.2f}: {shown}",
        ]
        return lines + [f"note: {n}" for n in self.notes]


def _effect_text(kind: str, effect: Any) -> str:
    if effect is None:
        return "none"
    if isinstance(effect, np.ndarray):
        return "candidate shares " + "/".join(f"{v:.2f}" for v in effect)
    if kind == "binary":
        return f"{effect:+.3f} (absolute)"
    if kind == "ordinal":
        return f"odds ratio {effect:.3g}"
    if kind == "continuous":
        return f"d = {effect:+.3g}"
    return f"{effect:+.1%} of the quantile"


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class _Question:
    """A validated power question (one per call)."""

    kind: str
    effect: Any  # float, or candidate shares for ordinal
    baseline: Any  # float (binary), shares (ordinal), sorted sample (cost), None
    alpha: float
    seeds: int
    icc: float
    alternative: str
    method: str
    quantile: float
    notes: tuple[str, ...] = ()

    @property
    def design_effect(self) -> float:
        return 1.0 + (self.seeds - 1) * self.icc


def _check_probability(value: Any, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise PowerError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < value < 1.0:
        raise PowerError(f"{name} must be in (0, 1), got {value:g}")
    return value


def _check_number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise PowerError(f"{name} must be a number, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise PowerError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(value):
        raise PowerError(f"{name} must be finite, got {value!r}")
    return value


def _check_seeds(seeds: Any) -> int:
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise PowerError(f"seeds_per_task must be a whole number >= 1, got {seeds!r}")
    return int(seeds)


def _check_shares(shares: Any, name: str, one_level: bool = False) -> np.ndarray:
    try:
        p = np.asarray(shares, dtype=float)
    except (TypeError, ValueError):
        raise PowerError(f"{name} must be level shares (numbers summing to 1), got {shares!r}") from None
    if p.ndim != 1 or len(p) < 2:
        raise PowerError(f"{name} must list the shares of at least two levels, got {shares!r}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise PowerError(f"{name} must be non-negative shares, got {shares!r}")
    if abs(p.sum() - 1.0) > 1e-6:
        raise PowerError(f"{name} must sum to 1, got {p.sum():.6g}")
    if np.count_nonzero(p) < 2 and not one_level:
        raise PowerError(f"{name} puts every run on one level: no ordinal effect can be seen")
    return p / p.sum()


def _question_iv(
    kind: Any,
    effect: Any,
    baseline: Any,
    alpha: Any,
    seeds_per_task: Any,
    icc: Any,
    alternative: Any,
    method: Any,
    quantile: Any,
    *,
    effect_needed: bool = True,
) -> _Question:
    """Validate the arguments shared by :func:`sample_size`, :func:`power` and :func:`mde`."""
    if kind not in KINDS:
        raise PowerError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    alpha = _check_probability(alpha, "alpha")
    seeds = _check_seeds(seeds_per_task)
    icc = _check_number(icc, "icc")
    if not 0.0 <= icc <= 1.0:
        raise PowerError(f"icc must be in [0, 1], got {icc:g}")
    alternative = _ALIASES.get(alternative, alternative)
    if alternative not in ALTERNATIVES:
        raise PowerError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
    methods = METHODS[kind]
    method = methods[0] if method is None else method
    if method not in methods:
        raise PowerError(f"method for {kind} must be one of {', '.join(methods)}, got {method!r}")
    quantile = _check_probability(quantile, "quantile")
    notes: list[str] = []

    if kind == "binary":
        if baseline is None:
            raise PowerError("binary: give baseline=, the baseline success rate")
        baseline = _check_probability(baseline, "baseline (success rate)")
    elif kind == "ordinal":
        if baseline is None:
            raise PowerError("ordinal: give baseline=, the baseline's level shares (worst level first)")
        baseline = _check_shares(baseline, "baseline")
    elif kind == "continuous":
        if baseline is not None:
            raise PowerError("continuous: effect is Cohen's d, so baseline= is not used; leave it out")
    else:
        if baseline is None:
            raise PowerError(f"{kind}: give baseline=, a pilot sample of the metric (one value per run)")
        try:
            sample = np.asarray(baseline, dtype=float).ravel()
        except (TypeError, ValueError):
            raise PowerError(f"{kind}: baseline must be a pilot sample of numbers (one per run), got {baseline!r:.80}") from None
        if not np.all(np.isfinite(sample)):
            raise PowerError(f"{kind}: the baseline sample has {int(np.sum(~np.isfinite(sample)))} missing or infinite values")
        if len(sample) < 20:
            raise PowerError(f"{kind}: the baseline sample has {len(sample)} runs; at least 20 are needed to estimate a quantile's density")
        if np.any(sample < 0):
            raise PowerError(f"{kind}: the baseline sample has negative values; cost and counts are >= 0")
        baseline = np.sort(sample)
        from agentab.power.planning import _check_untied

        _check_untied(kind, quantile, *core.quantile_tie(baseline, quantile), "baseline sample")
        if len(baseline) < 200:
            notes.append(
                f"the density at the p{quantile * 100:g} of {len(baseline)} runs is uncertain (the answer can be off by a "
                "factor of 2 or more); agentab.power.plan reads a pilot's tasks and all its runs"
            )

    if effect_needed:
        effect = _effect_iv(kind, effect, baseline)
    return _Question(kind, effect, baseline, alpha, seeds, icc, alternative, method, quantile, tuple(notes))


def _effect_iv(kind: str, effect: Any, baseline: Any) -> Any:
    if kind == "ordinal" and np.ndim(effect) == 1:
        cand = _check_shares(effect, "effect (candidate shares)", one_level=True)
        if len(cand) != len(baseline):
            raise PowerError(f"effect has {len(cand)} level shares, baseline {len(baseline)}")
        if abs(float(core.cliff_delta(baseline, cand))) < 1e-12:
            raise PowerError("effect: the candidate shares are no better or worse than the baseline (Cliff's delta 0)")
        return cand
    effect = _check_number(effect, "effect")
    if kind == "binary":
        if effect == 0 or abs(effect) >= 1:
            raise PowerError(
                f"effect must not be zero (it is the change in success rate to detect, non-zero and within (-1, 1)), "
                f"got {effect:g}"
            )
        if baseline is not None and not 0.0 <= baseline + effect <= 1.0:
            raise PowerError(f"baseline {baseline:g} + effect {effect:g} is not a success rate in [0, 1]")
    elif kind == "ordinal":
        if effect <= 0 or effect == 1:
            raise PowerError(f"effect for ordinal is an odds ratio > 0 and != 1, got {effect:g}")
    elif kind == "continuous":
        if effect == 0:
            raise PowerError("effect must not be zero (it is Cohen's d to detect)")
    else:
        if effect == 0 or effect <= -1:
            raise PowerError(f"effect for {kind} is a relative change of the quantile, > -1 and != 0 (e.g. -0.2), got {effect:g}")
    return effect


def _target_iv(value: Any) -> float:
    return _check_probability(value, "power")


def _fixed_seed(seed: Any) -> int:
    """An integer seed from ``seed`` (drawn once from a Generator, SeedSequence or fresh entropy)."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return int(seed)
    return int(_rng(seed).integers(2**63))


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- formulas


def _ordinal_log_or(q: _Question, effect: Any) -> float:
    """The proportional-odds log odds ratio of an ordinal effect (candidate shares: the one with equal Cliff's delta)."""
    if not isinstance(effect, np.ndarray):
        return math.log(effect)
    log_or = core.log_odds_for_delta(q.baseline, float(core.cliff_delta(q.baseline, effect)))
    if not math.isfinite(log_or):
        raise PowerError("effect: no proportional-odds shift of the baseline reaches the candidate shares' Cliff's delta")
    return log_or


def _candidate_shares(q: _Question, effect: Any) -> np.ndarray:
    if isinstance(effect, np.ndarray):
        return effect
    return core.po_shift(q.baseline, math.log(effect))


def _ratio_per_root_n(q: _Question, effect: Any) -> float:
    """Effect / standard error of the test statistic with one independent run per arm (signed: + = candidate larger).

    The formula power at ``n`` effective runs per arm is ``normal_power(r * sqrt(n))``.
    """
    if q.kind == "binary":
        h = 2 * math.asin(math.sqrt(q.baseline + effect)) - 2 * math.asin(math.sqrt(q.baseline))
        return h / math.sqrt(2.0)  # Cohen's h; var(h_hat) = 1/n1 + 1/n2
    if q.kind == "ordinal":
        cand = _candidate_shares(q, effect)
        if q.method == "noether":
            ps = (float(core.cliff_delta(q.baseline, cand)) + 1.0) / 2.0
            return (ps - 0.5) * math.sqrt(6.0)  # N = (z + z)^2 / (12 c (1 - c) (PS - 1/2)^2), N = 2n, c = 1/2
        pbar = (q.baseline + cand) / 2.0
        return _ordinal_log_or(q, effect) * math.sqrt(2.0 * (1.0 - np.sum(pbar**3)) / 12.0)
    if q.kind == "continuous":
        return effect / math.sqrt(2.0)
    xq, dens = _quantile_and_density(q)
    if not math.isfinite(dens):
        raise PowerError(
            f"{q.kind}: the baseline's p{q.quantile * 100:g} sits on a run of tied values, so its density is undefined; "
            "use method='simulation'"
        )
    var1 = q.quantile * (1 - q.quantile) * (1.0 + (1.0 + effect) ** 2) / dens**2
    return effect * xq / math.sqrt(var1)


def _quantile_and_density(q: _Question) -> tuple[float, float]:
    return float(core.weighted_quantiles(q.baseline, None, [q.quantile])[0]), core.quantile_density(q.baseline, q.quantile)


def _formula_power(q: _Question, effect: Any, runs: Any) -> Any:
    """Formula power at ``runs`` per arm (array), after the design effect."""
    n_eff = np.asarray(runs, dtype=float) / q.design_effect
    r = _ratio_per_root_n(q, effect)
    if q.kind == "continuous":
        # Degrees of freedom of the effective sample (Kish): seeds at ICC > 0 count as n / design effect runs.
        return core.t_power(r * np.sqrt(n_eff), np.maximum(2 * n_eff - 2, 1.0), q.alpha, q.alternative)
    return core.normal_power(r * np.sqrt(n_eff), q.alpha, q.alternative)


def _check_direction(q: _Question, effect: Any) -> None:
    sign = _ratio_per_root_n(q, effect)
    if (q.alternative == "larger" and sign < 0) or (q.alternative == "smaller" and sign > 0):
        raise PowerError(
            f"alternative={q.alternative!r} tests for a {'rise' if q.alternative == 'larger' else 'fall'}, "
            f"but effect {_effect_text(q.kind, effect)} goes the other way"
        )


def _solve_runs(q: _Question, effect: Any, target: float) -> float:
    """Independent runs per arm (unrounded, before the design effect) at which the formula power is ``target``."""
    from scipy.optimize import brentq

    plain = replace(q, seeds=1, icc=0.0)

    def gap(log_n: float) -> float:
        return float(_formula_power(plain, effect, math.exp(log_n))) - target

    lo, hi = math.log(2.0), math.log(float(_MAX_RUNS))
    if gap(lo) >= 0:
        return 2.0
    if gap(hi) < 0:
        raise PowerError(f"no sample size up to {_MAX_RUNS:,} runs per arm reaches power {target:g}: the effect is too small")
    return math.exp(brentq(gap, lo, hi, xtol=1e-12))


# --------------------------------------------------------------------------- simulation


def _simulated_power(q: _Question, effect: Any, tasks: int, n_sims: int, n_resamples: int, seed: Any) -> tuple[float, float]:
    """Rejection rate of agentab's test on ``n_sims`` simulated experiments with ``tasks`` x seeds runs per arm."""
    if tasks < 2:
        raise PowerError(f"simulation needs at least 2 tasks per arm; {tasks * q.seeds} runs of {q.seeds} seeds is {tasks}")
    rng = _rng(seed)
    m = q.seeds
    runs = tasks * m
    if q.kind == "ordinal" and (m == 1 or q.icc == 0):
        cand = _candidate_shares(q, effect)
        rate, _ = core.ordinal_power_counts(
            q.baseline, cand, runs, runs, n_sims=n_sims, n_resamples=n_resamples, alpha=q.alpha,
            alternative=q.alternative, rng=rng,
        )
        return rate, math.sqrt(rate * (1 - rate) / n_sims)
    if q.kind in ("cost", "count") and m > 1 and q.icc > 0:
        raise PowerError(
            f"{q.kind}: simulating seeds with icc > 0 needs the pilot's tasks; use agentab.power.plan() with the pilot runs"
        )
    with warnings.catch_warnings():  # each simulated experiment's caveats are not the user's
        warnings.simplefilter("ignore", StatsWarning)
        rate = _simulated_rejections(q, effect, tasks, n_sims, n_resamples, rng)
    return rate, math.sqrt(rate * (1 - rate) / n_sims)


def _simulated_rejections(q: _Question, effect: Any, tasks: int, n_sims: int, n_resamples: int,
                          rng: np.random.Generator) -> float:
    """Share of ``n_sims`` experiments simulated under ``q`` that agentab's test rejects."""
    from agentab import stats

    m = q.seeds
    runs = tasks * m
    alt = core._scipy_alternative(q.alternative)
    strata = np.repeat(np.arange(tasks), m)
    if q.kind == "binary":
        base, cand = np.array([1 - q.baseline, q.baseline]), np.array([1 - q.baseline - effect, q.baseline + effect])
    elif q.kind == "ordinal":
        base, cand = q.baseline, _candidate_shares(q, effect)
    levels = np.arange(len(base), dtype=float) if q.kind in ("binary", "ordinal") else None
    rejections = 0
    for _ in range(n_sims):
        if q.kind in ("binary", "ordinal"):
            x = levels[core.task_runs(core.task_shares(base, q.icc, tasks, rng), m, rng)]
            y = levels[core.task_runs(core.task_shares(cand, q.icc, tasks, rng), m, rng)]
            test = stats.rate_difference if q.kind == "binary" else stats.ordinal_superiority
            # One run per task is independent runs: no strata, so agentab takes its count (exact) paths.
            res = test(x, y, x_strata=strata if m > 1 else None, y_strata=strata + tasks if m > 1 else None,
                       paired=False, alternative=alt, n_resamples=n_resamples, rng=rng)
        else:
            x = rng.choice(q.baseline, size=runs)
            y = rng.choice(q.baseline, size=runs) * (1.0 + effect)
            res = stats.quantile_difference(x, y, [q.quantile], alternative=alt, n_resamples=n_resamples, rng=rng)
        p = float(np.atleast_1d(res.pvalue)[0])
        rejections += p < q.alpha
    return rejections / n_sims


def _simulated_runs(q: _Question, effect: Any, target: float, start_runs: float, n_sims: int, n_resamples: int, seed: Any):
    """Tasks per arm reaching ``target`` by simulation: secant steps on the normal scale from the formula's answer,
    then bisection between the closest designs on either side of the target.

    Every evaluation reuses the same seed (common random numbers), so the
    steps follow the power curve rather than its noise.
    """
    seed = _fixed_seed(seed)  # every evaluation starts from the same stream: common random numbers
    z_a = core._crit(q.alpha, q.alternative)
    z_t = core.z_quantile(target)
    tasks = max(2, math.ceil(start_runs * q.design_effect / q.seeds))
    seen: dict[int, tuple[float, float]] = {}
    for _ in range(6):
        if tasks not in seen:
            seen[tasks] = _simulated_power(q, effect, tasks, n_sims, n_resamples, seed)
        got = min(max(seen[tasks][0], 0.02), 0.995)
        z_got = core.z_quantile(got)
        if abs(got - target) < 0.5 * max(seen[tasks][1], 0.005):
            break
        scale = ((z_a + z_t) / max(z_a + z_got, 0.05)) ** 2
        new = max(2, math.ceil(tasks * min(max(scale, 0.25), 4.0)))
        if new == tasks:
            break
        tasks = new
    # Bisect between the largest design below the target and the smallest reaching it (to 1% of the tasks).
    for _ in range(8):
        reached = [t for t, (pw, _) in seen.items() if pw >= target]
        short = [t for t, (pw, _) in seen.items() if pw < target and (not reached or t < min(reached))]
        if not reached or not short:
            break
        lo, hi = max(short), min(reached)
        if hi - lo <= max(1, hi // 100):
            break
        mid = (lo + hi) // 2
        seen[mid] = _simulated_power(q, effect, mid, n_sims, n_resamples, seed)
    reached = [t for t, (pw, _) in seen.items() if pw >= target]
    best = min(reached) if reached else max(seen)
    return best, seen[best]


# --------------------------------------------------------------------------- public functions


def sample_size(
    kind: str,
    effect: Any,
    *,
    baseline: Any = None,
    alpha: float = 0.05,
    power: float = 0.8,
    seeds_per_task: int = 1,
    icc: float = 0.0,
    alternative: str = "two-sided",
    quantile: float = 0.95,
    method: str | None = None,
    n_sims: int = 1000,
    n_resamples: int = 999,
    seed: Any = None,
) -> SampleSize:
    """Runs and tasks per arm needed to detect ``effect`` with the given power.

    Parameters
    ----------
    kind : {"binary", "ordinal", "continuous", "cost", "count"}
    effect : float or array
        The change to detect; its meaning depends on ``kind`` (module docstring).
    baseline : float, array or None
        Baseline success rate (binary), level shares worst-first (ordinal),
        a pilot sample (cost, count); not used for continuous.
    alpha, power : float
        Significance level and target power, both in (0, 1).
    seeds_per_task : int
        Runs of each task per arm.
    icc : float
        Intra-task correlation of the metric, in [0, 1].
    alternative : {"two-sided", "larger", "smaller"}
        "larger" tests for a higher candidate (rate, level, d, quantile).
    quantile : float
        The quantile compared, for cost and count (0.95 = p95).
    method : str, optional
        See the module docstring; None takes the kind's formula.
    n_sims, n_resamples, seed
        Simulation only: simulated experiments, permutations per test, and
        the seed (int, SeedSequence or Generator) of the simulation.

    Returns
    -------
    SampleSize

    Raises
    ------
    PowerError
        Bad arguments (alpha or power outside (0, 1), zero effect, a rate
        outside [0, 1], shares that do not sum to 1, ...).

    Examples
    --------
    >>> from agentab.power import sample_size
    >>> s = sample_size("binary", 0.10, baseline=0.50)
    >>> s.runs_per_arm, round(s.power, 3)
    (388, 0.801)
    >>> sample_size("binary", 0.10, baseline=0.50, seeds_per_task=3, icc=0.3).tasks_per_arm
    207
    """
    target = _target_iv(power)
    q = _question_iv(kind, effect, baseline, alpha, seeds_per_task, icc, alternative, method, quantile)
    _check_direction(q, q.effect)
    formula_q = replace(q, method=METHODS[kind][0]) if q.method == "simulation" else q
    exact = _solve_runs(formula_q, q.effect, target)
    notes = list(q.notes) + _kind_notes(q, target, exact)
    if q.method == "simulation":
        tasks, (achieved, se) = _simulated_runs(q, q.effect, target, exact, n_sims, n_resamples, seed)
        runs = tasks * q.seeds
        notes.append(f"the {formula_q.method} formula asks for {math.ceil(exact * q.design_effect):,} runs per arm")
        return SampleSize(kind, q.effect, runs, tasks, q.seeds, achieved, "simulation", q.alpha, q.alternative,
                          q.design_effect, exact, se, tuple(notes))
    tasks = max(2, math.ceil(exact * q.design_effect / q.seeds - 1e-9))
    runs = tasks * q.seeds
    achieved = float(_formula_power(q, q.effect, runs))
    return SampleSize(kind, q.effect, runs, tasks, q.seeds, achieved, q.method, q.alpha, q.alternative,
                      q.design_effect, exact, None, tuple(notes))


def _kind_notes(q: _Question, target: float, tail: float) -> list[str]:
    """Notes on a sample size: ``tail`` is the independent runs it needs (for cost, at ``q.quantile``)."""
    notes = []
    if q.kind in ("cost", "count") and q.quantile > 0.5 and q.method != "simulation":
        try:
            median = _solve_runs(replace(q, quantile=0.5), q.effect, target)
            notes.append(
                f"p{q.quantile * 100:g} needs {tail / median:.1f}x the runs of the median (p50: "
                f"{math.ceil(median):,} independent runs per arm) for the same relative change"
            )
        except PowerError:
            pass
    if q.kind == "ordinal" and q.method == "noether":
        notes.append("Noether's formula has no correction for ties; with few levels it is conservative")
    if q.kind == "ordinal" and q.method == "whitehead" and isinstance(q.effect, np.ndarray):
        notes.append(f"candidate shares read as odds ratio {math.exp(_ordinal_log_or(q, q.effect)):.3g} (equal Cliff's delta)")
    if q.seeds > 1 and q.icc >= 0.3:
        notes.append(
            f"icc {q.icc:g} is high: each extra seed adds little, and more tasks help far more than more seeds"
        )
    return notes


def _as_runs(n: Any) -> tuple[np.ndarray, bool]:
    scalar = np.ndim(n) == 0
    try:
        runs = np.atleast_1d(np.asarray(n, dtype=float))
    except (TypeError, ValueError):
        raise PowerError(f"n must be runs per arm (a whole number, or a list of them), got {n!r}") from None
    if runs.size == 0 or np.any(~np.isfinite(runs)) or np.any(runs < 2) or np.any(runs != np.round(runs)):
        raise PowerError(f"n must be whole numbers of runs per arm >= 2, got {n!r}")
    return runs.astype(np.int64), scalar


def power(
    kind: str,
    effect: Any,
    n: Any,
    *,
    baseline: Any = None,
    alpha: float = 0.05,
    seeds_per_task: int = 1,
    icc: float = 0.0,
    alternative: str = "two-sided",
    quantile: float = 0.95,
    method: str | None = None,
    n_sims: int = 1000,
    n_resamples: int = 999,
    seed: Any = None,
) -> SampleSize | pd.DataFrame:
    """Power of ``n`` runs per arm to detect ``effect`` (arguments as :func:`sample_size`).

    ``n`` is runs per arm; a list of them gives the power curve as a
    DataFrame with columns ``runs_per_arm``, ``tasks_per_arm``,
    ``seeds_per_task``, ``power``.

    Examples
    --------
    >>> from agentab.power import power
    >>> round(power("continuous", 0.5, 64).power, 3)
    0.801
    >>> power("binary", 0.1, [100, 400], baseline=0.5)["power"].round(3).tolist()
    [0.296, 0.813]
    """
    q = _question_iv(kind, effect, baseline, alpha, seeds_per_task, icc, alternative, method, quantile)
    _check_direction(q, q.effect)
    runs, scalar = _as_runs(n)
    tasks = np.ceil(runs / q.seeds).astype(np.int64)
    se: list[float | None]
    if q.method == "simulation":
        sims = [_simulated_power(q, q.effect, int(t), n_sims, n_resamples, seed) for t in tasks]
        values = [s[0] for s in sims]
        se = [s[1] for s in sims]
    else:
        values = list(np.atleast_1d(_formula_power(q, q.effect, runs)).astype(float))
        se = [None] * len(runs)
    if scalar:
        return SampleSize(kind, q.effect, int(runs[0]), int(tasks[0]), q.seeds, float(values[0]), q.method, q.alpha,
                          q.alternative, q.design_effect, math.nan, se[0], tuple(q.notes))
    return pd.DataFrame(
        {"runs_per_arm": runs, "tasks_per_arm": tasks, "seeds_per_task": q.seeds, "power": np.asarray(values, dtype=float)}
    )


def _effect_range(q: _Question) -> tuple[float, float, Any]:
    """The search interval for an MDE (on a 1-d parameter) and the map from it to ``effect``."""
    up = q.alternative != "smaller"
    if q.kind == "binary":
        p = q.baseline
        return (1e-9, 1 - p) if up else (1e-9, p), (lambda t: t if up else -t)
    if q.kind == "ordinal":
        return (1e-9, 12.0), (lambda t: math.exp(t if up else -t))
    if q.kind == "continuous":
        return (1e-9, 50.0), (lambda t: t if up else -t)
    # cost: an improvement is a fall, so two-sided looks for the smallest fall
    if q.alternative == "larger":
        return (1e-9, 50.0), (lambda t: t)
    return (1e-9, 1 - 1e-9), (lambda t: -t)


def mde(
    kind: str,
    n: Any,
    *,
    baseline: Any = None,
    alpha: float = 0.05,
    power: float = 0.8,
    seeds_per_task: int = 1,
    icc: float = 0.0,
    alternative: str = "two-sided",
    quantile: float = 0.95,
    method: str | None = None,
) -> MinimumEffect | pd.DataFrame:
    """Smallest effect that ``n`` runs per arm detect with the given power (formula methods).

    The direction is the alternative's; for ``"two-sided"`` it is an
    improvement (a higher rate, odds ratio above 1, positive d, a lower cost
    quantile). A list of ``n`` gives a DataFrame (``runs_per_arm``,
    ``tasks_per_arm``, ``seeds_per_task``, ``effect``).

    Examples
    --------
    >>> from agentab.power import mde
    >>> round(mde("binary", 388, baseline=0.5).effect, 3)
    0.1
    >>> round(mde("ordinal", 200, baseline=[0.25, 0.25, 0.25, 0.25]).effect, 2)
    1.65
    """
    from scipy.optimize import brentq

    target = _target_iv(power)
    q = _question_iv(kind, None, baseline, alpha, seeds_per_task, icc, alternative, method, quantile, effect_needed=False)
    if q.method == "simulation":
        raise PowerError("mde uses the formulas; for a simulated answer call power(..., method='simulation') at a few effects")
    runs, scalar = _as_runs(n)
    (lo, hi), to_effect = _effect_range(q)
    found: list[float | None] = []
    for r in runs:
        def gap(t: float, r: int = int(r)) -> float:
            return float(_formula_power(q, to_effect(t), r)) - target

        found.append(to_effect(brentq(gap, lo, hi, xtol=1e-12)) if gap(hi) >= 0 else None)
    tasks = np.ceil(runs / q.seeds).astype(np.int64)
    notes = tuple(q.notes) + (() if found[0] is not None else ("no effect in range reaches the target power",))
    if scalar:
        return MinimumEffect(kind, found[0], int(runs[0]), int(tasks[0]), q.seeds, target, q.method, q.alpha,
                             q.alternative, q.design_effect, notes)
    return pd.DataFrame({"runs_per_arm": runs, "tasks_per_arm": tasks, "seeds_per_task": q.seeds,
                         "effect": np.array([np.nan if f is None else f for f in found])})

