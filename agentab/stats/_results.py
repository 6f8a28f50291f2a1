"""Result objects of the two-sample tests, in the style of scipy.stats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ConfidenceInterval", "Estimates", "TwoSampleResult", "QuantileResult"]


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
        Everything else: ``design_kind``, ``exact``, ``n_resamples``,
        ``ci_method``, ``n_runs``, ``n_units``, ``excluded`` (missing values
        per arm), ``dropped_tasks``, ``dropped_runs``, and per-test extras.
    warnings : tuple of str
        Warnings raised while computing the result (also issued as
        :class:`agentab.errors.StatsWarning`).
    """

    statistic: Any
    pvalue: Any
    confidence_interval: ConfidenceInterval
    estimates: Estimates
    method: str
    design: str
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

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
    ratio : numpy.ndarray
        Candidate quantile / baseline quantile.
    ratio_interval : ConfidenceInterval
        Percentile bootstrap interval of the ratio.
    """

    q: Any = None
    ratio: Any = None
    ratio_interval: ConfidenceInterval = field(default_factory=lambda: ConfidenceInterval(None, None))
