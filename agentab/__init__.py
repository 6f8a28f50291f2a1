"""agentab: did the change to your AI agent ship an improvement?

The data flow reads top to bottom:

- :mod:`agentab.record` -- the trace record (one JSON object per agent run);
- :mod:`agentab.traces` -- :func:`load_traces` into run and step tables;
- :mod:`agentab.trajectory` -- scoring one run on its trajectory (:func:`score_run`);
- :mod:`agentab.summary` -- per-arm descriptive summaries;
- :mod:`agentab.datasets` -- a realistic embedded two-arm example experiment;
- :mod:`agentab.cli` -- the ``agentab`` command.
"""

from . import datasets
from .errors import TraceError, TraceWarning
from .summary import summarize
from .traces import Traces, load_traces, read_traces
from .trajectory import Call, TrajectorySpec, Verdict, score_run

__version__ = "0.1.0.dev0"

__all__ = [
    "Call",
    "TrajectorySpec",
    "Verdict",
    "score_run",
    "Traces",
    "TraceError",
    "TraceWarning",
    "datasets",
    "load_traces",
    "read_traces",
    "summarize",
    "__version__",
]
