"""Benchmark: the pipeline on a Dask LocalCluster of 2 workers against the single-machine path, 20 files.

Writes 20 JSON Lines files of the example experiment (file ``k`` holds copy ``k`` of its runs, under new run and
task ids: :func:`bench_stream.write_records`) at two sizes, then, for each size, times ``load_traces -> score ->
compare`` in memory (one process) and with ``engine="dask"`` on a ``distributed.LocalCluster(n_workers=2,
threads_per_worker=1, processes=True)`` (started once, its start-up reported apart), and checks that the score
tables and the comparison tables are identical. The overhead of Dask on small inputs is the difference of the two
times (load and score; ``compare`` runs on the client on the same table in both).

Run: ``python benchmarks/bench_dask.py`` (about 2 min on two idle cores; 12 min in the run below).

Last run (2026-12-01, commit a2e2efd; the 2-core development machine shared with other jobs: load average
9-18 during the run, so the times are slow and noisy; best of 3 rounds)::

    LocalCluster of 2 worker processes started in 5.0 s

        runs      MB  memory s   dask s overhead s dask / memory compare s  identical
         400     2.0      0.92     2.54       1.61          2.75      1.45  True
      40,000   150.4     26.31    57.73      31.41          2.19    118.78  True

"memory s" and "dask s" are ``load_traces -> score`` (the comparison itself runs on the same table on the
client in both: "compare s"). The score tables and the comparison tables are identical (``assert_frame_equal``,
the decision and ``attrs`` equal). On small inputs Dask costs about 1.6 s more (some 80 ms a task: 20 files read
twice, a load pass and a score pass, each a task; plus 5 s to start the cluster once). On two cores already
busy with other jobs, two Dask workers do not beat one process: the engine reads every file twice (once to
load, once to score) and ships the tasks' results; it is for data on many machines or larger than one
machine's memory, not for speed on one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

METRICS = ["outcome", "tokens", "rubric", "n_steps"]


def write_files(folder: Path, runs_per_file: int, n_files: int = 20) -> int:
    """``n_files`` files of about ``runs_per_file`` runs each (whole tasks of the example experiment)."""
    import agentab

    n_tasks = max(1, runs_per_file // 10)
    records = agentab.datasets.example_experiment(seed=0, n_tasks=n_tasks, n_seeds=5).to_records()
    import json

    total = 0
    for k in range(n_files):
        with (folder / f"part{k:02d}.jsonl").open("w") as fh:
            for record in records:
                fh.write(json.dumps({**record, "run_id": f"f{k}-{record['run_id']}",
                                     "task_id": f"f{k}-{record['task_id']}"}) + "\n")
                total += 1
    return total


def pipeline(folder: Path, **engine) -> tuple[float, float, object, object]:
    """load -> score -> compare: (load and score seconds, compare seconds, scores, comparison)."""
    import agentab

    spec = agentab.TrajectorySpec(required=("edit_file", "run_tests"), step_budget=15)
    start = time.perf_counter()
    scores = agentab.score(agentab.load_traces(folder, **engine), spec)
    scored = time.perf_counter()
    result = agentab.compare(scores, metrics=METRICS, n_resamples=999, seed=0)
    return scored - start, time.perf_counter() - scored, scores, result


def main(argv: list[str] | None = None) -> int:
    import pandas as pd
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 2000], help="runs per file")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many rounds")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        print(f"LocalCluster of 2 worker processes started in {time.perf_counter() - start:.1f} s")
        print(f"\n{'runs':>8} {'MB':>7} {'memory s':>9} {'dask s':>8} {'overhead s':>10} {'dask / memory':>13} "
              f"{'compare s':>9}  identical")
        for size in args.sizes:
            with tempfile.TemporaryDirectory(prefix="agentab-bench-dask-") as tmp:
                folder = Path(tmp)
                n_runs = write_files(folder, size)
                megabytes = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
                best = {"memory": float("inf"), "dask": float("inf")}
                for _ in range(args.repeat):
                    memory_s, compare_s, memory_scores, memory_result = pipeline(folder)
                    dask_s, _, dask_scores, dask_result = pipeline(folder, engine="dask", scheduler=client)
                    best["memory"], best["dask"] = min(best["memory"], memory_s), min(best["dask"], dask_s)
                pd.testing.assert_frame_equal(memory_scores, dask_scores)
                pd.testing.assert_frame_equal(memory_result.table, dask_result.table)
                same = memory_result.decision == dask_result.decision and memory_scores.attrs == dask_scores.attrs
                print(f"{n_runs:>8,} {megabytes:>7.1f} {best['memory']:>9.2f} {best['dask']:>8.2f} "
                      f"{best['dask'] - best['memory']:>10.2f} {best['dask'] / best['memory']:>13.2f} "
                      f"{compare_s:>9.2f}  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
