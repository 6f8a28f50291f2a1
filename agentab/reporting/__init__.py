"""Show: the HTML or Markdown report of a comparison, and its figures.

- :mod:`~agentab.reporting.report` -- :func:`report` and :func:`task_profile`;
- :mod:`~agentab.reporting.plots` -- the figures (matplotlib, no pyplot state), imported on first use.

Reporting uses only public names of the layers below it.
"""

from agentab.reporting.report import FORMATS, report, task_profile

__all__ = ["FORMATS", "report", "task_profile"]
