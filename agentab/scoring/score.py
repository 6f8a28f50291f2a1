"""Score every run of an experiment on its trajectory, at once.

:func:`score` applies the rules of :func:`agentab.score_run` (see
:mod:`agentab.scoring.trajectory` for each check) to every run of a
:class:`~agentab.Traces` and returns one row per run. It gives, for every
run, exactly the metrics and reasons of ``score_run`` on that run's record;
it is computed with array operations over the steps table (shifts, cumulative
sums, sorted look-ups) instead of a Python loop per run. ``score_run`` stays
the readable reference: the tests check on random traces that both agree.

The spec
--------
``spec`` is one :class:`~agentab.TrajectorySpec` for every run; a mapping
``task_id -> TrajectorySpec`` (or a mapping of its fields); or a DataFrame
with one row per task (a ``task_id`` column, or the task ids as the index,
and columns named like the ``TrajectorySpec`` fields; a missing cell takes
the field's default). With a mapping or a DataFrame, runs of a task without
a spec are an error unless ``default=`` gives their spec. Specs for tasks
absent from the traces, and tools named in a spec (``required``,
``reference``) that no run ever calls -- probably a typo -- give a
:class:`SpecWarning`. A malformed spec (unknown match mode, a negative
budget, ...) is an error naming the task.

The table
---------
One row per run, in the order of ``traces.runs``: the id columns, every metric of ``score_run`` and
``reasons``. The columns, their kinds and directions are listed in :mod:`agentab.scoring.metrics`;
``df.attrs["metrics"]`` holds every metric column's kind and direction, and :func:`metric_kinds` reads it
back.

How each metric is computed
---------------------------
Steps are sorted by run and index and every call gets an integer key (tool
code and argument code; arguments are canonical JSON, so equal arguments have
equal codes). Repeats compare each key with the previous row; streaks come
from a running maximum of streak starts; cycle candidates (a block of 2 to
``MAX_CYCLE`` calls, not all equal, followed by the same block) come from
shifted comparisons, and the left-to-right scan that skips past a found cycle
is replayed by pointer doubling over the candidates (each candidate points to
the first candidate after its two blocks; the cycles found are those
reachable from each run's first candidate). Required tools, tool overlaps
and uncorrected errors use sorted ``(run, tool)`` look-ups. The
argument-aware reference matching replays the first phase of the
Hopcroft-Karp matching of ``score_run`` (each reference call, in order, takes
the first free call it fits); where that greedy pairing is provably maximum
(it pairs as many calls as the count bound allows) it is the final answer,
and only the other runs are matched one by one with ``score_run``'s own
matching. Argument rules are evaluated once per distinct (reference call,
arguments) pair, terminal-state checks once per distinct (spec, terminal
state), ``metadata`` once per distinct value. Reasons are assembled as
Arrow string arrays; only the text of distinct calls shown in a reason is
formatted in Python.

The parts: the ``spec`` argument is resolved in :mod:`agentab.scoring._resolve`,
the steps and specs become arrays in :mod:`agentab.scoring._arrays`, the
checks run in :mod:`agentab.scoring._batch` and the reference matching in
:mod:`agentab.scoring.reference`; this module assembles the table.

Examples
--------
>>> import agentab
>>> from agentab import TrajectorySpec
>>> from agentab import score
>>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=4, n_seeds=2)
>>> table = score(traces, TrajectorySpec(required=("edit_file", "run_tests"), step_budget=15))
>>> table[["run_id", "passed", "n_steps", "rubric"]].head(3)
             run_id  passed  n_steps  rubric
0  baseline-t000-s0   False        7       2
1  baseline-t000-s1   False        9       1
2  baseline-t001-s0    True        8       3
>>> table.loc[0, "reasons"]
"repeated identical call: grep({'path': 'src/scheduler', 'pattern': 'def backoff_delay'})"
>>> table.loc[1, "reasons"]
'final state is wrong'
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from agentab._vocabulary import DIRECTIONS, KINDS
from agentab.errors import SpecWarning
from agentab.scoring._arrays import _OUTCOME, _Reasons, _Specs, _Steps, _text_array
from agentab.scoring._batch import _claims, _loops, _required, _side_effects, _status
from agentab.scoring._resolve import ID_COLUMNS, SpecLike, _columns_iv, _resolve_specs, _warn_unseen_tools, tool_calls
from agentab.scoring.metrics import METRICS, infer_kind, metric_kinds, rubric_levels
from agentab.scoring.reference import _reference
from agentab.scoring.spec import TrajectorySpec
from agentab.traces import Traces

__all__ = ["DIRECTIONS", "KINDS", "METRICS", "SpecWarning", "infer_kind", "metric_kinds", "rubric_levels", "score"]


def score(traces: Traces, spec: SpecLike = None, *, default: TrajectorySpec | None = None) -> pd.DataFrame:
    """Score every run of ``traces`` against its task's spec: one row per run.

    Parameters
    ----------
    traces : Traces
        Loaded runs and steps (:func:`agentab.load_traces`).
    spec : TrajectorySpec, mapping, DataFrame, or None
        One spec for every run; a mapping ``task_id -> TrajectorySpec`` (or
        ``task_id -> dict of TrajectorySpec fields``); or a DataFrame with one
        row per task (``task_id`` column or index, columns named like the
        ``TrajectorySpec`` fields; missing cells take the defaults). ``None``
        is ``TrajectorySpec()``: loops, errors and the outcome only (the
        checks it does not ask for, such as ``cap_hit``, are missing).
    default : TrajectorySpec, optional
        With a mapping or DataFrame: the spec of tasks it leaves out. Without
        it, such tasks are an error.

    Returns
    -------
    pandas.DataFrame
        One row per run (order of ``traces.runs``): the id columns, ``tokens``,
        ``cost_usd``, ``latency_s``, every metric of
        :func:`agentab.score_run` and ``reasons`` (its reasons joined by
        ``"; "``, empty when the run passed). ``attrs["metrics"]`` maps each
        metric column to its ``kind`` and ``direction``;
        ``attrs["scoring"]["matching_fallback_runs"]`` counts the runs whose
        reference matching was searched one by one. Columns are documented
        in :mod:`agentab.scoring.metrics`.

    Raises
    ------
    TypeError
        ``traces`` is not a Traces, or a spec is of the wrong type.
    ValueError
        Tasks without a spec (and no ``default``), a malformed spec (the
        message names the task), a spec table with unknown columns or
        repeated task ids, traces whose tables disagree.

    Warns
    -----
    SpecWarning
        Specs for tasks absent from the traces; tools named in a spec that no
        run ever calls; ``metadata.claimed_success`` values that are not
        true/false.

    Examples
    --------
    The worked example of :mod:`agentab.scoring.trajectory`, as a trace:

    >>> import agentab
    >>> from agentab import TrajectorySpec
    >>> from agentab import score
    >>> calls = [("search_docs", {"q": "failing test"}), ("search_docs", {"q": "failing test"}),
    ...          ("read_file", {"path": "src/mian.py"}), ("read_file", {"path": "src/mian.py"}),
    ...          ("run_tests", {}), ("list_dir", {"path": "src"}),
    ...          ("edit_file", {"path": "src/main.py"}), ("run_tests", {})]
    >>> record = {"run_id": "lucky", "task_id": "fix-main", "seed": 0, "outcome": True,
    ...           "steps": [{"index": i, "tool": t, "args": a} for i, (t, a) in enumerate(calls)]}
    >>> traces = agentab.load_traces([record])
    >>> table = score(traces, {"fix-main": TrajectorySpec(required=("list_dir", "edit_file"), step_budget=5)})
    >>> for reason in table.loc[0, "reasons"].split("; "):
    ...     print(reason)
    repeated identical call: search_docs({'q': 'failing test'})
    repeated identical call: read_file({'path': 'src/mian.py'})
    took 8 steps against a budget of 5
    >>> print(table.loc[0, ["passed", "repeats", "over_budget", "rubric"]].to_dict())
    {'passed': False, 'repeats': 2, 'over_budget': True, 'rubric': 2}
    """
    if not isinstance(traces, Traces):
        raise TypeError(f"`traces` must be an agentab.Traces (from agentab.load_traces), got {type(traces).__name__}")
    if traces.engine != "memory":
        return _score_batched(traces, spec, default)
    _columns_iv(traces)
    specs, run_spec = _resolve_specs(traces.runs, spec, default)
    steps = _Steps.build(traces.runs, tool_calls(traces.steps))  # n_steps counts tool calls too
    _warn_unseen_tools(specs, steps)
    return _score_frame(traces.runs, steps, specs, run_spec)


# --------------------------------------------------------------------------- #
# Traces read in batches (load_traces(engine="stream" | "dask"))
# --------------------------------------------------------------------------- #
def _score_batched(traces: Traces, spec: SpecLike, default: TrajectorySpec | None) -> pd.DataFrame:
    """``score`` of traces read in batches: each batch scored as above (in Dask's workers for ``engine="dask"``),
    the per-run tables concatenated in run order; the specs resolved, and every warning given, once for all
    runs, with the counts and words of an in-memory score."""
    tasks = traces.task_ids()
    specs, run_spec = _warned_at_caller(_resolve_specs, pd.DataFrame({"task_id": tasks}), spec, default)
    task_spec = np.full(len(tasks.cat.categories), -1, dtype=np.int64)
    task_spec[tasks.cat.codes.to_numpy()] = run_spec
    by_task = dict(zip((str(c) for c in tasks.cat.categories), task_spec.tolist()))
    parts = traces.map_batches(partial(_score_batch, specs=specs, by_task=by_task))
    called = set().union(*(tools for _, tools, _ in parts))
    _warned_at_caller(_warn_unseen_tools, specs, _Called(sorted(called)))
    _warn_notes([note for _, _, notes in parts for note in notes], len(tasks))
    return _concat_scores([table for table, _, _ in parts])


def _warned_at_caller(function: Any, *args: Any) -> Any:
    """``function(*args)`` (of :mod:`._resolve`, warning for the in-memory path), its warnings shown at the
    line that called :func:`score`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = function(*args)
    for warning in caught:
        warnings.warn(warning.message, stacklevel=4)  # _warned_at_caller, _score_batched, score, the caller
    return out


class _Called:
    """The tools called in any batch, shaped as :func:`_warn_unseen_tools` reads a :class:`_Steps`."""

    def __init__(self, tools: list[str]) -> None:
        self.tools = tools
        self.tool = np.arange(len(tools))


def _score_batch(batch: Traces, specs: list[TrajectorySpec], by_task: dict[str, int]
                 ) -> tuple[pd.DataFrame, set[str], list[Any]]:
    """One batch's score table, the tools its runs called, and its notes (the warnings' counts)."""
    _columns_iv(batch)
    tasks = batch.runs["task_id"].astype("category")
    code_spec = np.array([by_task[str(c)] for c in tasks.cat.categories] + [-1], dtype=np.int64)
    run_spec = code_spec[tasks.cat.codes.to_numpy().astype(np.int64)]
    steps = _Steps.build(batch.runs, tool_calls(batch.steps))
    notes: list[Any] = []
    table = _score_frame(batch.runs, steps, specs, run_spec, notes)
    attrs, table.attrs = table.attrs, {}  # (pandas copies attrs deeply with every column taken)
    columns = {name: table[name].array for name in table.columns}
    return (columns, attrs), {steps.tools[c] for c in np.unique(steps.tool)}, notes


def _warn_notes(notes: list[Any], n_runs: int) -> None:
    """The warnings of every batch, each once with the counts summed (in the order an in-memory score gives)."""
    unchecked: dict[str, int] = {}
    claims: list[Any] = []
    for kind, count, what in notes:
        if kind == "unchecked":
            unchecked[what] = unchecked.get(what, 0) + count
        else:
            claims.append((count, what))
    for message, count in unchecked.items():
        if count:
            warnings.warn(f"{count} of {n_runs} runs: {message}", SpecWarning, stacklevel=4)
    if claims:
        warnings.warn(f"metadata.claimed_success is not true/false in {sum(c for c, _ in claims)} runs "
                      f"(e.g. {claims[0][1]!r}); it is read by its truth value, as score_run does",
                      SpecWarning, stacklevel=4)


def _concat_scores(tables: list[tuple[dict[str, Any], dict[str, Any]]]) -> pd.DataFrame:
    """The batches' score tables (each as its columns and attrs) as one, column by column, each batch's column
    freed once copied (categories in order of first appearance, as one table's); ``attrs`` merged
    (``outcome`` is continuous if any batch found it so)."""
    names = list(tables[0][0])
    n_rows = sum(len(columns[names[0]]) for columns, _ in tables)
    out = pd.DataFrame(index=pd.RangeIndex(n_rows))
    for name in names:
        parts = [columns.pop(name) for columns, _ in tables]
        if isinstance(parts[0].dtype, pd.CategoricalDtype):
            out[name] = pd.api.types.union_categoricals(parts)
        else:
            out[name] = parts[0]._concat_same_type(parts) if len(parts) > 1 else parts[0]
        del parts
    metrics = dict(tables[0][1]["metrics"])
    for _, attrs in tables:
        if attrs["metrics"].get("outcome", {}).get("kind") == "continuous":
            metrics["outcome"] = attrs["metrics"]["outcome"]
    out.attrs["metrics"] = metrics
    out.attrs["scoring"] = {"matching_fallback_runs": sum(attrs["scoring"]["matching_fallback_runs"]
                                                          for _, attrs in tables)}
    return out


# --------------------------------------------------------------------------- #
# Assembly
# --------------------------------------------------------------------------- #
def _boolean(values: np.ndarray, known: np.ndarray | None = None) -> pd.arrays.BooleanArray:
    values = np.asarray(values, dtype=bool)
    mask = np.zeros(len(values), dtype=bool) if known is None else ~np.asarray(known, dtype=bool)
    return pd.arrays.BooleanArray(values & ~mask, mask)


def _integer(values: np.ndarray, known: np.ndarray | None = None) -> pd.arrays.IntegerArray:
    values = np.asarray(values, dtype=np.int64)
    mask = np.zeros(len(values), dtype=bool) if known is None else ~np.asarray(known, dtype=bool)
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _warn_unchecked(runs: pd.DataFrame, sp: _Specs, run_spec: np.ndarray, notes: list[Any] | None = None) -> None:
    """Warn, with counts, where a spec asks for a check the data cannot support (``notes``: a list collects
    ``("unchecked", count, message)`` instead, every message, for the warnings of a streamed score)."""
    def warn(count: int, message: str) -> None:
        if notes is not None:
            notes.append(("unchecked", count, message))
        elif count:
            warnings.warn(f"{count} of {len(runs)} runs: {message}", SpecWarning, stacklevel=4)

    expects = np.array([s.expected_state is not None for s in sp.specs], dtype=bool)[run_spec]
    warn(int((expects & runs["terminal_state"].isna().to_numpy()).sum()),
         "the spec has an expected_state but the run recorded no terminal_state, so its side effects were "
         "not checked against it")
    limited = ~np.isnan(sp.time_limit[run_spec])
    warn(int((limited & runs["latency_s"].isna().to_numpy()).sum()),
         "the spec has a time_limit but the run recorded no latency_s, so it was not checked")
    if _is_boolean(runs["outcome"]):
        warn(int((sp.success_at[run_spec] != 1.0).sum()),
             "the spec sets success_at, which applies to numeric outcomes; these outcomes are true/false")


def _is_boolean(outcome: pd.Series) -> bool:
    """Outcomes loaded as true/false (not numbers)."""
    return isinstance(outcome.dtype, pd.BooleanDtype) or outcome.dtype == bool


def _outcome(runs: pd.DataFrame, sp: _Specs, run_spec: np.ndarray,
             reasons: _Reasons) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right and wrong results (true, or a number at or above ``success_at``) and known outcomes."""
    outcome = runs["outcome"]
    known = outcome.notna().to_numpy()
    if _is_boolean(outcome):
        right = outcome.to_numpy(dtype=bool, na_value=False)
    else:
        right = outcome.to_numpy(dtype=np.float64, na_value=np.nan) >= sp.success_at[run_spec]
    right &= known
    wrong = known & ~right
    reasons.add(_OUTCOME, np.flatnonzero(wrong), 0, _text_array(["final state is wrong"] * int(wrong.sum())))
    reasons.add(_OUTCOME, np.flatnonzero(~known), 0, _text_array(["no external outcome"] * int((~known).sum())))
    return right, wrong, known


def _score_frame(runs: pd.DataFrame, steps: _Steps, specs: list[TrajectorySpec],
                 run_spec: np.ndarray, notes: list[Any] | None = None) -> pd.DataFrame:
    sp = _Specs.build(specs, steps)
    _warn_unchecked(runs, sp, run_spec, notes)
    reasons = _Reasons()
    stats: dict[str, int] = {}
    checks = {
        "required": _required(steps, sp, run_spec, reasons),
        "reference": _reference(steps, sp, run_spec, reasons, stats),
        "loops": _loops(steps, sp, run_spec, reasons),
        "status": _status(steps, sp, run_spec, reasons, runs["latency_s"].to_numpy(dtype=np.float64, na_value=np.nan)),
        "side": _side_effects(runs, steps, sp, run_spec, reasons),
    }
    right, wrong, known_outcome = _outcome(runs, sp, run_spec, reasons)
    n_reasons, joined = reasons.join(len(runs))
    table = pd.DataFrame(_columns(runs, steps, checks, right, wrong, known_outcome, n_reasons == 0, notes),
                         index=pd.RangeIndex(len(runs)))
    table["reasons"] = pa.table({"reasons": joined}).to_pandas(
        types_mapper=lambda t: pd.StringDtype("pyarrow") if pa.types.is_large_string(t) else None)["reasons"]
    kind = dict(METRICS)
    outcome = runs["outcome"]
    if not _is_boolean(outcome):
        known = outcome.to_numpy(dtype=np.float64, na_value=np.nan)
        known = known[~np.isnan(known)]
        if not np.isin(known, (0.0, 1.0)).all():  # a 0/1 reward (tau-bench's) stays binary
            kind["outcome"] = ("continuous", "higher")
    table.attrs["metrics"] = {c: {"kind": kind[c][0], "direction": kind[c][1]} for c in table.columns if c in kind}
    table.attrs["scoring"] = {"matching_fallback_runs": stats.get("matching_fallback_runs", 0)}
    return table


def _columns(runs: pd.DataFrame, steps: _Steps, checks: dict[str, dict[str, Any]], right: np.ndarray,
             wrong: np.ndarray, known_outcome: np.ndarray, passed: np.ndarray,
             notes: list[Any] | None = None) -> dict[str, Any]:
    """The id and metric columns, in the order of :data:`METRICS`, from the checks' arrays."""
    required, reference, loops, status, side = (checks[k] for k in ("required", "reference", "loops", "status",
                                                                     "side"))
    n = steps.n
    valid = n - status["n_errors"]
    retries = runs["retries"].to_numpy(dtype=np.float64, na_value=np.nan)
    backtracks = runs["backtracks"].to_numpy(dtype=np.float64, na_value=np.nan)
    corrections = np.nan_to_num(retries) + np.nan_to_num(backtracks)
    wasted = status["n_errors"] + loops["repeats"] + loops["cycles"]
    statuses = status["_statuses"]
    # a right result despite errors or loops: unknown without an outcome, or (no loop) without any status
    accidental_known = known_outcome & (~right | loops["loop"] | statuses)
    rubric_known = known_outcome | (valid == 0)
    claimed, claim_recorded = _claims(runs, notes)
    changed, state_known = side["_state_changed"]
    premature = claimed & ~right & (wrong | (state_known & ~changed))
    columns: dict[str, Any] = {c: runs[c].array.copy() for c in ID_COLUMNS}
    columns["seed"] = runs["seed"].astype("Int64").array
    columns["tokens"] = runs["tokens"].astype("Int64").array
    columns["cost_usd"] = runs["cost_usd"].to_numpy(dtype=np.float64, na_value=np.nan)
    columns["latency_s"] = runs["latency_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    columns.update({
        "passed": _boolean(passed),
        "outcome": runs["outcome"].array.copy(),
        "right_result": _boolean(right, known_outcome),
        "n_steps": _integer(n),
        "n_errors": _integer(status["n_errors"], statuses),
        "required_missing": _integer(*required["required_missing"]),
        "tool_recall_required": required["tool_recall_required"],
        "reference_match": _boolean(reference["reference_match"], reference["_has_reference"]),
        "tool_precision": reference["tool_precision"],
        "tool_recall": reference["tool_recall"],
        "arg_accuracy": reference["arg_accuracy"],
        "repeats": _integer(loops["repeats"]),
        "cycles": _integer(loops["cycles"]),
        "longest_streak": _integer(loops["longest_streak"]),
        "loop": _boolean(loops["loop"]),
        "cap_hit": _boolean(*loops["cap_hit"]),
        "over_budget": _boolean(status["over_budget"], status["_has_budget"]),
        "non_terminated": _boolean(status["non_terminated"], status["_checked"]),
        "premature": _boolean(premature, claim_recorded),
        "claimed_success": _boolean(claimed, claim_recorded),
        "accidental_recovery": _boolean(right & ((status["n_errors"] > 0) | loops["loop"]), accidental_known),
        "error_cascade": _boolean(status["error_cascade"], statuses),
        "steps_at_failure": _integer(n, wrong),
        "forbidden_calls": _integer(*side["forbidden_calls"]),
    })
    for name in ("forbidden_side_effects", "unexpected_side_effects", "missing_changes", "duplicate_changes"):
        columns[name] = _integer(*side[name])
    columns["retries"] = runs["retries"].astype("Int64").array
    columns["backtracks"] = runs["backtracks"].astype("Int64").array
    columns["rubric"] = _integer(rubric_levels(right, valid, wasted, corrections, passed), rubric_known)
    return columns
