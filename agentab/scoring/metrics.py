"""The metric columns of :func:`agentab.score`: kinds, directions, the rubric on arrays, kinds from values.

The kinds and directions are the words of :mod:`agentab._vocabulary` (``KINDS``, ``DIRECTIONS``);
:data:`METRICS` gives each metric column of a score table its kind and direction, and
:func:`metric_kinds` reads them back from a table.

The table
---------
One row per run, in the order of ``traces.runs``. Kinds: ``binary``
(nullable ``boolean``), ``count`` and ``ordinal`` (``Int64``),
``continuous`` and ``cost`` (``float64``; ``tokens`` is ``Int64``). A
missing value means "cannot be computed": the spec does not ask for the
check (no budget, no ``max_repeats``, nothing required or forbidden, no
reference), or the trace does not record what it needs (no terminal state,
no step status, no token counts), exactly where ``score_run`` gives
``None``. It is never written as 0 or False, and is shown "n/a".
``df.attrs["metrics"]`` holds every metric column's kind and direction;
:func:`metric_kinds` reads it back.

========================== ========== ========= ==================================================
column                     kind       better    meaning
========================== ========== ========= ==================================================
``run_id``, ``task_id``,   id                   from ``traces.runs`` (categorical; ``seed`` Int64)
``seed``, ``arm``,
``model``, ``harness``
``tokens``                 cost       lower     tokens of the run (missing if any step's is,
                                                or, without steps, if not recorded)
``cost_usd``               cost       lower     dollars of the run
``latency_s``              cost       lower     wall-clock seconds of the run
``passed``                 binary     higher    no check failed (``reasons`` is empty)
``outcome``                binary     higher    the external verdict as loaded (``continuous``,
                                                float64, when outcomes are numbers other
                                                than 0 and 1)
``right_result``           binary     higher    outcome true, or a number at or above
                                                ``success_at``
``n_steps``                count      lower     tool calls
``n_errors``               count      lower     calls whose status is ``"error"`` (missing: no
                                                step records a status)
``required_missing``       count      lower     ``required`` tools never called (missing:
                                                none required)
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
``cap_hit``                binary     lower     a streak reached ``max_repeats`` (missing: no
                                                ``max_repeats``)
``over_budget``            binary     lower     more steps than ``step_budget`` (missing: no
                                                budget)
``non_terminated``         binary     lower     reached ``step_cap`` or ``time_limit``, or the
                                                last call was never answered (missing: no
                                                cap, no time limit with a latency, and no
                                                step records a status)
``premature``              binary     lower     claimed success (``metadata.claimed_success``)
                                                while the result is not right: wrong, or
                                                unknown with no state change
                                                (missing: no claim recorded)
``claimed_success``        binary     neither   the agent's own claim, as recorded
``accidental_recovery``    binary     lower     right result despite errors or loops (missing:
                                                outcome unknown, or no loop and no status)
``error_cascade``          binary     lower     an error whose tool never succeeded later (not
                                                counting a failed repeat of a call that had
                                                already succeeded; missing: no status)
``steps_at_failure``       count      lower     steps of a run with a wrong result (missing:
                                                right or unknown)
``forbidden_calls``        count      lower     calls to a ``forbidden`` tool (missing: nothing
                                                forbidden)
``forbidden_side_effects`` count      lower     terminal-state entries matching ``forbidden``
                                                (missing: nothing forbidden, or no state)
``unexpected_side_effects`` count     lower     terminal-state entries outside
                                                ``expected_state``
``missing_changes``        count      lower     ``expected_state`` entries the run did not make
``duplicate_changes``      count      lower     file entries listed more than once
``retries``                count      lower     retries after an error, as recorded
``backtracks``             count      lower     undone or redone work, as recorded
``rubric``                 ordinal    higher    0-3 level of :func:`rubric_level` (missing:
                                                outcome unknown and a valid call made)
``reasons``                text                 ``score_run``'s reasons joined by ``"; "``
========================== ========== ========= ==================================================

"neither" (``claimed_success``): a difference is reported but is not better
or worse by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from agentab._vocabulary import DIRECTIONS, KINDS

__all__ = ["DIRECTIONS", "KINDS", "METRICS", "infer_kind", "metric_kinds", "rubric_level", "rubric_levels"]


#: Every metric column of :func:`agentab.score`: name -> (kind, direction), in column order.
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


def metric_kinds(table: pd.DataFrame) -> pd.DataFrame:
    """Kind and direction of each metric column of a :func:`agentab.score` table.

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
    """The 0-3 rubric of :func:`rubric_level` on arrays (one element per run).

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
    level = _rubric(np.asarray(right_result, dtype=bool), np.asarray(valid_calls), np.asarray(wasted),
                    np.asarray(corrections), np.asarray(checks_passed, dtype=bool))
    return np.asarray(level, dtype=np.int64)


def _rubric(right: Any, valid_calls: Any, wasted: Any, corrections: Any, checks_passed: Any) -> Any:
    """The rubric's rule, once, on numbers or numpy arrays alike: 0 without a valid call, else 1 when wrong,
    else 3 when clean (nothing wasted, no correction, every check passed), else 2."""
    clean = (wasted == 0) & (corrections == 0) & checks_passed
    return (valid_calls != 0) * (1 + right * (1 + clean))


def rubric_level(*, right_result: bool, valid_calls: int, wasted: int, corrections: int,
                 checks_passed: bool) -> int:
    """The 0-3 ordinal rubric of seed 002, from observable facts (one run; :func:`rubric_levels` on arrays).

    ===== ========================== =============================================
    level meaning                    anchor (an example run)
    ===== ========================== =============================================
    0     no progress                no valid tool call, or gave up at once: zero
                                     steps, or every call failed (whatever the
                                     outcome)
    1     partial                    gathered the right information but took no
                                     action, or acted and the result is wrong
    2     complete with intervention right result after a retry, an error, a
                                     loop or a correction (a backtrack), or with
                                     any failed trajectory check (over budget,
                                     not terminated, a side effect, ...)
    3     clean completion           right result, every trajectory check passed,
                                     no failed, repeated or cycling call, no
                                     retry or backtrack
    ===== ========================== =============================================

    Wasted steps are failed, repeated or cycling calls; an extra distinct call
    is not wasted by itself (it counts against the budget, a check).

    Examples
    --------
    >>> rubric_level(right_result=True, valid_calls=4, wasted=0, corrections=0, checks_passed=True)
    3
    >>> rubric_level(right_result=True, valid_calls=0, wasted=2, corrections=0, checks_passed=False)
    0
    """
    return int(_rubric(bool(right_result), valid_calls, wasted, corrections, bool(checks_passed)))


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
