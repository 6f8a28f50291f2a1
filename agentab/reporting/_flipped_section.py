"""The report's "Which tasks flipped" section: the tasks whose primary result moved most, and why.

The table is :meth:`agentab.Comparison.flipped_tasks`. In HTML, each listed task opens (a collapsed
``<details>``) onto its runs in both arms, and each run onto its trajectory: every tool call with its
arguments, status, error and observation, from the traces given to :func:`agentab.report`. Every piece of
user text (task ids, run ids, arguments, observations) goes through the report's escaping renderers; no
block here carries markup of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from agentab.comparison.decide import format_value
from agentab.errors import CompareError
from agentab.reporting._markdown import _Block

__all__ = ["FLIPPED_SHOWN", "STEPS_SHOWN", "flipped_section"]

#: The report lists this many regressed and this many improved tasks (at most; a many-arm report's
#: candidate, :data:`agentab.reporting._many.FLIPPED_PER_CANDIDATE`).
FLIPPED_SHOWN = 10
#: A run's trajectory shows every step up to this many, else the first and last half of them.
STEPS_SHOWN = 60
#: Arguments, observations and errors longer than this are cut in the trajectory tables (the rest counted).
TEXT_SHOWN = 600
#: The step columns shown, in order, with their headings.
STEP_COLUMNS = {"index": "#", "tool": "tool", "args": "arguments", "status": "status", "error": "error",
                "observation": "observation"}


def _cut(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    text = str(value)
    if len(text) <= TEXT_SHOWN:
        return text
    return f"{text[:TEXT_SHOWN]}... ({len(text) - TEXT_SHOWN:,} more characters)"


def _cell(row: pd.Series, arm: str, kind: str) -> str:
    """A task's result in one arm: ``4/5 (80.0%)`` for a binary metric, else the number, with missing runs."""
    value = format_value(float(row[arm]), kind)
    if kind == "binary" and not pd.isna(row[f"successes_{arm}"]):
        value = f"{int(row[f'successes_{arm}'])}/{int(row[f'n_{arm}'])} ({value})"
    missing = int(row[f"missing_{arm}"])
    return value + (f"; {missing} unknown" if missing else "")


def _shown_table(flipped: pd.DataFrame, comparison: Any) -> pd.DataFrame:
    kind = flipped.attrs["kind"]
    column = flipped.attrs.get("task_column") or "task_id"
    effect_kind = "continuous" if kind == "ordinal" else kind
    return pd.DataFrame({
        column: [str(t) for t in flipped["task_id"]],
        "direction": flipped["direction"],
        "baseline": [_cell(r, "baseline", kind) for _, r in flipped.iterrows()],
        "candidate": [_cell(r, "candidate", kind) for _, r in flipped.iterrows()],
        "effect": [format_value(float(v), effect_kind, signed=True) for v in flipped["effect"]],
        "p (per task)": [f"{p:.3g}" for p in flipped["p_value"]],
        "p (BH)": [f"{p:.3g}" for p in flipped["p_adjusted"]],
    })


def _intro(flipped: pd.DataFrame) -> list[_Block]:
    a = flipped.attrs
    better = "higher" if a["metric_direction"] == "higher" else "lower"
    counts = (f"Of {a['tasks_compared']} tasks both arms ran, {a['regressed']} regressed, {a['improved']} improved and "
              f"{a['unchanged']} did not move ({a['metric']}: {better} is better).")
    if a["one_arm_tasks"]:
        counts += f" {a['one_arm_tasks']} tasks with a known result in one arm only are left out."
    how = (f"Each task's {a['statistic']} of {a['metric']} in each arm (runs with an unknown value left out, never "
           f"counted as 0), tested by {a['test']}; listed: up to {a['n']} regressed tasks, then up to {a['n']} "
           "improved ones, each ranked by p-value, then by the size of the change, then by task id "
           "(all of them: comparison.flipped_tasks(n=...)).")
    return [_Block("p", counts), _Block("p", how), _Block("p", f"Caveat: {a['caveat']}.")]


def _steps_by_run(traces: Any, runs: set[str]) -> dict[str, pd.DataFrame]:
    steps = traces.steps
    if "run_id" not in steps:
        return {}
    steps = steps[steps["run_id"].astype(str).isin(runs)]
    if "index" in steps:
        steps = steps.sort_values(["run_id", "index"], kind="stable")
    return {str(run): frame for run, frame in steps.groupby(steps["run_id"].astype(str), sort=False)}


def _trajectory(steps: pd.DataFrame | None) -> list[_Block]:
    if steps is None or not len(steps):
        return [_Block("p", "No steps of this run in the traces given.")]
    shown = steps
    blocks = []
    if len(steps) > STEPS_SHOWN:
        half = STEPS_SHOWN // 2
        shown = pd.concat([steps.head(half), steps.tail(half)])
        blocks.append(_Block("p", f"{len(steps)} steps: the first {half} and the last {half} are shown."))
    columns = [c for c in STEP_COLUMNS if c in shown]
    table = pd.DataFrame({STEP_COLUMNS[c]: [_cut(v) for v in shown[c]] for c in columns})
    return blocks + [_Block("table", table=table)]


def _run_title(run: str, metric: str, value: Any, reason: str) -> str:
    shown = "unknown" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"run {run}: {metric} {shown}" + (f"; {_cut(reason)}" if reason else "")


def _task_details(row: pd.Series, comparison: Any, metric: str, steps: dict[str, pd.DataFrame] | None) -> _Block:
    kind = row.get("statistic", "")
    title = (f"{row['direction']}: {row['task_id']} ({_cell(row, 'baseline', _kind(comparison))} -> "
             f"{_cell(row, 'candidate', _kind(comparison))}; {kind}; p = {row['p_value']:.3g})")
    children: list[_Block] = []
    for arm, name in (("baseline", comparison.baseline), ("candidate", comparison.candidate)):
        runs = zip(row[f"runs_{arm}"], row[f"values_{arm}"], row[f"reasons_{arm}"])
        children.append(_Block("p", f"{arm} ({name}): {len(row[f'runs_{arm}'])} runs"))
        for run, value, reason in runs:
            if steps is None:
                children.append(_Block("list", items=[_run_title(run, metric, value, reason)]))
            else:
                children.append(_Block("details", _run_title(run, metric, value, reason),
                                       children=_trajectory(steps.get(str(run)))))
    return _Block("details", title, children=children)


def _kind(comparison: Any) -> str:
    primary = str(comparison.settings.primary)
    metrics = comparison.metrics
    column = primary if primary in metrics.index else primary.rpartition(" p")[0]
    return str(metrics.loc[column, "kind"]) if column in metrics.index else "continuous"


def flipped_section(comparison: Any, traces: Any, *, trajectories: bool, n: int = FLIPPED_SHOWN) -> list[_Block]:
    """The section's blocks: up to ``n`` regressed and ``n`` improved tasks; ``trajectories`` (the HTML report)
    adds each task's runs and their steps."""
    if comparison.settings.cluster is None:
        return []
    heading = _Block("h2", "Which tasks flipped")
    try:
        flipped = comparison.flipped_tasks(n=n)
    except CompareError as err:
        return [heading, _Block("p", f"No per-task results: {err}.")]
    blocks = [heading, *_intro(flipped)]
    if not len(flipped):
        return blocks + [_Block("p", "No task's result moved between the arms.")]
    blocks.append(_Block("table", table=_shown_table(flipped, comparison)))
    if not trajectories:
        return blocks + [_Block("p", "Each task's runs and their trajectories are in the HTML report "
                                     "(agentab.report(comparison, 'report.html', traces=traces)), and the runs "
                                     "with their reasons in comparison.flipped_tasks().")]
    steps = None
    if traces is None:
        blocks.append(_Block("p", "The runs' trajectories are not shown: pass the traces the runs were scored from "
                                  "(agentab.report(comparison, path, traces=traces), or agentab compare on the trace files "
                                  "with --report) to open each run onto its tool calls, arguments and observations."))
    else:
        runs = {str(r) for col in ("runs_baseline", "runs_candidate") for ids in flipped[col] for r in ids}
        steps = _steps_by_run(traces, runs)
        blocks.append(_Block("p", "Open a task for its runs in both arms, and a run for its trajectory: every tool "
                                  "call with its arguments, status, error and observation."))
    blocks += [_task_details(row, comparison, flipped.attrs["metric"], steps) for _, row in flipped.iterrows()]
    return blocks
