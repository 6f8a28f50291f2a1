"""Score one agent run on its trajectory, not only its final answer.

A run that passes by accident after four wasted calls must not look like a
clean pass. :func:`score_run` checks a run against a :class:`TrajectorySpec`
and returns a :class:`Verdict`: ``passed``, one human-readable reason per
failed check, and a dict of metrics. It needs no framework: a list of
:class:`Call` is enough. This module is also the plain, per-run reference
implementation of every rule; scoring a whole experiment at once
(``agentab.score``, vectorised) must agree with it. The spec and its words
are in :mod:`agentab.scoring.spec`, the reference matching of one run in
:mod:`agentab.scoring.reference`, the rubric in :mod:`agentab.scoring.metrics`;
the terminal-state rules here (:func:`state_effects`) serve both scorers.

The checks, in the order their reasons are listed
--------------------------------------------------
1. **Necessary calls.** Every ``required`` tool was called ("never called:
   X"). With a ``reference`` trajectory, the calls are compared in the chosen
   ``match`` mode (below).
2. **Loops.** The same call (tool and arguments) back to back ("repeated
   identical call: tool({...})"), and short cycles such as A, B, A, B
   ("repeated cycle: ..."). A repeat that is *not* back to back, such as
   re-running the tests after a fix, is legitimate and not flagged. With
   ``max_repeats`` (the agent's loop cap), a streak that reaches the cap is
   also reported ("loop cap hit: ...").
3. **Efficiency.** More steps than ``step_budget`` ("took 8 steps against a
   budget of 5"); at or beyond ``step_cap`` (the harness's hard limit), or
   with ``latency_s`` at or beyond ``time_limit``, the run did not terminate
   on its own.
4. **Side effects.** Calls to ``forbidden`` tools, and terminal-state entries
   (files, URLs) matching a ``forbidden`` pattern or not in
   ``expected_state``.
5. **Outcome** -- and only now the thing response-level scoring checks
   alone: "final state is wrong" when the external outcome is false.

Match modes (``reference`` given)
---------------------------------
``"exact"``
    The same calls in the same order. Right only when order is load-bearing:
    a migration that must back up before it writes, a payment that must
    authorise before it charges.
``"any_order"``
    The same calls (as a multiset), order free. The right default for
    read-only information gathering: fetching the schema before or after the
    rows is a matter of taste.
``"superset"``
    Every reference call appears; extra calls are tolerated. Right when you
    care that the necessary things were done and are not yet making the
    agent efficient -- always pair it with ``step_budget``, or you have
    licensed the forty-step run.
``"subset"``
    No call outside the reference (each call must be one of the reference
    calls, each reference call used at most once). Right for a locked-down
    agent that may skip steps but must never improvise.

Arguments are compared per tool: ``"subset"`` (default: the call must contain
the reference's keys with equal values; a reference call with ``args=None``
does not compare arguments), ``"exact"``, ``"ignore"``, or a callable
``rule(actual_args, reference_args) -> bool``. Calls are paired with
reference calls by a maximum bipartite matching (Hopcroft-Karp, via
:func:`scipy.sparse.csgraph.maximum_bipartite_matching`), not first fit:
first fit can use up the only call that fits a stricter reference call.

Sources: the failure shapes, match modes and the worked example follow
"Evaluating agentic systems" (seed 000); the vector score, "Evaluating Agents
on Trajectories, Not Answers" (seed 001); the 0-3 rubric, the three-axes note
(seed 002). All in ``shared/seeds``.

Examples
--------
The worked example of seed 000: the final state is correct, and yet

>>> from agentab import Call, score_run
>>> lucky = [
...     Call("search_docs", {"q": "failing test"}),
...     Call("search_docs", {"q": "failing test"}),
...     Call("read_file", {"path": "src/mian.py"}),
...     Call("read_file", {"path": "src/mian.py"}),
...     Call("run_tests", {}),
...     Call("list_dir", {"path": "src"}),
...     Call("edit_file", {"path": "src/main.py"}),
...     Call("run_tests", {}),
... ]
>>> verdict = score_run(lucky, required=["list_dir", "edit_file"], step_budget=5,
...                     final_state_correct=True)
>>> verdict.passed
False
>>> for reason in verdict.reasons:
...     print(reason)
repeated identical call: search_docs({'q': 'failing test'})
repeated identical call: read_file({'path': 'src/mian.py'})
took 8 steps against a budget of 5
>>> verdict.metrics["rubric"]
2
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentab._display import Block, Display, Items, Section, Table, Title
from agentab.scoring._resolve import tool_calls
from agentab.scoring.metrics import rubric_level
from agentab.scoring.reference import reference_check
from agentab.scoring.spec import ARG_RULES, MATCH_MODES, MAX_CYCLE, STATE_LISTS, Call, TrajectorySpec, as_call

__all__ = ["Call", "TrajectorySpec", "Verdict", "score_run", "rubric_level", "MATCH_MODES", "ARG_RULES"]


@dataclass(frozen=True)
class Verdict(Display):
    """The result of :func:`score_run`.

    Attributes
    ----------
    passed : bool
        No check failed.
    reasons : list of str
        One human-readable reason per failed check, in check order.
    metrics : dict
        Every metric of the run (see :data:`~agentab.scoring.metrics.METRICS`).
    """

    passed: bool
    reasons: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``passed``, ``reasons`` and ``metrics`` as plain values."""
        return {"passed": self.passed, "reasons": list(self.reasons), "metrics": dict(self.metrics)}

    def _view(self) -> list[Block]:
        head, tone = ("PASS", "good") if self.passed else ("FAIL", "bad")
        return [Title(head, tone=tone), Items(self.reasons)]

    def _html_view(self) -> list[Block]:
        """What HTML shows: the verdict, its reasons and every known metric (``str()`` leaves the metrics out)."""
        shown = {k: v for k, v in self.metrics.items() if v is not None}
        extra: list[Block] = []
        if shown:
            frame = pd.DataFrame({"metric": [str(k) for k in shown], "value": [str(v) for v in shown.values()]})
            extra = [Section(f"metrics ({len(shown)})", [Table(frame)])]
        return [*self._view(), *extra]


# --------------------------------------------------------------------------- #
# One run
# --------------------------------------------------------------------------- #
@dataclass
class _Run:
    calls: list[Call]
    outcome: Any
    terminal_state: Mapping[str, Any] | None = None
    retries: int | None = None
    backtracks: int | None = None
    claimed_success: bool | None = None
    latency_s: float | None = None


def _run_from(run: Any, outcome: Any, final_state_correct: Any) -> _Run:
    given = outcome if outcome is not None else final_state_correct
    if isinstance(run, Mapping):  # a trace record
        steps = run.get("steps")
        if not isinstance(steps, list):  # not read as 0 steps: a record without its steps says nothing of them
            raise ValueError(f"a trace record to score needs `steps`, a list of its calls ([] for none); "
                             f"got {'none' if steps is None else type(steps).__name__}")
        bad = next((i for i, s in enumerate(steps) if not isinstance(s, Mapping)), None)
        if bad is not None:
            raise TypeError(f"steps[{bad}]: a step must be an object, got {type(steps[bad]).__name__}")
        tools = [(i, s) for i, s in enumerate(steps) if s.get("kind") != "handoff"]  # handoffs are not tool calls
        calls = [as_call({"tool": s.get("tool"), "args": s.get("args") or {}}, f"steps[{i}]") for i, s in tools]
        calls = [Call(c.tool, c.args, (s.get("observation") or {}).get("status")) for c, (_, s) in zip(calls, tools)]
        meta = run.get("metadata") or {}
        claim = meta.get("claimed_success")
        return _Run(calls, run.get("outcome") if given is None else given, run.get("terminal_state"),
                    run.get("retries"), run.get("backtracks"), None if claim is None else bool(claim),
                    run.get("latency_s"))
    if hasattr(run, "runs") and hasattr(run, "steps"):  # a Traces holding one run
        if len(run.runs) != 1:
            raise ValueError(f"score_run scores one run; these traces hold {len(run.runs)} (use agentab.score)")
        return _run_from(run.to_records()[0], outcome, final_state_correct)
    if hasattr(run, "columns") and {"tool", "args"} <= set(run.columns):  # a steps row group
        run = tool_calls(run)
        calls = [Call(t, json.loads(a) if isinstance(a, str) else (a or {}), None if s is None or s != s else s)
                 for t, a, s in zip(run["tool"], run["args"], run.get("status", [None] * len(run)))]
        return _Run(calls, given)
    if isinstance(run, Iterable):
        calls = [as_call(c, f"call {i}") for i, c in enumerate(run)]
        return _Run([Call(c.tool, c.args or {}, c.status) for c in calls], given)
    raise TypeError(f"cannot score a {type(run).__name__}: pass a trace record, Traces, a steps table or Calls")


def _right(outcome: Any, success_at: float) -> bool | None:
    if outcome is None or (not isinstance(outcome, (bool, np.bool_)) and pd.isna(outcome)):
        return None
    if isinstance(outcome, (bool, np.bool_)):
        return bool(outcome)
    return float(outcome) >= success_at



def _loops(calls: list[Call], max_repeats: int | None) -> tuple[list[str], dict[str, Any]]:
    keys = [c.key() for c in calls]
    reasons: list[str] = []
    repeats = 0
    streak = longest = 1 if calls else 0
    cap_hit = False
    for i in range(1, len(calls)):
        if keys[i] == keys[i - 1]:
            repeats += 1
            streak += 1
            reasons.append(f"repeated identical call: {calls[i]}")
            if max_repeats is not None and streak - 1 == max_repeats:
                cap_hit = True
                reasons.append(f"loop cap hit: {calls[i]} repeated {max_repeats} times back to back")
        else:
            streak = 1
        longest = max(longest, streak)
    cycles = 0
    i = 0
    while i < len(calls):
        for length in range(2, MAX_CYCLE + 1):
            block = keys[i:i + length]
            if len(set(block)) > 1 and len(block) == length and keys[i + length:i + 2 * length] == block:
                cycles += 1
                shown = " -> ".join(str(c) for c in calls[i:i + length])
                reasons.append(f"repeated cycle: {shown}")
                i += 2 * length - 1
                break
        i += 1
    return reasons, {"repeats": repeats, "cycles": cycles, "longest_streak": longest, "loop": repeats + cycles > 0,
                     "cap_hit": cap_hit if max_repeats is not None else None}


def entry_text(value: Any) -> str:
    """A terminal-state (or ``expected_state``) entry as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _state_entries(state: Mapping[str, Any] | None, key: str) -> list[str]:
    return [entry_text(v) for v in (state or {}).get(key) or []]


def state_changed(state: Mapping[str, Any] | None) -> bool:
    """Whether a recorded terminal state lists any change."""
    return any(_state_entries(state, key) for key in STATE_LISTS)


def state_effects(state: Mapping[str, Any] | None, spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    """The terminal-state checks: duplicated, forbidden, unexpected and missing entries (None: no state)."""
    reasons: list[str] = []
    unexpected = missing = forbidden_effects = duplicates = 0
    known = state is not None
    for key in STATE_LISTS:
        counts = Counter(_state_entries(state, key))
        label = key.replace("_", " ")
        for entry, n in counts.items():
            if n > 1 and key != "external_calls":
                duplicates += 1
                reasons.append(f"{label} more than once: {entry}")
            if any(fnmatch.fnmatchcase(entry, p) for p in spec.forbidden):
                forbidden_effects += 1
                reasons.append(f"forbidden side effect ({label}): {entry}")
        if spec.expected_state is not None and key in spec.expected_state:
            intended = [entry_text(v) for v in spec.expected_state[key]]
            for entry in counts:
                if entry not in intended:
                    unexpected += 1
                    reasons.append(f"unexpected side effect ({label}): {entry}")
            if known:
                for entry in intended:
                    if entry not in counts:
                        missing += 1
                        reasons.append(f"intended change missing ({label}): {entry}")
    expected = known and spec.expected_state is not None
    return reasons, {
        "forbidden_side_effects": forbidden_effects if known and spec.forbidden else None,
        "unexpected_side_effects": unexpected if expected else None,
        "missing_changes": missing if expected else None,
        "duplicate_changes": duplicates if known else None,
    }


def _side_effects(run: _Run, spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    """Calls to forbidden tools, then the terminal-state checks."""
    forbidden_calls = [c for c in run.calls if any(fnmatch.fnmatchcase(c.tool, p) for p in spec.forbidden)]
    reasons = [f"forbidden call: {call}" for call in forbidden_calls]
    state_reasons, metrics = state_effects(run.terminal_state, spec)
    return reasons + state_reasons, {"forbidden_calls": len(forbidden_calls) if spec.forbidden else None, **metrics}


def score_run(
    run: Any,
    *,
    required: Sequence[str] = (),
    reference: Sequence[Any] | None = None,
    match: str = "superset",
    step_budget: int | None = None,
    forbidden: Sequence[str] = (),
    expected_state: Mapping[str, Sequence[Any]] | None = None,
    spec: TrajectorySpec | None = None,
    outcome: Any = None,
    final_state_correct: Any = None,
    **options: Any,
) -> Verdict:
    """Score one run on its trajectory (see the module docstring for every check).

    Parameters
    ----------
    run : dict, Traces, DataFrame, or sequence of Call
        A trace record; a :class:`~agentab.Traces` holding one run; a steps
        table of one run (``tool``, ``args``, optionally ``status``); or the
        calls themselves (``Call``, tool names, or ``(tool, args)`` pairs).
    required, reference, match, step_budget, forbidden, expected_state
        The spec, as keywords (see :class:`TrajectorySpec`); or pass ``spec``.
    spec : TrajectorySpec, optional
        A whole spec instead of the keywords (not both).
    outcome, final_state_correct : bool or number, optional
        The external verdict, when ``run`` does not carry it (the two names
        are synonyms; the second is the seed's).
    **options
        Further :class:`TrajectorySpec` fields: ``args``, ``step_cap``,
        ``max_repeats``, ``success_at``.

    Returns
    -------
    Verdict

    Examples
    --------
    Order matters only when it is load-bearing: back up before you write.

    >>> from agentab import Call, score_run
    >>> reference = [Call("backup_db"), Call("migrate", {"version": 7})]
    >>> run = [Call("migrate", {"version": 7}), Call("backup_db", {})]
    >>> score_run(run, reference=reference, match="exact", outcome=True).reasons
    ["not the reference order: step 0 should be backup_db({}), got migrate({'version': 7})"]
    >>> score_run(run, reference=reference, match="any_order", outcome=True).passed
    True
    """
    keywords = dict(required=required, reference=reference, match=match, step_budget=step_budget,
                    forbidden=forbidden, expected_state=expected_state, **options)
    if spec is None:
        spec = TrajectorySpec(**{k: v for k, v in keywords.items() if v is not None})
    elif options or any(_given(keywords[k]) for k in ("required", "reference", "step_budget", "forbidden",
                                                      "expected_state")) or match != "superset":
        raise TypeError("give either `spec` or the spec keywords, not both")
    return _score(_run_from(run, outcome, final_state_correct), spec)


def _given(value: Any) -> bool:
    """A spec keyword the caller set: not None and not an empty sequence."""
    if value is None:
        return False
    return not (isinstance(value, (Sequence, Mapping)) and not isinstance(value, str) and len(value) == 0)


def _required_check(calls: list[Call], spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    """Required tools never called, or only called with failures."""
    called = {c.tool for c in calls}
    done = {c.tool for c in calls if c.status != "error"}
    never = [tool for tool in spec.required if tool not in called]
    failed_only = [tool for tool in spec.required if tool in called and tool not in done]
    missing = [tool for tool in spec.required if tool not in done]
    reasons = [f"never called: {', '.join(never)}"] if never else []
    if failed_only:
        reasons.append(f"only failed calls to: {', '.join(failed_only)}")
    recall = (len(spec.required) - len(missing)) / len(spec.required) if spec.required else None
    return reasons, {"required_missing": len(missing) if spec.required else None, "tool_recall_required": recall}


def _efficiency(run: _Run, spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    """Budget, step cap, time limit, an unanswered last call, and a failed call never made good."""
    calls, reasons = run.calls, []
    n = len(calls)
    over_budget = spec.step_budget is not None and n > spec.step_budget
    if over_budget:
        reasons.append(f"took {n} steps against a budget of {spec.step_budget}")
    hit_cap = spec.step_cap is not None and n >= spec.step_cap
    unanswered = bool(calls) and calls[-1].status is None and any(c.status is not None for c in calls)
    if hit_cap:
        reasons.append(f"did not terminate: reached the step cap of {spec.step_cap}")
    timed_out = spec.time_limit is not None and run.latency_s is not None and run.latency_s >= spec.time_limit
    if timed_out:
        reasons.append(f"did not terminate: ran {run.latency_s:g} s against a time limit of {spec.time_limit:g} s")
    if unanswered:
        reasons.append("did not terminate: the last call was never answered")
    uncorrected = _uncorrected_error(calls)
    if uncorrected is not None:
        reasons.append(f"failed call never made good: {uncorrected}")
    # each part is known when its check can be made: a cap, a time limit with a latency, a recorded status
    statuses = not calls or any(c.status is not None for c in calls)
    checked = spec.step_cap is not None or (spec.time_limit is not None and run.latency_s is not None) or statuses
    non_terminated = hit_cap or unanswered or timed_out
    return reasons, {"over_budget": over_budget if spec.step_budget is not None else None,
                     "non_terminated": non_terminated if checked else None,
                     "error_cascade": uncorrected is not None if statuses else None}


def _score(run: _Run, spec: TrajectorySpec) -> Verdict:
    calls = run.calls
    n = len(calls)
    required_reasons, required = _required_check(calls, spec)
    reference_reasons, reference_metrics = reference_check(run, spec)
    loop_reasons, loops = _loops(calls, spec.max_repeats)
    status_reasons, status = _efficiency(run, spec)
    side_reasons, side = _side_effects(run, spec)
    reasons = required_reasons + reference_reasons + loop_reasons + status_reasons + side_reasons
    right = _right(run.outcome, spec.success_at)
    if right is False:
        reasons.append("final state is wrong")
    elif right is None:
        reasons.append("no external outcome")

    errors = sum(c.status == "error" for c in calls)
    statuses = not calls or any(c.status is not None for c in calls)  # n_errors is known
    valid = sum(c.status != "error" for c in calls)
    corrections = (run.retries or 0) + (run.backtracks or 0)
    wasted = errors + loops["repeats"] + loops["cycles"]
    changed = None if run.terminal_state is None else state_changed(run.terminal_state)
    metrics: dict[str, Any] = {
        "passed": not reasons,
        "outcome": run.outcome,
        "right_result": right,
        "n_steps": n,
        "n_errors": errors if statuses else None,
        **required,
        **reference_metrics,
        **loops,
        "over_budget": status["over_budget"],
        "non_terminated": status["non_terminated"],
        "premature": (None if run.claimed_success is None else
                      bool(run.claimed_success) and right is not True
                      and (right is False or changed is False)),
        "claimed_success": run.claimed_success,
        "accidental_recovery": _accidental(right, errors, statuses, loops["loop"]),
        "error_cascade": status["error_cascade"],
        "steps_at_failure": n if right is False else None,
        **side,
        "retries": run.retries,
        "backtracks": run.backtracks,
        "rubric": None if right is None and valid else
        rubric_level(right_result=bool(right), valid_calls=valid, wasted=wasted, corrections=corrections,
                     checks_passed=not reasons),
    }
    return Verdict(passed=not reasons, reasons=reasons, metrics=metrics)


def _accidental(right: bool | None, errors: int, statuses: bool, loop: bool) -> bool | None:
    """A right result despite errors or loops; None when the outcome, or (without a loop) the errors, are unknown."""
    if right is None:
        return None
    if not right or loop:
        return bool(right)
    return errors > 0 if statuses else None


def _uncorrected_error(calls: list[Call]) -> Call | None:
    """The first failed call the run never made good (no later success of that tool), if any.

    A failure that only repeats a call that had already succeeded (such as a
    repeat blocked by a loop guard) lost no information and does not count.
    """
    succeeded_before: set[tuple[str, str]] = set()
    redundant = []
    for call in calls:
        redundant.append(call.status == "error" and call.key() in succeeded_before)
        if call.status == "ok":
            succeeded_before.add(call.key())
    fixed: set[str] = set()
    first = None
    for call, is_redundant in zip(reversed(calls), reversed(redundant)):
        if call.status == "error" and call.tool not in fixed and not is_redundant:
            first = call
        if call.status == "ok":
            fixed.add(call.tool)
    return first
