"""The tables and the ``spec`` argument of :func:`agentab.score`, checked and resolved to one spec per run.

``spec`` is one :class:`~agentab.TrajectorySpec`, a mapping ``task_id -> spec`` (or dict of its fields), or
a DataFrame of specs (one row per task); :func:`_resolve_specs` gives the distinct specs and each run's.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agentab.errors import SpecWarning
from agentab.scoring._arrays import _Steps
from agentab.scoring.spec import TrajectorySpec
from agentab.traces import Traces

ID_COLUMNS = ("run_id", "task_id", "seed", "arm", "model", "harness")
_RUN_COLUMNS = (*ID_COLUMNS, "outcome", "n_steps", "tokens", "cost_usd", "latency_s", "retries", "backtracks",
                "terminal_state", "metadata")
_STEP_COLUMNS = ("run_id", "index", "tool", "args", "status")
_INT_FIELDS = ("step_budget", "step_cap", "max_repeats")
_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TrajectorySpec))

SpecLike = TrajectorySpec | Mapping[Any, Any] | pd.DataFrame | None


def tool_calls(steps: pd.DataFrame) -> pd.DataFrame:
    """The steps that are tool calls: handoff steps (``kind == "handoff"``) left out, as every tool-call measure
    leaves them (a table without a ``kind`` column holds tool calls only)."""
    if "kind" not in steps.columns:
        return steps
    handoff = (steps["kind"] == "handoff").to_numpy(dtype=bool, na_value=False)
    return steps[~handoff] if handoff.any() else steps


def _columns_iv(traces: Traces) -> None:
    for name, frame, needed in (("runs", traces.runs, _RUN_COLUMNS), ("steps", traces.steps, _STEP_COLUMNS)):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"traces.{name} lacks the columns {missing}: build Traces with agentab.load_traces")
    if traces.runs["run_id"].duplicated().any():
        dup = traces.runs.loc[traces.runs["run_id"].duplicated(), "run_id"].iloc[0]
        raise ValueError(f"traces.runs holds run_id {dup!r} more than once")


def _resolve_specs(runs: pd.DataFrame, spec: SpecLike,
                   default: TrajectorySpec | None) -> tuple[list[TrajectorySpec], np.ndarray]:
    """The distinct specs and, for each run, the index of its spec."""
    if default is not None and not isinstance(default, TrajectorySpec):
        raise TypeError(f"`default` must be a TrajectorySpec or None, got {type(default).__name__}: {default!r}")
    if spec is None or isinstance(spec, TrajectorySpec):
        if default is not None:
            raise TypeError("`default` is for a mapping or DataFrame of specs; one spec already covers every run")
        spec = TrajectorySpec() if spec is None else spec
        return [spec], np.zeros(len(runs), dtype=np.int64)
    if isinstance(spec, pd.DataFrame):
        by_task = _specs_from_frame(spec)
    elif isinstance(spec, Mapping):
        by_task = _specs_from_mapping(spec)
    else:
        raise TypeError("`spec` must be a TrajectorySpec, a mapping task_id -> TrajectorySpec, a DataFrame of "
                        f"specs or None; got {type(spec).__name__}")
    tasks = runs["task_id"].astype("category")
    names = [str(c) for c in tasks.cat.categories]
    codes = tasks.cat.codes.to_numpy().astype(np.int64)
    used = np.bincount(codes[codes >= 0], minlength=len(names))
    specs: list[TrajectorySpec] = []
    index_of: dict[int, int] = {}
    code_spec = np.full(len(names) + 1, -1, dtype=np.int64)  # the last slot: runs without a task id
    lacking: list[int] = []
    for code in np.flatnonzero(used):
        chosen = by_task.get(names[code], default)
        if chosen is None:
            lacking.append(code)
            continue
        code_spec[code] = index_of.setdefault(id(chosen), len(index_of))
        if code_spec[code] == len(specs):
            specs.append(chosen)
    n_unnamed = int((codes < 0).sum())
    if lacking or (n_unnamed and default is None):
        n_runs = int(used[lacking].sum()) + n_unnamed
        shown = ", ".join(repr(names[c]) for c in lacking[:3]) + (", ..." if len(lacking) > 3 else "")
        raise ValueError(f"no spec for {len(lacking)} of {int((used > 0).sum())} tasks ({n_runs} runs), e.g. "
                         f"{shown or 'runs without a task_id'}: give a spec for every task_id, or `default=` "
                         "for the others")
    if n_unnamed:
        code_spec[-1] = index_of.setdefault(id(default), len(index_of))
        if code_spec[-1] == len(specs):
            specs.append(default)  # type: ignore[arg-type]
    present = {names[c] for c in np.flatnonzero(used)}
    absent = [t for t in by_task if t not in present]
    if absent:
        shown = ", ".join(repr(t) for t in absent[:3]) + (", ..." if len(absent) > 3 else "")
        warnings.warn(f"{len(absent)} of {len(by_task)} specs are for tasks absent from the traces ({shown}); "
                      "they are not used", SpecWarning, stacklevel=3)
    return specs, code_spec[codes]


def _specs_from_mapping(mapping: Mapping[Any, Any]) -> dict[str, TrajectorySpec]:
    out: dict[str, TrajectorySpec] = {}
    keys: dict[str, Any] = {}
    for key, value in mapping.items():
        task = str(key)
        if task in out:
            raise ValueError(f"two specs for task {task!r} (keys {keys[task]!r} and {key!r})")
        keys[task] = key
        out[task] = _as_spec(value, task)
    return out


def _as_spec(value: Any, task: str) -> TrajectorySpec:
    if isinstance(value, TrajectorySpec):
        return value
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in _SPEC_FIELDS]
        if unknown:
            raise ValueError(f"spec for task {task!r}: unknown fields {unknown}; known: {', '.join(_SPEC_FIELDS)}")
        try:
            return TrajectorySpec(**value)
        except (TypeError, ValueError) as err:
            raise type(err)(f"spec for task {task!r}: {err}") from err
    raise TypeError(f"spec for task {task!r} must be a TrajectorySpec or a dict of its fields, "
                    f"got {type(value).__name__}: {value!r}")


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _specs_from_frame(frame: pd.DataFrame) -> dict[str, TrajectorySpec]:
    if "task_id" in frame.columns:
        tasks, body = frame["task_id"], frame.drop(columns="task_id")
    else:
        tasks, body = frame.index.to_series(), frame
    unknown = [c for c in body.columns if c not in _SPEC_FIELDS]
    if unknown:
        raise ValueError(f"the spec table has unknown columns {unknown}; known: task_id, {', '.join(_SPEC_FIELDS)}")
    names = [str(t) for t in tasks]
    seen: set[str] = set()
    repeated = [t for t in names if t in seen or seen.add(t)]  # type: ignore[func-returns-value]
    if repeated:
        raise ValueError(f"the spec table has more than one row for task_id {sorted(set(repeated))[:3]}")
    out: dict[str, TrajectorySpec] = {}
    columns = list(body.columns)
    for task, row in zip(names, body.itertuples(index=False, name=None)):
        fields: dict[str, Any] = {}
        for column, value in zip(columns, row):
            if _missing(value):
                continue
            if column in _INT_FIELDS and isinstance(value, (float, np.floating)) and float(value).is_integer():
                value = int(value)
            if column in ("required", "forbidden", "reference") and isinstance(value, np.ndarray):
                value = tuple(value.tolist())
            fields[column] = value
        out[task] = _as_spec(fields, task)
    return out


def _warn_unseen_tools(specs: Sequence[TrajectorySpec], steps: _Steps) -> None:
    called = {steps.tools[c] for c in np.unique(steps.tool)}
    unseen: dict[str, set[str]] = {}
    for spec in specs:
        for tool in spec.required:
            if tool not in called:
                unseen.setdefault(tool, set()).add("required")
        for call in spec.reference or ():
            if call.tool not in called:
                unseen.setdefault(call.tool, set()).add("reference")
    if unseen:
        listed = ", ".join(f"{tool!r} ({', '.join(sorted(where))})" for tool, where in sorted(unseen.items()))
        warnings.warn(f"{len(unseen)} tool(s) named in the specs never appear in any run's steps: {listed}; "
                      "a typo in the spec?", SpecWarning, stacklevel=3)

