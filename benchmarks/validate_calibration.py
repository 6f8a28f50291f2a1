"""Simulation-based calibration of ``agentab.stats`` (type I error and CI coverage).

What it checks
--------------
For each metric kind -- binary (``rate_difference``), ordinal 0-3
(``ordinal_superiority``, Cliff's delta), continuous (``mean_difference``),
and long-tailed cost at p50 and p95 (``quantile_difference``, one call with
``q=(0.5, 0.95)``) -- and for three designs:

- **paired**: the same 30 tasks in both arms, 5 seeds per task and arm;
- **clustered**: 30 different tasks per arm, 5 seeds each (disjoint task ids);
- **independent**: 150 runs per arm without task ids, every run drawn from
  the task population (a fresh task per run, so the runs really are i.i.d.),

it simulates data from a task-level model with strong task effects
(intra-task correlation about 0.5 on the observed scale; the values measured
on 20,000 simulated tasks are printed above the table) and reports

- the **rejection rate** of the two-sided permutation test at alpha = 0.05
  (``p <= 0.05``) under the null, with its Monte Carlo standard error. Null:
  the candidate arm comes from the same task-level model as the baseline; in
  the paired design each task's candidate distribution equals its baseline
  distribution (same task parameter, fresh seeds);
- the **coverage** of the 95% interval (the inverted test for rate / mean / Cliff's delta,
  percentile for quantiles) of the true task-averaged effect under a non-null
  alternative, with its Monte Carlo standard error;
- the same two numbers for the **naive** analysis of the same data: the same
  function called *without* task ids, i.e. the 150 runs of each arm treated
  as independent (runs permuted / resampled). With clustered tasks it should
  over-reject and under-cover (design effect 1 + (5 - 1) x 0.5 = 3); with
  paired tasks it ignores the pairing: the task effects, which cancel in the
  per-task differences, inflate its variance, so it is conservative
  (rejects far less than 5%) and over-covers. For the independent design the
  task-aware and the naive analysis coincide, so only one row is shown.

Targets: task-aware rejection rates within Monte Carlo error of 0.05 and
coverage between 93% and 97%. The ``flag`` column marks a rejection rate
whose exact binomial test against 0.05 gives p < 0.01 (``HIGH`` / ``low``)
and a coverage outside [0.93, 0.97] (``UNDER`` / ``over``). A ``*`` says the
deviation is what the ideal procedure would show too (binomial test against
it p >= 0.01): for the binary paired test, the size of the *exact* sign-flip
test on the same model (computed by convolution; the statistic is discrete);
for bootstrap coverage in the paired and clustered designs, the coverage of an
ideal bootstrap interval over 30 tasks (0.936). Flags on naive rows are in
parentheses: they are expected and show why the task-aware designs exist.

Data-generating models (task parameter theta_t, run value given theta_t;
alternative: candidate parameter theta'_t, drawn per task so the effect
varies across tasks)
- binary: p_t ~ Beta(0.5, 0.5) (ICC = 1 / (a + b + 1) = 0.5); success ~
  Bernoulli(p_t). Alternative: p'_t = p_t + 0.3 (1 - p_t). Truth: E[p' - p]
  = 0.3 x 0.5 = 0.15.
- ordinal: latent mu_t ~ N(0, 1.2^2), run level = cut(mu_t + N(0, 1)) at
  (-0.5, 0.4, 1.2) into 0-3. Alternative: mu'_t = mu_t + N(0.4, 0.3^2).
  The statistic is Cliff's delta between the arms' task-averaged level
  distributions, so the truth is Cliff's delta between the two population
  mixtures, latent N(0, 1.2^2 + 1) against N(0.4, 1.2^2 + 0.3^2 + 1):
  closed form from the normal CDF.
- continuous: mu_t ~ N(0, 1), run = mu_t + e, e a standardised chi2(8)
  (skewness 1). Alternative: mu'_t = mu_t + N(0.3, 0.3^2). Truth: 0.3.
- cost: log cost = log(0.05) + mu_t + N(0, 0.6^2), mu_t ~ N(0, 0.6^2).
  Alternative: mu'_t = mu_t + N(-0.25, 0.15^2) (about 22% cheaper, with
  task-to-task variation). Each arm's task-averaged mixture is lognormal,
  log-mean log(0.05) (+ -0.25), log-sd sqrt(0.72) (candidate sqrt(0.72 +
  0.0225)), so the truth, the difference of the population p50 / p95 of the
  two mixtures, is closed form.
In the paired design the truth is the expectation over the task population
of the per-task difference (binary, continuous) or the corresponding
functional of the task-averaged mixtures (ordinal, quantiles); in the
clustered and independent designs it is the same number, since every design
draws tasks from the same population. The closed forms are cross-checked
against a Monte Carlo of 4 million runs, printed as "truth check".

Run
---
    python benchmarks/validate_calibration.py [--sims N] [--seed S] [--resamples B] [--processes P]

Defaults: ``--sims 2500 --seed 20261130 --resamples 999 --processes 2``.
Every simulation has its own random streams (numpy SeedSequence keyed by
seed, kind, design and simulation index), so the table does not depend on
the number of processes or on chunking. ``StatsWarning``s (e.g. "p95 rests
on about 8 runs beyond it") are silenced. The ``seconds`` column is the
CPU-side wall time spent in the analyses of that row (null and alternative
data), summed over worker processes.

Last run
--------
2026-12-01, ``python benchmarks/validate_calibration.py`` (the defaults), 2 cores (issue 17's
studentized tests and inverted intervals); 4.6 min wall time::

    agentab.stats calibration: 2500 simulations per row, 999 resamples per test, seed 20261130, 2 processes
    agentab: commit e029f1a; sha256 of agentab/stats/*.py 23f6abfbf323
    designs: paired = 30 shared tasks x 5 seeds; clustered = 30 + 30 different tasks x 5 seeds; independent = 150 + 150 runs without task ids
      binary      true effect under the alternative +0.1500 (truth check, 4e6-run Monte Carlo: +0.1501); ICC 0.50
      ordinal     true effect under the alternative +0.1286 (truth check, 4e6-run Monte Carlo: +0.1288); ICC 0.51
      continuous  true effect under the alternative +0.3000 (truth check, 4e6-run Monte Carlo: +0.3014); ICC 0.51
      cost p50    true effect under the alternative -0.0111 (truth check, 4e6-run Monte Carlo: -0.0110); ICC 0.41 (0.50 on the log scale)
      cost p95    true effect under the alternative -0.0412 (truth check, 4e6-run Monte Carlo: -0.0416); ICC 0.41 (0.50 on the log scale)
      binary paired: the exact sign-flip test (all 2^30 flips) rejects 0.032 of null data sets at alpha = 0.05 (discrete statistic; convolution over 5,000 simulated data sets)
      with 30 tasks even an ideal bootstrap interval of a mean covers only about 0.936 (normal quantiles, plug-in SE: P(|t_29| <= 1.96 sqrt(29/30)))

    kind        design      analysis    sims  rejection (a=0.05)   coverage (95% CI)  seconds  flag
    -----------------------------------------------------------------------------------------------
    binary      paired      task-aware  2500      0.046 ± 0.004        0.953 ± 0.004          6  ok
    binary      paired      naive       2500      0.006 ± 0.002        0.976 ± 0.003          3  (low,over)
    binary      clustered   task-aware  2500      0.046 ± 0.004        0.958 ± 0.004          8  ok
    binary      clustered   naive       2500      0.253 ± 0.009        0.786 ± 0.008          3  (HIGH,UNDER)
    binary      independent no ids      2500      0.045 ± 0.004        0.952 ± 0.004          2  ok
    ordinal     paired      task-aware  2500      0.043 ± 0.004        0.958 ± 0.004          7  ok
    ordinal     paired      naive       2500      0.008 ± 0.002        0.988 ± 0.002          6  (low,over)
    ordinal     clustered   task-aware  2500      0.050 ± 0.004        0.960 ± 0.004         10  ok
    ordinal     clustered   naive       2500      0.243 ± 0.009        0.748 ± 0.009          6  (HIGH,UNDER)
    ordinal     independent no ids      2500      0.051 ± 0.004        0.954 ± 0.004          5  ok
    continuous  paired      task-aware  2500      0.046 ± 0.004        0.950 ± 0.004          8  ok
    continuous  paired      naive       2500      0.008 ± 0.002        0.989 ± 0.002         31  (low,over)
    continuous  clustered   task-aware  2500      0.050 ± 0.004        0.955 ± 0.004         11  ok
    continuous  clustered   naive       2500      0.261 ± 0.009        0.739 ± 0.009         32  (HIGH,UNDER)
    continuous  independent no ids      2500      0.052 ± 0.004        0.948 ± 0.004         31  ok
    cost p50    paired      task-aware  2500      0.050 ± 0.004        0.966 ± 0.004         26  ok
    cost p95    paired      task-aware  2500      0.047 ± 0.004        0.963 ± 0.004         26  ok
    cost p50    paired      naive       2500      0.018 ± 0.003        0.978 ± 0.003         45  (low,over)
    cost p95    paired      naive       2500      0.028 ± 0.003        0.977 ± 0.003         45  (low,over)
    cost p50    clustered   task-aware  2500      0.054 ± 0.005        0.948 ± 0.004         27  ok
    cost p95    clustered   task-aware  2500      0.048 ± 0.004        0.946 ± 0.005         27  ok
    cost p50    clustered   naive       2500      0.226 ± 0.008        0.822 ± 0.008         44  (HIGH,UNDER)
    cost p95    clustered   naive       2500      0.167 ± 0.007        0.890 ± 0.006         44  (HIGH,UNDER)
    cost p50    independent no ids      2500      0.051 ± 0.004        0.965 ± 0.004         45  ok
    cost p95    independent no ids      2500      0.045 ± 0.004        0.967 ± 0.004         45  ok

    rejection: share of null simulations with p <= 0.05 (two-sided); coverage: share of alternative
    simulations whose 95% interval holds the true effect; ± is the Monte Carlo standard error.
    naive = the same function without task ids (runs treated as independent); cost p50 and p95
    share one quantile_difference call, so their seconds are half of it each. flag: rejection
    rate vs 0.05 (binomial test p < 0.01) and coverage outside [0.93, 0.97]; * = explained by the
    ideal procedure (exact test of the discrete binary statistic; ideal bootstrap over 30 tasks).
    finished 2026-12-01 in 4.6 min wall time

Reading: every task-aware test holds its level within Monte Carlo error (0.043-0.054), the binary
paired one included (0.046: the tie-broken sign-flip test; the plain exact sign-flip test rejects
0.032 on these data, whose task differences take few values), and the intervals of rates, means and
Cliff's delta, which invert the tests, cover 0.948-0.960 (the BCa intervals of before covered
0.933-0.940 in the paired design, as any bootstrap over 30 tasks would). Quantile intervals
(attained-value percentile bounds) are slightly conservative (95-97%). Naive analyses over-reject
clustered data (17-26% instead of 5%) and are very conservative on paired data (0.6-3%), where
ignoring the pairing leaves the task effects in the noise.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
import warnings
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
from scipy import stats as sps

from agentab.errors import StatsWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import source_state  # noqa: E402  (a sibling module of the scripts)
from agentab.stats import (
    mean_difference,
    ordinal_superiority,
    quantile_difference,
    rate_difference,
)

ALPHA = 0.05
LEVEL = 0.95
N_TASKS = 30
SEEDS = 5
DESIGNS = ("paired", "clustered", "independent")
QS = (0.5, 0.95)


# --------------------------------------------------------------------------- #
# Data-generating models
# --------------------------------------------------------------------------- #
class Binary:
    name = "binary"
    a = b = 0.5
    lift = 0.3

    def tasks(self, n, rng):
        return rng.beta(self.a, self.b, n)

    def shift(self, p, rng):
        return p + self.lift * (1.0 - p)

    def runs(self, p, rng):
        return (rng.random(len(p)) < p).astype(float)

    def truth(self):
        return self.lift * (1.0 - self.a / (self.a + self.b))

    def analyse(self, x, y, xs, ys, B, seed):
        r = rate_difference(x, y, x_strata=xs, y_strata=ys, n_resamples=B, rng=seed)
        return [r.pvalue], [r.confidence_interval.low], [r.confidence_interval.high]

    def mc_truth(self, n, rng):
        p = self.tasks(n, rng)
        return self.runs(self.shift(p, rng), rng).mean() - self.runs(p, rng).mean()


class Ordinal:
    name = "ordinal"
    sd_task = 1.2
    cuts = np.array([-0.5, 0.4, 1.2])
    shift_mean, shift_sd = 0.4, 0.3

    def tasks(self, n, rng):
        return rng.normal(0.0, self.sd_task, n)

    def shift(self, mu, rng):
        return mu + rng.normal(self.shift_mean, self.shift_sd, len(mu))

    def runs(self, mu, rng):
        return np.digitize(mu + rng.normal(size=len(mu)), self.cuts).astype(float)

    @staticmethod
    def delta(p, r):
        """Cliff's delta P(Y > X) - P(Y < X) for level probabilities p (X) and r (Y)."""
        below = np.cumsum(p) - p
        return float(np.sum(r * (2 * below + p)) - 1.0)

    def _levels(self, mean, sd):
        cdf = np.r_[0.0, sps.norm.cdf(self.cuts, mean, sd), 1.0]
        return np.diff(cdf)

    def truth(self):
        p = self._levels(0.0, np.sqrt(self.sd_task**2 + 1))
        r = self._levels(self.shift_mean, np.sqrt(self.sd_task**2 + self.shift_sd**2 + 1))
        return self.delta(p, r)

    def analyse(self, x, y, xs, ys, B, seed):
        r = ordinal_superiority(x, y, x_strata=xs, y_strata=ys, n_resamples=B, rng=seed)
        return [r.pvalue], [r.confidence_interval.low], [r.confidence_interval.high]

    def mc_truth(self, n, rng):
        mu = self.tasks(n, rng)
        x = self.runs(mu, rng).astype(int)
        y = self.runs(self.shift(mu, rng), rng).astype(int)
        return self.delta(np.bincount(x, minlength=4) / n, np.bincount(y, minlength=4) / n)


class Continuous:
    name = "continuous"
    df = 8
    shift_mean, shift_sd = 0.3, 0.3

    def tasks(self, n, rng):
        return rng.normal(0.0, 1.0, n)

    def shift(self, mu, rng):
        return mu + rng.normal(self.shift_mean, self.shift_sd, len(mu))

    def runs(self, mu, rng):
        return mu + (rng.chisquare(self.df, len(mu)) - self.df) / np.sqrt(2 * self.df)

    def truth(self):
        return self.shift_mean

    def analyse(self, x, y, xs, ys, B, seed):
        r = mean_difference(x, y, x_strata=xs, y_strata=ys, n_resamples=B, rng=seed)
        return [r.pvalue], [r.confidence_interval.low], [r.confidence_interval.high]

    def mc_truth(self, n, rng):
        mu = self.tasks(n, rng)
        return self.runs(self.shift(mu, rng), rng).mean() - self.runs(mu, rng).mean()


class Cost:
    name = "cost"
    log_median = np.log(0.05)
    sd_task = sd_seed = 0.6
    shift_mean, shift_sd = -0.25, 0.15

    def tasks(self, n, rng):
        return rng.normal(0.0, self.sd_task, n)

    def shift(self, mu, rng):
        return mu + rng.normal(self.shift_mean, self.shift_sd, len(mu))

    def runs(self, mu, rng):
        return np.exp(self.log_median + mu + rng.normal(0.0, self.sd_seed, len(mu)))

    def truth(self):
        z = sps.norm.ppf(QS)
        sd_b = np.hypot(self.sd_task, self.sd_seed)
        sd_c = np.sqrt(sd_b**2 + self.shift_sd**2)
        return np.exp(self.log_median + self.shift_mean + sd_c * z) - np.exp(self.log_median + sd_b * z)

    def analyse(self, x, y, xs, ys, B, seed):
        r = quantile_difference(x, y, q=QS, x_strata=xs, y_strata=ys, n_resamples=B, rng=seed)
        return list(r.pvalue), list(r.confidence_interval.low), list(r.confidence_interval.high)

    def mc_truth(self, n, rng):
        mu = self.tasks(n, rng)
        x = self.runs(mu, rng)
        y = self.runs(self.shift(mu, rng), rng)
        return np.quantile(y, QS, method="inverted_cdf") - np.quantile(x, QS, method="inverted_cdf")


MODELS = (Binary(), Ordinal(), Continuous(), Cost())


def row_kinds(model) -> list[str]:
    return ["cost p50", "cost p95"] if model.name == "cost" else [model.name]


def simulate(model, design: str, alternative: bool, rng: np.random.Generator):
    """Baseline and candidate values and task ids (None for independent runs)."""
    if design == "independent":
        n = N_TASKS * SEEDS
        base = model.tasks(n, rng)
        cand = model.tasks(n, rng)
        if alternative:
            cand = model.shift(cand, rng)
        return model.runs(base, rng), model.runs(cand, rng), None, None
    base = model.tasks(N_TASKS, rng)
    if design == "paired":
        cand = model.shift(base, rng) if alternative else base
        ids_b = ids_c = np.repeat(np.arange(N_TASKS), SEEDS)
    else:
        cand = model.tasks(N_TASKS, rng)
        if alternative:
            cand = model.shift(cand, rng)
        ids_b = np.repeat(np.arange(N_TASKS), SEEDS)
        ids_c = np.repeat(np.arange(N_TASKS, 2 * N_TASKS), SEEDS)
    x = model.runs(np.repeat(base, SEEDS), rng)
    y = model.runs(np.repeat(cand, SEEDS), rng)
    return x, y, ids_b, ids_c


def exact_sign_flip_size(model, rng, n_datasets: int = 5000) -> float:
    """Mean size of the *exact* paired sign-flip test of a binary metric under the null.

    Conditional on the absolute per-task differences of success counts, the
    signs are fair coins under the paired null, so the null distribution of
    their sum is a convolution over tasks (integers, exact). The size is the
    probability of the rejection region (two-sided p-value doubling the
    smaller tail, as agentab does). It shows how much of a rejection rate
    below 5% is the discreteness of the statistic rather than the software.
    """
    total = 0.0
    for _ in range(n_datasets):
        p = model.tasks(N_TASKS, rng)
        d = np.abs(rng.binomial(SEEDS, p) - rng.binomial(SEEDS, p))
        offset = int(d.sum())
        pmf = np.zeros(2 * offset + 1)
        pmf[offset] = 1.0
        for step in d[d > 0]:
            pmf = 0.5 * (np.roll(pmf, step) + np.roll(pmf, -step))
        pvalue = np.minimum(1.0, 2.0 * np.minimum(np.cumsum(pmf[::-1])[::-1], np.cumsum(pmf)))
        total += pmf[pvalue <= ALPHA].sum()
    return total / n_datasets


def icc(model, rng, transform=None, n_tasks: int = 20_000) -> float:
    """One-way ANOVA intra-task correlation of the (transformed) values of the baseline arm."""
    v = model.runs(np.repeat(model.tasks(n_tasks, rng), SEEDS), rng).reshape(n_tasks, SEEDS)
    if transform is not None:
        v = transform(v)
    msb = SEEDS * v.mean(axis=1).var(ddof=1)
    msw = v.var(axis=1, ddof=1).mean()
    return float((msb - msw) / (msb + (SEEDS - 1) * msw))


# --------------------------------------------------------------------------- #
# Simulation
# --------------------------------------------------------------------------- #
@dataclass
class Job:
    model_index: int
    design: str
    start: int
    stop: int
    seed: int
    n_resamples: int


def run_job(job: Job) -> tuple[Job, dict]:
    """Simulations ``start..stop-1`` of one (kind, design); counts per analysis."""
    warnings.simplefilter("ignore", StatsWarning)
    model = MODELS[job.model_index]
    truth = np.atleast_1d(model.truth())
    analyses = ("task-aware",) if job.design == "independent" else ("task-aware", "naive")
    m = len(truth)
    out = {a: {"reject": np.zeros(m, int), "cover": np.zeros(m, int), "seconds": 0.0} for a in analyses}
    d_index = DESIGNS.index(job.design)
    for i in range(job.start, job.stop):
        ss = np.random.SeedSequence(job.seed, spawn_key=(job.model_index, d_index, i))
        data_null, data_alt, s1, s2, s3, s4 = (np.random.default_rng(s) for s in ss.spawn(6))
        null = simulate(model, job.design, False, data_null)
        alt = simulate(model, job.design, True, data_alt)
        for a, (sn, sa) in zip(analyses, ((s1, s2), (s3, s4))):
            t0 = time.perf_counter()
            if a == "task-aware":
                p, _, _ = model.analyse(*null, job.n_resamples, sn)
                _, lo, hi = model.analyse(*alt, job.n_resamples, sa)
            else:
                p, _, _ = model.analyse(null[0], null[1], None, None, job.n_resamples, sn)
                _, lo, hi = model.analyse(alt[0], alt[1], None, None, job.n_resamples, sa)
            out[a]["seconds"] += time.perf_counter() - t0
            out[a]["reject"] += np.asarray(p) <= ALPHA
            out[a]["cover"] += (np.asarray(lo) <= truth) & (truth <= np.asarray(hi))
    return job, out


def flag(rate: float, cover: float, sims: int, naive: bool, exact_size: float | None = None,
         ideal_cover: float | None = None) -> str:
    """``ok``, or what is off: a rejection rate whose binomial test against ALPHA has p < 0.01, a
    coverage outside [0.93, 0.97]. ``*`` marks a deviation that the rate or coverage of the ideal
    procedure (the exact test of a discrete statistic, an ideal bootstrap with few tasks) explains
    (binomial test against it p >= 0.01). Naive rows are in parentheses: they are expected to be off."""
    marks = []
    k = round(rate * sims)
    if sps.binomtest(k, sims, ALPHA).pvalue < 0.01:
        explained = rate < ALPHA and exact_size is not None and sps.binomtest(k, sims, exact_size).pvalue >= 0.01
        marks.append(("HIGH" if rate > ALPHA else "low") + ("*" if explained else ""))
    if cover < 0.93 or cover > 0.97:
        explained = (cover < 0.93 and ideal_cover is not None
                     and sps.binomtest(round(cover * sims), sims, ideal_cover).pvalue >= 0.01)
        marks.append(("UNDER" if cover < 0.93 else "over") + ("*" if explained else ""))
    text = ",".join(marks) or "ok"
    return f"({text})" if naive and marks else text


def package_state() -> str:
    """The commit of the repository and a digest of the agentab.stats sources actually imported."""
    import agentab.stats

    folder = Path(agentab.stats.__file__).resolve().parent
    return source_state(sorted(folder.glob("*.py")), "agentab/stats/*.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2500, help="simulations per kind and design (default 2500)")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--resamples", type=int, default=999, help="permutations and bootstrap resamples per test")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=25, help="simulations per job")
    args = parser.parse_args(argv)

    t_start = time.perf_counter()
    print(f"agentab.stats calibration: {args.sims} simulations per row, {args.resamples} resamples per test, "
          f"seed {args.seed}, {args.processes} processes")
    print(f"agentab: {package_state()}")
    print(f"designs: paired = {N_TASKS} shared tasks x {SEEDS} seeds; clustered = {N_TASKS} + {N_TASKS} different "
          f"tasks x {SEEDS} seeds; independent = {N_TASKS * SEEDS} + {N_TASKS * SEEDS} runs without task ids")
    check_rng = np.random.default_rng(args.seed)
    for model in MODELS:
        truth = np.atleast_1d(model.truth())
        mc = np.atleast_1d(model.mc_truth(4_000_000, check_rng))
        extra = f"ICC {icc(model, check_rng):.2f}"
        if model.name == "cost":
            extra += f" ({icc(model, check_rng, np.log):.2f} on the log scale)"
        for kind, t, c in zip(row_kinds(model), truth, mc):
            print(f"  {kind:<11} true effect under the alternative {t:+.4f} (truth check, 4e6-run Monte Carlo: "
                  f"{c:+.4f}); {extra}")

    exact_size = exact_sign_flip_size(MODELS[0], check_rng)
    print(f"  binary paired: the exact sign-flip test (all 2^{N_TASKS} flips) rejects "
          f"{exact_size:.3f} of null data sets at alpha = {ALPHA} "
          "(discrete statistic; convolution over 5,000 simulated data sets)")
    n = N_TASKS
    ideal = 2 * sps.t.cdf(sps.norm.ppf(0.5 + LEVEL / 2) * np.sqrt((n - 1) / n), n - 1) - 1
    print(f"  with {n} tasks even an ideal bootstrap interval of a mean covers only about {ideal:.3f} "
          f"(normal quantiles, plug-in SE: P(|t_{n - 1}| <= 1.96 sqrt({n - 1}/{n})))")

    jobs = [
        Job(mi, design, start, min(start + args.chunk, args.sims), args.seed, args.resamples)
        for start in range(0, args.sims, args.chunk)
        for mi in range(len(MODELS))
        for design in DESIGNS
    ]
    totals: dict = {}
    ctx = get_context("fork") if sys.platform != "win32" else get_context()
    done = 0
    if args.processes > 1:
        with ctx.Pool(args.processes) as pool:
            results = pool.imap_unordered(run_job, jobs)
            for job, out in results:
                merge(totals, job, out)
                done += 1
                progress(done, len(jobs), t_start)
    else:
        for job in jobs:
            merge(totals, *run_job(job))
            done += 1
            progress(done, len(jobs), t_start)
    if sys.stderr.isatty():
        print(file=sys.stderr)

    header = f"{'kind':<11} {'design':<11} {'analysis':<10} {'sims':>5}  {'rejection (a=0.05)':>18}  " \
             f"{'coverage (95% CI)':>18}  {'seconds':>7}  flag"
    print()
    print(header)
    print("-" * len(header))
    for mi, model in enumerate(MODELS):
        for design in DESIGNS:
            for analysis in ("task-aware", "naive"):
                key = (mi, design, analysis)
                if key not in totals:
                    continue
                t = totals[key]
                n = args.sims
                for j, kind in enumerate(row_kinds(model)):
                    r = t["reject"][j] / n
                    c = t["cover"][j] / n
                    se_r = np.sqrt(r * (1 - r) / n)
                    se_c = np.sqrt(c * (1 - c) / n)
                    label = "no ids" if design == "independent" else analysis
                    secs = t["seconds"] / len(row_kinds(model))
                    aware = analysis == "task-aware"
                    mark = flag(
                        r, c, n, not aware,
                        exact_size=exact_size if aware and model.name == "binary" and design == "paired" else None,
                        ideal_cover=ideal if aware and model.name != "cost" and design != "independent" else None,
                    )
                    print(f"{kind:<11} {design:<11} {label:<10} {n:>5}  {r:>9.3f} ± {se_r:.3f}    "
                          f"{c:>9.3f} ± {se_c:.3f}    {secs:>7.0f}  {mark}")
    elapsed = time.perf_counter() - t_start
    print()
    print("rejection: share of null simulations with p <= 0.05 (two-sided); coverage: share of alternative")
    print("simulations whose 95% interval holds the true effect; ± is the Monte Carlo standard error.")
    print("naive = the same function without task ids (runs treated as independent); cost p50 and p95")
    print("share one quantile_difference call, so their seconds are half of it each. flag: rejection")
    print("rate vs 0.05 (binomial test p < 0.01) and coverage outside [0.93, 0.97]; * = explained by the")
    print("ideal procedure (exact test of the discrete binary statistic; ideal bootstrap over 30 tasks).")
    print(f"finished {datetime.date.today().isoformat()} in {elapsed / 60:.1f} min wall time")
    return 0


def merge(totals: dict, job: Job, out: dict) -> None:
    for analysis, counts in out.items():
        key = (job.model_index, job.design, analysis)
        if key not in totals:
            totals[key] = {"reject": counts["reject"].copy(), "cover": counts["cover"].copy(),
                           "seconds": counts["seconds"]}
        else:
            totals[key]["reject"] += counts["reject"]
            totals[key]["cover"] += counts["cover"]
            totals[key]["seconds"] += counts["seconds"]


def progress(done: int, total: int, t_start: float) -> None:
    if not sys.stderr.isatty():
        return
    elapsed = time.perf_counter() - t_start
    eta = elapsed / done * (total - done)
    print(f"\r{done}/{total} jobs, {elapsed:.0f} s elapsed, about {eta:.0f} s to go   ", end="", file=sys.stderr,
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
