"""Benchmark: many arms in one call against one two-arm ``compare`` per candidate (issue 21, speed).

Data: 10 arms (a baseline and 9 candidates) x 500 tasks x 5 seeds (runs per task) = 25,000 runs, a binary
outcome with task effects (logit N(0, 1.5)) and small arm lifts, the same tasks in every arm (paired).

Timed in this process, alternately (which goes first alternates too), best of ``--repeat``:

- **one call**: ``agentab.compare(data, baseline="baseline", candidate="all", metrics=["outcome"])``
  (default ``n_resamples=9999``): 9 two-arm comparisons, the max-T over the candidates and the all-pairs
  max-T (45 pairs), on the two-arm tests' own sign flips;
- **k calls**: ``agentab.compare(data, baseline="baseline", candidate=c, metrics=["outcome"])`` for each of
  the 9 candidates, what a user does today (no adjustment).

``ratio`` is one call / k calls, in CPU seconds (``time.process_time``: the 2 cores are shared, and wall times
on them vary by a factor of 2; wall seconds in brackets); ``adjustment`` is the CPU time of the adjustment alone
(the max-T over the candidates and over all pairs, from the 9 comparisons, drawing its flips afresh). The one
call runs the very same 9 two-arm comparisons (each candidate's table is the two-arm one bit for bit but for
the adjusted primary p-value, ``tests/test_multi_speed.py``), inside ``agentab.stats.arms.shared_draws``: the
candidates' paired tests draw each metric's sign flips from the same stream, so the flips are drawn once
(for the outcome and for its pass^5) and every other candidate, and the max-T, reads them.

Run: ``python benchmarks/bench_multi.py [--repeat N] [--tasks T] [--arms A] [--seeds S] [--metrics outcome,tokens]``
(``--metrics outcome,tokens`` adds a long-tailed cost metric, compared at p50 and p95, to every comparison).

Last run
--------
2026-12-01, 2 cores shared with other jobs (load average 17). ``python benchmarks/bench_multi.py --repeat 4`` on
commit 15b7ba2::

    10 arms x 500 tasks x 5 seeds (25,000 runs), metrics outcome, n_resamples 9999, best of 4 (CPU seconds; wall in brackets)
          one call        k calls   ratio  adjustment
      2.21s (16.3s)   2.43s (19.4s)   0.908       0.17s
    (max-T step-down, 9999 patterns; best: None)

The same script on the code before the sharing (commit c432143, same machine, minutes apart)::

      3.25s (12.9s)   3.04s (11.9s)   1.070       0.17s

So one call of 9 candidates now costs 9% less than the 9 two-arm calls (it cost 7% more), and 32% less than
it did: the flips are drawn once per metric instead of once per candidate (about 0.03 s of CPU each at
9999 x 500), the paired tests' flipped sums multiply by int8 signs instead of selecting with ``np.where``
(the same numbers, faster, for the k calls too), and Holm no longer goes through statsmodels'
``multipletests``, whose ``gc.collect()`` cost 0.05 s per comparison. What is left is mostly each
inconclusive candidate's plan of a next experiment (``agentab.power``: 0.4 s each for 4 of the 9 here),
which depends on the candidate's own effect and is not shared.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

import agentab
from agentab.comparison._multi_family import primary_family


def sweep(arms: int, tasks: int, seeds: int, seed: int = 0) -> pd.DataFrame:
    """``arms`` arms on the same ``tasks`` tasks, ``seeds`` runs each, task effects shared."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.5, tasks)
    lifts = np.r_[0.0, rng.normal(0, 0.2, arms - 1)]
    names = ["baseline", *(f"cand{i:02d}" for i in range(1, arms))]
    arm = np.repeat(np.arange(arms), tasks * seeds)
    task = np.tile(np.repeat(np.arange(tasks), seeds), arms)
    p = 1 / (1 + np.exp(-(difficulty[task] + lifts[arm])))
    return pd.DataFrame({"arm": np.array(names)[arm], "task_id": [f"t{t:04d}" for t in task],
                         "seed": np.tile(np.arange(seeds), arms * tasks), "outcome": rng.random(len(arm)) < p,
                         "tokens": rng.lognormal(9 + 0.5 * difficulty[task], 0.8)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--arms", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--metrics", default="outcome", help="comma-separated: outcome, tokens (a cost metric)")
    args = parser.parse_args(argv)
    metrics = {"outcome": "binary", "tokens": "cost"}
    metrics = {m: metrics[m] for m in args.metrics.split(",")}
    data = sweep(args.arms, args.tasks, args.seeds)
    cands = sorted(set(data["arm"]) - {"baseline"})
    agentab.compare(data, baseline="baseline", candidate=cands[0], metrics=metrics, n_resamples=99)  # imports
    one, many, result = [], [], None
    for i in range(args.repeat):  # alternating which goes first, so that a drift in the machine's load cancels
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            start, cpu = time.perf_counter(), time.process_time()
            if which == 0:
                result = agentab.compare(data, baseline="baseline", candidate="all", metrics=metrics)
                one.append((time.process_time() - cpu, time.perf_counter() - start))
            else:
                for c in cands:
                    agentab.compare(data, baseline="baseline", candidate=c, metrics=metrics)
                many.append((time.process_time() - cpu, time.perf_counter() - start))
    cpu = time.process_time()
    primary_family(data, result.candidates, "baseline", 0.05, 9999, 0)
    adjustment = time.process_time() - cpu
    (one_cpu, one_wall), (many_cpu, many_wall) = min(one), min(many)
    print(f"{args.arms} arms x {args.tasks} tasks x {args.seeds} seeds ({len(data):,} runs), metrics "
          f"{', '.join(metrics)}, n_resamples 9999, best of {args.repeat} (CPU seconds; wall in brackets)")
    print(f"{'one call':>14} {'k calls':>14} {'ratio':>7} {'adjustment':>11}")
    print(f"{one_cpu:>6.2f}s ({one_wall:.1f}s) {many_cpu:>6.2f}s ({many_wall:.1f}s) {one_cpu / many_cpu:>7.3f} "
          f"{adjustment:>10.2f}s")
    print(f"({result.settings.adjustment}, {result.settings.n_patterns} patterns; best: {result.best})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
