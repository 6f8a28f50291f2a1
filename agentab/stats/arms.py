"""Several candidates against one baseline on the same tasks: shared sign flips and the max-T of every kind.

A comparison of ``k`` candidates with one baseline runs ``k`` paired two-arm tests whose sign-flip patterns
come from the same stream (one per metric, from the seed): :func:`shared_draws` draws them once for all
(the numbers stay bit for bit the two-arm tests'). :func:`max_t_arms` adjusts the primary metric across the
candidates (and all pairs of arms) on those patterns, for the statistics whose two-arm paired test is not
the task-level t of :func:`agentab.stats.max_t` (Cliff's delta, quantile differences).
"""

from __future__ import annotations

from agentab.stats._design import shared_draws

__all__ = ["shared_draws"]
