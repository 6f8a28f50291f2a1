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

Paired designs (``design="paired"``: the same tasks in both arms, the usual
benchmark setting; the default ``"independent"`` puts different tasks in the
two arms). ``tasks_per_arm`` is then the number of tasks (pairs), each run in
both arms:

- continuous (method ``"t"``): the paired t-test on the tasks' differences of
  means, as R's ``pwr::pwr.t.test(type="paired")`` and statsmodels'
  ``TTestPower``. ``effect`` is still Cohen's d on the runs' scale (the
  difference of the arms' means over the standard deviation of one run in
  one arm); ``correlation=`` is the correlation rho between the two arms'
  means of a task, over tasks, as measured with the planned
  ``seeds_per_task`` (with one seed: of the two runs of a task). The effect
  size of the test is ``d_z = d / sqrt(2 (1 - rho))`` with one seed per task;
  with ``m`` seeds a task's mean has variance ``sigma^2 (1 + (m - 1) icc) / m``,
  so ``d_z = d sqrt(m / (1 + (m - 1) icc)) / sqrt(2 (1 - rho))``, with
  ``tasks - 1`` degrees of freedom.
- binary (method ``"mcnemar"``): McNemar's test, planned from the discordance
  (Connor 1987): ``discordant=`` is ``psi = p10 + p01``, the share of pairs
  whose outcomes differ, and ``effect`` the difference of the rates
  ``delta`` (the candidate's rate minus the baseline's: the share of pairs
  only the candidate solves minus the share only the baseline solves);
  ``n = (z_{1-a/2} sqrt(psi) + z_{1-b} sqrt(psi - delta^2))^2 / delta^2``
  pairs, and the power is that formula inverted. ``baseline=`` is optional
  and, when given, only checks that the four cells are shares. A pair is one
  run of each arm on a task; with ``m`` seeds per task the ``m`` pairs of a
  task (its j-th run in each arm) count as pairs through the design effect
  ``1 + (m - 1) icc``, where ``icc`` is then the intra-task correlation of the
  pairs' differences (0 counts them as independent pairs: optimistic when
  tasks differ).

The alternative is scipy's ``"two-sided"``, ``"greater"`` (the candidate
higher: rate, level, d, quantile) or ``"less"``; statsmodels' ``"larger"`` and
``"smaller"`` are accepted and read as ``"greater"`` and ``"less"``, and the
results hold scipy's words. The simulation method is seeded (``seed=0`` by
default) and records the seed it used, so every answer is reproducible.

This module holds the three functions; the arguments are checked in
:mod:`~agentab.power._arguments`, the formulas are in
:mod:`~agentab.power._closed_form`, the simulations in
:mod:`~agentab.power._simulation`, the results in :mod:`~agentab.power._answers`.

References
----------
- Cohen, J. (1988). *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.
- Whitehead, J. (1993). Sample size calculations for ordered categorical data.
  *Statistics in Medicine* 12:2257-2271.
- Noether, G. E. (1987). Sample size determination for some common
  nonparametric tests. *JASA* 82:645-647.
- Kish, L. (1965). *Survey Sampling*. Wiley.
- Connor, R. J. (1987). Sample size for testing differences in proportions for
  the paired-sample design. *Biometrics* 43:207-211.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import (
    check_n_resamples,
    check_probability,
    check_whole,
    recorded_seed,
    seed_sequence,
)
from agentab.errors import PowerError
from agentab.power._answers import MinimumEffect, SampleSize
from agentab.power._arguments import METHODS, Question, check_question
from agentab.power._closed_form import (
    MAX_RUNS,
    check_direction,
    formula_power,
    ordinal_log_or,
    paired_tasks,
    solve_runs,
)
from agentab.power._simulation import simulated_power, simulated_tasks

__all__ = ["MinimumEffect", "SampleSize", "mde", "power", "sample_size"]


def _simulation_settings(n_sims: Any, n_resamples: Any, seed: Any) -> tuple[int, int, np.random.SeedSequence]:
    """``n_sims``, ``n_resamples`` and the seed of a simulated answer, checked."""
    return (check_whole(n_sims, "n_sims", 1, PowerError), check_n_resamples(n_resamples, PowerError),
            seed_sequence(seed, PowerError))


def sample_size(
    kind: str,
    effect: Any,
    *,
    baseline: Any = None,
    alpha: float = 0.05,
    power: float = 0.8,
    seeds_per_task: int = 1,
    icc: float = 0.0,
    design: str = "independent",
    correlation: float | None = None,
    discordant: float | None = None,
    alternative: str = "two-sided",
    quantile: float = 0.95,
    method: str | None = None,
    n_sims: int = 1000,
    n_resamples: int = 999,
    seed: Any = 0,
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
        Intra-task correlation of the metric, in [0, 1] (binary paired: of the pairs' differences).
    design : {"independent", "paired"}
        ``"paired"``: the same tasks in both arms (continuous and binary; module docstring).
    correlation : float, optional
        Continuous, paired: the correlation between the arms' task means, in [-1, 1).
    discordant : float, optional
        Binary, paired: the share of pairs (tasks, with one seed) whose outcomes differ, in (0, 1].
    alternative : {"two-sided", "greater", "less"}
        "greater" tests for a higher candidate (rate, level, d, quantile);
        "larger" and "smaller" are read as "greater" and "less".
    quantile : float
        The quantile compared, for cost and count (0.95 = p95).
    method : str, optional
        See the module docstring; None takes the kind's formula.
    n_sims, n_resamples : int
        Simulation only: simulated experiments and permutations per test.
    seed : int, SeedSequence, Generator or None, default 0
        Simulation only: the seed of the simulation. The default 0 makes the answer
        reproducible; None draws fresh entropy. The result records the seed used
        (its ``seed``); passing it back gives the same answer.

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

    A paired design: the same tasks in both arms, with the arms' task means correlated 0.6 (the paired
    t-test, d_z = 0.3 / sqrt(0.8)), or 30% of tasks solved by one arm only (McNemar, Connor 1987):

    >>> sample_size("continuous", 0.3, design="paired", correlation=0.6).tasks_per_arm
    72
    >>> sample_size("binary", 0.10, design="paired", discordant=0.3).tasks_per_arm
    234
    """
    target = check_probability(power, "power", PowerError)
    q = check_question(kind, effect, baseline, alpha, seeds_per_task, icc, alternative, method, quantile,
                       design=design, correlation=correlation, discordant=discordant)
    check_direction(q, q.effect)
    formula_q = replace(q, method=METHODS[q.kind][0]) if q.method == "simulation" else q
    exact = solve_runs(formula_q, q.effect, target)
    notes = list(q.notes) + _kind_notes(q, target, exact)
    if q.method == "simulation":
        n_sims, n_resamples, sequence = _simulation_settings(n_sims, n_resamples, seed)
        tasks, (achieved, se) = simulated_tasks(q, q.effect, target, exact, n_sims, n_resamples, sequence)
        notes.append(f"the {formula_q.method} formula asks for {math.ceil(exact * q.design_effect):,} runs per arm")
        return SampleSize(q.kind, q.effect, tasks * q.seeds, tasks, q.seeds, achieved, "simulation", q.alpha,
                          q.alternative, q.design_effect, exact, se, tuple(notes), recorded_seed(sequence))
    tasks = paired_tasks(q, exact, target) if q.paired else max(2, math.ceil(exact * q.design_effect / q.seeds - 1e-9))
    runs = tasks * q.seeds
    achieved = float(formula_power(q, q.effect, runs))
    return SampleSize(q.kind, q.effect, runs, tasks, q.seeds, achieved, q.method, q.alpha, q.alternative,
                      q.design_effect, exact, None, tuple(notes), None, q.design, q.correlation, q.discordant)


def _kind_notes(q: Question, target: float, tail: float) -> list[str]:
    """Notes on a sample size: ``tail`` is the independent runs it needs (for cost, at ``q.quantile``)."""
    notes = []
    if q.kind in ("cost", "count") and q.quantile > 0.5 and q.method != "simulation":
        try:
            median = solve_runs(replace(q, quantile=0.5), q.effect, target)
            notes.append(
                f"p{q.quantile * 100:g} needs {tail / median:.1f}x the runs of the median (p50: "
                f"{math.ceil(median):,} independent runs per arm) for the same relative change"
            )
        except PowerError:
            pass
    if q.kind == "ordinal" and q.method == "noether":
        notes.append("Noether's formula has no correction for ties; with few levels it is conservative")
    if q.kind == "ordinal" and q.method == "whitehead" and isinstance(q.effect, np.ndarray):
        notes.append(f"candidate shares read as odds ratio {math.exp(ordinal_log_or(q, q.effect)):.3g} (equal Cliff's delta)")
    if q.paired and q.seeds > 1:
        notes.append(f"correlation {q.correlation:g} is read as that of the arms' task means over {q.seeds} seeds"
                     if q.kind == "continuous" else
                     f"a task's {q.seeds} pairs of runs count through the design effect, icc {q.icc:g} being that "
                     "of the pairs' differences (0: as independent pairs)")
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
    if np.any(runs > MAX_RUNS):
        raise PowerError(f"n must be at most {MAX_RUNS:,} runs per arm (as sample_size searches), got {float(runs.max()):g}")
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
    design: str = "independent",
    correlation: float | None = None,
    discordant: float | None = None,
    alternative: str = "two-sided",
    quantile: float = 0.95,
    method: str | None = None,
    n_sims: int = 1000,
    n_resamples: int = 999,
    seed: Any = 0,
) -> SampleSize | pd.DataFrame:
    """Power of ``n`` runs per arm to detect ``effect`` (arguments as :func:`sample_size`).

    ``n`` is runs per arm; a list of them gives the power curve as a
    DataFrame with columns ``runs_per_arm``, ``tasks_per_arm``,
    ``seeds_per_task``, ``power``. ``seed`` (default 0; None for fresh
    entropy) seeds ``method="simulation"``, every ``n`` from the same seed;
    the seed used is the result's ``seed`` (a curve's
    ``attrs["seed"]``; a paired design's curve has ``attrs["design"]``, ``"correlation"``, ``"discordant"``).

    Examples
    --------
    >>> from agentab.power import power
    >>> round(power("continuous", 0.5, 64).power, 3)
    0.801
    >>> power("binary", 0.1, [100, 400], baseline=0.5)["power"].round(3).tolist()
    [0.296, 0.813]
    >>> round(power("continuous", 0.5, 20, design="paired", correlation=0.5).power, 3)  # pwr.t.test(20, 0.5, type="paired")
    0.565
    """
    q = check_question(kind, effect, baseline, alpha, seeds_per_task, icc, alternative, method, quantile,
                       design=design, correlation=correlation, discordant=discordant)
    check_direction(q, q.effect)
    runs, scalar = _as_runs(n)
    tasks = np.ceil(runs / q.seeds).astype(np.int64)
    se: list[float | None]
    used = None
    if q.method == "simulation":
        n_sims, n_resamples, sequence = _simulation_settings(n_sims, n_resamples, seed)
        sims = [simulated_power(q, q.effect, int(t), n_sims, n_resamples, sequence) for t in tasks]
        values, se, used = [s[0] for s in sims], [s[1] for s in sims], recorded_seed(sequence)
    else:
        values = list(np.atleast_1d(formula_power(q, q.effect, runs)).astype(float))
        se = [None] * len(runs)
    if scalar:
        return SampleSize(q.kind, q.effect, int(runs[0]), int(tasks[0]), q.seeds, float(values[0]), q.method, q.alpha,
                          q.alternative, q.design_effect, math.nan, se[0], tuple(q.notes), used, q.design,
                          q.correlation, q.discordant)
    curve = pd.DataFrame(
        {"runs_per_arm": runs, "tasks_per_arm": tasks, "seeds_per_task": q.seeds, "power": np.asarray(values, dtype=float)}
    )
    if used is not None:
        curve.attrs["seed"] = used
    if q.paired:
        curve.attrs.update(design=q.design, correlation=q.correlation, discordant=q.discordant)
    return curve


def _effect_range(q: Question) -> tuple[tuple[float, float], Any]:
    """The search interval for an MDE (on a 1-d parameter) and the map from it to ``effect``."""
    up = q.alternative != "less"
    if q.kind == "binary" and q.paired:
        psi, b = q.discordant, q.baseline
        reach = psi * (1 - 1e-9)  # at |delta| = psi every pair differs one way
        if b is not None:
            reach = min(reach, 2 * (1 - b) - psi if up else 2 * b - psi)
        return (1e-9, max(reach, 2e-9)), (lambda t: t if up else -t)
    if q.kind == "binary":
        p = q.baseline
        return (1e-9, 1 - p) if up else (1e-9, p), (lambda t: t if up else -t)
    if q.kind == "ordinal":
        return (1e-9, 12.0), (lambda t: math.exp(t if up else -t))
    if q.kind == "continuous":
        return (1e-9, 50.0), (lambda t: t if up else -t)
    # cost: an improvement is a fall, so two-sided looks for the smallest fall
    if q.alternative == "greater":
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
    design: str = "independent",
    correlation: float | None = None,
    discordant: float | None = None,
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
    >>> round(mde("binary", 234, design="paired", discordant=0.3).effect, 3)
    0.1
    """
    from scipy.optimize import brentq

    target = check_probability(power, "power", PowerError)
    q = check_question(kind, None, baseline, alpha, seeds_per_task, icc, alternative, method, quantile, effect_needed=False,
                       design=design, correlation=correlation, discordant=discordant)
    if q.method == "simulation":
        raise PowerError("mde uses the formulas; for a simulated answer call power(..., method='simulation') at a few effects")
    runs, scalar = _as_runs(n)
    (lo, hi), to_effect = _effect_range(q)
    found: list[float | None] = []
    for r in runs:
        def gap(t: float, r: int = int(r)) -> float:
            return float(formula_power(q, to_effect(t), r)) - target

        at_lo = gap(lo)  # brentq needs a sign change: below the target at (almost) no effect, not NaN
        if at_lo >= 0:
            raise PowerError(f"power {target:g} is reached with no effect at all (a level-{q.alpha:g} test rejects that "
                             "often by chance): ask for a power above alpha")
        if not math.isfinite(at_lo):
            raise PowerError(f"the {q.method} formula's power at {int(r):,} runs per arm is undefined: no effect can be "
                             "solved for")
        found.append(to_effect(brentq(gap, lo, hi, xtol=1e-12)) if gap(hi) >= 0 else None)  # also NaN: None
    tasks = np.ceil(runs / q.seeds).astype(np.int64)
    notes = tuple(q.notes) + (() if found[0] is not None else ("no effect in range reaches the target power",))
    if scalar:
        return MinimumEffect(q.kind, found[0], int(runs[0]), int(tasks[0]), q.seeds, target, q.method, q.alpha,
                             q.alternative, q.design_effect, notes, q.design, q.correlation, q.discordant)
    table = pd.DataFrame({"runs_per_arm": runs, "tasks_per_arm": tasks, "seeds_per_task": q.seeds,
                          "effect": np.array([np.nan if f is None else f for f in found])})
    if q.paired:
        table.attrs.update(design=q.design, correlation=q.correlation, discordant=q.discordant)
    return table
