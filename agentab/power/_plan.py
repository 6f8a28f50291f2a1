"""What :func:`~agentab.power.plan` returns: the :class:`Plan`, and the :class:`SimulatedPower` that checks it.

Both show themselves through :class:`agentab._display.Display` (``to_dict()`` and ``_view()``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import (
    check_n_resamples,
    check_whole,
    jsonable_seed,
    recorded_seed,
    seed_sequence,
)
from agentab._display import Blank, Block, Display, Items, Lines, Table
from agentab.errors import PowerError
from agentab.power._simulation import Model, model_pvalues
from agentab.power._uncertainty import TasksInterval
from agentab.power._variance import VarianceComponents
from agentab.stats import power as core

__all__ = ["Plan", "SimulatedPower"]

#: The labelled lists under a plan's table: the label of each text line, and the list's title in HTML.
_LISTS = (("assumption", "Assumptions"), ("note", "Notes"), ("warning", "Warnings"))


@dataclass(frozen=True)
class SimulatedPower(Display):
    """Power of a design measured by running agentab's test on simulated experiments.

    ``seed`` is the seed the simulation drew from: passing it back to :meth:`Plan.simulate` as ``seed=``
    gives the same result.
    """

    power: float
    mc_se: float
    confidence_interval: tuple[float, float]
    n_sims: int
    tasks: int
    seeds_per_task: int
    formula_power: float
    seed: int | np.random.SeedSequence | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "power": self.power, "mc_se": self.mc_se, "confidence_interval": list(self.confidence_interval),
            "n_sims": self.n_sims, "tasks": self.tasks, "seeds_per_task": self.seeds_per_task,
            "formula_power": self.formula_power, "seed": jsonable_seed(self.seed),
        }

    def _view(self) -> list[Block]:
        low, high = self.confidence_interval
        return [Lines([
            f"simulated power {self.power:.3f} (95% CI {low:.3f} to {high:.3f}, {self.n_sims:,} experiments) "
            f"with {self.tasks:,} tasks x {self.seeds_per_task} seed(s); the plan's formula gives {self.formula_power:.3f}"
        ])]


@dataclass(frozen=True)
class Plan(Display):
    """A recommended design and the options around it.

    Attributes
    ----------
    tasks : int
        Tasks per arm (in a paired design the same tasks serve both arms).
    seeds_per_task : int
        Runs of each task per arm.
    runs_per_arm, total_runs : int
    power : float
        Power of the recommended design (formula).
    table : pandas.DataFrame
        One row per seeds-per-task option: ``tasks``, ``seeds_per_task``,
        ``runs_per_arm``, ``total_runs``, ``cost`` (in runs, a new task
        costing ``cost_ratio`` runs), ``power``, ``feasible``.
    icc, icc_ci : float, (float, float)
        Intra-task correlation measured on the pilot, with its 95% interval.
    delta : float
        The effect on the tested statistic's scale (rate difference, Cliff's
        delta, mean difference, quantile difference).
    alternative : str
        In scipy's words: ``"two-sided"``, ``"greater"`` or ``"less"``.
    optimum_seeds : float
        The classic cost-optimal seeds per task, ``sqrt(cost_ratio W / (k B))``
        (k = 2 paired, 1 independent; Raudenbush 1997), inf when tasks do not
        vary. The table's cheapest row can differ a little: it also counts
        the t and permutation-null corrections.
    min_tasks : int
        Tasks per arm needed even with unlimited seeds per task.
    assumptions, notes, warnings : tuple of str
    seed : int, SeedSequence or None
        The seed of the plan's Dirichlet task model (binary and ordinal metrics): passing it back to
        :func:`plan` as ``seed=`` gives the same plan.
    tasks_interval : TasksInterval or None
        With ``plan(..., n_boot=N)``: the 80% interval (``low``, ``high``) of the tasks needed at the
        recommended seeds per task, re-planned on ``N`` resamples of the pilot's tasks.
    variance_components : VarianceComponents or None
        The pilot's between-task, task-by-arm (the per-task effect's variance) and within-task variance
        and their ratio (the ``heterogeneity=`` scale), each measured (with a 95% bootstrap interval over
        the pilot's tasks) or assumed; on the scale the plan linearises (the outcome, the placement score,
        the metric, or ``log(value + offset)`` for cost and count). ``variance_components.frame()`` is the
        table as a DataFrame. (``components`` is the tested statistic's linearised variance the formula uses.)
    """

    metric: str
    kind: str
    design: str
    effect: float
    delta: float
    alpha: float
    target: float
    alternative: str
    tasks: int
    seeds_per_task: int
    runs_per_arm: int
    total_runs: int
    power: float
    cost: float
    table: pd.DataFrame
    icc: float
    icc_ci: tuple[float, float]
    pilot_tasks: int
    pilot_runs: int
    optimum_seeds: float
    min_tasks: int
    components: core.Components
    cost_ratio: float
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    model: Model = field(default=None, repr=False)  # type: ignore[assignment]
    seed: int | np.random.SeedSequence | None = None
    tasks_interval: TasksInterval | None = None
    variance_components: VarianceComponents | None = None

    # ------------------------------------------------------------------ results

    def power_at(self, tasks: Any, seeds_per_task: Any = None) -> Any:
        """Formula power of ``tasks`` per arm with ``seeds_per_task`` (default: the recommended)."""
        m = self.seeds_per_task if seeds_per_task is None else seeds_per_task
        return self.components.power(tasks, m, self.design == "paired", self.alpha, self.alternative)

    def curve(self, tasks: Any = None, seeds_per_task: Any = None) -> pd.DataFrame:
        """Power curve as a DataFrame (``tasks``, ``seeds_per_task``, ``runs_per_arm``, ``power``).

        ``tasks`` defaults to a grid from 2 to twice the recommendation;
        ``seeds_per_task`` may be a list (one curve each).
        """
        if tasks is None:
            top = max(10, 2 * self.tasks)
            tasks = np.unique(np.linspace(2, top, 40).round().astype(int))
        tasks = np.atleast_1d(np.asarray(tasks, dtype=int))
        seeds = np.atleast_1d(np.asarray(self.seeds_per_task if seeds_per_task is None else seeds_per_task, dtype=int))
        rows = []
        for m in seeds:
            p = np.atleast_1d(self.power_at(tasks, int(m)))
            rows.append(pd.DataFrame({"tasks": tasks, "seeds_per_task": int(m), "runs_per_arm": tasks * int(m), "power": p}))
        return pd.concat(rows, ignore_index=True)

    def simulate(
        self,
        n_sims: int = 400,
        *,
        tasks: int | None = None,
        seeds_per_task: int | None = None,
        n_resamples: int = 999,
        seed: Any = 0,
    ) -> SimulatedPower:
        """Check the plan: run agentab's own test on ``n_sims`` experiments simulated from the pilot's model.

        Each experiment draws ``tasks`` tasks of ``seeds_per_task`` runs per
        arm (default: the recommendation) from the model described in
        :mod:`agentab.power.planning` (for cost, the pilot's own tasks and runs,
        resampled), applies the effect to the candidate, runs the test
        :func:`agentab.compare` would run (paired or clustered, with
        ``n_resamples`` permutations) and counts p-values below ``alpha``.

        ``seed`` (an integer, SeedSequence or Generator; default 0) makes the check reproducible; None draws
        fresh entropy. The result's ``seed`` is the seed used: passing it back gives the same result.

        Examples
        --------
        >>> import agentab
        >>> pilot = agentab.score(agentab.datasets.example_experiment(seed=1, n_tasks=20, n_seeds=3))
        >>> pilot = pilot[pilot["arm"] == "baseline"]
        >>> p = agentab.power.plan(pilot, "passed", 0.15, seeds_per_task=3)
        >>> sim = p.simulate(50, seed=0)
        >>> 0.4 < sim.power <= 1.0
        True
        """
        if self.model is None:
            raise PowerError("this plan has no task model to simulate from: its pilot had one run per task (resample "
                             "the pilot's tasks instead: plan(..., n_boot=200))")
        n_sims = check_whole(n_sims, "n_sims", 1, PowerError)
        n = self.tasks if tasks is None else check_whole(tasks, "tasks", 2, PowerError)
        m = self.seeds_per_task if seeds_per_task is None else check_whole(seeds_per_task, "seeds_per_task", 1, PowerError)
        n_resamples = check_n_resamples(n_resamples, PowerError)
        sequence = seed_sequence(seed, PowerError)
        pvals = model_pvalues(self.model, n, m, self.alternative, n_sims, n_resamples, sequence)
        rate = float(np.mean(pvals < self.alpha))
        se = math.sqrt(max(rate * (1 - rate), 1e-12) / n_sims)
        ci = (max(0.0, rate - 1.96 * se), min(1.0, rate + 1.96 * se))
        return SimulatedPower(rate, se, ci, n_sims, n, m, float(self.power_at(n, m)), recorded_seed(sequence))

    # ------------------------------------------------------------------ display

    def effect_text(self) -> str:
        """The effect in words, on the metric's scale and the tested statistic's."""
        if self.kind == "binary":
            return f"{self.effect * 100:+.1f} points of success rate"
        if self.kind == "ordinal":
            return f"odds ratio {self.effect:.3g} (Cliff's delta {self.delta:+.3f})"
        if self.kind == "continuous":
            return f"d = {self.effect:+.3g} ({self.delta:+.4g} in the metric's units)"
        return f"{self.effect:+.0%} on the p{self.model.quantile * 100:g} ({self.delta:+.4g})"

    def _header(self) -> list[str]:

        opt = "unbounded" if not math.isfinite(self.optimum_seeds) else f"{self.optimum_seeds:.1f}"
        return [
            f"Plan for {self.metric} ({self.kind}), {self.design} design: detect {self.effect_text()} "
            f"at alpha {self.alpha:g} ({self.alternative}) with power {self.target:.2f}",
            f"Recommended: {self.tasks:,} tasks x {self.seeds_per_task} seed(s) per task = {self.runs_per_arm:,} "
            f"runs per arm ({self.total_runs:,} in all), power {self.power:.3f}",
        ] + (self._design_lines(opt) if math.isfinite(self.icc) else [
            f"Pilot: {self.pilot_tasks} tasks, {self.pilot_runs} runs, one per task: the ICC cannot be measured, so the plan "
            "is for 1 seed per task (where it does not matter)",
        ]) + ([self.tasks_interval.text(self.seeds_per_task)] if self.tasks_interval is not None else [])

    def _design_lines(self, opt: str) -> list[str]:
        low, high = self.icc_ci
        return [
            f"Pilot: {self.pilot_tasks} tasks, {self.pilot_runs} runs; ICC {self.icc:.2f} (95% CI {low:.2f} to {high:.2f})",
            f"A new task costs {self.cost_ratio:g} run(s): the recommendation has {self.seeds_per_task} seed(s) per "
            f"task (the classic optimum sqrt(cost ratio x within / between) is {opt}); even with unlimited seeds, at "
            f"least {self.min_tasks:,} tasks per arm are needed",
        ]

    def _shown(self) -> pd.DataFrame:
        """The table as displayed: whole-run costs, and no ``feasible`` column when every row is."""
        shown = self.table.drop(columns=["feasible"]) if self.table["feasible"].all() else self.table.copy()
        shown["cost"] = shown["cost"].round().astype(int)
        shown["power"] = shown["power"].round(3)
        return shown

    def to_dict(self) -> dict[str, Any]:
        plain = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                 if f.name not in ("table", "components", "model")}
        plain.update(
            icc_ci=list(self.icc_ci), optimum_seeds=self.optimum_seeds if math.isfinite(self.optimum_seeds) else None,
            assumptions=list(self.assumptions), notes=list(self.notes), warnings=list(self.warnings),
            effect_text=self.effect_text(), table=self.table.to_dict(orient="records"),
            seed=jsonable_seed(self.seed),
            tasks_interval=dataclasses.asdict(self.tasks_interval) if self.tasks_interval is not None else None,
            variance_components=self.variance_components.to_dict() if self.variance_components is not None else None,
        )
        return plain

    def _view(self) -> list[Block]:
        blocks: list[Block] = [Lines(self._header()), Blank(), Table(self._shown())]
        if self.variance_components is not None and math.isfinite(self.variance_components.between):
            blocks += [Blank()] + self.variance_components._view()
        for label, title in _LISTS:
            texts = getattr(self, f"{label}s")
            if texts:
                blocks.append(Items(texts, title=title, indent="", bullet=f"{label}: ", title_in_text=False))
        return blocks
