"""Load agent run traces: files, folders and in-memory records of every format, into :class:`Traces`.

:func:`load_traces` finds each source's format (:mod:`agentab.formats`), decodes agentab's own
records itself (large JSON Lines files over several processes, :mod:`agentab.traces._parallel`) and
converted formats through their readers, and builds the tables (:mod:`agentab.traces._tables`, where
the columns of ``Traces.runs``, ``Traces.steps`` and ``Traces.rejected`` are listed).
"""
from __future__ import annotations

import gzip
import json
import os
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np

from agentab import formats
from agentab.errors import TraceError
from agentab.formats.decode import RecordDecoder, gc_paused
from agentab.formats.files import BOM, JSON_SPACE, InflateLimit, open_trace_file
from agentab.traces._arrays import locate as _locate
from agentab.traces._arrays import resync_array as _resync_array
from agentab.traces._arrays import split_array as _split_array
from agentab.traces._outcomes import read_outcomes
from agentab.traces._overlay import Overlay, PathTemplate
from agentab.traces._parallel import (
    PARALLEL_MIN_BYTES,
    default_workers,
    read_lines,
    read_parallel,
)
from agentab.traces._results import is_results_table
from agentab.traces._stream import LocalRunner, PathRules, Planner, Settings, check_engine, load_batched
from agentab.traces._tables import PathLike, Traces, _frames, _rejected_frame

__all__ = ["SUFFIXES", "load_traces"]

Source = Union[PathLike, Mapping[str, Any], Sequence[Any]]

#: File name endings read from a directory, and what each holds.
SUFFIXES = {".jsonl": "lines", ".ndjson": "lines", ".jsonl.gz": "lines", ".ndjson.gz": "lines",
            ".json": "array", ".json.gz": "array", ".eval": "archive", ".traj": "array", ".traj.gz": "array"}


def load_traces(source: Source, *, format: str = "auto", fields: Mapping[str, str] | None = None,
                outcomes: Any = None, arm: str | None = None, strict: bool = True, workers: int | None = None,
                progress: Callable[[str, int, int], None] | None = None, engine: str | None = None,
                batch_size: int | None = None, scheduler: Any = None) -> Traces:
    """Load agent run traces into a :class:`Traces` (runs and steps tables).

    Parameters
    ----------
    source : path, list, or dict
        One of: a path to a ``.jsonl`` / ``.ndjson`` file (one record per
        line), a ``.json`` file (an array of records, or one record), either
        gzip-compressed (``.jsonl.gz``, ``.json.gz``); a directory (every such
        file under it, recursively, in sorted order, except a ``spec.json``,
        the trajectory spec ``agentab example`` writes beside its traces); a
        list of paths; a list
        of record dicts; or a dict ``{arm_name: source}`` giving each source's
        arm. The record format is documented in :mod:`agentab.formats.record`.
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
        default. Not used by agentab's own record. Two more forms:
        ``"path"`` -> a template of the file path, e.g.
        ``{"path": "{task_id}/{seed}/*"}``, whose ``{name}`` parts give
        run-level fields (``run_id``, ``task_id``, ``seed``, ``arm``,
        ``model``, ``harness``; ``*``, ``?`` and ``**`` as in globs),
        matched against each file's path relative to the source folder (or
        the end of a file's path given directly): its values replace the
        reader's, and a run whose path does not match is rejected. And, for
        OpenTelemetry spans, ``"span.name"``, ``"span.name:<regex>"`` and
        ``"resource:<attribute>"`` (see :mod:`agentab.formats.otel`).
    outcomes : path or DataFrame, optional
        A results table holding the runs' verdicts (CSV, TSV, Parquet, JSON
        Lines, JSON; SWE-bench's run report or per-instance
        ``report.json``): an ``outcome`` column, and ``run_id`` or
        ``task_id`` (+ ``seed``). Joined to the runs of converted formats:
        a row's outcome replaces the file's (which is kept as
        ``metadata.outcome_in_file``); a run no row matches keeps its
        file's outcome, or is rejected if it has none; rows matching no
        run are in ``Traces.unmatched_outcomes``. A table without ``seed``
        matches by task alone, and a task with several runs is then an
        error. See :mod:`agentab.traces._overlay`.
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
        (``total`` files in all; with the stream and dask engines, after
        each block), for a progress bar.
    engine : {"memory", "stream", "dask"}, optional
        ``"memory"`` (the default): the tables are built in memory. For
        sources larger than memory, ``"stream"``: the files are read in
        blocks (JSON Lines in byte ranges of whole lines, OpenTelemetry
        spans in blocks of whole traces, other files whole), one block in
        memory at a time; ``"dask"``: the blocks are read in a Dask
        cluster's workers. Both return traces with the same interface
        (:class:`~agentab.traces._stream.BatchedTraces`), whose
        :func:`agentab.score` is computed batch by batch and equals the
        in-memory one exactly; the rejections, ``n_read`` and the duplicate
        run ids are those of an in-memory load. Files only (not records in
        memory), and not with ``outcomes=``; ``workers`` is not used (a
        block is read by one process). See ``docs/scale.md``.
    batch_size : int, optional
        Bytes of input per block (default 64 MiB); giving it alone means
        ``engine="stream"``.
    scheduler : None, str or distributed.Client
        With ``engine="dask"``: the client made in this process (None;
        without one, Dask's local threaded scheduler), a scheduler's
        address (``"tcp://host:8786"``) or a ``distributed.Client``.

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
    engine, batch_bytes = check_engine(engine, batch_size, scheduler)
    if engine != "memory" and outcomes is not None:
        raise TypeError(f"`outcomes` is joined in memory: load with engine='memory', or join the verdicts to the "
                        f"score table of engine={engine!r}")
    load_args = dict(source=source, format=format, fields=fields, arm=arm, strict=strict, workers=workers)
    fields, overlay = _formats_iv(format, fields, outcomes)
    decoder = RecordDecoder(strict=strict)
    reader = _Reader(decoder, default_workers() if workers is None else workers, progress, format, fields, overlay)
    if engine != "memory":
        return _load_batched(reader, source, engine, batch_bytes, scheduler, load_args)
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
    return Traces(runs=runs, steps=steps, rejected=_rejected_frame(rejected), n_read=decoder.n_read,
                  sources=tuple(sources), formats=tuple(reader.chosen), unmatched_outcomes=overlay.finish())


def _load_batched(reader: _Reader, source: Any, engine: str, batch_bytes: int, scheduler: Any,
                  load_args: dict[str, Any]) -> Traces:
    """The stream and dask engines: the source planned in blocks, and their load pass (``load_args``: the
    arguments that load the same source in memory, to materialise)."""
    if engine == "dask":
        from agentab.traces._dask import DaskRunner

        runner: Any = DaskRunner(scheduler)
    else:
        runner = LocalRunner()
    planner = Planner(reader, batch_bytes, PathRules(_files, _Unreadable, _kind))
    if isinstance(source, Mapping):
        for arm_name, part in source.items():
            planner.feed(part, arm_name)
    else:
        planner.feed(source, load_args["arm"])
    settings = Settings(reader.fields, reader.overlay, _Reader)
    traces = load_batched(planner, settings, runner, reader.decoder.strict, engine, load_traces, load_args,
                          reader.progress)
    if traces.n_read == 0:
        raise TraceError(f"no trace records found in {_describe(reader.sources, source)}")
    return traces


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


def _formats_iv(format: Any, fields: Any, outcomes: Any) -> tuple[dict[str, str] | None, Overlay]:
    """The checked format and ``fields`` (without ``path``), and the overlay of the path template and outcomes."""
    if not isinstance(format, str) or (format != "auto" and format not in formats.available()):
        raise TypeError(f"`format` == {format!r}: must be 'auto' or one of {', '.join(formats.available())}")
    template = None
    if fields is not None:
        if not isinstance(fields, Mapping):
            raise TypeError(f"`fields` must be a mapping {{agentab field: the format's name}}, got {type(fields).__name__}")
        if format == "record":
            raise TypeError("`fields` renames the fields of converted formats; agentab's own record has fixed names")
        fields = dict(fields)
        if "path" in fields:
            template = PathTemplate.compile(fields.pop("path"))
        formats.resolve_fields({}, fields, formats.RUN_FIELDS)  # unknown names and empty values are errors here
    if outcomes is not None and format == "record":
        raise TypeError("`outcomes` joins verdicts to converted formats; agentab's own record carries its outcome")
    return fields, Overlay(template, None if outcomes is None else read_outcomes(outcomes))


def _describe(sources: list[str], source: Any) -> str:
    if sources:
        return ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
    return repr(source) if not isinstance(source, (list, tuple)) else "an empty list"


class _Reader:
    """Sends every record of a source to the decoder, remembering the files read and their formats."""

    def __init__(self, decoder: RecordDecoder, workers: int,
                 progress: Callable[[str, int, int], None] | None = None, format: str = "auto",
                 fields: Mapping[str, str] | None = None, overlay: Overlay | None = None) -> None:
        self.decoder = decoder
        self.workers = workers
        self.sources: list[str] = []
        self.progress = progress
        self.total = 0
        self.done = 0
        self.format = format
        self.fields = fields
        self.overlay = Overlay() if overlay is None else overlay
        self.chosen: list[tuple[str, str]] = []  # (source, format) in reading order
        self._named: dict[str, formats.Format] = {}  # the format asked for, looked up once per load

    def feed(self, source: Any, arm: str | None) -> None:
        if isinstance(source, (str, os.PathLike)):
            root = Path(source) if os.path.isdir(source) else None
            for path in _files(Path(source)):
                self.sources.append(str(path))
                if isinstance(path, _Unreadable):  # a folder that cannot be listed, a FIFO or device found in one
                    if self.decoder.strict:
                        raise TraceError(path.reason, source=str(path))
                    self.decoder.reject(str(path), 1, None, path.reason)
                else:
                    self.read_file(path, arm, root)
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
            fmt = self._named.get(self.format) or self._named.setdefault(self.format, formats.get(self.format))
        else:
            with open_trace_file(path) as fh:
                head = fh.read(formats.HEAD_BYTES)
            detected = formats.detect(head, path.name)
            if detected is None and is_results_table(path):
                raise TraceError("a per-run results table (flat records, no steps), not traces: read it with "
                                 "agentab.load_results (on the command line, every command takes it as it is)",
                                 source=str(path))
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

    def _convert(self, name: str, arm: str | None, items: Iterable[formats.Item], parsed: bool,
                 path: Path | None = None, root: Path | None = None) -> None:
        """Send a converted format's items to the decoder: records to validate, rejections to count.

        ``parsed``: the records were converted from JSON read from a file
        (:meth:`RecordDecoder.add_items`); else they are checked as given in
        memory (:func:`_add_object`). The fields a file lacks are filled (or
        the run rejected) first: :class:`~agentab.traces._overlay.Overlay`,
        with ``path`` (and the source folder ``root``) for its path template.
        """
        items = self.overlay.apply(items, path, root)
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
        if self.overlay.active and fmt.name != "record":  # the overlay joins in this process
            return False
        return fmt.name == "record" or (fmt.read_part is not None and fmt.splits is not None and fmt.splits(path))

    def read_file(self, path: Path, arm: str | None, root: Path | None = None) -> None:
        """Read one file (found under the folder ``root``, if one was given); a file inflating past the limits, or a
        corrupt gzip stream, is a rejection from where it stopped (strict: raised)."""
        n_read = self.decoder.n_read
        try:
            self._read_file(path, arm, root)
        except TraceError as err:  # past the limits, or a corrupt gzip stream (truncated, not gzip, bad CRC/data)
            corrupt = isinstance(err.__cause__, (EOFError, zlib.error, gzip.BadGzipFile))
            if self.decoder.strict or not (isinstance(err, InflateLimit) or corrupt):
                raise
            self.decoder.reject(str(path), self.decoder.n_read - n_read + 1, None,
                                f"{err.reason}; the rest of the file was left out")

    def _read_file(self, path: Path, arm: str | None, root: Path | None) -> None:
        name = str(path)
        try:
            fmt = self._file_format(path)
            if fmt.name == "record" and self.overlay.active:
                raise TraceError("agentab's own record carries its identity and outcome: fields['path'] and "
                                 "outcomes= apply to converted formats only", source=name)
            if fmt.name != "record":
                fields = self._fields(fmt)
                if self._split(path, fmt):  # large: read whole if the format can do it fast, else in parts
                    whole = fmt.read_whole(path, fields) if fmt.read_whole is not None else None
                    if whole is not None:
                        self._convert(name, arm, whole.items, parsed=True, path=path, root=root)
                        return
                    if read_parallel(self.decoder, path, arm, self.workers, fmt, fields):
                        return
                self._convert(name, arm, fmt.read_file(path, fields), parsed=True, path=path, root=root)
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


class _Unreadable(type(Path())):  # type: ignore[misc]
    """A path found in a folder that cannot be read as a trace file (``reason``): a rejection, or raised."""

    reason = ""


def _unreadable(path: Path, reason: str) -> _Unreadable:
    bad = _Unreadable(path)
    bad.reason = reason
    return bad


#: Why a path that is not a regular file is refused (FIFOs would block in ``open()``).
_NOT_REGULAR = "not a regular file (a FIFO, socket or device): refused"


def _files(path: Path) -> list[Path]:
    """The trace files a path names: itself, or every file under a folder (sorted), recursively.

    A folder that cannot be listed, or a FIFO/device with a trace file's name in a folder, is listed as an
    :class:`_Unreadable` (the reader rejects it: an error under ``strict=True``).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file or directory") from None
    except OSError as err:
        raise TraceError(f"cannot read this path: {err.strerror or err}", source=str(path)) from err
    if stat.S_ISDIR(mode):
        found = sorted(_walk(path), key=_sort_key)
        if not found:
            raise TraceError(f"no {', '.join(SUFFIXES)} files in this directory", source=str(path))
        return found
    if _kind(path) is None:
        raise TraceError(f"unknown file type: expected one of {', '.join(SUFFIXES)}", source=str(path))
    if not stat.S_ISREG(mode):
        raise TraceError(_NOT_REGULAR, source=str(path))
    return [path]


def _sort_key(path: Path) -> Any:
    """Paths sort part by part: on POSIX their parts as text do, without a Path comparison per pair."""
    return path.parts if os.name == "posix" else path


def _walk(folder: Path) -> Iterator[Path]:
    """Every trace file under ``folder`` (symbolic links to folders are not followed), and the unreadable."""
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError as err:
            yield _unreadable(current, f"cannot read this folder: {err.strerror or err}")
            continue
        for entry in listed:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                if _kind(Path(entry.name)) is None or entry.name == "spec.json":  # `agentab example` writes one
                    continue
                regular = stat.S_ISREG(entry.stat().st_mode)  # follows a link to a file
            except OSError as err:  # a broken link, or no permission to look
                yield _unreadable(Path(entry.path), f"cannot read this file: {err.strerror or err}")
                continue
            yield Path(entry.path) if regular else _unreadable(Path(entry.path), _NOT_REGULAR)


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    for suffix, kind in SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return None


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
        if problem is not None:  # brackets out of balance: find each element by parsing, skipping a bad one
            elements = _resync_array(data, start)
            if elements is None:  # the array itself is broken (not closed, text after it): one rejection
                decoder.reject(name, problem[0], None, f"{problem[1]}; the whole file was left out")
                return
    for line, raw in elements:
        decoder.add(name, line, raw, arm)


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


