"""Score: one run against its reference trajectory, every run of an experiment, failure shapes, summaries.

- :mod:`~agentab.scoring.trajectory` -- :func:`score_run`: one run against a :class:`TrajectorySpec`; the 0-3 rubric;
- :mod:`~agentab.scoring.score` -- :func:`score`: every run at once, vectorised, with metric kinds;
- :mod:`~agentab.scoring.diagnose` -- :func:`diagnose`: failure shapes across an experiment, with evidence.

Scoring knows no statistics: nothing here imports :mod:`agentab.stats`.
"""

from agentab.scoring.diagnose import Diagnosis, Finding, diagnose
from agentab.scoring.score import METRICS, SpecWarning, infer_kind, metric_kinds, rubric_levels, score
from agentab.scoring.trajectory import Call, TrajectorySpec, Verdict, rubric_level, score_run

__all__ = ["Call", "Diagnosis", "Finding", "METRICS", "SpecWarning", "TrajectorySpec", "Verdict", "diagnose",
           "infer_kind", "metric_kinds", "rubric_level", "rubric_levels", "score", "score_run"]
