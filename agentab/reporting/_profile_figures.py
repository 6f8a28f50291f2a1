"""Figures of a :class:`~agentab.comparison.profiles.Profile`: the profile grid and the Pareto view.

Built like :mod:`agentab.reporting.plots` (whose style and text rules they share): a
:class:`matplotlib.figure.Figure` without ``pyplot``, every text shown literally (no math text: a system
named ``$x$`` reads ``$x$``), long names wrapped or cut.

- :func:`profile_figure` -- one panel per score column, the systems as rows in the profile's order (best
  outcome on top), each cell a dot with its interval; no panel is weighed against another.
- :func:`pareto_figure` -- each system's point on two columns (e.g. ``"tokens p95"`` against the outcome)
  with both intervals as error bars, the Pareto frontier by point estimates drawn and named.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from agentab.reporting._style import (
    NEUTRAL,
    PALETTE,
    _log_ticks,
    _shorten,
    _styled,
    _wrap,
)

__all__ = ["pareto_figure", "profile_figure"]

#: Panels per row of the profile grid.
PANELS_PER_ROW = 4
_FRONTIER = PALETTE[2]  # bluish green
_NAME = 60  # longest system name in a figure (cut in the middle beyond)


def _rate(statistic: str) -> bool:
    return statistic in ("rate", "share")


def _system_labels(profile: Any) -> list[str]:
    """Each system's name, with its model and harness when the data has them, wrapped."""
    out = []
    for system in profile.systems:
        extra = [str(profile.descriptions.loc[system, c]) for c in profile.descriptions.columns
                 if c not in ("runs", "tasks") and str(profile.descriptions.loc[system, c]) not in ("-", system)]
        name = _wrap(_shorten(system, 2 * _NAME), _NAME // 2 + 14, max_lines=2)
        out.append(name + (f"\n({_shorten(', '.join(extra), _NAME)})" if extra else ""))
    return out


@_styled
def profile_figure(profile: Any, columns: list[str] | None = None) -> Figure:
    """The profile as a grid: one panel per score column, the systems as rows in the profile's order.

    Each cell is a dot at the estimate with a line over its interval (no line: too few tasks; "n/a":
    nothing known). Rates and shares are in percent on 0-100; other columns on their own scale. Rows are
    in the profile's order (by outcome, highest on top); the panels are never combined into one score.

    Parameters
    ----------
    profile : Profile
        From :func:`agentab.comparison.profiles.profile`.
    columns : list of str, optional
        The columns to draw (default: every column, in order).

    Returns
    -------
    matplotlib.figure.Figure
    """
    columns = list(profile.columns if columns is None else columns)
    unknown = [c for c in columns if c not in profile.columns]
    if unknown or not columns:
        raise KeyError(f"not columns of the profile: {unknown or columns} (columns: {', '.join(profile.columns)})")
    n_sys = len(profile.systems)
    per_row = min(PANELS_PER_ROW, len(columns))
    n_rows = math.ceil(len(columns) / per_row)
    labels = _system_labels(profile)
    slot = 0.14 * max(label.count("\n") + 1 for label in labels) + 0.06  # a system's height, in inches
    height = slot * n_sys + 0.9
    # at most 9 in wide: the report's page is 60rem (about 930 px at the report's 100 dpi), never shown shrunk
    fig = Figure(figsize=(min(9.0, 2.6 + 1.6 * per_row), 0.5 + height * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, per_row, squeeze=False)
    est, low, high = (profile.estimates(w) for w in ("estimate", "ci_low", "ci_high"))
    statistic = dict(zip(profile.cells["column"], profile.cells["statistic"]))
    y = np.arange(n_sys)
    for k, ax in enumerate(axes.flat):
        if k >= len(columns):
            ax.set_visible(False)
            continue
        column = columns[k]
        scale = 100.0 if _rate(statistic[column]) else 1.0
        _panel(ax, y, est[column].to_numpy(dtype=float) * scale, low[column].to_numpy(dtype=float) * scale,
               high[column].to_numpy(dtype=float) * scale)
        if scale == 100.0:
            ax.set_xlim(-3, 103)
        ax.set_title(_wrap(_shorten(column + (" (%)" if scale == 100.0 else ""), 70), 26, max_lines=3), fontsize=8.5)
        ax.set_yticks(y, labels=labels if k % per_row == 0 else [""] * n_sys, fontsize=7)
        ax.set_ylim(n_sys - 0.5, -0.5)
    s = profile.settings
    fig.suptitle(_wrap(f"Profile: {n_sys} systems, each cell estimate and {s.level:.0%} interval (bootstrap over "
                       f"tasks); rows by outcome, highest first", 110), fontsize=9.5)
    return fig


def _panel(ax: Any, y: np.ndarray, est: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
    """One column's cells: a dot and an interval line per system; "n/a" where the estimate is unknown."""
    for i in range(len(y)):
        if np.isfinite(low[i]) and np.isfinite(high[i]):
            ax.plot([low[i], high[i]], [y[i], y[i]], color=PALETTE[0], linewidth=2.0, solid_capstyle="butt")
        if np.isfinite(est[i]):
            ax.plot([est[i]], [y[i]], marker="o", color=PALETTE[0], markersize=4.5, linestyle="none")
        else:
            ax.text(0.5, y[i], "n/a", transform=ax.get_yaxis_transform(), ha="center", va="center", fontsize=7,
                    color=NEUTRAL)
    if not np.isfinite(est).any():
        ax.set_xticks([])
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="y", visible=False)


@_styled
def pareto_figure(profile: Any, x: str = "tokens p95", y: str | None = None, log_x: bool | None = None) -> Figure:
    """Each system's point on ``x`` and ``y`` with both intervals as error bars, and the Pareto frontier.

    The frontier (:meth:`Profile.frontier`) joins, in order of ``x``, the systems no other system beats on
    both columns by point estimate, and names them in the figure; the others are grey. The frontier is
    read off the point estimates: a system off it may be on it within the intervals (the error bars show
    how far), and :meth:`Profile.dominance` names the systems beaten with non-overlapping intervals.

    Parameters
    ----------
    profile : Profile
    x, y : str
        Columns of the profile; ``y`` defaults to the outcome.
    log_x : bool, optional
        A log ``x`` axis (default: when every ``x`` value is positive and they span over 30x).

    Returns
    -------
    matplotlib.figure.Figure
    """
    table = profile.dominance(x, y)
    y = table.columns[2]
    frontier = list(table.loc[table["on_frontier"], "system"])
    low, high = profile.estimates("ci_low"), profile.estimates("ci_high")
    fig = Figure(figsize=(8.0, 5.2))
    ax = fig.subplots()
    statistic = dict(zip(profile.cells["column"], profile.cells["statistic"]))
    sx, sy = (100.0 if _rate(statistic[c]) else 1.0 for c in (x, y))
    for row in table.itertuples(index=False):
        px, py = row[1] * sx, row[2] * sy
        xerr = _error(px, low.loc[row.system, x] * sx, high.loc[row.system, x] * sx)
        yerr = _error(py, low.loc[row.system, y] * sy, high.loc[row.system, y] * sy)
        colour = _FRONTIER if row.on_frontier else NEUTRAL
        ax.errorbar([px], [py], xerr=xerr, yerr=yerr, fmt="o", color=colour, ecolor=colour, elinewidth=1.0,
                    capsize=2.5, markersize=5.5, alpha=1.0 if row.on_frontier else 0.75)
        ax.annotate(_shorten(row.system, 40), (px, py), textcoords="offset points", xytext=(5, 4), fontsize=7,
                    color="#222222" if row.on_frontier else "#555555",
                    fontweight="bold" if row.on_frontier else "normal")
    if frontier:
        points = table[table["on_frontier"]]
        ax.plot(points[x] * sx, points[y] * sy, color=_FRONTIER, linewidth=1.4, drawstyle="steps-post",
                label="Pareto frontier (point estimates)")
    xs = table[x].to_numpy(dtype=float)
    if log_x is None:
        log_x = len(xs) > 0 and bool((xs > 0).all()) and xs.max() / xs.min() > 30
    if log_x:
        ax.set_xscale("log")
        _log_ticks(ax.xaxis)  # plain numbers: a log axis's default labels are math text
    ax.set_xlabel(_wrap(x + (" (%)" if sx == 100.0 else "") + "  (better: "
                        + _better(profile, x) + ")", 90))
    ax.set_ylabel(_wrap(y + (" (%)" if sy == 100.0 else "") + "  (better: " + _better(profile, y) + ")", 60))
    named = "\n".join(_shorten(s, _NAME) for s in frontier) or "(none)"
    ax.text(1.02, 1.0, "frontier (by point estimate):\n" + named, transform=ax.transAxes, va="top", ha="left",
            fontsize=7.5, color=_FRONTIER)
    left_out = [s for s in profile.systems if s not in set(table["system"])]
    if left_out:
        ax.text(1.02, 0.0, "not shown (unknown):\n" + "\n".join(_shorten(s, _NAME) for s in left_out),
                transform=ax.transAxes, va="bottom", ha="left", fontsize=7, color=NEUTRAL)
    ax.set_title(_wrap(f"{y} against {x}: {profile.settings.level:.0%} intervals on both axes", 90))
    fig.subplots_adjust(left=0.1, right=0.68, top=0.9, bottom=0.12)
    return fig


def _error(point: float, low: float, high: float) -> Any:
    """An asymmetric error bar (none when the interval is unknown)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return [[max(point - low, 0.0)], [max(high - point, 0.0)]]


def _better(profile: Any, column: str) -> str:
    direction = profile.cells.loc[profile.cells["column"] == column, "direction"].iloc[0]
    return {"higher": "higher", "lower": "lower"}.get(direction, "neither")
