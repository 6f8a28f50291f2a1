"""What a good trajectory looks like: :class:`Call`, :class:`TrajectorySpec` and its validation.

The words a spec accepts are here too: the match modes (:data:`MATCH_MODES`), the named argument rules
(:data:`ARG_RULES`), the terminal-state lists (:data:`STATE_LISTS`) and the longest cycle the loop check
looks for (:data:`MAX_CYCLE`). What each mode and rule means is in :mod:`agentab.scoring.trajectory`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from agentab.errors import SpecWarning

__all__ = ["ARG_RULES", "ArgRule", "Call", "MATCH_MODES", "MAX_CYCLE", "STATE_LISTS", "TrajectorySpec", "as_call"]

#: The ways a run can be matched against a reference trajectory.
MATCH_MODES = ("exact", "any_order", "superset", "subset")
#: Named argument-comparison rules.
ARG_RULES = ("subset", "exact", "ignore")
#: Longest cycle (in calls) looked for by the loop check.
MAX_CYCLE = 4

#: The lists of a terminal state (and of ``expected_state``).
STATE_LISTS = ("files_created", "files_modified", "files_deleted", "external_calls")

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
    """What a good trajectory for a task looks like (the checks and match modes: :mod:`agentab.scoring.trajectory`).

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
        reference = tuple(as_call(c, f"reference[{i}]") for i, c in enumerate(spec.reference))
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
        unknown = set(spec.expected_state) - set(STATE_LISTS)
        if unknown:
            raise ValueError(f"`expected_state` has unknown keys {sorted(unknown)}; known: {', '.join(STATE_LISTS)}")
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


def as_call(value: Any, where: str) -> Call:
    """A call given as a Call, a tool name, ``(tool, args)`` or ``{"tool": ..., "args": ...}``; ``where`` names it."""
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
