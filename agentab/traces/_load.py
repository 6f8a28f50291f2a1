"""Load agent run traces: files, folders and in-memory records of every format, into :class:`Traces`.

:func:`load_traces` finds each source's format (:mod:`agentab.formats`), decodes agentab's own
records itself (large JSON Lines files over several processes, :mod:`agentab.traces._parallel`) and
converted formats through their readers, and builds the tables (:mod:`agentab.traces._tables`, where
the columns of ``Traces.runs``, ``Traces.steps`` and ``Traces.rejected`` are listed).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

from agentab import formats
from agentab.errors import TraceError
from agentab.formats.decode import RecordDecoder
from agentab.traces._outcomes import read_outcomes
from agentab.traces._overlay import Overlay, PathTemplate
from agentab.traces._parallel import default_workers
from agentab.traces._reader import SUFFIXES, _kind, _Reader, _Unreadable
from agentab.traces._stream import LocalRunner, PathRules, Planner, Settings, check_engine, load_batched
from agentab.traces._tables import PathLike, Traces, _frames, _rejected_frame

__all__ = ["SUFFIXES", "load_traces"]

Source = Union[PathLike, Mapping[str, Any], Sequence[Any]]

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
        Lines file, cut at line boundaries, or the files of a source of
        several files (16 MiB or more in all, a compressed file counted at
        eight times its size), in groups of whole files; default: the CPUs
        available, at most 8. ``1`` reads everything in this process. The
        result does not depend on it. With ``outcomes=`` the files are read
        in this process, which joins the outcomes.
    progress : callable, optional
        Called as ``progress(path, done, total)`` after each file is read
        (``total`` files in all; a group read by another process is
        reported when it is merged; with the stream and dask engines, after
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
        reader.total = sum(1 for _ in _paths(source, reader.files))
    try:
        if isinstance(source, Mapping):
            for arm_name, part in source.items():
                reader.feed(part, arm_name)
        else:
            reader.feed(source, arm)
        reader.flush()
    finally:
        reader.close()
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
    planner = Planner(reader, batch_bytes, PathRules(reader.files, _Unreadable, _kind))
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


def _paths(source: Any, files: Callable[[Path], list[Path]]) -> Iterator[Path]:
    """Every file a source names, as ``files`` lists a path's (records given in memory are not files)."""
    if isinstance(source, Mapping):
        for part in source.values():
            yield from _paths(part, files)
    elif isinstance(source, (str, os.PathLike)):
        yield from files(Path(source))
    elif isinstance(source, (list, tuple)):
        for item in source:
            if isinstance(item, (str, os.PathLike)):
                yield from files(Path(item))


# --------------------------------------------------------------------------- #
# Arrow -> pandas
# --------------------------------------------------------------------------- #


