"""How sure a plan is of itself: the tasks needed, re-planned on resamples of the pilot's tasks.

A pilot is a sample of tasks, so the variance components a plan rests on are estimates; a tail
quantile's, from the few runs beyond it, especially. :func:`tasks_interval` resamples the pilot's
tasks with replacement (each drawn task with all its runs, in both arms when the pilot has two),
re-runs the same design search at the recommended seeds per task on every resample, and reports the
spread of the tasks needed (the percentile bootstrap over tasks, the unit of replication).
:func:`tail_warnings` says, without resampling, when a pilot has too few runs beyond the quantile
to plan it reliably.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agentab.errors import PowerError
from agentab.power._pilot import Pilot
from agentab.stats.two_sample import MIN_TAIL_RUNS  # one threshold for a fragile tail, in tests and in plans

__all__ = ["TasksInterval", "tasks_interval", "tail_warnings", "MIN_TAIL_RUNS", "INTERVAL_LEVEL"]

#: The level of the interval for the tasks needed (10th to 90th percentile of the resampled plans).
INTERVAL_LEVEL = 0.8


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
        return (f"Tasks needed at {seeds} seed(s), re-planned on {self.n_boot} resamples of the pilot's tasks: "
                f"{self.level:.0%} interval {self.low:,.0f} to {self.high:,.0f}{failed}")


def _resample(pilot: Pilot, rng: np.random.Generator) -> Pilot:
    """The pilot with its tasks drawn with replacement; a task drawn twice appears as two tasks."""
    names = np.unique(pilot.tasks)
    drawn = names[rng.integers(len(names), size=len(names))]

    def gather(values: np.ndarray, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        parts, labels = [], []
        for k, name in enumerate(drawn):
            rows = tasks == name
            parts.append(values[rows])
            labels.append(np.full(int(rows.sum()), f"{name}#{k}", dtype=object))
        return np.concatenate(parts), np.concatenate(labels).astype(str)

    values, tasks = gather(pilot.values, pilot.tasks)
    other = gather(*pilot.other) if pilot.other is not None else None
    return Pilot(values, tasks, other, pilot.levels, pilot.notes)


def tasks_interval(pilot: Pilot, replan: Callable[[Pilot], float | None], n_boot: int,
                   rng: np.random.Generator) -> TasksInterval:
    """The spread of ``replan(resampled pilot)`` (tasks needed) over ``n_boot`` resamples of the pilot's tasks.

    ``replan`` returns the tasks needed, or None when no design reaches the target; a resample
    on which the plan itself is refused (e.g. every task constant) counts as failed too. Failed
    resamples count as needing more tasks than any other (they sit above the interval's upper end).
    """
    needed, failed = [], 0
    for _ in range(n_boot):
        try:
            n = replan(_resample(pilot, rng))
        except PowerError:
            n = None
        if n is None:
            failed += 1
            needed.append(np.inf)
        else:
            needed.append(float(n))
    tail = (1 - INTERVAL_LEVEL) / 2
    low, high = np.quantile(np.array(needed), [tail, 1 - tail], method="inverted_cdf")
    return TasksInterval(float(low), float(high), INTERVAL_LEVEL, n_boot, failed)


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
