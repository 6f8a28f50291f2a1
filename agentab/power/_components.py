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
  (:func:`_quantile_components`, with the permutation null of :func:`_quantile_null`).

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
from agentab.power._heterogeneity import TYPICAL_HETEROGENEITY, assume
from agentab.power._one_run import one_run, one_run_components
from agentab.power._pilot import MIN_TASKS, Pilot
from agentab.power._simulation import Model
from agentab.stats import power as core

__all__ = ["Measured", "components"]


class Measured(NamedTuple):
    """What :func:`components` measures on a pilot."""

    components: core.Components
    anova: core.Anova
    model: Model
    assumptions: list[str]
    notes: list[str]
    heterogeneity: float | None = None  # paired plans: the assumed ratio (None: measured, or not applicable)


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


def _discordance(pilot: Pilot, score: Any, within: float) -> float | None:
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
                         bandwidth: float | None = None):
    """Cost and count: the quantile of a log-scale task-effect model of the pilot, every candidate run times 1 + effect.

    The tail of a small pilot is a handful of runs; its task structure is read
    on the log scale from all runs, and the formula and the simulation both
    work on the model's distribution (a virtual pilot).
    """
    raw_q, tied = core.quantile_tie(pilot.values, quantile, task_weights(pilot.tasks))
    check_untied(kind, quantile, raw_q, tied, "pilot")
    effects, residuals, offset, fit = _log_scale_tasks(pilot.values, pilot.tasks, conf)
    virtual = _virtual_pilot(effects, residuals, offset)
    weights = task_weights(virtual.tasks)
    xq = float(quantile_of(virtual.values, quantile, weights))
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
    model = Model(kind, paired, task_effects=effects, residuals=residuals, offset=offset, factor=g, quantile=quantile,
                  density=dens)
    assumption = (
        f"{kind} follows log(value{f' + {offset:g}' if offset else ''}) = task effect + run noise, fitted on "
        f"every pilot run (the ICC shown is on that scale); the candidate multiplies every run by {g:g}, so "
        f"each task keeps its place; the p{quantile * 100:g} ({xq:.4g}) varies as the share of runs below it "
        f"(its ICC {below.icc:.2f}), over the density there ({dens:.3g} per unit)"
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


def components(pilot: Pilot, kind: str, effect: float, quantile: float, paired: bool, conf: float,
               sequence: np.random.SeedSequence, bandwidth: float | None = None,
               heterogeneity: float | None = None, tau: float | None = None) -> Measured:
    """The statistic's variance components, the ANOVA, the model to simulate from, assumptions and notes.

    ``sequence`` seeds the Dirichlet draws of a binary or ordinal task model (the same draws for every
    log odds tried); ``bandwidth`` replaces the Hall-Sheather bandwidth of a quantile's density.
    ``heterogeneity`` (paired plans): None measures how the effect varies across tasks on a two-arm
    pilot and assumes :data:`~agentab.power._heterogeneity.TYPICAL_HETEROGENEITY` otherwise; a number
    is assumed whatever the pilot (:mod:`agentab.power._heterogeneity`); ``tau`` fixes the calibrated
    logit-scale spread of the per-task shifts (re-plans on resampled pilots).
    """
    if one_run(pilot):
        comps, fit, assumptions, notes = one_run_components(pilot, kind, effect, paired)
        return Measured(comps, fit, None, assumptions, notes)
    if kind in ("binary", "ordinal"):
        comps, fit, model, assumption, score = _level_components(pilot, kind, effect, paired, conf, sequence)
    elif kind == "continuous":
        comps, fit, model, assumption, score = _continuous_components(pilot, effect, paired, conf)
    else:
        comps, fit, model, assumption, score = _quantile_components(pilot, kind, effect, quantile, paired, conf, bandwidth)
    assumptions, notes, assumed = [assumption], [], None
    if paired and pilot.other is not None and score is None:
        notes.append("the pilot's second arm is not used for cost and count: the plan assumes every run scales alike")
    if paired and score is not None:
        w2 = _discordance(pilot, score, fit.within) if heterogeneity is None else None
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
            comps = dataclasses.replace(comps, covariance=(comps.between_a + comps.between_b - w2) / 2.0)
            assumptions.append(f"task-to-task variation of the effect measured on the pilot's two arms (variance {w2:.4g})")
    if fit.between == 0:
        notes.append("the pilot shows no variance between tasks (ICC 0): seeds are as informative as tasks")
    return Measured(comps, fit, model, assumptions, notes, assumed)
