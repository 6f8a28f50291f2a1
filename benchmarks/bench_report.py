"""Benchmark: how long ``agentab.report`` takes, against the comparison it reports, at three sizes.

For each size the embedded example experiment (``example_experiment(seed=0,
n_tasks=T, n_seeds=S)``, two arms) is scored with its specs and compared
on seven metrics (outcome, rubric, tokens, cost_usd, n_steps, loop,
cap_hit; ``n_resamples=1999``, seed 0); then the HTML report is written
with the traces (tool choice included). Times are wall-clock seconds, best
of ``--repeat``; the ratio report / compare is the figure to read on a
shared machine (both measured in the same run). Most of a large report's
time is the quantile-shift bootstrap (10 quantiles per cost metric) and
the PNG encoding of about a dozen figures.

Run: ``python benchmarks/bench_report.py [--quick] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import agentab

METRICS = ["outcome", "rubric", "tokens", "cost_usd", "n_steps", "loop", "cap_hit"]
SIZES = ((60, 5), (500, 10), (2000, 10))


def best_of(repeat: int, work) -> tuple[float, object]:  # noqa: ANN001 - a thunk
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - start)
    return min(times), out


def run(quick: bool = False, repeat: int = 1) -> list[dict]:
    rows = []
    folder = Path(tempfile.mkdtemp())
    for n_tasks, n_seeds in SIZES[:2] if quick else SIZES:
        traces = agentab.datasets.example_experiment(seed=0, n_tasks=n_tasks, n_seeds=n_seeds)
        scores = agentab.score(traces, agentab.datasets.example_specs(n_tasks=n_tasks))
        t_compare, result = best_of(repeat, lambda: agentab.compare(
            scores, metrics=METRICS, guardrails={"tokens": "p95 <= +10%"}, n_resamples=1999, seed=0))
        path = folder / f"report_{n_tasks}x{n_seeds}.html"
        t_report, _ = best_of(repeat, lambda: agentab.report(result, path, traces=traces))
        rows.append({"runs": len(scores), "tasks x seeds": f"{n_tasks} x {n_seeds}", "compare s": t_compare,
                     "report s": t_report, "report / compare": t_report / t_compare,
                     "report MB": path.stat().st_size / 1e6})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the two smaller sizes only")
    parser.add_argument("--repeat", type=int, default=1, help="best of N (default 1)")
    args = parser.parse_args()
    print(f"{'runs':>8} {'tasks x seeds':>14} {'compare s':>10} {'report s':>9} {'report/compare':>15} {'MB':>6}")
    for row in run(args.quick, args.repeat):
        print(f"{row['runs']:>8,} {row['tasks x seeds']:>14} {row['compare s']:>10.2f} {row['report s']:>9.2f} "
              f"{row['report / compare']:>15.2f} {row['report MB']:>6.2f}")


if __name__ == "__main__":
    main()
