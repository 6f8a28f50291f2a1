"""The report of many arms (:class:`~agentab.comparison.MultiComparison`) and of slices
(:class:`~agentab.comparison.SlicedComparison`), through the two-arm report's blocks and renderers.

:func:`agentab.report` hands these results here. The two-arm report's module is passed in (``sections``)
rather than imported, so this module never imports :mod:`agentab.reporting.report` (which imports it):
no import cycle, and one set of section builders, escaping renderers and atomic writers for every report.

Many arms: the decision first (one verdict line per candidate, the adjustment across candidates, the
best-candidate statement), the summary table, the profile of every system (:func:`agentab.profile`: its
grid figure, and the Pareto figure of the primary metric against a cost p95 when a cost metric was
compared), then per candidate a collapsed section holding its two-arm report's body, built by the same
function (:func:`agentab.reporting.report._body`): verdict and reasons, arms and design, the effects (forest
plot and table), ordinal levels, the cost quantile shifts, the trajectory section (success by step count,
failure shapes, tool choice and the findings of :func:`agentab.diagnose` of the pair's runs, with the
traces when given), the per-task profile, the flipped tasks opening onto their runs' trajectories, the
next experiment and its notes. Two things are lighter than in a two-arm report, to keep a sweep's file
and build time in proportion: no distribution figure per cost metric (the profile has every system's p50
and p95) and up to :data:`FLIPPED_PER_CANDIDATE` flipped tasks each way (the baseline's runs recur in
every candidate's). A ``diagnosis`` passed to :func:`agentab.report` is not used here: each candidate's
findings are its own pair's.

Slices: the whole two-arm report of the unsliced comparison, then a "Slices" section: a warning naming
the slices with no estimate, the slices table (each slice's arms, effect and interval formatted as the
comparison table's, p-values, design, and why a slice has no number), the interaction test's p-value
with its method, and the notes of every slice.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from agentab.comparison import MultiComparison, SlicedComparison, profile
from agentab.comparison.decide import format_value
from agentab.errors import CompareError
from agentab.reporting._markdown import _Block

__all__ = ["is_many", "report_many"]

#: Each candidate's "Which tasks flipped" lists up to this many regressed and this many improved tasks (the
#: two-arm report: 10), each opening onto its runs' trajectories: the baseline's runs recur in every candidate.
FLIPPED_PER_CANDIDATE = 5
#: Preferred cost columns for the Pareto view, in order (else the first cost metric compared).
PARETO_COSTS = ("cost_usd", "tokens", "latency_s")


def is_many(result: Any) -> bool:
    """Whether ``result`` is a comparison of many arms or of slices (reported here, not as two arms)."""
    return isinstance(result, (MultiComparison, SlicedComparison))


def report_many(result: Any, path: str | Path, sections: ModuleType, *, format: str | None, traces: Any,
                diagnosis: Any, title: str | None, seed: Any) -> Path:
    """Write the report of a :class:`MultiComparison` or a :class:`SlicedComparison` (see the module).

    Parameters
    ----------
    result : MultiComparison or SlicedComparison
    path, format, traces, title, seed
        As :func:`agentab.report`.
    sections : module
        :mod:`agentab.reporting.report`: its section builders, renderers and checks.
    diagnosis : Diagnosis, optional
        For a sliced comparison, the overall report's findings; not used for many arms (each candidate's
        findings are those of its pair's runs).

    Returns
    -------
    pathlib.Path
    """
    from agentab.reporting import plots

    if isinstance(result, MultiComparison):
        first = next(iter(result.candidates.values()))
        path, format = sections._report_iv(first, path, format, traces, diagnosis)
        title = title or f"agentab: {len(result.candidates)} candidates vs {result.baseline}"
        seed = result.settings.seed if seed is None else seed
        blocks = [_Block("h1", title)] + _decision(result) + _profile(result, plots)
        for name, comparison in result.candidates.items():
            body = _candidate_body(sections, comparison, plots, traces, format, seed)
            blocks.append(_Block("details", f"{name} vs {result.baseline}: {comparison.verdict}", children=body))
    else:
        path, format = sections._report_iv(result.overall, path, format, traces, diagnosis)
        overall = result.overall
        title = title or f"agentab: {overall.candidate} vs {overall.baseline}, by {result.settings.by}"
        seed = overall.settings.seed if seed is None else seed
        blocks = sections._body(overall, plots, traces, diagnosis, seed, format, title) + _slices(result)
    sections._write(path, format, title, blocks)
    return path


# --------------------------------------------------------------------------- #
# Many arms
# --------------------------------------------------------------------------- #
def _decision(result: MultiComparison) -> list[_Block]:
    s = result.settings
    return [
        _Block("p", f"{len(result.candidates)} candidate(s) against the baseline {result.baseline}; primary metric "
                    f"{s.primary} at alpha {s.alpha:g}; {s.n_resamples:,} resamples; seed {s.seed}."),
        _Block("h2", "Decision"),
        _Block("list", items=result.verdict_lines()),
        _Block("p", result.best_statement),
        _Block("p", f"Adjustment: {result.adjustment}; secondary metrics: Holm within each candidate."),
        _Block("h2", "Summary"),
        _Block("table", table=result.summary_table()),
        *([_Block("list", items=[f"Note: {n}" for n in result.notes])] if result.notes else []),
    ]


def _runs(result: MultiComparison) -> pd.DataFrame:
    """Every compared run once: the baseline's (from the first candidate's comparison) and each candidate's."""
    arm = result.settings.arm
    frames = []
    for i, (name, comparison) in enumerate(result.candidates.items()):
        data = comparison.data
        keep = data[arm].astype(str) == str(name)
        if i == 0:
            keep |= data[arm].astype(str) == str(result.baseline)
        frames.append(data[keep])
    return pd.concat(frames, ignore_index=True)


def _profile(result: MultiComparison, plots: Any) -> list[_Block]:
    first = next(iter(result.candidates.values()))
    kinds, directions = first.metrics["kind"], first.metrics["direction"]
    metrics = {m: (str(kinds[m]), str(directions[m])) for m in kinds.index}
    primary = str(first.settings.primary)
    primary = primary if primary in kinds.index else primary.rsplit(" p", 1)[0]
    outcome = primary if primary in kinds.index and kinds[primary] in ("binary", "continuous") else "outcome"
    blocks = [_Block("h2", "Profile of every system"),
              _Block("p", "Each system's score vector, each cell an estimate with its interval (a bootstrap over "
                          "tasks); ordered by the outcome, never collapsed into one score (agentab.profile).")]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = profile(_runs(result), arm=result.settings.arm, metrics=metrics, outcome=outcome,
                            cluster=first.settings.cluster, n_resamples=result.settings.n_resamples,
                            seed=result.settings.seed)
    except CompareError as err:
        return blocks + [_Block("p", f"No profile: {err}.")]
    blocks += [_Block("figure", "Profile of every system", figure=plots.profile_figure(found)),
               _Block("details", "The profile table", children=[_Block("table", table=found.table())])]
    costs = [m for m in kinds.index if kinds[m] == "cost" and f"{m} p95" in found.columns]
    costs = sorted(costs, key=lambda m: PARETO_COSTS.index(m) if m in PARETO_COSTS else len(PARETO_COSTS))
    if costs and found.settings.outcome is not None:
        try:
            figure = plots.pareto_figure(found, x=f"{costs[0]} p95")
        except CompareError as err:
            blocks.append(_Block("p", f"No Pareto view: {err}."))
        else:
            blocks += [_Block("p", f"The Pareto view: {found.settings.outcome} against {costs[0]} p95; the frontier "
                                   "is read off the point estimates (the error bars show how far off it a system may be)."),
                       _Block("figure", f"Pareto view of {found.settings.outcome} against {costs[0]} p95", figure=figure)]
    else:
        blocks.append(_Block("p", "No Pareto view: no cost metric was compared (or no outcome to set against it)."))
    if found.notes:
        blocks.append(_Block("details", "Notes of the profile", children=[_Block("list", items=list(found.notes))]))
    return blocks


def _candidate_body(sections: ModuleType, comparison: Any, plots: Any, traces: Any, format: str,
                    seed: Any) -> list[_Block]:
    """One candidate's two-arm report (:func:`agentab.reporting.report._body`) without its title: the cost
    section without the distribution figures (the profile has each system's p50 and p95), and up to
    :data:`FLIPPED_PER_CANDIDATE` flipped tasks each way."""
    body = sections._body(comparison, plots, traces, None, seed, format, "", distributions=False,
                          flipped=FLIPPED_PER_CANDIDATE)
    return [b for b in body if b.kind != "h1"]


# --------------------------------------------------------------------------- #
# Slices
# --------------------------------------------------------------------------- #
def _slice_table(result: SlicedComparison) -> pd.DataFrame:
    """The slices as people read them: each slice's arms, its effect with its interval and its p-values, formatted
    as the comparison table is; a slice without a number says why in ``note`` (the whole note is listed below)."""
    t, row = result.slices, result.overall.table.iloc[0]
    kind, alpha = str(row["kind"]), result.settings.alpha

    def p(v: Any) -> str:
        return f"{v:.3g}" if pd.notna(v) else "-"

    def why(effect: Any, n: Any, note: Any) -> str:
        if pd.notna(effect):
            return "see the slice notes" if isinstance(note, str) and note else ""
        if isinstance(note, str) and note.startswith("not compared"):
            return "not compared (see the slice notes)"
        return f"no estimate: {n} tasks, fewer than {result.settings.min_tasks}" if pd.notna(n) else "no estimate"

    return pd.DataFrame({
        "slice": t["slice"].astype(str),
        "n_tasks": [str(n) if pd.notna(n) else "-" for n in t["n_tasks"]],
        "baseline": [format_value(float(v), kind) for v in t["baseline"]],
        "candidate": [format_value(float(v), kind) for v in t["candidate"]],
        "effect": [format_value(float(v), kind, signed=True) for v in t["effect"]],
        f"{1 - alpha:.0%} CI": [f"[{format_value(float(lo), kind, True)}, {format_value(float(hi), kind, True)}]"
                                if pd.notna(lo) and pd.notna(hi) else "-" for lo, hi in zip(t["ci_low"], t["ci_high"])],
        "p_value": [p(v) for v in t["p_value"]],
        "p_adjusted": [p(v) for v in t["p_adjusted"]],
        "design": [str(d) if isinstance(d, str) and d else "-" for d in t["design"]],
        "note": [why(e, n, note) for e, n, note in zip(t["effect"], t["n_tasks"], t["note"])],
    })


def _slices(result: SlicedComparison) -> list[_Block]:
    s = result.settings
    table = _slice_table(result)
    interaction = result.to_dict()["interaction"]
    p = result.interaction_pvalue
    blocks = [
        _Block("h2", "Slices"),
        _Block("p", f"The effect of {s.primary} in each slice of {s.by} (candidate minus baseline) with its "
                    f"{1 - s.alpha:.0%} confidence interval, each slice compared alone; p_adjusted is Holm across "
                    f"the slices with at least {s.min_tasks} tasks. The raw numbers: result.slices."),
    ]
    unestimated = [f"{r.slice} ({r.note})" for r in table.itertuples() if r.note.startswith(("no estimate", "not "))]
    if unestimated:
        k = len(unestimated)
        blocks.append(_Block("warning", f"Warning: {k} of {len(table)} slices {'has' if k == 1 else 'have'} no "
                                        f"estimate (too small to say, or not compared): {'; '.join(unestimated)}."))
    blocks += [
        _Block("table", table=table),
        _Block("p", "Interaction (does the effect differ between slices?): p = "
                    + (f"{p:.3g}" if pd.notna(p) else "not tested") + f"; {interaction['method']}."),
    ]
    if interaction["note"]:
        blocks.append(_Block("p", str(interaction["note"])))
    small = [f"{r.slice}: {r.note}" for r in result.slices.itertuples() if isinstance(r.note, str) and r.note]
    if small:
        blocks += [_Block("p", "Slice notes (a slice with too few tasks gets no number, and says so):"),
                   _Block("list", items=small)]
    if result.notes:
        blocks += [_Block("list", items=list(result.notes))]
    return blocks


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #
