"""Benchmark: streaming a JSON Lines trace file larger than memory through ``load -> score``.

Writes agentab records of the example experiment (400 tasks x 5 seeds x 2 arms, repeated under new run and task
ids: :func:`write_records`) as a 5 GB file and a 500 MB one (``--dir``: on a disk with room; both kept with
``--keep``), then measures, each in a fresh subprocess, ``agentab.load_traces -> agentab.score`` (one
``TrajectorySpec`` for every run): the 500 MB file in memory (the default engine, which decodes a large file
with a worker process too) and with ``engine="stream"`` (64 MiB blocks), and the 5 GB file streamed. Peak RSS
is ``resource.getrusage``'s (the process; its largest child apart). The two score tables of the 500 MB file
are compared by a hash of every value, their dtypes and ``attrs``.

Run: ``python benchmarks/bench_stream.py --dir /tmp/agentab-stream-bench --keep`` (about 10 min on two idle
cores; 5.5 GB of disk).

Last run (2026-12-01, commit 4bd3e94; the 2-core development machine shared with seven other jobs, load
average 15-18: the times are those of a very busy machine)::

      engine  file GB       runs   load s  score s  total s  peak RSS MB  workers MB RSS / file
      memory     0.50    144,000     51.3      4.3     55.6        1,002         367       2.08
      stream     0.50    144,000    112.5    140.3    252.9          403           0       0.84
      stream     5.01  1,428,000   1342.9   1049.1   2391.9        1,577           0       0.33

    score tables of the 0.50 GB file identical (memory vs stream): True; stream / memory time on it: 4.55

The run before (commit 63424fd, load average about 9; the run index then held a Python string per run):
memory 31.2 s and 1,011 MB (+ a 368 MB worker), stream 48.6 s and 435 MB on the 0.50 GB file (1.56x the
time), and 1,684 s with a peak RSS of 1,794 MB on the 5.01 GB one.

The 5 GB file is scored with a peak RSS of 1.6 GB (the target: under 2 GB): the per-run score table of
1.4 million runs, the run index of the load and one 64 MiB block's tables. The stream engine reads the file
twice (the load pass, then the score pass) in one process, so on a busy machine it is the slower of the two
(1.6x to 4.6x here); the in-memory path decodes with a worker process too and needs 2.1x the file in RSS
(plus the worker's).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: One measurement, in a fresh process: load -> score with one engine; peak RSS from getrusage (this process, and
#: separately its largest child: the in-memory load decodes a large file with worker processes too).
CHILD = r"""
import json, resource, sys, time
import pandas as pd
import agentab
engine, path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = agentab.TrajectorySpec(required=("edit_file", "run_tests"), step_budget=15)
start = time.perf_counter()
if engine == "memory":
    traces = agentab.load_traces(path)
else:
    traces = agentab.load_traces(path, engine=engine, batch_size=batch)
loaded = time.perf_counter()
scores = agentab.score(traces, spec)
done = time.perf_counter()
digest = int(pd.util.hash_pandas_object(scores, index=False).sum() % 2**61)
print(json.dumps({
    "engine": engine, "runs": len(scores), "rejected": len(traces.rejected), "load_s": loaded - start,
    "score_s": done - loaded, "total_s": done - start,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "child_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "digest": digest, "dtypes": str(list(scores.dtypes.astype(str))), "attrs": repr(scores.attrs),
}))
"""

#: Runs of the example experiment written once and repeated (with new run and task ids) to reach the size.
_TASKS, _SEEDS = 400, 5


def write_records(path: Path, size: int) -> tuple[int, int]:
    """Write at least ``size`` bytes of agentab records: the example experiment repeated under new ids.

    Copy ``k`` of the example's runs has run ids ``c<k>-<run_id>`` and task ids ``c<k>-<task_id>``, so every run
    id is unique and the tasks grow with the file. Returns (runs, bytes).
    """
    sys.path.insert(0, str(HERE.parent))
    import agentab

    traces = agentab.datasets.example_experiment(seed=0, n_tasks=_TASKS, n_seeds=_SEEDS)
    with tempfile.TemporaryDirectory() as tmp:
        block = (Path(tmp) / "block.jsonl")
        traces.to_jsonl(block)
        lines = block.read_bytes().splitlines(keepends=True)
    runs = written = copy = 0
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as fh:
        while written < size:
            prefix = b"c%d-" % copy
            chunk = b"".join(line.replace(b'{"run_id":"', b'{"run_id":"' + prefix, 1)
                             .replace(b'"task_id":"', b'"task_id":"' + prefix, 1) for line in lines)
            fh.write(chunk)
            written += len(chunk)
            runs += len(lines)
            copy += 1
    partial.rename(path)
    return runs, written


def measure(engine: str, path: Path, batch: int) -> dict:
    """load -> score of ``path`` with ``engine`` in a fresh process: times, peak RSS, a digest of the scores."""
    out = subprocess.run([sys.executable, "-c", CHILD, engine, str(path), str(batch)], capture_output=True,
                         text=True, check=True, cwd=HERE.parent, env=_env())
    return json.loads(out.stdout.strip().splitlines()[-1])


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE.parent) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=5.0, help="size of the large file, GB (10**9 bytes)")
    parser.add_argument("--small-mb", type=float, default=500.0, help="size of the file read both ways, MB")
    parser.add_argument("--batch-mb", type=float, default=64.0, help="batch_size of the stream engine, MiB")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to write the files (default: a temporary folder, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the files (with --dir: reused next time)")
    args = parser.parse_args(argv)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="agentab-bench-stream-"))
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < (args.gb * 1e9 + args.small_mb * 1e6) * 1.2:
        raise SystemExit(f"{folder}: {free / 1e9:.1f} GB free, not enough for the files")
    batch = int(args.batch_mb * 2**20)
    try:
        rows = []
        small = folder / f"records_{args.small_mb:g}mb.jsonl"
        large = folder / f"records_{args.gb:g}gb.jsonl"
        for path, size in ((small, args.small_mb * 1e6), (large, args.gb * 1e9)):
            if not path.exists():
                runs, written = write_records(path, int(size))
                print(f"wrote {path}: {runs:,} runs, {written / 1e9:.2f} GB", flush=True)
        for engine, path in (("memory", small), ("stream", small), ("stream", large)):
            row = measure(engine, path, batch)
            row["file_gb"] = path.stat().st_size / 1e9
            rows.append(row)
            print(json.dumps(row), flush=True)
        _table(rows)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def _table(rows: list[dict]) -> None:
    same = rows[0]["digest"] == rows[1]["digest"] and rows[0]["dtypes"] == rows[1]["dtypes"] and \
        rows[0]["attrs"] == rows[1]["attrs"]
    print(f"\n{'engine':>8} {'file GB':>8} {'runs':>10} {'load s':>8} {'score s':>8} {'total s':>8} "
          f"{'peak RSS MB':>12} {'workers MB':>11} {'RSS / file':>10}")
    for r in rows:
        print(f"{r['engine']:>8} {r['file_gb']:>8.2f} {r['runs']:>10,} {r['load_s']:>8.1f} {r['score_s']:>8.1f} "
              f"{r['total_s']:>8.1f} {r['peak_mb']:>12,.0f} {r['child_peak_mb']:>11,.0f} "
              f"{r['peak_mb'] * 2**20 / (r['file_gb'] * 1e9):>10.2f}")
    print(f"\nscore tables of the {rows[0]['file_gb']:.2f} GB file identical (memory vs stream): {same}; "
          f"stream / memory time on it: {rows[1]['total_s'] / rows[0]['total_s']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
