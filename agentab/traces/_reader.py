"""The loader's file reader: every file and in-memory record of a source, sent to the record decoder (internal).

:class:`_Reader` finds each file's format (:mod:`agentab.formats`), reads agentab's own records itself (a large
JSON Lines file over several processes, :func:`agentab.traces._parallel.read_parallel`), sends a converted
format's records through its reader, and reads the files of a load over several processes when they are many
(:func:`agentab.traces._parallel.read_files`). It imports neither pandas nor the statistics, so that a worker
process starts quickly: :func:`agentab.traces._load.load_traces` builds the tables.
"""
from __future__ import annotations

import gzip
import json
import os
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentab import formats
from agentab.errors import TraceError
from agentab.formats.decode import DecodedPart, RecordDecoder, gc_paused
from agentab.formats.files import BOM, JSON_SPACE, InflateLimit, open_trace_file
from agentab.traces._arrays import locate as _locate
from agentab.traces._arrays import resync_array as _resync_array
from agentab.traces._arrays import split_array as _split_array
from agentab.traces._overlay import Overlay, PathTemplate
from agentab.traces._parallel import (
    PARALLEL_FILES_MIN_BYTES,
    PARALLEL_MIN_BYTES,
    PIECE_MIN_BYTES,
    _ORDINAL_BITS,
    Entry,
    FileWorkers,
    _read_apart,
    arrow_without_pandas,
    claim,
    part_ordinal,
    read_chunk_apart,
    read_files,
    read_lines,
    read_parallel,
    write_part,
)
from agentab.traces._plan import file_weight

__all__ = ["SUFFIXES", "files_worker", "listing", "worker_reader"]

#: File name endings read from a directory, and what each holds.
SUFFIXES = {".jsonl": "lines", ".ndjson": "lines", ".jsonl.gz": "lines", ".ndjson.gz": "lines",
            ".json": "array", ".json.gz": "array", ".eval": "archive", ".traj": "array", ".traj.gz": "array"}
_ENDINGS = tuple(SUFFIXES)  # a trace file's name ends with one (lower-cased)


class _Reader:
    """Sends every record of a source to the decoder, remembering the files read and their formats."""

    def __init__(self, decoder: RecordDecoder, workers: int,
                 progress: Callable[[str, int, int], None] | None = None, format: str = "auto",
                 fields: Mapping[str, str] | None = None, overlay: Overlay | None = None) -> None:
        self.decoder = decoder
        self.strict = decoder.strict  # the load's (a chunk read apart has a lenient decoder of its own)
        self.workers = workers
        self.sources: list[str] = []
        self.progress = progress
        self.total = 0
        self.done = 0
        self.format = format
        self.files = listing(format)  # a source's files
        self.fields = fields
        self.overlay = Overlay() if overlay is None else overlay
        self.chosen: list[tuple[str, str]] = []  # (source, format) in reading order
        self._named: dict[str, formats.Format] = {}  # the format asked for, looked up once per load
        self.pending: list[Entry] = []  # files listed, not yet read (:meth:`flush`)
        # their weights (:func:`file_weight`) when they may be read over several processes, and those processes,
        # started as soon as the files listed are enough (:meth:`_listed`)
        self._weighed = workers >= 2 and self.overlay.table is None
        self._weights: list[int] = []
        self._weight = 0
        self._started: FileWorkers | None = None

    def feed(self, source: Any, arm: str | None) -> None:
        """List the files of ``source`` to read (:meth:`flush` reads them), or read its records in memory."""
        if isinstance(source, (str, os.PathLike)):
            root = Path(source) if os.path.isdir(source) else None
            with gc_paused():  # a path or two per file, no cycles: a full collection here walks them all (60 ms)
                found = self.files(Path(source))
            for path in found:
                self.sources.append(str(path))
                if isinstance(path, _Unreadable):  # a folder that cannot be listed, a FIFO or device found in one
                    self.flush()  # the files before it first, in their order
                    if self.strict:
                        raise TraceError(path.reason, source=str(path))
                    self.decoder.reject(str(path), 1, None, path.reason)
                    self.files_done([(path, arm, root)])
                else:
                    self._listed((path, arm, root))
        elif isinstance(source, (list, tuple)):
            self.flush()  # records in memory come after the files listed before them
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
                    self.flush()
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

    def _listed(self, entry: Entry) -> None:
        """A file listed, to read at the next :meth:`flush`. Once the files listed are several and weigh enough to
        be read over several processes, the workers are started, so that their start-up overlaps the listing."""
        self.pending.append(entry)
        if not self._weighed:
            return
        weight = file_weight(entry[0])
        self._weights.append(weight)
        self._weight += weight
        if self._started is None and len(self.pending) >= 2 and self._weight >= PARALLEL_FILES_MIN_BYTES:
            self._started = FileWorkers(self.workers - 1, self.format)

    def flush(self) -> None:
        """Read the files listed so far: over several processes, whole files each, when there are several and
        enough bytes (:func:`agentab.traces._parallel.read_files`: the same result as one by one), and not when
        an outcomes table is joined (it is joined here, run by run); else one by one in this process."""
        entries, self.pending = self.pending, []
        weights, self._weights, self._weight = self._weights, [], 0
        started, self._started = self._started, None
        if started is not None:
            workers, self.workers = self.workers, 1  # its own group whole too: the other CPUs are busy with theirs
            try:
                read_files(self, entries, weights, workers, started)
            finally:
                self.workers = workers
            return
        self.read_here(entries)

    def close(self) -> None:
        """Stop workers started for files not read (the load failed while listing)."""
        started, self._started = self._started, None
        if started is not None:
            started.close()

    def read_here(self, entries: Iterable[Entry]) -> None:
        """Read files in this process, one by one."""
        self._read_all(entries, count=True)

    def _read_all(self, entries: Iterable[Entry], count: bool) -> None:
        """Read files one by one, the cyclic collector paused over :data:`GC_FILES` at a time (:func:`batches`);
        ``count``: report each as done (``progress``)."""
        for batch in batches(entries):
            with gc_paused():
                for entry in batch:
                    self.read_file(*entry)
                    if count:
                        self.files_done([entry])

    def read_chunk(self, entries: Sequence[Entry], first_ordinal: int
                   ) -> tuple[DecodedPart, list[tuple[str, str]]] | None:
        """Read files apart from the load so far (:func:`agentab.traces._parallel.read_files`): their records
        numbered from ``first_ordinal``, nothing raised for a bad record (the load's decoder does, when it merges
        the part); their part and formats, or None if the loader raised on one of them (then read again in order,
        which raises it). Progress is not reported (the merge does)."""
        decoder, chosen = self.decoder, self.chosen
        self.decoder, self.chosen = RecordDecoder(strict=False, first_ordinal=first_ordinal), []
        try:
            self._read_all(entries, count=False)
            return self.decoder.export(), self.chosen
        except TraceError:
            return None
        finally:
            self.decoder, self.chosen = decoder, chosen

    def piece_format(self, path: Path, weight: int) -> str | None:
        """The format a file of a load (``weight``: :func:`file_weight`) is read in parts with, over several
        processes (:func:`agentab.traces._parallel.read_files`); None: read whole (lighter than
        :data:`PIECE_MIN_BYTES`, a path template or outcomes table to apply here, not JSON Lines that the format
        reads in parts, a format with a faster whole-file reader, or one the loader cannot tell)."""
        if weight < PIECE_MIN_BYTES or self.overlay.active:
            return None
        try:
            fmt = self._format_of(path)
        except (TraceError, OSError):  # raised in its turn, when the file is read whole
            return None
        if fmt.name == "record":
            return "record" if _kind(path) not in ("archive", "array") and self._splits(path, fmt) else None
        return fmt.name if fmt.read_whole is None and self._splits(path, fmt) else None

    def read_piece(self, entry: Entry, part: tuple[int, int, int], name: str, first_ordinal: int
                   ) -> tuple[DecodedPart, frozenset[str]] | None:
        """The lines of a file in bytes ``[start, end)`` (``part``: and the first one's number) read apart in the
        format ``name`` (:meth:`piece_format`): its part and keys (:func:`agentab.traces._parallel.read_parallel`),
        or None if reading it failed (the file is then read whole, in its turn, which raises it)."""
        path, arm, _ = entry
        fmt = None if name == "record" else formats.get(name)
        try:
            return _read_apart(fmt, None if fmt is None else self._fields(fmt), path, arm, part,
                               part_ordinal(fmt is None, first_ordinal, part))
        except (TraceError, OSError, ValueError):
            return None

    def files_done(self, entries: Sequence[Entry]) -> None:
        """Count files read (for ``progress``)."""
        for path, _, _ in entries:
            self.done += 1
            if self.progress is not None:
                self.progress(str(path), self.done, self.total)

    def worker_settings(self) -> dict[str, Any]:
        """What a worker process reads files with (:func:`worker_reader`), as JSON."""
        template = self.overlay.template
        return {"format": self.format, "fields": None if self.fields is None else dict(self.fields),
                "template": None if template is None else template.text, "strict": self.strict}

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
        """The format of a file, noted as the one its records were read with (:attr:`chosen`)."""
        fmt = self._format_of(path)
        self.chosen.append((str(path), fmt.name))
        return fmt

    def _format_of(self, path: Path) -> formats.Format:
        """The format of a file: the one asked for, or detected from its first bytes."""
        if self.format != "auto":
            fmt = self._named.get(self.format) or self._named.setdefault(self.format, formats.get(self.format))
        else:
            with open_trace_file(path) as fh:
                head = fh.read(formats.HEAD_BYTES)
            detected = formats.detect(head, path.name)
            if detected is None and _is_results_table(path):
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
        return self.workers >= 2 and path.stat().st_size >= PARALLEL_MIN_BYTES and self._splits(path, fmt)

    def _splits(self, path: Path, fmt: formats.Format) -> bool:
        """Whether a file can be read in parts: uncompressed, JSON Lines the format splits."""
        if path.name.lower().endswith(".gz"):
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
            if self.strict or not (isinstance(err, InflateLimit) or corrupt):
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


#: Files read with the cyclic garbage collector paused, between two chances for it to run (:func:`batches`).
GC_FILES = 256


def batches(entries: Iterable[Entry]) -> Iterator[list[Entry]]:
    """``entries`` in lists of :data:`GC_FILES`, each read with the cyclic collector paused
    (:func:`~agentab.formats.decode.gc_paused`). A reader pauses it over each file already, but what it allocates
    still counts towards the next collection, which then comes as the file is done: over 10,000 Claude Code
    sessions, hundreds of collections, two of them walking the whole heap (0.12 s of a 3.4 s load); over batches
    of files, a few. Cyclic garbage, which only the collector frees, waits at most a batch.

    Examples
    --------
    >>> [len(batch) for batch in batches(range(600))]
    [256, 256, 88]
    """
    it = iter(entries)
    while batch := list(islice(it, GC_FILES)):
        yield batch


def worker_reader(decoder: RecordDecoder, settings: Mapping[str, Any]) -> _Reader:
    """The file reader of a worker process (:func:`agentab.traces._parallel.read_files`), from
    :meth:`_Reader.worker_settings`: one process, the path template of the load (no outcomes table)."""
    template = settings["template"]
    overlay = Overlay(None if template is None else PathTemplate.compile(template))
    reader = _Reader(decoder, 1, None, settings["format"], settings["fields"], overlay)
    reader.strict = settings.get("strict", False)
    return reader

def files_worker(argv: list[str]) -> int:
    """A worker process of :func:`agentab.traces._parallel.read_files`: the chunks of files it claims read by the
    loader's own reader, each chunk's result written to ``<argv[0]>/chunk<k>`` (a chunk on which the loader raised:
    an empty ``raised`` file there, and no more chunks claimed).

    Started ahead of its work (:class:`agentab.traces._parallel.FileWorkers`): it imports what reading the format
    ``argv[1]`` takes, then reads the path of its manifest (a JSON file) from its standard input; none (the input
    closed empty): it was not needed, and exits.
    """
    arrow_without_pandas()
    out, fmt = Path(argv[0]), argv[1]
    if fmt == "auto":
        formats.available()
    else:
        formats.get(fmt)
    data = sys.stdin.buffer.read()  # the manifest's path (FileWorkers.send)
    if not data:
        return 0
    manifest = json.loads(Path(data.decode()).read_bytes())
    files = manifest["files"]  # made Paths chunk by chunk, only those this process claims (20,000: 0.1 s)
    roots = {root: Path(root) for root in {root for _, _, root in files if root is not None}}
    reader = worker_reader(RecordDecoder(strict=False), manifest)
    for k, chunk in enumerate(manifest["chunks"]):
        if k == 0 or not claim(manifest["claims"], k):  # the first is the parent's
            continue
        folder = out / f"chunk{k}"
        folder.mkdir()
        i, j = chunk[:2]
        entries = [(Path(p), arm, roots.get(root)) for p, arm, root in files[i:j]]
        own = [0, j - i, *chunk[2:]]  # the chunk, its files numbered within entries
        read = read_chunk_apart(reader, entries, own, manifest["first_ordinal"] + (k << _ORDINAL_BITS))
        if read is None:  # the loader's own error: the parent reads the chunk again and raises it in its turn
            (folder / "raised").touch()
            break
        if len(chunk) == 2:
            write_part(read[0], folder, chosen=read[1])
        else:  # a part of a file: its keys
            write_part(read[0], folder, keys=read[1])
    return 0


class _Unreadable(type(Path())):  # type: ignore[misc]
    """A path found in a folder that cannot be read as a trace file (``reason``): a rejection, or raised."""

    reason = ""


def _unreadable(path: Path, reason: str) -> _Unreadable:
    bad = _Unreadable(path)
    bad.reason = reason
    return bad


#: Why a path that is not a regular file is refused (FIFOs would block in ``open()``).
_NOT_REGULAR = "not a regular file (a FIFO, socket or device): refused"


def listing(format: str) -> Callable[[Path], list[Path]]:
    """How the loader lists a source's files when reading ``format``: :func:`_files`, without the files a named
    format reads along with others (:attr:`agentab.formats.Format.companions`)."""
    companions = None if format == "auto" else formats.get(format).companions
    if companions is None:
        return _files
    return lambda path: _files(path, companions)


def _files(path: Path, companions: Callable[[list[str]], list[str]] | None = None) -> list[Path]:
    """The trace files a path names: itself, or every file under a folder (sorted), recursively; of a folder's,
    those ``companions`` keeps (if given).

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
        if companions is not None and found:
            kept = set(companions([p for p in found if isinstance(p, str)]))
            found = [p for p in found if not isinstance(p, str) or p in kept]
        if not found:
            raise TraceError(f"no {', '.join(SUFFIXES)} files in this directory", source=str(path))
        return [Path(p) if isinstance(p, str) else p for p in found]
    if _kind(path) is None:
        raise TraceError(f"unknown file type: expected one of {', '.join(SUFFIXES)}", source=str(path))
    if not stat.S_ISREG(mode):
        raise TraceError(_NOT_REGULAR, source=str(path))
    return [path]


def _sort_key(path: str | Path) -> Any:
    """Paths sort part by part: on POSIX as their text does with each separator made the smallest character (a NUL,
    which no path holds: text compared so compares its parts in turn, as ``Path.parts`` would), without a Path
    comparison per pair."""
    if os.name != "posix":
        return Path(path)
    return (path if isinstance(path, str) else str(path)).replace(os.sep, "\0")


def _walk(folder: Path) -> Iterator[str | Path]:
    """Every trace file under ``folder`` (symbolic links to folders are not followed) as text, and the unreadable
    (:class:`_Unreadable`)."""
    pending = [str(folder)]  # paths as text until they are found: a Path per folder entry costs more than the walk
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError as err:
            yield _unreadable(Path(current), f"cannot read this folder: {err.strerror or err}")
            continue
        for entry in listed:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                name = entry.name
                if not name.lower().endswith(_ENDINGS) or name == "spec.json":  # `agentab example` writes one
                    continue
                # a regular file, or a link to one: the folder's entry says so without a system call; anything
                # else is looked at (a FIFO or device is refused, a broken link cannot be read)
                regular = entry.is_file() or stat.S_ISREG(entry.stat().st_mode)
            except OSError as err:  # a broken link, or no permission to look
                yield _unreadable(Path(entry.path), f"cannot read this file: {err.strerror or err}")
                continue
            yield entry.path if regular else _unreadable(Path(entry.path), _NOT_REGULAR)


def _kind(path: Path) -> str | None:
    return _kind_of(path.name)


def _kind_of(name: str) -> str | None:
    """What a file holds, by its name's ending (:data:`SUFFIXES`), or None: not a trace file."""
    name = name.lower()
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


def _is_results_table(path: Path) -> bool:
    """:func:`agentab.traces._results.is_results_table`, imported when asked (it imports pandas)."""
    from agentab.traces._results import is_results_table

    return is_results_table(path)
