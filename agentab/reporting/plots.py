"""Figures of a comparison, a diagnosis and a plan (matplotlib), for reports and notebooks.

Every function returns a :class:`matplotlib.figure.Figure` built without
``pyplot``: nothing global is created or shown, so the functions are safe in
scripts, servers and CI (no display needed). In a notebook, display a figure
by leaving it as a cell's value after ``%matplotlib inline``, or save it with
``fig.savefig(path)``.

One style for all: the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal
Design"), which stays distinguishable under the common colour-vision
deficiencies; the baseline is always blue and the candidate orange; a better
effect is bluish green, a worse one vermillion; effects are candidate minus
baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from agentab._vocabulary import QUANTILE_KINDS

__all__ = [
    "PALETTE",
    "ecdf",
    "failure_rates",
    "forest",
    "level_shares",
    "pareto_figure",
    "power_curve",
    "profile_figure",
    "quantile_shift",
    "step_buckets",
    "task_outcomes",
    "tool_choice",
]

from agentab.reporting._profile_figures import pareto_figure, profile_figure
from agentab.reporting._style import (  # noqa: F401  (MAX_LABEL and level_colours are read through plots)
    BETTER,
    LEVEL_COLOURS,
    MAX_LABEL,
    NEUTRAL,
    PALETTE,
    WORSE,
    _legend_right,
    _log_ticks,
    _shorten,
    _styled,
    _wrap,
    level_colours,
)


def arm_colours(arms: Sequence[Any], baseline: Any = None, candidate: Any = None) -> dict[Any, str]:
    """Baseline blue, candidate orange, any other group the next Okabe-Ito colours."""
    colours: dict[Any, str] = {}
    if baseline is not None:
        colours[baseline] = PALETTE[0]
    if candidate is not None:
        colours[candidate] = PALETTE[1]
    spare = iter(c for c in PALETTE if c not in colours.values())
    for arm in arms:
        if arm not in colours:
            colours[arm] = next(spare, NEUTRAL)
    return colours


def _scale(row: pd.Series) -> tuple[float, float, float, str]:
    """A table row's effect and interval on the scale people read it: points, %, delta or units."""
    kind = row["kind"]
    if kind in QUANTILE_KINDS and np.isfinite(row["ratio"]) and np.isfinite(row["ratio_low"]) and np.isfinite(row["ratio_high"]):
        return 100 * (row["ratio"] - 1), 100 * (row["ratio_low"] - 1), 100 * (row["ratio_high"] - 1), "% change"
    if kind == "binary":
        return 100 * row["effect"], 100 * row["ci_low"], 100 * row["ci_high"], "points"
    if kind == "ordinal":
        unit = "difference" if row["statistic"] == "mean level" else "Cliff's delta"
        return row["effect"], row["ci_low"], row["ci_high"], unit
    return row["effect"], row["ci_low"], row["ci_high"], "difference"


@_styled
def forest(comparison: Any) -> Figure:
    """Every statistic's effect with its confidence interval, one row each, primary first.

    Each row has its own scale (percentage points for rates, Cliff's delta
    for ordinal metrics, % change of the quantile or mean for cost and
    counts), with a line at no change; the colour is the assessment
    (green better, vermillion worse, grey no evidence). The p-value and
    the Holm-adjusted p-value are written beside each row.
    """
    table = comparison.table
    n = len(table)
    labels = [_wrap(_shorten(f"{row['metric']}  ({_scale(row)[3]})", 96), 34, max_lines=3) for _, row in table.iterrows()]
    slot = 0.42 if max(label.count("\n") for label in labels) < 2 else 0.52  # a row's height, in inches
    fig = Figure(figsize=(7.5, 1.0 + slot * n))
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    colours = {"better": BETTER, "worse": WORSE}
    for ax, label, (_, row) in zip(axes, labels, table.iterrows()):
        est, lo, hi, _ = _scale(row)
        colour = colours.get(row["assessment"], NEUTRAL)
        if np.isfinite(lo) and np.isfinite(hi):
            ax.plot([lo, hi], [0, 0], color=colour, linewidth=2.2, solid_capstyle="butt")
        ax.plot([est], [0], marker="D" if row["role"] == "primary" else "o", color=colour, markersize=6, linestyle="none")
        ax.axvline(0, color="#333333", linewidth=0.8)
        span = np.nanmax(np.abs([v for v in (est, lo, hi) if np.isfinite(v)] or [1.0]))
        span = span * 1.15 if span > 0 else 1.0
        ax.set_xlim(-span, span)
        ax.set_ylim(-1, 1)
        ax.set_yticks([])
        ax.grid(axis="y", visible=False)
        ax.spines["left"].set_visible(False)
        ax.tick_params(axis="x", labelsize=7, pad=1)
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8.5, labelpad=30,
                      fontweight="bold" if row["role"] == "primary" else "normal")
        p = row["p_value"]
        p_adj = row["p_adjusted"]
        text = "-" if not np.isfinite(p) else f"p {p:.3g}" + ("" if row["role"] == "primary" else f"\nHolm {p_adj:.3g}")
        ax.text(1.02, 0.5, f"{text}\n{row['assessment']}", transform=ax.transAxes, va="center", ha="left", fontsize=7.5,
                color=colour)
    title = f"Effects: {comparison.candidate} minus {comparison.baseline}, with {1 - comparison.settings.alpha:.0%} CI"
    left = 0.37 * fig.get_figwidth()  # the title starts near the figure's edge, not the axes'
    axes[0].set_title(_wrap(title, 84), ha="left", x=-(left - 0.15) / (0.49 * fig.get_figwidth()))
    axes[-1].set_xlabel("effect, each row on its own scale (line: no change)")
    fig.subplots_adjust(hspace=0.9, left=0.37, right=0.86, top=1 - 0.55 / fig.get_figheight(),
                        bottom=0.45 / fig.get_figheight())
    return fig


@_styled
def level_shares(comparison: Any, metric: str) -> Figure:
    """Stacked bars of an ordinal metric's level shares, one bar per arm, worst level first."""
    shares = comparison.levels[comparison.levels["metric"] == metric]
    if shares.empty:
        raise KeyError(f"{metric!r} is not an ordinal metric of this comparison")
    fig = Figure(figsize=(7.5, 2.4), layout="constrained")
    ax = fig.subplots()
    arms = [comparison.baseline, comparison.candidate]
    colours = level_colours(len(shares))
    for y, (arm, column) in enumerate(zip(arms, ["baseline", "candidate"])):
        left = 0.0
        for i, (level, share) in enumerate(zip(shares["level"], shares[column])):
            ax.barh(y, share, left=left, color=colours[i], edgecolor="white", label=str(level) if y == 0 else None)
            if share >= 0.06:
                r, g, b = matplotlib.colors.to_rgb(colours[i])
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                ax.text(left + share / 2, y, f"{share:.0%}", ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
            left += share
    ax.set_yticks([0, 1], labels=[_wrap(arm, 24, max_lines=3) for arm in arms])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of runs (tasks weighted equally)")
    ax.set_ylabel("arm")
    ax.set_title(_wrap(f"{metric}: level shares by arm", 70))
    _legend_right(ax, 16, title="level\n(worst first)", ncols=1 if len(shares) <= 5 else 2)
    return fig


def _task_weights(frame: pd.DataFrame, cluster: str | None) -> np.ndarray:
    """Weights that give every task the same total (1 / runs of the task), as agentab's quantiles do."""
    if cluster is None or cluster not in frame:
        return np.ones(len(frame))
    return 1.0 / frame.groupby(cluster, observed=True)[cluster].transform("size").to_numpy(dtype=float)


def _arm_frames(comparison: Any, metric: str) -> list[tuple[str, pd.DataFrame]]:
    data, arm = comparison.data, comparison.settings.arm
    if metric not in data:
        raise KeyError(f"{metric!r} is not a column of the compared runs")
    out = []
    for name in (comparison.baseline, comparison.candidate):
        frame = data[data[arm].astype(str) == str(name)]
        frame = frame[frame[metric].notna()]
        out.append((name, frame))
    return out


@_styled
def ecdf(comparison: Any, metric: str) -> Figure:
    """Empirical CDFs of a cost or count metric per arm, on a log axis, with p50 and p95 marked.

    Tasks are weighted equally (as in the comparison's quantiles). Values of
    0 cannot sit on a log axis: they count in the curve's height at its left
    end, and the axis label says how many there are.
    """
    fig = Figure(figsize=(7.5, 3.6), layout="constrained")
    ax = fig.subplots()
    colours = arm_colours([], comparison.baseline, comparison.candidate)
    cluster = comparison.settings.cluster
    zeros = {}
    for name, frame in _arm_frames(comparison, metric):
        values = frame[metric].to_numpy(dtype=float)
        if not len(values):
            continue
        weights = _task_weights(frame, cluster)
        order = np.argsort(values, kind="stable")
        xs, cum = values[order], np.cumsum(weights[order]) / weights.sum()
        positive = xs > 0
        zeros[name] = int((~positive).sum())
        if not positive.any():
            continue
        start = cum[~positive][-1] if zeros[name] else 0.0
        x_plot = np.concatenate([[xs[positive][0] / 1.6], xs[positive]])
        ax.step(x_plot, np.concatenate([[start], cum[positive]]), where="post", color=colours[name], linewidth=1.6,
                label=f"{name} ({len(values)} runs)")
        for q, marker in ((0.5, "o"), (0.95, "^")):
            value = xs[min(np.searchsorted(cum, q - 1e-12), len(xs) - 1)]
            if value <= 0:
                continue
            ax.plot([value], [q], marker=marker, color=colours[name], markersize=7, markeredgecolor="black",
                    markeredgewidth=0.5, linestyle="none")
            below = name == comparison.baseline
            ax.annotate(f"p{q * 100:g}", (value, q), textcoords="offset points", xytext=(6, -12) if below else (-22, 5),
                        fontsize=7, color=colours[name])
    ax.set_xscale("log")
    _log_ticks(ax.xaxis)
    for q in (0.5, 0.95):
        ax.axhline(q, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_ylim(0, 1.05)
    zero_note = "; ".join(f"{n}: {z} at 0" for n, z in zeros.items() if z)
    ax.set_xlabel(_wrap(f"{metric} (log scale{'; runs at 0 counted at the left end: ' + zero_note if zero_note else ''})",
                        90))
    ax.set_ylabel("share of runs at or below\n(tasks weighted equally)")
    ax.set_title(_wrap(f"{metric}: distribution by arm (o p50, ^ p95)", 70))
    _legend_right(ax)
    return fig


#: The quantiles of a quantile shift plot: the deciles and p95 (the usual guardrail).
SHIFT_QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@_styled
def quantile_shift(comparison: Any, metric: str, *, q: Sequence[float] = SHIFT_QUANTILES,
                   n_resamples: int | None = None, seed: Any = None) -> Figure:
    """How the candidate's quantiles differ from the baseline's, across deciles and p95, with bootstrap intervals.

    A shift function (Doksum 1974; Rousselet, Pernet & Wilcox 2017): where
    the distributions differ, not only whether. The change is relative
    (candidate / baseline - 1, in %), so the tail and the body share one
    readable axis; when a baseline quantile is 0 the ratio is unbounded and
    the plot shows differences instead (an interval whose upper bound is
    unbounded, because some resampled baseline quantile is 0, ends in an
    arrow at the top). Computed with
    :func:`agentab.stats.quantile_difference` on the comparison's design
    (tasks resampled whole, paired when the comparison was), intervals only.
    The intervals are simultaneous: each at confidence 1 - alpha / (number
    of quantiles) (Bonferroni), so that colouring the quantiles whose
    interval excludes no change (green better, by the metric's direction)
    does not claim more than the comparison's own tests; they are wider
    than the table's interval for the same quantile. ``n_resamples`` defaults to the
    comparison's (at most 1999) and ``seed`` to its seed.
    """
    from agentab import stats

    (_, base), (_, cand) = _arm_frames(comparison, metric)
    cluster = comparison.settings.cluster
    paired = comparison.design.kind == "paired"
    n = min(comparison.settings.n_resamples, 1999) if n_resamples is None else n_resamples
    rng = np.random.default_rng(comparison.settings.seed if seed is None else seed)
    res = stats.quantile_difference(
        base[metric].to_numpy(dtype=float), cand[metric].to_numpy(dtype=float), list(q),
        x_strata=None if cluster is None else base[cluster].to_numpy(),
        y_strata=None if cluster is None else cand[cluster].to_numpy(),
        paired=paired, confidence_level=1 - comparison.settings.alpha / len(q), n_resamples=n, rng=rng, test=False,
    )
    qs = np.atleast_1d(res.q)
    ratio = np.atleast_1d(res.ratio), np.atleast_1d(res.ratio_interval.low), np.atleast_1d(res.ratio_interval.high)
    relative = bool(np.isfinite(ratio[0]).all())
    unbounded = np.zeros(len(qs), dtype=bool)
    if relative:
        est, lo, hi = (100 * (r - 1) for r in ratio)
        # A resampled baseline quantile of 0 makes the ratio unbounded: draw to the top edge, with an arrow.
        unbounded = ~np.isfinite(hi)
        if unbounded.any():
            finite = np.r_[est, lo[np.isfinite(lo)], hi[np.isfinite(hi)]]
            hi = np.where(unbounded, max(finite.max(), 0) + 0.25 * (finite.max() - finite.min() + 1), hi)
    else:
        est = np.atleast_1d(res.statistic)
        lo, hi = np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)
    fig = Figure(figsize=(7.5, 3.4), layout="constrained")
    ax = fig.subplots()
    excludes = (lo > 0) | (hi < 0)
    direction = comparison.metrics["direction"].get(metric, "neither")
    for k in range(len(qs)):
        good = est[k] < 0 if direction == "lower" else est[k] > 0
        colour = NEUTRAL if not excludes[k] or direction == "neither" else BETTER if good else WORSE
        ax.plot([qs[k], qs[k]], [lo[k], hi[k]], color=colour, linewidth=2)
        ax.plot([qs[k]], [est[k]], marker="o", color=colour, linestyle="none")
        if unbounded[k]:
            ax.plot([qs[k]], [hi[k]], marker="^", color=colour, linestyle="none")
    ax.plot(qs, est, color="#444444", linewidth=0.8)
    ax.axhline(0, color="#333333", linewidth=0.8)
    ax.set_xticks(qs, labels=[f"p{100 * v:g}" for v in qs])
    ax.set_xlabel("quantile")
    ax.set_ylabel("% change, candidate\nvs baseline" if relative else "candidate minus\nbaseline")
    ax.set_title(_wrap(f"{metric}: quantile shift", 80) + f"\n{1 - comparison.settings.alpha:.0%} simultaneous "
                 f"bootstrap CIs (Bonferroni over {len(qs)} quantiles)")
    return fig


def _grouped_bars(ax: Any, table: pd.DataFrame, colours: dict[Any, str], *, horizontal: bool) -> None:
    """Bars of ``table`` (rows: categories, columns: groups), the groups side by side."""
    k = len(table.columns)
    width = 0.8 / max(k, 1)
    positions = np.arange(len(table))
    for j, group in enumerate(table.columns):
        offset = positions - 0.4 + width * (j + 0.5)
        values = table[group].to_numpy(dtype=float)
        if horizontal:
            ax.barh(offset, values, height=width, color=colours[group], label=str(group))
        else:
            ax.bar(offset, values, width=width, color=colours[group], label=str(group))


@_styled
def step_buckets(diagnosis: Any, *, baseline: Any = None, candidate: Any = None) -> Figure:
    """Success rate by step-count bucket and group: a cliff is the signature of context exhaustion.

    From ``diagnosis.tables["steps"]`` (:func:`agentab.diagnose`). Run counts
    are written on the bars; a rate on few runs is noisy.
    """
    table = diagnosis.tables["steps"]
    order = pd.unique(table.index.get_level_values("steps"))  # buckets in step order (unstack sorts labels as text)
    rates = table["success_rate"].unstack(0).reindex(order)
    runs = table["runs"].unstack(0).reindex(order)
    colours = arm_colours(list(rates.columns), baseline, candidate)
    fig = Figure(figsize=(7.5, 3.2), layout="constrained")
    ax = fig.subplots()
    _grouped_bars(ax, rates.fillna(0.0), colours, horizontal=False)
    k = len(rates.columns)
    width = 0.8 / max(k, 1)
    for j, group in enumerate(rates.columns):
        for i, (rate, count) in enumerate(zip(rates[group], runs[group])):
            if count and np.isfinite(rate):
                ax.text(i - 0.4 + width * (j + 0.5), rate + 0.01, f"{int(count)}", ha="center", va="bottom", fontsize=6.5)
    ax.set_xticks(np.arange(len(rates)), labels=[str(i) for i in rates.index])
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("steps in the run (numbers on bars: runs)")
    ax.set_ylabel("success rate")
    ax.set_title("Success by step count")
    _legend_right(ax)
    return fig


#: Failure-shape rates shown by :func:`failure_rates`, with their labels.
FAILURE_RATES = {
    "loop": "loop", "cap_hit": "loop cap hit", "non_terminated": "did not terminate", "over_budget": "over step budget",
    "error_cascade": "error cascade", "premature": "premature success claim", "accidental_recovery": "accidental recovery",
}  # fmt: skip


@_styled
def failure_rates(diagnosis: Any, *, baseline: Any = None, candidate: Any = None) -> Figure:
    """Share of runs with each failure shape (loops, cap hits, non-termination, ...), by group."""
    rates = diagnosis.tables["rates"]
    present = [c for c in FAILURE_RATES if c in rates]
    table = rates[present].T.astype(float)
    table.index = [FAILURE_RATES[c] for c in present]
    colours = arm_colours(list(table.columns), baseline, candidate)
    fig = Figure(figsize=(7.5, 1.2 + 0.45 * len(table)), layout="constrained")
    ax = fig.subplots()
    _grouped_bars(ax, table.fillna(0.0), colours, horizontal=True)
    ax.set_yticks(np.arange(len(table)), labels=list(table.index))
    ax.invert_yaxis()
    ax.set_xlabel("share of runs")
    ax.set_ylabel("failure shape")
    ax.set_title("Loops, cap hits and other failure shapes")
    _legend_right(ax)
    return fig


@_styled
def tool_choice(diagnosis: Any, *, top: int = 12, baseline: Any = None, candidate: Any = None) -> Figure:
    """Which tools each group reaches for: share of all its tool calls, the ``top`` most used tools."""
    if "tool_choice" not in diagnosis.tables:
        raise KeyError("this diagnosis has no tool-choice table: diagnose the traces (they hold the steps)")
    table = diagnosis.tables["tool_choice"].astype(float)
    table = table.loc[table.max(axis=1).sort_values(ascending=False).index[:top]]
    colours = arm_colours(list(table.columns), baseline, candidate)
    fig = Figure(figsize=(7.5, 1.2 + 0.4 * len(table)), layout="constrained")
    ax = fig.subplots()
    _grouped_bars(ax, table, colours, horizontal=True)
    ax.set_yticks(np.arange(len(table)), labels=[_wrap(_shorten(t, 60, 20), 30, max_lines=2) for t in table.index])
    ax.invert_yaxis()
    ax.set_xlabel("share of the group's tool calls")
    ax.set_ylabel("tool")
    ax.set_title("Tool choice by arm")
    _legend_right(ax)
    return fig


@_styled
def task_outcomes(profile: pd.DataFrame, *, baseline: str, candidate: str, metric: str = "outcome",
                  direction: str = "higher") -> Figure:
    """Each task's rate in the baseline (x) against the candidate (y).

    ``profile`` is :func:`agentab.task_profile`'s table. The colour says
    on which side of the diagonal the candidate did better on that task, by
    the metric's ``direction`` ("higher" or "lower" is better; "neither":
    grey); the marker's area counts the tasks at that point (with a few
    seeds per task, rates repeat).
    """
    x = profile[f"{metric} {baseline}"].to_numpy(dtype=float)
    y = profile[f"{metric} {candidate}"].to_numpy(dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    points = pd.DataFrame({"x": x[keep], "y": y[keep]}).value_counts().reset_index(name="tasks")
    fig = Figure(figsize=(4.6, 4.4), layout="constrained")
    ax = fig.subplots()
    side = np.sign(points["y"] - points["x"]) * (-1 if direction == "lower" else 1)
    colour = np.where(side > 0, BETTER, np.where(side < 0, WORSE, NEUTRAL))
    if direction == "neither":
        colour[:] = NEUTRAL
    ax.scatter(points["x"], points["y"], s=25 + 35 * points["tasks"], c=colour, alpha=0.75, edgecolors="black",
               linewidths=0.4)
    ax.plot([0, 1], [0, 1], color="#333333", linewidth=0.8)
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylim(-0.1, 1.1)
    ax.set_aspect("equal")
    ax.set_xlabel(_wrap(f"{metric} rate of the task, {baseline}", 56, max_lines=3))
    ax.set_ylabel(_wrap(f"{metric} rate of the task, {candidate}", 48, max_lines=3))
    ax.set_title(f"Per task: {int(keep.sum())} tasks (area: tasks)")
    return fig


@_styled
def power_curve(plan: Any, *, seeds_per_task: Sequence[int] | None = None) -> Figure:
    """Power against the number of tasks, one line per seeds-per-task, from an :class:`agentab.power.Plan`."""
    seeds = sorted({1, plan.seeds_per_task, 2 * plan.seeds_per_task} if seeds_per_task is None else set(seeds_per_task))
    curve = plan.curve(seeds_per_task=seeds)
    fig = Figure(figsize=(7.0, 3.4), layout="constrained")
    ax = fig.subplots()
    for colour, (m, part) in zip(PALETTE, curve.groupby("seeds_per_task")):
        ax.plot(part["tasks"], part["power"], color=colour, linewidth=1.6, label=f"{m} seed(s) per task")
    ax.axhline(plan.target, color="#333333", linewidth=0.8, linestyle="--")
    ax.axvline(plan.tasks, color="#333333", linewidth=0.8, linestyle=":")
    ax.annotate(f"{plan.tasks} tasks x {plan.seeds_per_task}", (plan.tasks, plan.target), textcoords="offset points",
                xytext=(4, -14), fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_xlabel("tasks" + (" (the same in both arms)" if plan.design == "paired" else " per arm"))
    ax.set_ylabel("power")
    ax.set_title(_wrap(f"Power to detect {plan.effect_text()} on {plan.metric}", 70))
    ax.legend(loc="lower right")
    return fig
