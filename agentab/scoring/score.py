"""Score every run of an experiment on its trajectory, at once.

:func:`score` applies the rules of :func:`agentab.score_run` (see
:mod:`agentab.trajectory` for each check) to every run of a
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
One row per run, in the order of ``traces.runs``. Kinds: ``binary``
(nullable ``boolean``), ``count`` and ``ordinal`` (``Int64``),
``continuous`` and ``cost`` (``float64``; ``tokens`` is ``Int64``). A
missing value means "does not apply" (no budget, no reference, no recorded
terminal state, ...), exactly where ``score_run`` gives ``None``.
``df.attrs["metrics"]`` holds every metric column's kind and direction;
:func:`metric_kinds` reads it back.

========================== ========== ========= ==================================================
column                     kind       better    meaning
========================== ========== ========= ==================================================
``run_id``, ``task_id``,   id                   from ``traces.runs`` (categorical; ``seed`` Int64)
``seed``, ``arm``,
``model``, ``harness``
``tokens``                 cost       lower     tokens of the run (missing if any step's is)
``cost_usd``               cost       lower     dollars of the run
``latency_s``              cost       lower     wall-clock seconds of the run
``passed``                 binary     higher    no check failed (``reasons`` is empty)
``outcome``                binary     higher    the external verdict as loaded (``continuous``,
                                                float64, when outcomes are numbers other
                                                than 0 and 1)
``right_result``           binary     higher    outcome true, or a number at or above
                                                ``success_at``
``n_steps``                count      lower     tool calls
``n_errors``               count      lower     calls whose status is ``"error"``
``required_missing``       count      lower     ``required`` tools never called
``tool_recall_required``   continuous higher    share of ``required`` called (missing: none
                                                required)
``reference_match``        binary     higher    the calls match ``reference`` in the ``match``
                                                mode (missing: no reference)
``tool_precision``         continuous higher    calls paired with a reference call of the same
                                                tool, over calls (missing: no reference or no call)
``tool_recall``            continuous higher    the same pairs over reference calls
``arg_accuracy``           continuous higher    pairs whose arguments also match, over the
                                                tool pairs (missing: no tool pair)
``repeats``                count      lower     calls identical to the call just before
``cycles``                 count      lower     short cycles (A, B, A, B) found by the loop scan
``longest_streak``         count      lower     longest run of identical back-to-back calls
``loop``                   binary     lower     any repeat or cycle
``cap_hit``                binary     lower     a streak reached ``max_repeats``
``over_budget``            binary     lower     more steps than ``step_budget`` (missing: no
                                                budget)
``non_terminated``         binary     lower     reached ``step_cap`` or ``time_limit``, or the
                                                last call was never answered
``premature``              binary     lower     claimed success (``metadata.claimed_success``)
                                                while the result is not right: wrong, or
                                                unknown with no state change
                                                (missing: no claim recorded)
``claimed_success``        binary     neither   the agent's own claim, as recorded
``accidental_recovery``    binary     lower     right result despite errors or loops
``error_cascade``          binary     lower     an error whose tool never succeeded later (not
                                                counting a failed repeat of a call that had
                                                already succeeded)
``steps_at_failure``       count      lower     steps of a run with a wrong result (missing:
                                                right or unknown)
``forbidden_calls``        count      lower     calls to a ``forbidden`` tool
``forbidden_side_effects`` count      lower     terminal-state entries matching ``forbidden``
``unexpected_side_effects`` count     lower     terminal-state entries outside
                                                ``expected_state``
``missing_changes``        count      lower     ``expected_state`` entries the run did not make
``duplicate_changes``      count      lower     file entries listed more than once
``retries``                count      lower     retries after an error, as recorded
``backtracks``             count      lower     undone or redone work, as recorded
``rubric``                 ordinal    higher    0-3 level of :func:`agentab.trajectory.rubric_level`
``reasons``                text                 ``score_run``'s reasons joined by ``"; "``
========================== ========== ========= ==================================================

"neither" (``claimed_success``): a difference is reported but is not better
or worse by itself.

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

import dataclasses
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentab.scoring import trajectory as _tj
from agentab._vocabulary import DIRECTIONS, KINDS
from agentab.errors import SpecWarning
from agentab.traces import Traces
from agentab.scoring.trajectory import MATCH_MODES, MAX_CYCLE, TrajectorySpec

__all__ = ["DIRECTIONS", "KINDS", "METRICS", "SpecWarning", "infer_kind", "metric_kinds", "rubric_levels", "score"]


#: Every metric column of :func:`score`: name -> (kind, direction), in column order.
METRICS: Mapping[str, tuple[str, str]] = {
    "tokens": ("cost", "lower"),
    "cost_usd": ("cost", "lower"),
    "latency_s": ("cost", "lower"),
    "passed": ("binary", "higher"),
    "outcome": ("binary", "higher"),
    "right_result": ("binary", "higher"),
    "n_steps": ("count", "lower"),
    "n_errors": ("count", "lower"),
    "required_missing": ("count", "lower"),
    "tool_recall_required": ("continuous", "higher"),
    "reference_match": ("binary", "higher"),
    "tool_precision": ("continuous", "higher"),
    "tool_recall": ("continuous", "higher"),
    "arg_accuracy": ("continuous", "higher"),
    "repeats": ("count", "lower"),
    "cycles": ("count", "lower"),
    "longest_streak": ("count", "lower"),
    "loop": ("binary", "lower"),
    "cap_hit": ("binary", "lower"),
    "over_budget": ("binary", "lower"),
    "non_terminated": ("binary", "lower"),
    "premature": ("binary", "lower"),
    "claimed_success": ("binary", "neither"),
    "accidental_recovery": ("binary", "lower"),
    "error_cascade": ("binary", "lower"),
    "steps_at_failure": ("count", "lower"),
    "forbidden_calls": ("count", "lower"),
    "forbidden_side_effects": ("count", "lower"),
    "unexpected_side_effects": ("count", "lower"),
    "missing_changes": ("count", "lower"),
    "duplicate_changes": ("count", "lower"),
    "retries": ("count", "lower"),
    "backtracks": ("count", "lower"),
    "rubric": ("ordinal", "higher"),
}

ID_COLUMNS = ("run_id", "task_id", "seed", "arm", "model", "harness")
_RUN_COLUMNS = (*ID_COLUMNS, "outcome", "n_steps", "tokens", "cost_usd", "latency_s", "retries", "backtracks",
                "terminal_state", "metadata")
_STEP_COLUMNS = ("run_id", "index", "tool", "args", "status")
_INT_FIELDS = ("step_budget", "step_cap", "max_repeats")
_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TrajectorySpec))
# Reason order: the check (as in score_run), then a position inside the check.
_REQUIRED, _REFERENCE, _LOOPS, _BUDGET, _CAP, _SIDE, _OUTCOME = range(1, 8)
_CHECK = 1 << 48
_LATER = 1 << 40  # a second group of reasons inside one check

SpecLike = TrajectorySpec | Mapping[Any, Any] | pd.DataFrame | None


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #
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
        is ``TrajectorySpec()``: loops, errors and the outcome only.
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
        in :mod:`agentab.score`.

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
    The worked example of :mod:`agentab.trajectory`, as a trace:

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
    _columns_iv(traces)
    specs, run_spec = _resolve_specs(traces.runs, spec, default)
    steps = _Steps.build(traces.runs, traces.steps)
    _warn_unseen_tools(specs, steps)
    return _score_frame(traces.runs, steps, specs, run_spec)


def metric_kinds(table: pd.DataFrame) -> pd.DataFrame:
    """Kind and direction of each metric column of a :func:`score` table.

    Read from ``table.attrs["metrics"]``; columns without it (the attrs were
    lost, e.g. by a merge) fall back to :data:`METRICS`. Columns that are
    not metrics (ids, ``reasons``, columns you added) are left out.

    Parameters
    ----------
    table : pandas.DataFrame
        A table returned by :func:`score`, possibly with fewer columns.

    Returns
    -------
    pandas.DataFrame
        Indexed by column name, in the table's column order, with columns
        ``kind`` (one of :data:`KINDS`) and ``direction`` (one of
        :data:`DIRECTIONS`).

    Examples
    --------
    >>> import agentab
    >>> from agentab import score, metric_kinds
    >>> table = score(agentab.datasets.example_experiment(seed=0, n_tasks=2, n_seeds=1))
    >>> metric_kinds(table).loc[["passed", "n_steps", "rubric", "tokens"]]
                kind direction
    passed    binary    higher
    n_steps    count     lower
    rubric   ordinal    higher
    tokens      cost     lower
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`table` must be a DataFrame returned by agentab.score, got {type(table).__name__}")
    known = table.attrs.get("metrics", {})
    rows = {}
    for column in table.columns:
        if column in known:
            rows[column] = (known[column]["kind"], known[column]["direction"])
        elif column in METRICS:
            rows[column] = METRICS[column]
    return pd.DataFrame.from_dict(rows, orient="index", columns=["kind", "direction"])


def rubric_levels(right_result: Any, valid_calls: Any, wasted: Any, corrections: Any, checks_passed: Any) -> np.ndarray:
    """:func:`agentab.trajectory.rubric_level` on arrays (one element per run).

    Parameters
    ----------
    right_result, checks_passed : array of bool
    valid_calls, wasted, corrections : array of int

    Returns
    -------
    numpy.ndarray of int64
        The 0-3 level of each run.

    Examples
    --------
    >>> rubric_levels([True, True, False, False, True], [4, 4, 0, 3, 0], [0, 1, 2, 0, 0], [0, 0, 0, 0, 0],
    ...               [True, True, False, False, True])
    array([3, 2, 0, 1, 0])
    """
    right = np.asarray(right_result, dtype=bool)
    clean = (np.asarray(wasted) == 0) & (np.asarray(corrections) == 0) & np.asarray(checks_passed, dtype=bool)
    level = np.where(right, np.where(clean, 3, 2), 1)
    return np.where(np.asarray(valid_calls) == 0, 0, level).astype(np.int64)


# --------------------------------------------------------------------------- #
# Validation: the tables and the specs
# --------------------------------------------------------------------------- #
def _columns_iv(traces: Traces) -> None:
    for name, frame, needed in (("runs", traces.runs, _RUN_COLUMNS), ("steps", traces.steps, _STEP_COLUMNS)):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"traces.{name} lacks the columns {missing}: build Traces with agentab.load_traces")
    if traces.runs["run_id"].duplicated().any():
        dup = traces.runs.loc[traces.runs["run_id"].duplicated(), "run_id"].iloc[0]
        raise ValueError(f"traces.runs holds run_id {dup!r} more than once")


def _resolve_specs(runs: pd.DataFrame, spec: SpecLike,
                   default: TrajectorySpec | None) -> tuple[list[TrajectorySpec], np.ndarray]:
    """The distinct specs and, for each run, the index of its spec."""
    if default is not None and not isinstance(default, TrajectorySpec):
        raise TypeError(f"`default` must be a TrajectorySpec or None, got {type(default).__name__}: {default!r}")
    if spec is None or isinstance(spec, TrajectorySpec):
        if default is not None:
            raise TypeError("`default` is for a mapping or DataFrame of specs; one spec already covers every run")
        spec = TrajectorySpec() if spec is None else spec
        return [spec], np.zeros(len(runs), dtype=np.int64)
    if isinstance(spec, pd.DataFrame):
        by_task = _specs_from_frame(spec)
    elif isinstance(spec, Mapping):
        by_task = _specs_from_mapping(spec)
    else:
        raise TypeError("`spec` must be a TrajectorySpec, a mapping task_id -> TrajectorySpec, a DataFrame of "
                        f"specs or None; got {type(spec).__name__}")
    tasks = runs["task_id"].astype("category")
    names = [str(c) for c in tasks.cat.categories]
    codes = tasks.cat.codes.to_numpy().astype(np.int64)
    used = np.bincount(codes[codes >= 0], minlength=len(names))
    specs: list[TrajectorySpec] = []
    index_of: dict[int, int] = {}
    code_spec = np.full(len(names) + 1, -1, dtype=np.int64)  # the last slot: runs without a task id
    lacking: list[int] = []
    for code in np.flatnonzero(used):
        chosen = by_task.get(names[code], default)
        if chosen is None:
            lacking.append(code)
            continue
        code_spec[code] = index_of.setdefault(id(chosen), len(index_of))
        if code_spec[code] == len(specs):
            specs.append(chosen)
    n_unnamed = int((codes < 0).sum())
    if lacking or (n_unnamed and default is None):
        n_runs = int(used[lacking].sum()) + n_unnamed
        shown = ", ".join(repr(names[c]) for c in lacking[:3]) + (", ..." if len(lacking) > 3 else "")
        raise ValueError(f"no spec for {len(lacking)} of {int((used > 0).sum())} tasks ({n_runs} runs), e.g. "
                         f"{shown or 'runs without a task_id'}: give a spec for every task_id, or `default=` "
                         "for the others")
    if n_unnamed:
        code_spec[-1] = index_of.setdefault(id(default), len(index_of))
        if code_spec[-1] == len(specs):
            specs.append(default)  # type: ignore[arg-type]
    present = {names[c] for c in np.flatnonzero(used)}
    absent = [t for t in by_task if t not in present]
    if absent:
        shown = ", ".join(repr(t) for t in absent[:3]) + (", ..." if len(absent) > 3 else "")
        warnings.warn(f"{len(absent)} of {len(by_task)} specs are for tasks absent from the traces ({shown}); "
                      "they are not used", SpecWarning, stacklevel=3)
    return specs, code_spec[codes]


def _specs_from_mapping(mapping: Mapping[Any, Any]) -> dict[str, TrajectorySpec]:
    out: dict[str, TrajectorySpec] = {}
    keys: dict[str, Any] = {}
    for key, value in mapping.items():
        task = str(key)
        if task in out:
            raise ValueError(f"two specs for task {task!r} (keys {keys[task]!r} and {key!r})")
        keys[task] = key
        out[task] = _as_spec(value, task)
    return out


def _as_spec(value: Any, task: str) -> TrajectorySpec:
    if isinstance(value, TrajectorySpec):
        return value
    if isinstance(value, Mapping):
        unknown = [k for k in value if k not in _SPEC_FIELDS]
        if unknown:
            raise ValueError(f"spec for task {task!r}: unknown fields {unknown}; known: {', '.join(_SPEC_FIELDS)}")
        try:
            return TrajectorySpec(**value)
        except (TypeError, ValueError) as err:
            raise type(err)(f"spec for task {task!r}: {err}") from err
    raise TypeError(f"spec for task {task!r} must be a TrajectorySpec or a dict of its fields, "
                    f"got {type(value).__name__}: {value!r}")


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _specs_from_frame(frame: pd.DataFrame) -> dict[str, TrajectorySpec]:
    if "task_id" in frame.columns:
        tasks, body = frame["task_id"], frame.drop(columns="task_id")
    else:
        tasks, body = frame.index.to_series(), frame
    unknown = [c for c in body.columns if c not in _SPEC_FIELDS]
    if unknown:
        raise ValueError(f"the spec table has unknown columns {unknown}; known: task_id, {', '.join(_SPEC_FIELDS)}")
    names = [str(t) for t in tasks]
    seen: set[str] = set()
    repeated = [t for t in names if t in seen or seen.add(t)]  # type: ignore[func-returns-value]
    if repeated:
        raise ValueError(f"the spec table has more than one row for task_id {sorted(set(repeated))[:3]}")
    out: dict[str, TrajectorySpec] = {}
    columns = list(body.columns)
    for task, row in zip(names, body.itertuples(index=False, name=None)):
        fields: dict[str, Any] = {}
        for column, value in zip(columns, row):
            if _missing(value):
                continue
            if column in _INT_FIELDS and isinstance(value, (float, np.floating)) and float(value).is_integer():
                value = int(value)
            if column in ("required", "forbidden", "reference") and isinstance(value, np.ndarray):
                value = tuple(value.tolist())
            fields[column] = value
        out[task] = _as_spec(fields, task)
    return out


def _warn_unseen_tools(specs: Sequence[TrajectorySpec], steps: _Steps) -> None:
    called = {steps.tools[c] for c in np.unique(steps.tool)}
    unseen: dict[str, set[str]] = {}
    for spec in specs:
        for tool in spec.required:
            if tool not in called:
                unseen.setdefault(tool, set()).add("required")
        for call in spec.reference or ():
            if call.tool not in called:
                unseen.setdefault(call.tool, set()).add("reference")
    if unseen:
        listed = ", ".join(f"{tool!r} ({', '.join(sorted(where))})" for tool, where in sorted(unseen.items()))
        warnings.warn(f"{len(unseen)} tool(s) named in the specs never appear in any run's steps: {listed}; "
                      "a typo in the spec?", SpecWarning, stacklevel=3)


# --------------------------------------------------------------------------- #
# The steps as arrays
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Steps:
    """The steps of the scored runs, sorted by run and index, as integer arrays."""

    pos: np.ndarray       # position of the step's run in traces.runs
    tool: np.ndarray      # tool code (into ``tools``)
    args: np.ndarray      # argument code (into ``args_text``)
    key: np.ndarray       # call code: equal calls (tool and arguments) have equal codes
    is_ok: np.ndarray
    is_error: np.ndarray
    known: np.ndarray     # status recorded
    start: np.ndarray     # first row of each run
    n: np.ndarray         # steps of each run
    tools: list[str]
    args_text: np.ndarray

    @property
    def within(self) -> np.ndarray:
        """Position of each step inside its run (0 .. n-1)."""
        return np.arange(len(self.pos), dtype=np.int64) - self.start[self.pos]

    @classmethod
    def build(cls, runs: pd.DataFrame, steps: pd.DataFrame) -> _Steps:
        n_runs = len(runs)
        run_ids, step_ids = runs["run_id"], steps["run_id"]
        if isinstance(run_ids.dtype, pd.CategoricalDtype) and run_ids.dtype == step_ids.dtype:
            to_pos = np.full(len(run_ids.cat.categories) + 1, -1, dtype=np.int64)
            to_pos[run_ids.cat.codes.to_numpy()] = np.arange(n_runs)
            pos = to_pos[step_ids.cat.codes.to_numpy().astype(np.int64)]
        else:
            pos = pd.Index(run_ids.astype(str)).get_indexer(step_ids.astype(str)).astype(np.int64)
        index = steps["index"].to_numpy(dtype=np.float64, na_value=np.nan)
        keep = pos >= 0
        step_back = (np.diff(pos) < 0) | ((np.diff(pos) == 0) & (np.diff(index) <= 0))
        if not keep.all() or step_back.any():
            order = np.lexsort((index, pos))
            order = order[keep[order]]
        else:
            order = None

        def take(values: np.ndarray) -> np.ndarray:
            return values if order is None else values[order]

        pos = take(pos)
        tool_col = steps["tool"].astype("category")
        tools = [str(t) for t in tool_col.cat.categories]
        tool = take(tool_col.cat.codes.to_numpy().astype(np.int64))
        if (tool < 0).any():
            raise ValueError("traces.steps has steps without a tool")
        args_codes, args_text = pd.factorize(steps["args"])
        if (args_codes < 0).any():
            raise ValueError("traces.steps has steps without args (expected canonical JSON text, '{}' for none)")
        args = take(args_codes.astype(np.int64))
        status = steps["status"].astype("category")
        labels = np.append(np.asarray(status.cat.categories, dtype=object), None)
        status_codes = take(status.cat.codes.to_numpy().astype(np.int64))
        is_ok, is_error = (labels == "ok")[status_codes], (labels == "error")[status_codes]
        counts = np.bincount(pos, minlength=n_runs).astype(np.int64)
        recorded = runs["n_steps"].to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~np.isnan(recorded) & (recorded != counts))
        if len(bad):
            i = bad[0]
            raise ValueError(f"traces.steps holds {counts[i]} steps for run {str(runs['run_id'].iloc[i])!r}, but "
                             f"traces.runs says n_steps={int(recorded[i])} (in {len(bad)} runs)")
        start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64) if n_runs else counts
        key = tool * max(len(args_text), 1) + args
        return cls(pos=pos, tool=tool, args=args, key=key, is_ok=is_ok, is_error=is_error, known=is_ok | is_error,
                   start=start, n=counts, tools=tools, args_text=np.asarray(args_text, dtype=object))

    def call_text(self, rows: np.ndarray) -> pa.Array:
        """``str(Call)`` of the steps at ``rows``, as score_run shows them (one Python repr per distinct call)."""
        keys = self.key[rows]
        distinct, inverse = np.unique(keys, return_inverse=True)
        width = max(len(self.args_text), 1)
        texts = [f"{self.tools[k // width]}({json.loads(self.args_text[k % width])!r})" for k in distinct.tolist()]
        return pa.array(texts, pa.large_string()).take(pa.array(inverse.reshape(-1)))


class _ToolIndex:
    """Sorted ``(run, tool)`` look-ups over the steps whose tool is of interest."""

    def __init__(self, steps: _Steps, tools_of_interest: np.ndarray, only: np.ndarray | None = None) -> None:
        self.width = max(len(steps.tools), 1)
        wanted = np.isin(steps.tool, tools_of_interest)
        rows = np.flatnonzero(wanted if only is None else wanted & only)
        pair = steps.pos[rows] * self.width + steps.tool[rows]
        order = np.argsort(pair, kind="stable")
        self.pairs, self.rows = pair[order], rows[order]

    def locate(self, run: np.ndarray, tool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First position (into ``self.rows``) and count of the calls of ``tool`` in ``run``."""
        pair = run * self.width + tool
        first = np.searchsorted(self.pairs, pair, side="left")
        count = np.searchsorted(self.pairs, pair, side="right") - first
        return first, np.where(tool >= 0, count, 0)


# --------------------------------------------------------------------------- #
# Reasons
# --------------------------------------------------------------------------- #
class _Reasons:
    """Reason texts with their run and order, joined per run at the end."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []
        self.order: list[np.ndarray] = []
        self.texts: list[pa.Array] = []

    def add(self, check: int, runs: np.ndarray, sub: Any, texts: Any) -> None:
        runs = np.asarray(runs, dtype=np.int64)
        if len(runs) == 0:
            return
        self.runs.append(runs)
        self.order.append(check * _CHECK + np.broadcast_to(np.asarray(sub, dtype=np.int64), runs.shape))
        self.texts.append(texts if isinstance(texts, pa.Array) else pa.array(list(texts), pa.large_string()))

    def join(self, n_runs: int) -> tuple[np.ndarray, pa.Array]:
        """Reasons per run, and the reasons of each run joined by ``"; "``."""
        if not self.runs:
            return np.zeros(n_runs, dtype=np.int64), pa.array([""] * n_runs, pa.large_string())
        runs, order = np.concatenate(self.runs), np.concatenate(self.order)
        texts = pa.concat_arrays([t.cast(pa.large_string()) for t in self.texts])
        sort = np.lexsort((order, runs))
        counts = np.bincount(runs, minlength=n_runs).astype(np.int64)
        offsets = np.concatenate(([0], np.cumsum(counts)))
        lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), texts.take(pa.array(sort)))
        return counts, pc.binary_join(lists, pa.scalar("; ", pa.large_string()))


def _fmt(*parts: Any) -> pa.Array:
    """Concatenate strings and arrays (ints or Arrow strings) element-wise."""
    arrays = []
    for part in parts:
        if isinstance(part, str):
            arrays.append(pa.scalar(part, pa.large_string()))
        elif isinstance(part, pa.Array):
            arrays.append(part.cast(pa.large_string()))
        else:
            arrays.append(pc.cast(pa.array(np.asarray(part, dtype=np.int64)), pa.large_string()))
    return pc.binary_join_element_wise(*arrays, pa.scalar("", pa.large_string()))


def _text_array(values: Sequence[str] | np.ndarray) -> pa.Array:
    return pa.array(list(values), pa.large_string())


# --------------------------------------------------------------------------- #
# The specs as arrays
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Specs:
    """Per-spec fields as arrays, plus the reference calls flattened."""

    specs: list[TrajectorySpec]
    budget: np.ndarray       # 0: none
    cap: np.ndarray          # 0: none
    time_limit: np.ndarray   # NaN: none
    max_repeats: np.ndarray  # 0: none
    success_at: np.ndarray
    match: np.ndarray        # index into MATCH_MODES
    ref_start: np.ndarray    # first flat reference call of each spec
    ref_len: np.ndarray      # 0: no reference
    # flat reference calls
    ref_spec: np.ndarray
    ref_tool: np.ndarray     # tool code, -1 if no run calls it
    ref_rank: np.ndarray     # rank among the spec's reference calls of the same tool
    ref_any_args: np.ndarray  # arguments not compared (args None, or rule "ignore")
    ref_text: np.ndarray     # str(call)
    ref_name: np.ndarray     # tool name

    @classmethod
    def build(cls, specs: list[TrajectorySpec], steps: _Steps) -> _Specs:
        def ints(name: str) -> np.ndarray:
            return np.array([getattr(s, name) or 0 for s in specs], dtype=np.int64)

        code = {t: i for i, t in enumerate(steps.tools)}
        ref_len = np.array([len(s.reference or ()) for s in specs], dtype=np.int64)
        spec_of, tool, rank, any_args, text, name = [], [], [], [], [], []
        for i, spec in enumerate(specs):
            seen: dict[str, int] = {}
            for call in spec.reference or ():
                spec_of.append(i)
                tool.append(code.get(call.tool, -1))
                rank.append(seen.get(call.tool, 0))
                seen[call.tool] = rank[-1] + 1
                any_args.append(call.args is None or spec.rule_for(call.tool) == "ignore")
                text.append(str(call))
                name.append(call.tool)
        return cls(
            specs=specs, budget=ints("step_budget"), cap=ints("step_cap"), max_repeats=ints("max_repeats"),
            time_limit=np.array([np.nan if s.time_limit is None else float(s.time_limit) for s in specs]),
            success_at=np.array([float(s.success_at) for s in specs], dtype=np.float64),
            match=np.array([MATCH_MODES.index(s.match) for s in specs], dtype=np.int64),
            ref_start=np.concatenate(([0], np.cumsum(ref_len)[:-1])).astype(np.int64), ref_len=ref_len,
            ref_spec=np.array(spec_of, dtype=np.int64), ref_tool=np.array(tool, dtype=np.int64),
            ref_rank=np.array(rank, dtype=np.int64), ref_any_args=np.array(any_args, dtype=bool),
            ref_text=np.array(text, dtype=object), ref_name=np.array(name, dtype=object),
        )


def _group(specs: Sequence[TrajectorySpec], key: Any) -> tuple[np.ndarray, list[Any], list[TrajectorySpec]]:
    """Group specs by ``key(spec)``: the group of each spec, the distinct keys, a spec of each group."""
    groups: dict[Any, int] = {}
    first: list[TrajectorySpec] = []
    of = np.empty(len(specs), dtype=np.int64)
    for i, spec in enumerate(specs):
        of[i] = groups.setdefault(key(spec), len(groups))
        if of[i] == len(first):
            first.append(spec)
    return of, list(groups), first


# --------------------------------------------------------------------------- #
# The checks
# --------------------------------------------------------------------------- #
def _required(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons) -> dict[str, Any]:
    n_runs = len(run_spec)
    group_of, groups, _ = _group(sp.specs, lambda s: s.required)
    size = np.array([len(g) for g in groups], dtype=np.int64)
    g_start = np.concatenate(([0], np.cumsum(size)[:-1])).astype(np.int64)
    code = {t: i for i, t in enumerate(steps.tools)}
    flat_tool = np.array([code.get(t, -1) for g in groups for t in g], dtype=np.int64)
    flat_name = np.array([t for g in groups for t in g], dtype=object)
    run_group = group_of[run_spec]
    m = size[run_group]
    e_run = np.repeat(np.arange(n_runs, dtype=np.int64), m)
    e_flat = g_start[run_group[e_run]] + np.arange(len(e_run), dtype=np.int64) - np.repeat(np.cumsum(m) - m, m)
    tools = np.unique(flat_tool[flat_tool >= 0])
    _, called = _ToolIndex(steps, tools).locate(e_run, flat_tool[e_flat])
    _, done = _ToolIndex(steps, tools, ~steps.is_error).locate(e_run, flat_tool[e_flat])
    lacking = done == 0  # a tool whose every call failed did not do the necessary thing
    missing = np.bincount(e_run[lacking], minlength=n_runs).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(m > 0, (m - missing) / np.where(m > 0, m, 1), np.nan)
    for sub, (label, which) in enumerate((("never called: ", called == 0),
                                          ("only failed calls to: ", (called > 0) & (done == 0)))):
        if which.any():
            runs, first = np.unique(e_run[which], return_index=True)
            names = pa.array(flat_name[e_flat[which]].tolist(), pa.large_string())
            offsets = pa.array(np.append(first, which.sum()).astype(np.int64))
            joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, names), pa.scalar(", ", pa.large_string()))
            reasons.add(_REQUIRED, runs, sub, _fmt(label, joined))
    return {"required_missing": missing, "tool_recall_required": recall}


def _loops(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons) -> dict[str, Any]:
    n_runs, n = len(run_spec), len(steps.pos)
    pos, key = steps.pos, steps.key
    same = np.zeros(n, dtype=bool)
    same[1:] = (pos[1:] == pos[:-1]) & (key[1:] == key[:-1])
    repeats = np.bincount(pos[same], minlength=n_runs).astype(np.int64)
    row = np.arange(n, dtype=np.int64)
    streak = row - np.maximum.accumulate(np.where(same, 0, row)) + 1 if n else row
    longest = np.zeros(n_runs, dtype=np.int64)
    has_steps = steps.n > 0
    if has_steps.any():
        longest[has_steps] = np.maximum.reduceat(streak, steps.start[has_steps])
    cap = sp.max_repeats[run_spec][pos]
    at_cap = same & (cap > 0) & (streak - 1 == cap)
    cap_hit = np.bincount(pos[at_cap], minlength=n_runs) > 0
    within = steps.within
    repeat_rows = np.flatnonzero(same)
    reasons.add(_LOOPS, pos[repeat_rows], 2 * within[repeat_rows],
                _fmt("repeated identical call: ", steps.call_text(repeat_rows)))
    cap_rows = np.flatnonzero(at_cap)
    reasons.add(_LOOPS, pos[cap_rows], 2 * within[cap_rows] + 1,
                _fmt("loop cap hit: ", steps.call_text(cap_rows), " repeated ", cap[cap_rows], " times back to back"))
    starts, length = _cycles(pos, key, same)
    cycles = np.bincount(pos[starts], minlength=n_runs).astype(np.int64)
    if len(starts):
        texts = [" -> ".join(part) for part in _split_texts(steps, starts, length)]
        reasons.add(_LOOPS, pos[starts], _LATER + within[starts], _fmt("repeated cycle: ", _text_array(texts)))
    return {"repeats": repeats, "cycles": cycles, "longest_streak": longest, "loop": (repeats + cycles) > 0,
            "cap_hit": cap_hit}


def _split_texts(steps: _Steps, starts: np.ndarray, length: np.ndarray) -> list[list[str]]:
    rows = np.repeat(starts, length) + np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
    texts = steps.call_text(rows).to_pylist()
    bounds = np.cumsum(length).tolist()
    return [texts[b - k:b] for b, k in zip(bounds, length.tolist())]


def _cycles(pos: np.ndarray, key: np.ndarray, same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows where the loop scan of score_run finds a cycle, and each cycle's length.

    A candidate at row i of length L: the L calls from i, not all equal, are
    followed by the same L calls, inside one run. The scan takes the first
    candidate of a run, jumps past both blocks, takes the next candidate
    there, and so on; it is replayed by pointer doubling: each candidate
    points to the first candidate at or after its jump, and the cycles found
    are the candidates reachable from the first candidate of each run.
    """
    n = len(pos)
    length = np.zeros(n, dtype=np.int64)
    for size in range(MAX_CYCLE, 1, -1):  # the shortest length wins, as in the scan
        span = n - 2 * size + 1
        if span <= 0:
            continue
        pair = (pos[:-size] == pos[size:]) & (key[:-size] == key[size:])
        found = pair[:span].copy()
        uniform = same[1:1 + span].copy()
        for j in range(1, size):
            found &= pair[j:j + span]
            if j > 1:
                uniform &= same[j:j + span]
        found &= ~uniform
        length[:span][found] = size
    rows = np.flatnonzero(length)
    if len(rows) == 0:
        return rows, rows
    m = len(rows)
    size = length[rows]
    target = np.searchsorted(rows, rows + 2 * size)
    inside = target < m
    inside[inside] = pos[rows[target[inside]]] == pos[rows[inside]]
    jump = np.append(np.where(inside, target, m), m)
    reached = np.append(np.r_[True, pos[rows[1:]] != pos[rows[:-1]]], False)
    while True:
        reached[jump[reached]] = True
        if (jump == m).all():
            break
        jump = jump[jump]
    taken = reached[:m]
    return rows[taken], size[taken]


def _reference(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons,
               stats: dict[str, int]) -> dict[str, Any]:
    n_runs = len(run_spec)
    ref_len = sp.ref_len[run_spec]
    out = {"reference_match": np.zeros(n_runs, dtype=bool), "tool_precision": np.full(n_runs, np.nan),
           "tool_recall": np.full(n_runs, np.nan), "arg_accuracy": np.full(n_runs, np.nan),
           "_has_reference": ref_len > 0}
    ref_runs = np.flatnonzero(ref_len > 0)
    if len(ref_runs) == 0:
        return out
    mode = sp.match[run_spec]
    # one entry per (run, reference call)
    e_run = np.repeat(ref_runs, ref_len[ref_runs])
    e_flat = (sp.ref_start[run_spec[e_run]] + np.arange(len(e_run), dtype=np.int64)
              - np.repeat(np.cumsum(ref_len[ref_runs]) - ref_len[ref_runs], ref_len[ref_runs]))
    e_tool = sp.ref_tool[e_flat]
    index = _ToolIndex(steps, np.unique(e_tool[e_tool >= 0]))
    first, n_calls = index.locate(e_run, e_tool)
    overlap = np.bincount(e_run, weights=sp.ref_rank[e_flat] < n_calls, minlength=n_runs).astype(np.int64)
    # candidate pairs (reference call, call of the same tool), calls in step order
    p_e = np.repeat(np.arange(len(e_run), dtype=np.int64), n_calls)
    p_row = index.rows[np.repeat(first, n_calls) + np.arange(len(p_e), dtype=np.int64)
                       - np.repeat(np.cumsum(n_calls) - n_calls, n_calls)]
    cache: dict[int, bool] = {}
    edge = sp.ref_any_args[e_flat[p_e]].copy()
    check = ~edge
    edge[check] = _args_fit(steps, sp, e_flat[p_e[check]], steps.args[p_row[check]], cache)
    matched = _greedy_matching(steps, sp, e_run, e_flat, p_e, p_row, edge, stats)
    n_matched = np.bincount(e_run[matched >= 0], minlength=n_runs).astype(np.int64)
    n = steps.n
    # exact order
    exact_runs = ref_runs[mode[ref_runs] == MATCH_MODES.index("exact")]
    exact_ok, exact_k = _exact(steps, sp, run_spec, exact_runs, cache)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["tool_precision"] = np.where((ref_len > 0) & (n > 0), overlap / np.where(n > 0, n, 1), np.nan)
        out["tool_recall"] = np.where(ref_len > 0, overlap / np.where(ref_len > 0, ref_len, 1), np.nan)
        out["arg_accuracy"] = np.where((ref_len > 0) & (overlap > 0), n_matched / np.where(overlap > 0, overlap, 1),
                                       np.nan)
    all_ref = np.isin(mode, [MATCH_MODES.index("superset"), MATCH_MODES.index("any_order")])
    all_calls = np.isin(mode, [MATCH_MODES.index("subset"), MATCH_MODES.index("any_order")])
    ok = (~all_ref | (n_matched == ref_len)) & (~all_calls | (n_matched == n))
    ok[exact_runs] = exact_ok
    out["reference_match"] = ok
    # reasons: unmatched reference calls, then calls outside the reference, then the exact order
    lost = (matched < 0) & all_ref[e_run]
    if lost.any():
        flat = e_flat[lost]
        names = _text_array(sp.ref_name[flat])
        texts = pc.if_else(pa.array(n_calls[lost] == 0), _fmt("never called: ", names),
                           _fmt("wrong arguments: no ", names, " call matches ", _text_array(sp.ref_text[flat])))
        reasons.add(_REFERENCE, e_run[lost], flat - sp.ref_start[run_spec[e_run[lost]]], texts)
    paired = np.zeros(len(steps.pos), dtype=bool)
    paired[matched[matched >= 0]] = True
    outside = np.flatnonzero(~paired & all_calls[steps.pos] & (ref_len[steps.pos] > 0))
    reasons.add(_REFERENCE, steps.pos[outside], _LATER + steps.within[outside],
                _fmt("call outside the reference: ", steps.call_text(outside)))
    wrong = exact_runs[~exact_ok]
    if len(wrong):
        k = exact_k[~exact_ok]
        length = ref_len[wrong]
        want = sp.ref_text[sp.ref_start[run_spec[wrong]] + np.minimum(k, length - 1)]
        want = np.where(k < length, want, "the end of the run")
        has_call = k < n[wrong]
        got = np.full(len(wrong), "the end of the run", dtype=object)
        got[has_call] = steps.call_text(steps.start[wrong[has_call]] + k[has_call]).to_numpy(zero_copy_only=False)
        reasons.add(_REFERENCE, wrong, 0, _fmt("not the reference order: step ", k, " should be ",
                                               _text_array(want), ", got ", _text_array(got)))
    return out


def _args_fit(steps: _Steps, sp: _Specs, flat: np.ndarray, args: np.ndarray, cache: dict[int, bool]) -> np.ndarray:
    """``_args_ok`` of score_run for (reference call, call arguments) pairs, once per distinct pair."""
    if len(flat) == 0:
        return np.zeros(0, dtype=bool)
    width = max(len(steps.args_text), 1)
    distinct, inverse = np.unique(flat * width + args, return_inverse=True)
    values = np.empty(len(distinct), dtype=bool)
    for i, pair in enumerate(distinct.tolist()):
        if pair not in cache:
            f, a = divmod(pair, width)
            spec = sp.specs[sp.ref_spec[f]]
            call = spec.reference[f - sp.ref_start[sp.ref_spec[f]]]  # type: ignore[index]
            cache[pair] = bool(_tj._args_ok(spec.rule_for(call.tool), json.loads(steps.args_text[a]), call.args))
        values[i] = cache[pair]
    return values[inverse.reshape(-1)]


def _greedy_matching(steps: _Steps, sp: _Specs, e_run: np.ndarray, e_flat: np.ndarray, p_e: np.ndarray,
                     p_row: np.ndarray, edge: np.ndarray, stats: dict[str, int]) -> np.ndarray:
    """The call (row) paired with each reference entry by score_run's matching, or -1.

    The first phase of Hopcroft-Karp (scipy) lets each reference call, in
    order, take the first free call it fits. Per (run, tool) block, when that
    pairs as many as the count bound min(reference calls with an edge, calls
    with an edge), no augmenting path exists and it is final; the runs with a
    block short of the bound are matched by score_run's own matching.
    """
    matched = np.full(len(e_run), -1, dtype=np.int64)
    if len(p_e):
        taken = np.zeros(len(steps.pos), dtype=bool)
        rank = sp.ref_rank[e_flat[p_e]]
        for k in range(int(rank.max()) + 1):
            pick = np.flatnonzero((rank == k) & edge & ~taken[p_row])
            if len(pick) == 0:
                continue
            entries, first = np.unique(p_e[pick], return_index=True)
            rows = p_row[pick[first]]
            matched[entries] = rows
            taken[rows] = True
    # the count bound per (run, tool) block
    e_block = e_run * (len(steps.tools) + 1) + sp.ref_tool[e_flat] + 1
    blocks, e_block = np.unique(e_block, return_inverse=True)
    e_block = e_block.reshape(-1)
    has_edge = np.zeros(len(e_run), dtype=bool)
    has_edge[p_e[edge]] = True
    refs_bound = np.bincount(e_block[has_edge], minlength=len(blocks))
    _, first = np.unique(p_row[edge], return_index=True)
    calls_bound = np.bincount(e_block[p_e[edge][first]], minlength=len(blocks))
    size = np.bincount(e_block[matched >= 0], minlength=len(blocks))
    short = size < np.minimum(refs_bound, calls_bound)
    undecided = np.unique(e_run[short[e_block]])
    stats["matching_fallback_runs"] = stats.get("matching_fallback_runs", 0) + len(undecided)
    if len(undecided):
        run_first = np.searchsorted(e_run, undecided)
        for run, at in zip(undecided.tolist(), run_first.tolist()):
            spec = sp.specs[sp.ref_spec[e_flat[at]]]
            lo, hi = steps.start[run], steps.start[run] + steps.n[run]
            calls = [_tj.Call(steps.tools[t], json.loads(steps.args_text[a]))
                     for t, a in zip(steps.tool[lo:hi].tolist(), steps.args[lo:hi].tolist())]
            full = np.asarray(_tj._matching(calls, spec.reference or (), spec, use_args=True))
            matched[at:at + len(full)] = np.where(full >= 0, lo + full, -1)
    return matched


def _exact(steps: _Steps, sp: _Specs, run_spec: np.ndarray, runs: np.ndarray,
           cache: dict[int, bool]) -> tuple[np.ndarray, np.ndarray]:
    """For runs of "exact" specs: matches the reference in order, and the first step that does not."""
    if len(runs) == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    ref_len = sp.ref_len[run_spec]
    in_runs = np.zeros(len(run_spec), dtype=bool)
    in_runs[runs] = True
    within = steps.within
    rows = np.flatnonzero(in_runs[steps.pos] & (within < ref_len[steps.pos]))
    flat = sp.ref_start[run_spec[steps.pos[rows]]] + within[rows]
    fits = sp.ref_tool[flat] == steps.tool[rows]
    check = fits & ~sp.ref_any_args[flat]
    fits[check] = _args_fit(steps, sp, flat[check], steps.args[rows[check]], cache)
    k = np.minimum(steps.n, ref_len)
    bad = rows[~fits]
    np.minimum.at(k, steps.pos[bad], within[bad])
    ok = (steps.n[runs] == ref_len[runs]) & (k[runs] == steps.n[runs])
    return ok, k[runs]


def _status(steps: _Steps, sp: _Specs, run_spec: np.ndarray, reasons: _Reasons,
            latency: np.ndarray) -> dict[str, Any]:
    """Errors, uncorrected errors, budget, step cap, time limit and unanswered calls."""
    n_runs, n = len(run_spec), steps.n
    pos = steps.pos
    n_errors = np.bincount(pos[steps.is_error], minlength=n_runs).astype(np.int64)
    # an error whose tool has no later ok call in the run
    width = max(len(steps.tools), 1)
    pair = pos * width + steps.tool
    ok_rows = np.flatnonzero(steps.is_ok)
    ok_pairs = pair[ok_rows]
    last_pairs, last_at = np.unique(ok_pairs[::-1], return_index=True)
    last_ok = ok_rows[::-1][last_at]
    err_rows = np.flatnonzero(steps.is_error)
    at = np.searchsorted(last_pairs, pair[err_rows])
    found = at < len(last_pairs)
    found[found] = last_pairs[at[found]] == pair[err_rows][found]
    later_ok = np.zeros(len(err_rows), dtype=bool)
    later_ok[found] = last_ok[at[found]] > err_rows[found]
    # ... and that does not merely repeat a call that had already succeeded (e.g. blocked by a loop guard)
    width = int(steps.key.max()) + 1 if n.sum() else 1
    call_pair = pos * width + steps.key
    first_pairs, first_at = np.unique(call_pair[ok_rows], return_index=True)
    first_ok = ok_rows[first_at]
    at = np.searchsorted(first_pairs, call_pair[err_rows])
    found = at < len(first_pairs)
    found[found] = first_pairs[at[found]] == call_pair[err_rows][found]
    redundant = np.zeros(len(err_rows), dtype=bool)
    redundant[found] = first_ok[at[found]] < err_rows[found]
    uncorrected_rows = err_rows[~(later_ok | redundant)]
    cascade = np.bincount(pos[uncorrected_rows], minlength=n_runs) > 0
    budget, cap = sp.budget[run_spec], sp.cap[run_spec]
    over = (budget > 0) & (n > budget)
    hit_cap = (cap > 0) & (n >= cap)
    last = steps.start + n - 1
    known_any = np.bincount(pos[steps.known], minlength=n_runs) > 0
    unanswered = np.zeros(n_runs, dtype=bool)
    has = n > 0
    unanswered[has] = ~steps.known[last[has]] & known_any[has]
    runs = np.flatnonzero(over)
    reasons.add(_BUDGET, runs, 0, _fmt("took ", n[runs], " steps against a budget of ", budget[runs]))
    runs = np.flatnonzero(hit_cap)
    reasons.add(_CAP, runs, 0, _fmt("did not terminate: reached the step cap of ", cap[runs]))
    limit = sp.time_limit[run_spec]
    with np.errstate(invalid="ignore"):
        timed_out = ~np.isnan(limit) & ~np.isnan(latency) & (latency >= limit)
    runs = np.flatnonzero(timed_out)
    reasons.add(_CAP, runs, 1, [f"did not terminate: ran {latency[r]:g} s against a time limit of {limit[r]:g} s"
                                for r in runs])
    runs = np.flatnonzero(unanswered)
    reasons.add(_CAP, runs, 2, _text_array(["did not terminate: the last call was never answered"] * len(runs)))
    first_runs, first_at = np.unique(pos[uncorrected_rows], return_index=True)  # rows are in run order
    reasons.add(_CAP, first_runs, 3,
                _fmt("failed call never made good: ", steps.call_text(uncorrected_rows[first_at])))
    return {"n_errors": n_errors, "error_cascade": cascade, "over_budget": over, "_has_budget": budget > 0,
            "non_terminated": hit_cap | unanswered | timed_out}


def _side_effects(runs: pd.DataFrame, steps: _Steps, sp: _Specs, run_spec: np.ndarray,
                  reasons: _Reasons) -> dict[str, Any]:
    """Forbidden calls (vectorised), and the terminal-state checks once per distinct (spec, state)."""
    n_runs = len(run_spec)
    # forbidden calls: a flag per (forbidden patterns, tool)
    group_of, groups, _ = _group(sp.specs, lambda s: s.forbidden)
    flags = np.array([[any(fnmatchcase(t, p) for p in g) for t in steps.tools] for g in groups],
                     dtype=bool).reshape(len(groups), len(steps.tools))
    bad = np.flatnonzero(flags[group_of[run_spec[steps.pos]], steps.tool]) if len(steps.pos) else steps.pos
    forbidden_calls = np.bincount(steps.pos[bad], minlength=n_runs).astype(np.int64)
    reasons.add(_SIDE, steps.pos[bad], steps.within[bad], _fmt("forbidden call: ", steps.call_text(bad)))
    # terminal state
    state_code, state_text = pd.factorize(runs["terminal_state"])
    state_code = state_code.astype(np.int64)
    parsed = [json.loads(t) for t in state_text]
    changed = np.array([any(_tj._state_entries(s, k) for k in _tj._STATE_LISTS) for s in parsed] + [False])
    effect_of, _, effect_spec = _group(sp.specs, _effect_key)
    combo = effect_of[run_spec] * (len(parsed) + 1) + state_code + 1
    distinct, inverse = np.unique(combo, return_inverse=True)
    inverse = inverse.reshape(-1)
    names = ("forbidden_side_effects", "unexpected_side_effects", "missing_changes", "duplicate_changes")
    values = np.zeros((len(distinct), len(names)), dtype=np.int64)
    known = np.zeros((len(distinct), len(names)), dtype=bool)
    texts: list[str] = []
    for i, c in enumerate(distinct.tolist()):
        group, code = divmod(c, len(parsed) + 1)
        run = _tj._Run([], None, parsed[code - 1] if code else None)
        found, metrics = _tj._side_effects(run, effect_spec[group])
        for j, name in enumerate(names):
            if metrics[name] is not None:
                values[i, j], known[i, j] = metrics[name], True
        texts.append("; ".join(found))
    out: dict[str, Any] = {"forbidden_calls": forbidden_calls}
    for j, name in enumerate(names):
        out[name] = (values[inverse, j], known[inverse, j])
    has_text = np.array([bool(t) for t in texts], dtype=bool)
    with_text = np.flatnonzero(has_text[inverse])
    reasons.add(_SIDE, with_text, _LATER, _text_array(texts).take(pa.array(inverse[with_text])))
    out["_state_changed"] = (changed[state_code], state_code >= 0)
    return out


def _effect_key(spec: TrajectorySpec) -> Any:
    """What the terminal-state checks of score_run read from a spec (equal keys: equal results)."""
    if spec.expected_state is None:
        return spec.forbidden, None
    try:
        intended = tuple((key, tuple(v if isinstance(v, str) else json.dumps(v, sort_keys=True)
                                     for v in spec.expected_state[key]))
                         for key in _tj._STATE_LISTS if key in spec.expected_state)
    except (TypeError, ValueError):
        return id(spec)
    return spec.forbidden, intended


def _claims(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``metadata.claimed_success`` of each run (truth value, recorded), once per distinct metadata."""
    code, texts = pd.factorize(runs["metadata"])
    claims = [(json.loads(t) or {}).get("claimed_success") for t in texts]
    odd = [i for i, c in enumerate(claims) if c is not None and not isinstance(c, bool)]
    if odd:
        warnings.warn(f"metadata.claimed_success is not true/false in {int(np.isin(code, odd).sum())} runs "
                      f"(e.g. {claims[odd[0]]!r}); it is read by its truth value, as score_run does",
                      SpecWarning, stacklevel=4)
    value = np.append(np.array([bool(c) for c in claims], dtype=bool), False)
    recorded = np.append(np.array([c is not None for c in claims], dtype=bool), False)
    return value[code], recorded[code]


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


def _warn_unchecked(runs: pd.DataFrame, sp: _Specs, run_spec: np.ndarray) -> None:
    """Warn, with counts, where a spec asks for a check the data cannot support."""
    def warn(count: int, message: str) -> None:
        if count:
            warnings.warn(f"{count} of {len(runs)} runs: {message}", SpecWarning, stacklevel=4)

    expects = np.array([s.expected_state is not None for s in sp.specs], dtype=bool)[run_spec]
    warn(int((expects & runs["terminal_state"].isna().to_numpy()).sum()),
         "the spec has an expected_state but the run recorded no terminal_state, so its side effects were "
         "not checked against it")
    limited = ~np.isnan(sp.time_limit[run_spec])
    warn(int((limited & runs["latency_s"].isna().to_numpy()).sum()),
         "the spec has a time_limit but the run recorded no latency_s, so it was not checked")
    outcome = runs["outcome"]
    if isinstance(outcome.dtype, pd.BooleanDtype) or outcome.dtype == bool:
        warn(int((sp.success_at[run_spec] != 1.0).sum()),
             "the spec sets success_at, which applies to numeric outcomes; these outcomes are true/false")


def _score_frame(runs: pd.DataFrame, steps: _Steps, specs: list[TrajectorySpec],
                 run_spec: np.ndarray) -> pd.DataFrame:
    n_runs = len(runs)
    sp = _Specs.build(specs, steps)
    _warn_unchecked(runs, sp, run_spec)
    reasons = _Reasons()
    stats: dict[str, int] = {}
    required = _required(steps, sp, run_spec, reasons)
    reference = _reference(steps, sp, run_spec, reasons, stats)
    loops = _loops(steps, sp, run_spec, reasons)
    status = _status(steps, sp, run_spec, reasons, runs["latency_s"].to_numpy(dtype=np.float64, na_value=np.nan))
    side = _side_effects(runs, steps, sp, run_spec, reasons)
    # the outcome
    outcome = runs["outcome"]
    known_outcome = outcome.notna().to_numpy()
    if isinstance(outcome.dtype, pd.BooleanDtype) or outcome.dtype == bool:
        right = outcome.to_numpy(dtype=bool, na_value=False)
    else:
        right = outcome.to_numpy(dtype=np.float64, na_value=np.nan) >= sp.success_at[run_spec]
    right &= known_outcome
    wrong = known_outcome & ~right
    reasons.add(_OUTCOME, np.flatnonzero(wrong), 0, _text_array(["final state is wrong"] * int(wrong.sum())))
    reasons.add(_OUTCOME, np.flatnonzero(~known_outcome), 0,
                _text_array(["no external outcome"] * int((~known_outcome).sum())))
    n_reasons, joined = reasons.join(n_runs)
    # derived metrics
    n = steps.n
    valid = n - status["n_errors"]
    retries = runs["retries"].to_numpy(dtype=np.float64, na_value=np.nan)
    backtracks = runs["backtracks"].to_numpy(dtype=np.float64, na_value=np.nan)
    corrections = np.nan_to_num(retries) + np.nan_to_num(backtracks)
    wasted = status["n_errors"] + loops["repeats"] + loops["cycles"]
    claimed, claim_recorded = _claims(runs)
    changed, state_known = side["_state_changed"]
    premature = claimed & ~right & (wrong | (state_known & ~changed))
    has_ref = reference["_has_reference"]
    columns: dict[str, Any] = {c: runs[c].array.copy() for c in ID_COLUMNS}
    columns["seed"] = runs["seed"].astype("Int64").array
    columns["tokens"] = runs["tokens"].astype("Int64").array
    columns["cost_usd"] = runs["cost_usd"].to_numpy(dtype=np.float64, na_value=np.nan)
    columns["latency_s"] = runs["latency_s"].to_numpy(dtype=np.float64, na_value=np.nan)
    columns.update({
        "passed": _boolean(n_reasons == 0),
        "outcome": outcome.array.copy(),
        "right_result": _boolean(right, known_outcome),
        "n_steps": _integer(n),
        "n_errors": _integer(status["n_errors"]),
        "required_missing": _integer(required["required_missing"]),
        "tool_recall_required": required["tool_recall_required"],
        "reference_match": _boolean(reference["reference_match"], has_ref),
        "tool_precision": reference["tool_precision"],
        "tool_recall": reference["tool_recall"],
        "arg_accuracy": reference["arg_accuracy"],
        "repeats": _integer(loops["repeats"]),
        "cycles": _integer(loops["cycles"]),
        "longest_streak": _integer(loops["longest_streak"]),
        "loop": _boolean(loops["loop"]),
        "cap_hit": _boolean(loops["cap_hit"]),
        "over_budget": _boolean(status["over_budget"], status["_has_budget"]),
        "non_terminated": _boolean(status["non_terminated"]),
        "premature": _boolean(premature, claim_recorded),
        "claimed_success": _boolean(claimed, claim_recorded),
        "accidental_recovery": _boolean(right & ((status["n_errors"] > 0) | loops["loop"])),
        "error_cascade": _boolean(status["error_cascade"]),
        "steps_at_failure": _integer(n, wrong),
        "forbidden_calls": _integer(side["forbidden_calls"]),
    })
    for name in ("forbidden_side_effects", "unexpected_side_effects", "missing_changes", "duplicate_changes"):
        columns[name] = _integer(*side[name])
    columns["retries"] = runs["retries"].astype("Int64").array
    columns["backtracks"] = runs["backtracks"].astype("Int64").array
    columns["rubric"] = _integer(rubric_levels(right, valid, wasted, corrections, n_reasons == 0))
    table = pd.DataFrame(columns, index=pd.RangeIndex(n_runs))
    table["reasons"] = pa.table({"reasons": joined}).to_pandas(
        types_mapper=lambda t: pd.StringDtype("pyarrow") if pa.types.is_large_string(t) else None)["reasons"]
    kind = dict(METRICS)
    if not (isinstance(outcome.dtype, pd.BooleanDtype) or outcome.dtype == bool):
        known = outcome.to_numpy(dtype=np.float64, na_value=np.nan)
        known = known[~np.isnan(known)]
        if not np.isin(known, (0.0, 1.0)).all():  # a 0/1 reward (tau-bench's) stays binary
            kind["outcome"] = ("continuous", "higher")
    table.attrs["metrics"] = {c: {"kind": kind[c][0], "direction": kind[c][1]} for c in table.columns if c in kind}
    table.attrs["scoring"] = {"matching_fallback_runs": stats.get("matching_fallback_runs", 0)}
    return table


def infer_kind(column: pd.Series) -> str | None:
    """The kind of a metric column read from its values, or None when it is not a metric.

    Booleans and numbers of only 0 and 1 are ``binary``; non-negative whole numbers ``count``; other
    numbers ``continuous``; anything else (text, no values) None. Ordinal and cost are never guessed.

    Examples
    --------
    >>> import pandas as pd
    >>> [infer_kind(pd.Series(v)) for v in ([True, False], [0, 1, 1], [3, 0, 12], [0.5, 2.0], ["a"])]
    ['binary', 'binary', 'count', 'continuous', None]
    """
    if pd.api.types.is_bool_dtype(column):
        return "binary"
    if not pd.api.types.is_numeric_dtype(column):
        return None
    known = column.dropna().to_numpy(dtype=float)
    if len(known) == 0:
        return None
    if np.isin(known, (0.0, 1.0)).all():
        return "binary"
    if (known == np.round(known)).all() and (known >= 0).all():
        return "count"
    return "continuous"
