"""Reading a pilot for :func:`~agentab.power.plan`: the baseline arm's values by task, and the other arm's.

:func:`read_pilot` takes runs (a DataFrame, e.g. from :func:`agentab.score`, or Traces, scored first),
picks the baseline arm (``baseline=``, or an arm named "baseline"; with several arms and neither, an error:
never by row order; a second arm is kept for a paired plan's
task-to-task variation of the effect), reads the metric as numbers (an ordered categorical as its codes),
works out its kind as :func:`agentab.compare` does, and refuses a pilot that cannot give an ICC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import check_kind
from agentab.errors import PowerError
from agentab.stats.two_sample import magnitude_problem

__all__ = ["MIN_TASKS", "Pilot", "read_pilot"]

#: Fewest pilot tasks from which the between-task variance (the ICC) is estimated.
MIN_TASKS = 5


@dataclass(frozen=True)
class Pilot:
    """The pilot's known values, as :mod:`agentab.power._components` reads them."""

    values: np.ndarray  # baseline arm's known values
    tasks: np.ndarray  # task codes aligned with values
    other: tuple[np.ndarray, np.ndarray] | None  # the second arm's values and task codes, if any
    levels: np.ndarray | None  # ordinal/binary levels (sorted values)
    notes: tuple[str, ...]


def _kind_of(table: pd.DataFrame, metric: str) -> str:
    """The metric's kind: :func:`agentab.score`'s record, an ordered categorical, or inferred from the values."""
    from agentab.scoring import infer_kind, metric_kinds

    kinds = metric_kinds(table)
    if metric in kinds.index:
        return str(kinds.loc[metric, "kind"])
    if isinstance(table[metric].dtype, pd.CategoricalDtype) and table[metric].cat.ordered:
        return "ordinal"
    inferred = infer_kind(table[metric])
    if inferred is None:
        raise PowerError(f"column {metric!r} is not numeric; say kind= (binary, ordinal, continuous, cost, count)")
    return inferred


def _numeric(column: pd.Series, name: str) -> np.ndarray:
    if isinstance(column.dtype, pd.CategoricalDtype):
        if not column.cat.ordered:
            raise PowerError(f"column {name!r} is an unordered categorical; an ordinal metric needs ordered levels")
        codes = column.cat.codes.to_numpy(dtype=float)
        return np.where(codes < 0, np.nan, codes)
    try:
        return pd.to_numeric(column, errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise PowerError(f"column {name!r} has values that are not numbers ({exc})") from None


def _runs_table(pilot: Any, metric: Any, cluster: Any) -> pd.DataFrame:
    """The pilot as a runs table with the metric and task columns (Traces are scored)."""
    from agentab.traces import Traces

    if isinstance(pilot, Traces):
        from agentab.scoring import score

        pilot = score(pilot)
    if not isinstance(pilot, pd.DataFrame):
        raise PowerError(f"pilot must be a DataFrame of runs (e.g. from agentab.score) or Traces, got {type(pilot).__name__}")
    repeated = pilot.columns[pilot.columns.duplicated()].unique()
    if len(repeated):
        raise PowerError(f"the pilot has repeated column names: {', '.join(map(repr, repeated[:5]))}; rename or drop them "
                         "(each column is read by name)")
    for name, what in ((metric, "metric"), (cluster, "task (cluster=)")):
        if not isinstance(name, str) or name not in pilot.columns:
            raise PowerError(f"no {what} column {name!r} in the pilot (columns: {', '.join(map(str, pilot.columns))})")
    if pilot[cluster].isna().any():
        raise PowerError(f"column {cluster!r} has {int(pilot[cluster].isna().sum())} runs without a task")
    return pilot


def _arms(pilot: pd.DataFrame, arm: str, baseline: Any) -> tuple[pd.DataFrame, pd.DataFrame | None, list[str]]:
    """The baseline arm's runs, the other arm's (one other arm only), and notes on the choice."""
    notes: list[str] = []
    if not (arm in pilot.columns and pilot[arm].nunique() > 0):
        if baseline is not None:
            raise PowerError(f"baseline={baseline!r} given but the pilot has no arm column {arm!r}")
        return pilot, None, notes
    arms = list(dict.fromkeys(str(a) for a in pd.unique(pilot[arm].dropna())))
    if baseline is not None and str(baseline) not in arms:
        raise PowerError(f"baseline arm {baseline!r} not in column {arm!r} (arms: {', '.join(arms)})")
    if baseline is None:
        lowered = [a.lower() for a in arms]
        if len(arms) > 1 and "baseline" not in lowered:  # never by row order: the plan reads the baseline's runs
            raise PowerError(f"the pilot has {len(arms)} arms in column {arm!r} ({', '.join(arms)}) and none is named "
                             "'baseline': say which is the baseline with baseline=")
        base = arms[lowered.index("baseline")] if "baseline" in lowered else arms[0]
    else:
        base = str(baseline)
    labels = pilot[arm].astype(str)
    rest = [a for a in arms if a != base]
    other = pilot[labels == rest[0]] if len(rest) == 1 else None
    if len(rest) > 1:
        notes.append(f"arms {', '.join(rest)} ignored: the plan reads the baseline arm {base!r}")
    return pilot[labels == base], other, notes


def _check_values(values: np.ndarray, tasks: np.ndarray, kind: str, metric: str) -> None:
    """Refuse values the kind cannot have, and a pilot with too few tasks (one run per task is planned for one
    seed per task: :mod:`agentab.power._one_run`)."""
    if kind == "binary" and not np.isin(values, (0.0, 1.0)).all():
        raise PowerError(f"column {metric!r} is read as binary but has values other than 0/1 (e.g. "
                         f"{values[~np.isin(values, (0.0, 1.0))][0]:g})")
    if kind in ("cost", "count") and np.any(values < 0):
        raise PowerError(f"column {metric!r} has negative values; cost and counts are >= 0")
    n_tasks = len(np.unique(tasks))
    if n_tasks == 0:
        raise PowerError(f"column {metric!r} has no values in the pilot's baseline arm (a trajectory check the spec "
                         "does not ask for is not computed: give its spec, or plan another metric)")
    if n_tasks < MIN_TASKS:
        raise PowerError(
            f"the pilot has {n_tasks} task(s) with a value of {metric!r}; at least {MIN_TASKS} are needed to estimate "
            "the between-task variance (ICC)"
        )


def read_pilot(pilot: Any, metric: Any, kind: Any, cluster: Any, arm: Any, baseline: Any) -> tuple[Pilot, str]:
    """The pilot's values of ``metric`` by task (baseline arm, and the other arm if one), and the metric's kind."""
    pilot = _runs_table(pilot, metric, cluster)
    frame, other, notes = _arms(pilot, arm, baseline)
    kind = check_kind(_kind_of(pilot, metric) if kind is None else kind, PowerError)

    def known(part: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        values = _numeric(part[metric], metric)
        if np.isinf(values).any():
            raise PowerError(f"column {metric!r} has {int(np.isinf(values).sum())} infinite value(s)")
        problem = magnitude_problem(values)
        if problem is not None:
            raise PowerError(f"column {metric!r} has {problem}")
        ok = ~np.isnan(values)
        return values[ok], part[cluster].astype(str).to_numpy()[ok]

    values, tasks = known(frame)
    missing = len(frame) - len(values)
    if missing:
        notes.append(f"{missing} pilot run(s) without a value of {metric!r} left out")
    _check_values(values, tasks, kind, metric)
    levels = None
    if kind in ("binary", "ordinal"):
        pooled = values if other is None else np.concatenate([values, known(other)[0]])
        levels = np.array([0.0, 1.0]) if kind == "binary" else np.unique(pooled)
    other_known = known(other) if other is not None else None
    if other_known is not None and len(other_known[0]) == 0:
        other_known = None
    return Pilot(values, tasks, other_known, levels, tuple(notes)), kind
