"""Experiment-level diagnostics: what the trajectories say about why runs fail.

Outcome decides, trajectory explains. :func:`diagnose` reads a scored
experiment (the table of :func:`agentab.score`, or traces to score) and
returns findings, each with the evidence table it rests on and the reading
that turns it into a fix (seed 000, "Reading the results"; seed 002,
trajectory failure properties):

- **context exhaustion** -- success rate by step-count bucket: a rate that
  falls off a cliff past some step count is the signature (long runs also
  fail for other reasons, so read the failing long runs before concluding);
- **loops and cap hits** -- a run with a loop is one unlucky run from
  non-termination: loop detection belongs in the agent, not only in the eval;
- **non-termination**, **error cascades**, **premature completion** and
  **accidental recovery** rates;
- **selection vs arguments** -- tool selection low means tool descriptions;
  argument correctness low means schemas or validation before dispatch (a
  bigger model will not reliably fix it);
- **completion high, steps high** -- the agent works and wastes money;
- **tool choice** -- the distribution of tools by arm (or task type): misuse
  is invisible in one run and obvious in aggregate.

Thresholds are the keyword arguments of :func:`diagnose`; every finding shows
the numbers, so a team can judge them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentab._display import Block, Display, Items, Lines, Section, Table, Title, json_ready
from agentab.scoring._resolve import tool_calls
from agentab.traces import share_of_known

__all__ = ["Finding", "Diagnosis", "diagnose"]

#: Default step-count buckets (left-closed): 0-4, 5-9, 10-14, 15-19, 20-29, 30+.
STEP_BUCKETS = (0, 5, 10, 15, 20, 30)
#: Shares of runs in the ``rates`` table, by group.
RATE_COLUMNS = ("passed", "right_result", "loop", "cap_hit", "non_terminated", "error_cascade", "premature",
                "accidental_recovery", "over_budget")


@dataclass(frozen=True)
class Finding(Display):
    """One diagnostic finding.

    Attributes
    ----------
    title : str
        What was found, with its numbers.
    reading : str
        What it usually means and where to look.
    evidence : pandas.DataFrame
        The table the finding rests on.
    """

    title: str
    reading: str
    evidence: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """``title``, ``reading`` and the evidence as records (one dict per row, the index as a column; a
        figure that cannot be computed is None, JSON ``null``)."""
        return {"title": self.title, "reading": self.reading,
                "evidence": json_ready(self.evidence.reset_index().to_dict(orient="records"))}

    def _view(self) -> list[Block]:
        return [Title(self.title), Lines([f"    {self.reading}"])]

    def _html_view(self) -> list[Block]:
        """What HTML shows: the title, and under it the reading and the evidence table (escaped)."""
        return [Section(self.title, [Lines([self.reading]), Table(self.evidence, index=True)])]



@dataclass(frozen=True)
class Diagnosis(Display):
    """All findings, most actionable first, plus the evidence tables by name."""

    findings: list[Finding]
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The findings as :meth:`Finding.to_dict` records (the evidence tables by name are in ``tables``)."""
        return {"findings": [finding.to_dict() for finding in self.findings]}

    def _view(self) -> list[Block]:
        if not self.findings:
            return [Lines(["no findings"])]
        return [Items([str(finding) for finding in self.findings], indent="")]

    def _html_view(self) -> list[Block]:
        """What HTML shows: each finding with its evidence, which ``str()`` leaves out."""
        if not self.findings:
            return [Lines(["No findings: no failure shape passed its threshold."])]
        head = Title(f"{len(self.findings)} finding(s), most actionable first (click for the evidence)")
        return [head, *(block for finding in self.findings for block in finding._html_view())]


def _success(scores: pd.DataFrame) -> pd.Series:
    column = "right_result" if "right_result" in scores else "outcome"
    return scores[column].astype("boolean")


def _per_group(scores: pd.DataFrame, by: str, columns: Sequence[str]) -> pd.DataFrame:
    present = [c for c in columns if c in scores]
    table = scores.groupby(by, observed=True, sort=False)[present].agg(share_of_known).astype("float64")
    table.insert(0, "runs", scores.groupby(by, observed=True, sort=False).size())
    return table


def _step_buckets(scores: pd.DataFrame, by: str, buckets: Sequence[int]) -> pd.DataFrame:
    edges = [*buckets, np.inf]
    labels = [f"{lo}-{hi - 1}" if np.isfinite(hi) else f"{lo}+" for lo, hi in zip(edges[:-1], edges[1:])]
    bucket = pd.cut(scores["n_steps"].astype(float), bins=edges, right=False, labels=labels)
    frame = pd.DataFrame({by: scores[by], "steps": bucket, "success": _success(scores).astype(float)})
    table = frame.groupby([by, "steps"], observed=False, sort=False)["success"].agg(["size", "mean"])
    # Groups in order of appearance, buckets in step order (a groupby with sort=False orders them as they appear).
    order = pd.MultiIndex.from_product([list(pd.unique(frame[by])), labels], names=[by, "steps"])
    table = table.reindex(order)
    table["size"] = table["size"].fillna(0).astype("int64")
    return table.rename(columns={"size": "runs", "mean": "success_rate"})


def _cliffs(table: pd.DataFrame, by_values: Sequence[Any], min_runs: int,
            drop: float) -> list[tuple[Any, str, float, float]]:
    found = []
    for value in by_values:
        rows = table.loc[value]
        rows = rows[rows["runs"] >= min_runs]
        rates = rows["success_rate"].to_numpy()
        for k in range(1, len(rates)):
            if rates[k - 1] - rates[k] >= drop:
                found.append((value, str(rows.index[k]), float(rates[k - 1]), float(rates[k])))
                break
    return found


def _tool_choice(steps: pd.DataFrame, runs: pd.DataFrame, by: str) -> pd.DataFrame:
    group = steps["run_id"].map(runs.set_index("run_id")[by])
    keep = group.notna().to_numpy()  # runs that were not scored (another arm, a filtered table) are left out
    counts = pd.crosstab(steps["tool"].astype(str)[keep].rename("tool"), group[keep].astype(str).rename(by))
    return counts / counts.sum()


def diagnose(
    data: Any,
    *,
    spec: Any = None,
    by: str = "arm",
    buckets: Sequence[int] = STEP_BUCKETS,
    min_runs: int = 10,
    cliff: float = 0.25,
    low_accuracy: float = 0.8,
    high_success: float = 0.7,
    over_budget: float = 0.25,
    cascade: float = 0.1,
    recovery: float = 0.2,
    shift: float = 0.1,
    traces: Any = None,
) -> Diagnosis:
    """Find the failure shapes of an experiment, with their evidence.

    Parameters
    ----------
    data : Traces or pandas.DataFrame
        Loaded traces (scored here with ``spec``), or a table from
        :func:`agentab.score`.
    spec : TrajectorySpec or mapping, optional
        The spec to score traces with (default: an empty spec, which still
        finds loops, errors and non-termination).
    by : str
        Column of the scores to compare groups by (default the arm), or, with
        traces, a key of the runs' ``metadata`` (e.g. ``"task_type"``: tool
        misuse shows in the tool-choice distribution by task type).
    buckets : sequence of int
        Left edges of the step-count buckets.
    min_runs : int
        Buckets with fewer runs are not used to call a cliff.
    cliff : float
        Drop in success rate between neighbouring buckets that counts as a cliff.
    low_accuracy : float
        Selection or argument accuracy below this is reported.
    high_success : float
        Success rate at or above which "steps high" means wasted money.
    over_budget : float
        Share of runs over the step budget that counts as "steps high".
    cascade : float
        Share of runs with an uncorrected failed call that is reported.
    recovery : float
        Share of successes that came after failed or looping calls that is
        reported.
    shift : float
        Total-variation distance between two groups' tool-choice
        distributions that is reported.
    traces : Traces, optional
        With a table from :func:`agentab.score`: the traces it was scored
        from, for the tool-choice distribution (which needs the steps).

    Returns
    -------
    Diagnosis

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.datasets.example_experiment(seed=0)
    >>> spec = agentab.TrajectorySpec(required=("edit_file", "run_tests"), step_budget=15, max_repeats=3)
    >>> found = agentab.diagnose(traces, spec=spec)
    >>> sorted(found.tables)
    ['accuracy', 'rates', 'steps', 'tool_choice']
    """
    scores, traces = _scores_of(data, spec, traces, by)
    groups = list(pd.unique(scores[by]))
    tables: dict[str, pd.DataFrame] = {
        "rates": _per_group(scores.assign(right_result=_success(scores)), by, RATE_COLUMNS),
        "accuracy": _per_group(scores, by, ["tool_recall", "tool_recall_required", "tool_precision", "arg_accuracy"]),
        "steps": _step_buckets(scores, by, buckets),
    }
    rates, accuracy, steps_table = tables["rates"], tables["accuracy"], tables["steps"]
    findings = [Finding(
        f"{value}: success falls from {before:.0%} to {after:.0%} at {bucket} steps",
        "A cliff in success against step count is the signature of context exhaustion: early instructions "
        "fall out of effective attention. Read the failing long runs before concluding (long runs also fail "
        "for other reasons).", steps_table.loc[[value]])
        for value, bucket, before, after in _cliffs(steps_table, groups, min_runs, cliff)]
    for value in groups:
        findings += _rate_findings(value, rates, cascade)
        findings += _success_findings(value, scores[scores[by] == value], recovery)
        findings += _accuracy_findings(value, accuracy, low_accuracy)
        row = rates.loc[value]
        if row.get("right_result", 0) >= high_success and row.get("over_budget", 0) >= over_budget:
            findings.append(Finding(
                f"{value}: {row['right_result']:.0%} success, but {row['over_budget']:.0%} of runs over the step "
                "budget", "The agent works and wastes money: look at tool descriptions before you look at the model.",
                rates.loc[[value], ["runs", "right_result", "over_budget"]]))
    if traces is not None and len(traces.steps):
        choice = _tool_choice(tool_calls(traces.steps), traces.runs.assign(
            **{by: scores.set_index("run_id")[by].reindex(traces.runs["run_id"]).to_numpy()}), by)
        tables["tool_choice"] = choice
        findings += _choice_findings(choice, shift)
    return Diagnosis(findings=findings, tables=tables)


def _scores_of(data: Any, spec: Any, traces: Any, by: str) -> tuple[pd.DataFrame, Any]:
    """The scores to read (scoring traces with ``spec``), with the ``by`` column, and the traces if known."""
    if hasattr(data, "runs") and hasattr(data, "steps"):
        from agentab.scoring.score import score
        from agentab.scoring.spec import TrajectorySpec

        traces = data
        scores = score(data, TrajectorySpec() if spec is None else spec)
    elif isinstance(data, pd.DataFrame):
        scores = data
        if traces is not None and not (hasattr(traces, "runs") and hasattr(traces, "steps")):
            raise TypeError(f"`traces` must be the Traces the scores came from, got {type(traces).__name__}")
    else:
        raise TypeError(f"diagnose needs Traces or a table from agentab.score, got {type(data).__name__}")
    if by not in scores and traces is not None:
        values = pd.Series(traces.metadata_values(by).to_numpy(), index=traces.runs["run_id"].astype(str))
        if values.isna().all():
            raise KeyError(f"cannot group by {by!r}: neither a column of the scores nor a metadata key of any run")
        scores = scores.assign(**{by: values.reindex(scores["run_id"].astype(str)).to_numpy()})
    if by not in scores:
        raise KeyError(f"cannot group by {by!r}: not a column of the scores")
    return scores.assign(**{by: scores[by].astype(object).where(scores[by].notna(), "(none)")}), traces


def _rate_findings(value: Any, rates: pd.DataFrame, cascade: float) -> list[Finding]:
    """Loops and cap hits, non-termination and error cascades of one group."""
    row, found = rates.loc[value], []
    if row.get("loop", 0) > 0:
        found.append(Finding(
            f"{value}: loops in {row['loop']:.0%} of runs"
            + (f", loop cap hit in {row['cap_hit']:.0%}" if "cap_hit" in row and row["cap_hit"] > 0 else ""),
            "A run with a loop is one unlucky run from non-termination: detect loops in the agent, not only "
            "in the eval.", rates.loc[[value], ["runs", "loop", "cap_hit"]]))
    if row.get("non_terminated", 0) > 0:
        found.append(Finding(
            f"{value}: {row['non_terminated']:.0%} of runs did not terminate on their own",
            "Non-termination quietly consumes the budget: check the step cap and what the agent does near it.",
            rates.loc[[value], ["runs", "non_terminated"]]))
    if row.get("error_cascade", 0) >= cascade:
        found.append(Finding(
            f"{value}: {row['error_cascade']:.0%} of runs went on after a failed call that was never corrected",
            "An early bad retrieval poisons what follows while the trace reads as confident: check "
            "intermediate results, not only the end.", rates.loc[[value], ["runs", "error_cascade"]]))
    return found


def _success_findings(value: Any, group: pd.DataFrame, recovery: float) -> list[Finding]:
    """Accidental recovery and premature completion in one group's runs."""
    found = []
    successes = int(_success(group).sum())
    recovered = int(group["accidental_recovery"].astype("boolean").sum()) if "accidental_recovery" in group else 0
    if successes and recovered / successes >= recovery:
        found.append(Finding(
            f"{value}: {recovered / successes:.0%} of successes came after failed or looping calls",
            "Accidental recovery looks like success in every response-level metric: these runs pass by luck "
            "and will fail where the luck does not arrive.",
            pd.DataFrame({"runs": [len(group)], "successes": [successes], "accidental_recoveries": [recovered],
                          "share_of_successes": [recovered / successes]}, index=[value])))
    premature = group["premature"].astype("boolean") if "premature" in group else pd.Series(dtype="boolean")
    claims = int(premature.notna().sum())
    if premature.sum():
        found.append(Finding(
            f"{value}: {int(premature.sum())} of {len(group)} runs ({premature.sum() / len(group):.0%}) claimed "
            f"success without it ({premature.sum() / claims:.0%} of the {claims} recorded claims)",
            "Premature completion: only an external outcome check catches it; never promote the agent's claim.",
            pd.DataFrame({"runs": [len(group)], "claims": [claims], "premature": [int(premature.sum())]},
                         index=[value])))
    return found


def _accuracy_findings(value: Any, accuracy: pd.DataFrame, low_accuracy: float) -> list[Finding]:
    """Tool selection low (descriptions), or selection fine and arguments low (schemas), in one group."""
    selection = accuracy.loc[value].get("tool_recall")
    if selection is None or pd.isna(selection):
        selection = accuracy.loc[value].get("tool_recall_required")
    arguments = accuracy.loc[value].get("arg_accuracy")
    if selection is not None and not pd.isna(selection) and selection < low_accuracy:
        return [Finding(
            f"{value}: tool selection {selection:.0%}",
            "Selection problems are usually fixed by rewriting tool descriptions, not by a bigger model.",
            accuracy.loc[[value]])]
    if arguments is not None and not pd.isna(arguments) and arguments < low_accuracy:
        shown = "unknown" if selection is None or pd.isna(selection) else f"{selection:.0%}"
        return [Finding(
            f"{value}: tool selection {shown} but argument correctness {arguments:.0%}",
            "A schema problem: constrain the arguments or validate before dispatch; a bigger model will not "
            "reliably fix this.", accuracy.loc[[value]])]
    return []


def _choice_findings(choice: pd.DataFrame, shift: float) -> list[Finding]:
    """Pairs of groups whose tool-choice distributions differ by at least ``shift`` (total variation)."""
    found = []
    columns = list(choice.columns)
    for i in range(len(columns)):
        for j in range(i + 1, len(columns)):
            distance = 0.5 * float((choice[columns[i]] - choice[columns[j]]).abs().sum())
            if distance >= shift:
                found.append(Finding(
                    f"tool choice differs between {columns[i]} and {columns[j]} "
                    f"(total variation {distance:.2f})",
                    "Misuse is invisible in a single run and obvious in aggregate: compare which tools each "
                    "group reaches for.", choice[[columns[i], columns[j]]]))
    return found
