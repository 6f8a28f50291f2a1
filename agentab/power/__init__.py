"""Plan: sample size, power and minimum detectable effect, from formulas or from pilot runs.

- :mod:`~agentab.power.formulas` -- :func:`sample_size`, :func:`power`, :func:`mde` per metric kind;
- :mod:`~agentab.power.planning` -- :func:`plan`: tasks x seeds per task from pilot runs, checked by simulation.

Alternatives are scipy's words (``"two-sided"``, ``"greater"``, ``"less"``; ``"larger"``/``"smaller"`` are
accepted), and every simulation is seeded by default and records its seed (``seed``).
"""

from agentab._vocabulary import KINDS  # noqa: F401  (agentab.power.KINDS, as before: the kinds of metric)
from agentab.errors import PowerError
from agentab.power._arguments import METHODS  # noqa: F401  (agentab.power.METHODS, as before: each kind's methods)
from agentab.power.formulas import MinimumEffect, SampleSize, mde, power, sample_size
from agentab.power.planning import Plan, SimulatedPower, plan

__all__ = ["MinimumEffect", "Plan", "PowerError", "SampleSize", "SimulatedPower", "mde", "plan", "power",
           "sample_size"]
