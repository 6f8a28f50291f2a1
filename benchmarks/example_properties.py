"""Measure the stated properties of the embedded example experiment.

Run: ``python benchmarks/example_properties.py`` (generates 60, 400 and
10,000 tasks x 5 seeds; about a minute). Prints, per size: success rate of
each arm (averaged over tasks), the candidate/baseline ratios of median and
p95 tokens, the intra-task correlation (ICC) of the outcome in each arm, and
the mean steps per run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import agentab


def icc(outcome: pd.Series, task: pd.Series) -> float:
    """One-way ANOVA estimator of the intra-class correlation (equal group sizes)."""
    groups = outcome.astype(float).groupby(task, observed=True)
    k = groups.size().mean()
    between = groups.mean().var(ddof=1) * k
    within = groups.var(ddof=1).mean()
    return float((between - within) / (between + (k - 1) * within))


def properties(traces: agentab.Traces) -> dict[str, str]:
    runs = traces.runs
    arms = {arm: group for arm, group in runs.groupby("arm", observed=True)}
    base, cand = arms["baseline"], arms["candidate"]

    def rate(g: pd.DataFrame) -> float:
        return float(g.groupby("task_id", observed=True)["outcome"].mean().mean())

    def q(g: pd.DataFrame, p: float) -> float:
        return float(np.quantile(g["tokens"].astype(float), p))

    return {
        "success rate, baseline -> candidate": f"{rate(base):.3f} -> {rate(cand):.3f}",
        "median tokens, candidate / baseline": f"{q(cand, 0.5) / q(base, 0.5):.2f}",
        "p95 tokens, candidate / baseline": f"{q(cand, 0.95) / q(base, 0.95):.2f}",
        "ICC of the outcome (baseline / candidate)":
            f"{icc(base['outcome'], base['task_id']):.2f} / {icc(cand['outcome'], cand['task_id']):.2f}",
        "mean steps per run": f"{runs['n_steps'].astype(float).mean():.1f}",
    }


def main() -> int:
    columns = {}
    for n_tasks in (60, 400, 10_000):
        columns[f"{n_tasks:,} tasks x 5"] = properties(agentab.datasets.example_experiment(seed=0, n_tasks=n_tasks))
    print(pd.DataFrame(columns).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
