"""Plan: sample size, power and minimum detectable effect, from formulas or from pilot runs.

- :mod:`~agentab.power.formulas` -- :func:`sample_size`, :func:`power`, :func:`mde` per metric kind;
- :mod:`~agentab.power.planning` -- :func:`plan`: tasks x seeds per task from pilot runs, checked by simulation.
"""

from agentab.errors import PowerError
from agentab.power.formulas import KINDS, METHODS, MinimumEffect, SampleSize, mde, power, sample_size
from agentab.power.planning import Plan, SimulatedPower, plan

__all__ = ["MinimumEffect", "Plan", "PowerError", "SampleSize", "SimulatedPower", "mde", "plan", "power",
           "sample_size"]
