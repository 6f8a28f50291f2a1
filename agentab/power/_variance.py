"""The variance components a plan rests on, with the task-by-arm interaction and their intervals.

A run's score ``y`` (on the scale the plan linearises: the outcome for a rate, Cliff's delta's
placement score for an ordinal metric, the value for a continuous one, ``log(value + offset)`` for
cost and count) in task ``t`` and arm ``r`` is read as ``y = mu_r + u_t + d_t [r = candidate] + e``:

- **between-task** ``S``: the variance of a task's true mean in one arm (the one-way ANOVA estimator
  of :func:`agentab.stats.power.anova`, ``(MSB - MSW) / n0``; with two arms, the mean of the two);
- **task-by-arm** ``w^2``: the variance of the per-task true effect ``d_t`` (the candidate's task mean
  minus the baseline's), measured on the tasks both arms ran as ``var_t(dbar_t) - W_a mean(1 / n_a,t)
  - W_b mean(1 / n_b,t)`` (the method of moments: the observed differences' variance minus the seed
  noise in it), floored at 0. It is twice the interaction variance of the two-way model with a
  symmetric interaction; it is the ``w^2`` of a paired plan's variance ``V = w^2 / n + (W_A + W_B) /
  (n m)``;
- **within-task** ``W``: the pooled variance of a run about its task's mean (both arms pooled when
  there are two);
- their **ratio** ``sqrt(w^2 / S)``: the scale of ``plan(..., heterogeneity=)``
  (:mod:`agentab.power._heterogeneity`; 0.83 in the median of real Terminal-Bench pairs).

Intervals: 95% percentile bootstrap over tasks (each drawn task with all its runs, in both arms), on
the same truncated moment estimators. F and chi-square intervals need normal scores and, for ``w^2``
and for unbalanced pilots, Satterthwaite's approximation to a difference of mean squares; run scores
of rates and ordinal levels are far from normal and pilots are often unbalanced, while resampling the
unit of replication (tasks, as :mod:`agentab.power._uncertainty` does for the tasks needed) needs
neither. The estimators are a few sums per task, so 1,000 resamples are vectorised and take
milliseconds. With few tasks the percentile interval of a variance is too short rather than too long
(a bootstrap of ``k`` tasks sees at most ``k`` distinct ones); the interval is the pilot's own
uncertainty, not a guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab._display import Block, Display, Lines, Table

__all__ = ["VarianceComponents", "measure", "BOOT", "LEVEL"]

#: Bootstrap resamples of the pilot's tasks behind the components' intervals.
BOOT = 1000
#: Level of the components' intervals.
LEVEL = 0.95
#: Fewest tasks both arms share for the task-by-arm variance to be measured.
MIN_SHARED = 5

_ROWS = ("between-task", "task-by-arm", "within-task", "ratio")


@dataclass(frozen=True)
class VarianceComponents(Display):
    """Between-task, task-by-arm and within-task variance of a plan's pilot, and the heterogeneity ratio.

    Attributes
    ----------
    scale : str
        The scale the variances are on (e.g. ``"log(value + 0.01)"``).
    between, task_by_arm, within : float
        The variances (NaN when the pilot cannot give them).
    ratio : float
        ``sqrt(task_by_arm / between)``: the heterogeneity of :func:`agentab.power.plan`.
    sources : tuple of str
        For each of between, task-by-arm, within and ratio: ``"measured"``, ``"assumed"`` or why not.
    intervals : tuple of (float, float) or None
        The 95% interval of each measured component (None when assumed or not measured).
    level, n_boot : float, int
        The intervals' level and the bootstrap resamples of tasks behind them.
    shared_tasks : int
        Tasks both arms of the pilot ran (0 for a one-arm pilot).
    """

    scale: str
    between: float
    task_by_arm: float
    within: float
    ratio: float
    sources: tuple[str, str, str, str]
    intervals: tuple[Any, Any, Any, Any]
    level: float = LEVEL
    n_boot: int = BOOT
    shared_tasks: int = 0

    def frame(self) -> pd.DataFrame:
        """One row per component: ``component``, ``estimate`` (a variance; for ``ratio`` the ratio of SDs),
        ``sd`` (its square root; NaN for the ratio), ``low``, ``high`` and ``source``, with ``scale`` on every row."""
        rows = []
        for name, value, source, ci in zip(_ROWS, (self.between, self.task_by_arm, self.within, self.ratio),
                                           self.sources, self.intervals):
            is_ratio = name == "ratio"
            rows.append({
                "component": name, "estimate": value,
                "sd": math.nan if is_ratio or not value >= 0 else math.sqrt(value),
                "low": ci[0] if ci is not None else math.nan, "high": ci[1] if ci is not None else math.nan,
                "source": source, "scale": "task-by-arm SD / between-task SD" if is_ratio else self.scale,
            })
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale, "between": self.between, "task_by_arm": self.task_by_arm, "within": self.within,
            "ratio": self.ratio, "sources": list(self.sources),
            "intervals": [list(ci) if ci is not None else None for ci in self.intervals],
            "level": self.level, "n_boot": self.n_boot, "shared_tasks": self.shared_tasks,
        }

    def shown(self) -> pd.DataFrame:
        """The table as a plan shows it: rounded, intervals as text."""
        frame = self.frame()
        ci = [f"{lo:.3g} to {hi:.3g}" if np.isfinite(lo) else "" for lo, hi in zip(frame["low"], frame["high"])]
        return pd.DataFrame({
            "component": frame["component"], "estimate": [f"{v:.4g}" for v in frame["estimate"]],
            "sd": [f"{v:.4g}" if np.isfinite(v) else "" for v in frame["sd"]], f"{self.level:.0%} interval": ci,
            "source": frame["source"],
        })

    def title(self) -> str:
        return (f"Variance components on the {self.scale} scale (intervals: bootstrap over the pilot's tasks, "
                f"{self.n_boot:,} resamples)")

    def _view(self) -> list[Block]:
        return [Lines([self.title()]), Table(self.shown())]


def _arm_sums(scores: np.ndarray, codes: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task code: runs, sum and sum of squares of the scores (zeros for tasks the arm did not run)."""
    n = np.bincount(codes, minlength=n_codes).astype(float)
    s = np.bincount(codes, weights=scores, minlength=n_codes)
    q = np.bincount(codes, weights=scores * scores, minlength=n_codes)
    return n, s, q


def _oneway(n: np.ndarray, s: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Between (floored at 0) and within variance of :func:`agentab.stats.power.anova`, along the last axis.

    Rows may be resamples; a task with ``n = 0`` is absent.
    """
    present = n > 0
    k = present.sum(axis=-1)
    total = n.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_task = np.where(present, s * s / np.where(present, n, 1.0), 0.0)
        ssw = (q - per_task).sum(axis=-1)
        ssb = per_task.sum(axis=-1) - s.sum(axis=-1) ** 2 / total
        msb = ssb / (k - 1)
        msw = ssw / (total - k)
        n0 = (total - (n * n).sum(axis=-1) / total) / (k - 1)
        between = np.maximum(0.0, (msb - msw) / n0)
    return between, np.maximum(msw, 0.0)


def _interaction(a: tuple, b: tuple, within_a: np.ndarray, within_b: np.ndarray) -> np.ndarray:
    """The per-task effect's variance on the tasks both arms ran, minus the seed noise, floored at 0."""
    (na, sa, _), (nb, sb, _) = a, b
    both = (na > 0) & (nb > 0)
    k = both.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(both, sb / np.where(both, nb, 1.0) - sa / np.where(both, na, 1.0), 0.0)
        mean = d.sum(axis=-1) / k
        var = (np.where(both, (d - mean[..., None]) ** 2, 0.0)).sum(axis=-1) / (k - 1)
        inv_a = np.where(both, 1.0 / np.where(both, na, 1.0), 0.0).sum(axis=-1) / k
        inv_b = np.where(both, 1.0 / np.where(both, nb, 1.0), 0.0).sum(axis=-1) / k
    return np.maximum(0.0, var - within_a * inv_a - within_b * inv_b)


def _estimates(a: tuple, b: tuple | None) -> dict[str, np.ndarray]:
    """Between, within, task-by-arm (NaN for one arm) and ratio, for every row of the per-task sums."""
    between_a, within_a = _oneway(*a)
    if b is None:
        nan = np.full_like(between_a, np.nan)
        return {"between": between_a, "within": within_a, "task_by_arm": nan, "ratio": nan}
    between_b, within_b = _oneway(*b)
    runs_a, runs_b = a[0].sum(axis=-1), b[0].sum(axis=-1)
    k_a, k_b = (a[0] > 0).sum(axis=-1), (b[0] > 0).sum(axis=-1)
    pooled = (within_a * (runs_a - k_a) + within_b * (runs_b - k_b)) / (runs_a - k_a + runs_b - k_b)
    w2 = _interaction(a, b, within_a, within_b)
    between = (between_a + between_b) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(between > 0, np.sqrt(w2 / between), np.nan)
    return {"between": between, "within": pooled, "task_by_arm": w2, "ratio": ratio}


def measure(scores_a: np.ndarray, tasks_a: np.ndarray, scores_b: np.ndarray | None = None,
            tasks_b: np.ndarray | None = None, rng: np.random.Generator | None = None,
            n_boot: int = BOOT) -> tuple[dict[str, float], dict[str, tuple[float, float] | None], int]:
    """Point estimates, 95% bootstrap intervals (None with ``rng`` None) and the shared tasks, of a pilot's scores.

    One arm (``scores_b`` None): between and within only. Two arms sharing fewer than
    :data:`MIN_SHARED` tasks: task-by-arm and ratio are NaN.
    """
    names_a = np.asarray(tasks_a).astype(str)
    names_b = None if tasks_b is None else np.asarray(tasks_b).astype(str)
    names = np.unique(names_a if names_b is None else np.concatenate([names_a, names_b]))
    a = _arm_sums(np.asarray(scores_a, float), np.searchsorted(names, names_a), len(names))
    b = None
    shared = 0
    if names_b is not None and scores_b is not None and len(scores_b):
        b = _arm_sums(np.asarray(scores_b, float), np.searchsorted(names, names_b), len(names))
        shared = int(((a[0] > 0) & (b[0] > 0)).sum())
    point = {key: float(value) for key, value in _estimates(a, b).items()}
    if b is not None and shared < MIN_SHARED:
        point["task_by_arm"] = point["ratio"] = math.nan
    intervals: dict[str, tuple[float, float] | None] = {key: None for key in point}
    if rng is not None and n_boot > 0:
        drawn = rng.integers(len(names), size=(n_boot, len(names)))
        boots = _estimates(tuple(x[drawn] for x in a), None if b is None else tuple(x[drawn] for x in b))
        tail = (1 - LEVEL) / 2 * 100
        for key, values in boots.items():
            values = values[np.isfinite(values)]
            if math.isfinite(point[key]) and len(values) >= n_boot // 2:
                low, high = np.percentile(values, [tail, 100 - tail])
                intervals[key] = (float(low), float(high))
    return point, intervals, shared
