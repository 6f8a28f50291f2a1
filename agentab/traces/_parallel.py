"""Read JSON Lines files, splitting a large one over several processes (internal).

A large uncompressed JSON Lines file (our record, or a converted format
whose reader can read part of a file: :attr:`agentab.formats.Format.read_part`)
is cut at line boundaries into parts. This process decodes the first part
while worker processes decode the others; each worker is a plain
``python -c`` subprocess (no ``multiprocessing``: nothing re-imports the
user's ``__main__``, nothing is forked from a threaded process) that imports
only the loader's modules (not ``agentab/__init__``, pandas or the
statistics: it starts in a fraction of the time) and writes its tables as
Arrow IPC files plus a small JSON of rejections and run ids. The parts are
merged in file order, so line numbers, ordinals, duplicate checks and the
strict-mode "earliest problem" are exactly those of a serial read. A worker
that fails to start or crashes costs only time: its part is then decoded
here.

A converted format's part also gives its keys (:class:`agentab.formats.Part`:
e.g. the OpenTelemetry trace ids in it). Parts convert as the whole file does
only when no key is in two parts (no trace split between them); otherwise
the parts are discarded and the file is read in one piece.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from agentab._write import owned_prefix, sweep_stale
from agentab.formats import settle
from agentab.formats.decode import DecodedPart, RecordDecoder, Rejection, gc_paused
from agentab.formats.files import BOM, JSON_SPACE, open_trace_file
from agentab.traces._plan import CHUNKS_PER_PROCESS, parts_at, plan_parts, plan_pieces

if TYPE_CHECKING:
    from agentab.formats import Format

#: The name prefix of a parallel load's folder of parts (in the system's temporary folder).
_TEMP_PREFIX = "agentab-load-"
#: Files smaller than this are read by one process.
PARALLEL_MIN_BYTES = 48 * 2**20
#: A load of several files is read whole file by whole file over several processes when their bytes reach this
#: (a compressed file's bytes counted :data:`~agentab.traces._plan.COMPRESSED_WEIGHT` times).
PARALLEL_FILES_MIN_BYTES = 16 * 2**20
#: A file of such a load may be read in parts by several processes (:func:`read_files`) from this size.
PIECE_MIN_BYTES = 16 * 2**20
#: Records of the ``k``-th chunk of files (:func:`read_files`) are numbered from ``k << _ORDINAL_BITS`` past the
#: load's ordinals so far, so that chunks order their records as one serial read does.
_ORDINAL_BITS = 40


def claim(claims: str, k: int) -> bool:
    """Take chunk ``k`` for this process: True for exactly one of the processes that ask (a file created in the
    folder ``claims`` only if it is not there yet)."""
    try:
        os.close(os.open(os.path.join(claims, str(k)), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def read_lines(decoder: RecordDecoder, path: Path, arm: str | None, start: int = 0, end: int | None = None,
               first_line: int = 1) -> None:
    """Send the records of lines ``[start, end)`` (byte offsets) of ``path`` to ``decoder``."""
    name = str(path)
    add = decoder.add
    with open_trace_file(path) as fh:
        if start == 0 and fh.read(len(BOM)) == BOM:  # a byte-order mark is not part of the first record
            start = len(BOM)
        fh.seek(start)
        if end is None:
            for number, line in enumerate(fh, start=first_line):
                if not line.isspace() or line.strip(JSON_SPACE):
                    add(name, number, line, arm)
            return
        position = start
        for number, line in enumerate(fh, start=first_line):
            if position >= end:
                break
            position += len(line)
            if not line.isspace() or line.strip(JSON_SPACE):
                add(name, number, line, arm)


def default_workers() -> int:
    """Processes to use: the CPUs this process may run on, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


#: How a worker starts: ``agentab`` and ``agentab.traces`` as bare packages (their ``__init__`` not run, so neither pandas nor the
#: statistics are imported), the package's folder taken from the first argument; then :func:`_worker`.
_PACKAGES = ("import os, sys, types; root = sys.argv.pop(1)\n"
             "for name, folder in (('agentab', root), ('agentab.traces', os.path.join(root, 'traces'))):\n"
             "    package = types.ModuleType(name); package.__path__ = [folder]; sys.modules[name] = package\n")
_BOOTSTRAP = _PACKAGES + "from agentab.traces._parallel import _worker"
_WORKER = _BOOTSTRAP + "; sys.exit(_worker(sys.argv[1:]))"
#: A worker reading whole files (:func:`read_files`) runs the loader's reader
#: (:func:`agentab.traces._reader.files_worker`, named here as text: this module does not import the reader); it is
#: started ahead of its work (:class:`FileWorkers`) and reads its manifest from its standard input.
_FILES_WORKER = _PACKAGES + "from agentab.traces._reader import files_worker; sys.exit(files_worker(sys.argv[1:]))"
#: The folder of the ``agentab`` package, the first argument of a worker.
PACKAGE_FOLDER = str(Path(__file__).resolve().parent.parent)


def _launch(path: Path, arm: str | None, parts: list[tuple[int, int, int]], firsts: list[int], claims: str,
            out: Path, fmt: str = "record", fields: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a worker of :func:`read_parallel` (:func:`_worker`): the parts of ``path`` it claims, into ``out``."""
    command = [sys.executable, "-c", _WORKER, PACKAGE_FOLDER, str(path), "" if arm is None else arm, str(out), fmt,
               json.dumps(fields or {}), claims, json.dumps([[*part, first] for part, first in zip(parts, firsts)])]
    return _start(command, out)


def _start(command: list[str], out: Path, stdin: int = subprocess.DEVNULL) -> subprocess.Popen:
    with (out / "stderr.txt").open("wb") as errors:  # a file, not a pipe: a chatty worker cannot block
        return subprocess.Popen(command, stdin=stdin, stdout=subprocess.DEVNULL, stderr=errors)


def write_part(part: DecodedPart, out: Path, keys: frozenset[str] = frozenset(),
                chosen: list[tuple[str, str]] | None = None) -> None:
    for name, table in (("runs", part.runs), ("steps", part.steps)):
        with pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    meta = {
        "n_read": part.n_read,
        "next_ordinal": part.next_ordinal,
        "rejected": [[r.ordinal, r.source, r.line, r.run_id, r.field, r.reason] for r in part.rejected],
        "seen": [[run_id, source, line, ordinal] for run_id, (source, line, ordinal) in part.seen.items()],
        "keys": sorted(keys),
        "chosen": chosen or [],
    }
    (out / "meta.json.tmp").write_text(json.dumps(meta))
    os.replace(out / "meta.json.tmp", out / "meta.json")  # last, whole: its presence says the part is complete


def _read_part(out: Path) -> tuple[DecodedPart, frozenset[str]]:
    tables = [pa.ipc.open_file(pa.memory_map(str(out / f"{name}.arrow"))).read_all() for name in ("runs", "steps")]
    meta = json.loads((out / "meta.json").read_text())
    return DecodedPart(
        runs=tables[0],
        steps=tables[1],
        rejected=[Rejection(*r) for r in meta["rejected"]],
        seen={run_id: (source, line, ordinal) for run_id, source, line, ordinal in meta["seen"]},
        n_read=meta["n_read"],
        next_ordinal=meta["next_ordinal"],
    ), frozenset(meta["keys"])


def read_parallel(decoder: RecordDecoder, path: Path, arm: str | None, workers: int,
                  fmt: Format | None = None, fields: dict[str, str] | None = None) -> bool:
    """Decode ``path`` with this process and ``workers - 1`` subprocesses; False if it was not.

    The file is cut at line boundaries into :data:`CHUNKS_PER_PROCESS` parts per process. This process decodes
    the first while the workers start; then each process claims the next part not yet taken (:func:`claim`), so
    a slower process decodes fewer. ``fmt``: a converted format with
    :attr:`~agentab.formats.Format.read_part` (default: our record), ``fields`` its field mapping. False
    (nothing decoded) when two parts of a converted format share a key: the caller then reads the file in one
    piece. A part a failed worker left undecoded is decoded here (a warning).
    """
    parts = plan_parts(path, workers * CHUNKS_PER_PROCESS)
    if not parts:  # an empty file
        return True
    base = decoder.next_ordinal
    firsts = [part_ordinal(fmt is None, base, part) for part in parts]
    name = "record" if fmt is None else fmt.name
    here: list[tuple[DecodedPart, frozenset[str]]] = []  # a converted format's parts, merged at the end
    sweep_stale(tempfile.gettempdir(), _TEMP_PREFIX)  # the parts folders of loads that were killed
    with tempfile.TemporaryDirectory(prefix=owned_prefix(_TEMP_PREFIX)) as tmp:
        claims = os.path.join(tmp, "claims")
        os.mkdir(claims)
        launched = []
        try:
            for w in range(1, min(workers, len(parts))):
                out = Path(tmp) / f"worker{w}"
                out.mkdir()
                try:
                    proc = _launch(path, arm, parts, firsts, claims, out, name, fields)
                except OSError as err:
                    proc = None
                    (out / "stderr.txt").write_text(f"could not start: {err}")
                launched.append((proc, out))
            if fmt is None:
                read_lines(decoder, path, arm, *parts[0])
            else:
                here.append(_read_converted(fmt, fields, path, arm, parts[0], firsts[0]))
            mine = {k: _read_apart(fmt, fields, path, arm, parts[k], firsts[k])
                    for k in range(1, len(parts)) if claim(claims, k)}
            for proc, _ in launched:
                if proc is not None:
                    proc.wait()
            for k in range(1, len(parts)):
                folder = None if k in mine else _finished(launched, f"part{k}")
                if k in mine:
                    found = mine[k]
                elif folder is not None:
                    found = _read_part(folder)
                else:  # a failed worker's: decoded here
                    found = _read_apart(fmt, fields, path, arm, parts[k], firsts[k])
                if fmt is None:
                    decoder.merge(found[0])
                else:
                    here.append(found)
            for proc, out in launched:
                if proc is None or proc.returncode != 0:
                    _warn_failed(proc, out)
        finally:
            for proc, _ in launched:
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
    if fmt is None:
        return True
    if not disjoint(part_keys for _, part_keys in here):
        return False
    for decoded, _ in here:
        decoder.merge(decoded)
    return True


def part_ordinal(record: bool, base: int, part: tuple[int, int, int]) -> int:
    """The ordinal of a part's first record: ordinals order records across parts, by a record's line (our
    ``record``), or by its part's first byte plus its position in the part (a converted format: a part holds fewer
    records than bytes)."""
    start, _, first_line = part
    return base + (first_line - 1 if record else start)


def disjoint(key_sets: Iterable[frozenset[str]]) -> bool:
    """Whether no key is in two of the sets (parts of a file: no trace cut in two)."""
    seen: set[str] = set()
    for keys in key_sets:
        if not seen.isdisjoint(keys):
            return False
        seen.update(keys)
    return True


def _read_apart(fmt: Format | None, fields: dict[str, str] | None, path: Path, arm: str | None,
                part: tuple[int, int, int], first_ordinal: int) -> tuple[DecodedPart, frozenset[str]]:
    """One part of ``path`` decoded on its own (our record when ``fmt`` is None): its records and keys."""
    if fmt is not None:
        return _read_converted(fmt, fields, path, arm, part, first_ordinal)
    decoder = RecordDecoder(strict=False, first_ordinal=first_ordinal)
    read_lines(decoder, path, arm, *part)
    return decoder.export(), frozenset()


def _finished(workers: list[tuple[subprocess.Popen | None, Path]], name: str) -> Path | None:
    """The folder of the part ``name`` a worker wrote whole (its ``meta.json`` is written last), or None."""
    for _, out in workers:
        if (out / name / "meta.json").exists():
            return out / name
    return None


def _awaited(workers: list[tuple[subprocess.Popen | None, Path]], name: str) -> Path | None:
    """The folder of the part ``name`` (claimed by a worker) once a worker has written it whole; None once the
    worker says the loader raised on it (its ``raised`` file), or no worker is left running to write it."""
    pause = 0.0005
    while True:
        folder = _finished(workers, name)
        if folder is not None or any((out / name / "raised").exists() for _, out in workers):
            return folder
        if all(proc is None or proc.poll() is not None for proc, _ in workers):
            return _finished(workers, name)  # (written just before its worker exited)
        time.sleep(pause)
        pause = min(2 * pause, 0.005)


#: One file of a load: its path, arm and the source folder it was found in (None: named itself).
Entry = tuple[Path, "str | None", "Path | None"]


class FileWorkers:
    """Worker processes of :func:`read_files`, started before their files are known.

    A worker starts Python and imports the reader (and the format read: ``fmt``) while this process is still
    listing the source's folders, then waits for its manifest on its standard input. Workers not given one
    (:meth:`close`) exit unused. Each has a folder (in the system's temporary folder) for its result.
    """

    def __init__(self, n: int, fmt: str) -> None:
        sweep_stale(tempfile.gettempdir(), _TEMP_PREFIX)  # the parts folders of loads that were killed
        self._tmp = tempfile.TemporaryDirectory(prefix=owned_prefix(_TEMP_PREFIX))
        self.folder = self._tmp.name
        self.slots: list[tuple[subprocess.Popen | None, Path]] = []
        for k in range(1, n + 1):
            out = Path(self._tmp.name) / f"files{k}"
            out.mkdir()
            try:
                proc: subprocess.Popen | None = _start([sys.executable, "-c", _FILES_WORKER, PACKAGE_FOLDER, str(out),
                                                        fmt], out, subprocess.PIPE)
            except OSError as err:
                proc = None
                (out / "stderr.txt").write_text(f"could not start: {err}")
            self.slots.append((proc, out))

    def send(self, k: int, manifest: dict[str, Any]) -> bool:
        """Give worker ``k`` its manifest; False if it cannot take it (it failed to start, or died)."""
        proc = self.slots[k][0]
        if proc is None or proc.stdin is None:
            return False
        # the manifest (a path per file: megabytes) goes in a file, its path down the pipe: a write that fits the
        # pipe's buffer returns at once, while the worker is still importing (a write of the whole manifest would
        # wait for it, and this process's own reading with it)
        folder = self.slots[k][1]
        (folder / "manifest.json").write_bytes(json.dumps(manifest).encode())
        try:
            with proc.stdin:
                proc.stdin.write(str(folder / "manifest.json").encode())
        except OSError:  # a broken pipe: the worker is gone
            return False
        return True

    def close(self) -> None:
        """Stop the workers still running (unused, or abandoned by an error) and remove their folders."""
        for proc, _ in self.slots:
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.wait()
                if proc.stdin is not None and not proc.stdin.closed:
                    try:
                        proc.stdin.close()
                    except OSError:
                        pass
        self._tmp.cleanup()

    def __enter__(self) -> FileWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: A chunk of :func:`read_files`: ``[i, j]``, files ``i`` to ``j - 1`` read whole; or ``[i, i + 1, start, end,
#: first_line, format]``, the lines of file ``i`` in bytes ``[start, end)`` read in that format.
Chunk = list[Any]


def read_files(reader: Any, entries: list[Entry], weights: list[int], workers: int,
               started: FileWorkers | None = None) -> None:
    """Read whole files (``weights``: :func:`file_weight`), and parts of large ones, over this process and
    ``workers - 1`` subprocesses, merged in reading order.

    The files are cut into contiguous chunks of shrinking weight (:data:`CHUNKS_PER_PROCESS` per process,
    :func:`~agentab.traces._plan.plan_pieces`); a large file that can be read in parts (``reader.piece_format``)
    is cut where the chunks' cuts fall inside it, each of its parts a chunk. This process reads the first chunk
    itself; then each process claims the next chunk not yet taken (:func:`claim`) until none is left, so a process
    slowed down (by starting later, or by the machine) reads fewer. The chunks are merged in reading order: chunk
    ``k``'s records are numbered from ``k << _ORDINAL_BITS`` past the ordinals so far, so a strict load raises its
    earliest problem and duplicates name their first run exactly as a serial read does. A chunk on which the
    loader itself raised (a file no format reads) is read again here in its turn, which raises the same error at
    the same place; a chunk a failed worker left unread is read here (a warning). A file's parts are merged once
    all are read, and only when no key is in two of them (:func:`read_parallel`); else it is read whole here.

    ``reader`` is the loader's file reader (``agentab.traces._reader._Reader``): ``reader.read_here(entries)``
    reads files in this process, ``reader.read_chunk(entries, first_ordinal)`` reads them apart (their part, their
    formats, or None where the loader raised), ``reader.piece_format(path, weight)`` names the format a file is
    read in parts with (None: whole), ``reader.read_piece(entry, part, format, first_ordinal)`` reads a part apart
    (its part and keys, or None), ``reader.worker_settings()`` is what a worker needs to read alike (JSON),
    ``reader.decoder`` merges the parts and ``reader.chosen`` takes their formats. ``started``: the workers, if
    the reader started them while listing (:class:`FileWorkers`; closed here), else started here.
    """
    names = [reader.piece_format(path, weight) for (path, _, _), weight in zip(entries, weights)]
    n = workers if any(names) else min(workers, len(entries))
    chunks: list[Chunk] = []
    for i, j, fractions in plan_pieces(weights, [name is not None for name in names], n):
        if not fractions:
            chunks.append([i, j])
            continue
        size = entries[i][0].stat().st_size
        chunks.extend([i, j, *part, names[i]] for part in parts_at(entries[i][0], [int(size * f) for f in fractions]))
    if len(chunks) < 2:
        if started is not None:
            started.close()
        reader.read_here(entries)
        return
    base = reader.decoder.next_ordinal
    settings = reader.worker_settings()
    with started if started is not None else FileWorkers(n - 1, settings["format"]) as pool:
        claims = os.path.join(pool.folder, "claims")
        os.mkdir(claims)
        manifest = dict(settings, first_ordinal=base, claims=claims, chunks=chunks,
                        files=[[str(p), arm, None if root is None else str(root)] for p, arm, root in entries])
        given = [pool.send(k, manifest) for k in range(len(pool.slots))]
        mine = {}  # chunk -> what read_chunk or read_piece gave (None: the loader raised on it)
        if len(chunks[0]) == 2:
            reader.read_here(entries[chunks[0][0]:chunks[0][1]])
        else:
            mine[0] = read_chunk_apart(reader, entries, chunks[0], base)
        for k in range(1, len(chunks)):
            if claim(claims, k):
                mine[k] = read_chunk_apart(reader, entries, chunks[k], base + (k << _ORDINAL_BITS))
        pieces: list[tuple[int, Any]] = []  # the parts of the file read in parts, until its last
        for k in range(0 if 0 in mine else 1, len(chunks)):  # merged as each is done, not once the workers exit
            chunk = chunks[k]
            if k in mine:
                found = mine[k]
            else:
                folder = _awaited(pool.slots, f"chunk{k}")
                found = None if folder is None else _read_part(folder) if len(chunk) > 2 else (
                    _read_part(folder)[0], json.loads((folder / "meta.json").read_text())["chosen"])
            if len(chunk) == 2:
                _merge_files(reader, entries[chunk[0]:chunk[1]], found, base + (k << _ORDINAL_BITS))
                continue
            pieces.append((k, found))
            if k + 1 == len(chunks) or chunks[k + 1][0] != chunk[0]:
                _merge_pieces(reader, entries[chunk[0]], chunk[5], pieces, base + (pieces[0][0] << _ORDINAL_BITS))
                pieces = []
        for (proc, out), sent in zip(pool.slots, given):
            if proc is not None:
                proc.wait()
            if proc is None or not sent or proc.returncode != 0:
                _warn_failed(proc, out, "its files were")


def read_chunk_apart(reader: Any, entries: list[Entry], chunk: Chunk, first_ordinal: int) -> Any:
    """A chunk of :func:`read_files` read apart from the load (here or in a worker): ``reader.read_chunk``'s result
    for whole files, ``reader.read_piece``'s for a part of one."""
    if len(chunk) == 2:
        return reader.read_chunk(entries[chunk[0]:chunk[1]], first_ordinal)
    i, _, start, end, first_line, name = chunk
    return reader.read_piece(entries[i], (start, end, first_line), name, first_ordinal)


def _merge_files(reader: Any, entries: list[Entry], found: Any, first_ordinal: int) -> None:
    """Merge a chunk of whole files read apart (its part and formats); None: read it here, in its turn (the loader
    raised on it, or a worker left it unread)."""
    if found is None:
        reader.decoder.next_ordinal = max(reader.decoder.next_ordinal, first_ordinal)
        reader.read_here(entries)
        return
    part, chosen = found
    reader.decoder.merge(part)
    reader.chosen.extend(tuple(pair) for pair in chosen)
    reader.files_done(entries)


def _merge_pieces(reader: Any, entry: Entry, name: str, pieces: list[tuple[int, Any]], first_ordinal: int) -> None:
    """Merge the parts of a file read in parts (each its part and keys), in order; the file read whole here instead
    when a part is missing (a worker left it unread, or reading it raised) or two parts share a key (a trace cut
    in two)."""
    if any(found is None for _, found in pieces) or not disjoint(found[1] for _, found in pieces):
        _merge_files(reader, [entry], None, first_ordinal)
        return
    reader.chosen.append((str(entry[0]), name))
    for _, (part, _) in pieces:
        reader.decoder.merge(part)
    reader.files_done([entry])


def _read_converted(fmt: Format, fields: dict[str, str] | None, path: Path, arm: str | None,
                    part: tuple[int, int, int], first_ordinal: int) -> tuple[DecodedPart, frozenset[str]]:
    """Decode one part of a converted format's file here: its records and keys."""
    decoder = RecordDecoder(strict=False, first_ordinal=first_ordinal)
    with gc_paused():
        converted = fmt.read_part(path, *part, fields)
        decoder.add_items(str(path), map(settle, converted.items), arm)  # nothing fills a missing field here
    return decoder.export(), converted.keys


def _warn_failed(proc: subprocess.Popen | None, out: Path, what: str = "its part of the file was") -> None:
    try:
        lines = (out / "stderr.txt").read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    why = lines[-1] if lines else f"exit code {proc.returncode if proc is not None else '?'}"
    warnings.warn(f"a loader worker process failed ({why}); {what} read in this process instead (same result, "
                  "more time)", RuntimeWarning, stacklevel=4)


class _NoPandas:
    """An import finder refusing pandas: installed by :func:`_worker` while pyarrow looks for pandas."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("a loader worker does not import pandas")


def arrow_without_pandas() -> None:
    """Make pyarrow's first array here without pandas: pyarrow imports pandas (a third of a second) on its first
    array, to recognise pandas objects; a worker has none to give it, so pyarrow is left to find no pandas (later
    imports of pandas are not refused)."""
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


def _worker(argv: list[str]) -> int:
    """A worker of :func:`read_parallel`: the parts it claims decoded, each into ``<out>/part<k>``."""
    arrow_without_pandas()
    path, arm, out, fmt, fields, claims, parts = argv
    converted = None
    if fmt != "record":
        from agentab.formats import get

        converted = get(fmt)
    for k, (start, end, first_line, first_ordinal) in enumerate(json.loads(parts)):
        if k == 0 or not claim(claims, k):  # the first is the parent's
            continue
        folder = Path(out) / f"part{k}"
        folder.mkdir()
        decoded, keys = _read_apart(converted, json.loads(fields), Path(path), arm or None, (start, end, first_line),
                                    first_ordinal)
        write_part(decoded, folder, keys)
    return 0
