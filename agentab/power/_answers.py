"""What the formula functions return: :class:`SampleSize` (sample size or power) and :class:`MinimumEffect`.

Both show themselves through :class:`agentab._display.Display`: ``to_dict()`` holds the numbers, ``_view()``
the lines ``str()`` and Jupyter show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab._checks import jsonable_seed
from agentab._display import Block, Display, Lines

__all__ = ["MinimumEffect", "SampleSize", "design_text", "effect_text"]


def effect_text(kind: str, effect: Any) -> str:
    """An effect in words, on its kind's scale."""
    if effect is None:
        return "none"
    if isinstance(effect, np.ndarray):
        return "candidate shares " + "/".join(f"{v:.2f}" for v in effect)
    if kind == "binary":
        return f"{effect:+.3f} (absolute)"
    if kind == "ordinal":
        return f"odds ratio {effect:.3g}"
    if kind == "continuous":
        return f"d = {effect:+.3g}"
    return f"{effect:+.1%} of the quantile"


def design_text(design: str, correlation: float | None, discordant: float | None) -> str:
    """The design in words: ``""`` for independent arms, else the paired design and its parameter."""
    if design != "paired":
        return ""
    if correlation is not None:
        return f", paired design (correlation {correlation:g} between the arms' task means)"
    return f", paired design (discordant share {discordant:g} of pairs)"


def _plain(value: Any) -> Any:
    """A JSON value: arrays as lists, NaN as None."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _same_tasks(design: str) -> str:
    return ", the same tasks in both arms (paired)" if design == "paired" else ""


@dataclass(frozen=True)
class SampleSize(Display):
    """Runs per arm for a target power, or the power of given runs.

    Attributes
    ----------
    kind, effect, method, alpha, alternative
        The question as asked (``method`` says how it was answered; ``alternative`` in scipy's words:
        ``"two-sided"``, ``"greater"``, ``"less"``).
    runs_per_arm : int
        Runs in each arm (whole tasks: ``tasks_per_arm * seeds_per_task``
        for :func:`sample_size`; as given for :func:`power`).
    tasks_per_arm, seeds_per_task : int
    power : float
        The power achieved by ``runs_per_arm`` (simulated for ``method="simulation"``).
    design_effect : float
        ``1 + (seeds_per_task - 1) icc``.
    exact_runs : float
        Independent runs per arm the formula asks for before rounding up and
        before the design effect (NaN for :func:`power`).
    mc_se : float or None
        Monte Carlo standard error of a simulated power.
    notes : tuple of str
    seed : int, SeedSequence or None
        The seed of a simulated answer (None for a formula): passing it as ``seed=`` reproduces the answer
        (a spawned SeedSequence given as the seed is recorded as itself).
    design : {"independent", "paired"}
        ``"paired"``: the same ``tasks_per_arm`` tasks in both arms (``exact_runs`` is then the pairs the
        formula asks for with one seed per task, unrounded).
    correlation, discordant : float or None
        The paired design's parameter: the correlation between the arms' task means (continuous), the share
        of discordant pairs (binary); None for independent arms.
    """

    kind: str
    effect: Any
    runs_per_arm: int
    tasks_per_arm: int
    seeds_per_task: int
    power: float
    method: str
    alpha: float
    alternative: str
    design_effect: float = 1.0
    exact_runs: float = math.nan
    mc_se: float | None = None
    notes: tuple[str, ...] = ()
    seed: int | np.random.SeedSequence | None = None
    design: str = "independent"
    correlation: float | None = None
    discordant: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "effect": _plain(self.effect), "runs_per_arm": self.runs_per_arm,
            "tasks_per_arm": self.tasks_per_arm, "seeds_per_task": self.seeds_per_task, "power": self.power,
            "method": self.method, "alpha": self.alpha, "alternative": self.alternative,
            "design_effect": self.design_effect, "exact_runs": _plain(self.exact_runs), "mc_se": self.mc_se,
            "notes": list(self.notes), "seed": jsonable_seed(self.seed), "design": self.design,
            "correlation": self.correlation, "discordant": self.discordant,
        }

    def _view(self) -> list[Block]:
        mc = f" (Monte Carlo s.e. {self.mc_se:.3f})" if self.mc_se is not None else ""
        lines = [
            f"{self.kind} metric, effect {effect_text(self.kind, self.effect)}, alpha {self.alpha:g} ({self.alternative}), "
            f"method {self.method}{design_text(self.design, self.correlation, self.discordant)}",
            f"{self.runs_per_arm:,} runs per arm = {self.tasks_per_arm:,} tasks x {self.seeds_per_task} seed(s) per task"
            f"{_same_tasks(self.design)} (design effect {self.design_effect:.2f})",
            f"power {self.power:.3f}{mc}",
        ]
        return [Lines(lines + [f"note: {n}" for n in self.notes])]


@dataclass(frozen=True)
class MinimumEffect(Display):
    """The smallest effect that given runs per arm detect with the target power.

    ``effect`` is on the kind's scale (see :mod:`agentab.power.formulas`), in the
    direction of the alternative (an improvement for ``"two-sided"``: a
    higher rate or level, a lower cost); None when no effect in range reaches
    the power. ``alternative`` is in scipy's words. ``design``, ``correlation`` and ``discordant`` are as in
    :class:`SampleSize`.
    """

    kind: str
    effect: float | None
    runs_per_arm: int
    tasks_per_arm: int
    seeds_per_task: int
    power: float
    method: str
    alpha: float
    alternative: str
    design_effect: float = 1.0
    notes: tuple[str, ...] = ()
    design: str = "independent"
    correlation: float | None = None
    discordant: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "effect": self.effect, "runs_per_arm": self.runs_per_arm,
            "tasks_per_arm": self.tasks_per_arm, "seeds_per_task": self.seeds_per_task, "power": self.power,
            "method": self.method, "alpha": self.alpha, "alternative": self.alternative,
            "design_effect": self.design_effect, "notes": list(self.notes), "design": self.design,
            "correlation": self.correlation, "discordant": self.discordant,
        }

    def _view(self) -> list[Block]:
        shown = "none in range" if self.effect is None else effect_text(self.kind, self.effect)
        lines = [
            f"{self.kind} metric, {self.runs_per_arm:,} runs per arm = {self.tasks_per_arm:,} tasks x "
            f"{self.seeds_per_task} seed(s){_same_tasks(self.design)} (design effect {self.design_effect:.2f}), "
            f"alpha {self.alpha:g} ({self.alternative}), method {self.method}"
            f"{design_text(self.design, self.correlation, self.discordant)}",
            f"minimum detectable effect at power {self.power:.2f}: {shown}",
        ]
        return [Lines(lines + [f"note: {n}" for n in self.notes])]
