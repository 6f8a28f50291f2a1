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
the discordance the pilot actually shows (binary, ordinal and continuous
metrics, when the arms share at least 5 tasks; cost and count keep the
model).

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
import html
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentab.errors import PowerError
from agentab.stats import _power as core

__all__ = ["Plan", "SimulatedPower", "plan"]

MIN_TASKS = 5


@dataclass(frozen=True)
class SimulatedPower:
    """Power of a design measured by running agentab's test on simulated experiments."""

    power: float
    mc_se: float
    confidence_interval: tuple[float, float]
    n_sims: int
    tasks: int
    seeds_per_task: int
    formula_power: float

    def __str__(self) -> str:
        low, high = self.confidence_interval
        return (
            f"simulated power {self.power:.3f} (95% CI {low:.3f} to {high:.3f}, {self.n_sims:,} experiments) "
            f"with {self.tasks:,} tasks x {self.seeds_per_task} seed(s); the plan's formula gives {self.formula_power:.3f}"
        )


@dataclass(frozen=True)
class _Model:
    """What a simulated experiment draws from."""

    kind: str
    paired: bool
    shares: np.ndarray | None = None  # binary/ordinal: pilot level shares
    levels: np.ndarray | None = None
    icc: float = 0.0
    log_or_task: float = 0.0  # the task-level shift
    mean: float = 0.0  # continuous
    between: float = 0.0
    within: float = 0.0
    delta: float = 0.0
    task_effects: np.ndarray | None = None  # cost: each pilot task's effect on the log scale
    residuals: np.ndarray | None = None  # cost: the pilot's within-task residuals on the log scale
    offset: float = 0.0  # cost: log(value + offset)
    factor: float = 1.0
    quantile: float = 0.95
    density: float = math.nan  # cost: the density at the quantile


@dataclass(frozen=True)
class Plan:
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
    optimum_seeds : float
        The classic cost-optimal seeds per task, ``sqrt(cost_ratio W / (k B))``
        (k = 2 paired, 1 independent; Raudenbush 1997), inf when tasks do not
        vary. The table's cheapest row can differ a little: it also counts
        the t and permutation-null corrections.
    min_tasks : int
        Tasks per arm needed even with unlimited seeds per task.
    assumptions, notes, warnings : tuple of str
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
    model: _Model = field(default=None, repr=False)  # type: ignore[assignment]

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
        seed: Any = None,
    ) -> SimulatedPower:
        """Check the plan: run agentab's own test on ``n_sims`` experiments simulated from the pilot's model.

        Each experiment draws ``tasks`` tasks of ``seeds_per_task`` runs per
        arm (default: the recommendation) from the model described in the
        module docstring (for cost, the pilot's own tasks and runs,
        resampled), applies the effect to the candidate, runs the test
        :func:`agentab.compare` would run (paired or clustered, with
        ``n_resamples`` permutations) and counts p-values below ``alpha``.

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
        n = self.tasks if tasks is None else int(tasks)
        m = self.seeds_per_task if seeds_per_task is None else int(seeds_per_task)
        if n < 2 or m < 1 or n_sims < 1:
            raise PowerError(f"simulate needs tasks >= 2, seeds_per_task >= 1 and n_sims >= 1 (got {n}, {m}, {n_sims})")
        rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
        from agentab.errors import StatsWarning

        with warnings.catch_warnings():  # each simulated experiment's caveats (few runs in a tail) are not the user's
            warnings.simplefilter("ignore", StatsWarning)
            pvals = np.array([_simulated_pvalue(self.model, n, m, self.alpha, self.alternative, n_resamples, rng)
                              for _ in range(n_sims)])
        rate = float(np.mean(pvals < self.alpha))
        se = math.sqrt(max(rate * (1 - rate), 1e-12) / n_sims)
        ci = (max(0.0, rate - 1.96 * se), min(1.0, rate + 1.96 * se))
        return SimulatedPower(rate, se, ci, n_sims, n, m, float(self.power_at(n, m)))

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
        low, high = self.icc_ci
        lines = [
            (
                f"Plan for {self.metric} ({self.kind}), {self.design} design: detect {self.effect_text()} "
                f"at alpha {self.alpha:g} ({self.alternative}) with power {self.target:.2f}"
            ),
            (
                f"Recommended: {self.tasks:,} tasks x {self.seeds_per_task} seed(s) per task = {self.runs_per_arm:,} "
                f"runs per arm ({self.total_runs:,} in all), power {self.power:.3f}"
            ),
            f"Pilot: {self.pilot_tasks} tasks, {self.pilot_runs} runs; ICC {self.icc:.2f} (95% CI {low:.2f} to {high:.2f})",
        ]
        opt = "unbounded" if not math.isfinite(self.optimum_seeds) else f"{self.optimum_seeds:.1f}"
        lines.append(
            f"A new task costs {self.cost_ratio:g} run(s): the recommendation has {self.seeds_per_task} seed(s) per "
            f"task (the classic optimum sqrt(cost ratio x within / between) is {opt}); even with unlimited seeds, at "
            f"least {self.min_tasks:,} tasks per arm are needed"
        )
        return lines

    def _shown(self) -> pd.DataFrame:
        """The table as displayed: whole-run costs, and no ``feasible`` column when every row is."""
        shown = self.table.drop(columns=["feasible"]) if self.table["feasible"].all() else self.table.copy()
        shown["cost"] = shown["cost"].round().astype(int)
        shown["power"] = shown["power"].round(3)
        return shown

    def __str__(self) -> str:
        parts = self._header() + ["", self._shown().to_string(index=False)]
        parts += [f"assumption: {a}" for a in self.assumptions]
        parts += [f"note: {n}" for n in self.notes]
        parts += [f"warning: {w}" for w in self.warnings]
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        def items(texts: tuple[str, ...]) -> str:
            return "".join(f"<li>{html.escape(t)}</li>" for t in texts)

        head = "".join(f"<div>{html.escape(line)}</div>" for line in self._header())
        parts = [f"<div>{head}", self._shown().to_html(index=False, border=0)]
        for title, texts in (("Assumptions", self.assumptions), ("Notes", self.notes), ("Warnings", self.warnings)):
            if texts:
                parts.append(f"<div><b>{title}</b><ul>{items(texts)}</ul></div>")
        return "".join(parts) + "</div>"


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class _Pilot:
    values: np.ndarray  # baseline arm's known values
    tasks: np.ndarray  # task codes aligned with values
    other: tuple[np.ndarray, np.ndarray] | None  # the second arm's values and task codes, if any
    levels: np.ndarray | None  # ordinal/binary levels (sorted values)
    notes: tuple[str, ...]


def _kind_of(table: pd.DataFrame, metric: str) -> str:
    from agentab.scoring import infer_kind, metric_kinds

    kinds = metric_kinds(table)
    if metric in kinds.index:
        return str(kinds.loc[metric, "kind"])
    if isinstance(table[metric].dtype, pd.CategoricalDtype) and table[metric].cat.ordered:
        return "ordinal"
    inferred = infer_kind(table[metric])
    if inferred is None:
        raise PowerError(f"column {metric!r} is not numeric; say kind= (binary, ordinal, continuous, cost, count)")
    return inferred


def _numeric(column: pd.Series, name: str) -> np.ndarray:
    if isinstance(column.dtype, pd.CategoricalDtype):
        if not column.cat.ordered:
            raise PowerError(f"column {name!r} is an unordered categorical; an ordinal metric needs ordered levels")
        codes = column.cat.codes.to_numpy(dtype=float)
        return np.where(codes < 0, np.nan, codes)
    try:
        return pd.to_numeric(column, errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise PowerError(f"column {name!r} has values that are not numbers ({exc})") from None


def _pilot_iv(pilot: Any, metric: Any, kind: Any, cluster: Any, arm: Any, baseline: Any) -> tuple[_Pilot, str]:
    from agentab.traces import Traces

    if isinstance(pilot, Traces):
        from agentab.scoring import score

        pilot = score(pilot)
    if not isinstance(pilot, pd.DataFrame):
        raise PowerError(f"pilot must be a DataFrame of runs (e.g. from agentab.score) or Traces, got {type(pilot).__name__}")
    for name, what in ((metric, "metric"), (cluster, "task (cluster=)")):
        if not isinstance(name, str) or name not in pilot.columns:
            raise PowerError(f"no {what} column {name!r} in the pilot (columns: {', '.join(map(str, pilot.columns))})")
    if pilot[cluster].isna().any():
        raise PowerError(f"column {cluster!r} has {int(pilot[cluster].isna().sum())} runs without a task")
    notes: list[str] = []
    other = None
    frame = pilot
    if arm in pilot.columns and pilot[arm].nunique() > 0:
        arms = list(dict.fromkeys(str(a) for a in pd.unique(pilot[arm].dropna())))
        if baseline is not None and str(baseline) not in arms:
            raise PowerError(f"baseline arm {baseline!r} not in column {arm!r} (arms: {', '.join(arms)})")
        if baseline is None:
            lowered = [a.lower() for a in arms]
            base = arms[lowered.index("baseline")] if "baseline" in lowered else arms[0]
            if len(arms) > 1 and "baseline" not in lowered:
                notes.append(f"baseline arm taken to be {base!r} (first in the pilot); pass baseline= to choose")
        else:
            base = str(baseline)
        labels = pilot[arm].astype(str)
        frame = pilot[labels == base]
        rest = [a for a in arms if a != base]
        if len(rest) == 1:
            other = pilot[labels == rest[0]]
        elif len(rest) > 1:
            notes.append(f"arms {', '.join(rest)} ignored: the plan reads the baseline arm {base!r}")
    elif baseline is not None:
        raise PowerError(f"baseline={baseline!r} given but the pilot has no arm column {arm!r}")
    kind = _kind_of(pilot, metric) if kind is None else kind
    if kind not in ("binary", "ordinal", "continuous", "cost", "count"):
        raise PowerError(f"kind must be one of binary, ordinal, continuous, cost, count, got {kind!r}")

    def known(part: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        values = _numeric(part[metric], metric)
        if np.isinf(values).any():
            raise PowerError(f"column {metric!r} has {int(np.isinf(values).sum())} infinite value(s)")
        ok = ~np.isnan(values)
        return values[ok], part[cluster].astype(str).to_numpy()[ok]

    values, tasks = known(frame)
    missing = len(frame) - len(values)
    if missing:
        notes.append(f"{missing} pilot run(s) without a value of {metric!r} left out")
    if kind == "binary" and not np.isin(values, (0.0, 1.0)).all():
        raise PowerError(f"column {metric!r} is read as binary but has values other than 0/1 (e.g. {values[~np.isin(values, (0.0, 1.0))][0]:g})")
    if kind in ("cost", "count") and np.any(values < 0):
        raise PowerError(f"column {metric!r} has negative values; cost and counts are >= 0")
    n_tasks = len(np.unique(tasks))
    if n_tasks < MIN_TASKS:
        raise PowerError(
            f"the pilot has {n_tasks} task(s) with a value of {metric!r}; at least {MIN_TASKS} are needed to estimate "
            "the between-task variance (ICC)"
        )
    if len(values) == n_tasks:
        raise PowerError(
            "the pilot has one run per task, so the ICC (within- vs between-task variance) cannot be estimated; "
            "run at least 2 seeds of some tasks"
        )
    levels = None
    if kind in ("binary", "ordinal"):
        pooled = values if other is None else np.concatenate([values, known(other)[0]])
        levels = np.unique(pooled)
        if kind == "binary":
            levels = np.array([0.0, 1.0])
    other_known = known(other) if other is not None else None
    if other_known is not None and len(other_known[0]) == 0:
        other_known = None
    return _Pilot(values, tasks, other_known, levels, tuple(notes)), kind


def _settings_iv(alpha: Any, power: Any, design: Any, seeds: Any, cost_ratio: Any, max_tasks: Any, max_seeds: Any,
                 alternative: Any, quantile: Any) -> None:
    from agentab.power.formulas import ALTERNATIVES, _check_number, _check_probability, _check_seeds

    _check_probability(alpha, "alpha")
    _check_probability(power, "power")
    _check_probability(quantile, "quantile")
    if design not in ("paired", "independent"):
        raise PowerError(f"design must be 'paired' (the same tasks in both arms) or 'independent', got {design!r}")
    if seeds is not None:
        _check_seeds(seeds)
    ratio = _check_number(cost_ratio, "cost_ratio")
    if ratio < 0:
        raise PowerError(f"cost_ratio (a new task's cost / an extra seed's) must be >= 0, got {ratio:g}")
    if max_tasks is not None and (isinstance(max_tasks, bool) or not isinstance(max_tasks, (int, np.integer)) or max_tasks < 2):
        raise PowerError(f"max_tasks must be a whole number >= 2, got {max_tasks!r}")
    if isinstance(max_seeds, bool) or not isinstance(max_seeds, (int, np.integer)) or max_seeds < 1:
        raise PowerError(f"max_seeds must be a whole number >= 1, got {max_seeds!r}")
    if alternative not in ALTERNATIVES:
        raise PowerError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")


# --------------------------------------------------------------------------- components


def _task_shares(values: np.ndarray, tasks: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Level shares of the arm with every task weighted equally."""
    _, t = np.unique(tasks, return_inverse=True)
    codes = np.searchsorted(levels, values)
    counts = np.zeros((t.max() + 1, len(levels)))
    np.add.at(counts, (t, codes), 1.0)
    return (counts / counts.sum(axis=1, keepdims=True)).mean(axis=0)


def _task_weights(tasks: np.ndarray) -> np.ndarray:
    _, t, counts = np.unique(tasks, return_inverse=True, return_counts=True)
    return 1.0 / (counts[t] * len(counts))


def _discordance(pilot: _Pilot, score: Any, within: float) -> float | None:
    """Variance of the per-task true differences seen in a two-arm pilot (method of moments), or None."""
    if pilot.other is None:
        return None
    a = pd.DataFrame({"t": pilot.tasks, "s": score(pilot.values)}).groupby("t")["s"].agg(["mean", "size"])
    b = pd.DataFrame({"t": pilot.other[1], "s": score(pilot.other[0])}).groupby("t")["s"].agg(["mean", "size"])
    both = a.merge(b, left_index=True, right_index=True, suffixes=("_a", "_b"))
    if len(both) < MIN_TASKS:
        return None
    d = both["mean_b"] - both["mean_a"]
    noise = within * np.mean(1.0 / both["size_a"] + 1.0 / both["size_b"])
    return max(0.0, float(d.var(ddof=1)) - float(noise))


def _level_components(pilot: _Pilot, kind: str, effect: float, paired: bool, conf: float):
    """Binary and ordinal: the Dirichlet task model around the pilot's shares, shifted on the cumulative-logit scale."""
    from scipy.optimize import brentq

    shares = _task_shares(pilot.values, pilot.tasks, pilot.levels)
    if np.count_nonzero(shares) < 2:
        raise PowerError(f"every pilot run has the same value ({pilot.levels[np.argmax(shares)]:g}): no variance to plan with")
    below = np.cumsum(shares) - shares
    psi = below - (1.0 - below - shares)  # P(X < y) - P(X > y): the run score of Cliff's delta

    def score(values: np.ndarray) -> np.ndarray:
        return psi[np.searchsorted(pilot.levels, values)]

    fit = core.anova(score(pilot.values), pilot.tasks, conf)
    if kind == "binary":
        target = effect
        if not 0.0 < shares[1] + effect < 1.0:
            raise PowerError(
                f"the pilot's success rate {shares[1]:.3f} + effect {effect:g} is not a rate strictly between 0 and 1 "
                "(every task would have to succeed, or fail, with certainty)"
            )
    else:
        target = float(core.cliff_delta(shares, core.po_shift(shares, math.log(effect))))
    log_or = brentq(lambda b: core.dirichlet_components(shares, fit.icc, b)[0].delta - target, -30, 30, xtol=1e-10)
    comps, _ = core.dirichlet_components(shares, fit.icc, log_or)
    model = _Model(kind, paired, shares=shares, levels=pilot.levels, icc=fit.icc, log_or_task=log_or)
    assumption = (
        "the candidate keeps each task's difficulty: every task's level shares shift by the same log odds "
        f"({log_or:+.3f}), chosen so that the population effect is the one asked for"
    )
    return comps, fit, model, assumption, score


def _continuous_components(pilot: _Pilot, effect: float, paired: bool, conf: float):
    """Continuous: ANOVA components; Cohen's d on the run-level SD; the same shift for every task."""
    fit = core.anova(pilot.values, pilot.tasks, conf)
    sd = math.sqrt(fit.between + fit.within)
    if sd == 0:
        raise PowerError("every pilot run has the same value: no variance to plan with")
    delta = effect * sd
    comps = core.Components(delta, fit.between, fit.between, fit.between, fit.within, fit.within)
    model = _Model("continuous", paired, mean=float(pilot.values.mean()), between=fit.between, within=fit.within,
                   delta=delta)
    assumption = f"effect is Cohen's d on the pilot's run-level SD ({sd:.4g}); the candidate adds the same amount to every task"
    return comps, fit, model, assumption, lambda values: values


def _quantile_components(pilot: _Pilot, kind: str, effect: float, quantile: float, paired: bool, conf: float,
                         bandwidth: float | None = None):
    """Cost and count: the quantile of a log-scale task-effect model of the pilot, every candidate run times 1 + effect.

    The tail of a small pilot is a handful of runs; its task structure is read
    on the log scale from all runs, and the formula and the simulation both
    work on the model's distribution (a virtual pilot).
    """
    raw_q, tied = core.quantile_tie(pilot.values, quantile, _task_weights(pilot.tasks))
    _check_untied(kind, quantile, raw_q, tied, "pilot")
    effects, residuals, offset, fit = _log_scale_tasks(pilot.values, pilot.tasks, conf)
    virtual = _virtual_pilot(effects, residuals, offset)
    weights = _task_weights(virtual.tasks)
    xq = float(core.weighted_quantiles(virtual.values, weights, [quantile])[0])
    dens = core.quantile_density(virtual.values, quantile, weights, bandwidth)
    if not math.isfinite(dens) or xq <= 0:
        raise PowerError(
            f"the pilot's p{quantile * 100:g} of {kind} sits on tied values (or is 0), so the quantile's density "
            "cannot be estimated; try another quantile"
        )
    below = core.anova((virtual.values <= xq).astype(float), virtual.tasks, conf)
    g = 1.0 + effect
    scale = dens**2
    comps = core.Components(
        effect * xq,
        below.between / scale,
        g * g * below.between / scale,
        g * below.between / scale,
        below.within / scale,
        g * g * below.within / scale,
        *_quantile_null(virtual, weights, g, quantile, bandwidth),
    )
    model = _Model(kind, paired, task_effects=effects, residuals=residuals, offset=offset, factor=g, quantile=quantile,
                   density=dens)
    assumption = (
        f"{kind} follows log(value{f' + {offset:g}' if offset else ''}) = task effect + run noise, fitted on "
        f"every pilot run (the ICC shown is on that scale); the candidate multiplies every run by {g:g}, so "
        f"each task keeps its place; the p{quantile * 100:g} ({xq:.4g}) varies as the share of runs below it "
        f"(its ICC {below.icc:.2f}), over the density there ({dens:.3g} per unit)"
    )
    return comps, fit, model, assumption, None


def _components(pilot: _Pilot, kind: str, effect: float, quantile: float, paired: bool, conf: float,
                bandwidth: float | None = None):
    """The statistic's variance components, the ANOVA, the model to simulate from, assumptions and notes."""
    if kind in ("binary", "ordinal"):
        comps, fit, model, assumption, score = _level_components(pilot, kind, effect, paired, conf)
    elif kind == "continuous":
        comps, fit, model, assumption, score = _continuous_components(pilot, effect, paired, conf)
    else:
        comps, fit, model, assumption, score = _quantile_components(pilot, kind, effect, quantile, paired, conf, bandwidth)
    assumptions, notes = [assumption], []
    if paired and pilot.other is not None and score is None:
        notes.append("the pilot's second arm is not used for cost and count: the plan assumes every run scales alike")
    if paired and score is not None:
        w2 = _discordance(pilot, score, fit.within)
        if w2 is None and pilot.other is not None:
            notes.append(
                f"the pilot's two arms share fewer than {MIN_TASKS} tasks: the task-to-task variation of the effect "
                "comes from the model, not from the pilot"
            )
        if w2 is not None:
            comps = dataclasses.replace(comps, covariance=(comps.between_a + comps.between_b - w2) / 2.0)
            assumptions.append(f"task-to-task variation of the effect measured on the pilot's two arms (variance {w2:.4g})")
    if fit.between == 0:
        notes.append("the pilot shows no variance between tasks (ICC 0): seeds are as informative as tasks")
    return comps, fit, model, assumptions, notes


# --------------------------------------------------------------------------- the plan


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
) -> Plan:
    """How many tasks and seeds per task an experiment needs, from pilot runs.

    Parameters
    ----------
    pilot : pandas.DataFrame or agentab.Traces
        Pilot runs: one row per run with the ``cluster`` (task) column and
        the ``metric`` column, e.g. from :func:`agentab.score` (Traces are
        scored first). With an ``arm`` column the ``baseline`` arm is read
        (default: an arm named "baseline", else the first); a second arm
        lets a paired plan measure how the effect varies across tasks.
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
    alternative : {"two-sided", "larger", "smaller"}
    max_tasks : int, optional
        Tasks available: designs needing more are infeasible, and if none is
        feasible the best one within ``max_tasks`` is recommended with a
        warning.
    max_seeds : int
        Most seeds per task considered.

    Returns
    -------
    Plan

    Raises
    ------
    PowerError
        Bad settings, a metric or task column missing, fewer than 5 tasks,
        or one run per task (no ICC).

    Examples
    --------
    >>> import agentab
    >>> runs = agentab.score(agentab.datasets.example_experiment(seed=1, n_tasks=20, n_seeds=3))
    >>> pilot = runs[runs["arm"] == "baseline"]
    >>> p = agentab.power.plan(pilot, "passed", 0.05)
    >>> p.tasks > 20, p.power >= 0.8
    (True, True)
    """
    from agentab.power.formulas import _ALIASES

    alternative = _ALIASES.get(alternative, alternative)
    _settings_iv(alpha, power, design, seeds_per_task, cost_ratio, max_tasks, max_seeds, alternative, quantile)
    data, kind = _pilot_iv(pilot, metric, kind, cluster, arm, baseline)
    effect = _plan_effect_iv(kind, effect)
    paired = design == "paired"
    alpha, target, cost_ratio = float(alpha), float(power), float(cost_ratio)
    comps, fit, model, assumptions, notes = _components(data, kind, effect, float(quantile), paired, 0.95)
    sign = np.sign(comps.delta)
    if (alternative == "larger" and sign < 0) or (alternative == "smaller" and sign > 0):
        raise PowerError(f"alternative={alternative!r} but the effect goes the other way (delta {comps.delta:+.4g})")

    seeds = [int(seeds_per_task)] if seeds_per_task is not None else list(range(1, int(max_seeds) + 1))
    table = _design_table(comps, seeds, paired, alpha, target, alternative, max_tasks, cost_ratio)
    if kind in ("cost", "count"):
        # The density that matters is the one at the scale the quantile wanders at the planned size (its
        # sampling SD in probability units), not Hall-Sheather's estimation bandwidth: a second pass at the
        # first pass's recommendation (benchmarks/validate_power.py measured the difference).
        first = table.sort_values(["cost", "total_runs"], kind="stable").iloc[0]
        n1, m1 = int(first["tasks"]), int(first["seeds_per_task"])
        h = model.density * math.sqrt((comps.between_a + comps.within_a / m1) / n1)
        comps, fit, model, assumptions, notes = _components(data, kind, effect, float(quantile), paired, 0.95, h)
        table = _design_table(comps, seeds, paired, alpha, target, alternative, max_tasks, cost_ratio)
    warnings: list[str] = []
    feasible_rows = table[table["feasible"]]
    if len(feasible_rows):
        best = feasible_rows.sort_values(["cost", "total_runs"], kind="stable").iloc[0]
    else:
        best = table.sort_values(["power", "cost"], ascending=[False, True], kind="stable").iloc[0]
        warnings.append(
            f"no design within {max_tasks} tasks reaches power {target:g}; the best, {int(best['tasks'])} tasks x "
            f"{int(best['seeds_per_task'])} seeds, reaches {best['power']:.2f}. Seeds cannot make up for too few tasks"
        )

    between = comps.between(paired)
    min_tasks = comps.tasks_needed(10**6, paired, alpha, target, alternative) or 10**7
    k = 2.0 if paired else 1.0
    optimum = math.sqrt(cost_ratio * comps.within / (k * between)) if between > 0 else math.inf
    m_most = max(int(table["seeds_per_task"].max()), int(max_seeds))
    share = between / (between + comps.within / m_most) if between + comps.within > 0 else 0.0
    if share >= 0.5:
        warnings.append(
            f"adding seeds cannot rescue an experiment with too few tasks: even at {m_most} seeds per task, variation "
            f"between tasks{' (of the effect)' if paired else ''} is {share:.0%} of a task's variance, and unlimited "
            f"seeds per task still need at least {min_tasks:,} tasks per arm"
        )
    if fit.icc_ci[1] - fit.icc_ci[0] > 0.3:
        notes.append(
            f"the pilot's ICC is uncertain (95% CI {fit.icc_ci[0]:.2f} to {fit.icc_ci[1]:.2f}); a larger pilot "
            "(more tasks) would firm up the plan"
        )
    if kind in ("cost", "count") and quantile > 0.5:
        try:
            median = _components(data, kind, effect, 0.5, paired, 0.95)[0]
            n50 = median.tasks_needed(int(best["seeds_per_task"]), paired, alpha, target, alternative)
            if n50 is not None and n50 < best["tasks"]:
                notes.append(
                    f"the p{quantile * 100:g} needs {int(best['tasks']):,} tasks, the median {n50:,} for the same relative "
                    "change: the tail is harder to measure"
                )
        except PowerError:
            pass
    pilot_note = list(data.notes)
    return Plan(
        metric=metric, kind=kind, design=design, effect=effect, delta=float(comps.delta), alpha=alpha, target=target,
        alternative=alternative, tasks=int(best["tasks"]), seeds_per_task=int(best["seeds_per_task"]),
        runs_per_arm=int(best["runs_per_arm"]), total_runs=int(best["total_runs"]), power=float(best["power"]),
        cost=float(best["cost"]), table=table, icc=fit.icc, icc_ci=fit.icc_ci, pilot_tasks=fit.n_groups,
        pilot_runs=fit.n_runs, optimum_seeds=optimum, min_tasks=min_tasks, components=comps, cost_ratio=cost_ratio,
        assumptions=tuple(assumptions), notes=tuple(pilot_note + notes), warnings=tuple(warnings), model=model,
    )


#: Share of runs at one value above which a quantile is a tied (step) value.
TIED_SHARE = 0.05


def _check_untied(kind: str, q: float, value: float, share: float, what: str) -> None:
    """Refuse a quantile that sits on a value shared by many runs (or on 0): it moves in steps, not by density."""
    if value <= 0 or share >= TIED_SHARE:
        raise PowerError(
            f"the {what}'s p{q * 100:g} of {kind} is {value:g}, the value of {share:.0%} of its runs: a tied quantile "
            "(or one at 0) moves in whole steps, not by a relative change, and the density-based plan does not apply; "
            "plan another quantile, or the mean with kind='continuous'"
        )


def _quantile_null(pilot: _Pilot, weights: np.ndarray, g: float, q: float,
                   bandwidth: float | None = None) -> tuple[tuple[float, float], tuple[float, float]]:
    """Components of the permutation null of a quantile difference, when the candidate is the pilot times ``g``.

    A permutation mixes the arms, so the null is that of the quantile of the
    pooled arms at their pooled quantile ``x_m``, over the pooled density
    there: ``V_0 = E[d_t^2] / (n f_m^2)`` for sign flips of paired tasks,
    with ``d_t`` a task's difference in the share of runs below ``x_m``
    (which varies across tasks: the scaling moves tasks near ``x_m`` more),
    and ``2 (B_pool + W_pool / m) / (n f_m^2)`` for reshuffled independent
    tasks. Returns (between, within) for the paired and the independent null.
    """
    values = np.concatenate([pilot.values, g * pilot.values])
    both = np.concatenate([weights, weights])
    xm = float(core.weighted_quantiles(values, both, [q])[0])
    fm = core.quantile_density(values, q, both, bandwidth)
    if not math.isfinite(fm) or fm <= 0:
        return None, None  # type: ignore[return-value]
    below_a = (pilot.values <= xm).astype(float)
    below_b = (g * pilot.values <= xm).astype(float)
    diff = core.anova(below_a - below_b, pilot.tasks)
    fit_a = core.anova(below_a, pilot.tasks)
    fit_b = core.anova(below_b, pilot.tasks)
    mean_a = float(np.sum(weights * below_a) / weights.sum())
    mean_b = float(np.sum(weights * below_b) / weights.sum())
    scale = fm**2
    paired = ((diff.between + (mean_a - mean_b) ** 2) / scale, (fit_a.within + fit_b.within) / scale)
    pool_between = (fit_a.between + fit_b.between) / 2 + (mean_a - mean_b) ** 2 / 4
    independent = (2 * pool_between / scale, (fit_a.within + fit_b.within) / scale)
    return paired, independent


def _virtual_pilot(effects: np.ndarray, residuals: np.ndarray, offset: float, size: int = 400_000) -> _Pilot:
    """Every task effect with every residual (evenly spaced order statistics when too many): the model's runs."""
    per_task = max(1, min(len(residuals), size // max(len(effects), 1)))
    ordered = np.sort(residuals)
    picks = ordered[np.linspace(0, len(ordered) - 1, per_task).round().astype(int)]
    values = np.exp(effects[:, None] + picks[None, :]).ravel() - offset
    tasks = np.repeat(np.arange(len(effects)), per_task)
    return _Pilot(np.maximum(values, 0.0), tasks, None, None, ())


def _log_scale_tasks(values: np.ndarray, tasks: np.ndarray, conf: float = 0.95) -> tuple[np.ndarray, np.ndarray, float, core.Anova]:
    """A task-effect model of a cost pilot on the log scale, to simulate new tasks and seeds from.

    ``log(value + offset) = task effect + residual`` (the offset is 0 for
    positive values, else half the smallest positive value, or 1). Resampling
    a pilot task's own few runs would make its runs too alike (a task with 3
    runs has 3 values) and tasks too different; instead, task effects are the
    pilot's task means pulled towards the grand mean so that their variance is
    the ANOVA's between-task variance, and residuals are the pooled deviations
    from task means, scaled by ``sqrt(n_i / (n_i - 1))`` to undo the fit
    (tasks with one run give none).
    """
    positive = values[values > 0]
    offset = 0.0 if len(positive) == len(values) else (float(positive.min()) / 2 if len(positive) else 1.0)
    z = np.log(values + offset)
    fit = core.anova(z, tasks, conf)
    _, index, counts = np.unique(tasks, return_inverse=True, return_counts=True)
    means = np.bincount(index, weights=z) / counts
    grand = float(np.mean(means))
    spread = float(np.var(means, ddof=1)) if len(means) > 1 else 0.0
    shrink = math.sqrt(fit.between / spread) if spread > 0 else 0.0
    effects = grand + shrink * (means - grand)
    several = counts[index] > 1
    residuals = ((z - means[index]) * np.sqrt(counts[index] / np.maximum(counts[index] - 1, 1)))[several]
    return effects, residuals, offset, fit


def _design_table(comps: core.Components, seeds: list[int], paired: bool, alpha: float, target: float,
                  alternative: str, max_tasks: int | None, cost_ratio: float) -> pd.DataFrame:
    """One row per seeds-per-task option: the fewest tasks reaching ``target`` (or ``max_tasks``), cost and power."""
    rows = []
    for m in seeds:
        n = comps.tasks_needed(m, paired, alpha, target, alternative)
        feasible = n is not None and (max_tasks is None or n <= max_tasks)
        shown = int(max_tasks) if not feasible and max_tasks is not None else n
        if shown is None:
            continue
        cost = shown * (cost_ratio + 2 * m) if paired else 2 * shown * (cost_ratio + m)
        rows.append({
            "tasks": shown, "seeds_per_task": m, "runs_per_arm": shown * m, "total_runs": 2 * shown * m,
            "cost": float(cost), "power": float(comps.power(shown, m, paired, alpha, alternative)), "feasible": feasible,
        })
    if not rows:
        raise PowerError(f"no design up to 10,000,000 tasks reaches power {target:g}: the effect is too small for this metric")
    return pd.DataFrame(rows)


def _plan_effect_iv(kind: str, effect: Any) -> float:
    from agentab.power.formulas import _effect_iv

    if np.ndim(effect) != 0:
        raise PowerError(f"plan takes one number as effect (for ordinal, an odds ratio), got {effect!r}")
    return _effect_iv(kind, effect, None)


# --------------------------------------------------------------------------- simulation


def _simulated_pvalue(model: _Model, n: int, m: int, alpha: float, alternative: str, n_resamples: int,
                      rng: np.random.Generator) -> float:
    """One simulated experiment under ``model`` and the p-value of agentab's test on it."""
    from agentab import stats

    alt = core._scipy_alternative(alternative)
    strata = np.repeat(np.arange(n), m)
    y_strata = strata if model.paired else strata + n
    if model.kind in ("binary", "ordinal"):
        x, y = _draw_levels(model, n, m, rng)
        test = stats.rate_difference if model.kind == "binary" else stats.ordinal_superiority
        res = test(x, y, x_strata=strata, y_strata=y_strata, paired=model.paired, alternative=alt,
                   n_resamples=n_resamples, rng=rng)
    elif model.kind == "continuous":
        u = rng.normal(0.0, math.sqrt(model.between), n)
        v = u if model.paired else rng.normal(0.0, math.sqrt(model.between), n)
        x = model.mean + np.repeat(u, m) + rng.normal(0.0, math.sqrt(model.within), n * m)
        y = model.mean + model.delta + np.repeat(v, m) + rng.normal(0.0, math.sqrt(model.within), n * m)
        res = stats.mean_difference(x, y, x_strata=strata, y_strata=y_strata, paired=model.paired, alternative=alt,
                                    n_resamples=n_resamples, rng=rng)
    else:
        effects, residuals = model.task_effects, model.residuals
        task_a = np.repeat(effects[rng.integers(len(effects), size=n)], m)
        task_b = task_a if model.paired else np.repeat(effects[rng.integers(len(effects), size=n)], m)
        x = np.maximum(np.exp(task_a + rng.choice(residuals, size=n * m)) - model.offset, 0.0)
        y = np.maximum(np.exp(task_b + rng.choice(residuals, size=n * m)) - model.offset, 0.0) * model.factor
        res = stats.quantile_difference(x, y, [model.quantile], x_strata=strata, y_strata=y_strata, paired=model.paired,
                                        alternative=alt, n_resamples=n_resamples, rng=rng)
    return float(np.atleast_1d(res.pvalue)[0])


def _draw_levels(model: _Model, n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Runs of both arms: Dirichlet tasks around the pilot's shares, the candidate's shifted by the task-level log odds."""
    theta_a = core.task_shares(model.shares, model.icc, n, rng)
    theta_b = core.po_shift(theta_a if model.paired else core.task_shares(model.shares, model.icc, n, rng), model.log_or_task)
    return model.levels[core.task_runs(theta_a, m, rng)], model.levels[core.task_runs(theta_b, m, rng)]
