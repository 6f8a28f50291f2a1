"""Generating models, true effects and reference methods of the validation grid (``validate_grid.py``).

One module so that the benchmark and its CI-sized subset (``tests/test_calibration_grid.py``) share the
model code. Everything here is plain numpy / scipy plus agentab's *public* array functions and result
fields (``statistic``, ``pvalue``, ``confidence_interval.low / .high``, ``notes``, ``warnings``), so the
same code measures any version of agentab's methods.

Models (task parameter, then the runs of a task given it; ``T`` tasks, ``m`` seeds per task and arm)
---------------------------------------------------------------------------------------------------
- **binary**: ``p_t ~ Beta(a, b)`` with mean ``mu`` (the base rate) and ``ICC = 1 / (a + b + 1)``, runs
  Bernoulli(``p_t``). Null: ``p'_t = p_t`` (fresh runs). Alternative:
  ``logit(p'_t) = logit(clip(p_t)) + shift_t``, ``shift_t ~ N(s, 0.3^2)`` (clip to [1e-6, 1 - 1e-6]).
  ``s`` (:func:`binary_shift`, stored in ``Cell.shift``) aims the t-test at power about 0.5-0.7: the
  smallest ``s`` in [0, 4] whose expected z, ``E[p' - p] / sqrt(Var(d_t) / T)`` with ``Var(d_t)`` the
  per-task difference's variance (task effects plus seed noise ``E[p(1-p) + p'(1-p')] / m``; for
  clustered cells the two arms' task-mean variances), reaches 2.5, computed on 20,000 simulated tasks.
  Where even ``s = 4`` does not (ICC 0.7 with few tasks: most tasks always or never succeed) the power
  is lower; ``--list`` and the JSON give each cell's ``s``. Truth: the population
  task-averaged effect ``E[p'_t - p_t]``, Monte Carlo over 200,000 tasks (:func:`binary_truth`).
- **ordinal 0-3**: latent ``mu_t ~ N(0, 1.2^2)``, level = cut(``mu_t + N(0, 1)``) at (-0.5, 0.4, 1.2);
  alternative ``mu'_t = mu_t + N(0.4, 0.3^2)``. Truth: Cliff's delta between the arms' population
  task-averaged level distributions; a task-averaged distribution is the law of ``N(0, 1.2^2 + 1)``
  (candidate ``N(0.4, 1.2^2 + 0.3^2 + 1)``) cut at the same points, so the truth is closed form
  (:func:`ordinal_truth`; :func:`ordinal_truth_mc` checks it by Monte Carlo).
- **cost**: log cost = ``mu_t + N(0, 0.8^2)``, ``mu_t ~ N(8, 0.7^2)``; alternative: cost x 0.8 in every
  task. The task-weighted mixture is lognormal (log-sd ``sqrt(0.7^2 + 0.8^2)``), so the truth, the
  difference of the population p50 / p95 of the two mixtures, is ``-0.2 exp(8 + sqrt(1.13) z_q)``
  (:func:`cost_truth`; :func:`cost_truth_mc` checks it with the inverse ECDF of simulated tasks).

Reference methods on the same data (per-task summaries: success rate, mean level, mean log cost)
-----------------------------------------------------------------------------------------------
- ``t``: paired t-test of the per-task differences (``scipy.stats.ttest_1samp`` and its t-interval);
  Welch's t-test of the task means for different tasks per arm. Its interval estimates the task-averaged
  difference of the summaries: the truth for binary data, another estimand for ordinal and cost data
  (their coverage is not reported).
- ``sign-flip``: the exact sign-flip test of the sum of per-task differences (paired only): enumeration
  of the nonzero differences when there are at most 20 (all 2^k sign patterns, by meeting in the
  middle), else convolution on the integer grid (equal seeds, integer-valued summaries x seeds), else
  20,000 random flips.
- attainable size: ``2 floor(0.025 2^k) / 2^k`` for ``k`` nonzero task differences, the largest rejection
  probability any (non-randomised) sign-flip test can have at 0.05.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as sps

from agentab.stats import ordinal_superiority, quantile_difference, rate_difference

ALPHA = 0.05
LEVEL = 0.95
QS = (0.5, 0.95)
CUTS = np.array([-0.5, 0.4, 1.2])
CLIP = 1e-6
SHIFT_SD = 0.3
MAX_SHIFT = 4.0
TARGET_Z = 2.5
RANDOM_FLIPS = 20_000
MAX_ENUMERATED = 20

#: A note or warning saying that alpha cannot be reached (today's wording: "the smallest attainable
#: p-value is ...: no difference can be significant at this level").
#: agentab's note that an interval's coverage is approximate (few informative tasks).
COVERAGE_NOTE = re.compile(r"reliably holds its coverage", re.IGNORECASE)

ALPHA_NOTE = re.compile(
    r"smallest attainable p-value|cannot (be )?reach|can(not| never) be significant|"
    r"no difference can be significant|alpha .*(unreachable|not attainable|cannot)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a model, a design and its sizes.

    ``seeds`` 0 means uniform 1..8 per task and arm; ``missing`` the share of candidate tasks dropped;
    ``design`` "paired" or "clustered"; for clustered cells ``cand_tasks`` / ``cand_icc`` describe the
    candidate arm (None: as the baseline). ``null_only``: no alternative (size only).
    """

    name: str
    family: str
    kind: str
    design: str
    tasks: int
    seeds: int
    icc: float = 0.3
    base: float = 0.5
    missing: float = 0.0
    cand_tasks: int | None = None
    cand_icc: float | None = None
    null_only: bool = False
    shift: float = 0.0

    @property
    def min_tasks(self) -> int:
        """Tasks per arm that the comparison rests on (the smaller arm)."""
        kept = self.tasks - round(self.missing * self.tasks)
        return min(kept, self.cand_tasks or self.tasks)

    @property
    def outputs(self) -> tuple[str, ...]:
        """The rows agentab's result gives (p50 and p95 for cost)."""
        return ("p50", "p95") if self.kind == "cost" else (self.kind,)


@dataclass
class Dataset:
    """Both arms' runs and task ids."""

    x: np.ndarray
    y: np.ndarray
    xs: np.ndarray
    ys: np.ndarray


# --------------------------------------------------------------------------- #
# Generators
# --------------------------------------------------------------------------- #
def beta_params(mean: float, icc: float) -> tuple[float, float]:
    """Beta(a, b) with the given mean and ``ICC = 1 / (a + b + 1)``."""
    total = 1.0 / icc - 1.0
    return mean * total, (1.0 - mean) * total


def _z_statistic(cell: Cell, s: float, p: np.ndarray, p_cand: np.ndarray, noise: np.ndarray) -> float:
    """Expected t-test z of the binary alternative with mean logit shift ``s`` (common random numbers)."""
    if cell.seeds == 0:
        inverse_m = float(np.mean(1.0 / np.arange(1, 9)))
    else:
        inverse_m = 1.0 / cell.seeds
    shifted = special.expit(special.logit(np.clip(p_cand, CLIP, 1 - CLIP)) + s + SHIFT_SD * noise)
    effect = float(np.mean(shifted) - np.mean(p))
    if cell.design == "paired":
        var = np.var(shifted - p) + inverse_m * np.mean(p * (1 - p) + shifted * (1 - shifted))
        return effect / np.sqrt(var / cell.min_tasks)
    var_b = np.var(p) + inverse_m * np.mean(p * (1 - p))
    var_c = np.var(shifted) + inverse_m * np.mean(shifted * (1 - shifted))
    return effect / np.sqrt(var_b / cell.tasks + var_c / (cell.cand_tasks or cell.tasks))


def binary_shift(cell: Cell, n_tasks: int = 20_000) -> float:
    """The mean logit shift ``s`` of the binary alternative: the smallest ``s`` in [0, 4] whose expected
    t-test z (:func:`_z_statistic`, 20,000 simulated tasks, seed 0) reaches 2.5 (4 when none does)."""
    if cell.kind != "binary" or cell.null_only:
        return 0.0
    rng = np.random.default_rng(0)
    p = rng.beta(*beta_params(cell.base, cell.icc), n_tasks)
    p_cand = p if cell.design == "paired" else rng.beta(*beta_params(cell.base, cell.cand_icc or cell.icc), n_tasks)
    noise = rng.standard_normal(n_tasks)
    low, high = 0.0, MAX_SHIFT
    if _z_statistic(cell, high, p, p_cand, noise) < TARGET_Z:
        return high
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (mid, high) if _z_statistic(cell, mid, p, p_cand, noise) < TARGET_Z else (low, mid)
    return round(high, 4)


def calibrated(cell: Cell) -> Cell:
    """``cell`` with its binary alternative's shift (:func:`binary_shift`) filled in."""
    return replace(cell, shift=binary_shift(cell))


def _shifted_rates(p: np.ndarray, s: float, rng: np.random.Generator) -> np.ndarray:
    logit = special.logit(np.clip(p, CLIP, 1 - CLIP))
    return special.expit(logit + rng.normal(s, SHIFT_SD, len(p)))


def _seeds(cell: Cell, n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(1, 9, n) if cell.seeds == 0 else np.full(n, cell.seeds)


def _task_parameters(cell: Cell, alternative: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each arm's task parameters (rate, latent mean or log-scale mean), baseline first."""
    if cell.kind == "binary":
        base = rng.beta(*beta_params(cell.base, cell.icc), cell.tasks)
        if cell.design == "paired":
            cand = base
        else:
            cand = rng.beta(*beta_params(cell.base, cell.cand_icc or cell.icc), cell.cand_tasks or cell.tasks)
        return base, (_shifted_rates(cand, cell.shift, rng) if alternative else cand)
    if cell.kind == "ordinal":
        base = rng.normal(0.0, 1.2, cell.tasks)
        return base, (base + rng.normal(0.4, 0.3, cell.tasks) if alternative else base)
    base = rng.normal(8.0, 0.7, cell.tasks)
    return base, base


def _runs(cell: Cell, theta: np.ndarray, alternative: bool, arm: int, rng: np.random.Generator) -> np.ndarray:
    if cell.kind == "binary":
        return (rng.random(len(theta)) < theta).astype(float)
    if cell.kind == "ordinal":
        return np.digitize(theta + rng.normal(size=len(theta)), CUTS).astype(float)
    cost = np.exp(theta + rng.normal(0.0, 0.8, len(theta)))
    return cost * 0.8 if alternative and arm == 1 else cost


def simulate(cell: Cell, alternative: bool, rng: np.random.Generator) -> Dataset:
    """One data set of ``cell`` (null or alternative)."""
    base, cand = _task_parameters(cell, alternative, rng)
    ids_b = np.arange(len(base))
    ids_c = np.arange(len(cand)) + (0 if cell.design == "paired" else len(base))
    if cell.missing:
        keep = np.sort(rng.permutation(len(cand))[round(cell.missing * len(cand)):])
        cand, ids_c = cand[keep], ids_c[keep]
    m_b, m_c = _seeds(cell, len(base), rng), _seeds(cell, len(cand), rng)
    xs, ys = np.repeat(ids_b, m_b), np.repeat(ids_c, m_c)
    x = _runs(cell, np.repeat(base, m_b), alternative, 0, rng)
    y = _runs(cell, np.repeat(cand, m_c), alternative, 1, rng)
    return Dataset(x, y, xs, ys)


# --------------------------------------------------------------------------- #
# True effects
# --------------------------------------------------------------------------- #
def binary_truth(cell: Cell, rng: np.random.Generator, n_tasks: int = 200_000) -> float:
    """``E[p'_t - p_t]`` under the alternative, by Monte Carlo over ``n_tasks`` tasks (0 for a null-only cell)."""
    if cell.null_only:
        return 0.0
    p = rng.beta(*beta_params(cell.base, cell.icc), n_tasks)
    return float(np.mean(_shifted_rates(p, cell.shift, rng) - p))


def _cliff(base: np.ndarray, cand: np.ndarray) -> float:
    below = np.cumsum(base) - base
    above = 1.0 - below - base
    return float(np.sum(cand * (below - above)))


def ordinal_truth() -> float:
    """Cliff's delta between the population task-averaged level distributions (closed form)."""
    edges = np.concatenate([[-np.inf], CUTS, [np.inf]])
    base = np.diff(sps.norm.cdf(edges, 0.0, np.sqrt(1.2**2 + 1)))
    cand = np.diff(sps.norm.cdf(edges, 0.4, np.sqrt(1.2**2 + 0.3**2 + 1)))
    return _cliff(base, cand)


def ordinal_truth_mc(rng: np.random.Generator, n_tasks: int = 400_000) -> float:
    """:func:`ordinal_truth` by Monte Carlo: one run per simulated task (the task-averaged distribution)."""
    mu = rng.normal(0.0, 1.2, n_tasks)
    shares = [np.bincount(np.digitize(t + rng.normal(size=n_tasks), CUTS), minlength=4) / n_tasks
              for t in (mu, mu + rng.normal(0.4, 0.3, n_tasks))]
    return _cliff(*shares)


def cost_truth() -> np.ndarray:
    """Candidate minus baseline p50 and p95 of the task-weighted cost mixtures (closed form)."""
    return -0.2 * np.exp(8.0 + np.hypot(0.7, 0.8) * sps.norm.ppf(QS))


def cost_truth_mc(rng: np.random.Generator, n_tasks: int = 400_000) -> np.ndarray:
    """:func:`cost_truth` by Monte Carlo (inverse ECDF of one run of each of ``n_tasks`` tasks per arm)."""
    mu = rng.normal(8.0, 0.7, n_tasks)
    x = np.exp(mu + rng.normal(0.0, 0.8, n_tasks))
    y = 0.8 * np.exp(mu + rng.normal(0.0, 0.8, n_tasks))
    return np.quantile(y, QS, method="inverted_cdf") - np.quantile(x, QS, method="inverted_cdf")


def truth(cell: Cell, rng: np.random.Generator) -> np.ndarray:
    """The true effect of each of the cell's outputs under its alternative."""
    if cell.kind == "binary":
        return np.array([binary_truth(cell, rng)])
    if cell.kind == "ordinal":
        return np.array([ordinal_truth()])
    return cost_truth()


# --------------------------------------------------------------------------- #
# Methods
# --------------------------------------------------------------------------- #
FUNCTIONS = {"binary": rate_difference, "ordinal": ordinal_superiority, "cost": quantile_difference}


def agentab_result(cell: Cell, data: Dataset, n_resamples: int, rng: Any) -> dict[str, Any]:
    """agentab's p-value, interval and statistic per output, whether a note says alpha cannot be
    reached, and whether it raised (then NaN, counted as ``error``)."""
    kwargs: dict[str, Any] = {"x_strata": data.xs, "y_strata": data.ys, "n_resamples": n_resamples, "rng": rng}
    if cell.kind == "cost":
        kwargs["q"] = QS
    k = len(cell.outputs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = FUNCTIONS[cell.kind](data.x, data.y, **kwargs)
    except Exception as error:  # noqa: BLE001 - any failure is counted, never fatal to the grid
        nan = np.full(k, np.nan)
        return {"p": nan, "lo": nan, "hi": nan, "stat": nan, "note": False, "cnote": False, "error": type(error).__name__}
    texts = tuple(getattr(r, "notes", ()) or ()) + tuple(getattr(r, "warnings", ()) or ())
    return {
        "p": np.atleast_1d(np.asarray(r.pvalue, dtype=float)),
        "lo": np.atleast_1d(np.asarray(r.confidence_interval.low, dtype=float)),
        "hi": np.atleast_1d(np.asarray(r.confidence_interval.high, dtype=float)),
        "stat": np.atleast_1d(np.asarray(r.statistic, dtype=float)),
        "note": any(ALPHA_NOTE.search(str(t)) for t in texts),
        "cnote": any(COVERAGE_NOTE.search(str(t)) for t in texts),
        "error": "",
    }


def _summary(cell: Cell, values: np.ndarray) -> np.ndarray:
    return np.log(values) if cell.kind == "cost" else values


def task_means(cell: Cell, values: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted task ids, each task's mean summary and its number of runs."""
    tasks, index, counts = np.unique(ids, return_inverse=True, return_counts=True)
    sums = np.bincount(index, weights=_summary(cell, values), minlength=len(tasks))
    return tasks, sums / counts, counts


def paired_differences(cell: Cell, data: Dataset) -> tuple[np.ndarray, int | None]:
    """Per-task differences (candidate - baseline) over the shared tasks, and the common number of seeds
    (None when tasks have different numbers of runs)."""
    tb, mb, nb = task_means(cell, data.x, data.xs)
    tc, mc, nc = task_means(cell, data.y, data.ys)
    _, ib, ic = np.intersect1d(tb, tc, assume_unique=True, return_indices=True)
    counts = np.concatenate([nb[ib], nc[ic]])
    seeds = int(counts[0]) if len(counts) and np.all(counts == counts[0]) else None
    return mc[ic] - mb[ib], seeds


def t_result(cell: Cell, data: Dataset) -> dict[str, Any]:
    """Paired t-test of per-task differences, or Welch's t-test of task means, with the t-interval."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if cell.design == "paired":
            d, _ = paired_differences(cell, data)
            res = sps.ttest_1samp(d, 0.0)
            centre = float(np.mean(d))
        else:
            mb, mc = task_means(cell, data.x, data.xs)[1], task_means(cell, data.y, data.ys)[1]
            res = sps.ttest_ind(mc, mb, equal_var=False)
            centre = float(np.mean(mc) - np.mean(mb))
        ci = res.confidence_interval(LEVEL)
        p, lo, hi = float(res.pvalue), float(ci.low), float(ci.high)
    if not np.isfinite(p):  # no variation: every difference equal
        p, lo, hi = (1.0 if centre == 0 else 0.0), centre, centre
    return {"p": np.array([p]), "lo": np.array([lo]), "hi": np.array([hi])}


def _enumerated_pvalue(d: np.ndarray, observed: float, tol: float) -> float:
    """P(|sum of signed d| >= observed) over all 2^k sign patterns (meet in the middle)."""
    half = len(d) // 2

    def sums(part: np.ndarray) -> np.ndarray:
        bits = (np.arange(2 ** len(part))[:, None] >> np.arange(len(part))) & 1
        return (1 - 2 * bits) @ part

    left, right = sums(d[:half]), np.sort(sums(d[half:]))
    upper = len(right) - np.searchsorted(right, observed - tol - left, side="left")
    lower = np.searchsorted(right, -(observed - tol) - left, side="right")
    return float((upper.sum() + lower.sum()) / 2.0 ** len(d))


def _convolved_pvalue(steps: np.ndarray, observed: int) -> float:
    """P(|sum of signed integer steps| >= observed), the sign-flip law by convolution."""
    total = int(steps.sum())
    pmf = np.zeros(2 * total + 1)
    pmf[total] = 1.0
    for step in steps:
        pmf = 0.5 * (np.roll(pmf, int(step)) + np.roll(pmf, -int(step)))
    grid = np.abs(np.arange(-total, total + 1))
    return float(min(1.0, pmf[grid >= observed].sum()))


def sign_flip_pvalue(d: np.ndarray, seeds: int | None, rng: np.random.Generator) -> float:
    """Two-sided exact (or 20,000-flip) sign-flip p-value of the sum of per-task differences ``d``."""
    nz = d[np.abs(d) > 1e-12]
    observed = abs(float(nz.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(nz).sum()))
    if len(nz) == 0 or observed <= tol:
        return 1.0
    if len(nz) <= MAX_ENUMERATED:
        return _enumerated_pvalue(nz, observed, tol)
    if seeds is not None:
        steps = nz * seeds
        if np.allclose(steps, np.round(steps), atol=1e-9):
            return _convolved_pvalue(np.abs(np.round(steps)).astype(int), round(observed * seeds))
    signs = rng.integers(0, 2, (RANDOM_FLIPS, len(nz)), dtype=np.int8) * 2 - 1
    flipped = np.abs(signs @ nz)
    return float((1 + np.count_nonzero(flipped >= observed - tol)) / (1 + RANDOM_FLIPS))


def attainable_size(k: int, alpha: float = ALPHA) -> float:
    """Largest rejection probability of a non-randomised two-sided sign-flip test with ``k`` nonzero
    differences: ``2 floor(alpha / 2 * 2^k) / 2^k`` (exact integer arithmetic for alpha = 0.05)."""
    if alpha == ALPHA:
        return 2 * ((2**k) // 40) / 2**k
    return 2 * np.floor(alpha / 2 * 2.0**k) / 2.0**k


def replicate(cell: Cell, alternative: bool, seed: np.random.SeedSequence, n_resamples: int) -> dict[str, Any]:
    """One data set of ``cell`` analysed by every method: ``{method: {p, lo, hi, ...}, "k": ...}``."""
    data_ss, agentab_ss, flip_ss = seed.spawn(3)
    data = simulate(cell, alternative, np.random.default_rng(data_ss))
    out: dict[str, Any] = {"agentab": agentab_result(cell, data, n_resamples, np.random.default_rng(agentab_ss)),
                           "t": t_result(cell, data)}
    if cell.design == "paired":
        d, seeds = paired_differences(cell, data)
        p = sign_flip_pvalue(d, seeds, np.random.default_rng(flip_ss))
        out["sign-flip"] = {"p": np.array([p])}
        out["k"] = int(np.count_nonzero(np.abs(d) > 1e-12))
    return out
