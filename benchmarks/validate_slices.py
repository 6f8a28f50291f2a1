"""Size and power of the slices' interaction test (issue 21, item 3), beside the naive chi-square test.

For every cell (a design, a number of tasks per slice) it simulates ``--reps`` experiments under a
no-interaction null and as many under a planted interaction, and tests each with

- **perm**: ``agentab.stats.interaction.slice_interaction`` (what ``compare_slices`` runs): Cochran's Q
  of the slice effects, studentized with shrunk variances, slice labels permuted across whole tasks
  (``--resamples`` permutations), rejection at p < 0.05;
- **wald**: the naive test, Q with each slice's plain variance against ``chi^2_{S-1}`` (Cochran's Q / a
  Wald test of equal slice effects); a replicate where a slice's variance is 0 (every task of the slice
  shows the same difference) has no Wald p-value and counts as not rejected (the ``wald n/a`` column
  says how often).

The model (binary outcome, 3 slices, 5 seeds per task and arm): slices differ in difficulty (the
baseline's per-task success probability is uniform on 0.05-0.35, 0.25-0.55, 0.45-0.75 by slice), and
the effect varies from task to task (each task's candidate probability is its baseline's plus a
per-task effect uniform on 0-0.25).

- **null**: that per-task effect has mean 0.125 in every slice: a real, common effect with task
  heterogeneity, and slices whose per-task differences have different variances (not exchangeable);
- **planted**: the per-task effect is uniform on mean +- 0.1 with means 0.25, 0.125, 0.0 in the three
  slices (the rate differences differ by 0.125 from slice to slice).

Designs: **paired** (both arms ran the same tasks; per-task differences), **clustered** (each arm
ran its own tasks, ``n`` per slice and arm), **unequal** (paired, slices of ``n``, ``2n`` and ``4n``
tasks; the per-task effect's spread around its mean is +-0.125 in the smallest slice, +-0.06 in the
middle one and 0 in the largest: the slices' tasks are far from exchangeable, the case the
studentization is for). Columns: size and power with their Monte Carlo SE
(``sqrt(p (1 - p) / reps)``).

Run: ``python benchmarks/validate_slices.py [--reps 2000] [--resamples 999] [--seed 0] [--rows means,runs]``
(``means``: the binary rows; ``runs``: the rubric and cost rows, below); seeds derive
from ``--seed``, so the same call prints the same table.

Last run
--------
2026-12-01, ``python benchmarks/validate_slices.py`` on 2 shared cores (the output is
``benchmarks/results/validate_slices.txt``)::

    3 slices x 5 seeds, 2000 reps, 999 permutations, seed 0; rejection at p < 0.05; (SE) Monte Carlo
    design     tasks/slice |       perm size       wald size wald n/a |      perm power      wald power
    paired               8 | 0.052 (0.005)   0.089 (0.006)      0.000 | 0.251 (0.010)   0.353 (0.011)
    paired              20 | 0.044 (0.005)   0.062 (0.005)      0.000 | 0.614 (0.011)   0.662 (0.011)
    paired              50 | 0.043 (0.005)   0.049 (0.005)      0.000 | 0.964 (0.004)   0.966 (0.004)
    clustered            8 | 0.046 (0.005)   0.071 (0.006)      0.000 | 0.233 (0.009)   0.284 (0.010)
    clustered           20 | 0.044 (0.005)   0.052 (0.005)      0.000 | 0.567 (0.011)   0.602 (0.011)
    clustered           50 | 0.051 (0.005)   0.054 (0.005)      0.000 | 0.940 (0.005)   0.943 (0.005)
    unequal              8 | 0.048 (0.005)   0.075 (0.006)      0.000 | 0.470 (0.011)   0.567 (0.011)
    unequal             20 | 0.042 (0.004)   0.054 (0.005)      0.000 | 0.890 (0.007)   0.908 (0.006)
    unequal             50 | 0.042 (0.004)   0.049 (0.005)      0.000 | 1.000 (0.000)   1.000 (0.000)
    (765 s)

The ordinal and quantile rows (``slice_interaction_runs``, what ``compare_slices`` runs for a rubric or a
cost primary; the model is in ``_one_runs``: no slice differs in difficulty, the per-task lift is uniform on
mean +- 0.5 on a latent scale with ICC 0.5, mean 0.5 in every slice under the null and 0, 0.5, 1.0 when
planted; the cost rows compare the p50; they have no naive test, so their "wald" columns are empty),
2026-12-01, ``OPENBLAS_NUM_THREADS=1 python benchmarks/validate_slices.py --rows runs --reps 1000 --resamples 199
--tasks 8 20`` on 2 heavily shared cores (MC SE near 0.05: 0.007)::

    3 slices x 5 seeds, 1000 reps, 199 permutations, seed 0; rejection at p < 0.05; (SE) Monte Carlo
    design             tasks/slice |       perm size       wald size wald n/a |      perm power      wald power
    rubric paired                8 | 0.045 (0.007)   0.087 (0.009)      0.000 | 0.438 (0.016)   0.567 (0.016)
    rubric paired               20 | 0.048 (0.007)   0.058 (0.007)      0.000 | 0.897 (0.010)   0.928 (0.008)
    rubric clustered             8 | 0.049 (0.007)   0.076 (0.008)      0.000 | 0.139 (0.011)   0.215 (0.013)
    rubric clustered            20 | 0.054 (0.007)   0.070 (0.008)      0.000 | 0.359 (0.015)   0.414 (0.016)
    cost p50 paired              8 | 0.061 (0.008)   0.000 (0.000)      1.000 | 0.334 (0.015)   0.000 (0.000)
    cost p50 paired             20 | 0.050 (0.007)   0.000 (0.000)      1.000 | 0.815 (0.012)   0.000 (0.000)
    cost p50 clustered           8 | 0.053 (0.007)   0.000 (0.000)      1.000 | 0.173 (0.012)   0.000 (0.000)
    cost p50 clustered          20 | 0.046 (0.007)   0.000 (0.000)      1.000 | 0.429 (0.016)   0.000 (0.000)
    (686 s)

The permutation test holds its size for Cliff's delta and for the p50 difference, paired and clustered
(0.045-0.061, within 1.5 Monte Carlo SE of 0.05), where the naive chi-square of the deltas is liberal at 8
tasks per slice (0.087 paired, 0.076 clustered). Power against the planted interaction is 0.44 and 0.90 at 8 and
20 tasks per slice for the paired rubric, 0.33 and 0.82 for the paired p50, far less with independent tasks.

The permutation test of the binary rows holds its size in every cell (0.042-0.052, within 2 Monte Carlo SE of 0.05 or
slightly below it: conservative, never liberal). The naive chi-square test is liberal with few tasks
per slice (0.089 at 8 tasks per slice, paired; 0.071 clustered; 0.075 with unequal slices) and reaches
0.05 only at about 50 tasks per slice; its higher power in the small cells is bought with that excess
size. At 8 tasks per slice no test has much power against a 12.5-point interaction (0.25): slices need
tens of tasks each before "the effect differs between slices" can be shown.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentab.stats.interaction import slice_interaction, slice_interaction_runs  # noqa: E402

BASE_RANGES = ((0.05, 0.35), (0.25, 0.55), (0.45, 0.75))
NULL_EFFECT = 0.125
PLANTED = (0.25, 0.125, 0.0)
SEEDS = 5


#: The "unequal" variant: slices of n, 2n and 4n tasks, the smallest with the most task-to-task variation of
#: the effect (half-widths of the per-task effect's uniform), the largest with none.
UNEQUAL_SIZES = (1, 2, 4)
UNEQUAL_SPREAD = (0.125, 0.06, 0.0)


def _task_rates(rng: np.random.Generator, n: int, planted: bool, unequal: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task: baseline and candidate success probabilities and the slice."""
    base, cand, labels = [], [], []
    for s, (lo, hi) in enumerate(BASE_RANGES):
        size = n * UNEQUAL_SIZES[s] if unequal else n
        p = rng.uniform(lo, hi, size)
        mean = PLANTED[s] if planted else NULL_EFFECT
        spread = UNEQUAL_SPREAD[s] if unequal else (0.1 if planted else NULL_EFFECT)
        delta = rng.uniform(mean - spread, mean + spread, size)
        n_s = size
        base.append(p)
        cand.append(np.clip(p + delta, 0.0, 1.0))
        labels.append(np.full(n_s, s))
    return np.concatenate(base), np.concatenate(cand), np.concatenate(labels)


def _one(rng: np.random.Generator, design: str, n: int, planted: bool, resamples: int) -> tuple[float, float]:
    """The permutation and the Wald p-value of one simulated experiment."""
    pb, pc, lab = _task_rates(rng, n, planted, unequal=design == "unequal")
    yb = rng.binomial(SEEDS, pb) / SEEDS
    if design in ("paired", "unequal"):
        yc = rng.binomial(SEEDS, pc) / SEEDS
        res = slice_interaction((yc - yb,), (lab,), paired=True, n_resamples=resamples, rng=rng)
    else:
        pb2, pc2, lab2 = _task_rates(rng, n, planted)  # the candidate's own tasks
        yc = rng.binomial(SEEDS, pc2) / SEEDS
        res = slice_interaction((yb, yc), (lab, lab2), paired=False, n_resamples=resamples, rng=rng)
    return res.pvalue, res.wald_pvalue


#: The ordinal and quantile rows: (metric, design).
RUN_ROWS = (("rubric", "paired"), ("rubric", "clustered"), ("cost p50", "paired"), ("cost p50", "clustered"))
RUN_LIFT = 0.5
RUN_PLANTED = (0.0, 0.5, 1.0)


def _one_runs(rng: np.random.Generator, design: str, n: int, planted: bool, resamples: int) -> tuple[float, float]:
    """One experiment of the ordinal or quantile rows: ``design`` is "rubric paired", "cost p50 clustered", ...

    Latent scale: a task effect N(0, 1) + run noise N(0, 1) (ICC 0.5); the candidate adds a per-task lift
    uniform on mean +- 0.5, the mean 0.5 in every slice (null) or 0, 0.5, 1.0 (planted). A rubric is the
    latent cut at -1, 0, 1 (0-3); a cost is ``exp(7 + latent)``. The slices do not differ in difficulty: on
    the scale of Cliff's delta or of a quantile difference a common lift on the latent scale is a different
    effect in an easier slice (a floor, a multiplicative cost), so that would be an interaction, not a null.
    
    """
    metric, kind = design.rsplit(" ", 1)
    slices = np.repeat(np.arange(3), n)
    task = np.repeat(np.arange(3 * n), SEEDS)
    label = slices[task]
    level = rng.normal(0, 1, 3 * n)
    mean = np.array(RUN_PLANTED if planted else (RUN_LIFT,) * 3)[slices]
    lift = rng.uniform(mean - 0.5, mean + 0.5)
    other = level if kind == "paired" else rng.normal(0, 1, 3 * n)
    x = level[task] + rng.normal(0, 1, len(task))
    y = other[task] + lift[task] + rng.normal(0, 1, len(task))
    if metric == "rubric":
        x, y = np.digitize(x, [-1.0, 0.0, 1.0]), np.digitize(y, [-1.0, 0.0, 1.0])
    else:
        x, y = np.exp(7 + x), np.exp(7 + y)
    tasks = task.astype(str)
    res = slice_interaction_runs(x, y, label, label, kind="ordinal" if metric == "rubric" else "quantile",
                                 x_strata=tasks, y_strata=tasks if kind == "paired" else np.char.add(tasks, "c"),
                                 paired=kind == "paired", q=0.5, n_resamples=resamples, rng=rng)
    return res.pvalue, res.wald_pvalue


def _cell(root: np.random.SeedSequence, design: str, n: int, planted: bool, reps: int, resamples: int
          ) -> tuple[float, float, float]:
    rng = np.random.default_rng(root)
    perm = np.empty(reps)
    wald = np.empty(reps)
    one = _one_runs if " " in design else _one
    for r in range(reps):
        perm[r], wald[r] = one(rng, design, n, planted, resamples)
    return float(np.mean(perm < 0.05)), float(np.mean(np.nan_to_num(wald, nan=1.0) < 0.05)), float(np.mean(np.isnan(wald)))


def _se(p: float, reps: int) -> float:
    return math.sqrt(p * (1 - p) / reps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=999)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", type=int, nargs="+", default=[8, 20, 50], help="tasks per slice")
    parser.add_argument("--rows", default="means,runs", help="means (binary rows), runs (rubric and cost rows)")
    args = parser.parse_args(argv)
    designs = [(i, d) for i, d in enumerate(("paired", "clustered", "unequal")) if "means" in args.rows]
    designs += [(10 + i, f"{m} {k}") for i, (m, k) in enumerate(RUN_ROWS) if "runs" in args.rows]
    start = time.perf_counter()
    print(f"3 slices x {SEEDS} seeds, {args.reps} reps, {args.resamples} permutations, seed {args.seed}; "
          "rejection at p < 0.05; (SE) Monte Carlo")
    print(f"{'design':<18} {'tasks/slice':>11} | {'perm size':>15} {'wald size':>15} {'wald n/a':>8} | "
          f"{'perm power':>15} {'wald power':>15}")
    for d_index, design in designs:
        for n in args.tasks:
            seeds = np.random.SeedSequence(args.seed, spawn_key=(d_index, n)).spawn(2)
            size_p, size_w, na = _cell(seeds[0], design, n, False, args.reps, args.resamples)
            pow_p, pow_w, _ = _cell(seeds[1], design, n, True, args.reps, args.resamples)
            print(f"{design:<18} {n:>11} | {size_p:.3f} ({_se(size_p, args.reps):.3f})   {size_w:.3f} "
                  f"({_se(size_w, args.reps):.3f})   {na:>8.3f} | {pow_p:.3f} ({_se(pow_p, args.reps):.3f})   "
                  f"{pow_w:.3f} ({_se(pow_w, args.reps):.3f})", flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
