"""Power by simulation: agentab's own test run on simulated experiments.

Two sources of experiments:

- a :class:`~agentab.power._arguments.Question` (``method="simulation"`` of
  :func:`~agentab.power.sample_size` and :func:`~agentab.power.power`): tasks
  of level shares Dirichlet around the baseline with the question's ICC, or
  runs drawn from the pilot sample (:func:`simulated_power`), and the search
  over tasks per arm for a target power (:func:`simulated_tasks`);
- a :class:`Model` fitted on a pilot by :func:`~agentab.power.plan`
  (:meth:`Plan.simulate <agentab.power.Plan.simulate>`): :func:`model_pvalues`.

Every simulation draws from one :class:`numpy.random.SeedSequence` (see
:func:`agentab._checks.seed_sequence`); an evaluation of a design starts its
generator afresh from it, so the designs of one search share their random
numbers and a recorded seed reproduces every number.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.errors import PowerError, StatsWarning
from agentab.power._arguments import Question
from agentab.power._closed_form import candidate_shares
from agentab.stats import (
    mean_difference,
    ordinal_superiority,
    quantile_difference,
    rate_difference,
)
from agentab.stats import power as core

__all__ = ["Model", "model_pvalues", "simulated_power", "simulated_tasks"]


# --------------------------------------------------------------------------- a question's experiments


def simulated_power(q: Question, effect: Any, tasks: int, n_sims: int, n_resamples: int,
                    sequence: np.random.SeedSequence) -> tuple[float, float]:
    """Rejection rate (and its Monte Carlo s.e.) of agentab's test on ``n_sims`` experiments of ``tasks`` x seeds runs."""
    if tasks < 2:
        raise PowerError(f"simulation needs at least 2 tasks per arm; {tasks * q.seeds} runs of {q.seeds} seeds is {tasks}")
    rng = np.random.default_rng(sequence)
    m = q.seeds
    runs = tasks * m
    if q.kind == "ordinal" and (m == 1 or q.icc == 0):
        rate, _ = core.ordinal_power_counts(
            q.baseline, candidate_shares(q, effect), runs, runs, n_sims=n_sims, n_resamples=n_resamples, alpha=q.alpha,
            alternative=q.alternative, rng=rng,
        )
        return rate, math.sqrt(rate * (1 - rate) / n_sims)
    if q.kind in ("cost", "count") and m > 1 and q.icc > 0:
        raise PowerError(
            f"{q.kind}: simulating seeds with icc > 0 needs the pilot's tasks; use agentab.power.plan() with the pilot runs"
        )
    with warnings.catch_warnings():  # each simulated experiment's caveats are not the user's
        warnings.simplefilter("ignore", StatsWarning)
        rate = _rejections(q, effect, tasks, n_sims, n_resamples, rng)
    return rate, math.sqrt(rate * (1 - rate) / n_sims)


def _rejections(q: Question, effect: Any, tasks: int, n_sims: int, n_resamples: int, rng: np.random.Generator) -> float:
    """Share of ``n_sims`` experiments simulated under ``q`` that agentab's test rejects."""
    m = q.seeds
    runs = tasks * m
    strata = np.repeat(np.arange(tasks), m)
    if q.kind == "binary":
        base, cand = np.array([1 - q.baseline, q.baseline]), np.array([1 - q.baseline - effect, q.baseline + effect])
    elif q.kind == "ordinal":
        base, cand = q.baseline, candidate_shares(q, effect)
    levels = np.arange(len(base), dtype=float) if q.kind in ("binary", "ordinal") else None
    rejections = 0
    for _ in range(n_sims):
        if q.kind in ("binary", "ordinal"):
            x = levels[core.task_runs(core.task_shares(base, q.icc, tasks, rng), m, rng)]
            y = levels[core.task_runs(core.task_shares(cand, q.icc, tasks, rng), m, rng)]
            test = rate_difference if q.kind == "binary" else ordinal_superiority
            # One run per task is independent runs: no strata, so agentab takes its count (exact) paths.
            res = test(x, y, x_strata=strata if m > 1 else None, y_strata=strata + tasks if m > 1 else None,
                       paired=False, alternative=q.alternative, n_resamples=n_resamples, rng=rng)
        else:
            x = rng.choice(q.baseline, size=runs)
            y = rng.choice(q.baseline, size=runs) * (1.0 + effect)
            res = quantile_difference(x, y, [q.quantile], alternative=q.alternative, n_resamples=n_resamples, rng=rng)
        p = float(np.atleast_1d(res.pvalue)[0])
        rejections += p < q.alpha
    return rejections / n_sims


def simulated_tasks(q: Question, effect: Any, target: float, start_runs: float, n_sims: int, n_resamples: int,
                    sequence: np.random.SeedSequence) -> tuple[int, tuple[float, float]]:
    """Tasks per arm reaching ``target`` by simulation, and their (power, s.e.).

    Secant steps on the normal scale from the formula's answer ``start_runs``,
    then bisection between the closest designs on either side of the target.
    Every evaluation starts from ``sequence`` (common random numbers), so the
    steps follow the power curve rather than its noise.
    """
    z_a = core.critical_value(q.alpha, q.alternative)
    z_t = core.z_quantile(target)
    tasks = max(2, math.ceil(start_runs * q.design_effect / q.seeds))
    seen: dict[int, tuple[float, float]] = {}
    for _ in range(6):
        if tasks not in seen:
            seen[tasks] = simulated_power(q, effect, tasks, n_sims, n_resamples, sequence)
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
        seen[mid] = simulated_power(q, effect, mid, n_sims, n_resamples, sequence)
    reached = [t for t, (pw, _) in seen.items() if pw >= target]
    best = min(reached) if reached else max(seen)
    return best, seen[best]


# --------------------------------------------------------------------------- a pilot's model


@dataclass(frozen=True)
class Model:
    """What a simulated experiment of a plan draws from (fitted on the pilot by :mod:`agentab.power._components`)."""

    kind: str
    paired: bool
    shares: np.ndarray | None = None  # binary/ordinal: pilot level shares
    levels: np.ndarray | None = None
    icc: float = 0.0
    log_or_task: float = 0.0  # the task-level shift
    log_or_sd: float = 0.0  # binary/ordinal: its SD across tasks (heterogeneous effects)
    effect_sd: float = 0.0  # continuous: the SD of the shift across tasks
    mean: float = 0.0  # continuous
    between: float = 0.0
    within: float = 0.0
    delta: float = 0.0
    task_effects: np.ndarray | None = None  # cost: each pilot task's effect on the log scale
    residuals: np.ndarray | None = None  # cost: the pilot's within-task residuals on the log scale
    offset: float = 0.0  # cost: log(value + offset)
    factor: float = 1.0
    quantile: float = 0.95
    density: float = math.nan  # cost: the density at the quantile
    log_sd: float = 0.0  # cost: the SD across tasks of the candidate's log shift (heterogeneous effects)


def model_pvalues(model: Model, n: int, m: int, alternative: str, n_sims: int, n_resamples: int,
                  sequence: np.random.SeedSequence) -> np.ndarray:
    """p-values of agentab's test on ``n_sims`` experiments of ``n`` tasks x ``m`` seeds per arm drawn from ``model``."""
    rng = np.random.default_rng(sequence)
    with warnings.catch_warnings():  # each simulated experiment's caveats (few runs in a tail) are not the user's
        warnings.simplefilter("ignore", StatsWarning)
        return np.array([_model_pvalue(model, n, m, alternative, n_resamples, rng) for _ in range(n_sims)])


def _model_pvalue(model: Model, n: int, m: int, alternative: str, n_resamples: int, rng: np.random.Generator) -> float:
    """One simulated experiment under ``model`` and the p-value of agentab's test on it."""
    strata = np.repeat(np.arange(n), m)
    y_strata = strata if model.paired else strata + n
    design = dict(x_strata=strata, y_strata=y_strata, paired=model.paired, alternative=alternative,
                  n_resamples=n_resamples, rng=rng)
    if model.kind in ("binary", "ordinal"):
        x, y = _draw_levels(model, n, m, rng)
        res = (rate_difference if model.kind == "binary" else ordinal_superiority)(x, y, **design)
    elif model.kind == "continuous":
        x, y = _draw_continuous(model, n, m, rng)
        res = mean_difference(x, y, **design)
    else:
        x, y = _draw_amounts(model, n, m, rng)
        res = quantile_difference(x, y, [model.quantile], **design)
    return float(np.atleast_1d(res.pvalue)[0])


def _draw_levels(model: Model, n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Runs of both arms: Dirichlet tasks around the pilot's shares, the candidate's shifted by the task-level log odds."""
    theta_a = core.task_shares(model.shares, model.icc, n, rng)
    shift = model.log_or_task + (model.log_or_sd * rng.standard_normal((n, 1)) if model.log_or_sd > 0 else 0.0)
    theta_b = core.po_shift(theta_a if model.paired else core.task_shares(model.shares, model.icc, n, rng), shift)
    return model.levels[core.task_runs(theta_a, m, rng)], model.levels[core.task_runs(theta_b, m, rng)]


def _draw_continuous(model: Model, n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Runs of both arms: normal task effects and run noise, the candidate shifted by ``delta``."""
    u = rng.normal(0.0, math.sqrt(model.between), n)
    v = u if model.paired else rng.normal(0.0, math.sqrt(model.between), n)
    x = model.mean + np.repeat(u, m) + rng.normal(0.0, math.sqrt(model.within), n * m)
    if model.effect_sd > 0:
        v = v + rng.normal(0.0, model.effect_sd, n)
    y = model.mean + model.delta + np.repeat(v, m) + rng.normal(0.0, math.sqrt(model.within), n * m)
    return x, y


def _draw_amounts(model: Model, n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Runs of both arms from the log-scale task-effect model, the candidate's times ``factor``.

    With ``log_sd`` > 0 each candidate task's runs are also times ``exp(log_sd z_t)``, ``z_t`` standard normal.
    """
    effects, residuals = model.task_effects, model.residuals
    task_a = np.repeat(effects[rng.integers(len(effects), size=n)], m)
    task_b = task_a if model.paired else np.repeat(effects[rng.integers(len(effects), size=n)], m)
    x = np.maximum(np.exp(task_a + rng.choice(residuals, size=n * m)) - model.offset, 0.0)
    y = np.maximum(np.exp(task_b + rng.choice(residuals, size=n * m)) - model.offset, 0.0) * model.factor
    if model.log_sd > 0:
        y = y * np.repeat(np.exp(model.log_sd * rng.standard_normal(n)), m)
    return x, y
