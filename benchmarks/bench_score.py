"""Benchmark: ``agentab.score`` (vectorised) against ``score_run`` run by run.

Scores 100,000 runs of the embedded example experiment (10,000 tasks x 5
seeds x 2 arms, about 1.08 million steps) with a realistic spec per task:

- every task: ``required=("edit_file", "run_tests")``, ``step_budget=15``,
  ``step_cap=30``, ``max_repeats=3``, ``forbidden=("delete_file",)``;
- one task in ten also has a reference trajectory with arguments --
  ``read_file(path=<target>)``, ``edit_file(path=<target>)``,
  ``run_tests()`` (any arguments) -- and ``expected_state={"files_modified":
  [<target>]}``, where ``<target>`` is the file the task's runs edit most;
  the match mode cycles over superset, superset, any_order, subset, exact.

Timed: ``agentab.score(traces, specs)`` on all runs (best of ``--repeat``),
and the plain per-run implementation, ``agentab.score_run(record, spec=...)``
on each record, on a random sample of ``--sample`` runs; its time per run is
extrapolated to all runs. Building the sample's records
(``Traces.to_records``) is not counted in the oracle's time, which favours
the oracle. The scores of the sampled runs are then checked to be identical
(every metric and the reasons); the script exits with status 1 if not.

Run: ``python benchmarks/bench_score.py`` (reads
``benchmarks/_data/example_100000.jsonl`` if ``bench_load.py`` wrote it,
else generates the records in memory).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import agentab
from agentab import Call, Traces, TrajectorySpec, score_run
from agentab.scoring.score import score

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data" / "example_100000.jsonl"
MODES = ("superset", "superset", "any_order", "subset", "exact")


def load(path: Path) -> tuple[Traces, str]:
    if path.exists():
        return agentab.load_traces(path), str(path.relative_to(HERE.parent))
    records = list(agentab.datasets.example_records(seed=0, n_tasks=10_000, n_seeds=5))
    return agentab.load_traces(records), "example_records(seed=0, n_tasks=10_000, n_seeds=5)"


def edited_files(traces: Traces) -> dict[str, str]:
    """The file each task's runs edit most often."""
    steps = traces.steps
    edits = steps.loc[steps["tool"] == "edit_file", ["run_id", "args"]]
    task = traces.runs.set_index("run_id")["task_id"]
    paths = pd.DataFrame({"task_id": task.loc[edits["run_id"]].astype(str).to_numpy(),
                          "path": [json.loads(a).get("path") for a in edits["args"]]})
    return paths.groupby("task_id")["path"].agg(lambda p: p.value_counts().index[0]).to_dict()


def make_specs(traces: Traces, seed: int = 0) -> tuple[dict[str, TrajectorySpec], int]:
    base = {"required": ("edit_file", "run_tests"), "step_budget": 15, "step_cap": 30, "max_repeats": 3,
            "forbidden": ("delete_file",)}
    plain = TrajectorySpec(**base)
    targets = edited_files(traces)
    rng = np.random.default_rng(seed)
    specs: dict[str, TrajectorySpec] = {}
    n_reference = 0
    for task in traces.runs["task_id"].cat.categories:
        target = targets.get(task)
        if target is not None and rng.random() < 0.1:
            reference = (Call("read_file", {"path": target}), Call("edit_file", {"path": target}), Call("run_tests"))
            specs[task] = TrajectorySpec(**base, reference=reference, match=MODES[n_reference % len(MODES)],
                                         expected_state={"files_modified": [target]})
            n_reference += 1
        else:
            specs[task] = plain
    return specs, n_reference


def subset(traces: Traces, rows: np.ndarray) -> Traces:
    runs = traces.runs.iloc[rows].reset_index(drop=True)
    steps = traces.steps[traces.steps["run_id"].isin(runs["run_id"])].reset_index(drop=True)
    return Traces(runs=runs, steps=steps, rejected=traces.rejected.iloc[:0], n_read=len(runs))


def differences(table: pd.DataFrame, verdicts: list[agentab.Verdict]) -> list[str]:
    found = []
    for i, verdict in enumerate(verdicts):
        row = table.iloc[i]
        if row["reasons"] != "; ".join(verdict.reasons):
            found.append(f"{row['run_id']}: reasons {row['reasons']!r} != {verdict.reasons!r}")
        for name, expected in verdict.metrics.items():
            got = row[name]
            same = pd.isna(got) if expected is None else (not pd.isna(got) and got == expected)
            if not same:
                found.append(f"{row['run_id']}: {name} {got!r} != {expected!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="JSONL of example runs (default: %(default)s)")
    parser.add_argument("--sample", type=int, default=5_000, help="runs scored by the oracle (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="timings of agentab.score, best kept")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and of the spec choice")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    traces, source = load(args.data)
    print(f"loaded {traces} from {source} in {time.perf_counter() - start:.1f} s")
    specs, n_reference = make_specs(traces, args.seed)
    n_runs, n_steps = len(traces.runs), len(traces.steps)
    print(f"specs: {len(specs):,} tasks, {n_reference:,} with a reference trajectory with arguments")

    seconds = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        table = score(traces, specs)
        seconds.append(time.perf_counter() - start)
    fast = min(seconds)

    rng = np.random.default_rng(args.seed)
    rows = np.sort(rng.choice(n_runs, size=min(args.sample, n_runs), replace=False))
    sample = subset(traces, rows)
    records = sample.to_records()  # not timed
    task_specs = [specs[r["task_id"]] for r in records]
    start = time.perf_counter()
    verdicts = [score_run(record, spec=spec) for record, spec in zip(records, task_specs)]
    per_run = (time.perf_counter() - start) / len(records)
    slow = per_run * n_runs
    found = differences(table.iloc[rows].reset_index(drop=True), verdicts)
    sampled_reference = int(table["reference_match"].iloc[rows].notna().sum())

    print()
    print(f"{'method':<44}{'seconds':>9}{'runs/s':>11}{'steps/s':>12}")
    print(f"{'agentab.score (vectorised), best of ' + str(args.repeat):<44}{fast:>9.2f}"
          f"{n_runs / fast:>11,.0f}{n_steps / fast:>12,.0f}")
    print(f"{'score_run per run (oracle), extrapolated':<44}{slow:>9.2f}{n_runs / slow:>11,.0f}"
          f"{n_steps / slow:>12,.0f}")
    print()
    print(f"speed-up: {slow / fast:.1f}x  ({n_runs:,} runs, {n_steps:,} steps; oracle timed on {len(records):,} "
          f"random runs, {per_run * 1e6:.0f} us per run, extrapolated to all runs; building its records not counted)")
    print(f"agentab.score timings: {', '.join(f'{s:.2f}' for s in seconds)} s")
    print(f"runs matched one by one (greedy pairing not provably maximum): "
          f"{table.attrs['scoring']['matching_fallback_runs']:,} of "
          f"{int(table['reference_match'].notna().sum()):,} runs with a reference")
    if found:
        print(f"NOT IDENTICAL: {len(found)} differences on the {len(records):,} sampled runs, e.g.")
        for line in found[:10]:
            print("  " + line)
        return 1
    print(f"identical: every metric and the reasons of the {len(records):,} sampled runs "
          f"({sampled_reference:,} with a reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
