"""Benchmark: how long ``profile`` takes (task-cluster bootstrap of every cell), against a plain loop.

Cases: the 13 Terminal-Bench submissions (``../shared/data/terminal-bench``, 80 tasks x 5 runs; outcome,
agent time p50/p95, tests passed p50/p95) and simulated sweeps of 10 arms x 500 tasks x 5 seeds (outcome
with task effects, a loop rate, tokens and cost p50/p95: 9 columns), ``n_resamples=2000``, seed 0. The
reference is the plain way to get the same intervals: per resample, gather the drawn tasks' runs and
compute every cell again (numpy, no pandas), timed on 100 resamples and scaled to 2000 (it is linear in
the resamples). Wall-clock seconds, best of ``--repeat``; the ratio is the figure to read.

Last run (2026-12-01, 2-core machine shared with other work, load average about 6,
``python benchmarks/bench_profiles.py``)::

    case                                    runs  profile s  loop s (scaled)  loop / profile
    terminal-bench 13 x 80 x 5             5,200       0.63            14.41            23.0
    simulated 10 x 500 x 5                25,000       3.57            55.79            15.6

Run: ``python benchmarks/bench_profiles.py [--quick] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from agentab._vocabulary import quantile, task_weights
from agentab.comparison.profiles import profile

TB = next((folder / "shared" / "data" / "terminal-bench" / "tb_core_0.1.1_trials.csv"
           for folder in Path(__file__).resolve().parents if (folder / "shared" / "data" / "terminal-bench").is_dir()),
          Path("tb_core_0.1.1_trials.csv"))
B = 2000
LOOP_B = 100


def simulated(n_arms: int, n_tasks: int, n_seeds: int, seed: int = 0) -> pd.DataFrame:
    """Runs of a sweep: outcome with task difficulty (ICC about 0.5), a loop flag, long-tailed tokens."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.5, n_tasks)
    rows = []
    for a in range(n_arms):
        skill = rng.normal(0, 0.5)
        task = np.repeat(np.arange(n_tasks), n_seeds)
        p = 1 / (1 + np.exp(-(skill - difficulty[task])))
        tokens = np.round(rng.lognormal(10 + 0.1 * a, 1.0, len(task)))
        rows.append(pd.DataFrame({"arm": f"arm-{a}", "task_id": task.astype(str), "outcome": rng.random(len(task)) < p,
                                  "loop": rng.random(len(task)) < 0.2, "tokens": tokens, "cost_usd": tokens * 3e-6}))
    return pd.concat(rows, ignore_index=True)


def loop_reference(data: pd.DataFrame, arm: str, rates: list[str], quantiles: list[str], n: int) -> float:
    """Seconds for ``n`` resamples done the plain way: gather the drawn tasks' runs, recompute every cell."""
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _, group in data.groupby(arm, sort=False):
        tasks, codes = np.unique(group["task_id"].astype(str).to_numpy(), return_inverse=True)
        rows_of = [np.flatnonzero(codes == t) for t in range(len(tasks))]
        columns = {c: pd.to_numeric(group[c].map(lambda v: np.nan if pd.isna(v) else float(v))
                                    if group[c].dtype == object else group[c], errors="coerce").to_numpy(dtype=float)
                   for c in rates + quantiles}
        for _ in range(n):
            picked = rng.integers(0, len(tasks), len(tasks))
            index = np.concatenate([rows_of[t] for t in picked])
            boot_task = np.repeat(np.arange(len(picked)), [len(rows_of[t]) for t in picked])
            for c in rates:
                v = columns[c][index]
                known = ~np.isnan(v)
                sums = np.bincount(boot_task[known], v[known], len(picked))
                counts = np.bincount(boot_task[known], minlength=len(picked))
                _ = np.mean(sums[counts > 0] / counts[counts > 0])
            for c in quantiles:
                v = columns[c][index]
                known = ~np.isnan(v)
                if known.any():
                    for q in (0.5, 0.95):
                        quantile(v[known], q, task_weights(boot_task[known]))
    return time.perf_counter() - start


def best_of(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def cases(quick: bool) -> list[tuple[str, pd.DataFrame, dict, list[str], list[str]]]:
    out = []
    if TB.is_file():
        tb = pd.read_csv(TB)
        out.append(("terminal-bench 13 x 80 x 5", tb,
                    {"arm": "submission", "outcome": "is_resolved",
                     "metrics": {"is_resolved": "binary", "agent_duration_sec": "cost", "n_tests_passed": "count"}},
                    ["is_resolved"], ["agent_duration_sec", "n_tests_passed"]))
    n_tasks = 100 if quick else 500
    out.append((f"simulated 10 x {n_tasks} x 5", simulated(10, n_tasks, 5),
                {"metrics": {"outcome": "binary", "loop": ("binary", "lower"), "tokens": "cost", "cost_usd": "cost"}},
                ["outcome", "loop"], ["tokens", "cost_usd"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 tasks in the simulated sweep")
    parser.add_argument("--repeat", type=int, default=1, help="best of N (default 1)")
    args = parser.parse_args()
    print(f"{'case':<34} {'runs':>9} {'profile s':>10} {'loop s (scaled)':>16} {'loop / profile':>15}")
    for name, data, kwargs, rates, quantiles in cases(args.quick):
        t_profile = best_of(args.repeat, lambda d=data, k=kwargs: profile(d, n_resamples=B, seed=0, **k))
        t_loop = loop_reference(data, kwargs.get("arm", "arm"), rates, quantiles, LOOP_B) * B / LOOP_B
        print(f"{name:<34} {len(data):>9,} {t_profile:>10.2f} {t_loop:>16.2f} {t_loop / t_profile:>15.1f}")


if __name__ == "__main__":
    main()
