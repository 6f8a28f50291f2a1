"""Profiles, not ranks: every system's score vector, each cell an estimate with its interval.

:func:`profile` puts the systems (each arm: a model plus its harness) in rows and the score vector in
columns, and never collapses a row into one weighted score:

- the **outcome** (success rate; the mean score when outcomes are numbers);
- the **level shares** of each ordinal metric (the 0-3 ``rubric``: the share of runs at each level);
- the **rates** of the other binary metrics (``loop``, ``cap_hit``, ``non_terminated``, ...) and the
  means of continuous ones (``tool_recall``, ...);
- **p50 and p95** of every cost and count metric (``tokens``, ``cost_usd``, ``latency_s``, ``n_steps``, ...).

How a cell is estimated
    Tasks weigh the same, as in :func:`agentab.summarize`: a rate, share or mean is each task's mean over
    its runs with a known value, averaged over the tasks with at least one (with the same number of known
    runs in every task this is the plain share of runs); a quantile is agentab's one quantile
    (:func:`agentab._vocabulary.quantile`: the inverse empirical distribution function, every task weighing
    the same). Unknown values are left out, never read as 0 or False; a cell with no known value is NA.

How a cell's interval is found
    A percentile bootstrap over tasks (Efron & Tibshirani 1993, ch. 13): resample the tasks with
    replacement and keep each task's runs (multinomial task weights, so a resample costs O(runs)). One
    seeded generator serves every arm. When every arm ran the same set of tasks, the tasks are resampled
    **jointly**: one task draw is applied to every arm, so the intervals of two systems move together as
    the task mix does (what comparing two cells needs); otherwise each arm's tasks are drawn on their own,
    arm after arm in the order the arms first appear in the data. Quantile bounds are values the bootstrap distribution takes (the
    lower one rounded down, the upper one up); other bounds interpolate linearly. A system with fewer than
    :data:`MIN_TASKS` tasks known for a cell has no interval there (NA), and says so.

Order
    Rows are ordered by the outcome estimate, highest first (ties, then a missing outcome, by the order
    the systems first appear). The order is for reading; no column is ever weighed against another.

The Pareto view (:meth:`Profile.frontier`, :meth:`Profile.dominance`; the figure is
``agentab.plots.pareto_figure``) compares systems on two columns at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import (
    check_confidence_level,
    check_n_resamples,
    jsonable_seed,
    recorded_seed,
    seed_sequence,
)
from agentab._display import Block, Display, Items, Lines, Table, Title, number
from agentab._vocabulary import QUANTILE_KINDS
from agentab.comparison._inputs import (
    _check_task_ids,
    _Metric,
    _resolve_metrics,
    _unique_columns,
    _values,
)
from agentab.comparison._profile_bootstrap import (
    MIN_TASKS,
    mean_cell,
    quantile_cells,
    task_draws,
)
from agentab.errors import CompareError
from agentab.stats.two_sample import magnitude_problem
from agentab.traces.summary import labels

__all__ = ["CELL_COLUMNS", "MIN_TASKS", "Profile", "ProfileSettings", "profile"]

#: The columns of :meth:`Profile.frame`, one row per system and score column.
CELL_COLUMNS = ("system", "column", "metric", "statistic", "kind", "direction", "estimate", "ci_low", "ci_high",
                "n_tasks", "n_runs", "note")
#: The score table's counts a default profile shows (p50, p95); its other counts are read through their rates.
_COUNTS = ("n_steps",)
_ORDER = "by the outcome estimate, highest first (ties and a missing outcome in order of appearance)"


@dataclass(frozen=True)
class ProfileSettings:
    """What a :class:`Profile` was computed with (pass them back to reproduce it exactly)."""

    arm: str
    outcome: str | None
    cluster: str | None
    level: float
    n_resamples: int
    seed: Any
    joint: bool  # tasks resampled jointly across arms (every arm ran the same tasks)
    min_tasks: int
    order: str


@dataclass(frozen=True)
class Profile(Display):
    """Systems in rows, the score vector in columns, each cell an estimate with its interval.

    Attributes
    ----------
    systems : tuple of str
        The systems (arm names) in the profile's order (:data:`ProfileSettings.order`).
    columns : tuple of str
        The score columns, in order: the outcome, level shares, rates and means, then p50 and p95.
    cells : pandas.DataFrame
        One row per system and column (:data:`CELL_COLUMNS`); NA where nothing is known.
    descriptions : pandas.DataFrame
        Per system: the description columns (``model``, ``harness`` when the data has them), ``runs``
        and ``tasks``.
    settings : ProfileSettings
    notes : tuple of str
    """

    systems: tuple[str, ...]
    columns: tuple[str, ...]
    cells: pd.DataFrame
    descriptions: pd.DataFrame
    settings: ProfileSettings
    notes: tuple[str, ...] = ()

    def frame(self) -> pd.DataFrame:
        """The long table: one row per system and column (:data:`CELL_COLUMNS`), systems in order."""
        return self.cells.copy()

    def to_frame(self) -> pd.DataFrame:
        """The long table of :meth:`frame` (built from :meth:`to_dict`'s cells)."""
        return pd.DataFrame(self.to_dict()["cells"], columns=list(CELL_COLUMNS))

    def estimates(self, what: str = "estimate") -> pd.DataFrame:
        """A wide numeric table: systems in rows (in order), columns in order; ``what`` is ``"estimate"``,
        ``"ci_low"``, ``"ci_high"``, ``"n_tasks"`` or ``"n_runs"``."""
        if what not in ("estimate", "ci_low", "ci_high", "n_tasks", "n_runs"):
            raise CompareError(f"`what` must be estimate, ci_low, ci_high, n_tasks or n_runs, got {what!r}")
        wide = self.cells.pivot(index="system", columns="column", values=what)
        return wide.reindex(index=list(self.systems), columns=list(self.columns))

    def table(self) -> pd.DataFrame:
        """The wide table people read: per system its descriptions, then ``estimate [low, high]`` per column
        (rates as percentages; ``n/a`` where unknown; no interval where a system has too few tasks)."""
        out = self.descriptions.reindex(list(self.systems)).copy()
        kinds = dict(zip(self.cells["column"], self.cells["statistic"]))
        for column in self.columns:
            rows = self.cells[self.cells["column"] == column].set_index("system").reindex(list(self.systems))
            out[column] = [_cell_text(r.estimate, r.ci_low, r.ci_high, kinds[column]) for r in rows.itertuples()]
        out.index.name = "system"
        return out.reset_index()

    def frontier(self, x: str = "tokens p95", y: str | None = None) -> list[str]:
        """The systems no other system beats on both ``x`` and ``y``, by point estimate, in order of ``x``.

        A system is beaten when another is at least as good on both columns and better on one (better
        follows each metric's direction: lower cost, higher outcome). Systems with either estimate unknown
        are left out. ``y`` defaults to the outcome column.

        The frontier is read off the point estimates: a system just off it may be on it within the
        intervals. :meth:`dominance` says which systems are beaten *with confidence* (non-overlapping
        intervals on both columns).
        """
        table = self.dominance(x, y)
        on = table[table["on_frontier"]]
        return list(on["system"])

    def dominance(self, x: str = "tokens p95", y: str | None = None) -> pd.DataFrame:
        """Per system with both estimates known, in order of ``x`` (best first): ``x`` and ``y`` estimates,
        ``on_frontier`` (:meth:`frontier`), ``beaten_by`` (the systems that beat it by point estimate) and
        ``beaten_with_confidence_by`` (those whose intervals are better on both columns without overlapping
        its own: a conservative reading, not a test at a stated error rate)."""
        y = self._column(y if y is not None else self.settings.outcome, "y")
        x = self._column(x, "x")
        signs = [self._sign(c) for c in (x, y)]
        est, low, high = (self.estimates(w)[[x, y]] for w in ("estimate", "ci_low", "ci_high"))
        known = est.notna().all(axis=1)
        # Oriented so that larger is better on both axes: a lower-is-better column is negated (and its
        # interval's ends swap).
        good = est[known].to_numpy(dtype=float) * signs
        ends = np.stack([low[known].to_numpy(dtype=float), high[known].to_numpy(dtype=float)])
        worst = np.where(np.array(signs) > 0, ends[0], -ends[1])
        best = np.where(np.array(signs) > 0, ends[1], -ends[0])
        names = list(est.index[known])
        beaten, sure = [], []
        for i in range(len(names)):
            ge = (good >= good[i]).all(axis=1) & (good > good[i]).any(axis=1)
            beaten.append([names[j] for j in np.flatnonzero(ge)])
            clear = (worst > best[i]).all(axis=1)  # NaN bounds compare False: no claim without intervals
            sure.append([names[j] for j in np.flatnonzero(clear)])
        table = pd.DataFrame({"system": names, x: est[known][x].to_numpy(), y: est[known][y].to_numpy(),
                              "on_frontier": [not b for b in beaten], "beaten_by": beaten,
                              "beaten_with_confidence_by": sure})
        return table.iloc[np.argsort(-good[:, 0], kind="stable")].reset_index(drop=True) if len(names) else table

    def _column(self, name: str | None, axis: str) -> str:
        if name is None or name not in self.columns:
            raise CompareError(f"{axis} column {name!r} is not a column of the profile ({', '.join(self.columns)})")
        return name

    def _sign(self, column: str) -> float:
        direction = self.cells.loc[self.cells["column"] == column, "direction"].iloc[0]
        if direction == "neither":
            raise CompareError(f"column {column!r} has no direction (better is neither higher nor lower); declare "
                               f"it, e.g. metrics={{'<metric>': ('<kind>', 'lower')}}")
        return 1.0 if direction == "higher" else -1.0

    def to_dict(self) -> dict[str, Any]:
        """The profile as plain JSON values: systems, columns, cells, descriptions, settings and notes."""
        settings = {**self.settings.__dict__, "seed": jsonable_seed(self.settings.seed)}
        return {
            "systems": list(self.systems),
            "columns": list(self.columns),
            "cells": [{k: _plain(v) for k, v in row.items()} for row in self.cells.to_dict("records")],
            "descriptions": [{"system": s, **{k: _plain(v) for k, v in row.items()}}
                             for s, row in self.descriptions.reindex(list(self.systems)).iterrows()],
            "settings": settings,
            "notes": list(self.notes),
        }

    def _view(self) -> list[Block]:
        s = self.settings
        how = "jointly across systems (they share tasks)" if s.joint else "separately per system"
        unit = f"tasks ({s.cluster!r})" if s.cluster else "runs (no task column)"
        return [
            Title(f"profile: {len(self.systems)} systems x {len(self.columns)} columns"),
            Lines([(f"each cell: estimate [{s.level:.0%} percentile bootstrap interval], tasks weighing the same; "
                    f"{s.n_resamples} resamples of {unit}, {how}; seed {s.seed}"),
                   f"rows ordered {s.order}; never collapsed into one score"], small=True),
            Table(self.table()),
            *([Items(list(self.notes), title="notes")] if self.notes else []),
        ]


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return list(value)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _cell_text(estimate: Any, low: Any, high: Any, statistic: str) -> str:
    fmt = "{:.1%}" if statistic in ("rate", "share") else "{:,.4g}"
    if pd.isna(estimate):
        return number(None)
    if pd.isna(low) or pd.isna(high):
        return f"{number(estimate, fmt)} [no interval]"
    return f"{number(estimate, fmt)} [{number(low, fmt)}, {number(high, fmt)}]"


@dataclass(frozen=True)
class _Column:
    label: str  # the profile's column: "outcome", "rubric 3", "loop", "tool_recall mean", "tokens p95"
    metric: str
    statistic: str  # "rate", "share", "mean", "p50", "p95"
    kind: str
    direction: str
    level: float | None = None  # the level of a share
    q: float | None = None  # the quantile
    requested: bool = True  # named by the user (a bad value is an error, not a note)


def profile(data: pd.DataFrame, arm: str = "arm", metrics: Sequence[str] | Mapping[str, Any] | None = None, *,
            outcome: str = "outcome", cluster: str | None = "task_id", describe: Sequence[str] = ("model", "harness"),
            level: float = 0.95, n_resamples: int = 2000, seed: Any = 0) -> Profile:
    """The profile of every system in ``data``: its score vector, each cell an estimate with its interval.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per run: a score table from :func:`agentab.score`, or any runs table.
    arm : str, default "arm"
        The column naming each run's system (every value is one row of the profile).
    metrics : list of str or dict, optional
        The metric columns, as in :func:`agentab.compare`: names (kinds from the score table or inferred
        from the values) or ``{column: kind or (kind, direction)}``. Default: the score table's metrics and
        every other numeric or boolean column (kinds inferred, noted); of the score table's counts only
        ``n_steps`` (the others, ``repeats``, ``cycles``, ..., are read through their rates ``loop``,
        ``cap_hit``, ...; name them to see their p50 and p95).
    outcome : str, default "outcome"
        The outcome column (binary: a success rate; continuous: a mean score): the first column, and the
        order of the rows. Without it (the default name absent) the rows keep their order of appearance.
    cluster : str or None, default "task_id"
        The task column: tasks weigh the same and are what the bootstrap resamples. None (or no
        ``task_id`` column): every run is its own task, noted.
    describe : sequence of str, default ("model", "harness")
        Columns shown beside each system when the data has them (their distinct values).
    level : float, default 0.95
        Confidence level of the intervals.
    n_resamples : int, default 2000
        Bootstrap resamples.
    seed : int, SeedSequence, Generator or None, default 0
        The one generator's seed (recorded in ``settings.seed``; passing it back reproduces the profile).

    Returns
    -------
    Profile

    Examples
    --------
    >>> import agentab
    >>> from agentab.comparison.profiles import profile
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=2)
    >>> scores = agentab.score(traces, agentab.datasets.example_specs(n_tasks=12))
    >>> p = profile(scores, n_resamples=199)
    >>> p.columns[:2], p.settings.joint
    (('outcome', 'rubric 0'), True)
    """
    level = check_confidence_level(level, CompareError)
    n_resamples = check_n_resamples(n_resamples, CompareError)
    sequence = seed_sequence(seed, CompareError)
    notes: list[str] = []
    frame, names, codes, cluster, columns, describe = _profile_iv(data, arm, metrics, outcome, cluster, describe, notes)
    tasks = _task_codes(frame, cluster)
    rng = np.random.default_rng(sequence)
    arms = [np.flatnonzero(codes == k) for k in range(len(names))]
    joint, draws = task_draws(tasks, arms, n_resamples, rng, cluster is not None)
    columns, values = _metric_values(frame, columns, notes)
    rows = []
    for name, rows_of_arm, (local, weights) in zip(names, arms, draws):
        rows += _arm_cells(name, {m: v[rows_of_arm] for m, v in values.items()}, local, weights, columns, level)
    cells = pd.DataFrame(rows, columns=list(CELL_COLUMNS))
    columns, cells = _drop_unknown(columns, cells, notes)
    order = _order(names, cells, columns[0].label if columns and columns[0].metric == outcome else None)
    cells["system"] = pd.Categorical(cells["system"], categories=order)
    cells["column"] = pd.Categorical(cells["column"], categories=[c.label for c in columns])
    cells = cells.sort_values(["system", "column"], kind="stable").reset_index(drop=True)
    cells["system"], cells["column"] = cells["system"].astype(str), cells["column"].astype(str)
    notes += _interval_notes(cells)
    settings = ProfileSettings(arm, outcome if any(c.metric == outcome for c in columns) else None, cluster,
                               float(level), int(n_resamples), recorded_seed(sequence), joint, MIN_TASKS, _ORDER)
    descriptions = _descriptions(frame, codes, names, describe, tasks).reindex(order)
    return Profile(tuple(order), tuple(c.label for c in columns), cells, descriptions, settings, tuple(notes))


def _profile_iv(data: Any, arm: str, metrics: Any, outcome: str, cluster: Any, describe: Sequence[str],
                notes: list[str]) -> tuple[pd.DataFrame, list[str], np.ndarray, str | None, list[_Column], list[str]]:
    """The checked input: the frame, the system names (order of appearance), each row's system, the task
    column, the score columns in order and the description columns present."""
    if not isinstance(data, pd.DataFrame):
        raise CompareError(f"`data` must be a DataFrame with one row per run (e.g. from agentab.score), got "
                           f"{type(data).__name__}")
    _unique_columns(data.columns, "data", CompareError)
    if not isinstance(arm, str) or arm not in data.columns:
        raise CompareError(f"no arm column {arm!r} in the data (columns: {', '.join(map(str, data.columns))})")
    if data[arm].isna().any():
        raise CompareError(f"column {arm!r} has {int(data[arm].isna().sum())} rows without an arm")
    if len(data) == 0:
        raise CompareError("`data` has no runs")
    try:
        codes, uniques = pd.factorize(data[arm], sort=False)
    except TypeError:
        raise CompareError(f"column {arm!r} has arm labels that are not text or numbers") from None
    names = [str(u) for u in uniques]
    if len(set(names)) < len(names):
        raise CompareError(f"column {arm!r} has arm labels that read the same as text; write them one way")
    if cluster is not None and cluster not in data.columns:
        if cluster != "task_id":
            raise CompareError(f"no cluster column {cluster!r} in the data")
        cluster = None
    if cluster is None:
        notes.append("no task column: every run counts as its own task (too confident if tasks differ in "
                     "difficulty); name the task column with cluster=")
    else:
        _check_task_ids(data[cluster], cluster, CompareError)
    describe = [describe] if isinstance(describe, str) else list(describe)
    describe = [c for c in describe if c in data.columns and c not in (arm, cluster)]
    exclude = {arm, *([cluster] if cluster else []), *describe}
    resolved = _resolve_metrics(data, metrics, exclude, notes)
    if metrics is None:  # the score table's counts are read through their rates (loop, cap_hit, ...)
        counts = [m.name for m in resolved if m.source == "score" and m.kind == "count" and m.name not in _COUNTS]
        resolved = [m for m in resolved if m.name not in counts]
        if counts:
            notes.append("score-table counts left out (their rates are shown; name them in metrics= for their "
                         "p50 and p95): " + ", ".join(counts))
    if outcome in data.columns and outcome not in exclude and all(m.name != outcome for m in resolved):
        resolved = _resolve_metrics(data, [outcome], exclude, notes) + resolved
    elif outcome not in data.columns and outcome != "outcome":
        raise CompareError(f"outcome column {outcome!r} is not a column of the data")
    return data, names, codes, cluster, _score_columns(data, resolved, outcome, notes), describe


def _score_columns(data: pd.DataFrame, resolved: list[_Metric], outcome: str, notes: list[str]) -> list[_Column]:
    """The score vector's columns in order: outcome, level shares, rates, means, then p50 and p95."""
    groups: dict[str, list[_Column]] = {"outcome": [], "ordinal": [], "binary": [], "continuous": [], "quantile": []}
    for m in resolved:
        if m.name == outcome:
            if m.kind not in ("binary", "continuous"):
                raise CompareError(f"outcome {outcome!r} is {m.kind}; the outcome must be binary (a success rate) "
                                   "or continuous (a mean score)")
            statistic = "rate" if m.kind == "binary" else "mean"
            groups["outcome"].append(_Column(m.name, m.name, statistic, m.kind, m.direction, requested=True))
        elif m.kind == "ordinal":
            for value in _levels(data, m):
                groups["ordinal"].append(_Column(f"{m.name} {value:g}", m.name, "share", m.kind, "neither", value,
                                                 requested=m.requested))
        elif m.kind == "binary":
            groups["binary"].append(_Column(m.name, m.name, "rate", m.kind, m.direction, requested=m.requested))
        elif m.kind == "continuous":
            groups["continuous"].append(_Column(f"{m.name} mean", m.name, "mean", m.kind, m.direction,
                                                requested=m.requested))
        elif m.kind in QUANTILE_KINDS:
            for q in (0.5, 0.95):
                groups["quantile"].append(_Column(f"{m.name} p{100 * q:g}", m.name, f"p{100 * q:g}", m.kind,
                                                  m.direction, q=q, requested=m.requested))
    if not groups["outcome"]:
        notes.append(f"no outcome column {outcome!r}: rows in order of appearance")
    return [c for group in groups.values() for c in group]


def _levels(data: pd.DataFrame, metric: _Metric) -> list[float]:
    """The levels of an ordinal metric: 0-3 for agentab's rubric, else the known values (at most 20)."""
    if metric.name == "rubric" and metric.source == "score":
        return [0.0, 1.0, 2.0, 3.0]
    values = _values(data, metric.name, metric.kind)
    levels = np.unique(values[~np.isnan(values)])
    if len(levels) > 20:
        raise CompareError(f"ordinal metric {metric.name!r} has {len(levels)} levels; a profile shows the share "
                           "of each, so give at most 20 (or declare it continuous)")
    return [float(v) for v in levels]


def _metric_values(frame: pd.DataFrame, columns: list[_Column], notes: list[str]
                   ) -> tuple[list[_Column], dict[str, np.ndarray]]:
    """Each metric's values as floats (NaN: unknown), checked: an infinite or huge value, a binary metric
    with other values or a negative cost is an error when the metric was named, else left out with a note."""
    values: dict[str, np.ndarray] = {}
    bad: set[str] = set()
    for c in columns:
        if c.metric in values or c.metric in bad:
            continue
        v = _values(frame, c.metric, c.kind)
        known = v[~np.isnan(v)]
        problem = magnitude_problem(known) or (
            f"{int(np.isinf(known).sum())} infinite value(s)" if np.isinf(known).any() else None)
        if problem is None and c.kind == "binary" and not np.isin(known, (0.0, 1.0)).all():
            problem = "values other than 0/1 (or booleans) in a binary metric: declare its kind"
        if problem is None and c.kind in QUANTILE_KINDS and (known < 0).any():
            problem = f"negative values in a {c.kind} metric: declare it continuous"
        if problem is None:
            values[c.metric] = v
            continue
        if c.requested:
            raise CompareError(f"metric {c.metric!r} has {problem}")
        notes.append(f"metric {c.metric!r} left out: {problem}")
        bad.add(c.metric)
    return [c for c in columns if c.metric not in bad], values


def _task_codes(frame: pd.DataFrame, cluster: str | None) -> np.ndarray:
    """Each run's task as a code (every run its own task without a task column)."""
    if cluster is None:
        return np.arange(len(frame))
    codes, _ = pd.factorize(frame[cluster].astype(object).map(str), sort=True)
    return codes



def _arm_cells(name: str, values: dict[str, np.ndarray], tasks: np.ndarray, weights: np.ndarray,
               columns: list[_Column], level: float) -> list[tuple]:
    """The cells of one system: (system, column, ..., note) per score column."""
    out = []
    quantiles: dict[str, list[_Column]] = {}
    for c in columns:
        if c.q is not None:
            quantiles.setdefault(c.metric, []).append(c)
    done: dict[str, tuple] = {}
    for metric, group in quantiles.items():
        for c, cell in zip(group, quantile_cells(values[metric], tasks, weights, [c.q for c in group], level)):
            done[c.label] = cell
    for c in columns:
        if c.q is None:
            v = values[c.metric]
            if c.level is not None:
                v = np.where(np.isnan(v), np.nan, (np.abs(v - c.level) < 1e-9).astype(float))
            done[c.label] = mean_cell(v, tasks, weights, level)
        estimate, low, high, n_tasks, n_runs = done[c.label]
        note = "" if n_tasks == 0 or n_tasks >= MIN_TASKS else f"too few tasks for an interval ({n_tasks} < {MIN_TASKS})"
        if n_tasks == 0:
            note = "no known value"
        out.append((name, c.label, c.metric, c.statistic, c.kind, c.direction, estimate, low, high, n_tasks, n_runs,
                    note))
    return out


def _drop_unknown(columns: list[_Column], cells: pd.DataFrame, notes: list[str]) -> tuple[list[_Column], pd.DataFrame]:
    """Columns no system knows anything of are left out (named in a note)."""
    known = cells.groupby("column", sort=False)["n_runs"].sum()
    empty = [c.label for c in columns if known.get(c.label, 0) == 0]
    if empty:
        notes.append("left out, no system has a known value: " + ", ".join(empty))
    return [c for c in columns if c.label not in empty], cells[~cells["column"].isin(empty)]


def _order(names: list[str], cells: pd.DataFrame, outcome: str | None) -> list[str]:
    """The systems by outcome estimate, highest first; ties and unknown outcomes in order of appearance."""
    if outcome is None:
        return list(names)
    est = cells[cells["column"] == outcome].set_index("system")["estimate"].reindex(names).to_numpy(dtype=float)
    key = np.where(np.isnan(est), np.inf, -est)
    return [names[i] for i in np.argsort(key, kind="stable")]


def _interval_notes(cells: pd.DataFrame) -> list[str]:
    """One note per system with cells that have an estimate but too few tasks for an interval, and one per
    system with cells it knows nothing of."""
    few = cells[(cells["n_tasks"] > 0) & (cells["n_tasks"] < MIN_TASKS)]
    none = cells[cells["n_tasks"] == 0]
    return ([f"{system}: too few tasks for an interval (fewer than {MIN_TASKS} known) in "
             + ", ".join(group["column"]) for system, group in few.groupby("system", sort=False)]
            + [f"{system}: no known value (n/a) in " + ", ".join(group["column"])
               for system, group in none.groupby("system", sort=False)])


def _descriptions(frame: pd.DataFrame, codes: np.ndarray, names: list[str], describe: list[str],
                  tasks: np.ndarray) -> pd.DataFrame:
    """Per system: the description columns' values, runs and tasks."""
    rows = {}
    for k, name in enumerate(names):
        mask = codes == k
        group = frame.loc[mask]
        rows[name] = {**{c: labels(group[c]) for c in describe}, "runs": int(mask.sum()),
                      "tasks": len(np.unique(tasks[mask]))}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=[*describe, "runs", "tasks"])
    out.index.name = "system"
    return out
