"""Load agent run traces into tables: one row per run, one row per step.

The record format is documented in :mod:`agentab.record`. Loading is the
first step of the data flow (load -> score -> compare -> decide -> plan ->
report); everything downstream reads the two tables built here.

``Traces.runs`` columns
    ``run_id``, ``task_id``, ``arm``, ``model``, ``harness`` (categorical);
    ``seed`` (Int64); ``outcome`` (``boolean`` when every outcome is
    true/false, else float64); ``n_steps``, ``n_errors`` (steps whose
    observation status is ``"error"``), ``tokens_in``, ``tokens_out``,
    ``tokens`` (sums over steps; missing if any step's count is missing),
    ``retries``, ``backtracks``, ``files_created``, ``files_modified``,
    ``files_deleted``, ``external_calls`` (counts of the terminal-state lists;
    missing when not recorded) as Int64; ``cost_usd``, ``latency_s``
    (float64, NaN when not recorded); ``terminal_state``, ``metadata``
    (canonical JSON text); ``source``, ``line`` (where the record was read).
``Traces.steps`` columns
    ``run_id`` (categorical, same categories as the runs), ``index`` (Int64),
    ``tool`` (categorical), ``args`` (canonical JSON text: sorted keys, no
    whitespace, so equal arguments compare equal), ``status`` (categorical
    ``ok``/``error``), ``error`` (text), ``tokens_in``, ``tokens_out``
    (Int64), ``started_at``, ``ended_at`` (``datetime64[ns, UTC]``),
    ``observation``, ``metadata`` (canonical JSON text).
``Traces.rejected`` columns
    ``source``, ``line``, ``run_id``, ``field``, ``reason``: one row per
    record left out (only with ``strict=False``).
"""

from __future__ import annotations

import json
import os
import re
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentab import formats
from agentab.formats.decode import RecordDecoder, Rejection, gc_paused
from agentab.formats.files import BOM, JSON_SPACE, open_trace_file
from agentab.traces._parallel import PARALLEL_MIN_BYTES, default_workers, read_lines, read_parallel
from agentab.errors import TraceError, TraceWarning

__all__ = ["Traces", "load_traces", "read_traces"]

PathLike = Union[str, "os.PathLike[str]"]
Source = Union[PathLike, Mapping[str, Any], Sequence[Any]]

#: File name endings read from a directory, and what each holds.
SUFFIXES = {".jsonl": "lines", ".ndjson": "lines", ".jsonl.gz": "lines", ".ndjson.gz": "lines",
            ".json": "array", ".json.gz": "array", ".eval": "archive"}

_RUN_CATEGORIES = ("run_id", "task_id", "arm", "model", "harness", "source")
_TEXT = pd.Index(["text"]).dtype  # the default dtype of text categories in this pandas
_REJECTED_COLUMNS = ("source", "line", "run_id", "field", "reason")


# --------------------------------------------------------------------------- #
# The result
# --------------------------------------------------------------------------- #
@dataclass(frozen=True, repr=False)
class Traces:
    """Loaded agent runs: ``runs`` (one row per run) and ``steps`` (one per step).

    Attributes
    ----------
    runs, steps : pandas.DataFrame
        See the module docstring for every column.
    rejected : pandas.DataFrame
        Records left out by ``load_traces(..., strict=False)``, with
        ``source``, ``line``, ``run_id``, ``field`` and ``reason``.
    n_read : int
        Records read: always ``len(runs) + len(rejected)``.
    sources : tuple of str
        The files (or ``"<records>"``) read, in order.
    formats : tuple of (str, str)
        Each file's (or record list's) format, as given or detected by
        ``load_traces(format="auto")``.

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.load_traces([
    ...     {"run_id": "r1", "task_id": "t1", "seed": 0, "outcome": True,
    ...      "steps": [{"index": 0, "tool": "ls", "args": {"path": "."},
    ...                 "observation": {"status": "ok"}}]}])
    >>> traces
    Traces(1 run, 1 step, 0 rejected)
    >>> traces.steps.loc[0, "args"]
    '{"path":"."}'
    """

    runs: pd.DataFrame
    steps: pd.DataFrame
    rejected: pd.DataFrame
    n_read: int
    sources: tuple[str, ...] = field(default=())
    formats: tuple[tuple[str, str], ...] = field(default=())

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        def plural(n: int, word: str) -> str:
            return f"{n:,} {word}{'' if n == 1 else 's'}"

        arms = self.arms
        arm_text = f", {plural(len(arms), 'arm')}" if arms else ""
        return (
            f"Traces({plural(len(self.runs), 'run')}, {plural(len(self.steps), 'step')}"
            f"{arm_text}, {len(self.rejected):,} rejected)"
        )

    @property
    def arms(self) -> list[str]:
        """Arm names in order of first appearance (missing arms left out)."""
        return [str(a) for a in pd.unique(self.runs["arm"].dropna())]

    def metadata_values(self, key: str) -> pd.Series:
        """``metadata[key]`` of every run, as text, indexed like ``runs`` (None where a run has no such key).

        Text stays as it is; any other value (a number, a flag, a list) becomes
        its canonical JSON text (``true``, ``3``), so equal values compare equal.

        Examples
        --------
        >>> import agentab
        >>> traces = agentab.load_traces([
        ...     {"run_id": "a", "task_id": "t", "seed": 0, "outcome": True, "steps": [],
        ...      "metadata": {"task_type": "edit", "retried": True}},
        ...     {"run_id": "b", "task_id": "t", "seed": 1, "outcome": False, "steps": []}])
        >>> traces.metadata_values("task_type").tolist(), traces.metadata_values("retried").tolist()
        (['edit', None], ['true', None])
        """
        def value(text: Any) -> Any:
            meta = json.loads(text) if isinstance(text, str) else None
            found = meta.get(key) if isinstance(meta, dict) else None
            return found if found is None or isinstance(found, str) else json.dumps(found, sort_keys=True)

        return pd.Series([value(text) for text in self.runs["metadata"]], index=self.runs.index, dtype=object)

    def summary(self, by: str = "arm") -> pd.DataFrame:
        """Per-arm summary table; see :func:`agentab.summary.summarize`."""
        from agentab.traces.summary import summarize

        return summarize(self, by=by)

    # -- persistence ---------------------------------------------------------- #
    def to_parquet(self, path: PathLike) -> Path:
        """Write ``runs.parquet``, ``steps.parquet``, ``rejected.parquet`` into ``path``.

        Dtypes (categoricals, nullable ints, timestamps) survive the round
        trip through :func:`read_traces`.
        """
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        self.runs.to_parquet(out / "runs.parquet", index=False)
        self.steps.to_parquet(out / "steps.parquet", index=False)
        self.rejected.to_parquet(out / "rejected.parquet", index=False)
        (out / "traces.json").write_text(json.dumps({"n_read": self.n_read, "sources": list(self.sources)}))
        return out

    def to_records(self) -> list[dict[str, Any]]:
        """Rebuild one trace record (dict) per run, in the documented format.

        Ids come back as text and timestamps as ISO-8601 text in UTC; every
        other value comes back as it was loaded.
        """
        by_run: dict[str, list[dict[str, Any]]] = {}
        for row in self.steps.itertuples(index=False):
            by_run.setdefault(row.run_id, []).append(_step_record(row))
        return [_run_record(row, by_run.get(row.run_id, [])) for row in self.runs.itertuples(index=False)]

    def to_jsonl(self, path: PathLike) -> Path:
        """Write :meth:`to_records` as JSON Lines (one run per line)."""
        out = Path(path)
        with out.open("wb") as fh:
            for record in self.to_records():
                fh.write(msgspec.json.encode(record) + b"\n")
        return out


def _copy_present(rec: dict[str, Any], row: Any, names: tuple[str, ...], convert: Any) -> None:
    """Set ``rec[name] = convert(row.name)`` for each name whose value is not missing."""
    for name in names:
        value = getattr(row, name)
        if not pd.isna(value):
            rec[name] = convert(value)


def _step_record(row: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"index": int(row.index), "tool": row.tool, "args": json.loads(row.args)}
    _copy_present(rec, row, ("observation",), json.loads)
    _copy_present(rec, row, ("tokens_in", "tokens_out"), int)
    _copy_present(rec, row, ("started_at", "ended_at"), lambda t: t.isoformat())
    _copy_present(rec, row, ("metadata",), json.loads)
    return rec


def _run_record(row: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    rec: dict[str, Any] = {"run_id": row.run_id, "task_id": row.task_id, "seed": int(row.seed)}
    _copy_present(rec, row, ("arm",), str)
    rec["steps"] = steps
    _copy_present(rec, row, ("terminal_state",), json.loads)
    _copy_present(rec, row, ("retries", "backtracks"), int)
    outcome = row.outcome
    rec["outcome"] = bool(outcome) if isinstance(outcome, (bool, np.bool_)) else float(outcome)
    _copy_present(rec, row, ("cost_usd", "latency_s"), float)
    _copy_present(rec, row, ("metadata",), json.loads)
    return rec


# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #
def load_traces(source: Source, *, format: str = "auto", fields: Mapping[str, str] | None = None,
                arm: str | None = None, strict: bool = True, workers: int | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> Traces:
    """Load agent run traces into a :class:`Traces` (runs and steps tables).

    Parameters
    ----------
    source : path, list, or dict
        One of: a path to a ``.jsonl`` / ``.ndjson`` file (one record per
        line), a ``.json`` file (an array of records, or one record), either
        gzip-compressed (``.jsonl.gz``, ``.json.gz``); a directory (every such
        file under it, recursively, in sorted order); a list of paths; a list
        of record dicts; or a dict ``{arm_name: source}`` giving each source's
        arm. The record format is documented in :mod:`agentab.record`.
    format : str
        ``"auto"`` (default): each file's format is detected from its first
        bytes (and a list of dicts from its first dict); the choice is in
        ``Traces.formats``. Or one of :func:`agentab.formats.available`:
        ``"record"`` (agentab's own), and the formats converted to it (see
        :mod:`agentab.formats`).
    fields : mapping, optional
        For converted formats: agentab's name of a run-level field
        (``run_id``, ``task_id``, ``seed``, ``arm``, ``model``, ``harness``,
        ``outcome``, ``cost_usd``, ``latency_s``) -> the format's name for
        it (an attribute, a key, a dotted path), replacing the format's
        default. Not used by agentab's own record.
    arm : str, optional
        Arm of every run in ``source`` (not with a dict source). A record
        whose own ``arm`` differs is an error.
    strict : bool, default True
        If True, the first problem (in reading order) raises
        :class:`~agentab.errors.TraceError`. If False, bad records are left
        out and listed in ``Traces.rejected``; records read always equals
        runs loaded plus records rejected.
    workers : int, optional
        Processes used to decode a large (48 MiB or more) uncompressed JSON
        Lines file; default: the CPUs available, at most 8. ``1`` reads
        everything in this process. The result does not depend on it.
    progress : callable, optional
        Called as ``progress(path, done, total)`` after each file is read
        (``total`` files in all), for a progress bar.

    Returns
    -------
    Traces

    Raises
    ------
    TraceError
        Malformed JSON, a missing required field, a wrong type, a duplicate
        ``run_id`` (within or across files), a negative or non-finite
        number, step indices that are not ``0..n-1``, a bad timestamp, an arm
        conflict, or no records at all. The message names the file, line and
        field.
    FileNotFoundError
        A path that does not exist.

    Examples
    --------
    >>> import agentab
    >>> records = [
    ...     {"run_id": "a", "task_id": "t1", "seed": 0, "outcome": True,
    ...      "steps": [{"index": 0, "tool": "search", "args": {"q": "x"},
    ...                 "observation": {"status": "ok"},
    ...                 "tokens_in": 100, "tokens_out": 20}]},
    ...     {"run_id": "b", "task_id": "t1", "seed": 1, "outcome": "yes",
    ...      "steps": []},
    ... ]
    >>> traces = agentab.load_traces(records, arm="baseline", strict=False)
    >>> traces.runs[["run_id", "arm", "outcome", "n_steps", "tokens"]]
      run_id       arm  outcome  n_steps  tokens
    0      a  baseline     True        1     120
    >>> traces.rejected.loc[0, "reason"]
    'expected bool | float, got str'
    """
    _load_traces_iv(source, arm, strict, workers)
    if progress is not None and not callable(progress):
        raise TypeError(f"`progress` must be callable as progress(path, done, total), got {progress!r}")
    _formats_iv(format, fields)
    decoder = RecordDecoder(strict=strict)
    reader = _Reader(decoder, default_workers() if workers is None else workers, progress, format, fields)
    if progress is not None:
        reader.total = sum(1 for _ in _paths(source))
    if isinstance(source, Mapping):
        for arm_name, part in source.items():
            reader.feed(part, arm_name)
    else:
        reader.feed(source, arm)
    sources = reader.sources
    runs_table, steps_table, rejected = decoder.finish()
    if decoder.n_read == 0:
        raise TraceError(f"no trace records found in {_describe(sources, source)}")
    runs, steps = _frames(runs_table, steps_table, rejected)
    return Traces(runs=runs, steps=steps, rejected=_rejected_frame(rejected),
                  n_read=decoder.n_read, sources=tuple(sources), formats=tuple(reader.chosen))


def _load_traces_iv(source: Any, arm: Any, strict: Any, workers: Any) -> None:
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise TypeError(f"`workers` must be a positive integer or None, got {workers!r}")
    if not isinstance(strict, bool):
        raise TypeError(f"`strict` must be True or False, got {strict!r}")
    if arm is not None and (not isinstance(arm, str) or not arm):
        raise TypeError(f"`arm` must be a non-empty string or None, got {arm!r}")
    if isinstance(source, Mapping):
        if arm is not None:
            raise TypeError("give arms either as a dict {arm: source} or with `arm=`, not both")
        if "steps" in source and "run_id" in source:
            raise TypeError("`source` looks like a single trace record: pass it in a list, [record]")
        for key in source:
            if not isinstance(key, str) or not key:
                raise TypeError(f"arm names in a dict source must be non-empty strings, got {key!r}")
    elif not isinstance(source, (str, os.PathLike, list, tuple)):
        raise TypeError(
            "`source` must be a path, a list of paths or of record dicts, or a dict {arm: source}; "
            f"got {type(source).__name__}"
        )


def _formats_iv(format: Any, fields: Any) -> None:
    if not isinstance(format, str) or (format != "auto" and format not in formats.available()):
        raise TypeError(f"`format` == {format!r}: must be 'auto' or one of {', '.join(formats.available())}")
    if fields is not None:
        if not isinstance(fields, Mapping):
            raise TypeError(f"`fields` must be a mapping {{agentab field: the format's name}}, got {type(fields).__name__}")
        if format == "record":
            raise TypeError("`fields` renames the fields of converted formats; agentab's own record has fixed names")
        formats.resolve_fields({}, fields, formats.RUN_FIELDS)  # unknown names and empty values are errors here


def _describe(sources: list[str], source: Any) -> str:
    if sources:
        return ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
    return repr(source) if not isinstance(source, (list, tuple)) else "an empty list"


class _Reader:
    """Sends every record of a source to the decoder, remembering the files read and their formats."""

    def __init__(self, decoder: RecordDecoder, workers: int,
                 progress: Callable[[str, int, int], None] | None = None, format: str = "auto",
                 fields: Mapping[str, str] | None = None) -> None:
        self.decoder = decoder
        self.workers = workers
        self.sources: list[str] = []
        self.progress = progress
        self.total = 0
        self.done = 0
        self.format = format
        self.fields = fields
        self.chosen: list[tuple[str, str]] = []  # (source, format) in reading order

    def feed(self, source: Any, arm: str | None) -> None:
        if isinstance(source, (str, os.PathLike)):
            for path in _files(Path(source)):
                self.sources.append(str(path))
                self.read_file(path, arm)
                self.done += 1
                if self.progress is not None:
                    self.progress(str(path), self.done, self.total)
        elif isinstance(source, (list, tuple)):
            name = "<records>" if arm is None else f"<{arm} records>"
            records = [item for item in source if isinstance(item, Mapping)]
            fmt = self._objects_format(name, records[0]) if records else formats.RECORD
            if fmt.name != "record":
                self.sources.append(name)
                self._convert(name, arm, fmt.read_objects(records, name, self._fields(fmt)), parsed=False)
            for position, item in enumerate(source, start=1):
                if isinstance(item, Mapping):
                    if fmt.name != "record":
                        continue
                    if name not in self.sources:
                        self.sources.append(name)
                    _add_object(name, item, position, arm, self.decoder)
                elif isinstance(item, (str, os.PathLike)):
                    self.feed(item, arm)
                else:
                    raise TypeError(
                        f"item {position} of the source list is a {type(item).__name__}: "
                        "expected a path or a record dict"
                    )
        else:
            raise TypeError(f"cannot read traces from a {type(source).__name__}")

    def _objects_format(self, name: str, first: Mapping[str, Any]) -> formats.Format:
        """The format of in-memory records: the one asked for, or detected from the first record."""
        if self.format != "auto":
            fmt = formats.get(self.format)
        elif "steps" in first and "run_id" in first:
            fmt = formats.RECORD
        else:
            try:
                head = json.dumps(first, default=_json_default).encode()[: formats.HEAD_BYTES]
            except (TypeError, ValueError):
                head = b""
            detected = formats.detect(head, name)
            fmt = formats.RECORD if detected is None else formats.get(detected)
        if fmt.name != "record" and fmt.read_objects is None:
            raise TypeError(f"format {fmt.name!r} reads files, not records in memory: give the file's path")
        self.chosen.append((name, fmt.name))
        return fmt

    def _file_format(self, path: Path) -> formats.Format:
        """The format of a file: the one asked for, or detected from its first bytes."""
        if self.format != "auto":
            fmt = formats.get(self.format)
        else:
            with open_trace_file(path) as fh:
                head = fh.read(formats.HEAD_BYTES)
            detected = formats.detect(head, path.name)
            if detected is None and head.lstrip(BOM + JSON_SPACE)[:1] in (b"", b"{", b"["):
                detected = "record"  # empty, or JSON that fits no other format: our decoder says what is wrong
            if detected is None:
                tried = ", ".join(formats.available())
                raise TraceError(f"cannot tell the trace format from the file's content (tried {tried}); "
                                 "say which with format=", source=str(path))
            fmt = formats.get(detected)
        self.chosen.append((str(path), fmt.name))
        return fmt

    def _fields(self, fmt: formats.Format) -> dict[str, str]:
        """The run-level field mapping of a converted format: its defaults with the user's ``fields``."""
        return formats.resolve_fields(fmt.fields, self.fields, formats.RUN_FIELDS)

    def _convert(self, name: str, arm: str | None, items: Iterable[formats.Item], parsed: bool) -> None:
        """Send a converted format's items to the decoder: records to validate, rejections to count.

        ``parsed``: the records were converted from JSON read from a file
        (:meth:`RecordDecoder.add_items`); else they are checked as given in
        memory (:func:`_add_object`).
        """
        with gc_paused():
            if parsed:
                self.decoder.add_items(name, items, arm)
                return
            for item in items:
                if isinstance(item.record, Mapping):
                    _add_object(item.source or name, item.record, item.line, arm, self.decoder)
                else:  # a rejection, or a run a reader built in columns (valid by construction)
                    self.decoder.add_items(name, (item,), arm)

    def _split(self, path: Path, fmt: formats.Format) -> bool:
        """Whether to read a file by several processes: large, uncompressed, JSON Lines the format splits."""
        if self.workers < 2 or path.name.lower().endswith(".gz") or path.stat().st_size < PARALLEL_MIN_BYTES:
            return False
        return fmt.name == "record" or (fmt.read_part is not None and fmt.splits is not None and fmt.splits(path))

    def read_file(self, path: Path, arm: str | None) -> None:
        name = str(path)
        try:
            fmt = self._file_format(path)
            if fmt.name != "record":
                fields = self._fields(fmt)
                if self._split(path, fmt):  # large: read whole if the format can do it fast, else in parts
                    whole = fmt.read_whole(path, fields) if fmt.read_whole is not None else None
                    if whole is not None:
                        self._convert(name, arm, whole.items, parsed=True)
                        return
                    if read_parallel(self.decoder, path, arm, self.workers, fmt, fields):
                        return
                self._convert(name, arm, fmt.read_file(path, fields), parsed=True)
            elif _kind(path) == "archive":
                raise TraceError("an archive is not agentab's record (an Inspect .eval log? format='inspect')",
                                 source=name)
            elif _kind(path) == "array":
                with open_trace_file(path) as fh:
                    _read_array(name, fh.read(), arm, self.decoder)
            elif self._split(path, fmt):
                read_parallel(self.decoder, path, arm, self.workers)
            else:
                read_lines(self.decoder, path, arm)
        except (OSError, EOFError, zlib.error) as err:  # e.g. a truncated, corrupt or non-gzip .gz file
            raise TraceError(f"cannot read file: {err}", source=name) from err


def _paths(source: Any) -> Iterator[Path]:
    """Every file a source names (records given in memory are not files)."""
    if isinstance(source, Mapping):
        for part in source.values():
            yield from _paths(part)
    elif isinstance(source, (str, os.PathLike)):
        yield from _files(Path(source))
    elif isinstance(source, (list, tuple)):
        for item in source:
            if isinstance(item, (str, os.PathLike)):
                yield from _files(Path(item))


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and _kind(p) is not None)
        if not found:
            raise TraceError(f"no {', '.join(SUFFIXES)} files in this directory", source=str(path))
        return found
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if _kind(path) is None:
        raise TraceError(f"unknown file type: expected one of {', '.join(SUFFIXES)}", source=str(path))
    return [path]


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    for suffix, kind in SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return None




#: A JSON string (escapes included), an unterminated quote, or a structural character.
_ARRAY_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{},]', re.S)


def _read_array(name: str, data: bytes, arm: str | None, decoder: RecordDecoder) -> None:
    """A ``.json`` file: an array of records (or a single record object)."""
    data = data.removeprefix(BOM)
    start = len(data) - len(data.lstrip(JSON_SPACE))
    head = data[start:start + 1]
    first_line = data.count(b"\n", 0, start) + 1
    if head == b"{":
        decoder.add(name, first_line, data[start:], arm)
        return
    if head != b"[":
        decoder.reject(name, first_line, None, "expected a JSON array of records (or one record object)")
        return
    try:
        elements = _locate(data, msgspec.json.decode(data, type=list[msgspec.Raw]))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        # Split the array without parsing its elements, so that each bad element
        # (NaN, too deep, malformed) is rejected on its own line and no good one is lost.
        elements, problem = _split_array(data, start)
        if problem is not None:
            decoder.reject(name, problem[0], None, f"{problem[1]}; the whole file was left out")
            return
    for line, raw in elements:
        decoder.add(name, line, raw, arm)


def _locate(data: bytes, elements: list[msgspec.Raw]) -> list[tuple[int, bytes]]:
    """Pair each raw array element with the line it starts on."""
    located, search_from, previous, line = [], 0, 0, 1
    for element in elements:
        raw = bytes(element)
        offset = data.find(raw, search_from)
        line += data.count(b"\n", previous, offset)
        located.append((line, raw))
        previous, search_from = offset, offset + len(raw)
    return located


def _split_array(data: bytes, start: int) -> tuple[list[tuple[int, bytes]], tuple[int, str] | None]:
    """Cut the JSON array at ``data[start]`` into ``(line, element)``; no recursion, no parsing.

    Each element is then decoded (and, if bad, rejected) on its own. Returns
    the elements and, if the array itself is broken (not closed, an
    unterminated string, text after it), ``(line, reason)`` for the whole file.
    Brackets are only counted, not matched: a mismatched pair inside an
    element makes that element malformed, which its decoding reports.
    """
    elements: list[tuple[int, bytes]] = []
    counted = [0, 1]  # newlines are counted once, front to back: (position, line there)

    def line_of(position: int) -> int:
        counted[1] += data.count(b"\n", counted[0], position)
        counted[0] = position
        return counted[1]

    def close(begin: int, end: int) -> None:
        text = data[begin:end]
        lead = len(text) - len(text.lstrip(JSON_SPACE))
        elements.append((line_of(begin + lead), text.strip(JSON_SPACE)))

    depth, element_start = 0, start + 1
    for match in _ARRAY_TOKEN.finditer(data, start):
        token = match.group()
        if token == b'"':
            return elements, (line_of(match.start()), "malformed JSON: unterminated string")
        if token in (b"[", b"{"):
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                if elements or data[element_start:match.start()].strip(JSON_SPACE):  # "[]" has no element
                    close(element_start, match.start())
                rest = data[match.end():].lstrip(JSON_SPACE)
                if rest:
                    return elements, (line_of(len(data) - len(rest)), "malformed JSON: extra data after the array")
                return elements, None
        elif token == b"," and depth == 1:
            close(element_start, match.start())
            element_start = match.end()
    return elements, (line_of(start), "malformed JSON: the array is not closed")


def _json_default(obj: Any) -> Any:
    """Encode the numpy / pandas / datetime scalars users commonly put in records."""
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def _add_object(name: str, item: Mapping[str, Any], position: int, arm: str | None,
                decoder: RecordDecoder) -> None:
    """Send one record dict built in Python to the decoder.

    It may hold NaN, which ``json.dumps`` keeps for the decoder to reject by
    name (records a format reader converted from JSON go to
    :meth:`RecordDecoder.add_items` instead: JSON holds no NaN).
    """
    try:
        raw = json.dumps(item, default=_json_default, allow_nan=True).encode()
    except (TypeError, ValueError, RecursionError) as err:
        decoder.reject(name, position, None, f"record is not JSON-serialisable: {err}")
        return
    decoder.add(name, position, raw, arm)


# --------------------------------------------------------------------------- #
# Arrow -> pandas
# --------------------------------------------------------------------------- #
def _types_mapper(kind: pa.DataType) -> Any:
    if pa.types.is_integer(kind):
        return pd.Int64Dtype()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pd.StringDtype("pyarrow")
    if pa.types.is_boolean(kind):
        return pd.BooleanDtype()
    return None


def _keep(table: pa.Table, drop: pa.Array) -> pa.Table:
    if len(drop) == 0:
        return table
    return table.filter(pc.invert(pc.is_in(table["_ordinal"], value_set=drop)))


def _frames(runs_table: pa.Table, steps_table: pa.Table,
            rejected: list[Rejection]) -> tuple[pd.DataFrame, pd.DataFrame]:
    drop = pa.array([r.ordinal for r in rejected], pa.int64())
    runs_table = _keep(runs_table, drop)
    steps_table = _keep(steps_table, drop)

    is_bool = runs_table["_outcome_is_bool"]
    n_bool = pc.sum(is_bool).as_py() or 0
    all_bool = n_bool == runs_table.num_rows
    if 0 < n_bool < runs_table.num_rows:
        warnings.warn(
            f"outcome mixes true/false ({n_bool} runs) with numbers ({runs_table.num_rows - n_bool} runs); "
            "true/false are read as 1.0/0.0",
            TraceWarning,
            stacklevel=3,
        )
    run_ordinals = runs_table["_ordinal"].to_numpy()
    step_ordinals = steps_table["_ordinal"].to_numpy()
    columns = {}
    for name in runs_table.column_names:
        if name.startswith("_"):
            continue
        column = runs_table[name]
        if name in _RUN_CATEGORIES:
            column = column.combine_chunks().dictionary_encode()
        elif name == "outcome" and all_bool:
            column = pc.not_equal(column, 0.0)
        columns[name] = column
    runs = pa.table(columns).to_pandas(types_mapper=_types_mapper, split_blocks=True, self_destruct=True)
    runs["seed"] = runs["seed"].astype("Int64")

    step_columns = {}
    for name in steps_table.column_names:
        if name.startswith("_"):
            continue
        column = steps_table[name]
        if name in ("tool", "status"):
            column = column.combine_chunks().dictionary_encode()
        step_columns[name] = column
    steps = pa.table(step_columns).to_pandas(types_mapper=_types_mapper, split_blocks=True, self_destruct=True)
    _text_categories(runs, _RUN_CATEGORIES)
    _text_categories(steps, ("tool",))
    run_codes = runs["run_id"].cat.codes.to_numpy()
    position = np.searchsorted(run_ordinals, step_ordinals)
    steps.insert(0, "run_id", pd.Categorical.from_codes(run_codes[position], dtype=runs["run_id"].dtype))
    steps["status"] = steps["status"].astype(pd.CategoricalDtype(["ok", "error"]))
    return runs, steps


def _text_categories(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    """Make ``columns`` categoricals whose categories have this pandas' default text dtype.

    Arrow gives an empty or all-missing column object-dtype categories and
    parquet can hand back other text dtypes; one rule keeps ``DataFrame.equals``
    true across load, save and read.
    """
    for column in columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            categories = values.cat.categories
            if categories.dtype == _TEXT:
                continue
            codes = values.cat.codes.to_numpy()
        else:
            codes, categories = pd.factorize(values, sort=True)
        frame[column] = pd.Categorical.from_codes(codes, categories=pd.Index(list(categories), dtype=_TEXT))


def _rejected_frame(rejected: list[Rejection]) -> pd.DataFrame:
    frame = pd.DataFrame(
        [(r.source, r.line, r.run_id, r.field, r.reason) for r in rejected], columns=list(_REJECTED_COLUMNS)
    )
    return frame.astype({"source": pd.StringDtype("pyarrow"), "line": "Int64", "run_id": pd.StringDtype("pyarrow"),
                         "field": pd.StringDtype("pyarrow"), "reason": pd.StringDtype("pyarrow")})


def _arrow_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Older pandas read text columns back with Python storage: restore Arrow storage."""
    text = [c for c in frame.columns if isinstance(frame[c].dtype, pd.StringDtype)]
    return frame.astype({c: pd.StringDtype("pyarrow") for c in text}) if text else frame


def read_traces(path: PathLike) -> Traces:
    """Read traces written by :meth:`Traces.to_parquet`.

    Examples
    --------
    >>> import tempfile, agentab
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=4, n_seeds=2)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     back = agentab.read_traces(traces.to_parquet(tmp))
    >>> back.runs.equals(traces.runs) and back.steps.equals(traces.steps)
    True
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such directory (expected one written by Traces.to_parquet)")
    missing = [n for n in ("runs.parquet", "steps.parquet", "rejected.parquet") if not (folder / n).exists()]
    if missing:
        raise TraceError(f"not a traces folder: missing {', '.join(missing)}", source=str(folder))
    runs, steps, rejected = (_arrow_strings(pd.read_parquet(folder / f"{name}.parquet"))
                             for name in ("runs", "steps", "rejected"))
    _text_categories(runs, _RUN_CATEGORIES)  # parquet drops categoricals from a table without rows
    _text_categories(steps, ("tool",))
    steps["run_id"] = steps["run_id"].astype(runs["run_id"].dtype)
    steps["status"] = steps["status"].astype(pd.CategoricalDtype(["ok", "error"]))
    info_path = folder / "traces.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    return Traces(runs=runs, steps=steps, rejected=rejected,
                  n_read=int(info.get("n_read", len(runs) + len(rejected))),
                  sources=tuple(info.get("sources", ())))

