"""Whether an effect differs between slices of the tasks: a permutation test of the task-by-slice interaction.

The data are per-task (cell) means of a mean-like metric (a rate, a mean): in a paired design one
difference per task (candidate minus baseline), otherwise each arm's per-unit means. Every task
belongs to exactly one slice (slices partition the tasks, the unit of replication).

The statistic
-------------
Each slice ``s`` has its effect ``e_s`` (the task-averaged difference, as :func:`agentab.compare`
reports it) and its variance ``v_s`` (paired: the variance of its tasks' differences over their
number; otherwise Welch's sum of the two arms' terms). The statistic is the between-slice spread

    Q = sum_s (e_s - e_w)^2 / v_s,    e_w = sum_s (e_s / v_s) / sum_s (1 / v_s),

Cochran's Q (the Wald statistic of "every slice has the same effect"), ``chi^2`` with ``S - 1``
degrees of freedom in large samples. Each slice's variance is shrunk towards the slices' pooled
within-slice variance with the weight of one task, ``((n_s - 1) s_s^2 + s_pool^2) / n_s``, so a
slice whose tasks all show the same difference (a slice every run of both arms fails) does not get an
infinite weight; the shrinkage vanishes as slices grow.

The null distribution
---------------------
Slice labels are permuted across tasks, each task keeping its runs in both arms together (paired:
its difference; otherwise within each arm, so each arm keeps its number of tasks per slice). This
never touches the common effect: every task keeps its own difference, so a nonzero effect shared by
all slices stays in every permuted slice, and only the *assignment* of tasks to slices is random.

- Under the strong null (the tasks of every slice are exchangeable: the same distribution of per-task
  differences) the test is exact at any size (Monte Carlo p-value ``(1 + #{Q* >= Q}) / (1 + B)``,
  Phipson & Smyth 2010).
- Under the weaker null the question asks about (the same *mean* effect in every slice, while slices
  differ in difficulty and in how much the effect varies from task to task) the tasks are not
  exchangeable, but Q is studentized by each slice's own variance, so its permutation distribution
  and its sampling distribution both tend to ``chi^2_{S-1}``: the test is asymptotically valid
  (Chung & Romano 2013, Ann. Statist. 41:484-507, for the k-sample problem with this statistic), and
  ``benchmarks/validate_slices.py`` measures its size at 8-50 tasks per slice.

The rejected alternative, centring each slice's differences on the pooled effect and flipping their
signs, tests symmetry of the centred differences (a binary metric's per-task differences are
skewed near a floor or ceiling) and is no more exact; the chi-square reference of Q (the naive
test, :attr:`InteractionResult.wald_pvalue`) over-rejects with few tasks per slice, because the
slices' variances are estimated from few tasks.

Ordinal and quantile metrics
----------------------------
:func:`slice_interaction_runs` tests the same question for the effects whose two-arm test is not a
difference of task means, on the runs themselves, with the same permutations of slice labels across
whole tasks (paired: one label per task, carried by its runs in both arms; otherwise within each arm):

- **ordinal** (Cliff's delta): each slice's delta between the arms' task-averaged level shares, and its
  delta-method variance (the variance of the tasks' influence values, paired; the two arms' terms
  otherwise, as :func:`agentab.stats.ordinal_superiority` studentizes it), shrunk as above; the
  statistic is Cochran's Q of the slices' deltas, so the test is asymptotically valid under the weak
  null for the same reason as the mean-like one;
- **quantile** (cost, count): each slice's difference of the arms' task-weighted quantiles. A quantile
  has no cheap variance per permutation, so the statistic is the between-slice sum of squares of the
  slice effects weighted by their tasks, ``sum_s n_s (e_s - e_bar)^2`` with ``e_bar`` the task-weighted
  mean effect: exact under the strong null (exchangeable tasks), but not studentized, so slices whose
  tasks vary very differently can move its size (``benchmarks/validate_slices.py`` measures it with
  slices of different difficulty).

This module knows no DataFrames: :mod:`agentab.comparison.slices` builds the arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab.stats._design import Design, make_design
from agentab.stats._kernels import OrdinalKernel, QuantileKernel, cliff_delta
from agentab.stats._studentized import _cliff_welch, _order_matrix

__all__ = ["InteractionResult", "slice_interaction", "slice_interaction_runs", "RUN_KINDS", "BATCH_VALUES"]

#: The kinds :func:`slice_interaction_runs` tests.
RUN_KINDS = ("ordinal", "quantile")

#: Largest number of permuted labels (resamples x tasks) held at once; results do not depend on it.
BATCH_VALUES = 1 << 20


@dataclass(frozen=True)
class InteractionResult:
    """The interaction test of :func:`slice_interaction`.

    Attributes
    ----------
    statistic : float
        Cochran's Q of the observed slices (with the shrunk variances).
    pvalue : float
        Monte Carlo permutation p-value, ``(1 + #{Q* >= Q}) / (1 + n_resamples)``; NaN when fewer than two
        slices or nothing varies.
    wald_pvalue : float
        The naive reference: ``chi^2_{S-1}`` upper tail of Q computed with the slices' plain variances
        (NaN when a slice's variance is 0). Shown for comparison, never used to decide.
    df : int
        Slices minus one.
    effects, variances : tuple of float
        Each slice's effect and (shrunk) variance, in slice order.
    n_units : tuple of int
        Tasks per slice (paired), or both arms' units per slice.
    n_resamples : int
    design_kind : {"paired", "clustered", "independent"}
    note : str
        Why there is no p-value, when there is none.
    """

    statistic: float
    pvalue: float
    wald_pvalue: float
    df: int
    effects: tuple[float, ...]
    variances: tuple[float, ...]
    n_units: tuple[int, ...]
    n_resamples: int
    design_kind: str
    note: str = ""


def _moments(values: np.ndarray, labels: np.ndarray, n_slices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``labels`` (resamples x units) and slice: count, mean and sample variance of ``values``."""
    labels = np.atleast_2d(labels)
    count = np.empty((labels.shape[0], n_slices))
    mean = np.empty_like(count)
    var = np.empty_like(count)
    for s in range(n_slices):
        mask = labels == s
        n = mask.sum(axis=1).astype(float)
        total = np.where(mask, values, 0.0).sum(axis=1)
        m = total / np.maximum(n, 1)
        ss = np.where(mask, (values - m[:, None]) ** 2, 0.0).sum(axis=1)
        count[:, s], mean[:, s], var[:, s] = n, m, ss / np.maximum(n - 1, 1)
    return count, mean, var


def _shrunk(count: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Each slice's variance shrunk towards the pooled within-slice variance with the weight of one unit."""
    dof = np.maximum(count - 1, 0)
    pooled = (dof * var).sum(axis=1, keepdims=True) / np.maximum(dof.sum(axis=1, keepdims=True), 1)
    return (dof * var + pooled) / np.maximum(count, 1)


def _q(effects: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """Cochran's Q per row; rows whose variances are all 0 give 0 (nothing varies)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(variances > 0, 1.0 / variances, 0.0)
        centre = (w * effects).sum(axis=1) / w.sum(axis=1)
        q = (w * (effects - centre[:, None]) ** 2).sum(axis=1)
    return np.where(np.isfinite(q), q, 0.0)


def _arm_terms(values: np.ndarray, labels: np.ndarray, n_slices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    count, mean, var = _moments(values, labels, n_slices)
    return count, mean, var, _shrunk(count, var) / np.maximum(count, 1)


def _statistic(arms: list[tuple[np.ndarray, np.ndarray]], n_slices: int, paired: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Effects, shrunk and plain variances, and Q for each row of labels."""
    if paired:
        (d, lab), = arms
        count, effects, var, shrunk = _arm_terms(d, lab, n_slices)
        plain = var / np.maximum(count, 1)
    else:
        (xb, lb), (xc, lc) = arms
        nb, mb, vb, sb = _arm_terms(xb, lb, n_slices)
        nc, mc, vc, sc = _arm_terms(xc, lc, n_slices)
        effects, shrunk = mc - mb, sb + sc
        plain = vb / np.maximum(nb, 1) + vc / np.maximum(nc, 1)
    return effects, shrunk, plain, _q(effects, shrunk)


def _permuted(arms: list[tuple[np.ndarray, np.ndarray]], size: int, rng: np.random.Generator
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``size`` uniform permutations of each arm's labels within the arm, from one row of uniforms per resample
    (so the draws do not depend on the batch size)."""
    keys = rng.random((size, sum(len(s) for _, s in arms)))
    out, start = [], 0
    for v, s in arms:
        out.append((v, s[np.argsort(keys[:, start:start + len(s)], axis=1)]))
        start += len(s)
    return out


def slice_interaction(
    values: tuple[np.ndarray, ...],
    slices: tuple[np.ndarray, ...],
    *,
    paired: bool,
    n_resamples: int,
    rng: np.random.Generator,
    design_kind: str | None = None,
) -> InteractionResult:
    """Permutation test of whether a mean-like effect differs between slices of the tasks.

    Parameters
    ----------
    values : tuple of numpy.ndarray
        Paired: ``(d,)``, one candidate-minus-baseline difference of per-task means per task. Otherwise
        ``(x, y)``: the baseline's and the candidate's per-unit (task, or run) means.
    slices : tuple of numpy.ndarray of int
        The slice (0 .. S-1) of every entry of ``values``, arm by arm; every slice must hold at least
        two units in each arm.
    paired : bool
        Whether ``values`` holds paired differences.
    n_resamples : int
        Random permutations of the slice labels (the same permutations for every statistic).
    rng : numpy.random.Generator
        The stream the permutations draw from.
    design_kind : str, optional
        Recorded in the result (default "paired" or "clustered").

    Returns
    -------
    InteractionResult

    Notes
    -----
    See the module's docstring for the statistic, the permutation scheme and why it keeps the common
    effect. Examples are in ``tests/test_slices.py``.
    """
    kind = design_kind or ("paired" if paired else "clustered")
    arms = [(np.asarray(v, dtype=float), np.asarray(s, dtype=np.int64)) for v, s in zip(values, slices)]
    n_slices = int(max(int(s.max(initial=-1)) for _, s in arms) + 1)
    effects, shrunk, plain, q = _statistic(arms, n_slices, paired)
    units = tuple(int(sum(np.sum(s == k) for _, s in arms)) for k in range(n_slices))
    base = dict(df=n_slices - 1, effects=tuple(map(float, effects[0])), variances=tuple(map(float, shrunk[0])),
                n_units=units, n_resamples=n_resamples, design_kind=kind)
    if n_slices < 2:
        return InteractionResult(math.nan, math.nan, math.nan, note="fewer than two slices to compare", **base)
    if not np.any(shrunk[0] > 0):
        return InteractionResult(math.nan, math.nan, math.nan,
                                 note="no unit varies within any slice: nothing to test the slices' effects against",
                                 **base)
    q_obs = float(q[0])
    wald = math.nan
    if np.all(plain[0] > 0):
        from scipy.stats import chi2

        wald = float(chi2.sf(float(_q(effects, plain)[0]), n_slices - 1))
    n_units = sum(len(v) for v, _ in arms)
    batch = max(1, BATCH_VALUES // max(n_units, 1))
    tol = 1e-9 * max(abs(q_obs), 1e-300)
    hits = 0
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        hits += int(np.sum(_statistic(_permuted(arms, size, rng), n_slices, paired)[3] >= q_obs - tol))
    return InteractionResult(q_obs, (1 + hits) / (1 + n_resamples), wald, **base)


class _SliceEffects:
    """The slices' effects (and variances) of an ordinal or quantile metric for rows of slice labels."""

    def __init__(self, values: np.ndarray, design: Design, kind: str, q: float):
        self.design, self.kind = design, kind
        if kind == "quantile":
            self.kernel = QuantileKernel(values, design, np.array([q]))
            return
        levels, codes = np.unique(values, return_inverse=True)
        self.shares = OrdinalKernel(codes.reshape(-1), levels, design).values
        self.outer = (self.shares[:, :, None] * self.shares[:, None, :]).reshape(len(self.shares), -1)
        self.order = _order_matrix(len(levels))

    def __call__(self, base_labels: np.ndarray, cand_labels: np.ndarray, n_slices: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row and slice: units, effect and variance (NaN for quantiles) from each arm's cell labels."""
        d = self.design
        rows = len(base_labels)
        count, effect, var = (np.empty((rows, n_slices)) for _ in range(3))
        for s in range(n_slices):
            mb, mc = (base_labels == s).astype(float), (cand_labels == s).astype(float)
            w_base, w_cand = np.zeros((rows, d.n_cells)), np.zeros((rows, d.n_cells))
            w_base[:, d.base_cells], w_cand[:, d.cand_cells] = mb, mc
            count[:, s] = mb.sum(axis=1) if d.kind == "paired" else mb.sum(axis=1) + mc.sum(axis=1)
            if self.kind == "quantile":
                effect[:, s] = self.kernel.quantiles(w_cand)[:, 0] - self.kernel.quantiles(w_base)[:, 0]
                var[:, s] = np.nan
            elif d.kind == "paired":
                effect[:, s], var[:, s] = self._paired(mb)
            else:
                delta, se = _cliff_welch(w_base, w_cand, self.shares, self.outer, self.order)
                effect[:, s], var[:, s] = delta, count[:, s] * se**2  # per-unit scale, as the means' variances
        return count, effect, var

    def _paired(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cliff's delta of the tasks in ``m`` (rows of 0/1) and the variance of their influence values."""
        base, cand = self.shares[self.design.base_cells], self.shares[self.design.cand_cells]
        n = m.sum(axis=1, keepdims=True)
        b, c = (m @ base) / n, (m @ cand) / n
        h = np.einsum("rl,tl->rt", c @ self.order, base) + np.einsum("rl,tl->rt", b @ self.order.T, cand)
        mean = (m * h).sum(axis=1, keepdims=True) / n
        var = (m * (h - mean) ** 2).sum(axis=1) / np.maximum(n[:, 0] - 1, 1)
        return cliff_delta(b, c), var


def _run_statistic(effects: _SliceEffects, base: np.ndarray, cand: np.ndarray, n_slices: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Effects, shrunk and plain variances of the effects, and the statistic, per row of labels."""
    count, effect, unit_var = effects(base, cand, n_slices)
    if effects.kind == "quantile":
        centre = (count * effect).sum(axis=1, keepdims=True) / count.sum(axis=1, keepdims=True)
        nan = np.full_like(effect, np.nan)
        return effect, nan, nan, (count * (effect - centre) ** 2).sum(axis=1)
    shrunk = _shrunk(count, unit_var) / np.maximum(count, 1)
    return effect, shrunk, unit_var / np.maximum(count, 1), _q(effect, shrunk)


def slice_interaction_runs(
    x: Any, y: Any, x_slices: Any, y_slices: Any, *, kind: str, x_strata: Any = None, y_strata: Any = None,
    paired: bool, q: float = 0.5, n_resamples: int, rng: np.random.Generator,
) -> InteractionResult:
    """Permutation test of whether an ordinal (Cliff's delta) or quantile effect differs between slices.

    Parameters
    ----------
    x, y : array_like
        The baseline's and the candidate's runs (no missing values).
    x_slices, y_slices : array_like of int
        The slice (0 .. S-1) of every run; every task's runs share one. Every slice must hold at least two
        units in each arm.
    kind : {"ordinal", "quantile"}
    x_strata, y_strata : array_like, optional
        The task of every run (None: runs are independent units).
    paired : bool
        Both arms ran the same tasks (tasks run by one arm only are left out).
    q : float
        The quantile (``kind="quantile"``).
    n_resamples : int
        Random permutations of the slice labels across whole tasks.
    rng : numpy.random.Generator

    Returns
    -------
    InteractionResult
        ``variances`` and ``wald_pvalue`` are NaN for quantiles (no variance per permutation).

    Notes
    -----
    See the module's docstring; tests in ``tests/test_interaction_runs.py``.
    """
    if kind not in RUN_KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(RUN_KINDS)}, got {kind!r}")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    paired = bool(paired and x_strata is not None)
    design, keep_x, keep_y = make_design(len(x), len(y), None if x_strata is None else np.asarray(x_strata),
                                         None if y_strata is None else np.asarray(y_strata), paired)
    cell_slice = np.zeros(design.n_cells, dtype=np.int64)
    cell_slice[design.cell] = np.r_[np.asarray(x_slices, dtype=np.int64)[keep_x], np.asarray(y_slices, dtype=np.int64)[keep_y]]
    effects = _SliceEffects(np.r_[x[keep_x], y[keep_y]], design, kind, q)
    base_lab, cand_lab = cell_slice[design.base_cells], cell_slice[design.cand_cells]
    n_slices = int(max(base_lab.max(initial=-1), cand_lab.max(initial=-1)) + 1)
    effect, shrunk, plain, stat = _run_statistic(effects, base_lab[None], cand_lab[None], n_slices)
    units = tuple(int(np.sum(base_lab == k) + (0 if design.kind == "paired" else np.sum(cand_lab == k)))
                  for k in range(n_slices))
    base = dict(df=n_slices - 1, effects=tuple(map(float, effect[0])), variances=tuple(map(float, shrunk[0])),
                n_units=units, n_resamples=n_resamples, design_kind=design.kind)
    if n_slices < 2:
        return InteractionResult(math.nan, math.nan, math.nan, note="fewer than two slices to compare", **base)
    observed = float(stat[0])
    wald = math.nan
    if kind == "ordinal" and np.all(plain[0] > 0):
        from scipy.stats import chi2

        wald = float(chi2.sf(float(_q(effect, plain)[0]), n_slices - 1))
    arms = [(base_lab, base_lab)] if design.kind == "paired" else [(base_lab, base_lab), (cand_lab, cand_lab)]
    batch = max(1, BATCH_VALUES // max(design.n_cells * n_slices, 1))
    tol = 1e-9 * max(abs(observed), 1e-300)
    hits = 0
    for start in range(0, n_resamples, batch):
        perm = _permuted(arms, min(batch, n_resamples - start), rng)
        b_lab = perm[0][1]
        c_lab = b_lab if design.kind == "paired" else perm[1][1]
        hits += int(np.sum(_run_statistic(effects, b_lab, c_lab, n_slices)[3] >= observed - tol))
    return InteractionResult(observed, (1 + hits) / (1 + n_resamples), wald, **base)
