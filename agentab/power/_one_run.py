"""Plans from pilots with one run per task (every SWE-bench-style leaderboard file): components without an ICC.

With one run per task the between-task and within-task variance cannot be told apart, so the plan
is made for one seed per task, where it does not need to: the variance of a one-seed task mean is
the whole run variance, and in a paired design the variance of a task's difference is read directly
off the pilot's two arms (their covariance over the shared tasks; for a binary metric that is the
discordance). Seeds per task are then taken to add nothing (an ICC of 1, the bound that can only
over-state the tasks needed), and the plan says so. A one-arm pilot with one run per task carries
no information on how a task's two arms correlate: a paired plan from it is refused.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from agentab.errors import PowerError
from agentab.power._pilot import Pilot
from agentab.stats import power as core

__all__ = ["one_run", "one_run_components", "MIN_SHARED_TASKS"]

#: Fewest tasks both arms of a one-run pilot must share for a paired plan.
MIN_SHARED_TASKS = 5


def one_run(pilot: Pilot) -> bool:
    """Whether every task of the pilot's baseline arm has exactly one run."""
    return len(pilot.values) == len(np.unique(pilot.tasks))


def _scorer(kind: str, pilot: Pilot) -> Any:
    """The run score of the statistic: the outcome (binary), Cliff's delta's placement score (ordinal), the value."""
    if kind != "ordinal":
        return lambda values: np.asarray(values, dtype=float)
    psi = core.placement_scores(_shares(pilot))
    return lambda values: psi[np.searchsorted(pilot.levels, values)]


def _shares(pilot: Pilot) -> np.ndarray:
    """The baseline arm's share of every level."""
    return np.array([np.mean(pilot.values == level) for level in pilot.levels])


def _delta(kind: str, pilot: Pilot, effect: float) -> tuple[float, float]:
    """The effect on the statistic's scale, and the candidate's run variance under it (one arm)."""
    values = pilot.values
    if kind == "binary":
        rate = float(values.mean())
        if not 0.0 < rate + effect < 1.0:
            raise PowerError(f"the pilot's success rate {rate:.3f} + effect {effect:g} is not a rate strictly between 0 and 1")
        return effect, (rate + effect) * (1.0 - rate - effect)
    if kind == "ordinal":
        shares = _shares(pilot)
        moved = core.po_shift(shares, math.log(effect))
        psi = core.placement_scores(shares)
        mean = float(moved @ psi)
        return float(core.cliff_delta(shares, moved)), float(moved @ psi**2 - mean**2)
    sd = float(values.std(ddof=1))
    if not sd > 0:
        raise PowerError("every pilot run has the same value: no variance to plan with")
    return effect * sd, sd * sd


def one_run_components(pilot: Pilot, kind: str, effect: float, paired: bool) -> tuple[core.Components, core.Anova, list[str], list[str]]:
    """Components of a one-seed plan from a one-run pilot, the ANOVA-like summary, assumptions and notes."""
    if kind in ("cost", "count"):
        raise PowerError("a cost or count plan needs the pilot's tasks to have 2 or more runs (its tail model is "
                         "per task); run 2 seeds of some tasks")
    score = _scorer(kind, pilot)
    mine = pd.Series(score(pilot.values), index=pilot.tasks)
    var_a = float(mine.var(ddof=1))
    if not var_a > 0:
        raise PowerError("every pilot run has the same value: no variance to plan with")
    delta, var_b = _delta(kind, pilot, effect)
    covariance = 0.0
    assumptions = ["one run per task: seeds per task are taken to add nothing (an ICC of 1, which can only "
                   "over-state the tasks needed); the plan is for 1 seed per task, where the ICC does not matter"]
    notes: list[str] = []
    if paired:
        if pilot.other is None:
            raise PowerError(
                "a one-arm pilot with one run per task cannot tell how a task's two arms correlate, which a paired "
                "plan needs: give the pilot's second arm (the candidate on the same tasks), or plan "
                "design='independent', or use agentab.power.sample_size"
            )
        other = pd.Series(score(pilot.other[0]), index=pilot.other[1]).groupby(level=0).mean()
        shared = mine.index.intersection(other.index)
        if len(shared) < MIN_SHARED_TASKS:
            raise PowerError(f"the pilot's two arms share {len(shared)} task(s); a paired plan needs at least "
                             f"{MIN_SHARED_TASKS}")
        a, b = mine.loc[shared].to_numpy(), other.loc[shared].to_numpy()
        var_b = float(np.var(b, ddof=1))
        covariance = float(np.cov(a, b, ddof=1)[0, 1])
        assumptions.append(
            f"how a task's two arms co-vary is read off the pilot's {len(shared)} shared tasks (covariance "
            f"{covariance:.4g}; for a binary metric, {np.mean(a != b):.1%} of them differ between the arms)"
        )
    comps = core.Components(delta, var_a, var_b, covariance, 0.0, 0.0)
    fit = core.Anova(len(mine), len(mine), 1.0, var_a, 0.0, math.nan, (math.nan, math.nan))
    return comps, fit, assumptions, notes
