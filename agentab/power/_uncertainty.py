"""How sure a plan is of itself: the tasks needed, re-planned on resamples of the pilot's tasks.

A pilot is a sample of tasks, so the variance components a plan rests on are estimates; a tail
quantile's, from the few runs beyond it, especially. :func:`tasks_interval` resamples the pilot's
tasks with replacement (each drawn task with all its runs, in both arms when the pilot has two),
re-runs the same design search at the recommended seeds per task on every resample, and reports an
interval of the tasks needed that aims to contain, in 80% of pilots (:data:`INTERVAL_LEVEL`), the tasks
the same plan would need if its pilot were the whole task population.

Which interval: the plain percentile interval of the re-plans (their 10th to 90th percentile) covers
less than it says, because the bootstrap spread of a variance-like statistic from 20-40 tasks is too
narrow (the plug-in distribution of a small sample), not because the plan is biased: on 30 pilots per
cell of ``benchmarks/validate_plan_interval.py`` (binary two-arm, continuous, cost p50 and a real
Terminal-Bench pair, pilots of 20-40 tasks x 3 runs) the median plan was 0.95-1.02 of the truth, and
the 10th-90th percentile covered the truth in 0.73-0.90 of pilots. Corrections for bias (the basic
interval on the log scale, the bias-corrected percentile) covered less (down to 0.53), and a
log-normal interval with a t quantile little more. So the interval is the re-plans' 5th to 95th
percentile (:data:`PERCENTILE_RANGE`), a calibrated level: it covered 0.83-1.00 in the same pilots,
and 0.80-1.00 in all twelve cells of the benchmark's last run (binary and ordinal one-arm pilots
too; ``benchmarks/results/validate_plan_interval.txt`` holds the table). It is stretched to contain
the plan itself.
:func:`tail_warnings` says, without resampling, when a pilot has too few runs beyond the quantile to
plan it reliably.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agentab.errors import PowerError
from agentab.power._pilot import Pilot
from agentab.stats.two_sample import MIN_TAIL_RUNS  # one threshold for a fragile tail, in tests and in plans

__all__ = ["INTERVAL_LEVEL", "MIN_TAIL_RUNS", "PERCENTILE_RANGE", "TasksInterval", "tail_warnings", "tasks_interval"]

#: The share of pilots whose interval should contain the tasks needed (the interval's stated level).
INTERVAL_LEVEL = 0.8
#: The percentiles of the re-plans that make that interval: 5th to 95th, calibrated (module docstring).
PERCENTILE_RANGE = (0.05, 0.95)


@dataclass(frozen=True)
class TasksInterval:
    """The tasks needed, over resamples of the pilot's tasks: the interval, how many resamples gave a plan."""

    low: float
    high: float
    level: float
    n_boot: int
    failed: int

    def text(self, seeds: int) -> str:
        failed = f"; {self.failed} resample(s) gave no plan" if self.failed else ""
        low, high = PERCENTILE_RANGE
        return (f"Tasks needed at {seeds} seed(s), re-planned on {self.n_boot} resamples of the pilot's tasks: "
                f"{self.level:.0%} interval {self.low:,.0f} to {self.high:,.0f} (the re-plans' {low:.0%}-{high:.0%} "
                f"range, calibrated to contain the whole population's plan in {self.level:.0%} of simulated pilots)"
                f"{failed}")


def _resample(pilot: Pilot, rng: np.random.Generator) -> Pilot:
    """The pilot with its tasks drawn with replacement; a task drawn twice appears as two tasks."""
    names = np.unique(pilot.tasks)
    drawn = names[rng.integers(len(names), size=len(names))]

    copies: dict[str, int] = {}
    copy = []
    for name in drawn:
        copy.append(copies.get(name, 0))
        copies[name] = copy[-1] + 1

    def gather(values: np.ndarray, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        parts, labels = [], []
        for k, name in enumerate(drawn):
            rows = tasks == name
            part = values[rows]
            if pilot.levels is None and copy[k]:
                # A task drawn twice would tie its runs with its copy's: a tie the pilot does not have, and one
                # that a cost quantile's plan refuses. Each copy is scaled by a negligible 1 + 1e-9 x copy.
                part = part * (1.0 + 1e-9 * copy[k])
            parts.append(part)
            labels.append(np.full(int(rows.sum()), f"{name}#{k}", dtype=object))
        return np.concatenate(parts), np.concatenate(labels).astype(str)

    values, tasks = gather(pilot.values, pilot.tasks)
    other = gather(*pilot.other) if pilot.other is not None else None
    return Pilot(values, tasks, other, pilot.levels, pilot.notes)


def tasks_interval(pilot: Pilot, replan: Callable[[Pilot], float | None], n_boot: int,
                   rng: np.random.Generator) -> TasksInterval:
    """The interval of ``replan(resampled pilot)`` (tasks needed) over ``n_boot`` resamples of the pilot's tasks.

    The :data:`PERCENTILE_RANGE` of the re-plans, stretched to contain ``replan(pilot)`` (the plan
    itself), aiming at :data:`INTERVAL_LEVEL` coverage (module docstring). ``replan`` returns the
    tasks needed, or None when no design reaches the target; a resample on which the plan itself is
    refused (e.g. every task constant) counts as failed too. Failed resamples count as needing more
    tasks than any other (they sit above the interval's upper end).
    """
    needed, failed = [], 0
    for _ in range(n_boot):
        n = _replanned(replan, _resample(pilot, rng))
        failed += n is None
        needed.append(np.inf if n is None else n)
    low, high = (float(v) for v in np.quantile(np.array(needed), PERCENTILE_RANGE, method="inverted_cdf"))
    point = _replanned(replan, pilot)
    if point is not None:
        low, high = min(low, point), max(high, point)
    return TasksInterval(low, high, INTERVAL_LEVEL, n_boot, failed)


def _replanned(replan: Callable[[Pilot], float | None], pilot: Pilot) -> float | None:
    """``replan(pilot)`` as a float, None when no design reaches the target or the plan is refused."""
    try:
        n = replan(pilot)
    except PowerError:
        return None
    return None if n is None else float(n)


def tail_warnings(pilot: Pilot, kind: str, quantile: float) -> list[str]:
    """A warning when the pilot has fewer than :data:`MIN_TAIL_RUNS` runs beyond the planned quantile."""
    if kind not in ("cost", "count") or quantile <= 0.5:
        return []
    beyond = len(pilot.values) * (1 - quantile)
    if beyond >= MIN_TAIL_RUNS:
        return []
    return [
        f"the pilot has about {beyond:.0f} runs beyond its p{quantile * 100:g} (fewer than {MIN_TAIL_RUNS}): a plan "
        "for that tail rests on a handful of runs and can be far off either way; plan(..., n_boot=200) gives the "
        "interval of the tasks needed, and a larger pilot narrows it"
    ]
