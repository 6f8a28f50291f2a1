"""Family-wise error of the many-arms adjustment under a simulated global null (issue 21, correctness).

What it measures
----------------
For 3, 5 and 10 arms (a baseline and 2, 4 or 9 candidates) on 20 and 80 tasks x 5 seeds, with task effects
at ICC 0.5, it simulates ``--reps`` data sets in which every arm has the same distribution (the global null)
and counts the data sets in which any candidate's adjusted primary p-value is below 0.05: the family-wise
error (FWER), with its Monte Carlo standard error ``sqrt(r (1 - r) / reps)``. Each data set is analysed
as ``agentab.compare(..., candidate="all")`` analyses the primary metric: the task means of every arm, the
differences from the baseline, the tie keys of the paired two-arm test, and ``agentab.stats.max_t``
(step-down max-T over shared sign flips; ``n_resamples=--resamples``). ``tests/test_compare_multi.py``
checks that ``compare`` gives exactly these numbers (brute force on 8 Terminal-Bench tasks, and the
two-arm p-values on the same flips). Columns: ``fwer`` (step-down, what compare reports), ``single``
(single-step max-T), ``unadjusted`` (any two-arm p < 0.05: what comparing pair by pair does).

Models
------
- ``binary``: each task's success probability is Beta(0.5, 0.5) (mean 0.5, ICC 1 / (a + b + 1) = 0.5), the
  same for every arm; runs are Bernoulli draws.
- ``continuous``: a task effect N(0, 1) plus run noise N(0, 1) (ICC 0.5), the same for every arm.
- ``partial``: binary, 5 arms, the first candidate better by +2 on the logit scale (a partial null): the
  FWER counts rejections among the three null candidates only (strong control).

Run
---
    python benchmarks/validate_multi.py [--reps N] [--resamples B] [--seed S]

Defaults ``--reps 2000 --resamples 999 --seed 20261201``. Every replication has its own stream
(``SeedSequence(seed, spawn_key=(cell, replication))``).

Last run
--------
2026-12-01, ``python benchmarks/validate_multi.py --reps 5000`` on commit 0df42dd (5,000 replications per
row, 999 sign patterns; the MC SE of a rate near 0.05 is 0.0031; ``s``: seconds on 2 shared cores; also in
``benchmarks/results/validate_multi.txt``; the same rates as on d423555, before the step-down read ``|t|``
directly)::

    model       tasks arms    fwer    (se)  single   unadj      s
    binary         20    3  0.0486 (0.0030)  0.0486  0.0844    4.4
    binary         20    5  0.0466 (0.0030)  0.0466  0.1384    8.5
    binary         20   10  0.0500 (0.0031)  0.0500  0.2396   10.9
    binary         80    3  0.0456 (0.0030)  0.0456  0.0892    9.6
    binary         80    5  0.0560 (0.0033)  0.0560  0.1552   15.0
    binary         80   10  0.0466 (0.0030)  0.0466  0.2632  115.6
    continuous     20    3  0.0496 (0.0031)  0.0496  0.0898   11.6
    continuous     20    5  0.0480 (0.0030)  0.0480  0.1492   18.2
    continuous     20   10  0.0506 (0.0031)  0.0506  0.2674   30.8
    continuous     80    3  0.0502 (0.0031)  0.0502  0.0846   28.7
    continuous     80    5  0.0500 (0.0031)  0.0500  0.1564   35.2
    continuous     80   10  0.0476 (0.0030)  0.0476  0.2688   74.3
    partial        20    5  0.0442 (0.0029)  0.0360  0.1072   11.8
    partial        80    5  0.0532 (0.0032)  0.0402  0.1220   19.1

The ordinal and quantile rows (``agentab.stats.arms.max_t_arms`` on every run, as ``compare`` calls it for a
rubric or a cost primary; models ``rubric``: a latent task effect N(0, 1) plus run noise N(0, 1) (ICC 0.5)
cut at -1, 0, 1 into a 0-3 rubric; ``cost p95``: ``round(exp(7 + latent))`` with the same latent, the p95
compared), 20 tasks x 5 seeds, 2026-12-01 on 2 heavily shared cores (load 17):
``OPENBLAS_NUM_THREADS=1 python benchmarks/validate_multi.py --reps 1000 --resamples 199 --models rubric`` and
``... --models "cost p95"`` (1,000 replications, 199 sign patterns; MC SE near 0.05: 0.0069)::

    model       tasks arms    fwer    (se)  single   unadj      s
    rubric         20    3  0.0440 (0.0065)  0.0440  0.0750   13.7
    rubric         20    5  0.0500 (0.0069)  0.0500  0.1490   24.4
    rubric         20   10  0.0480 (0.0068)  0.0480  0.2470   49.3
    cost p95       20    3  0.0290 (0.0053)  0.0290  0.0510   21.7
    cost p95       20    5  0.0290 (0.0053)  0.0290  0.0940   37.2
    cost p95       20   10  0.0330 (0.0056)  0.0330  0.1370   68.7

The rubric's family-wise error is within 1 MC SE of 0.05 at 3, 5 and 10 arms. The p95's is below it
(0.029-0.033): each two-arm test of a p95 on 20 tasks is itself conservative (its size is about 0.026: the
unadjusted rate for 2 candidates is 0.051), and the max-T keeps the family at or below alpha, never above.
Without adjustment the rubric reaches 0.25 at 10 arms. (The 80-task rubric cells, in ``RUN_MODELS`` before,
were left out of this run for time; ``RUN_MODELS`` lists the cells the script runs.)

Every family-wise error of the rate and mean rows is within 2 Monte Carlo SE of 0.05 (the largest, 0.0560 (0.0033) for binary, 80 tasks,
5 arms, is 1.8 SE above; the 14 rows average 0.0491), at 20 tasks as at 80, with 10 arms as with 3; under
the global null the step-down and the single-step reject a first hypothesis on the same data sets, so their
FWER is the same. The partial null (one candidate truly better) keeps the error on the three null
candidates at 0.044 and 0.053. Comparing pair by pair without adjustment ("unadj") reaches 0.24-0.27 at
10 arms.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from agentab import stats
from agentab.stats.arms import max_t_arms

TASKS = (20, 80)
ARMS = (3, 5, 10)
#: The models of the ordinal and quantile rows, and their task counts (a quantile's permutations cost more).
RUN_MODELS = {"rubric": (20,), "cost p95": (20,)}
SEEDS = 5
ALPHA = 0.05


def _arm_means(rng: np.random.Generator, model: str, n_tasks: int, n_arms: int, lift: float) -> np.ndarray:
    """Per arm and task, the mean over the seeds (arms x tasks)."""
    if model == "continuous":
        task = rng.normal(0, 1, n_tasks)
        return task[None, :] + rng.normal(0, 1, (n_arms, n_tasks, SEEDS)).mean(axis=2)
    p = rng.beta(0.5, 0.5, n_tasks)
    logit = np.log(np.clip(p, 1e-9, 1 - 1e-9) / np.clip(1 - p, 1e-9, 1))
    shift = np.zeros((n_arms, 1))
    shift[1] = lift
    probs = 1 / (1 + np.exp(-(logit[None, :] + shift)))
    return (rng.random((n_arms, n_tasks, SEEDS)) < probs[:, :, None]).mean(axis=2)


def _one(rng: np.random.Generator, model: str, n_tasks: int, n_arms: int, lift: float, resamples: int) -> np.ndarray:
    """Adjusted (step-down, single-step) and unadjusted p-values of the candidates of one data set."""
    means = _arm_means(rng, model, n_tasks, n_arms, lift)
    base, cands = means[0], means[1:]
    diffs = cands - base
    scores = (cands + base) / 2
    scales = np.maximum(np.abs(diffs).max(axis=1), 1e-4 * np.abs(means).max())
    res = stats.max_t(diffs, scores, n_resamples=resamples, rng=rng, scales=scales)
    return np.vstack([res.adjusted, res.single_step, res.pvalue])


def _one_runs(rng: np.random.Generator, model: str, n_tasks: int, n_arms: int, resamples: int) -> np.ndarray:
    """The ordinal and quantile rows: every run of every arm, and :func:`agentab.stats.arms.max_t_arms` as
    ``agentab.compare(..., candidate="all")`` calls it (the candidates against the baseline, one set of flips)."""
    latent = rng.normal(0, 1, n_tasks)[None, :, None] + rng.normal(0, 1, (n_arms, n_tasks, SEEDS))  # ICC 0.5
    if model == "rubric":
        values = np.digitize(latent, [-1.0, 0.0, 1.0]).astype(float)  # a 0-3 rubric
    else:
        values = np.round(np.exp(7 + latent))  # a cost, log-normal with task effects
    tasks = np.repeat(np.arange(n_tasks), SEEDS).astype(str)
    pairs = [(0, j) for j in range(1, n_arms)]
    res = max_t_arms(list(values.reshape(n_arms, -1)), [tasks] * n_arms, pairs, [list(range(n_arms - 1))],
                     kind="ordinal" if model == "rubric" else "quantile", q=0.95, n_resamples=resamples, rng=rng)
    fam = res.families[0]
    return np.vstack([fam.adjusted, fam.single_step, fam.pvalue])


def _cells(models: tuple[str, ...]) -> list[tuple[int, tuple[str, int, int, float]]]:
    """Every cell, numbered as in the full run (so a subset draws the same streams)."""
    cells = [("binary", t, a, 0.0) for t in TASKS for a in ARMS]
    cells += [("continuous", t, a, 0.0) for t in TASKS for a in ARMS]
    cells += [("partial", t, 5, 2.0) for t in TASKS]
    cells += [(m, t, a, 0.0) for m, counts in RUN_MODELS.items() for t in counts for a in ARMS]
    return [(c, cell) for c, cell in enumerate(cells) if cell[0] in models]


def run(reps: int, resamples: int, seed: int, models: tuple[str, ...] = ("binary", "continuous", "partial",
                                                                          *RUN_MODELS)) -> list[dict]:
    """Every cell's family-wise error rates with their Monte Carlo standard errors."""
    rows = []
    for c, (model, n_tasks, n_arms, lift) in _cells(models):
        start = time.perf_counter()
        hits = np.zeros(3)
        for r in range(reps):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(c, r)))
            if model in RUN_MODELS:
                p = _one_runs(rng, model, n_tasks, n_arms, resamples)
            else:
                p = _one(rng, "binary" if model == "partial" else model, n_tasks, n_arms, lift, resamples)
            if model == "partial":
                p = p[:, 1:]  # the null candidates only
            hits += (p < ALPHA).any(axis=1)
        rate = hits / reps
        se = np.sqrt(rate * (1 - rate) / reps)
        rows.append({"model": model, "tasks": n_tasks, "arms": n_arms, "fwer": rate[0], "se": se[0], "single": rate[1],
                     "unadjusted": rate[2], "seconds": time.perf_counter() - start})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--models", default="binary,continuous,partial," + ",".join(RUN_MODELS),
                        help="comma-separated rows to run (default: all)")
    args = parser.parse_args(argv)
    models = tuple(m.strip() for m in args.models.split(","))
    print(f"{'model':<11} {'tasks':>5} {'arms':>4} {'fwer':>7} {'(se)':>7} {'single':>7} {'unadj':>7} {'s':>6}")
    for row in run(args.reps, args.resamples, args.seed, models):
        print(f"{row['model']:<11} {row['tasks']:>5} {row['arms']:>4} {row['fwer']:>7.4f} ({row['se']:.4f}) "
              f"{row['single']:>7.4f} {row['unadjusted']:>7.4f} {row['seconds']:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
