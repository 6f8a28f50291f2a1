"""Plan an experiment from pilot runs: how many tasks, and how many seeds per task.

:func:`plan` (exported as ``agentab.power.plan``) reads a pilot (runs with a
task column and the metric; a baseline-only pilot is the common case),
measures what the answer depends on -- the metric's distribution, the
between-task and within-task variance and so the intra-task correlation
(ICC, with its interval) -- and lists designs (tasks x seeds per task) with
their power, recommending the cheapest that reaches the target.

The power of each design comes from the linearised variance of the
statistic agentab tests (rate difference, Cliff's delta, mean difference,
quantile difference) with ``n`` tasks of ``m`` seeds (Miller 2024):

- independent tasks per arm: ``V = (B_A + B_B) / n + (W_A + W_B) / (n m)``;
- the same tasks in both arms (paired): ``V = w^2 / n + (W_A + W_B) / (n m)``
  with ``w^2`` the variance of the per-task true differences;

and a noncentral t with ``n - 1`` (paired) or ``2 (n - 1)`` degrees of
freedom. Seeds shrink only the within-task term, which is why they cannot
rescue an experiment with too few tasks when the ICC is high.

How the candidate shares task difficulty (the assumption behind ``w^2``
when the pilot has one arm):

- binary and ordinal: each task's level shares are Dirichlet around the
  pilot's shares with the pilot's ICC; the candidate shifts every task by
  the same amount on the cumulative-logit scale (proportional odds), chosen
  so that the population effect is the one asked for (a rate change, or the
  Cliff's delta of the odds ratio applied to the pilot's shares);
- continuous: the candidate adds the same amount to every task (``w^2 = 0``);
- cost and count: the candidate multiplies every run by ``1 + effect``, so
  each task keeps its place in the distribution; the quantile's variance is
  that of the indicator ``value <= quantile`` over the density there.

With a two-arm pilot and ``design="paired"``, ``w^2`` is measured from the
pilot's per-task differences instead (their variance minus the seed noise):
the discordance the pilot actually shows, when the arms share at least 5
tasks (cost and count: on the log scale, the candidate's per-task log shift
``mu + N(0, tau^2)`` with ``tau`` measured, in the formula and in
``Plan.simulate``). Every plan reports the pilot's variance components --
between-task, task-by-arm, within-task and their ratio, measured with 95%
bootstrap intervals or assumed -- as ``Plan.variance_components``
(:mod:`~agentab.power._variance`).

The pieces: :mod:`~agentab.power._pilot` reads the pilot,
:mod:`~agentab.power._components` measures the variance components and fits
the model, :mod:`~agentab.power._simulation` simulates from it, and
:mod:`~agentab.power._plan` holds the :class:`Plan`; this module searches
the designs and recommends one.

References
----------
- Miller, E. (2024). Adding error bars to evals. arXiv:2411.00640.
- Raudenbush, S. W. (1997). Statistical analysis and optimal design for
  cluster randomized trials. *Psychological Methods* 2:173-185 (the optimum
  cluster size ``m* = sqrt((c_task / c_seed) (1 - ICC) / ICC)``).
- Donner, A. & Klar, N. (2000). *Design and Analysis of Cluster Randomization
  Trials*, ch. 5 (design effect ``1 + (m - 1) ICC``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import (
    check_alpha,
    check_alternative,
    check_number,
    check_probability,
    check_whole,
    recorded_seed,
    seed_sequence,
)
from agentab.errors import PowerError
from agentab.power._arguments import check_effect
from agentab.power._components import Measured, components, variance_table
from agentab.power._heterogeneity import TYPICAL_COST_HETEROGENEITY, TYPICAL_HETEROGENEITY, check_heterogeneity
from agentab.power._one_run import one_run
from agentab.power._pilot import Pilot, read_pilot
from agentab.power._plan import Plan, SimulatedPower
from agentab.power._uncertainty import tail_warnings, tasks_interval
from agentab.stats import power as core
from agentab.traces import load_results

__all__ = ["Plan", "SimulatedPower", "plan"]

#: Most tasks per arm a design is searched up to.
MAX_TASKS = 10**7
#: Confidence level of the pilot's ICC interval.
ICC_CONFIDENCE = 0.95


def plan(
    pilot: Any,
    metric: str,
    effect: float,
    *,
    kind: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    design: str = "paired",
    seeds_per_task: int | None = None,
    cost_ratio: float = 1.0,
    cluster: str = "task_id",
    arm: str = "arm",
    baseline: Any = None,
    quantile: float = 0.95,
    alternative: str = "two-sided",
    max_tasks: int | None = None,
    max_seeds: int = 10,
    seed: Any = 12345,
    n_boot: int = 0,
    heterogeneity: float | str | None = None,
    fields: Mapping[str, str] | None = None,
    where: str | Sequence[str] | None = None,
) -> Plan:
    """How many tasks and seeds per task an experiment needs, from pilot runs.

    Parameters
    ----------
    pilot : pandas.DataFrame, agentab.Traces, or a results table's path
        Pilot runs: one row per run with the ``cluster`` (task) column and
        the ``metric`` column, e.g. from :func:`agentab.score` (Traces are
        scored first), or a per-run results table (a path: read by
        :func:`agentab.load_results`). With an ``arm`` column the
        ``baseline`` arm is read (default: an arm named "baseline"; with
        several arms and neither, an error: never the first by row order);
        a second arm lets a paired plan measure how the effect varies
        across tasks.
    metric : str
        The metric's column.
    effect : float
        The change to detect: binary, absolute change of the success rate
        (0.05 = +5 points); ordinal, proportional odds ratio (1.5);
        continuous, Cohen's d; cost and count, relative change of the
        ``quantile`` (-0.2 = 20% lower).
    kind : str, optional
        The metric's kind; by default from :func:`agentab.score`'s record or
        inferred as :func:`agentab.compare` does.
    alpha, power : float
        Significance level and target power.
    design : {"paired", "independent"}
        "paired": the same tasks in both arms (the usual benchmark); the
        candidate is assumed to keep each task's difficulty (module
        docstring). "independent": different tasks per arm.
    seeds_per_task : int, optional
        Fix the seeds per task; by default every option from 1 to
        ``max_seeds`` is listed and the cheapest recommended.
    cost_ratio : float
        Cost of a new task (writing it, its environment) over the cost of
        one more run. The cost of a design, in runs, is
        ``tasks (cost_ratio + 2 seeds)`` paired and
        ``2 tasks (cost_ratio + seeds)`` independent.
    cluster, arm, baseline : str
        Column names and the baseline arm.
    quantile : float
        The quantile for cost and count (0.95 = p95).
    alternative : {"two-sided", "greater", "less"}
        "greater" plans for a higher candidate; "larger" and "smaller" are
        read as "greater" and "less". The plan holds scipy's words.
    max_tasks : int, optional
        Tasks available: designs needing more are infeasible, and if none is
        feasible the best one within ``max_tasks`` is recommended with a
        warning.
    max_seeds : int
        Most seeds per task considered.
    seed : int, SeedSequence, Generator or None, default 12345
        Seed of the Dirichlet draws behind a binary or ordinal plan's task
        model (the value plans have always used, so the default plan is
        reproducible); None draws fresh entropy. The plan records the seed
        used (its ``seed``): passing it back gives the same plan.
    heterogeneity : float, {"typical", "model change", "none"} or None
        Paired plans: how much the effect varies from task to task, as the per-task effect's SD over
        the metric's between-task SD. None (the default) measures it on a two-arm pilot and otherwise
        assumes "typical", 0.83, the median of 78 real Terminal-Bench pairs ("model change" 0.52, their
        median for a model change under the same agent; "none" 0, every task shifted alike). Cost and
        count: measured on a two-arm pilot on the log scale; from one arm, 0 is assumed unless a ratio
        is given, and the plan says so. The plan
        states the assumption and the power of its design at half and at double of it (when 0 is
        assumed: at 0.83, or for cost and count at 0.91, the median on the log of run time of 45 real
        Terminal-Bench pairs), and ``Plan.variance_components`` shows it as assumed.
    n_boot : int
        Re-plan on this many resamples of the pilot's tasks (each with all its runs, both arms) at the
        recommended seeds per task, and report the 80% interval of the tasks needed
        (``Plan.tasks_interval``); 0 (the default) skips it (each resample costs one plan).
    fields : mapping, optional
        agentab's names -> the table's columns (``{"task_id": "instance_id",
        "outcome": "is_resolved"}``), as in :func:`agentab.load_results`
        and the CLI's ``--field NAME=KEY``.
    where : str or list of str, optional
        Row filters in :meth:`pandas.DataFrame.query` syntax, applied in
        order (``"agent == 'Droid'"``), as the CLI's ``--where``.

    Returns
    -------
    Plan

    Raises
    ------
    PowerError
        Bad settings, a metric or task column missing, fewer than 5 tasks,
        or, from a pilot with one run per task (planned for 1 seed per task, where the ICC does not
        matter), more seeds asked for, a cost or count metric, or a paired plan from one arm.

    Examples
    --------
    >>> import agentab
    >>> runs = agentab.score(agentab.datasets.example_experiment(seed=1, n_tasks=20, n_seeds=3))
    >>> pilot = runs[runs["arm"] == "baseline"]
    >>> p = agentab.power.plan(pilot, "passed", 0.05)
    >>> p.tasks > 20, p.power >= 0.8
    (True, True)
    """
    # Long only by its docstring: the body is the sequence of steps below.
    alpha, target, cost_ratio, quantile, alternative, seeds, max_tasks = _settings(
        alpha, power, design, seeds_per_task, cost_ratio, max_tasks, max_seeds, alternative, quantile)
    sequence = seed_sequence(seed, PowerError)
    if fields is not None or where is not None or isinstance(pilot, (str, os.PathLike)):
        pilot = load_results(pilot, fields=fields, where=where)
    data, kind = read_pilot(pilot, metric, kind, cluster, arm, baseline)
    effect = _plan_effect(kind, effect)
    paired = design == "paired"
    single = one_run(data)
    if single:
        if seeds_per_task is not None and int(seeds_per_task) > 1:
            raise PowerError(f"seeds_per_task={seeds_per_task} cannot be planned from a pilot with one run per task "
                             "(the ICC cannot be measured); run 2 or more seeds of some tasks, or plan 1 seed")
        seeds = [1]
    hetero = check_heterogeneity(heterogeneity)
    search = _Search(data, kind, effect, quantile, paired, alpha, target, alternative, max_tasks, cost_ratio, sequence,
                     hetero)
    measured, table = search.run(seeds)
    best, warnings = _recommend(table, max_tasks, target)
    comps, fit = measured.components, measured.anova
    min_tasks = comps.tasks_needed(10**6, paired, alpha, target, alternative) or MAX_TASKS
    between = comps.between(paired)
    optimum = math.sqrt(cost_ratio * comps.within / ((2.0 if paired else 1.0) * between)) if between > 0 else math.inf
    if not single:
        warnings += _seed_warnings(comps, paired, max(int(table["seeds_per_task"].max()), int(max_seeds)), min_tasks)
    notes_extra = _heterogeneity_notes(measured, search, best)
    notes = list(data.notes) + measured.notes + _uncertainty_notes(fit, search, best) + notes_extra
    warnings += tail_warnings(data, kind, quantile)
    interval = None
    if check_whole(n_boot, "n_boot", 0, PowerError):
        m = int(best["seeds_per_task"])
        tau = measured.model.log_or_sd if measured.model is not None and measured.model.log_or_sd > 0 else None

        def replan(resampled: Pilot) -> float | None:
            again = _Search(resampled, kind, effect, quantile, paired, alpha, target, alternative, None, cost_ratio,
                            sequence, hetero, tau)
            row = again.run([m])[1].iloc[0]
            return float(row["tasks"]) if bool(row["feasible"]) else None

        interval = tasks_interval(data, replan, int(n_boot), np.random.default_rng(sequence.spawn(1)[0]))
    return Plan(
        metric=metric, kind=kind, design=design, effect=effect, delta=float(comps.delta), alpha=alpha, target=target,
        alternative=alternative, tasks=int(best["tasks"]), seeds_per_task=int(best["seeds_per_task"]),
        runs_per_arm=int(best["runs_per_arm"]), total_runs=int(best["total_runs"]), power=float(best["power"]),
        cost=float(best["cost"]), table=table, icc=fit.icc, icc_ci=fit.icc_ci, pilot_tasks=fit.n_groups,
        pilot_runs=fit.n_runs, optimum_seeds=optimum, min_tasks=min_tasks, components=comps, cost_ratio=cost_ratio,
        assumptions=tuple(measured.assumptions), notes=tuple(notes), warnings=tuple(warnings), model=measured.model,
        seed=recorded_seed(sequence), tasks_interval=interval,
        variance_components=variance_table(data, measured, paired, sequence),
    )


def _settings(alpha: Any, power: Any, design: Any, seeds: Any, cost_ratio: Any, max_tasks: Any, max_seeds: Any,
              alternative: Any, quantile: Any) -> tuple[float, float, float, float, str, list[int], int | None]:
    """The plan's settings, checked: alpha, target power, cost ratio, quantile, alternative, seeds options, max tasks."""
    alpha = check_alpha(alpha, PowerError)
    target = check_probability(power, "power", PowerError)
    quantile = check_probability(quantile, "quantile", PowerError)
    if design not in ("paired", "independent"):
        raise PowerError(f"design must be 'paired' (the same tasks in both arms) or 'independent', got {design!r}")
    if seeds is not None:
        seeds = check_whole(seeds, "seeds_per_task", 1, PowerError)
    ratio = check_number(cost_ratio, "cost_ratio", PowerError)
    if ratio < 0:
        raise PowerError(f"cost_ratio (a new task's cost / an extra seed's) must be >= 0, got {ratio:g}")
    if max_tasks is not None:
        max_tasks = check_whole(max_tasks, "max_tasks", 2, PowerError)
    max_seeds = check_whole(max_seeds, "max_seeds", 1, PowerError)
    alternative = check_alternative(alternative, PowerError)
    options = [seeds] if seeds is not None else list(range(1, max_seeds + 1))
    return alpha, target, ratio, quantile, alternative, options, max_tasks


def _plan_effect(kind: str, effect: Any) -> float:
    if np.ndim(effect) != 0:
        raise PowerError(f"plan takes one number as effect (for ordinal, an odds ratio), got {effect!r}")
    return check_effect(kind, effect, None)


class _Search:
    """The designs of one plan: the pilot's components, and the fewest tasks each seeds-per-task option needs."""

    def __init__(self, pilot: Pilot, kind: str, effect: float, quantile: float, paired: bool, alpha: float,
                 target: float, alternative: str, max_tasks: int | None, cost_ratio: float,
                 sequence: np.random.SeedSequence, heterogeneity: float | None = None, tau: float | None = None) -> None:
        self.pilot, self.kind, self.effect, self.quantile, self.paired = pilot, kind, effect, quantile, paired
        self.heterogeneity, self.tau = heterogeneity, tau
        self.alpha, self.target, self.alternative = alpha, target, alternative
        self.max_tasks, self.cost_ratio, self.sequence = max_tasks, cost_ratio, sequence
        self.bandwidth: float | None = None  # cost and count: the quantile density's bandwidth of the last pass

    def measure(self, quantile: float, bandwidth: float | None = None, heterogeneity: Any = "plan's") -> Measured:
        """The pilot's components at ``quantile`` (cost and count; ``bandwidth`` for the quantile's density).

        ``heterogeneity`` replaces the plan's (the sensitivity of a cost plan to its assumption).
        """
        h = self.heterogeneity if isinstance(heterogeneity, str) else heterogeneity
        return components(self.pilot, self.kind, self.effect, quantile, self.paired, ICC_CONFIDENCE, self.sequence,
                          bandwidth, h, self.tau)

    def run(self, seeds: list[int]) -> tuple[Measured, pd.DataFrame]:
        """The components and the design table (one row per option in ``seeds``)."""
        measured = self.measure(self.quantile)
        sign = np.sign(measured.components.delta)
        if (self.alternative == "greater" and sign < 0) or (self.alternative == "less" and sign > 0):
            raise PowerError(f"alternative={self.alternative!r} but the effect goes the other way "
                             f"(delta {measured.components.delta:+.4g})")
        table = self.table(measured.components, seeds)
        if self.kind in ("cost", "count"):
            # The density that matters is the one at the scale the quantile wanders at the planned size (its
            # sampling SD in probability units), not Hall-Sheather's estimation bandwidth: a second pass at the
            # first pass's recommendation (benchmarks/validate_power.py measured the difference).
            first = table.sort_values(["cost", "total_runs"], kind="stable").iloc[0]
            n1, m1 = int(first["tasks"]), int(first["seeds_per_task"])
            comps = measured.components
            h = measured.model.density * math.sqrt((comps.between_a + comps.within_a / m1) / n1)
            self.bandwidth = h
            measured = self.measure(self.quantile, h)
            table = self.table(measured.components, seeds)
        return measured, table

    def table(self, comps: core.Components, seeds: list[int]) -> pd.DataFrame:
        """One row per seeds-per-task option: the fewest tasks reaching the target (or ``max_tasks``), cost and power."""
        rows = []
        paired, alpha, alternative, max_tasks = self.paired, self.alpha, self.alternative, self.max_tasks
        for m in seeds:
            n = comps.tasks_needed(m, paired, alpha, self.target, alternative)
            feasible = n is not None and (max_tasks is None or n <= max_tasks)
            shown = int(max_tasks) if not feasible and max_tasks is not None else n
            if shown is None:
                continue
            cost = shown * (self.cost_ratio + 2 * m) if paired else 2 * shown * (self.cost_ratio + m)
            rows.append({
                "tasks": shown, "seeds_per_task": m, "runs_per_arm": shown * m, "total_runs": 2 * shown * m,
                "cost": float(cost), "power": float(comps.power(shown, m, paired, alpha, alternative)),
                "feasible": feasible,
            })
        if not rows:
            raise PowerError(f"no design up to {MAX_TASKS:,} tasks reaches power {self.target:g}: the effect is too "
                             "small for this metric")
        return pd.DataFrame(rows)


def _recommend(table: pd.DataFrame, max_tasks: int | None, target: float) -> tuple[pd.Series, list[str]]:
    """The cheapest feasible design (else the most powerful within ``max_tasks``, with a warning)."""
    feasible_rows = table[table["feasible"]]
    if len(feasible_rows):
        return feasible_rows.sort_values(["cost", "total_runs"], kind="stable").iloc[0], []
    best = table.sort_values(["power", "cost"], ascending=[False, True], kind="stable").iloc[0]
    return best, [
        f"no design within {max_tasks} tasks reaches power {target:g}; the best, {int(best['tasks'])} tasks x "
        f"{int(best['seeds_per_task'])} seeds, reaches {best['power']:.2f}. Seeds cannot make up for too few tasks"
    ]


def _seed_warnings(comps: core.Components, paired: bool, m_most: int, min_tasks: int) -> list[str]:
    """A warning when variation between tasks dominates even at the most seeds considered."""
    between = comps.between(paired)
    share = between / (between + comps.within / m_most) if between + comps.within > 0 else 0.0
    if share < 0.5:
        return []
    return [
        f"adding seeds cannot rescue an experiment with too few tasks: even at {m_most} seeds per task, variation "
        f"between tasks{' (of the effect)' if paired else ''} is {share:.0%} of a task's variance, and unlimited "
        f"seeds per task still need at least {min_tasks:,} tasks per arm"
    ]


def _heterogeneity_notes(measured: Measured, search: _Search, best: pd.Series) -> list[str]:
    """The assumed task-to-task variation of the effect at half and double: the recommended design's power.

    A variation of the per-task effects with variance ``h^2 S`` (``S`` the mean between-task variance)
    lowers the covariance of a task's two arms by half of it, so moving from ``h`` to ``h'`` moves the
    covariance by ``(h^2 - h'^2) S / 2`` (the algebra a measured variation enters through). Cost and
    count re-measure the quantile's components with the other heterogeneity (the tail moves too).
    """
    h = measured.heterogeneity
    if not search.paired or h is None:
        return []
    comps = measured.components
    scale = (comps.between_a + comps.between_b) / 2.0
    tasks, seeds = int(best["tasks"]), int(best["seeds_per_task"])
    alpha, alternative = search.alpha, search.alternative

    def power_at(other: float) -> float:
        if search.kind in ("cost", "count"):
            moved = search.measure(search.quantile, search.bandwidth, other).components
        else:
            moved = dataclasses.replace(comps, covariance=comps.covariance + (h * h - other * other) * scale / 2.0)
        return float(moved.power(tasks, seeds, True, alpha, alternative))

    if h == 0:
        cost = search.kind in ("cost", "count")
        typical = TYPICAL_COST_HETEROGENEITY if cost else TYPICAL_HETEROGENEITY
        on = " on the log of run time" if cost else ""
        return [f"if the effect varies across tasks as in real Terminal-Bench pairs{on} (heterogeneity "
                f"{typical:g}), this design's power is {power_at(typical):.2f}"]
    return [f"sensitivity to the assumed heterogeneity {h:g}: this design's power is {power_at(0.0):.2f} if the effect "
            f"is the same on every task (0), {power_at(h / 2):.2f} at half of it ({h / 2:g}) and {power_at(2 * h):.2f} "
            f"at double ({2 * h:g}); a pilot that ran both arms on the same tasks measures it"]


def _uncertainty_notes(fit: core.Anova, search: _Search, best: pd.Series) -> list[str]:
    """Notes on what the plan cannot pin down: an uncertain ICC, a tail harder to measure than the median."""
    notes = []
    if fit.icc_ci[1] - fit.icc_ci[0] > 0.3:
        notes.append(
            f"the pilot's ICC is uncertain (95% CI {fit.icc_ci[0]:.2f} to {fit.icc_ci[1]:.2f}); a larger pilot "
            "(more tasks) would firm up the plan"
        )
    if search.kind in ("cost", "count") and search.quantile > 0.5:
        try:
            median = search.measure(0.5).components
            n50 = median.tasks_needed(int(best["seeds_per_task"]), search.paired, search.alpha, search.target,
                                      search.alternative)
            if n50 is not None and n50 < best["tasks"]:
                notes.append(
                    f"the p{search.quantile * 100:g} needs {int(best['tasks']):,} tasks, the median {n50:,} for the "
                    "same relative change: the tail is harder to measure"
                )
        except PowerError:
            pass
    return notes
