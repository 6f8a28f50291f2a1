"""Read JSON Lines files, splitting a large one over several processes (internal).

A large uncompressed ``.jsonl`` file is cut at line boundaries into parts.
This process decodes the first part while worker processes decode the
others; each worker is a plain ``python -m agentab._parallel`` subprocess (no
``multiprocessing``: nothing re-imports the user's ``__main__``, nothing is
forked from a threaded process) that writes its tables as Arrow IPC files
plus a small JSON of rejections and run ids. The parts are merged in file
order, so line numbers, ordinals, duplicate checks and the strict-mode
"earliest problem" are exactly those of a serial read. A worker that fails to
start or crashes costs only time: its part is then decoded here.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pyarrow as pa

from ._decode import DecodedPart, RecordDecoder, Rejection

#: Files smaller than this are read by one process.
PARALLEL_MIN_BYTES = 48 * 2**20
#: This process starts decoding at once, a worker only after importing agentab:
#: give the first part this many more bytes.
_HEAD_START_BYTES = 40 * 2**20
_BLOCK = 8 * 2**20
BOM = b"\xef\xbb\xbf"
#: JSON's whitespace: a line of only these is blank; any other character makes it a (bad) record.
JSON_SPACE = b" \t\n\r"


def open_trace_file(path: Path):
    """Open a trace file for binary reading, decompressing ``.gz``."""
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")


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


def plan_parts(path: Path, workers: int) -> list[tuple[int, int, int]]:
    """Cut ``path`` into ``(start, end, first_line)`` parts at line boundaries."""
    size = path.stat().st_size
    share = (size + _HEAD_START_BYTES * (workers - 1)) / workers
    cuts = [0, min(size, int(share))]
    rest = (size - cuts[1]) / (workers - 1)
    cuts += [int(cuts[1] + rest * k) for k in range(1, workers - 1)] + [size]
    parts: list[tuple[int, int, int]] = []
    with path.open("rb") as fh:
        starts = [0]
        for cut in cuts[1:-1]:  # move each cut to the start of the next line
            fh.seek(max(cut - 1, starts[-1]))
            fh.readline()
            starts.append(max(fh.tell(), starts[-1]))
        starts.append(size)
        fh.seek(0)
        line, position = 1, 0
        for start, end in zip(starts, starts[1:]):
            while position < start:  # count the newlines before this part
                block = fh.read(min(_BLOCK, start - position))
                line += block.count(b"\n")
                position += len(block)
            if end > start:
                parts.append((start, end, line))
    return parts


def _launch(path: Path, arm: str | None, part: tuple[int, int, int], first_ordinal: int, out: Path
            ) -> subprocess.Popen:
    start, end, first_line = part
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "agentab._parallel", str(path), str(start), str(end), str(first_line),
               str(first_ordinal), "" if arm is None else arm, str(out)]
    with (out / "stderr.txt").open("wb") as errors:  # a file, not a pipe: a chatty worker cannot block
        return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=errors)


def _write_part(part: DecodedPart, out: Path) -> None:
    for name, table in (("runs", part.runs), ("steps", part.steps)):
        with pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    meta = {
        "n_read": part.n_read,
        "next_ordinal": part.next_ordinal,
        "rejected": [[r.ordinal, r.source, r.line, r.run_id, r.field, r.reason] for r in part.rejected],
        "seen": [[run_id, source, line, ordinal] for run_id, (source, line, ordinal) in part.seen.items()],
    }
    (out / "meta.json").write_text(json.dumps(meta))


def _read_part(out: Path) -> DecodedPart:
    tables = [pa.ipc.open_file(pa.memory_map(str(out / f"{name}.arrow"))).read_all() for name in ("runs", "steps")]
    meta = json.loads((out / "meta.json").read_text())
    return DecodedPart(
        runs=tables[0],
        steps=tables[1],
        rejected=[Rejection(*r) for r in meta["rejected"]],
        seen={run_id: (source, line, ordinal) for run_id, source, line, ordinal in meta["seen"]},
        n_read=meta["n_read"],
        next_ordinal=meta["next_ordinal"],
    )


def read_parallel(decoder: RecordDecoder, path: Path, arm: str | None, workers: int) -> None:
    """Decode ``path`` with this process and ``workers - 1`` subprocesses."""
    parts = plan_parts(path, workers)
    if not parts:  # an empty file
        return
    base = decoder.next_ordinal
    with tempfile.TemporaryDirectory(prefix="agentab-") as tmp:
        launched = []
        try:
            for k, part in enumerate(parts[1:], start=1):
                out = Path(tmp) / f"part{k}"
                out.mkdir()
                try:
                    proc = _launch(path, arm, part, base + part[2] - 1, out)
                except OSError as err:
                    proc = None
                    (out / "stderr.txt").write_text(f"could not start: {err}")
                launched.append((proc, part, out))
            read_lines(decoder, path, arm, parts[0][0], parts[0][1], parts[0][2])
            for proc, part, out in launched:
                result = None
                if proc is not None:
                    proc.wait()
                    if proc.returncode == 0:
                        result = _read_part(out)
                if result is None:  # the worker failed: decode the part here
                    _warn_failed(proc, out)
                    decoder.next_ordinal = max(decoder.next_ordinal, base + part[2] - 1)
                    read_lines(decoder, path, arm, *part)
                else:
                    decoder.merge(result)
        finally:
            for proc, _, _ in launched:
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()


def _warn_failed(proc: subprocess.Popen | None, out: Path) -> None:
    try:
        lines = (out / "stderr.txt").read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    why = lines[-1] if lines else f"exit code {proc.returncode if proc is not None else '?'}"
    warnings.warn(f"a loader worker process failed ({why}); its part of the file was read in this process "
                  "instead (same result, more time)", RuntimeWarning, stacklevel=4)


def _worker(argv: list[str]) -> int:
    path, start, end, first_line, first_ordinal, arm, out = argv
    decoder = RecordDecoder(strict=False, first_ordinal=int(first_ordinal))
    read_lines(decoder, Path(path), arm or None, int(start), int(end), int(first_line))
    _write_part(decoder.export(), Path(out))
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through read_parallel
    raise SystemExit(_worker(sys.argv[1:]))
