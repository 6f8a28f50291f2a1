"""Score: one run against its reference trajectory, every run of an experiment, failure shapes, summaries.

- :mod:`~agentab.scoring.spec` -- :class:`Call` and :class:`TrajectorySpec`: what a good trajectory looks like;
- :mod:`~agentab.scoring.trajectory` -- :func:`score_run`: one run against a spec, every rule in plain Python;
- :mod:`~agentab.scoring.reference` -- matching runs against reference trajectories (one run, and every run);
- :mod:`~agentab.scoring.score` -- :func:`score`: every run at once, vectorised (its parts: ``_resolve`` the
  ``spec`` argument, ``_arrays`` the steps and specs as arrays, ``_batch`` the checks but the reference);
- :mod:`~agentab.scoring.metrics` -- the metric columns: kinds, directions, the 0-3 rubric, kinds from values;
- :mod:`~agentab.scoring.diagnose` -- :func:`diagnose`: failure shapes across an experiment, with evidence.

Scoring knows no statistics: nothing here imports :mod:`agentab.stats`.
"""

from agentab.scoring.diagnose import Diagnosis, Finding, diagnose
from agentab.scoring.metrics import METRICS, infer_kind, metric_kinds, rubric_level, rubric_levels
from agentab.scoring.score import SpecWarning, score
from agentab.scoring.trajectory import Call, TrajectorySpec, Verdict, score_run

__all__ = ["Call", "Diagnosis", "Finding", "METRICS", "SpecWarning", "TrajectorySpec", "Verdict", "diagnose",
           "infer_kind", "metric_kinds", "rubric_level", "rubric_levels", "score", "score_run"]
