"""Per-arm descriptive summary of loaded traces.

Descriptive only: no test, no interval. The success rate is averaged over
tasks (each task's mean outcome, then the mean over tasks), which is what a
benchmark score measures and equals the pooled rate when every task has the
same number of seeds. Quantiles are agentab's one definition
(:func:`agentab._vocabulary.quantile`: the inverse empirical distribution
function with every task weighing the same, as :func:`agentab.compare` and
the reports use), so one set of runs shows one p95 everywhere; long-tailed
counts (steps, tokens, cost) are summarised by p50 and p95 rather than the
mean, which the tail drags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from agentab._display import number
from agentab._vocabulary import quantile, task_weights

if TYPE_CHECKING:  # pragma: no cover
    from agentab.traces._load import Traces

__all__ = ["format_summary", "labels", "share_of_known", "summarize", "summarize_scores"]

_NO_ARM = "(no arm)"


def _quantile(values: pd.Series, q: float, tasks: pd.Series) -> float:
    """The ``q``-quantile of the known values, every task weighing the same (agentab's one definition)."""
    known = values.notna().to_numpy()
    return quantile(values.to_numpy(dtype=float)[known], q, task_weights(tasks.to_numpy()[known]))


def labels(values: pd.Series) -> str:
    """The distinct known values of a column, in order of appearance, as one text ("-" when none).

    Unhashable values (a list as a model name) are described by their text.

    Examples
    --------
    >>> labels(pd.Series(["a", None, "b", "a"])), labels(pd.Series([None])), labels(pd.Series([[1], [1]]))
    ('a, b', '-', '[1]')
    """
    known = values.dropna()
    try:
        seen = pd.unique(known)
    except TypeError:
        seen = pd.unique(known.map(repr))
    return ", ".join(map(str, seen)) or "-"


def summarize(traces: Traces | pd.DataFrame, by: str = "arm") -> pd.DataFrame:
    """Summarise runs per arm (or per any other run column).

    Parameters
    ----------
    traces : Traces or pandas.DataFrame
        Loaded traces, or a runs table with the columns of ``Traces.runs``.
    by : str, default "arm"
        Column to group by. Runs with no value are grouped as ``"(no arm)"``.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``model``, ``harness``, ``runs``, ``tasks``,
        ``seeds_per_task`` (median), ``success_rate`` (task-averaged mean
        outcome; for numeric outcomes, the task-averaged mean score),
        ``steps_p50``, ``steps_p95``, ``tokens_p50``, ``tokens_p95``,
        ``cost_p50``, ``cost_p95``, ``step_error_rate`` (error steps / steps)
        and ``runs_with_error`` (share of runs with at least one error step).
        A figure that cannot be computed is NaN (shown "n/a"), never 0:
        quantiles over the runs whose value is recorded (none: NaN, e.g. no
        token counts at all), error rates over the runs that record a step
        status (or have no step).

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=10, n_seeds=2)
    >>> table = agentab.summarize(traces)
    >>> list(table.index), int(table.loc["baseline", "runs"])
    (['baseline', 'candidate'], 20)
    """
    runs = traces.runs if hasattr(traces, "runs") else traces
    if by not in runs.columns:
        raise KeyError(f"cannot group by {by!r}: not a column of the runs table ({', '.join(map(str, runs.columns))})")
    keys = runs[by].astype(object).where(runs[by].notna(), _NO_ARM)
    rows = {}
    for key, group in runs.groupby(keys, sort=False):
        per_task = group.groupby("task_id", observed=True)["outcome"].mean()
        seeds = group.groupby("task_id", observed=True).size()
        known = group["n_errors"].notna()  # missing: steps, none with a recorded status
        n_steps = group["n_steps"].astype("float64")
        errors, stepped = group["n_errors"][known].astype("float64"), n_steps[known]
        tasks = group["task_id"].astype(object)
        rows[key] = {
            "model": labels(group["model"]),
            "harness": labels(group["harness"]),
            "runs": len(group),
            "tasks": int(group["task_id"].nunique()),
            "seeds_per_task": float(seeds.median()),
            "success_rate": float(per_task.astype("float64").mean()),
            "steps_p50": _quantile(n_steps, 0.50, tasks),
            "steps_p95": _quantile(n_steps, 0.95, tasks),
            "tokens_p50": _quantile(group["tokens"].astype("float64"), 0.50, tasks),
            "tokens_p95": _quantile(group["tokens"].astype("float64"), 0.95, tasks),
            "cost_p50": _quantile(group["cost_usd"], 0.50, tasks),
            "cost_p95": _quantile(group["cost_usd"], 0.95, tasks),
            "step_error_rate": float(errors.sum() / stepped.sum()) if stepped.sum() else float("nan"),
            "runs_with_error": float((errors > 0).mean()) if len(errors) else float("nan"),
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = by
    return table


def summarize_scores(scores: pd.DataFrame, by: str = "arm") -> pd.DataFrame:
    """Summarise a trajectory-score table (from :func:`agentab.score`) per arm.

    Rates are shares of runs (missing values left out); ``rubric 0`` ..
    ``rubric 3`` are the shares of each rubric level; ``tool_recall`` and
    ``arg_accuracy`` are means over the runs where they are defined.

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=10, n_seeds=2)
    >>> scores = agentab.score(traces, agentab.datasets.example_specs(0, n_tasks=10))
    >>> table = summarize_scores(scores)
    >>> list(table.columns[:5])
    ['passed', 'rubric 0', 'rubric 1', 'rubric 2', 'rubric 3']
    """
    if by not in scores.columns:
        raise KeyError(f"cannot group by {by!r}: not a column of the scores")
    keys = scores[by].astype(object).where(scores[by].notna(), _NO_ARM)
    rows = {}
    for key, group in scores.groupby(keys, sort=False):
        row = {"passed": share_of_known(group["passed"])}
        rubric = group["rubric"].dropna().astype(int)
        for level in range(4):
            row[f"rubric {level}"] = float((rubric == level).mean()) if len(rubric) else float("nan")
        for column in ("loop", "cap_hit", "non_terminated", "accidental_recovery", "error_cascade"):
            if column in group:
                row[column] = share_of_known(group[column])
        for column in ("tool_recall", "arg_accuracy"):
            if column in group:
                row[column] = float(group[column].astype("float64").mean())
        rows[key] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = by
    return table


def share_of_known(values: pd.Series) -> float:
    """Mean of the non-missing values as a float (a rate for booleans); NaN if none."""
    known = values.dropna()
    return float(known.astype(float).mean()) if len(known) else float("nan")


_FORMATS = {
    "runs": "{:,.0f}",
    "tasks": "{:,.0f}",
    "seeds_per_task": "{:g}",
    "success_rate": "{:.1%}",
    "steps_p50": "{:,.1f}",
    "steps_p95": "{:,.1f}",
    "tokens_p50": "{:,.0f}",
    "tokens_p95": "{:,.0f}",
    "cost_p50": "${:,.4f}",
    "cost_p95": "${:,.4f}",
    "step_error_rate": "{:.1%}",
    "runs_with_error": "{:.1%}",
    "passed": "{:.1%}",
    "rubric 0": "{:.1%}",
    "rubric 1": "{:.1%}",
    "rubric 2": "{:.1%}",
    "rubric 3": "{:.1%}",
    "loop": "{:.1%}",
    "cap_hit": "{:.1%}",
    "non_terminated": "{:.1%}",
    "accidental_recovery": "{:.1%}",
    "error_cascade": "{:.1%}",
    "tool_recall": "{:.1%}",
    "arg_accuracy": "{:.1%}",
}

_LABELS = {
    "seeds_per_task": "seeds per task",
    "success_rate": "success rate (task-avg)",
    "steps_p50": "steps p50",
    "steps_p95": "steps p95",
    "tokens_p50": "tokens p50",
    "tokens_p95": "tokens p95",
    "cost_p50": "cost p50",
    "cost_p95": "cost p95",
    "step_error_rate": "step error rate",
    "runs_with_error": "runs with an error",
    "passed": "passed all trajectory checks",
    "rubric 0": "rubric 0 (no progress)",
    "rubric 1": "rubric 1 (partial)",
    "rubric 2": "rubric 2 (with intervention)",
    "rubric 3": "rubric 3 (clean)",
    "loop": "runs with a loop",
    "cap_hit": "loop cap hit",
    "non_terminated": "did not terminate",
    "accidental_recovery": "accidental recovery",
    "error_cascade": "uncorrected error",
    "tool_recall": "tool selection (recall)",
    "arg_accuracy": "argument correctness",
}


def format_summary(table: pd.DataFrame) -> str:
    """Render :func:`summarize` output as aligned text, one column per arm.

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=10, n_seeds=2)
    >>> print(format_summary(agentab.summarize(traces)).splitlines()[0].split())
    ['baseline', 'candidate']
    """
    if table.empty:
        return "(no runs)"
    lines = {}
    for column in table.columns:
        fmt = _FORMATS.get(column, "{}")
        label = _LABELS.get(column, column)
        lines[label] = [number(value, fmt) for value in table[column]]
    width_label = max(len(k) for k in lines)
    widths = [
        max(len(str(name)), *(len(cells[i]) for cells in lines.values())) for i, name in enumerate(table.index)
    ]
    header = " " * width_label + "  " + "  ".join(str(n).rjust(w) for n, w in zip(table.index, widths))
    body = [
        label.ljust(width_label) + "  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths))
        for label, cells in lines.items()
    ]
    return "\n".join([header, *body])
