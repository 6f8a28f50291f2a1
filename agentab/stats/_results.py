"""Result objects of the two-sample tests, in the style of scipy.stats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ConfidenceInterval", "Estimates", "OrdinalResult", "QuantileResult", "TwoSampleResult"]


class ConfidenceInterval(NamedTuple):
    """Lower and upper bound of a confidence interval."""

    low: Any
    high: Any


class Estimates(NamedTuple):
    """Each arm's estimate (baseline, candidate)."""

    baseline: Any
    candidate: Any


def _fmt(value: Any) -> str:
    if np.ndim(value):
        return "[" + ", ".join(_fmt(v) for v in np.ravel(value)) + "]"
    return f"{value:.4g}" if np.isfinite(value) else str(value)


@dataclass(frozen=True)
class TwoSampleResult:
    """The result of a two-sample comparison (candidate minus baseline).

    Attributes
    ----------
    statistic : float
        The effect: candidate minus baseline (Cliff's delta for ordinal data).
    pvalue : float
        Permutation p-value (NaN when no test was run).
    confidence_interval : ConfidenceInterval
        Bootstrap interval for ``statistic``.
    estimates : Estimates
        Each arm's estimate (rates, means, mean levels or quantiles).
    method : str
        The test and interval used, and why.
    design : str
        The design the resampling respected, e.g. ``"paired by task (40 tasks)"``.
    details : dict
        Per-test extras no other layer reads (e.g. ``welch`` of
        :func:`~agentab.stats.mean_difference`, ``k`` of
        :func:`~agentab.stats.pass_k_difference`).
    warnings : tuple of str
        Warnings raised while computing the result (also issued as
        :class:`agentab.errors.StatsWarning`).
    design_kind : {"paired", "clustered", "independent"}
        The design resampled.
    n_runs, n_units : tuple of int
        Runs and units (tasks, or runs without task ids) of (baseline, candidate) that entered.
    excluded : tuple of int
        Missing values left out, per arm.
    dropped_tasks, dropped_runs : tuple of int
        Tasks run by one arm only (and their runs), left out of a paired comparison, per arm.
    exact : bool or None
        Whether the permutation distribution was enumerated (None: no test).
    n_resamples : int
        Resamples asked for; ``n_permutations`` those the test used (0: no test).
    ci_method : str or None
        ``"test inversion"`` (the effects the studentized permutation test does not reject, for rates,
        means, pass^k and Cliff's delta) or ``"percentile"`` (bootstrap, for quantiles); None: no interval.
    confidence_level : float or None
    alternative : str or None
        The alternative hypothesis, in scipy's words.
    seed : int, numpy.random.SeedSequence or None
        The seed drawn from: passing it back as ``rng`` reproduces the result exactly (None when a
        Generator was given, whose state is not recorded; a spawned SeedSequence is recorded as itself).
    notes : tuple of str
        The notes on the data and design, before the ones about one statistic.
    smallest_pvalue : float or None
        The smallest p-value the permutation distribution of these data can give (None: not
        computed). When it is not below alpha, no difference can be significant, and a note says so.
    """

    statistic: Any
    pvalue: Any
    confidence_interval: ConfidenceInterval
    estimates: Estimates
    method: str
    design: str
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    design_kind: str = "independent"
    n_runs: tuple[int, int] = (0, 0)
    n_units: tuple[int, int] = (0, 0)
    excluded: tuple[int, int] = (0, 0)
    dropped_tasks: tuple[int, int] = (0, 0)
    dropped_runs: tuple[int, int] = (0, 0)
    exact: bool | None = None
    n_resamples: int = 0
    n_permutations: float = 0
    ci_method: str | None = None
    confidence_level: float | None = None
    alternative: str | None = None
    seed: Any = None
    notes: tuple[str, ...] = ()
    smallest_pvalue: float | None = None

    def __repr__(self) -> str:
        ci = self.confidence_interval
        return (
            f"{type(self).__name__}(statistic={_fmt(self.statistic)}, pvalue={_fmt(self.pvalue)}, "
            f"confidence_interval=({_fmt(ci.low)}, {_fmt(ci.high)}), "
            f"estimates=({_fmt(self.estimates.baseline)}, {_fmt(self.estimates.candidate)}), "
            f"design={self.design!r})"
        )


@dataclass(frozen=True, repr=False)
class QuantileResult(TwoSampleResult):
    """A quantile comparison; array fields are aligned with ``q``.

    Attributes
    ----------
    q : numpy.ndarray
        The probabilities compared (e.g. 0.5 and 0.95).
    notes_by_q : tuple of tuple of str
        The notes about each quantile (a fragile tail, an infinite ratio), aligned with ``q``.
    ratio : numpy.ndarray
        Candidate quantile / baseline quantile.
    ratio_interval : ConfidenceInterval
        Percentile bootstrap interval of the ratio.
    """

    q: Any = None
    ratio: Any = None
    ratio_interval: ConfidenceInterval = field(default_factory=lambda: ConfidenceInterval(None, None))
    notes_by_q: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, repr=False)
class OrdinalResult(TwoSampleResult):
    """An ordinal comparison (Cliff's delta), with each arm's share of every level.

    Attributes
    ----------
    probability_of_superiority : float
        P(candidate > baseline) + P(tie) / 2, which is ``(statistic + 1) / 2``.
    levels : numpy.ndarray
        The levels, worst first.
    shares : Estimates
        Each arm's (task-averaged) share of every level, aligned with ``levels``.
    shift : numpy.ndarray
        Candidate share minus baseline share per level.
    """

    probability_of_superiority: float = float("nan")
    levels: Any = None
    shares: Estimates = Estimates(None, None)
    shift: Any = None
