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

How the work is kept small (each path agrees with the generic one, tested):

- every design resamples *cells* (a task in an arm, or a run), so a
  resample costs O(cells), not a reshuffle of the runs;
- discrete metrics of independent runs (binary, ordinal, small counts) are
  count vectors: permutations are multivariate hypergeometric draws and
  bootstrap resamples multinomial draws, O(levels) each; two-valued metrics
  get the exact hypergeometric p-value;
- paired designs enumerate every sign flip when there are at most
  ``n_resamples`` of them, and read the p-value and the interval (test
  inversion) off the same flips;
- quantiles of independent runs are resampled from their exact order-statistic
  distributions (bootstrap) and through block counts (permutation),
  O(log n) and O(sqrt n) per resample;
- everything runs in batches bounded by ``_design.BATCH_CELLS``, and the
  results do not depend on the batch size.

The quantile is the inverse-ECDF one (Hyndman & Fan definition 1), always an
observed value: :mod:`agentab._vocabulary` holds its one definition, which the
summaries, reports and plans use too.

Results are frozen dataclasses with typed fields (``statistic``, ``pvalue``,
``confidence_interval``, ``estimates``, and what the design and resampling
were: ``design_kind``, ``n_runs``, ``exact``, ``ci_method``, ``seed``, ...);
``rng`` follows scipy (None draws fresh entropy), and the seed actually used
is recorded in ``seed``, so passing it back reproduces a result exactly.

This layer imports numpy and scipy only, and of agentab only
:mod:`agentab.errors`, :mod:`agentab._checks` and :mod:`agentab._vocabulary`. The Harrell-Davis estimator (a weighted average of all order
statistics) is smoother for small samples, but it is not an observed value,
its bootstrap has no closed form, and with the tens of runs per arm that a
p95 needs (see the tail warning) the two agree closely; agentab does not use it.
"""

from agentab.stats._kernels import pass_hat_k
from agentab.stats._maxt import MaxTResult, max_t, max_t_families
from agentab.stats._results import (
    ConfidenceInterval,
    Estimates,
    OrdinalResult,
    QuantileResult,
    TwoSampleResult,
)
from agentab.stats.two_sample import (
    mean_difference,
    mean_estimates,
    ordinal_superiority,
    pass_k_difference,
    quantile_difference,
    rate_difference,
)

__all__ = [
    "MaxTResult",
    "max_t",
    "max_t_families",
    "rate_difference",
    "pass_k_difference",
    "ordinal_superiority",
    "quantile_difference",
    "mean_difference",
    "mean_estimates",
    "pass_hat_k",
    "TwoSampleResult",
    "OrdinalResult",
    "QuantileResult",
    "ConfidenceInterval",
    "Estimates",
]
