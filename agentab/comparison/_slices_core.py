"""The machinery of :func:`agentab.comparison.slices.compare_slices`: the slices table, Holm, the interaction
test's arrays and the result (the public function and its documentation are in :mod:`agentab.comparison.slices`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import check_whole, jsonable_seed, seed_sequence
from agentab._vocabulary import QUANTILE_KINDS
from agentab._display import (
    Block,
    Display,
    Items,
    Lines,
    Table,
    Title,
    json_ready,
    number,
)
from agentab.comparison._inputs import _values
from agentab.comparison._routing import _rng
from agentab.comparison.decide import holm
from agentab.comparison.result import Comparison
from agentab.errors import CompareError
from agentab.stats.two_sample import task_label
from agentab.stats.interaction import InteractionResult, slice_interaction, slice_interaction_runs
from agentab.traces import load_results

__all__ = ["sliced", "SlicedComparison", "SliceSettings", "SLICE_COLUMNS", "MIN_SLICE_TASKS", "NO_SLICE"]

#: The first columns of :attr:`SlicedComparison.slices`, in this order.
SLICE_COLUMNS = ("slice", "effect", "ci_low", "ci_high", "p_value", "p_adjusted", "n_tasks")
#: A slice with fewer tasks than this (tasks both arms ran, in a paired design; else in either arm) gets no number.
MIN_SLICE_TASKS = 5
#: The slice of runs with no value in the ``by`` column.
NO_SLICE = "(none)"
#: Primary metric kinds the interaction test covers: task-averaged differences of rates and means, Cliff's delta
#: (ordinal) and quantile differences (cost, count).
INTERACTION_KINDS = ("binary", "continuous", "ordinal", *QUANTILE_KINDS)


@dataclass(frozen=True)
class SliceSettings:
    """The settings of a sliced comparison (the per-slice comparisons' own are in their ``settings``).

    Attributes
    ----------
    by : str
        The column or metadata key the runs were sliced by.
    min_tasks : int
        Slices with fewer tasks get no effect (:data:`MIN_SLICE_TASKS` by default).
    seed : int or numpy.random.SeedSequence
        The seed every comparison and the interaction test used; passing it back reproduces the result.
    n_resamples : int
        Permutations of the interaction test (as every comparison's).
    alpha : float
    primary : str
        The primary row whose effect is sliced.
    design : str
        The design of the unsliced comparison, which the interaction test's permutations respect.
    """

    by: str
    min_tasks: int
    seed: Any
    n_resamples: int
    alpha: float
    primary: str
    design: str


@dataclass(frozen=True)
class SlicedComparison(Display):
    """The result of :func:`compare_slices`.

    Attributes
    ----------
    slices : pandas.DataFrame
        One row per slice: :data:`SLICE_COLUMNS` (slice, effect, ci_low, ci_high, p_value, p_adjusted,
        n_tasks), then baseline, candidate (each arm's estimate), design and note. Small or failed slices
        have missing numbers and say why in ``note``.
    interaction_pvalue : float
        The permutation p-value of "the effect is the same in every slice"; NaN when it cannot be tested
        (fewer than two slices with enough tasks).
    interaction : InteractionResult or None
        The test's statistic, its naive chi-square p-value, the slices' effects and variances.
    comparisons : dict
        Slice -> the two-arm :class:`~agentab.Comparison` of :func:`agentab.compare` on its rows (slices
        with enough tasks only).
    overall : Comparison
        The unsliced comparison.
    settings : SliceSettings
    notes : tuple of str
        What was decided on the user's behalf and why a number is missing.
    """

    slices: pd.DataFrame
    interaction_pvalue: float
    interaction: InteractionResult | None
    comparisons: Mapping[Any, Comparison]
    overall: Comparison
    settings: SliceSettings
    notes: tuple[str, ...] = field(default=())

    def flipped_tasks(self, n: int = 10) -> pd.DataFrame:
        """The whole comparison's flipped tasks (:meth:`Comparison.flipped_tasks` of :attr:`overall`), with each
        task's slice in a last column ``slice``."""
        table = self.overall.flipped_tasks(n)
        cluster = self.overall.settings.cluster  # tasks nest in slices (checked), so each task has one
        slice_of = {task: name for name, c in self.comparisons.items() for task in pd.unique(c.data[cluster])}
        return table.assign(slice=[slice_of.get(t) for t in table["task_id"]])

    def to_frame(self) -> pd.DataFrame:
        """The slices table (a copy)."""
        return self.slices.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values: ``schema``, ``by``, ``baseline``, ``candidate``, ``primary``, ``slices`` (one object
        per row), ``interaction`` (pvalue, statistic, wald_pvalue, df, method, note), ``settings``, ``notes`` and
        ``overall`` (the unsliced comparison's ``to_dict()``)."""
        inter = self.interaction
        return json_ready({
            "schema": "agentab.slices/1",
            "by": self.settings.by,
            "baseline": self.overall.baseline,
            "candidate": self.overall.candidate,
            "primary": self.settings.primary,
            "slices": self.slices.astype(object).where(self.slices.notna(), None).to_dict(orient="records"),
            "interaction": {
                "pvalue": self.interaction_pvalue,
                "statistic": None if inter is None else inter.statistic,
                "wald_pvalue": None if inter is None else inter.wald_pvalue,
                "df": None if inter is None else inter.df,
                "method": INTERACTION_METHOD,
                "note": "" if inter is None else inter.note,
            },
            "settings": {**{k: getattr(self.settings, k) for k in SliceSettings.__dataclass_fields__},
                         "seed": jsonable_seed(self.settings.seed)},
            "notes": list(self.notes),
            "overall": self.overall.to_dict(),
        })

    def _view(self) -> list[Block]:
        o, s = self.overall, self.settings
        shown = self.slices[list(SLICE_COLUMNS)].copy()
        for column in ("effect", "ci_low", "ci_high"):
            shown[column] = [number(v, "{:+.4g}") for v in shown[column]]
        for column in ("p_value", "p_adjusted"):
            shown[column] = [number(v, "{:.3g}") for v in shown[column]]
        inter = (f"interaction (does the effect differ between slices?): p = {number(self.interaction_pvalue, '{:.3g}')}"
                 f" ({INTERACTION_METHOD})")
        return [
            Title(f"{s.primary} by {s.by}: {o.candidate} vs {o.baseline}"),
            Lines([f"overall: effect {number(o.table.iloc[0]['effect'], '{:+.4g}')}, p = "
                   f"{number(o.table.iloc[0]['p_value'], '{:.3g}')} ({o.design.label}); seed {s.seed}"]),
            Table(shown),
            Items([inter, HOLM_NOTE.format(min_tasks=s.min_tasks), *self.notes]),
            Items([f"{r.slice}: {r.note}" for r in self.slices.itertuples() if r.note], title="slice notes"),
        ]


INTERACTION_METHOD = ("Cochran's Q of the slice effects, studentized by each slice's variance (for quantiles, "
                      "their task-weighted between-slice sum of squares); slice labels permuted across whole tasks, "
                      "each task keeping its runs in both arms")
HOLM_NOTE = ("p_adjusted: Holm across the slices with at least {min_tasks} tasks (each slice's primary p-value); "
             "the slices' rows are agentab.compare on each slice alone")


def _slice_column(data: pd.DataFrame, by: str, traces: Any) -> pd.Series:
    """The ``by`` value of every row: a column, else a key of a ``metadata`` column, else of ``traces``' runs."""
    if by in data.columns:
        return data[by]
    if "metadata" in data.columns:
        values = pd.Series([_meta(text, by) for text in data["metadata"]], index=data.index, dtype=object)
        if values.notna().any():
            return values
    if traces is not None and "run_id" in data.columns:
        values = traces.metadata_values(by) if "metadata" in traces.runs.columns else pd.Series(dtype=object)
        if values.notna().any():
            by_run = pd.Series(values.to_numpy(), index=traces.runs["run_id"].astype(str).to_numpy())
            return pd.Series(by_run.reindex(data["run_id"].astype(str)).to_numpy(), index=data.index)
    where = " nor a metadata key of the traces' runs" if traces is not None else ""
    raise CompareError(f"`by`={by!r} is neither a column of the data{where} (columns: "
                       f"{', '.join(map(str, data.columns[:12]))}{', ...' if len(data.columns) > 12 else ''})")


def _meta(text: Any, key: str) -> Any:
    """``metadata[key]`` of one run's JSON metadata, as :meth:`agentab.Traces.metadata_values` reads it."""
    try:
        meta = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    found = meta.get(key) if isinstance(meta, dict) else None
    return found if found is None or isinstance(found, str) else json.dumps(found, sort_keys=True)


def _check_nesting(labels: pd.Series, tasks: pd.Series, by: str) -> None:
    """Every task in one slice: the task is the unit of replication."""
    spread = pd.DataFrame({"task": tasks.to_numpy(), "slice": labels.to_numpy()}).drop_duplicates()
    counts = spread.groupby("task", sort=True)["slice"].nunique()
    split = counts[counts > 1]
    if len(split):
        task = split.index[0]
        where = sorted(map(str, spread.loc[spread["task"] == task, "slice"]))
        more = f" (and {len(split) - 1} more task{'s' if len(split) > 2 else ''})" if len(split) > 1 else ""
        raise CompareError(f"task {task!r} is in {len(where)} slices of {by!r} ({', '.join(map(repr, where))}){more}: "
                           "tasks must nest in slices (the task is the unit of replication); slice by a property "
                           "of the task")


def _order(values: pd.Series) -> list[Any]:
    """The slices in sorted order (as text when the values do not sort together), the missing slice last."""
    present = [v for v in pd.unique(values) if v != NO_SLICE]
    try:
        present = sorted(present)
    except TypeError:
        present = sorted(present, key=str)
    return present + ([NO_SLICE] if (values == NO_SLICE).any() else [])


def _n_units(rows: pd.DataFrame, arm: str, arms: tuple[str, str], cluster: str | None, paired: bool) -> int:
    """Tasks of a slice as the design counts them: shared by both arms when paired, else the fewer of the arms'."""
    per_arm = [rows.loc[rows[arm] == a, cluster] if cluster else rows.loc[rows[arm] == a].index for a in arms]
    sets = [set(pd.unique(pd.Series(p))) for p in per_arm]
    return len(sets[0] & sets[1]) if paired else min(len(s) for s in sets)


def _empty_row(label: Any, n_tasks: int, note: str) -> dict[str, Any]:
    return {"slice": label, "effect": math.nan, "ci_low": math.nan, "ci_high": math.nan, "p_value": math.nan,
            "p_adjusted": math.nan, "n_tasks": n_tasks, "baseline": math.nan, "candidate": math.nan,
            "design": "", "note": note}


def _slice_row(label: Any, result: Comparison) -> dict[str, Any]:
    row = result.table.iloc[0]
    notes = [] if pd.isna(row["warnings"]) or not row["warnings"] else [str(row["warnings"])]
    return {"slice": label, "effect": float(row["effect"]), "ci_low": float(row["ci_low"]),
            "ci_high": float(row["ci_high"]), "p_value": float(row["p_value"]), "p_adjusted": math.nan,
            "n_tasks": row["tasks"] if pd.notna(row["tasks"]) else pd.NA, "baseline": float(row["baseline"]),
            "candidate": float(row["candidate"]), "design": str(row["design"]), "note": "; ".join(notes)}


def _holm(table: pd.DataFrame) -> pd.DataFrame:
    family = table["p_value"].notna()
    if family.any():
        table.loc[family, "p_adjusted"] = holm(table.loc[family, "p_value"])
    return table


def _cell_means(frame: pd.DataFrame, column: str, kind: str, cluster: str | None) -> pd.Series:
    """Per-unit means of the primary metric (tasks, or runs without a task column), missing values left out."""
    values = pd.Series(_values(frame, column, kind), index=frame.index)
    keep = values.notna()
    if cluster is None:
        return values[keep]
    return values[keep].groupby(frame.loc[keep, cluster].to_numpy(), sort=True).mean()


def _interaction(overall: Comparison, labels: pd.Series, eligible: list[Any], settings: SliceSettings
                 ) -> tuple[InteractionResult | None, str]:
    """The interaction test on the unsliced comparison's runs of the slices with enough tasks."""
    row = overall.table.iloc[0]
    mean_like = row["statistic"] in ("rate", "mean") and row["kind"] in ("binary", "continuous")
    if row["kind"] not in INTERACTION_KINDS or not (mean_like or row["kind"] == "ordinal" or row["kind"] in QUANTILE_KINDS):
        return None, (f"no interaction test for a {row['kind']} primary metric ({row['statistic']}): it covers "
                      "rates, means, Cliff's delta and quantiles; read the slices' intervals")
    if len(eligible) < 2:
        return None, f"no interaction test: fewer than two slices have at least {settings.min_tasks} tasks"
    runs, arm, cluster = overall.data, overall.settings.arm, overall.settings.cluster
    cluster = cluster if cluster in runs.columns else None
    codes = {label: k for k, label in enumerate(eligible)}
    code = labels.reindex(runs.index).map(codes)
    runs = runs[code.notna()]
    code = code[code.notna()].astype(int)
    root = seed_sequence(settings.seed, CompareError)
    rng = _rng(root, "slices interaction")
    if not mean_like:
        return _run_interaction(overall, runs, code, cluster, rng, settings.n_resamples)
    means = []
    for name in (overall.baseline, overall.candidate):
        rows = runs[arm] == name
        m = _cell_means(runs[rows], str(row["metric"]), str(row["kind"]), cluster)
        unit_code = code[rows].groupby(runs.loc[rows, cluster].to_numpy()).first() if cluster else code[rows]
        means.append((m, unit_code.reindex(m.index)))
    if overall.design.kind == "paired" and cluster is not None:
        (mb, cb), (mc, _) = means
        shared = mb.index.intersection(mc.index)
        d = (mc[shared] - mb[shared]).to_numpy()
        res = slice_interaction((d,), (cb[shared].to_numpy(),), paired=True, n_resamples=settings.n_resamples, rng=rng)
    else:
        res = slice_interaction((means[0][0].to_numpy(), means[1][0].to_numpy()),
                                (means[0][1].to_numpy(), means[1][1].to_numpy()), paired=False,
                                n_resamples=settings.n_resamples, rng=rng, design_kind=overall.design.kind)
    return res, res.note


def _run_interaction(overall: Comparison, runs: pd.DataFrame, code: pd.Series, cluster: str | None,
                     rng: np.random.Generator, n_resamples: int) -> tuple[InteractionResult, str]:
    """The interaction test of an ordinal or quantile primary metric, on the runs (slice labels across tasks)."""
    row, arm = overall.table.iloc[0], overall.settings.arm
    kind = "ordinal" if row["kind"] == "ordinal" else "quantile"
    column = str(row["metric"]).rpartition(" ")[0] if kind == "quantile" else str(row["metric"])
    q = float(np.atleast_1d(overall.metric(str(row["metric"])).q)[0]) if kind == "quantile" else 0.5
    values = pd.Series(_values(runs, column, str(row["kind"])), index=runs.index)
    arms = []
    for name in (overall.baseline, overall.candidate):
        rows = (runs[arm] == name) & values.notna()
        tasks = runs.loc[rows, cluster].map(task_label).to_numpy(dtype=str) if cluster else None
        arms.append((values[rows].to_numpy(), code[rows].to_numpy(), tasks))
    (x, xs, xt), (y, ys, yt) = arms
    res = slice_interaction_runs(x, y, xs, ys, kind=kind, x_strata=xt, y_strata=yt,
                                 paired=overall.design.kind == "paired", q=q, n_resamples=n_resamples, rng=rng)
    return res, res.note


def sliced(data: Any, by: str, *, run: Callable[..., Any], traces: Any = None, min_tasks: int = MIN_SLICE_TASKS,
           **compare_kwargs: Any) -> SlicedComparison:
    """:func:`agentab.comparison.slices.compare_slices`, with ``run`` the two-arm comparison to call (``compare``).

    ``compare(..., by=COL)`` calls this with itself as ``run`` (so this module need not import ``compare``,
    which imports it); the parameters and the result are :func:`~agentab.comparison.slices.compare_slices`'s.
    """
    if not isinstance(by, str) or not by:
        raise CompareError(f"`by` must be a column name or metadata key, got {by!r}")
    min_tasks = check_whole(min_tasks, "min_tasks", 2, CompareError)
    fields, where = compare_kwargs.pop("fields", None), compare_kwargs.pop("where", None)
    if fields is not None or where is not None or isinstance(data, (str, os.PathLike)):
        data = load_results(data, fields=fields, where=where)
    if not isinstance(data, pd.DataFrame):
        raise CompareError(f"compare_slices needs a DataFrame of runs (or a results table's path), got {type(data).__name__}")
    data = data.reset_index(drop=True)  # rows are matched to slices by label
    overall = run(data, **compare_kwargs)
    if not isinstance(overall, Comparison):
        raise CompareError("slices compare two arms: give one candidate (compare each candidate's slices in turn)")
    labels = _slice_column(data, by, traces)
    labels = labels.astype(object).where(labels.notna(), NO_SLICE)
    arm, cluster = overall.settings.arm, overall.settings.cluster
    cluster = cluster if cluster in data.columns else None
    two = data[arm].isin([overall.baseline, overall.candidate])
    if cluster is not None:
        _check_nesting(labels[two], data.loc[two, cluster], by)
    settings = SliceSettings(by, min_tasks, overall.settings.seed, overall.settings.n_resamples, overall.settings.alpha,
                             overall.settings.primary, overall.design.label)
    kwargs = {**compare_kwargs, "baseline": overall.baseline, "candidate": overall.candidate, "seed": settings.seed}
    kwargs.pop("progress", None)
    rows, comparisons, notes = [], {}, []
    if (labels[two] == NO_SLICE).any():
        notes.append(f"{int((labels[two] == NO_SLICE).sum())} runs have no {by!r}: they form the slice {NO_SLICE!r}")
    for label in _order(labels[two]):
        mask = labels == label
        n = _n_units(data[mask & two], arm, (overall.baseline, overall.candidate), cluster,
                     overall.design.kind == "paired")
        if n < min_tasks:
            rows.append(_empty_row(label, n, f"{n} task{'s' if n != 1 else ''}: fewer than {min_tasks}, no effect "
                                             "is estimated (too few to say)"))
            continue
        try:
            result = run(data[mask], **kwargs)
        except CompareError as exc:
            rows.append(_empty_row(label, n, f"not compared: {exc}"))
            continue
        used = result.table.iloc[0]["tasks"]
        if result.design.kind == "paired" and pd.notna(used) and used < min_tasks:  # tasks with values in both arms
            rows.append(_empty_row(label, int(used), f"{used} tasks with a value in both arms: fewer than {min_tasks}, "
                                                     "no effect is estimated (too few to say)"))
            continue
        comparisons[label] = result
        rows.append(_slice_row(label, result))
    table = _holm(pd.DataFrame(rows))
    table["n_tasks"] = table["n_tasks"].astype("Int64")
    inter, why = _interaction(overall, labels, list(comparisons), settings)
    if why:
        notes.append(why)
    p = math.nan if inter is None else float(inter.pvalue)
    return SlicedComparison(table, p, inter, comparisons, overall, settings, tuple(notes))
