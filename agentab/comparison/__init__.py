"""Compare and decide: every metric routed to its test, the verdict and its guardrails, the result object.

- :mod:`~agentab.comparison.compare` -- :func:`compare`: metrics to tests, Holm adjustment, guardrails;
- :mod:`~agentab.comparison.decide` -- the verdict (ship / don't ship / inconclusive) and the guardrail grammar;
- :mod:`~agentab.comparison.result` -- :class:`Comparison`: the table, the decision, its displays and JSON.
"""

from agentab.comparison.compare import TABLE_COLUMNS, compare
from agentab.comparison.decide import VERDICTS, Decision, parse_guardrails
from agentab.comparison.result import Comparison, ComparisonDesign, ComparisonSettings

__all__ = ["Comparison", "ComparisonDesign", "ComparisonSettings", "Decision", "TABLE_COLUMNS", "VERDICTS", "compare",
           "parse_guardrails"]
