"""How much the effect varies from task to task, when a pilot cannot measure it: the assumption a paired plan makes.

A paired plan's variance is that of the per-task effects. A two-arm pilot measures it; a one-arm
pilot cannot, and a plan that shifts every task alike assumes it is zero, which real agent changes
contradict: on the 78 pairs of Terminal-Bench core 0.1.1 submissions (80 tasks x 5 runs) the
per-task effect's SD is 0.83 times the metric's between-task SD (median; interquartile range
0.71-1.05; 0.52 for a model change under the same agent; ``benchmarks/real_heterogeneity.py``).

The assumption ``h`` is that ratio. It enters the plan's task model, so the formula and
``Plan.simulate`` draw from the same population:

- binary and ordinal: every task shifts by ``log_or + tau z_t`` on the cumulative-logit scale
  (``z_t`` standard normal), with ``tau`` calibrated on the Dirichlet task population so that the
  variance of the per-task effects grows by ``h^2`` times the mean between-task variance, and
  ``log_or`` re-solved so that the population effect stays the one asked for;
- continuous: every task's shift is ``delta + N(0, h^2 between)``;
- cost and count (:mod:`agentab.power._components`): every task's runs are multiplied by
  ``exp(mu + N(0, h^2 between))``, ``between`` on the log scale.

Cost and count from a one-arm pilot assume 0 unless told (every run scales alike; stated on the plan),
and show the power at :data:`TYPICAL_COST_HETEROGENEITY`: the same ratio on the log of the agent's
run time, measured on the Terminal-Bench pairs with run times (10 submissions, 45 pairs, median
0.91, interquartile range 0.74-1.09; on the log of tokens, 4 submissions, 6 pairs: 0.92), by the
estimator of :func:`agentab.power._variance.measure` on ``log(agent_duration_sec)`` per pair.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from agentab.errors import PowerError
from agentab.power._simulation import Model
from agentab.stats import power as core

__all__ = ["HETEROGENEITY", "TYPICAL_HETEROGENEITY", "TYPICAL_COST_HETEROGENEITY", "check_heterogeneity", "assume"]

#: The per-task effect's SD over the between-task SD, median of 78 real Terminal-Bench pairs.
TYPICAL_HETEROGENEITY = 0.83
#: The same ratio on the log of a cost-like metric (agent run time), median of 45 real Terminal-Bench pairs.
TYPICAL_COST_HETEROGENEITY = 0.91
#: Named assumptions.
HETEROGENEITY = {"typical": TYPICAL_HETEROGENEITY, "model change": 0.52, "none": 0.0}
#: Largest logit-scale SD of the per-task shifts tried.
MAX_TAU = 12.0


def check_heterogeneity(value: Any) -> float | None:
    """None (measure it on a two-arm pilot, else assume the typical value), a name of :data:`HETEROGENEITY`, or a ratio >= 0."""
    if value is None:
        return None
    if isinstance(value, str):
        if value not in HETEROGENEITY:
            raise PowerError(f"`heterogeneity` must be a ratio >= 0 or one of {', '.join(map(repr, HETEROGENEITY))}, "
                             f"got {value!r}")
        return HETEROGENEITY[value]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not 0 <= value <= 10:
        raise PowerError(f"`heterogeneity` must be a ratio in [0, 10] (the per-task effect's SD over the "
                         f"between-task SD) or a name, got {value!r}")
    return float(value)


def _paired_between(comps: core.Components) -> float:
    return comps.between_a + comps.between_b - 2.0 * comps.covariance


def _level(model: Model, comps: core.Components, h: float, sequence: np.random.SeedSequence,
           tau: float | None = None) -> tuple[core.Components, Model, float]:
    """The task model with per-task logit shifts whose spread gives heterogeneity ``h`` (or the most it can reach)."""
    from scipy.optimize import brentq

    target = comps.delta
    scale = (comps.between_a + comps.between_b) / 2.0
    base = _paired_between(comps)

    def at(log_or: float, tau: float) -> core.Components:
        return core.dirichlet_components(model.shares, model.icc, log_or, seed=sequence, log_or_sd=tau)[0]

    def solve(tau: float) -> tuple[float, core.Components]:
        f = lambda b: at(b, tau).delta - target  # noqa: E731
        if not f(-30.0) < 0 < f(30.0):
            raise PowerError(f"no shift reaches the effect asked for when it varies across tasks (heterogeneity {h:g})")
        b = brentq(f, -30.0, 30.0, xtol=1e-8)
        return b, at(b, tau)

    def gap(tau: float) -> float:
        return math.sqrt(max(0.0, _paired_between(solve(tau)[1]) - base) / scale) - h if scale > 0 else -h

    if tau is None:
        reached = gap(MAX_TAU) + h
        tau = MAX_TAU if reached < h else brentq(gap, 0.0, MAX_TAU, xtol=1e-4)
    else:  # the spread calibrated once (a plan's re-plans on resampled pilots keep it)
        reached = h
    log_or, varied = solve(tau)
    return varied, dataclasses.replace(model, log_or_task=log_or, log_or_sd=tau), min(reached, h)


def assume(kind: str, comps: core.Components, model: Model, h: float, sequence: np.random.SeedSequence,
           tau: float | None = None) -> tuple[core.Components, Model, str]:
    """Components and task model of a paired plan whose effect varies across tasks by ``h`` x the between-task SD.

    ``tau`` (binary, ordinal) skips the calibration and uses that logit-scale spread of the per-task shifts.
    """
    named = next((name for name, value in HETEROGENEITY.items() if value == h), None)
    label = f"{h:g}" + (f" ({named!r})" if named else "")
    if h == 0:
        return comps, model, "heterogeneity 0 ('none'): the effect is assumed the same on every task"
    if kind == "continuous":
        w2 = h * h * comps.between_a
        varied = dataclasses.replace(comps, covariance=comps.covariance - w2 / 2.0)
        model = dataclasses.replace(model, effect_sd=math.sqrt(w2))
        how = f"every task's shift is {comps.delta:+.4g} + N(0, {math.sqrt(w2):.4g}^2)"
    else:
        varied, model, reached = _level(model, comps, h, sequence, tau)
        how = f"tasks shift by {model.log_or_task:+.3f} + N(0, {model.log_or_sd:.3f}^2) log odds"
        if reached < h - 1e-3:
            how += (f"; the pilot's task model reaches at most {reached:.2f} (its tasks sit near all-success or "
                    "all-failure), so the plan may be optimistic")
    text = (f"the pilot cannot measure how the effect varies across tasks, so heterogeneity {label} is assumed: the "
            f"per-task effect's SD is {h:g} x the between-task SD ({how}); real Terminal-Bench pairs: median "
            f"{TYPICAL_HETEROGENEITY:g} (benchmarks/real_heterogeneity.py); heterogeneity= changes it")
    return varied, model, text
