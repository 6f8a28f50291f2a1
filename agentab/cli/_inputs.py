"""The command line's inputs: option values, spec files, scores tables and traces, read and checked.

Bad input found here raises :class:`InputError` (or the library's own error), which the command
turns into one line on stderr and exit code 2. Shared checks come from :mod:`agentab._checks`,
with the parameter named as its flag (``--n-resamples must be ...``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

import agentab
from agentab._vocabulary import DIRECTIONS, KINDS
from agentab._write import atomic_text
from agentab.cli._output import Progress, note
from agentab.errors import PowerError, SpecError, TraceError, TraceWarning

__all__ = ["TABLE_SUFFIXES", "InputError", "checked", "fields", "filter_rows", "is_table", "load", "need_column", "number",
           "parse_guardrails", "parse_metrics", "positive_int", "read_spec", "read_table", "require_file", "score",
           "spec_record", "where", "write_spec"]

#: The endings of a scores table (``agentab score -o``).
TABLE_SUFFIXES = (".csv", ".parquet")
#: Columns that may hold the task when a table has no ``task_id`` (offered in a note).
TASK_CANDIDATES = ("instance_id", "task", "task_name", "problem_id", "sample_id", "instance")

T = TypeVar("T")


class InputError(ValueError):
    """Bad command-line input found by the CLI itself (exit 2)."""


def positive_int(text: str) -> int:
    """argparse ``type`` of a count: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def number(text: str, what: str) -> float:
    """A number, with ``%`` meaning hundredths (``5%`` is 0.05)."""
    raw = text.strip()
    try:
        return float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise PowerError(f"{what} must be a number (or a percentage), got {text!r}") from None


def checked(check: Callable[..., T], value: Any, flag: str, **options: Any) -> T:
    """``check(value, InputError, **options)`` from :mod:`agentab._checks`, its message naming ``flag``.

    Examples
    --------
    >>> from agentab._checks import check_n_resamples
    >>> checked(check_n_resamples, 10, "--n-resamples", minimum=99)
    Traceback (most recent call last):
    agentab.cli._inputs.InputError: --n-resamples must be an integer >= 99, got 10
    """
    try:
        return check(value, InputError, **options)
    except InputError as err:
        parameter = f"`{flag.lstrip('-').replace('-', '_')}`"
        raise InputError(str(err).replace(parameter, flag)) from None


def fields(args: argparse.Namespace) -> dict[str, str] | None:
    """``--field NAME=KEY ...`` as load_traces' ``fields`` mapping."""
    if not getattr(args, "field", None):
        return None
    out = {}
    for item in args.field:
        name, eq, key = (part.strip() for part in item.partition("="))
        if not eq or not name or not key:
            raise InputError(f"--field {item!r}: expected NAME=KEY, e.g. --field outcome=reward")
        out[name] = key
    return out


def where(args: argparse.Namespace) -> list[str]:
    """``--where EXPR ...``: the row filters, in order."""
    return list(getattr(args, "where", None) or [])


def is_table(path: Path) -> bool:
    """A results table (.csv, .tsv, .parquet, or .jsonl of flat records), not a trace file or folder."""
    return agentab.traces.is_results_table(path)


def need_column(table: pd.DataFrame, name: str, flag: str) -> None:
    """A column the command needs (the primary metric, --metric), else the error listing candidates and the fix."""
    if name not in table.columns:
        raise InputError(f"{flag}: {agentab.traces.column_hint(table, name, cli=True)}")


def parse_metrics(items: Sequence[str] | None) -> dict[str, Any] | None:
    """``--metric COL``, ``COL=KIND``, ``COL=KIND:DIR`` -> compare's ``metrics`` mapping (None: the default set)."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        name, has_kind, spec = (part.strip() for part in item.partition("="))
        if not name or (has_kind and not spec):
            raise InputError(f"--metric {item!r}: expected COLUMN, COLUMN=KIND or COLUMN=KIND:higher|lower")
        if name in out:
            raise InputError(f"--metric {name!r} is given twice")
        if not has_kind:
            out[name] = None
            continue
        kind, has_direction, direction = (part.strip().lower() for part in spec.partition(":"))
        if kind not in KINDS:
            raise InputError(f"--metric {item!r}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        if has_direction and direction not in DIRECTIONS:
            raise InputError(f"--metric {item!r}: the direction must be higher or lower (which is better) or neither, "
                             f"got {direction!r}")
        out[name] = (kind, direction) if has_direction else kind
    return out


def parse_guardrails(items: Sequence[str] | None) -> list[str] | None:
    """``--guardrail "tokens:p95<=+10%"`` -> compare's list of "metric: rule" (the rule is checked by compare)."""
    if not items:
        return None
    out = []
    for item in items:
        metric, colon, rule = item.partition(":")
        if not colon or not metric.strip() or not rule.strip():
            raise InputError(f"--guardrail {item!r}: expected 'METRIC: STAT OP MARGIN', e.g. 'tokens: p95 <= +10%'")
        out.append(f"{metric.strip()}:{rule.strip()}")
    return out


def require_file(path: Path) -> None:
    """A file (or folder) that exists, else the one-line error of a missing file."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")


def read_spec(path: Path | None) -> agentab.TrajectorySpec | dict[str, agentab.TrajectorySpec]:
    """A spec file: one spec object, or ``{"tasks": {task_id: spec}}``; no file, an empty spec."""
    if path is None:
        return agentab.TrajectorySpec()
    require_file(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}, line {err.lineno}: malformed JSON: {err.msg}") from err
    except UnicodeDecodeError as err:
        raise SpecError(f"{path}: not a UTF-8 text file ({err.reason})") from err
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if set(data) == {"tasks"}:
        if not isinstance(data["tasks"], dict):
            raise SpecError(f"{path}: \"tasks\" must map each task id to a spec object")
        return {str(task): _spec(spec, f"{path}, task {task}") for task, spec in data["tasks"].items()}
    return _spec(data, str(path))


def _spec(data: Any, where_: str) -> agentab.TrajectorySpec:
    """One spec object of a spec file; its errors name the file's keys, not Python's keywords."""
    keys = [f.name for f in dataclasses.fields(agentab.TrajectorySpec)]
    if not isinstance(data, dict):
        raise SpecError(f"{where_}: expected a spec object {{key: value}}, got {type(data).__name__}")
    unknown = [str(k) for k in data if k not in keys]
    if unknown:
        tasks = ' (a file of per-task specs is {"tasks": {TASK_ID: spec}})' if "tasks" in unknown else ""
        raise SpecError(f"{where_}: unknown spec key {unknown[0]!r}{tasks}; keys: {', '.join(keys)}")
    try:
        return agentab.TrajectorySpec(**data)
    except (TypeError, ValueError, AttributeError) as err:
        message = re.sub(r"`(\w+)`", r'key "\1"', re.sub(r"`(\w+)` ==", r'key "\1" is', str(err)))
        raise SpecError(f"{where_}: {message}") from err


def spec_record(spec: agentab.TrajectorySpec) -> dict[str, Any]:
    """One spec as the JSON object :func:`read_spec` reads back: its fields that differ from the defaults."""
    default = agentab.TrajectorySpec()
    out: dict[str, Any] = {}
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if value == getattr(default, field.name):
            continue
        if callable(value) or (isinstance(value, dict) and any(callable(v) for v in value.values())):
            raise SpecError(f"spec field {field.name}: a Python function cannot be written to a spec file")
        if field.name == "reference":
            value = [{k: v for k, v in (("tool", c.tool), ("args", c.args), ("status", c.status)) if v is not None}
                     for c in value]
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


def write_spec(path: Path, specs: agentab.TrajectorySpec | dict[str, agentab.TrajectorySpec]) -> Path:
    """Write a spec file (one spec, or ``{"tasks": {task_id: spec}}``) that ``--spec`` reads back, atomically."""
    data = ({"tasks": {str(task): spec_record(spec) for task, spec in specs.items()}} if isinstance(specs, dict)
            else spec_record(specs))
    return atomic_text(path, json.dumps(data, indent=1) + "\n")


def read_table(paths: Path | Sequence[Path], args: argparse.Namespace) -> pd.DataFrame:
    """Results or scores tables through :func:`agentab.load_results`, with --field, --where and --lenient."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    for path in paths:
        require_file(path)
    if getattr(args, "outcomes", None) is not None:
        raise InputError("--outcomes joins verdicts to trace files; a results table has its outcome column already")
    table = _results(paths, args, fields(args))
    for expression, before, after in table.attrs.get("where", []):
        note(args, f"--where {expression!r}: {after:,} of {before:,} rows kept")
    if "task_id" not in table.columns:
        found = [c for c in TASK_CANDIDATES if c in table.columns]
        if found:
            note(args, f"no task_id column: if {found[0]} names the task, --field task_id={found[0]}")
    return table


def _results(source: Any, args: argparse.Namespace, field_map: dict[str, str] | None) -> pd.DataFrame:
    """:func:`agentab.load_results`, its errors naming the flags (--field, --where) instead of its parameters."""
    try:
        return agentab.load_results(source, fields=field_map, where=where(args),
                                    strict=not getattr(args, "lenient", False))
    except TraceError as err:
        reason = err.reason
        if reason.startswith("where "):
            reason = "--" + reason
        elif reason.startswith("field ") and field_map:
            name = reason[len("field "):].split(":", 1)[0]
            reason = reason.replace(f"field {name}:", f"--field {name}={field_map.get(name, '')}:", 1)
        source_name = None if err.source == "<DataFrame>" else err.source
        raise TraceError(reason, source=source_name, line=err.line) from None


def filter_rows(frame: pd.DataFrame, args: argparse.Namespace, what: str = "runs") -> pd.DataFrame:
    """The rows of a scores or runs table that every --where keeps (its columns and attrs unchanged)."""
    if not where(args):
        return frame
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)  # only the rows are taken from the filtered copy
        kept = _results(frame.assign(_agentab_row=np.arange(len(frame))), args, None)
    out = frame.iloc[kept["_agentab_row"].to_numpy()].reset_index(drop=True)
    out.attrs = dict(frame.attrs)
    for expression, before, after in kept.attrs.get("where", []):
        note(args, f"--where {expression!r}: {after:,} of {before:,} {what} kept")
    return out


#: The spec file ``agentab example`` writes beside the traces; a folder's own is not read as traces.
SPEC_NAME = "spec.json"


def without_spec(sources: Sequence[Any]) -> list[Any]:
    """The sources, a folder holding a ``spec.json`` replaced by its other entries (the trace files and folders)."""
    out: list[Any] = []
    for source in sources:
        folder = Path(source)
        if not (isinstance(source, (str, Path)) and folder.is_dir() and (folder / SPEC_NAME).is_file()):
            out.append(source)
            continue
        entries = sorted(p for p in folder.iterdir() if p.name != SPEC_NAME and (
            (p.is_dir() and not p.is_symlink()) or p.name.lower().endswith(tuple(agentab.traces.SUFFIXES))))
        if not entries:
            raise TraceError(f"no trace files in this directory (only its {SPEC_NAME})", source=str(folder))
        out.extend(entries)
    return out


def load(source: Any, args: argparse.Namespace, progress: Progress) -> agentab.Traces:
    """:func:`agentab.load_traces` with the command's --format, --field and --lenient, and a loading bar.

    A folder's ``spec.json`` (as ``agentab example`` writes) is the spec, not a trace file: it is skipped.
    """
    source = without_spec(source) if isinstance(source, list) else source
    field_map = fields(args)
    try:
        with progress.phase("loading", unit=" files") as tick:
            traces = agentab.load_traces(source, format=getattr(args, "format", "auto"), fields=field_map,
                                         outcomes=getattr(args, "outcomes", None), strict=not args.lenient,
                                         progress=tick, engine=getattr(args, "engine", None),
                                         scheduler=getattr(args, "scheduler", None))
    except (TypeError, ValueError) as err:  # a bad --format or --field: the loader's message names it
        if isinstance(err, TraceError):
            raise
        raise InputError(str(err).replace("`format` ==", "--format").replace("`fields`", "--field")
                         .replace("`outcomes`", "--outcomes").replace("`scheduler`", "--scheduler")
                         .replace("engine='memory'", "--engine memory").replace("engine='dask'", "--engine dask")
                         .replace("engine='stream'", "--engine stream")) from err
    unmatched = traces.unmatched_outcomes
    if unmatched is not None and len(unmatched):
        first = ", ".join(f"{k} {unmatched.loc[0, k]}" for k in unmatched.columns if k not in ("row", "outcome"))
        note(args, f"{len(unmatched):,} rows of --outcomes matched no run (the first: row {unmatched.loc[0, 'row']}, "
             f"{first})")
    converted = sorted({fmt for _, fmt in traces.formats if fmt != "record"})
    if converted and getattr(args, "format", "auto") == "auto":
        note(args, f"read as {', '.join(converted)} (detected; --format to choose)")
    return traces


def score(traces: agentab.Traces, spec: Any, progress: Progress) -> pd.DataFrame:
    """:func:`agentab.score` of every run, shown as one step of a bar."""
    with progress.phase(f"scoring {len(traces):,} runs", total=1):
        return agentab.score(traces, spec)
