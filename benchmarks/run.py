"""Resampling benchmarks: agentab against a reference measured in the same run, on the same inputs.

Every case times agentab and a reference implementation on identical data in
this process, one after the other, and reports the ratio (reference time /
agentab time), how well the two agree, and the peak memory traced
(``tracemalloc``, which sees numpy's allocations) during each call. Each
side is timed best of 3 unless that would take over 5 s (so the slow scipy
references run once); a warm-up call on small data pays import costs first.

Cases (sizes with ``--quick`` in brackets):

1. ``ordinal permutation``: 0-3 rubric, 10,000 runs per arm [1,000],
   9,999 resamples [999]; ``scipy.stats.permutation_test(vectorized=True)`` of
   Cliff's delta computed from ``scipy.stats.mannwhitneyu``'s U. agentab's time
   includes its BCa interval as well (``ordinal_superiority`` does both).
2. ``ordinal bootstrap BCa``: the same data; ``scipy.stats.bootstrap(method="BCa")``
   of the same statistic, 9,999 resamples [999].
3. ``p95 difference CI``: lognormal cost, 100,000 runs per arm [5,000], 2,000
   resamples [500]; ``scipy.stats.bootstrap(method="percentile")`` of the
   difference of inverse-ECDF p95s; agentab's ``quantile_difference(test=False)``.
4. ``paired tasks``: 500 tasks x 5 seeds per arm [60 x 5], binary outcome,
   9,999 resamples [999]: sign-flip permutation test and task bootstrap
   written plainly with numpy (a loop over resamples, whole tasks indexed),
   against ``rate_difference`` with task ids.
5. ``compare 1M``: 1,000,000 runs per arm [20,000] (no task ids), outcome,
   rubric and tokens, end to end through ``agentab.compare`` with its default
   9,999 resamples; no reference; memory against the input table's size.
6. ``ordinal power simulation`` (``bench_power.py``): the power of the
   ordinal permutation test by simulating 1,000 experiments [200] x 999
   permutations at 500 runs per arm, against ``scipy.stats.permutation_test``
   once per experiment (rank-sum statistic; and the ``mannwhitneyu``
   statistic on a subset, scaled) and batched over experiments with shared
   permutations.

Agreement: for tests, the difference of the two p-values in Monte Carlo
standard errors of that difference; for intervals, the largest difference of
an endpoint as a share of the reference interval's width.

With ``--all``, the loading benchmark (``bench_load.py``: ``load_traces``
against ``pyarrow.json.read_json``) and the scoring benchmark
(``bench_score.py``: vectorised ``score`` against ``score_run`` run by run)
run too, in fresh processes, and add a row each. The calibration check
(``validate_calibration.py``, about 9 minutes) and the example's properties
(``example_properties.py``) are run on their own.

Run: ``python benchmarks/run.py`` (about 4 minutes on 2 cores, the scipy
references taking nearly all of it), ``python benchmarks/run.py --all``, or
``python benchmarks/run.py --quick`` (seconds; run by the test suite).
"""

from __future__ import annotations

import argparse
import gc
import re
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

import agentab
from agentab.errors import StatsWarning
from agentab.stats import ordinal_superiority, quantile_difference, rate_difference

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_power  # noqa: E402  (a sibling script, not a package)


def measure(fn: Callable[[], Any], repeat: int = 3, budget: float = 5.0) -> tuple[Any, float, float]:
    """Result, best wall seconds and traced peak memory (MB) of up to ``repeat`` calls.

    Calls are repeated only while the total stays under ``budget`` seconds, so
    slow references run once; the first call of a fresh array size pays the
    operating system's page faults, which later calls do not.
    """
    best, peak, spent, result = np.inf, 0.0, 0.0, None
    for _ in range(repeat):
        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        peak = max(peak, tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
        best, spent = min(best, elapsed), spent + elapsed
        if spent + elapsed > budget:
            break
    return result, best, peak


def p_agreement(a: float, b: float, n: int) -> str:
    p = min(max((a + b) / 2, 1e-4), 1 - 1e-4)
    se = np.sqrt(2 * p * (1 - p) / n)
    return f"p {a:.4f} vs {b:.4f} ({abs(a - b) / se:.1f} SE)"


def ci_agreement(ours: tuple[float, float], ref: tuple[float, float]) -> str:
    width = ref[1] - ref[0]
    diff = max(abs(ours[0] - ref[0]), abs(ours[1] - ref[1]))
    return f"CI [{ours[0]:.4g}, {ours[1]:.4g}] vs [{ref[0]:.4g}, {ref[1]:.4g}] ({diff / width:.1%} of width)"


def cliffs_delta(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Cliff's delta of y over x from Mann-Whitney's U (midranks for ties), vectorised."""
    u = sps.mannwhitneyu(y, x, axis=axis, method="asymptotic").statistic
    return 2.0 * u / (x.shape[axis] * y.shape[axis]) - 1.0


def case_ordinal(n: int, resamples: int, rows: list[dict]) -> None:
    rng = np.random.default_rng(0)
    x = rng.choice(4, n, p=[0.1, 0.4, 0.35, 0.15]).astype(float)
    y = rng.choice(4, n, p=[0.095, 0.395, 0.355, 0.155]).astype(float)  # a small shift: an informative p-value
    ours, t_ours, m_ours = measure(lambda: ordinal_superiority(x, y, n_resamples=resamples, rng=1))
    ref, t_ref, m_ref = measure(
        lambda: sps.permutation_test((x, y), cliffs_delta, n_resamples=resamples, vectorized=True, rng=2)
    )
    rows.append(row("ordinal permutation", f"{n:,} per arm", resamples, t_ours, t_ref, p_agreement(ours.pvalue, ref.pvalue, resamples), m_ours, m_ref))
    boot, t_boot, m_boot = measure(
        lambda: sps.bootstrap((x, y), cliffs_delta, n_resamples=resamples, method="BCa", vectorized=True, rng=3)
    )
    ci = boot.confidence_interval
    rows.append(row("ordinal bootstrap BCa", f"{n:,} per arm", resamples, t_ours, t_boot, ci_agreement(ours.confidence_interval, (ci.low, ci.high)), m_ours, m_boot))


def case_p95(n: int, resamples: int, rows: list[dict]) -> None:
    rng = np.random.default_rng(4)
    x = rng.lognormal(10, 1.2, n)
    y = rng.lognormal(10, 1.0, n)

    def p95_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.quantile(b, 0.95, axis=axis, method="inverted_cdf") - np.quantile(a, 0.95, axis=axis, method="inverted_cdf")

    ours, t_ours, m_ours = measure(lambda: quantile_difference(x, y, q=0.95, n_resamples=resamples, rng=5, test=False))
    ref, t_ref, m_ref = measure(
        lambda: sps.bootstrap((x, y), p95_difference, n_resamples=resamples, method="percentile", vectorized=True, rng=6, batch=50)
    )
    ci = ref.confidence_interval
    rows.append(row("p95 difference CI", f"{n:,} per arm", resamples, t_ours, t_ref, ci_agreement(ours.confidence_interval, (ci.low, ci.high)), m_ours, m_ref))


def plain_paired(x: np.ndarray, y: np.ndarray, tasks: int, seeds: int, resamples: int, rng: np.random.Generator) -> tuple[float, tuple[float, float]]:
    """Sign-flip permutation p-value and percentile task-bootstrap CI, written plainly.

    Runs are arrays of shape (tasks, seeds) per arm; each resample indexes whole tasks.
    """
    observed = y.mean() - x.mean()
    extreme = 0
    for _ in range(resamples):
        swap = rng.random(tasks) < 0.5
        xs = np.where(swap[:, None], y, x)
        ys = np.where(swap[:, None], x, y)
        extreme += abs(ys.mean() - xs.mean()) >= abs(observed) - 1e-12
    p = (extreme + 1) / (resamples + 1)
    boot = np.empty(resamples)
    for i in range(resamples):
        pick = rng.integers(0, tasks, tasks)
        boot[i] = y[pick].mean() - x[pick].mean()
    return p, (float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5)))


def case_paired(tasks: int, seeds: int, resamples: int, rows: list[dict]) -> None:
    rng = np.random.default_rng(7)
    difficulty = rng.normal(0, 1.5, tasks)
    p_base = 1 / (1 + np.exp(-difficulty))
    p_cand = 1 / (1 + np.exp(-(difficulty + 0.15)))
    x = (rng.random((tasks, seeds)) < p_base[:, None]).astype(float)
    y = (rng.random((tasks, seeds)) < p_cand[:, None]).astype(float)
    ids = np.repeat(np.arange(tasks), seeds)
    ours, t_ours, m_ours = measure(
        lambda: rate_difference(x.ravel(), y.ravel(), x_strata=ids, y_strata=ids, n_resamples=resamples, rng=8)
    )
    (p_ref, ci_ref), t_ref, m_ref = measure(lambda: plain_paired(x, y, tasks, seeds, resamples, np.random.default_rng(9)))
    agreement = p_agreement(ours.pvalue, p_ref, resamples) + "; " + ci_agreement(ours.confidence_interval, ci_ref)
    rows.append(row("paired tasks (test + CI)", f"{tasks} tasks x {seeds} seeds", resamples, t_ours, t_ref, agreement, m_ours, m_ref))


def case_compare(n: int, rows: list[dict]) -> None:
    rng = np.random.default_rng(10)
    table = pd.DataFrame(
        {
            "arm": pd.Categorical(np.repeat(["baseline", "candidate"], n)),
            "outcome": rng.random(2 * n) < np.repeat([0.55, 0.56], n),
            "rubric": rng.choice(4, 2 * n, p=[0.1, 0.4, 0.35, 0.15]).astype(np.int64),
            "tokens": rng.lognormal(10, 1.1, 2 * n).round().astype(np.int64),
        }
    )
    size = table.memory_usage(deep=True).sum() / 2**20
    metrics = {"outcome": "binary", "rubric": "ordinal", "tokens": "cost"}
    result, t_ours, m_ours = measure(lambda: agentab.compare(table, metrics=metrics, seed=0), repeat=1)
    agreement = f"verdict {result.verdict!r}; input table {size:.0f} MB, peak {m_ours / size:.2f}x"
    rows.append(row("compare end to end", f"{n:,} per arm", result.settings["n_resamples"], t_ours, np.nan, agreement, m_ours, np.nan))


def row(case: str, n: str, resamples: int, t_ours: float, t_ref: float, agreement: str, m_ours: float, m_ref: float) -> dict:
    return {
        "case": case,
        "n": n,
        "resamples": resamples,
        "agentab s": t_ours,
        "reference s": t_ref,
        "ratio": t_ref / t_ours if np.isfinite(t_ref) else np.nan,
        "agreement": agreement,
        "agentab MB": m_ours,
        "reference MB": m_ref,
    }


def other_benchmarks(rows: list[dict]) -> None:
    """Run the loading and scoring benchmarks as they are (fresh processes) and add their headline rows."""
    here = Path(__file__).resolve().parent
    load = subprocess.run([sys.executable, str(here / "bench_load.py")], capture_output=True, text=True, check=True).stdout
    table = {line.split()[0]: line.split() for line in load.splitlines() if line.startswith(("agentab ", "pyarrow "))}
    t_ours, t_ref = float(table["agentab"][1]), float(table["pyarrow"][1])
    rss = table["agentab"][7]
    rows.append(row("load_traces vs pyarrow.json", "100,000 runs", 0, t_ours, t_ref, f"validated tables vs raw parse; RSS {rss}x file", np.nan, np.nan))
    score = subprocess.run([sys.executable, str(here / "bench_score.py")], capture_output=True, text=True, check=True).stdout
    fast = float(re.search(r"agentab.score \(vectorised\), best of \d+\s+([\d.]+)", score).group(1))
    slow = float(re.search(r"score_run per run \(oracle\), extrapolated\s+([\d.]+)", score).group(1))
    same = "identical metrics and reasons" if "identical:" in score else "DIFFERENCES (see bench_score.py)"
    rows.append(row("score vs score_run per run", "100,000 runs", 0, fast, slow, same, np.nan, np.nan))


def warm_up() -> None:
    """Import and first-call costs (lazy scipy modules, numpy dispatch) are paid before any timing."""
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, 300).astype(float), rng.integers(0, 4, 300).astype(float)
    ids = np.repeat(np.arange(60), 5)
    ordinal_superiority(x, y, n_resamples=99, rng=0)
    rate_difference(x > 1, y > 1, x_strata=ids, y_strata=ids, n_resamples=99, rng=0)
    quantile_difference(rng.lognormal(size=3000), rng.lognormal(size=3000), n_resamples=99, rng=0)
    sps.permutation_test((x[:20], y[:20]), cliffs_delta, n_resamples=99, vectorized=True, rng=0)
    sps.bootstrap((x[:20], y[:20]), cliffs_delta, n_resamples=99, vectorized=True, rng=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (for CI): seconds instead of minutes")
    parser.add_argument(
        "--all", action="store_true", help="also run bench_load.py and bench_score.py (minutes more) and add their rows"
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", StatsWarning)
    warm_up()
    rows: list[dict] = []
    if args.quick:
        case_ordinal(1_000, 999, rows)
        case_p95(5_000, 500, rows)
        case_paired(60, 5, 999, rows)
        case_compare(20_000, rows)
    else:
        case_ordinal(10_000, 9_999, rows)
        case_p95(100_000, 2_000, rows)
        case_paired(500, 5, 9_999, rows)
        case_compare(1_000_000, rows)
    rows += bench_power.run(args.quick)
    if args.all:
        other_benchmarks(rows)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(
            table.to_string(
                index=False,
                na_rep="-",
                formatters={
                    "agentab s": "{:.3f}".format,
                    "reference s": lambda v: "-" if not np.isfinite(v) else f"{v:.2f}",
                    "ratio": lambda v: "-" if not np.isfinite(v) else f"{v:,.0f}x" if v >= 10 else f"{v:.2f}x",
                    "agentab MB": "{:.0f}".format,
                    "reference MB": lambda v: "-" if not np.isfinite(v) else f"{v:.0f}",
                },
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
