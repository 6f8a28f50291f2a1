"""The report of a comparison: one self-contained HTML file (or Markdown with images beside it).

:func:`report` puts the decision first, then the evidence as pictures:
effects of every metric (a forest plot), ordinal level shares, cost
distributions and quantile shifts, success by step count, failure shapes,
tool choice, the findings of :func:`agentab.diagnose`, a per-task profile
and, for an inconclusive verdict, the power curve of the next experiment.
It uses only agentab's public API (the comparison's attributes,
:func:`agentab.diagnose`, :mod:`agentab.plots`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentab._write import atomic_text
from agentab.comparison.decide import ASSESSMENT_RULE
from agentab.errors import ReportError, StatsWarning
from agentab.reporting._flipped_section import FLIPPED_SHOWN, flipped_section
from agentab.reporting._markdown import _Block, format_cell, png, write_markdown

__all__ = ["report", "task_profile"]

#: Formats of :func:`report`, by file suffix.
FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}


# --------------------------------------------------------------------------- #
# Blocks: what a report says, independent of its format
# --------------------------------------------------------------------------- #
def task_profile(comparison: Any, metric: str | None = None) -> pd.DataFrame:
    """One row per task: its outcome in each arm, the spread across its seeds, path validity, side effects, cost.

    Parameters
    ----------
    comparison : Comparison
        From :func:`agentab.compare`.
    metric : str, optional
        The outcome column (default: the primary metric when it is binary,
        ordinal or continuous, else ``"outcome"``).

    Returns
    -------
    pandas.DataFrame
        Index: task. For each arm A: ``runs A``, ``{metric} A`` (the task's
        mean), ``seeds A`` (successes of runs, e.g. ``"3/5"``, for a binary
        metric; the range for others), and when the scores have them
        ``path valid A`` (share of runs matching the reference path),
        ``side effects A`` (forbidden plus unexpected, summed), ``cost A``
        (median ``cost_usd``, else ``tokens``), unless no run has them.
        ``change`` is candidate minus baseline; rows are sorted regressions
        first, by the metric's direction (for a metric where lower is
        better, the largest rise first).

    Examples
    --------
    >>> import agentab
    >>> scores = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=8, n_seeds=2))
    >>> result = agentab.compare(scores, metrics=["outcome"], n_resamples=199, seed=0)
    >>> agentab.task_profile(result).columns[:3].tolist()
    ['runs baseline', 'outcome baseline', 'seeds baseline']
    """
    data, arm, cluster = comparison.data, comparison.settings.arm, comparison.settings.cluster
    if cluster is None:
        raise ReportError("a per-task profile needs a task column (the comparison had cluster=None)")
    metric = _profile_metric(comparison) if metric is None else metric
    if metric is None or metric not in data:
        raise ReportError(f"no outcome column {metric!r} for the per-task profile")
    binary = comparison.metrics.loc[metric, "kind"] == "binary" if metric in comparison.metrics.index else False
    values = pd.to_numeric(data[metric].astype("Float64"), errors="coerce")
    frame = pd.DataFrame({"task": data[cluster].astype(str), "arm": data[arm].astype(str), "value": values})
    extras = {}
    if "reference_match" in data:
        extras["path valid"] = ("mean", data["reference_match"].astype("Float64"))
    elif "required_missing" in data:
        extras["path valid"] = ("mean", (data["required_missing"].astype("Float64") == 0).astype("Float64"))
    effects = [c for c in ("forbidden_side_effects", "unexpected_side_effects") if c in data]
    if effects:
        extras["side effects"] = ("sum", data[effects].astype("Float64").sum(axis=1, min_count=1))
    cost = next((c for c in ("cost_usd", "tokens") if c in data), None)
    if cost is not None:
        extras["cost"] = ("median", data[cost].astype("Float64"))
    for name, (_, series) in extras.items():
        frame[name] = series.to_numpy(dtype=float, na_value=np.nan)
    parts = []
    for name in (comparison.baseline, comparison.candidate):
        group = frame[frame["arm"] == str(name)].groupby("task", sort=True)
        part = pd.DataFrame({f"runs {name}": group.size(), f"{metric} {name}": group["value"].mean()})
        if binary:
            part[f"seeds {name}"] = [f"{int(np.nansum(v))}/{int(np.isfinite(v).sum())}" for v in group["value"].apply(np.asarray)]
        else:
            part[f"seeds {name}"] = [f"{np.nanmin(v):.3g} to {np.nanmax(v):.3g}" if np.isfinite(v).any() else "-"
                                     for v in group["value"].apply(np.asarray)]
        for extra, (how, _) in extras.items():
            part[f"{extra} {name}"] = group[extra].agg(how)
        parts.append(part)
    table = pd.concat(parts, axis=1)
    table = table.drop(columns=[c for c in table.columns if table[c].isna().all()])
    table["change"] = table[f"{metric} {comparison.candidate}"] - table[f"{metric} {comparison.baseline}"]
    table.index.name = cluster
    worse_first = table["change"] * (-1 if _direction(comparison, metric) == "lower" else 1)
    order = pd.DataFrame({"w": worse_first, "b": table[f"{metric} {comparison.baseline}"]}).sort_values(
        ["w", "b"], kind="stable", na_position="last").index
    return table.loc[order]


def _direction(comparison: Any, metric: str) -> str:
    directions = comparison.metrics["direction"]
    return str(directions[metric]) if metric in directions.index else "higher"


def _primary_metric(comparison: Any) -> str:
    """The primary metric's column (``"tokens p50"`` -> ``"tokens"``)."""
    primary = str(comparison.settings.primary)
    return primary if primary in comparison.metrics.index else primary.rsplit(" p", 1)[0]


def _outcome_named(comparison: Any) -> pd.DataFrame:
    """The compared runs with a binary primary metric of another name read as the outcome (diagnose reads
    "outcome"), so a results table's ``resolved`` or ``passed`` gets its trajectory section."""
    data, primary = comparison.data, _primary_metric(comparison)
    kinds = comparison.metrics["kind"]
    if "outcome" not in data and primary in kinds.index and kinds[primary] == "binary":
        return data.rename(columns={primary: "outcome"})
    return data


def _profile_metric(comparison: Any) -> str | None:
    primary = _primary_metric(comparison)
    kinds = comparison.metrics["kind"]
    if primary in kinds.index and kinds[primary] in ("binary", "ordinal", "continuous"):
        return primary
    return "outcome" if "outcome" in comparison.data else None


def _header(comparison: Any, title: str) -> list[_Block]:
    arms = comparison.arms.reset_index()
    arms = arms.rename(columns={arms.columns[0]: "arm"})
    arms.insert(1, "role", ["baseline" if a == comparison.baseline else "candidate" for a in arms["arm"]])
    design, s = comparison.design, comparison.settings
    design_text = (
        f"Design: {design.label}; seeds per task {design.seeds}; primary metric {s.primary} tested at "
        f"alpha {s.alpha:g}; {s.n_resamples:,} resamples; seed {s.seed}."
    )
    blocks = [_Block("h1", title)]
    if design.warning:
        blocks.append(_Block("warning", f"Warning: {design.warning}."))
    blocks += [
        _Block("verdict", comparison.verdict),
        _Block("list", items=list(comparison.decision.reasons)),
    ]
    if comparison.decision.explanations:
        blocks += [_Block("p", "What changed (explains, does not decide):"),
                   _Block("list", items=list(comparison.decision.explanations))]
    blocks += [_Block("h2", "Arms and design"), _Block("table", table=arms), _Block("p", design_text)]
    if comparison.dropped:
        blocks += [_Block("p", "Left out of the tests (counted and named; all of them: comparison.dropped):"),
                   _Block("list", items=[str(d) for d in comparison.dropped])]
    return blocks


def _effects(comparison: Any, plots: Any) -> list[_Block]:
    table = comparison.summary_table()
    return [
        _Block("h2", "Effects"),
        _Block("p", "Every metric's effect (candidate minus baseline) with its confidence interval, primary first. "
                    "The primary metric is tested alone; the others (trajectory and cost) explain and are Holm-adjusted."),
        *_family(comparison),
        _Block("p", ASSESSMENT_RULE[0].upper() + ASSESSMENT_RULE[1:] + "."),
        _Block("figure", "Forest plot of every metric's effect", figure=plots.forest(comparison)),
        _Block("details", "The comparison table", children=[_Block("table", table=table)]
               + [_Block("p", f"({n})") for n in comparison.footnotes()]),
    ]


def _family(comparison: Any) -> list[_Block]:
    """Which rows were Holm-adjusted together: a sentence, and the rows listed when they are many."""
    family = list(comparison.holm_family)
    if len(family) <= 8:
        return [_Block("p", comparison.family_note() + ".")]
    return [_Block("p", f"Holm family: {len(family)} rows adjusted together (the primary metric is tested alone); a "
                        "secondary's adjusted p-value, and so its assessment, changes with the metrics compared."),
            _Block("details", f"The {len(family)} rows of the Holm family", children=[_Block("list", items=family)])]


def _levels(comparison: Any, plots: Any) -> list[_Block]:
    metrics = list(dict.fromkeys(comparison.levels["metric"]))
    if not metrics:
        return []
    blocks = [_Block("h2", "Ordinal levels"),
              _Block("p", "Share of runs at each level, worst first. The test is on Cliff's delta, which uses only "
                          "the order of the levels.")]
    for metric in metrics:
        blocks.append(_Block("figure", f"Level shares of {metric} by arm", figure=plots.level_shares(comparison, metric)))
    return blocks


def _cost(comparison: Any, plots: Any, seed: Any, *, distributions: bool = True) -> list[_Block]:
    """The cost section; ``distributions=False`` (a many-arm report's candidate, whose p50 and p95 the profile
    shows) leaves out each metric's distribution figure and keeps the quantile shift."""
    kinds = comparison.metrics["kind"]
    named = {_primary_metric(comparison)}
    named |= {check.guardrail.metric for check in comparison.decision.guardrails}
    metrics = [m for m, k in kinds.items() if k == "cost" or (k == "count" and (m in named or m == "n_steps"))]
    metrics = [m for m in metrics if m in comparison.data]
    if not metrics:
        return []
    shift = ("the quantile shift: the candidate's change at each decile and at p95, where the distributions differ "
             "and not only whether (Doksum 1974), with simultaneous intervals (Bonferroni over the quantiles).")
    intro = (f"Distributions on a log axis with p50 and p95 marked, then {shift}" if distributions else
             f"The {shift[4:]} Each system's p50 and p95 are in the profile; the distributions on a log axis are in "
             "this candidate's own report (agentab.report(result.candidates[name], ...)).")
    blocks = [_Block("h2", "Cost and other long-tailed metrics"), _Block("p", intro)]
    for metric in metrics:
        blocks.append(_Block("h3", metric))
        if not (pd.to_numeric(comparison.data[metric], errors="coerce") > 0).any():
            blocks.append(_Block("p", f"Every run's {metric} is 0 (or missing): nothing to plot."))
            continue
        if distributions:
            blocks.append(_Block("figure", f"Distribution of {metric} by arm", figure=plots.ecdf(comparison, metric)))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", StatsWarning)
                shift = plots.quantile_shift(comparison, metric, seed=seed)
        except ValueError as err:  # e.g. too few runs for a decile
            blocks.append(_Block("p", f"No quantile shift for {metric}: {err}"))
        else:
            blocks.append(_Block("figure", f"Quantile shift of {metric}", figure=shift))
            tails = [str(w.message).split(": ", 1)[-1] for w in caught if issubclass(w.category, StatsWarning)]
            if tails:
                blocks.append(_Block("list", items=tails))
    return blocks


def _trajectory(comparison: Any, diagnosis: Any, plots: Any) -> list[_Block]:
    if diagnosis is None:
        return []
    colours = {"baseline": comparison.baseline, "candidate": comparison.candidate}
    blocks = [_Block("h2", "Trajectory")]
    if "steps" in diagnosis.tables and len(diagnosis.tables["steps"]):
        blocks += [_Block("p", "Success by step count: a cliff is the signature of context exhaustion."),
                   _Block("figure", "Success rate by step-count bucket", figure=plots.step_buckets(diagnosis, **colours))]
    if "rates" in diagnosis.tables and any(c in diagnosis.tables["rates"] for c in plots.FAILURE_RATES):
        blocks.append(_Block("figure", "Failure shapes by arm", figure=plots.failure_rates(diagnosis, **colours)))
    if "tool_choice" in diagnosis.tables and len(diagnosis.tables["tool_choice"]):
        blocks.append(_Block("figure", "Tool choice by arm", figure=plots.tool_choice(diagnosis, **colours)))
    else:
        blocks.append(_Block("p", "Tool choice is not shown: pass the traces (report(..., traces=traces)) for the steps."))
    findings = diagnosis.findings
    blocks.append(_Block("h3", f"Findings ({len(findings)})"))
    if not findings:
        blocks.append(_Block("p", "No failure shape passed its threshold."))
    for finding in findings:
        blocks.append(_Block("details", finding.title, children=[
            _Block("p", finding.reading), _Block("table", table=finding.evidence.reset_index())]))
    return blocks


def _tasks(comparison: Any, plots: Any) -> list[_Block]:
    if comparison.settings.cluster is None:
        return []
    metric = _profile_metric(comparison)
    if metric is None:
        return []
    profile = task_profile(comparison, metric)
    direction = _direction(comparison, metric)
    blocks = [_Block("h2", "Per task"),
              _Block("p", "Each task's result in each arm, the spread across its seeds, path validity, side effects "
                          "and cost. A profile says more than a rank: look at the tasks that moved.")]
    base, cand = profile[f"{metric} {comparison.baseline}"], profile[f"{metric} {comparison.candidate}"]
    if base.dropna().between(0, 1).all() and cand.dropna().between(0, 1).all():
        blocks.append(_Block("figure", "Per-task outcome, baseline against candidate", figure=plots.task_outcomes(
            profile, baseline=comparison.baseline, candidate=comparison.candidate, metric=metric, direction=direction)))
    better = profile["change"] * (-1 if direction == "lower" else 1)
    if direction == "neither":
        blocks.append(_Block("p", f"{int((profile['change'] > 0).sum())} tasks rose, {int((profile['change'] < 0).sum())} "
                                  f"fell, {int((profile['change'] == 0).sum())} unchanged."))
    else:
        blocks.append(_Block("p", f"{int((better > 0).sum())} tasks improved, {int((better < 0).sum())} regressed, "
                                  f"{int((better == 0).sum())} unchanged ({metric}: {direction} is better)."))
    shown, title = profile, f"All {len(profile)} tasks, regressions first"
    if len(profile) > 2 * TASKS_SHOWN:
        shown = pd.concat([profile.head(TASKS_SHOWN), profile.tail(TASKS_SHOWN)])
        title = (f"The {TASKS_SHOWN} largest regressions and the {TASKS_SHOWN} largest improvements of {len(profile)} "
                 "tasks (all of them: agentab.task_profile(comparison))")
    blocks.append(_Block("details", title, children=[_Block("table", table=shown.reset_index())]))
    return blocks


#: A report's per-task table shows every task up to twice this, else this many at each end.
TASKS_SHOWN = 30


def _next_experiment(comparison: Any, plots: Any) -> list[_Block]:
    plan = comparison.plan
    if plan is None:
        return []
    return [
        _Block("h2", "The next experiment"),
        _Block("p", "The verdict is inconclusive. A new experiment of this size would detect the effect with "
                    f"{plan.target:.0%} power (adding tasks to this experiment and testing again inflates false positives)."),
        _Block("figure", "Power curve of the next experiment", figure=plots.power_curve(plan)),
        _Block("pre", str(plan)),
    ]


def _notes(comparison: Any) -> list[_Block]:
    warned = comparison.table[comparison.table["warnings"] != ""]
    items = [f"{m}: {w}" for m, w in zip(warned["metric"], warned["warnings"])] + list(comparison.notes)
    if not items:
        return []
    return [_Block("h2", "Warnings and notes"), _Block("list", items=items)]


# --------------------------------------------------------------------------- #
# Rendering
# --------------------------------------------------------------------------- #
_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#222;line-height:1.45}
h1{font-size:1.5rem;margin-bottom:.3rem}h2{font-size:1.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
h3{font-size:1rem}
.verdict{font-size:1.4rem;font-weight:bold;padding:.4rem .8rem;border-radius:.3rem;display:inline-block;color:#fff}
.warning{border-left:4px solid #b2182b;background:#fdf0f0;padding:.4rem .8rem;font-weight:bold}
.v-ship{background:#1b7837}.v-dont{background:#b2182b}.v-inconclusive{background:#595959}
h1,h2,h3,p,li,summary,footer{overflow-wrap:anywhere}
table{border-collapse:collapse;font-size:.82rem;margin:.5rem 0;max-width:100%}th,td{border-bottom:1px solid #e5e5e5;
padding:.2rem .4rem;text-align:left;overflow-wrap:anywhere;vertical-align:top}th{background:#f5f5f5}
img{max-width:100%;height:auto;display:block;margin:.6rem 0}
pre{background:#f7f7f7;padding:.6rem;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.78rem}
details{margin:.4rem 0}summary{cursor:pointer}
footer{margin-top:2rem;font-size:.8rem;color:#666}
"""


def _html(blocks: list[_Block], figures: list[tuple[str, bytes]]) -> str:
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}>{html.escape(b.text)}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{html.escape(b.text)}</p>")
        elif b.kind == "warning":
            out.append(f"<p class='warning'>{html.escape(b.text)}</p>")
        elif b.kind == "verdict":
            css = {"ship": "v-ship", "don't ship": "v-dont"}.get(b.text, "v-inconclusive")
            out.append(f"<p><span class='verdict {css}'>Verdict: {html.escape(b.text)}</span></p>")
        elif b.kind == "list":
            out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in b.items) + "</ul>")
        elif b.kind == "table":
            shown = b.table.map(format_cell) if len(b.table) else b.table
            out.append(shown.to_html(index=False, escape=True, border=0))
        elif b.kind == "figure":
            data = png(b.figure)
            figures.append((b.text, data))
            encoded = base64.b64encode(data).decode("ascii")
            out.append(f"<img alt='{html.escape(b.text, quote=True)}' src='data:image/png;base64,{encoded}'>")
        elif b.kind == "pre":
            out.append(f"<pre>{html.escape(b.text)}</pre>")
        elif b.kind == "details":
            out.append(f"<details><summary>{html.escape(b.text)}</summary>{_html(b.children, figures)}</details>")
    return "\n".join(out)


def _report_iv(comparison: Any, path: Any, format: Any, traces: Any, diagnosis: Any) -> tuple[Path, str]:
    from agentab.comparison import Comparison

    if not isinstance(comparison, Comparison):
        raise ReportError(f"report needs a Comparison from agentab.compare, got {type(comparison).__name__}")
    if comparison.data is None or comparison.data.empty:
        raise ReportError("this Comparison carries no runs (made by an older agentab?): compare again")
    path = Path(path)
    if format is None:
        format = FORMATS.get(path.suffix.lower())
        if format is None:
            raise ReportError(f"{path}: say format='html' or 'markdown', or end the name in .html or .md")
    if format not in ("html", "markdown"):
        raise ReportError(f"`format` == {format!r}, must be 'html' or 'markdown'")
    if path.is_dir():
        raise ReportError(f"{path} is a folder: give the report's file name")
    if not path.parent.exists():
        raise ReportError(f"{path.parent}: no such folder")
    if traces is not None and not (hasattr(traces, "runs") and hasattr(traces, "steps")):
        raise ReportError(f"`traces` must be agentab Traces, got {type(traces).__name__}")
    if diagnosis is not None and not hasattr(diagnosis, "findings"):
        raise ReportError(f"`diagnosis` must come from agentab.diagnose, got {type(diagnosis).__name__}")
    return path, format


def report(
    comparison: Any,
    path: str | Path,
    *,
    format: str | None = None,
    traces: Any = None,
    diagnosis: Any = None,
    title: str | None = None,
    seed: Any = None,
) -> Path:
    """Write the report of a comparison: the decision first, then the evidence as pictures.

    Parameters
    ----------
    comparison : Comparison, MultiComparison or SlicedComparison
        From :func:`agentab.compare`. Many candidates: the decision and summary, the profile of every
        system, then each candidate's two-arm report collapsed (its cost quantile shifts without the
        distribution figures, its trajectory findings, up to 5 flipped tasks each way); slices (``by=``):
        the overall report and a "Slices" section (:mod:`agentab.reporting._many`).
    path : str or Path
        The file to write. With ``format="markdown"`` the images go in a
        folder beside it, ``<stem>_files/`` (``<stem>_markdown_files/`` for a
        ``.markdown`` name, so ``r.md`` and ``r.markdown`` never share one).
        The write is atomic: the file is written to a temporary sibling and
        renamed into place, and a Markdown report's new figures get new
        names before its text is replaced, so a process killed at any moment
        leaves the earlier report (with its figures) or the new one, whole.
        Only figures agentab named (``figureNN-<id>.png``) are ever deleted,
        and a symlinked image folder is refused.
    format : {"html", "markdown"}, optional
        Default: from the suffix (``.html``/``.htm``, ``.md``/``.markdown``).
        HTML is one self-contained file: images embedded as PNG data, no
        script, nothing fetched when it is opened, so it can be mailed.
    traces : Traces, optional
        The traces the runs were scored from: adds the tool-choice
        distribution by arm (the scores alone have no steps) and, in HTML,
        each flipped task's runs opening onto their trajectories (tool
        calls with arguments, status, errors, observations), matched by
        ``run_id``. Without them the flipped tasks are a table only.
    diagnosis : Diagnosis, optional
        Findings to show; default :func:`agentab.diagnose` of the compared
        runs (with ``traces`` when given), grouped by arm.
    title : str, optional
        Default: "agentab: CANDIDATE vs BASELINE".
    seed : int, optional
        Seed of the quantile-shift bootstrap (default: the comparison's).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ReportError
        Not a comparison, an unknown format, a folder or a missing parent
        folder as ``path``.

    Notes
    -----
    Sections: verdict and reasons; arms (model, harness) and design; a
    forest plot of every metric's effect with its interval and adjusted
    p-values; ordinal level shares; for cost metrics (and the primary,
    guardrail and step-count metrics among counts) the ECDF on a log axis
    with p50 and p95, and the quantile shift across deciles (Doksum 1974;
    Rousselet, Pernet & Wilcox 2017); success by step count, failure
    shapes, tool choice and the findings of :func:`agentab.diagnose`; a
    per-task profile (:func:`task_profile`); which tasks flipped
    (:meth:`Comparison.flipped_tasks`: the most regressed and improved
    tasks, ranked by a per-task exact test, not adjusted for the number of
    tasks; in HTML each opens onto its runs and their trajectories, all
    user text escaped); for an inconclusive verdict,
    the power curve of the next experiment (:attr:`Comparison.plan`).

    Examples
    --------
    >>> import agentab, tempfile, pathlib
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=2)
    >>> scores = agentab.score(traces, agentab.datasets.example_specs(n_tasks=12))
    >>> result = agentab.compare(scores, metrics=["outcome", "rubric", "tokens"], n_resamples=199, seed=0)
    >>> out = agentab.report(result, pathlib.Path(tempfile.mkdtemp()) / "report.html", traces=traces)
    >>> "Verdict: inconclusive" in out.read_text()
    True
    """
    from agentab.reporting import _many

    if _many.is_many(comparison):  # many arms or slices: _many.py, with this module's sections
        return _many.report_many(comparison, path, sys.modules[__name__], format=format, traces=traces,
                                 diagnosis=diagnosis, title=title, seed=seed)
    path, format = _report_iv(comparison, path, format, traces, diagnosis)
    from agentab.reporting import plots

    title = title or f"agentab: {comparison.candidate} vs {comparison.baseline}"
    seed = comparison.settings.seed if seed is None else seed
    _write(path, format, title, _body(comparison, plots, traces, diagnosis, seed, format, title))
    return path


def _body(comparison: Any, plots: Any, traces: Any, diagnosis: Any, seed: Any, format: str,
          title: str, *, distributions: bool = True, flipped: int = FLIPPED_SHOWN) -> list[_Block]:
    """The blocks of a two-arm report, in order (also each sliced report's whole comparison and each many-arm
    report's candidate, :mod:`._many`, which passes ``distributions=False`` and a smaller ``flipped``)."""
    from agentab.scoring import diagnose

    blocks = _header(comparison, title) + _effects(comparison, plots) + _levels(comparison, plots)
    blocks += _cost(comparison, plots, seed, distributions=distributions)
    if diagnosis is None:
        try:
            diagnosis = diagnose(_outcome_named(comparison), by=comparison.settings.arm, traces=traces)
        except KeyError as err:
            blocks += [_Block("h2", "Trajectory"), _Block("p", f"No diagnosis: the runs have no {err.args[0]!r} column "
                                                               "(agentab.score's table has it).")]
        except (TypeError, ValueError) as err:
            blocks += [_Block("h2", "Trajectory"), _Block("p", f"No diagnosis: {err}.")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty step buckets have a NaN rate
        blocks += _trajectory(comparison, diagnosis, plots)
    blocks += _tasks(comparison, plots) + flipped_section(comparison, traces, trajectories=format == "html", n=flipped)
    return blocks + _next_experiment(comparison, plots) + _notes(comparison)


def _write(path: Path, format: str, title: str, blocks: list[_Block]) -> None:
    """The report file, whole or not at all: one self-contained HTML file, or Markdown with its figure folder."""
    from agentab._version import __version__

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    footer = f"Made by agentab {__version__} on {stamp}."
    figures: list[tuple[str, bytes]] = []
    if format == "html":
        body = _html(blocks, figures)
        text = (
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"<footer>{html.escape(footer)}</footer>\n</body></html>\n"
        )
        atomic_text(path, text)
    else:
        write_markdown(path, blocks, footer, figures)
