"""agentab: did the change to your AI agent ship an improvement?

The package is laid out as the data flow, one subpackage per stage; each stage imports only the ones
before it (ARCHITECTURE.md has the rules and where to add things):

- :mod:`agentab.formats` -- read: agentab's own trace record and every other trace format (OpenTelemetry
  GenAI spans, OpenAI and Anthropic message lists, Inspect logs), file opening, the record decoder;
- :mod:`agentab.traces` -- load: :func:`load_traces` into run and step tables (:class:`Traces`), parallel
  reading of large files, Parquet, descriptive summaries (:func:`summarize`);
- :mod:`agentab.scoring` -- score: one run on its trajectory (:func:`score_run`), every run of an experiment
  at once (:func:`score`), the metric kinds, failure shapes (:func:`diagnose`);
- :mod:`agentab.stats` -- two-sample tests on arrays that respect tasks (permutation, bootstrap); no traces,
  no DataFrames;
- :mod:`agentab.power` -- plan: sample size, power and minimum effect from formulas, and :func:`power.plan`
  (tasks x seeds from pilot runs);
- :mod:`agentab.comparison` -- compare and decide: :func:`compare` routes every metric to its test, adjusts,
  checks guardrails and reaches one :class:`Decision` in a :class:`Comparison`;
- :mod:`agentab.reporting` -- show: :func:`report` (HTML or Markdown), :func:`task_profile`, and the figures
  (:mod:`agentab.plots`, imported on first use: matplotlib);
- :mod:`agentab.datasets` -- a realistic embedded two-arm example experiment;
- :mod:`agentab.cli` -- the ``agentab`` command, a thin layer over these names.

Shared by every layer: :mod:`agentab.errors` (the exceptions and warnings), ``agentab._vocabulary`` (metric
kinds, directions, alternatives, the one quantile definition), ``agentab._checks`` (every shared argument
check and the seed rules) and ``agentab._display`` (text, HTML and frames of every result from one view).

Examples
--------
>>> import agentab
>>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=8, n_seeds=2)
>>> scores = agentab.score(traces, agentab.datasets.example_specs(n_tasks=8))
>>> result = agentab.compare(scores, metrics=["outcome"], n_resamples=199)
>>> result.settings.seed, result.verdict
(0, 'inconclusive')
"""

from agentab import datasets, formats, power, stats
from agentab.comparison.compare import Comparison, compare
from agentab.comparison.multi import MultiComparison
from agentab.comparison.profiles import Profile, profile
from agentab.comparison.slices import SlicedComparison, compare_slices
from agentab.comparison.decide import Decision
from agentab.scoring.diagnose import Diagnosis, Finding, diagnose
from agentab.errors import CompareError, PowerError, ReportError, SpecError, StatsWarning, TraceError, TraceWarning
from agentab.reporting.report import report, task_profile
from agentab.scoring.score import SpecWarning, metric_kinds, score
from agentab.traces.summary import summarize, summarize_scores
from agentab.traces import Traces, load_results, load_traces, read_traces
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
    "MultiComparison",
    "profile",
    "Profile",
    "compare_slices",
    "SlicedComparison",
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
    "load_results",
    "load_traces",
    "read_traces",
    "summarize",
    "__version__",
]
