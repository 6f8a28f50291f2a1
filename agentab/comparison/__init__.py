"""Compare and decide: every metric routed to its test, the verdict and its guardrails, the result object.

- :mod:`~agentab.comparison.compare` -- :func:`compare`: metrics to tests, Holm adjustment, guardrails;
- :mod:`~agentab.comparison.decide` -- the verdict (ship / don't ship / inconclusive), the guardrail grammar and
  the one rule of every row's assessment (:func:`~agentab.comparison.decide.assess`);
- :mod:`~agentab.comparison.result` -- :class:`Comparison`: the table, the decision, what was left out
  (:class:`Dropped`), its displays and JSON; :meth:`Comparison.flipped_tasks`;
- :mod:`~agentab.comparison.multi` -- :class:`MultiComparison`: several candidates against one baseline, the
  primary's max-T adjustment across them, all pairs, the best candidate;
- :mod:`~agentab.comparison.profiles` -- :func:`profile`: many systems across the score vector, each cell an
  estimate with its interval, never one weighted score; the Pareto frontier.
"""

from agentab.comparison.compare import TABLE_COLUMNS, compare
from agentab.comparison.decide import (
           ASSESSMENT_RULE,
           ASSESSMENTS,
           VERDICTS,
           Decision,
           assess,
           parse_guardrails,
)
from agentab.comparison.multi import MultiComparison, MultiSettings
from agentab.comparison.profiles import Profile, ProfileSettings, profile
from agentab.comparison.result import (
           Comparison,
           ComparisonDesign,
           ComparisonSettings,
           Dropped,
)
from agentab.comparison.slices import SlicedComparison, compare_slices

__all__ = ["ASSESSMENTS", "ASSESSMENT_RULE", "Comparison", "ComparisonDesign", "ComparisonSettings", "Decision",
           "Dropped", "MultiComparison", "MultiSettings", "Profile", "ProfileSettings", "SlicedComparison", "TABLE_COLUMNS", "VERDICTS", "assess", "compare", "compare_slices", "parse_guardrails", "profile"]
