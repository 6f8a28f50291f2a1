"""Benchmark: loading a large JSONL of trace records.

Writes ``--runs`` runs of the embedded example experiment (about ten steps
per run) as one JSONL file, then times, each in a fresh subprocess so that
peak memory is measured cleanly, and interleaved over ``--repeat`` rounds:

- ``agentab``: ``agentab.load_traces(path)`` (validated runs and steps tables),
  which decodes a large file with one worker process per CPU;
- ``agentab-1``: the same in this one process (``workers=1``);
- ``pyarrow``: ``pyarrow.json.read_json(path)`` (raw parse, no validation,
  nested columns as inferred structs): the reference;
- ``json loop``: a per-record Python loop over ``json.loads`` that builds the
  same two tables with pandas (the naive baseline).

Reported: best wall time, runs/s and steps/s, throughput relative to
pyarrow (pyarrow time / method time; 1.0 means as fast), peak RSS of the
process (imports included), peak RSS of its largest worker process (agentab
decodes a large file in this process plus worker subprocesses; pyarrow uses
threads), and the sum of the two over the file size.

Run: ``python benchmarks/bench_load.py`` (100,000 runs; about 250 MB of
JSONL written under ``benchmarks/_data/``, reused on the next run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, sys, time
method, path = sys.argv[1], sys.argv[2]
if method.startswith("agentab"):
    import agentab
    start = time.perf_counter()
    traces = agentab.load_traces(path, workers=1 if method == "agentab-1" else None)
    seconds = time.perf_counter() - start
    runs, steps = len(traces.runs), len(traces.steps)
elif method == "pyarrow":
    import pyarrow.json
    start = time.perf_counter()
    table = pyarrow.json.read_json(path)
    seconds = time.perf_counter() - start
    runs, steps = table.num_rows, -1
elif method == "json loop":
    import pandas as pd
    start = time.perf_counter()
    run_rows, step_rows = [], []
    with open(path, "rb") as fh:
        for line in fh:
            rec = json.loads(line)
            n_tokens = 0
            for step in rec["steps"]:
                obs = step.get("observation") or {}
                step_rows.append((rec["run_id"], step["index"], step["tool"],
                                  json.dumps(step["args"], sort_keys=True, separators=(",", ":")),
                                  obs.get("status"), obs.get("error"), step.get("tokens_in"), step.get("tokens_out"),
                                  step.get("started_at"), step.get("ended_at")))
                n_tokens += (step.get("tokens_in") or 0) + (step.get("tokens_out") or 0)
            meta = rec.get("metadata") or {}
            run_rows.append((rec["run_id"], rec["task_id"], rec["seed"], rec.get("arm"), meta.get("model"),
                             meta.get("harness"), rec["outcome"], len(rec["steps"]), n_tokens, rec.get("cost_usd")))
    runs_df = pd.DataFrame(run_rows, columns=["run_id", "task_id", "seed", "arm", "model", "harness", "outcome",
                                              "n_steps", "tokens", "cost_usd"])
    steps_df = pd.DataFrame(step_rows, columns=["run_id", "index", "tool", "args", "status", "error", "tokens_in",
                                                "tokens_out", "started_at", "ended_at"])
    for column in ("started_at", "ended_at"):
        steps_df[column] = pd.to_datetime(steps_df[column], format="ISO8601", utc=True)
    seconds = time.perf_counter() - start
    runs, steps = len(runs_df), len(steps_df)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "runs": runs, "steps": steps, "peak_rss": peak, "worker_rss": children}))
"""


def write_data(path: Path, n_runs: int) -> tuple[int, int]:
    """Write ``n_runs`` example runs (5 seeds per task, two arms) as JSONL."""
    import msgspec

    from agentab.datasets import example_records

    n_tasks = max(1, n_runs // 10)
    encode = msgspec.json.Encoder().encode
    runs = steps = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        for record in example_records(seed=0, n_tasks=n_tasks, n_seeds=5):
            fh.write(encode(record) + b"\n")
            runs += 1
            steps += len(record["steps"])
    tmp.rename(path)
    return runs, steps


def measure(method: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, method, str(path)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{method} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the file (default 100,000)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds; best time is kept (default 3)")
    parser.add_argument("--methods", default="agentab,agentab-1,pyarrow,json loop", help="comma-separated methods")
    args = parser.parse_args(argv)

    path = HERE / "_data" / f"example_{args.runs}.jsonl"
    if not path.exists():
        start = time.perf_counter()
        runs, steps = write_data(path, args.runs)
        print(f"wrote {path} ({runs:,} runs, {steps:,} steps) in {time.perf_counter() - start:.1f} s")
    size = path.stat().st_size
    methods = [m.strip() for m in args.methods.split(",")]
    results: dict[str, list[dict]] = {m: [] for m in methods}
    for _ in range(args.repeat):
        for method in methods:
            results[method].append(measure(method, path))
    agentab_steps = next((r["steps"] for r in results.get("agentab", []) if r["steps"] >= 0), None)

    best = {m: min(r["seconds"] for r in rs) for m, rs in results.items()}
    print(f"\nfile: {size / 1e6:,.1f} MB, {results[methods[0]][0]['runs']:,} runs"
          + (f", {agentab_steps:,} steps" if agentab_steps else "") + f"; best of {args.repeat}; cpus: {os.cpu_count()}")
    header = (f"{'method':<10} {'seconds':>8} {'runs/s':>10} {'steps/s':>11} {'vs pyarrow':>10} "
              f"{'RSS MB':>7} {'worker MB':>9} {'RSS/file':>8}")
    print(header)
    print("-" * len(header))
    for method, rs in results.items():
        seconds = best[method]
        n_runs = rs[0]["runs"]
        n_steps = agentab_steps or 0
        peak = max(r["peak_rss"] for r in rs)
        worker = max(r["worker_rss"] for r in rs)
        ratio = best["pyarrow"] / seconds if "pyarrow" in best else float("nan")
        print(f"{method:<10} {seconds:>8.2f} {n_runs / seconds:>10,.0f} {n_steps / seconds:>11,.0f} "
              f"{ratio:>10.2f} {peak / 1e6:>7,.0f} {worker / 1e6:>9,.0f} {(peak + worker) / size:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
