"""Transitional: :func:`log_odds_for_delta` for :mod:`agentab.comparison.compare` until it imports
:mod:`agentab.stats.power` (the public module that replaced this one); delete this file then."""

from agentab.stats.power import log_odds_for_delta

__all__ = ["log_odds_for_delta"]
