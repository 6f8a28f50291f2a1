"""Score one agent run on its trajectory, not only its final answer.

A run that passes by accident after four wasted calls must not look like a
clean pass. :func:`score_run` checks a run against a :class:`TrajectorySpec`
and returns a :class:`Verdict`: ``passed``, one human-readable reason per
failed check, and a dict of metrics. It needs no framework: a list of
:class:`Call` is enough. This module is also the plain, per-run reference
implementation of every rule; scoring a whole experiment at once
(``agentab.score``, vectorised) must agree with it.

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

import html

import fnmatch
import json
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
import pandas as pd
import scipy.sparse
from scipy.sparse.csgraph import maximum_bipartite_matching

from agentab.errors import SpecWarning

__all__ = ["Call", "TrajectorySpec", "Verdict", "score_run", "rubric_level", "MATCH_MODES", "ARG_RULES"]

#: The ways a run can be matched against a reference trajectory.
MATCH_MODES = ("exact", "any_order", "superset", "subset")
#: Named argument-comparison rules.
ARG_RULES = ("subset", "exact", "ignore")
#: Longest cycle (in calls) looked for by the loop check.
MAX_CYCLE = 4

ArgRule = Union[str, Callable[[Mapping[str, Any], Mapping[str, Any]], bool]]


@dataclass(frozen=True)
class Call:
    """One tool call: ``tool(args)``.

    Parameters
    ----------
    tool : str
        Tool name.
    args : mapping or None
        Arguments. In a *reference* trajectory, ``None`` means "any
        arguments"; in a run, ``None`` is read as ``{}``.
    status : {"ok", "error", None}
        The observation's status, when known (runs only).
    """

    tool: str
    args: Mapping[str, Any] | None = None
    status: str | None = None

    def key(self) -> tuple[str, str]:
        """``(tool, canonical JSON of args)``: equal calls have equal keys."""
        return self.tool, json.dumps(self.args or {}, sort_keys=True, separators=(",", ":"), default=str)

    def __str__(self) -> str:
        return f"{self.tool}({dict(self.args) if self.args is not None else {}})"


@dataclass(frozen=True)
class TrajectorySpec:
    """What a good trajectory for a task looks like (see the module docstring).

    Parameters
    ----------
    required : sequence of str
        Tools that must be called at least once (any arguments).
    reference : sequence of Call, optional
        A reference trajectory, compared in ``match`` mode.
    match : {"superset", "exact", "any_order", "subset"}
        How the run must match ``reference``.
    args : str, callable, or mapping of tool -> rule
        Argument comparison: ``"subset"`` (default), ``"exact"``, ``"ignore"``
        or ``rule(actual, reference) -> bool``; a mapping sets it per tool
        (key ``"*"`` for the others).
    step_budget : int, optional
        Steps a clean run may take; more fails the run.
    step_cap : int, optional
        The harness's hard limit on steps: a run that reaches it did not
        terminate on its own.
    time_limit : float, optional
        The harness's time limit in seconds: a run whose ``latency_s``
        reaches it timed out (did not terminate on its own).
    max_repeats : int, optional
        The agent's loop cap: back-to-back repeats of one call that reach it
        are reported as a cap hit.
    forbidden : sequence of str
        Glob patterns (``fnmatch``) of tools that must not be called and of
        terminal-state entries (paths, URLs) that must not be touched.
    expected_state : mapping, optional
        The intended terminal state: lists ``files_created``,
        ``files_modified``, ``files_deleted``, ``external_calls``. Entries
        outside it are unexpected side effects; intended entries missing from
        the run's state are reported too. Lists not given are not checked.
    success_at : float
        For numeric outcomes: the score at and above which the result is
        right (default 1.0).
    """

    required: tuple[str, ...] = ()
    reference: tuple[Call, ...] | None = None
    match: str = "superset"
    args: ArgRule | Mapping[str, ArgRule] = "subset"
    step_budget: int | None = None
    step_cap: int | None = None
    time_limit: float | None = None
    max_repeats: int | None = None
    forbidden: tuple[str, ...] = ()
    expected_state: Mapping[str, Sequence[Any]] | None = None
    success_at: float = 1.0

    def __post_init__(self) -> None:
        _spec_iv(self)

    def rule_for(self, tool: str) -> ArgRule:
        """The argument rule that applies to ``tool``."""
        if isinstance(self.args, Mapping):
            return self.args.get(tool, self.args.get("*", "subset"))
        return self.args


def _spec_iv(spec: TrajectorySpec) -> None:
    """Validate and normalise a spec in place (frozen: via object.__setattr__)."""
    set_ = object.__setattr__
    if isinstance(spec.required, str):
        raise TypeError(f"`required` must be a sequence of tool names, got the string {spec.required!r}")
    set_(spec, "required", tuple(spec.required))
    if isinstance(spec.forbidden, str):
        raise TypeError(f"`forbidden` must be a sequence of patterns, got the string {spec.forbidden!r}")
    set_(spec, "forbidden", tuple(spec.forbidden))
    for name in ("required", "forbidden"):
        for item in getattr(spec, name):
            if not isinstance(item, str) or not item:
                raise TypeError(f"`{name}` items must be non-empty strings, got {item!r}")
    if spec.reference is not None:
        if isinstance(spec.reference, (str, Call)) or not isinstance(spec.reference, Iterable):
            raise TypeError(f"`reference` must be a sequence of calls, got {spec.reference!r}")
        reference = tuple(_as_call(c, f"reference[{i}]") for i, c in enumerate(spec.reference))
        set_(spec, "reference", reference)
    if spec.match not in MATCH_MODES:
        raise ValueError(f"`match` == {spec.match!r}, must be one of {', '.join(MATCH_MODES)}")
    if spec.match != "superset" and not spec.reference:
        raise ValueError(f"`match` == {spec.match!r} needs a non-empty `reference` trajectory")
    rules = spec.args.values() if isinstance(spec.args, Mapping) else [spec.args]
    for rule in rules:
        if not callable(rule) and rule not in ARG_RULES:
            raise ValueError(f"argument rule {rule!r} is not one of {', '.join(ARG_RULES)} or a callable")
    if isinstance(spec.args, Mapping) and spec.reference:
        named = {call.tool for call in spec.reference}
        stray = sorted(str(tool) for tool in spec.args if tool != "*" and tool not in named)
        if stray:
            warnings.warn(f"argument rules for tools that no reference call names (a typo?): {', '.join(stray)}",
                          SpecWarning, stacklevel=4)
    for name in ("step_budget", "step_cap", "max_repeats"):
        value = getattr(spec, name)
        if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1):
            raise ValueError(f"`{name}` == {value!r}, must be a positive integer or None")
    limit = spec.time_limit
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float, np.integer, np.floating))
                              or not np.isfinite(limit) or limit <= 0):
        raise ValueError(f"`time_limit` == {limit!r}, must be a positive number of seconds or None")
    if spec.expected_state is not None:
        unknown = set(spec.expected_state) - set(_STATE_LISTS)
        if unknown:
            raise ValueError(f"`expected_state` has unknown keys {sorted(unknown)}; known: {', '.join(_STATE_LISTS)}")
        for key, value in spec.expected_state.items():
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise TypeError(f"`expected_state[{key!r}]` must be a list, got {value!r}")
    if spec.reference and spec.match == "superset" and spec.step_budget is None:
        warnings.warn("a superset match tolerates any number of extra calls: give it a `step_budget`, or you have "
                      "licensed the forty-step run", SpecWarning, stacklevel=4)
    success_at = spec.success_at
    if isinstance(success_at, bool) or not isinstance(success_at, (int, float, np.integer, np.floating)) \
            or not np.isfinite(success_at):
        raise ValueError(f"`success_at` == {success_at!r}, must be a finite number")


def _as_call(value: Any, where: str) -> Call:
    if isinstance(value, Call):
        call = value
    elif isinstance(value, str):
        call = Call(value)
    elif isinstance(value, Mapping) and "tool" in value:
        call = Call(value["tool"], value.get("args"))
    elif isinstance(value, Sequence) and len(value) == 2:
        call = Call(value[0], value[1])
    else:
        raise TypeError(f"{where}: expected a Call, a tool name, (tool, args) or {{'tool': ..., 'args': ...}}; "
                        f"got {value!r}")
    if not isinstance(call.tool, str) or not call.tool:
        raise TypeError(f"{where}: the tool must be a non-empty name, got {call.tool!r}")
    if call.args is not None and not isinstance(call.args, Mapping):
        raise TypeError(f"{where}: the arguments must be a mapping (or None), got {call.args!r}")
    return call


@dataclass(frozen=True)
class Verdict:
    """The result of :func:`score_run`.

    Attributes
    ----------
    passed : bool
        No check failed.
    reasons : list of str
        One human-readable reason per failed check, in check order.
    metrics : dict
        Every metric of the run (see :data:`METRICS` in ``agentab.score``).
    """

    passed: bool
    reasons: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        head = "PASS" if self.passed else "FAIL"
        return "\n".join([head, *(f"  - {r}" for r in self.reasons)])

    def _repr_html_(self) -> str:
        colour, head = ("#1b7837", "PASS") if self.passed else ("#b2182b", "FAIL")
        reasons = "".join(f"<li>{html.escape(r)}</li>" for r in self.reasons)
        shown = {k: v for k, v in self.metrics.items() if v is not None}
        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in shown.items())
        table = f"<details><summary>metrics ({len(shown)})</summary><table>{rows}</table></details>" if rows else ""
        return f"<div><b style='color:{colour}'>{head}</b><ul>{reasons}</ul>{table}</div>"


# --------------------------------------------------------------------------- #
# The rubric: one readable place
# --------------------------------------------------------------------------- #
def rubric_level(*, right_result: bool, valid_calls: int, wasted: int, corrections: int,
                 checks_passed: bool) -> int:
    """The 0-3 ordinal rubric of seed 002, from observable facts.

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
    if valid_calls == 0:
        return 0
    if not right_result:
        return 1
    return 3 if wasted == 0 and corrections == 0 and checks_passed else 2


# --------------------------------------------------------------------------- #
# One run
# --------------------------------------------------------------------------- #
_STATE_LISTS = ("files_created", "files_modified", "files_deleted", "external_calls")


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
        calls = [Call(s.get("tool"), s.get("args") or {}, (s.get("observation") or {}).get("status"))
                 for s in run.get("steps", [])]
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
        calls = [Call(t, json.loads(a) if isinstance(a, str) else (a or {}), None if s is None or s != s else s)
                 for t, a, s in zip(run["tool"], run["args"], run.get("status", [None] * len(run)))]
        return _Run(calls, given)
    if isinstance(run, Iterable):
        calls = [_as_call(c, f"call {i}") for i, c in enumerate(run)]
        return _Run([Call(c.tool, c.args or {}, c.status) for c in calls], given)
    raise TypeError(f"cannot score a {type(run).__name__}: pass a trace record, Traces, a steps table or Calls")


def _right(outcome: Any, success_at: float) -> bool | None:
    if outcome is None or (not isinstance(outcome, (bool, np.bool_)) and pd.isna(outcome)):
        return None
    if isinstance(outcome, (bool, np.bool_)):
        return bool(outcome)
    return float(outcome) >= success_at


def _args_ok(rule: ArgRule, actual: Mapping[str, Any], reference: Mapping[str, Any] | None) -> bool:
    if reference is None or rule == "ignore":
        return True
    if rule == "exact":
        return dict(actual) == dict(reference)
    if rule == "subset":
        return all(key in actual and actual[key] == value for key, value in reference.items())
    return bool(rule(actual, reference))


def _matching(calls: list[Call], reference: Sequence[Call], spec: TrajectorySpec, *, use_args: bool) -> np.ndarray:
    """For each reference call, the index of its paired call (or -1), maximising the pairs."""
    if not reference or not calls:
        return np.full(len(reference), -1)
    edges = np.array([[c.tool == r.tool and (not use_args or _args_ok(spec.rule_for(r.tool), c.args or {}, r.args))
                       for c in calls] for r in reference], dtype=bool)
    return maximum_bipartite_matching(scipy.sparse.csr_matrix(edges), perm_type="column")


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
                     "cap_hit": cap_hit}


def _state_entries(state: Mapping[str, Any] | None, key: str) -> list[str]:
    values = (state or {}).get(key) or []
    return [v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values]


def _side_effects(run: _Run, spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    reasons: list[str] = []
    forbidden_calls = [c for c in run.calls if any(fnmatch.fnmatchcase(c.tool, p) for p in spec.forbidden)]
    for call in forbidden_calls:
        reasons.append(f"forbidden call: {call}")
    unexpected = missing = forbidden_effects = duplicates = 0
    known = run.terminal_state is not None
    for key in _STATE_LISTS:
        entries = _state_entries(run.terminal_state, key)
        counts = Counter(entries)
        for entry, n in counts.items():
            if n > 1 and key != "external_calls":
                duplicates += 1
                reasons.append(f"{key.replace('_', ' ')} more than once: {entry}")
            if any(fnmatch.fnmatchcase(entry, p) for p in spec.forbidden):
                forbidden_effects += 1
                reasons.append(f"forbidden side effect ({key.replace('_', ' ')}): {entry}")
        if spec.expected_state is not None and key in spec.expected_state:
            intended = [v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in spec.expected_state[key]]
            for entry in counts:
                if entry not in intended:
                    unexpected += 1
                    reasons.append(f"unexpected side effect ({key.replace('_', ' ')}): {entry}")
            if known:
                for entry in intended:
                    if entry not in counts:
                        missing += 1
                        reasons.append(f"intended change missing ({key.replace('_', ' ')}): {entry}")
    metrics = {
        "forbidden_calls": len(forbidden_calls),
        "forbidden_side_effects": forbidden_effects if known else None,
        "unexpected_side_effects": unexpected if known and spec.expected_state is not None else None,
        "missing_changes": missing if known and spec.expected_state is not None else None,
        "duplicate_changes": duplicates if known else None,
    }
    return reasons, metrics


def _reference_check(run: _Run, spec: TrajectorySpec) -> tuple[list[str], dict[str, Any]]:
    calls, reference = run.calls, spec.reference or ()
    if not reference:
        return [], {"reference_match": None, "tool_precision": None, "tool_recall": None, "arg_accuracy": None}
    by_tool = _matching(calls, reference, spec, use_args=False)
    full = _matching(calls, reference, spec, use_args=True)
    overlap = int((by_tool >= 0).sum())
    matched = int((full >= 0).sum())
    used_tools = {c.tool for c in calls}
    reasons: list[str] = []
    if spec.match == "exact":
        ok = len(calls) == len(reference) and all(
            c.tool == r.tool and _args_ok(spec.rule_for(r.tool), c.args or {}, r.args) for c, r in zip(calls, reference))
        if not ok:
            k = next((i for i, (c, r) in enumerate(zip(calls, reference)) if c.tool != r.tool
                      or not _args_ok(spec.rule_for(r.tool), c.args or {}, r.args)), min(len(calls), len(reference)))
            want = str(reference[k]) if k < len(reference) else "the end of the run"
            got = str(calls[k]) if k < len(calls) else "the end of the run"
            reasons.append(f"not the reference order: step {k} should be {want}, got {got}")
    else:
        need_all_reference = spec.match in ("superset", "any_order")
        need_all_calls = spec.match in ("subset", "any_order")
        ok = (not need_all_reference or matched == len(reference)) and (not need_all_calls or matched == len(calls))
        if need_all_reference:
            for r, j in zip(reference, full):
                if j < 0:
                    reasons.append(f"never called: {r.tool}" if r.tool not in used_tools
                                   else f"wrong arguments: no {r.tool} call matches {r}")
        if need_all_calls:
            paired = set(int(j) for j in full if j >= 0)
            for i, c in enumerate(calls):
                if i not in paired:
                    reasons.append(f"call outside the reference: {c}")
    metrics = {
        "reference_match": ok,
        "tool_precision": overlap / len(calls) if calls else None,
        "tool_recall": overlap / len(reference),
        "arg_accuracy": matched / overlap if overlap else None,
    }
    return reasons, metrics


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


def _score(run: _Run, spec: TrajectorySpec) -> Verdict:
    calls = run.calls
    n = len(calls)
    reasons: list[str] = []
    called = {c.tool for c in calls}
    done = {c.tool for c in calls if c.status != "error"}
    never = [tool for tool in spec.required if tool not in called]
    failed_only = [tool for tool in spec.required if tool in called and tool not in done]
    missing = [tool for tool in spec.required if tool not in done]
    if never:
        reasons.append(f"never called: {', '.join(never)}")
    if failed_only:
        reasons.append(f"only failed calls to: {', '.join(failed_only)}")
    reference_reasons, reference_metrics = _reference_check(run, spec)
    reasons += reference_reasons
    loop_reasons, loops = _loops(calls, spec.max_repeats)
    reasons += loop_reasons
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
    side_reasons, side = _side_effects(run, spec)
    reasons += side_reasons
    right = _right(run.outcome, spec.success_at)
    if right is False:
        reasons.append("final state is wrong")
    elif right is None:
        reasons.append("no external outcome")

    errors = sum(c.status == "error" for c in calls)
    valid = sum(c.status != "error" for c in calls)
    corrections = (run.retries or 0) + (run.backtracks or 0)
    wasted = errors + loops["repeats"] + loops["cycles"]
    state_changed = None
    if run.terminal_state is not None:
        state_changed = any(_state_entries(run.terminal_state, key) for key in _STATE_LISTS)
    metrics: dict[str, Any] = {
        "passed": not reasons,
        "outcome": run.outcome,
        "right_result": right,
        "n_steps": n,
        "n_errors": errors,
        "required_missing": len(missing),
        "tool_recall_required": (len(spec.required) - len(missing)) / len(spec.required) if spec.required else None,
        **reference_metrics,
        **loops,
        "over_budget": over_budget if spec.step_budget is not None else None,
        "non_terminated": hit_cap or unanswered or timed_out,
        "premature": (None if run.claimed_success is None else
                      bool(run.claimed_success) and right is not True
                      and (right is False or state_changed is False)),
        "claimed_success": run.claimed_success,
        "accidental_recovery": bool(right) and (errors > 0 or loops["loop"]),
        "error_cascade": uncorrected is not None,
        "steps_at_failure": n if right is False else None,
        **side,
        "retries": run.retries,
        "backtracks": run.backtracks,
        "rubric": rubric_level(right_result=bool(right), valid_calls=valid, wasted=wasted, corrections=corrections,
                               checks_passed=not reasons),
    }
    return Verdict(passed=not reasons, reasons=reasons, metrics=metrics)


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
