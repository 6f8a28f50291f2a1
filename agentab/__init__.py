"""agentab: did the change to your AI agent ship an improvement?

The data flow reads top to bottom:

- :mod:`agentab.record` -- the trace record (one JSON object per agent run);
- :mod:`agentab.formats` -- the trace formats read besides the record (OpenTelemetry, message lists, Inspect);
- :mod:`agentab.traces` -- :func:`load_traces` into run and step tables;
- :mod:`agentab.trajectory` -- scoring one run on its trajectory (:func:`score_run`);
- :mod:`agentab.score` -- :func:`score`: every run of an experiment, vectorised, with metric kinds;
- :mod:`agentab.diagnose` -- :func:`diagnose`: failure shapes across the experiment, with evidence;
- :mod:`agentab.stats` -- two-sample tests on arrays that respect tasks (permutation, bootstrap);
- :mod:`agentab.compare` -- :func:`compare`: every metric routed to its test, one table;
- :mod:`agentab.decide` -- the verdict (ship / don't ship / inconclusive), guardrails;
- :mod:`agentab.summary` -- per-arm descriptive summaries;
- :mod:`agentab.plots` -- figures of a comparison, a diagnosis and a plan (matplotlib);
- :mod:`agentab.report` -- :func:`report`: the HTML (or Markdown) report of a comparison;
- :mod:`agentab.datasets` -- a realistic embedded two-arm example experiment;
- :mod:`agentab.cli` -- the ``agentab`` command.
"""

from agentab import datasets, formats, power, stats
from agentab.comparison.compare import Comparison, compare
from agentab.comparison.decide import Decision
from agentab.scoring.diagnose import Diagnosis, Finding, diagnose
from agentab.errors import CompareError, PowerError, ReportError, SpecError, StatsWarning, TraceError, TraceWarning
from agentab.reporting.report import report, task_profile
from agentab.scoring.score import SpecWarning, metric_kinds, score
from agentab.traces.summary import summarize, summarize_scores
from agentab.traces import Traces, load_traces, read_traces
from agentab.scoring.trajectory import Call, TrajectorySpec, Verdict, score_run

from agentab._version import __version__


def __getattr__(name: str) -> object:
    """``agentab.plots`` is imported on first use: it loads matplotlib (half a second), which only figures need."""
    if name == "plots":
        import importlib

        return importlib.import_module("agentab.reporting.plots")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Call",
    "TrajectorySpec",
    "Verdict",
    "score_run",
    "score",
    "metric_kinds",
    "SpecError",
    "SpecWarning",
    "diagnose",
    "Diagnosis",
    "Finding",
    "summarize_scores",
    "compare",
    "Comparison",
    "Decision",
    "CompareError",
    "StatsWarning",
    "stats",
    "power",
    "PowerError",
    "plots",
    "report",
    "task_profile",
    "ReportError",
    "Traces",
    "TraceError",
    "TraceWarning",
    "datasets",
    "formats",
    "load_traces",
    "read_traces",
    "summarize",
    "__version__",
]
