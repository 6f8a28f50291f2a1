"""The outcomes table of ``load_traces(..., outcomes=)``: one verdict per run, kept apart from the traces.

Real evaluations keep the verdict in a results file of their own: SWE-bench's run report (``resolved_ids`` /
``unresolved_ids``, schema 2 of the harness's ``make_run_report``) or its per-instance ``report.json``
(``{instance_id: {"resolved": ...}}``), a CSV of rewards. :func:`read_outcomes` reads any of them into an
:class:`OutcomeTable` keyed by ``run_id``, or by ``task_id`` and ``seed``, or by ``task_id`` alone.

Columns: ``outcome`` (true/false or a number; blank = no verdict, and the run it matches is rejected, never read
as False) and ``run_id`` or ``task_id`` (``instance_id``, SWE-bench's name, is read as ``task_id``), with
``seed`` when a task has several runs. A SWE-bench run report gives ``resolved_ids`` true and
``unresolved_ids`` and ``empty_patch_ids`` false; ``error_ids`` and ``incomplete_ids`` were not evaluated, so
a run of theirs is rejected saying so rather than counted as a failure (also sb-cli's ``failed_ids`` and
``pending_ids``). A folder is read as SWE-bench's evaluation logs: every ``report.json`` under it, each
``{instance_id: {"resolved": ...}}`` or, as some runs save it, the instance's own ``{"resolved": ...}`` in a
folder named after the instance (``logs/<instance_id>/report.json``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentab.errors import TraceError
from agentab.traces._results import _blank, column_hint, load_results

__all__ = ["Found", "OutcomeTable", "read_outcomes"]

#: SWE-bench run-report lists: their verdict, or None (not evaluated: the reason).
_SWEBENCH_LISTS = {"resolved_ids": True, "unresolved_ids": False, "empty_patch_ids": False,
                   "error_ids": None, "failed_ids": None, "incomplete_ids": None, "pending_ids": None}
_UNEVALUATED = ("SWE-bench's report lists it in {}: {}, so it has no verdict (leaderboards count it unresolved; "
                "say so in an outcomes table of your own to count it)")
_SWEBENCH_WHY = {"error_ids": _UNEVALUATED.format("error_ids", "its evaluation failed"),
                 "failed_ids": _UNEVALUATED.format("failed_ids", "its evaluation failed"),
                 "incomplete_ids": _UNEVALUATED.format("incomplete_ids", "it was never evaluated"),
                 "pending_ids": _UNEVALUATED.format("pending_ids", "it was not yet evaluated")}


@dataclass(frozen=True)
class Found:
    """What the table says of one run: ``matched`` with ``value``, or a rejection (``field``, ``reason``), or
    nothing (``no_match`` says what was looked up)."""

    matched: bool
    value: Any = None
    field: str | None = None
    reason: str | None = None
    no_match: str = ""


class OutcomeTable:
    """Verdicts by key (see the module docstring); counts the runs each row matched."""

    def __init__(self, frame: pd.DataFrame, by: tuple[str, ...], label: str,
                 excluded: Mapping[tuple[Any, ...], str] | None = None) -> None:
        self.frame, self.by, self.label = frame, by, label
        self.excluded = dict(excluded or {})
        self.rows: dict[tuple[Any, ...], int] = {}
        keys = [_key_of(frame[c].tolist(), c, label) for c in by]
        for row, key in enumerate(zip(*keys)):
            if key in self.rows:
                raise TraceError(f"two rows give {_describe(by, key)} (rows {self.rows[key] + 1} and {row + 1}): "
                                 "one verdict per run", source=label)
            self.rows[key] = row
        self.values = [_verdict(v, row, label) for row, v in enumerate(frame["outcome"].tolist())]
        self.hits = np.zeros(len(frame), dtype=np.int64)

    def lookup(self, identity: Mapping[str, Any]) -> Found:
        """The verdict of the run with ``identity`` ({run_id, task_id, seed})."""
        try:
            if any(identity.get(c) is None for c in self.by):
                raise KeyError("absent")
            key = tuple(int(identity[c]) if c == "seed" else str(identity[c]) for c in self.by)
        except (TypeError, ValueError, KeyError):
            return Found(False, no_match=f"the run has no {' and '.join(self.by)} to look up in {self.label}")
        if key in self.excluded:
            return Found(False, field="outcome", reason=self.excluded[key])
        row = self.rows.get(key)
        if row is None:
            return Found(False, no_match=f"no row of the outcomes table {self.label} has {_describe(self.by, key)}")
        self.hits[row] += 1
        if self.by == ("task_id",) and self.hits[row] > 1:
            raise TraceError(f"the outcomes table has no seed column, and task {key[0]!r} has more than one run: "
                             "one verdict cannot belong to several runs (add a seed column, or a run_id)",
                             source=self.label)
        if self.values[row] is None:
            return Found(False, field="outcome",
                         reason=f"the outcomes table {self.label} has a blank outcome for it (row {row + 1})")
        return Found(True, value=self.values[row])

    def unmatched(self) -> pd.DataFrame:
        """The rows no run matched, with their row number (1-based) in ``row``."""
        left = self.frame.loc[self.hits == 0, [*self.by, "outcome"]].copy()
        left.insert(0, "row", np.flatnonzero(self.hits == 0) + 1)
        return left.reset_index(drop=True)


def read_outcomes(source: Any) -> OutcomeTable:
    """An outcomes table from a path (CSV, TSV, Parquet, JSON Lines, JSON, a folder of SWE-bench
    ``report.json``) or a DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> table = read_outcomes(pd.DataFrame({"task_id": ["a", "b"], "seed": [0, 0], "outcome": [True, False]}))
    >>> table.by, table.lookup({"task_id": "b", "seed": 0}).value
    (('task_id', 'seed'), False)
    """
    excluded: dict[tuple[Any, ...], str] = {}
    if isinstance(source, pd.DataFrame):
        frame, label = load_results(source), "<DataFrame>"  # read as a file's table is (a copy)
    elif isinstance(source, (str, Path)):
        label = str(source)
        if Path(source).is_dir():
            frame = _read_report_folder(Path(source))
        elif str(source).lower().endswith(".json"):
            frame, excluded = _read_json(Path(source))
        else:
            frame = load_results(source)
    else:
        raise TypeError(f"`outcomes` must be a path or a DataFrame, got {type(source).__name__}")
    if "task_id" not in frame.columns and "instance_id" in frame.columns:
        frame = frame.rename(columns={"instance_id": "task_id"})
    if "outcome" not in frame.columns:
        raise TraceError(f"the outcomes table has no `outcome` column; {column_hint(frame, 'outcome')}", source=label)
    if "run_id" in frame.columns:
        by: tuple[str, ...] = ("run_id",)
    elif "task_id" in frame.columns:
        by = ("task_id", "seed") if "seed" in frame.columns else ("task_id",)
    else:
        raise TraceError("the outcomes table needs a `run_id` column, or `task_id` (with `seed` when a task has "
                         f"several runs); it has {', '.join(map(str, frame.columns[:20]))}", source=label)
    if frame.empty:
        raise TraceError("the outcomes table has no rows", source=label)
    return OutcomeTable(frame.reset_index(drop=True), by, label,
                        {(key,): why for key, why in excluded.items()} if by == ("task_id",) else {})


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as err:
        raise TraceError(f"cannot read the outcomes table: {err}", source=str(path)) from err


def _read_report_folder(folder: Path) -> pd.DataFrame:
    """SWE-bench evaluation logs: every ``report.json`` under ``folder`` (links to folders not followed)."""
    rows: list[dict[str, Any]] = []
    reports = sorted(p for p in folder.rglob("report.json") if p.is_file())
    if not reports:
        raise TraceError("no report.json under this folder (SWE-bench's evaluation logs hold one per instance)",
                         source=str(folder))
    for path in reports:
        data = _load_json(path)
        if isinstance(data, dict) and isinstance(data.get("resolved"), bool):  # the instance's own, flat
            rows.append({"task_id": path.parent.name, "outcome": data["resolved"]})
        elif (found := _instance_rows(data)) is not None:
            rows.extend(found)
        else:
            raise TraceError("not a SWE-bench instance report: expected {instance_id: {\"resolved\": ...}} or "
                             "{\"resolved\": ...}", source=str(path))
    return pd.DataFrame.from_records(rows, columns=["task_id", "outcome"])


def _read_json(path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """A JSON outcomes file: a SWE-bench run report, a per-instance report, or an array of flat objects."""
    data = _load_json(path)
    if isinstance(data, list):
        if not all(isinstance(row, dict) for row in data):
            raise TraceError("a JSON outcomes table is an array of objects", source=str(path))
        return load_results(pd.DataFrame.from_records(data)), {}
    if not isinstance(data, dict):
        raise TraceError(f"expected a JSON object or array, got {type(data).__name__}", source=str(path))
    if "resolved_ids" in data:
        return _swebench_report(data, path)
    if (rows := _instance_rows(data)) is not None:  # per-instance report.json
        return pd.DataFrame.from_records(rows), {}
    raise TraceError("not an outcomes table: expected an array of objects with `outcome`, a SWE-bench report "
                     "(`resolved_ids`), or {instance_id: {\"resolved\": ...}}", source=str(path))


def _instance_rows(data: Any) -> list[dict[str, Any]] | None:
    """SWE-bench's per-instance report, ``{instance_id: {"resolved": ...}}``, as rows; None if it is not one."""
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "resolved" in v for v in data.values()):
        return [{"task_id": k, "outcome": v["resolved"]} for k, v in data.items()]
    return None


def _swebench_report(data: Mapping[str, Any], path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    verdicts: dict[str, Any] = {}
    excluded: dict[str, str] = {}
    for name, verdict in _SWEBENCH_LISTS.items():
        ids = data.get(name, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise TraceError(f"`{name}` must be a list of instance ids", source=str(path))
        for instance in ids:
            earlier = verdicts.get(instance, excluded.get(instance))
            if earlier is not None and (verdict is None or earlier != verdict):
                raise TraceError(f"instance {instance!r} is in `{name}` and in another list: which is its verdict?",
                                 source=str(path))
            if verdict is None:
                excluded[instance] = _SWEBENCH_WHY[name]
            else:
                verdicts[instance] = verdict
    rows = [{"task_id": k, "outcome": v} for k, v in verdicts.items()]
    frame = pd.DataFrame.from_records(rows, columns=["task_id", "outcome"])
    return frame, excluded


def _key_of(values: list[Any], column: str, label: str) -> list[Any]:
    """A key column's values as the record keeps them: ids as text, seeds as integers."""
    out = []
    for row, value in enumerate(values, start=1):
        if _blank(value):
            raise TraceError(f"row {row} has a blank `{column}`", source=label)
        if column == "seed":
            if isinstance(value, (float, np.floating)) and float(value).is_integer():
                value = int(value)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TraceError(f"row {row}: `seed` must be a whole number, got {value!r}", source=label)
            out.append(int(value))
        else:
            out.append(str(int(value)) if isinstance(value, (np.integer,)) else str(value))
    return out


def _verdict(value: Any, row: int, label: str) -> bool | float | None:
    """An outcome cell: True/False, a finite number, or None for a blank; anything else is an error."""
    if _blank(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(float(value)):
        return float(value)
    raise TraceError(f"row {row + 1}: `outcome` must be true/false or a number, got {value!r}", source=label)


def _describe(by: tuple[str, ...], key: tuple[Any, ...]) -> str:
    return ", ".join(f"{name} {value!r}" for name, value in zip(by, key))
