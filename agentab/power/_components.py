"""The variance components of a plan, measured on its pilot, and the model a plan's simulations draw from.

:func:`components` returns, for the statistic agentab tests on the metric's kind, the
:class:`~agentab.stats.power.Components` of its linearised variance (between- and within-task, each arm,
and the covariance of a paired design), the pilot's ANOVA, the :class:`~agentab.power._simulation.Model`
to simulate from, and the assumptions and notes behind them (see :mod:`agentab.power.planning`):

- binary and ordinal: a Dirichlet task model around the pilot's level shares, the candidate shifted on the
  cumulative-logit scale (:func:`_level_components`);
- continuous: the ANOVA components and the same shift for every task (:func:`_continuous_components`);
- cost and count: a log-scale task-effect model of the pilot, every candidate run times ``1 + effect``, the
  quantile's variance that of the share of runs below it over the density there
  (:func:`_quantile_components`, with the permutation null of :func:`_quantile_null`); in a paired plan
  whose effect varies across tasks (measured on a two-arm pilot's log-scale task means, or assumed with
  ``heterogeneity=``), a task's candidate runs are times ``exp(mu + N(0, tau^2))`` instead
  (:func:`_varied_quantile`), in the formula and in the simulation model alike.

:func:`variance_table` reports the pilot's between-task, task-by-arm and within-task variance on the
scale the plan linearises, measured (:mod:`agentab.power._variance`) or assumed.

Quantiles are :func:`agentab._vocabulary.quantile` with every task weighing the same
(:func:`agentab._vocabulary.task_weights`), as in :func:`agentab.compare` and the summaries.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from agentab._vocabulary import quantile as quantile_of
from agentab._vocabulary import task_weights
from agentab.errors import PowerError
from agentab.power._arguments import check_untied
from agentab.power._heterogeneity import TYPICAL_COST_HETEROGENEITY, TYPICAL_HETEROGENEITY, assume
from agentab.power._one_run import one_run, one_run_components
from agentab.power._pilot import MIN_TASKS, Pilot
from agentab.power._simulation import Model
from agentab.power._variance import BOOT, VarianceComponents, measure
from agentab.stats import power as core

__all__ = ["Measured", "components", "variance_table"]


class Measured(NamedTuple):
    """What :func:`components` measures on a pilot."""

    components: core.Components
    anova: core.Anova
    model: Model
    assumptions: list[str]
    notes: list[str]
    heterogeneity: float | None = None  # paired plans: the assumed ratio (None: measured, or not applicable)
    score: Any = None  # the run score on the components' scale (None: one run per task)
    scale: str = ""  # that scale, in words


def _task_shares(values: np.ndarray, tasks: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Level shares of the arm with every task weighted equally."""
    _, t = np.unique(tasks, return_inverse=True)
    codes = np.searchsorted(levels, values)
    counts = np.zeros((t.max() + 1, len(levels)))
    np.add.at(counts, (t, codes), 1.0)
    return (counts / counts.sum(axis=1, keepdims=True)).mean(axis=0)


def _every_task_constant(values: np.ndarray, tasks: np.ndarray) -> bool:
    """Whether every task's runs share one value (no within-task variance: the ANOVA's ICC is 1)."""
    frame = pd.DataFrame({"t": tasks, "v": values})
    return bool((frame.groupby("t")["v"].nunique() == 1).all())


def _discordance(pilot: Pilot, score: Any) -> float | None:
    """Variance of the per-task true differences seen in a two-arm pilot (method of moments), or None.

    :func:`agentab.power._variance.measure`: the per-task differences' variance minus each arm's seed noise.
    """
    if pilot.other is None:
        return None
    point, _, shared = measure(score(pilot.values), pilot.tasks, score(pilot.other[0]), pilot.other[1])
    return point["task_by_arm"] if shared >= MIN_TASKS and math.isfinite(point["task_by_arm"]) else None


def _level_components(pilot: Pilot, kind: str, effect: float, paired: bool, conf: float,
                      sequence: np.random.SeedSequence):
    """Binary and ordinal: the Dirichlet task model around the pilot's shares, shifted on the cumulative-logit scale."""
    from scipy.optimize import brentq

    shares = _task_shares(pilot.values, pilot.tasks, pilot.levels)
    if np.count_nonzero(shares) < 2:
        raise PowerError(f"every pilot run has the same value ({pilot.levels[np.argmax(shares)]:g}): no variance to plan with")
    if _every_task_constant(pilot.values, pilot.tasks):
        what = "is all-success or all-failure" if kind == "binary" else "keeps one level in all its runs"
        raise PowerError(
            f"every baseline task of the pilot {what} (its seeds always agree: an ICC of 1), so no shift of the task "
            "model moves any task and no sample size can be planned; use a pilot with more seeds per task, or "
            "agentab.power.sample_size with an assumed icc"
        )
    psi = core.placement_scores(shares)  # P(X < y) - P(X > y): the run score of Cliff's delta

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
    def delta(log_or: float) -> float:
        return core.dirichlet_components(shares, fit.icc, log_or, seed=sequence)[0].delta

    low, high = delta(-30.0) - target, delta(30.0) - target
    if not low < 0 < high:  # also NaN: brentq needs a sign change
        raise PowerError(f"no shift of the pilot's levels reaches the effect asked for (population Cliff's delta "
                         f"{target:+.3g}; reachable {low + target:+.3g} to {high + target:+.3g} at the pilot's ICC "
                         f"{fit.icc:.2f}): plan a smaller effect")
    try:
        log_or = brentq(lambda b: delta(b) - target, -30, 30, xtol=1e-10)
    except (ValueError, RuntimeError):  # a sign change was checked above: only a NaN inside the bracket gets here
        raise PowerError(f"the task model's Cliff's delta is undefined between the shifts that bracket {target:+.3g}: "
                         "no sample size can be planned from this pilot") from None
    comps, _ = core.dirichlet_components(shares, fit.icc, log_or, seed=sequence)
    model = Model(kind, paired, shares=shares, levels=pilot.levels, icc=fit.icc, log_or_task=log_or)
    assumption = (
        "the candidate keeps each task's difficulty: every task's level shares shift by the same log odds "
        f"({log_or:+.3f}), chosen so that the population effect is the one asked for"
    )
    return comps, fit, model, assumption, score


def _continuous_components(pilot: Pilot, effect: float, paired: bool, conf: float):
    """Continuous: ANOVA components; Cohen's d on the run-level SD; the same shift for every task."""
    fit = core.anova(pilot.values, pilot.tasks, conf)
    sd = math.sqrt(fit.between + fit.within)
    if sd == 0:
        raise PowerError("every pilot run has the same value: no variance to plan with")
    delta = effect * sd
    comps = core.Components(delta, fit.between, fit.between, fit.between, fit.within, fit.within)
    model = Model("continuous", paired, mean=float(pilot.values.mean()), between=fit.between, within=fit.within,
                  delta=delta)
    assumption = f"effect is Cohen's d on the pilot's run-level SD ({sd:.4g}); the candidate adds the same amount to every task"
    return comps, fit, model, assumption, lambda values: values


def _quantile_components(pilot: Pilot, kind: str, effect: float, quantile: float, paired: bool, conf: float,
                         bandwidth: float | None = None, tau: float = 0.0):
    """Cost and count: the quantile of a log-scale task-effect model of the pilot, every candidate run times 1 + effect.

    The tail of a small pilot is a handful of runs; its task structure is read
    on the log scale from all runs, and the formula and the simulation both
    work on the model's distribution (a virtual pilot). ``tau`` > 0: the
    candidate's runs of a task are multiplied by ``exp(mu + tau z_t)`` instead
    (:func:`_varied_quantile`).
    """
    raw_q, tied = core.quantile_tie(pilot.values, quantile, task_weights(pilot.tasks))
    check_untied(kind, quantile, raw_q, tied, "pilot")
    effects, residuals, offset, fit = _log_scale_tasks(pilot.values, pilot.tasks, conf)
    if tau > 0:
        return _varied_quantile(kind, effects, residuals, offset, fit, effect, quantile, paired, bandwidth, tau)
    virtual = _virtual_pilot(effects, residuals, offset)
    weights = task_weights(virtual.tasks)
    xq = float(quantile_of(virtual.values, quantile, weights))
    dens = core.quantile_density(virtual.values, quantile, weights, bandwidth)
    _check_density(kind, quantile, dens, xq)
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
    model = Model(kind, paired, task_effects=effects, residuals=residuals, offset=offset, factor=g, quantile=quantile,
                  density=dens)
    assumption = (
        f"{kind} follows log(value{f' + {offset:g}' if offset else ''}) = task effect + run noise, fitted on "
        f"every pilot run (the ICC shown is on that scale); the candidate multiplies every run by {g:g}, so "
        f"each task keeps its place; the p{quantile * 100:g} ({xq:.4g}) varies as the share of runs below it "
        f"(its ICC {below.icc:.2f}), over the density there ({dens:.3g} per unit)"
    )
    return comps, fit, model, assumption, None


def _check_density(kind: str, quantile: float, dens: float, xq: float) -> None:
    if not math.isfinite(dens) or xq <= 0:
        raise PowerError(
            f"the pilot's p{quantile * 100:g} of {kind} sits on tied values (or is 0), so the quantile's density "
            "cannot be estimated; try another quantile"
        )


#: Normal quantiles standing for the per-task log shifts of a heterogeneous cost model (scaled to unit variance).
_SHIFTS = 16


def _varied_quantile(kind: str, effects: np.ndarray, residuals: np.ndarray, offset: float, fit: core.Anova,
                     effect: float, q: float, paired: bool, bandwidth: float | None, tau: float):
    """Cost and count whose effect varies across tasks: task ``t``'s candidate runs are its runs times ``exp(mu + tau z_t)``.

    The virtual pilot (every task effect with the residuals' order statistics) is crossed with
    :data:`_SHIFTS` standard normal quantiles ``z_k`` (rescaled to variance 1): the candidate's
    virtual task ``(t, k)`` is task ``t`` shifted by ``mu + tau z_k`` on the log scale, ``mu``
    solved so that the population quantile moves by ``1 + effect`` exactly. The components are the
    population moments of the share of runs below the quantile, per virtual task (between: their
    variance across tasks, ``k / (k - 1)`` as the ANOVA; within: the mean Bernoulli variance; the
    covariance: a task's baseline share with its candidate shares averaged over ``z``), over the
    densities at either arm's quantile; the permutation null as in :func:`_quantile_null`.
    """
    from scipy.stats import norm

    n_tasks = len(effects)
    per_task = max(1, min(len(residuals), 400_000 // max(n_tasks * _SHIFTS, 1)))
    ordered = np.sort(residuals)
    picks = ordered[np.linspace(0, len(ordered) - 1, per_task).round().astype(int)]
    x = np.maximum(np.exp(effects[:, None] + picks[None, :]) - offset, 0.0)  # (tasks, runs)
    z = norm.ppf((np.arange(_SHIFTS) + 0.5) / _SHIFTS)
    z = z / z.std()
    w_a = task_weights(np.repeat(np.arange(n_tasks), per_task))
    w_b = task_weights(np.repeat(np.arange(n_tasks * _SHIFTS), per_task))
    xq = float(quantile_of(x.ravel(), q, w_a))
    dens_a = core.quantile_density(x.ravel(), q, w_a, bandwidth)
    _check_density(kind, q, dens_a, xq)
    y = x[:, None, :] * np.exp(tau * z)[None, :, None]  # (tasks, shifts, runs)
    factor = (1.0 + effect) * xq / float(quantile_of(y.ravel(), q, w_b))
    y = y * factor
    yq = float(quantile_of(y.ravel(), q, w_b))
    dens_b = core.quantile_density(y.ravel(), q, w_b, bandwidth)
    _check_density(kind, q, dens_b, yq)
    c = n_tasks / (n_tasks - 1)
    p_a, p_b = (x <= xq).mean(axis=1), (y <= yq).mean(axis=2)
    between_a, between_b = c * p_a.var(), c * p_b.var()
    covariance = c * float(np.mean((p_a - p_a.mean()) * (p_b.mean(axis=1) - p_b.mean())))
    within_a, within_b = float(np.mean(p_a * (1 - p_a))), float(np.mean(p_b * (1 - p_b)))
    # The permutation null: both arms pooled (each weighing the same) at their pooled quantile.
    pooled = np.concatenate([x.ravel(), y.ravel()])
    both = np.concatenate([w_a, w_b / _SHIFTS])
    xm = quantile_of(pooled, q, both)
    fm = core.quantile_density(pooled, q, both, bandwidth)
    null: tuple[Any, Any] = (None, None)
    if math.isfinite(fm) and fm > 0:
        d_a, d_b = (x <= xm).mean(axis=1), (y <= xm).mean(axis=2)
        diff = d_a[:, None] - d_b
        within0 = (float(np.mean(d_a * (1 - d_a))) + float(np.mean(d_b * (1 - d_b)))) / fm**2
        pool = (c * d_a.var() + c * d_b.var()) / 2 + (d_a.mean() - d_b.mean()) ** 2 / 4
        null = ((c * diff.var() + diff.mean() ** 2) / fm**2, within0), (2 * pool / fm**2, within0)
    comps = core.Components(effect * xq, between_a / dens_a**2, between_b / dens_b**2,
                            covariance / (dens_a * dens_b), within_a / dens_a**2, within_b / dens_b**2, *null)
    model = Model(kind, paired, task_effects=effects, residuals=residuals, offset=offset, factor=factor, quantile=q,
                  density=dens_a, log_sd=tau)
    icc = between_a / (between_a + within_a) if between_a + within_a > 0 else 0.0
    assumption = (
        f"{kind} follows log(value{f' + {offset:g}' if offset else ''}) = task effect + run noise, fitted on "
        f"every pilot run (the ICC shown is on that scale); the candidate multiplies a task's runs by "
        f"exp({math.log(factor):+.3f} + N(0, {tau:.3f}^2)) (the effect varies across tasks; the mean log shift "
        f"is set so that the population p{q * 100:g} moves by {1 + effect:g}); the p{q * 100:g} ({xq:.4g}) "
        f"varies as the share of runs below it (its ICC {icc:.2f}), over the density there ({dens_a:.3g} per unit)"
    )
    return comps, fit, model, assumption, None


def _quantile_null(pilot: Pilot, weights: np.ndarray, g: float, q: float,
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
    xm = quantile_of(values, q, both)
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


def _virtual_pilot(effects: np.ndarray, residuals: np.ndarray, offset: float, size: int = 400_000) -> Pilot:
    """Every task effect with every residual (evenly spaced order statistics when too many): the model's runs."""
    per_task = max(1, min(len(residuals), size // max(len(effects), 1)))
    ordered = np.sort(residuals)
    picks = ordered[np.linspace(0, len(ordered) - 1, per_task).round().astype(int)]
    values = np.exp(effects[:, None] + picks[None, :]).ravel() - offset
    tasks = np.repeat(np.arange(len(effects)), per_task)
    return Pilot(np.maximum(values, 0.0), tasks, None, None, ())


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


def _log_score(pilot: Pilot) -> tuple[Any, str]:
    """The cost scale of the components: ``log(value + offset)``, the offset as the model's rule on both arms."""
    values = pilot.values if pilot.other is None else np.concatenate([pilot.values, pilot.other[0]])
    positive = values[values > 0]
    offset = 0.0 if len(positive) == len(values) else (float(positive.min()) / 2 if len(positive) else 1.0)
    return (lambda v: np.log(np.asarray(v, dtype=float) + offset)), f"log(value{f' + {offset:.3g}' if offset else ''})"


def _quantile_spread(pilot: Pilot, kind: str, paired: bool, heterogeneity: float | None,
                     between: float) -> tuple[float, float | None, list[str], list[str]]:
    """The SD of a cost plan's per-task log shifts: measured on two arms, else assumed; the ratio assumed, texts.

    Returns ``(tau, assumed ratio or None, assumptions, notes)``. A one-arm pilot without
    ``heterogeneity=`` assumes 0 (every run scales alike): no typical value has been measured on cost.
    """
    if not paired:
        return 0.0, None, [], []
    notes: list[str] = []
    if heterogeneity is None and pilot.other is not None:
        score, scale = _log_score(pilot)
        w2 = _discordance(pilot, score)
        if w2 is not None:
            tau = math.sqrt(w2)
            return tau, None, [f"task-to-task variation of the effect measured on the pilot's two arms on the "
                               f"{scale} scale: the per-task log shift's SD is {tau:.3g} (the variance components "
                               "give its ratio to the between-task SD)"], notes
        notes.append(f"the pilot's two arms share fewer than {MIN_TASKS} tasks: the task-to-task variation of the "
                     "effect is assumed, not measured")
    if heterogeneity == 0:
        return 0.0, 0.0, [f"heterogeneity 0 ('none') is assumed for {kind}, as asked: every run of every task scales "
                          "by the same factor"], notes
    if heterogeneity is None:
        return 0.0, 0.0, [
            f"heterogeneity 0 is assumed for {kind}: every run of every task scales by the same factor (the "
            "effect does not vary across tasks). A one-arm pilot cannot measure it, and real pairs vary: "
            f"{TYPICAL_COST_HETEROGENEITY:g} x the between-task SD on the log of run time in the median of "
            f"Terminal-Bench pairs ({TYPICAL_HETEROGENEITY:g} on outcomes); a pilot that ran both arms on the same "
            "tasks measures it, and heterogeneity= sets it"], notes
    tau = heterogeneity * math.sqrt(between)
    return tau, heterogeneity, [
        f"the pilot cannot measure how the effect varies across tasks, so heterogeneity {heterogeneity:g} is "
        f"assumed: the per-task log shift's SD is {heterogeneity:g} x the between-task SD on the log scale "
        f"({tau:.3g}); heterogeneity= changes it"], notes


def components(pilot: Pilot, kind: str, effect: float, quantile: float, paired: bool, conf: float,
               sequence: np.random.SeedSequence, bandwidth: float | None = None,
               heterogeneity: float | None = None, tau: float | None = None) -> Measured:
    """The statistic's variance components, the ANOVA, the model to simulate from, assumptions and notes.

    ``sequence`` seeds the Dirichlet draws of a binary or ordinal task model (the same draws for every
    log odds tried); ``bandwidth`` replaces the Hall-Sheather bandwidth of a quantile's density.
    ``heterogeneity`` (paired plans): None measures how the effect varies across tasks on a two-arm
    pilot and assumes :data:`~agentab.power._heterogeneity.TYPICAL_HETEROGENEITY` otherwise (cost
    and count: 0, stated); a number is assumed whatever the pilot (:mod:`agentab.power._heterogeneity`);
    ``tau`` fixes the calibrated logit-scale spread of the per-task shifts (re-plans on resampled pilots).
    """
    if one_run(pilot):
        comps, fit, assumptions, notes = one_run_components(pilot, kind, effect, paired)
        return Measured(comps, fit, None, assumptions, notes)
    if kind in ("cost", "count"):
        fit = _log_scale_tasks(pilot.values, pilot.tasks, conf)[3]
        spread, assumed, assumptions, notes = _quantile_spread(pilot, kind, paired, heterogeneity, fit.between)
        comps, fit, model, assumption, _ = _quantile_components(pilot, kind, effect, quantile, paired, conf, bandwidth,
                                                                spread)
        score, scale = _log_score(pilot)
        return _finish(Measured(comps, fit, model, [assumption] + assumptions, notes, assumed, score, scale))
    if kind in ("binary", "ordinal"):
        comps, fit, model, assumption, score = _level_components(pilot, kind, effect, paired, conf, sequence)
        scale = "success (0/1)" if kind == "binary" else "placement score (Cliff's delta)"
    else:
        comps, fit, model, assumption, score = _continuous_components(pilot, effect, paired, conf)
        scale = "metric's"
    assumptions, notes, assumed = [assumption], [], None
    if paired:
        w2 = _discordance(pilot, score) if heterogeneity is None else None
        if w2 is None and pilot.other is not None and heterogeneity is None:
            notes.append(
                f"the pilot's two arms share fewer than {MIN_TASKS} tasks: the task-to-task variation of the effect "
                "is assumed, not measured"
            )
        if w2 is None:
            assumed = TYPICAL_HETEROGENEITY if heterogeneity is None else heterogeneity
            comps, model, text = assume(kind, comps, model, assumed, sequence, tau)
            assumptions.append(text)
        else:
            model = _measured_model(kind, comps, model, w2, sequence, tau)
            comps = dataclasses.replace(comps, covariance=(comps.between_a + comps.between_b - w2) / 2.0)
            assumptions.append(f"task-to-task variation of the effect measured on the pilot's two arms (variance {w2:.4g})")
    return _finish(Measured(comps, fit, model, assumptions, notes, assumed, score, scale))


def _measured_model(kind: str, comps: core.Components, model: Model, w2: float, sequence: np.random.SeedSequence,
                    tau: float | None) -> Model:
    """The task model of a paired plan whose per-task effect variance ``w2`` was measured on two arms.

    ``Plan.simulate`` must draw the population the formula plans for: continuous tasks shift by
    ``delta + N(0, w2)``; binary and ordinal tasks by log odds whose spread adds to the homogeneous
    model's own variation of the effect (a uniform logit shift already moves tasks unequally on the
    probability scale) what the pilot measured beyond it.
    """
    if kind == "continuous":
        return dataclasses.replace(model, effect_sd=math.sqrt(w2))
    scale = (comps.between_a + comps.between_b) / 2.0
    base = comps.between_a + comps.between_b - 2.0 * comps.covariance
    excess = math.sqrt(max(0.0, w2 - base) / scale) if scale > 0 else 0.0
    return model if excess == 0 else assume(kind, comps, model, excess, sequence, tau)[1]


def _finish(measured: Measured) -> Measured:
    if measured.anova.between == 0:
        measured.notes.append("the pilot shows no variance between tasks (ICC 0): seeds are as informative as tasks")
    return measured


def variance_table(pilot: Pilot, measured: Measured, paired: bool, sequence: np.random.SeedSequence) -> VarianceComponents:
    """The plan's variance-components table: measured on the pilot (95% bootstrap intervals over tasks) or assumed.

    The bootstrap draws from a generator derived from ``sequence`` without spawning from it (the
    plan's other draws stay as they were); fewer resamples for pilots of many tasks (at least 200).
    """
    if measured.score is None:
        why = "not separable: one run per task"
        return VarianceComponents("run", math.nan, math.nan, math.nan, math.nan, (why,) * 4, (None,) * 4, n_boot=0)
    rng = np.random.default_rng(np.random.SeedSequence(sequence.entropy, spawn_key=tuple(sequence.spawn_key) + (18,)))
    n_tasks = len(np.unique(pilot.tasks))
    n_boot = BOOT if n_tasks <= 200 else max(200, BOOT * 200 // n_tasks)
    score = measured.score
    other = (score(pilot.other[0]), pilot.other[1]) if pilot.other is not None else (None, None)
    point, ci, shared = measure(score(pilot.values), pilot.tasks, *other, rng=rng, n_boot=n_boot)
    between, w2, ratio = point["between"], point["task_by_arm"], point["ratio"]
    h = measured.heterogeneity
    sources = ["measured", "measured", "measured", "measured"]
    if not paired:
        used = "measured (not used: independent design)"
        sources[1] = sources[3] = used if math.isfinite(w2) else "not used: independent design"
    elif h is not None:  # assumed by the plan (a one-arm pilot, too few shared tasks, or heterogeneity= given)
        w2, ratio, sources[1], sources[3] = h * h * between, h, "assumed", "assumed"
        ci["task_by_arm"] = ci["ratio"] = None
    return VarianceComponents(
        measured.scale, between, w2, point["within"], ratio, tuple(sources),  # type: ignore[arg-type]
        (ci["between"], ci["task_by_arm"], ci["within"], ci["ratio"]), n_boot=n_boot, shared_tasks=shared)
