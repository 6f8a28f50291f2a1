"""The arms of ``agentab compare``: which runs are the baseline's and which the candidate's.

Two ways in:

- ``BASELINE CANDIDATE``: two trace files/folders (or two results tables), arms by position, named
  by ``--names``, else by the records' own ``arm`` field (one per source), else after the files or
  folders (their parents when both have the same name). The position decides the role: records whose
  own arm says the other role ("candidate" in the first file, "baseline" in the second) are an error;
  other record names are used, and the choice is printed;
- ``SOURCE... --arm-column COL`` (the default for one source: the records' ``arm``): the arms are the
  values of a runs column or a metadata key; ``--names`` picks two when there are more, and must be
  given for two arms unless one is named "baseline" (never by row order);
- ``SOURCE... --arm-column COL --baseline NAME [--candidates NAME... | --all-pairs]``: many arms, each
  candidate against the baseline (:func:`candidates`: the listed ones, else every other arm).

:func:`compare_data` returns the scores with an arm column, ready for :func:`agentab.compare`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

import agentab
from agentab.cli._inputs import (
    TABLE_SUFFIXES,
    InputError,
    filter_rows,
    is_table,
    load,
    read_spec,
    read_table,
    score,
)
from agentab.cli._output import Progress, note
from agentab.errors import where
from agentab.traces import SUFFIXES

__all__ = ["TRAJECTORY_NEEDS", "Arms", "arm_name", "candidates", "check_arms", "compare_data", "no_spec"]

_TRACE_SUFFIXES = tuple(sorted(SUFFIXES, key=len, reverse=True))  # the longest ending first


class Arms(NamedTuple):
    """The runs to compare: scores with an arm column, the traces they came from (None: tables), the arms."""

    data: pd.DataFrame
    traces: agentab.Traces | None
    column: str
    baseline: str | None
    candidate: str | None


def arm_name(path: Path) -> str:
    """runs/base.jsonl.gz -> "base"; a folder -> its name."""
    name = path.name
    for suffix in (*_TRACE_SUFFIXES, *TABLE_SUFFIXES, ".tsv"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def compare_data(args: argparse.Namespace, progress: Progress) -> Arms:
    """The runs to compare, with their arms, from the command's sources, --names and --arm-column."""
    sources = list(args.sources)
    tables = [is_table(p) for p in sources]
    if any(tables) and not all(tables):
        kinds = "; ".join(f"{p}: {'a results table' if t else 'traces'}" for p, t in zip(sources, tables))
        raise InputError(f"give trace files/folders or results tables (.csv/.tsv/.parquet/flat .jsonl), not both ({kinds})")
    names = tuple(args.names) if args.names else None
    if _many(args):
        return _many_arms(args, sources, tables, progress)
    if names and names[0] == names[1]:
        raise InputError(f"--names: baseline and candidate must differ, got {names[0]!r} twice")
    if args.arm_column is not None or len(sources) == 1:
        return _by_column(args, sources, all(tables), names, progress)
    if len(sources) != 2:
        raise InputError(
            f"give two sources, BASELINE CANDIDATE (got {len(sources)}), or take the arms from a column with --arm-column COL"
        )
    if sources[0].resolve() == sources[1].resolve():
        raise InputError(f"{sources[0]}: BASELINE and CANDIDATE are the same {'folder' if sources[0].is_dir() else 'file'}")
    if all(tables):
        return _tables_by_position(args, sources, names)
    return _traces_by_position(args, sources, progress)


def _by_column(args: argparse.Namespace, sources: list[Path], tables: bool, names: tuple[str, str] | None,
               progress: Progress, *, check: bool = True) -> Arms:
    """SOURCE... --arm-column COL: the arms are the values of a column (the records' `arm` by default)."""
    column = args.arm_column or "arm"
    where_ = ", ".join(map(str, sources))
    if tables:
        no_spec(args, sources)
        data, traces = read_table(sources, args), None
    else:
        spec = read_spec(args.spec)
        traces = load(sources, args, progress)
        data = filter_rows(_runs_column(score(traces, spec, progress), traces, column, where_), args)
    if not check:  # many arms: the column is checked here, the names by the caller
        if column not in data.columns or data[column].isna().any():
            check_arms(data, column, names, where_)
        return Arms(data, traces, column, None, None)
    names = check_arms(data, column, names, where_)
    return Arms(data, traces, column, *names)


def _many(args: argparse.Namespace) -> bool:
    """Whether the command asks for many arms (--baseline, --candidates, --all-pairs)."""
    return bool(getattr(args, "baseline", None) or getattr(args, "candidates", None) or getattr(args, "all_pairs", False))


def _many_arms(args: argparse.Namespace, sources: list[Path], tables: list[bool], progress: Progress) -> Arms:
    """SOURCE... --arm-column COL --baseline NAME [--candidates NAME... | --all-pairs]: the arms of a column.

    ``Arms.candidate`` is None: the candidates are read by the command (:func:`candidates`).
    """
    if args.names:
        raise InputError("--names picks two arms; with --baseline, name the candidates with --candidates")
    if not args.baseline:
        raise InputError(f"--{'candidates' if args.candidates else 'all-pairs'} compares arms with one baseline: "
                         "name it with --baseline NAME")
    if args.arm_column is None and len(sources) != 1:
        raise InputError("--baseline takes the arms from a column: give it with --arm-column COL (the sources are "
                         "not arms by position then)")
    arms = _by_column(args, sources, all(tables), (args.baseline, args.baseline), progress, check=False)
    present = list(dict.fromkeys(str(a) for a in pd.unique(arms.data[arms.column])))
    for name in (args.baseline, *(args.candidates or ())):
        if name not in present:
            flag = "--baseline" if name == args.baseline else "--candidates"
            raise InputError(f"{flag}: no arm {name!r} in column {arms.column!r} (arms: {', '.join(present)})")
    return arms._replace(baseline=args.baseline, candidate=None)


def candidates(args: argparse.Namespace, arms: Arms) -> str | list[str] | None:
    """What ``agentab.compare`` is given as ``candidate``: None (two arms), a list of names, or "all"."""
    if not _many(args):
        return arms.candidate
    if args.candidates:
        return list(args.candidates)
    present = {str(a) for a in pd.unique(arms.data[arms.column])}
    if not args.all_pairs and len(present) == 2:
        return next(a for a in present if a != args.baseline)  # two arms: the two-arm comparison, as --names
    return sorted(present - {args.baseline})


#: Why a results table cannot be scored as trajectories (the one wording of every such refusal).
TRAJECTORY_NEEDS = ("a trajectory score needs each run's steps (tool, args, observation status, in order), which a "
                    "results table (one row per run) does not have")


def no_spec(args: argparse.Namespace, sources: Sequence[Path], *, instead: str = "give trace files") -> None:
    """A results table has no steps: --spec (a trajectory score) cannot apply to it; ``instead`` is the remedy."""
    if getattr(args, "spec", None) is not None:
        raise InputError(f"--spec: {TRAJECTORY_NEEDS} ({', '.join(map(str, sources))}); {instead}, or leave out --spec")


def _tables_by_position(args: argparse.Namespace, sources: list[Path], names: tuple[str, str] | None) -> Arms:
    """BASELINE CANDIDATE as two scores tables, whose own arm column (if any) must agree with the arm's name."""
    names = names or _default_names(args, *sources)
    named_by = "by --names" if args.names else "after the files or folders"
    no_spec(args, sources)
    frames = []
    for path, name in zip(sources, names):
        frame = read_table(path, args)
        if "arm" in frame.columns and frame["arm"].notna().any():
            own = [str(a) for a in pd.unique(frame["arm"].dropna())]
            if own != [name]:
                raise InputError(
                    f"{path}: the table's arm column says {', '.join(map(repr, own))}, but this arm is named {name!r} "
                    f"({named_by}): name the arms with --names BASELINE CANDIDATE, or compare by that column: agentab compare "
                    f"{' '.join(map(str, sources))} --arm-column arm"
                )
        frames.append(frame.assign(arm=name))
    return Arms(pd.concat(frames, ignore_index=True), None, "arm", *names)


def _traces_by_position(args: argparse.Namespace, sources: list[Path], progress: Progress) -> Arms:
    """BASELINE CANDIDATE as two trace files/folders, loaded together, each run's arm its source's."""
    spec = read_spec(args.spec)
    traces = load([str(p) for p in sources], args, progress)  # the records' own arms, if any, are kept
    position = _source_positions(traces.runs["source"], sources)
    names = _position_names(args, traces.runs["arm"], position, sources)
    for i, (path, name) in enumerate(zip(sources, names)):
        if not (position == i).any():
            message = f"{path}: no valid runs for arm {name!r}: every record was rejected"
            if len(traces.rejected):
                first = traces.rejected.iloc[0]
                message += f" (e.g. {where(first['source'], first['line'])}: {first['reason']})"
            raise InputError(message)
    scores = score(traces, spec, progress)
    arm_of = pd.Series([names[i] for i in position], index=traces.runs["run_id"].astype(str).to_numpy())
    scores["arm"] = arm_of.reindex(scores["run_id"].astype(str)).to_numpy()
    return Arms(filter_rows(scores, args), traces, "arm", *names)


def _default_names(args: argparse.Namespace, baseline: Path, candidate: Path) -> tuple[str, str]:
    """The arms named after their files or folders; after the nearest parent folders that differ when those are equal."""
    names = arm_name(baseline), arm_name(candidate)
    if names[0] != names[1]:
        return names
    for left, right in zip(baseline.resolve().parents, candidate.resolve().parents):
        if left.name and right.name and left.name != right.name:
            note(args, f"both sources are named {names[0]!r}: the arms are named after their folders, "
                       f"{left.name!r} and {right.name!r} (--names to choose)")
            return left.name, right.name
    raise InputError(
        f"{baseline} and {candidate}: both arms would be named {names[0]!r}; name them with --names BASELINE CANDIDATE"
    )


def _runs_column(scores: pd.DataFrame, traces: agentab.Traces, column: str, where_: str,
                 flag: str = "--arm-column") -> pd.DataFrame:
    """Add ``column`` to the scores: a runs column, or a key of the runs' metadata (``flag``: the option naming it)."""
    if column in scores.columns:
        return scores
    runs = traces.runs
    if column in runs.columns:
        values = runs[column]
    else:
        values = traces.metadata_values(column) if "metadata" in runs.columns else pd.Series(dtype=object)
        if not values.notna().any():
            shown = [c for c in runs.columns if c not in ("metadata", "line")]
            raise InputError(
                f"{where_}: {flag} {column!r} is neither a runs column nor a metadata key "
                f"(columns: {', '.join(map(str, shown))})"
            )
    by_run = pd.Series(values.to_numpy(), index=runs["run_id"].astype(str).to_numpy())
    scores = scores.copy()
    scores[column] = by_run.reindex(scores["run_id"].astype(str)).to_numpy()
    return scores


def check_arms(data: pd.DataFrame, column: str, names: Sequence[str] | None, where_: str,
               flag: str = "--names BASELINE CANDIDATE") -> tuple[str, str]:
    """The baseline and candidate arms of ``column``: --names; or two arms, one named baseline (or candidate).

    Never by row order.
    """
    if column not in data.columns:
        raise InputError(f"{where_}: no column {column!r} for the arms (columns: {', '.join(map(str, data.columns))}); "
                         "name it with --arm-column COL")
    missing = data[column].isna()
    if missing.all():
        hint = (" (the records have no `arm` field): give two sources, BASELINE CANDIDATE, or the column holding "
                "the arms with --arm-column") if column == "arm" else ""
        raise InputError(f"{where_}: no run has a value in column {column!r}{hint}")
    if missing.any():
        raise InputError(f"{where_}: {int(missing.sum()):,} of {len(data):,} runs have no value in column {column!r}")
    arms = list(dict.fromkeys(str(a) for a in pd.unique(data[column])))
    if names:
        for name in names:
            if name not in arms:
                raise InputError(f"--names: no arm {name!r} in column {column!r} (arms: {', '.join(arms)})")
        return names[0], names[1]
    if len(arms) < 2:
        raise InputError(
            f"{where_}: column {column!r} has one arm ({arms[0]}); give two sources, BASELINE CANDIDATE, or an "
            "--arm-column with two arms"
        )
    if len(arms) > 2:
        raise InputError(f"{where_}: column {column!r} has {len(arms)} arms ({', '.join(arms)}); pick two with {flag}")
    if "baseline" in arms:
        return "baseline", next(a for a in arms if a != "baseline")
    if "candidate" in arms:  # as agentab.compare: the roles come from the names, never from the rows' order
        return next(a for a in arms if a != "candidate"), "candidate"
    raise InputError(f"{where_}: column {column!r} has two arms, {arms[0]} and {arms[1]}, and neither is named "
                     f"baseline: say which is with {flag} (the arms are never chosen by row order)")


def _source_positions(files: pd.Series, sources: Sequence[Path]) -> np.ndarray:
    """0 for the runs read from BASELINE (a file, or a file under the folder), 1 for CANDIDATE's."""
    where_from = {}
    for name in pd.unique(files.astype(str)):
        path = Path(name)
        where_from[name] = next(i for i, src in enumerate(sources) if path == src or path.is_relative_to(src))
    return np.array([where_from[name] for name in files.astype(str)], dtype=int)


def _position_names(args: argparse.Namespace, arms: pd.Series, position: Any, sources: Sequence[Path]) -> tuple[str, str]:
    """The arms' names: --names; else the records' own arm field, one per source; else the files or folders."""
    own = [sorted(set(arms[position == i].dropna().astype(str))) for i in (0, 1)]
    if args.names:
        replaced = [f"{src}: {', '.join(o)}" for src, o, name in zip(sources, own, args.names) if o and o != [name]]
        if replaced:
            note(args, f"the records' own arm field is replaced by --names ({'; '.join(replaced)})")
        return tuple(args.names)
    if not own[0] and not own[1]:
        return _default_names(args, *sources)
    hint = (f"name the arms with --names BASELINE CANDIDATE, or take them from the records: agentab compare "
            f"{' '.join(map(str, sources))} --arm-column arm")
    for src, o, i in zip(sources, own, (0, 1)):
        if len(o) > 1:
            raise InputError(f"{src}: its records name {len(o)} arms ({', '.join(o)}); {hint}")
        if not o:
            raise InputError(f"{src}: its records have no arm field, while the other source's records do; {hint}")
        missing = int(arms[position == i].isna().sum())
        if missing:
            raise InputError(f"{src}: {missing} of its records have no arm field and the others say {o[0]!r}; {hint}")
    if own[0] == own[1]:
        raise InputError(f"{sources[0]} and {sources[1]}: the records of both name the arm {own[0][0]!r}; {hint}")
    names = own[0][0], own[1][0]
    if names[0] == "candidate" or names[1] == "baseline":  # the records' roles contradict the positions
        raise InputError(
            f"{sources[0]} is in the BASELINE position but its records say arm {names[0]!r}, and {sources[1]} (CANDIDATE) "
            f"says {names[1]!r}: swap the files (agentab compare {sources[1]} {sources[0]}), or keep this order and "
            f"name the arms with --names BASELINE CANDIDATE"
        )
    if names != (arm_name(sources[0]), arm_name(sources[1])):
        note(args, f"the file order decides: baseline {names[0]!r} ({sources[0]}), candidate {names[1]!r} "
                   f"({sources[1]}), named as their records name them (--names to rename)")
    return names
