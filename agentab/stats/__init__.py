"""Two-sample statistics on arrays: tests that respect tasks as the unit of replication.

This layer knows nothing of traces or DataFrames: it takes the baseline and
candidate values (``x``, ``y``) and, optionally, the task of every run
(``x_strata``, ``y_strata``), and returns scipy-style result objects.

- :func:`rate_difference` -- binary metrics (success rate);
- :func:`pass_k_difference` -- pass^k, all of k seeds of a task succeed;
- :func:`ordinal_superiority` -- ordinal metrics (Cliff's delta / probability of superiority);
- :func:`quantile_difference` -- long-tailed cost and counts (p50, p95, differences and ratios);
- :func:`mean_difference` -- continuous metrics;
- :func:`mean_estimates` -- task-averaged means without resampling (descriptive).
"""

from ._kernels import pass_hat_k
from ._results import ConfidenceInterval, Estimates, QuantileResult, TwoSampleResult
from .two_sample import (
    mean_difference,
    mean_estimates,
    ordinal_superiority,
    pass_k_difference,
    quantile_difference,
    rate_difference,
)

__all__ = [
    "rate_difference",
    "pass_k_difference",
    "ordinal_superiority",
    "quantile_difference",
    "mean_difference",
    "mean_estimates",
    "pass_hat_k",
    "TwoSampleResult",
    "QuantileResult",
    "ConfidenceInterval",
    "Estimates",
]
