"""Why a record is left out: a msgspec error turned into the field it names and a reason in words
(:func:`diagnose`), and the record-level checks the schema cannot make (:func:`step_problem`,
:func:`run_totals` and the smaller ones), each returning ``(field, reason)`` or None."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from functools import partial
from operator import is_not
from typing import Any, Optional

import msgspec

from agentab.formats._chunk import TOKEN_FIELDS, run_tokens, statuses_valid
from agentab.formats.record import INT64_MAX, STEP_KINDS, TERMINAL_LISTS, TOKEN_PARTS

__all__ = ["diagnose", "step_problem", "run_totals", "overflow", "errors", "stepless_tokens", "terminal_problem",
           "metadata_problem", "arm_problem", "statuses_problem"]

Problem = Optional[tuple[str, str]]
_KINDS = frozenset((*STEP_KINDS, None))
_KNOWN = partial(is_not, None)  # a value that is not None (a C function, for filter)
#: Where each token count's whole (its ``TOKEN_PARTS`` partner) sits in :data:`TOKEN_FIELDS`.
_PART_AT = tuple((TOKEN_FIELDS.index(part), TOKEN_FIELDS.index(whole)) for part, whole in TOKEN_PARTS)

_AT = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(.+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(.+)`$")
_PATH_TOKEN = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


def _join(path: str | None, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(obj: Any, path: str) -> Any:
    """Follow a msgspec path like ``.steps[2].tokens_in`` into a decoded object."""
    for name, index, quoted in _PATH_TOKEN.findall(path):
        if index:
            obj = obj[int(index)]
        else:
            obj = obj[name or quoted]
    return obj


def _find_nonfinite(obj: Any, path: str = "") -> str | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return path
    if isinstance(obj, dict):
        for key, value in obj.items():
            found = _find_nonfinite(value, _join(path, str(key)))
            if found:
                return found
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            found = _find_nonfinite(value, f"{path}[{i}]")
            if found:
                return found
    return None


def _plain(msg: str) -> str:
    msg = msg.replace("`", "")
    return msg[:1].lower() + msg[1:]


def _run_id_of(obj: Any) -> str | None:
    run_id = obj.get("run_id") if isinstance(obj, dict) else None
    if not isinstance(run_id, (str, int)) or isinstance(run_id, bool):
        return None
    # an id with a lone surrogate escape ("\ud800") is shown escaped: it is no text a table can hold
    return str(run_id).encode("utf-8", "backslashreplace").decode("utf-8")


def diagnose(raw: bytes, exc: Exception) -> tuple[str | None, str, int, str | None]:
    """Explain why ``raw`` failed to decode as a :class:`Record`.

    Returns ``(field, reason, line_offset, run_id)``; ``line_offset`` is the
    number of lines into ``raw`` at which a JSON syntax error sits (0 for
    one-line records); ``run_id`` is the record's id when it can be read.
    """
    field, reason, offset, obj = _explain(raw, exc)
    return field, reason, offset, _run_id_of(obj)


def _explain(raw: bytes, exc: Exception) -> tuple[str | None, str, int, Any]:
    try:
        obj = json.loads(raw.rstrip())
    except json.JSONDecodeError as err:
        return None, f"malformed JSON: {err.msg} (column {err.colno})", err.lineno - 1, None
    except (RecursionError, UnicodeDecodeError) as err:
        return None, f"malformed JSON: {err}", 0, None
    except ValueError as err:  # e.g. an integer of more than 4,300 digits, which Python will not convert
        return None, f"malformed JSON: {str(err).split(';')[0]}", 0, None
    if not isinstance(obj, dict):
        return None, f"expected a JSON object (one run), got {type(obj).__name__}", 0, obj
    if not isinstance(exc, msgspec.ValidationError):  # a syntax error (ValidationError subclasses DecodeError)
        location = _find_nonfinite(obj)
        if location:
            return location, "non-finite number (NaN or Infinity) is not allowed", 0, obj
        return None, f"malformed JSON: {exc}", 0, obj
    msg = str(exc)
    path = None
    match = _AT.match(msg)
    if match:
        msg, path = match.group(1), match.group(2)
    field = path.lstrip(".") if path else None
    if (m := _MISSING.match(msg)) is not None:
        return _join(field, m.group(1)), "missing required field", 0, obj
    if (m := _UNKNOWN.match(msg)) is not None:
        hint = "free-form data belongs in metadata" if not field else "not a field of a step"
        return _join(field, m.group(1)), f"unknown field ({hint})", 0, obj
    reason = _plain(msg)
    if field is not None and field.endswith(".kind") and reason.startswith("invalid enum value"):
        reason = f"expected {' or '.join(map(repr, STEP_KINDS))}"
    if path and "got" not in reason:
        try:
            value = _walk(obj, path)
        except (KeyError, IndexError, TypeError):
            pass
        else:
            reason = f"{reason}, got {json.dumps(value)[:80]}"
    return field, reason, 0, obj


# --------------------------------------------------------------------------- #
# Record-level checks
# --------------------------------------------------------------------------- #
def terminal_problem(state: dict[str, Any]) -> Problem:
    for key in TERMINAL_LISTS:
        value = state.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"terminal_state.{key}", f"expected a list, got {type(value).__name__}"
        if key != "external_calls":
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    return f"terminal_state.{key}[{i}]", f"expected a path (text), got {json.dumps(item)[:80]}"
    return None


def metadata_problem(meta: dict[str, Any]) -> Problem:
    for key in ("model", "harness"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            return f"metadata.{key}", f"expected text, got {json.dumps(value)[:80]}"
    return None


def arm_problem(own: str | None, given: str | None) -> Problem:
    if given is not None and own is not None and own != given:
        return "arm", f"record says arm {own!r}, but this source was given as arm {given!r}"
    return None


def statuses_problem(statuses: Sequence[Any]) -> Problem:
    if statuses_valid(statuses):
        return None
    k = next(k for k, value in enumerate(statuses) if not statuses_valid((value,)))
    return f"steps[{k}].observation.status", f"expected 'ok' or 'error', got {json.dumps(statuses[k])[:80]}"


def errors(status: Sequence[str | None], kind: Sequence[str | None] | None = None) -> int | None:
    """Error steps of a run among its tool calls (handoffs left out); None (unknown, not 0) when it has tool
    calls and none records a status.

    Examples
    --------
    >>> errors(["ok", "error"]), errors([None, None]), errors([]), errors(["error", "ok"], ["handoff", None])
    (1, None, 0, 0)
    """
    if kind is not None and "handoff" in kind:
        status = [s for s, k in zip(status, kind) if k != "handoff"]
    if status and status.count(None) == len(status):
        return None
    return status.count("error")


def stepless_tokens(metadata: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """The tokens of a run without steps: ``metadata.tokens_in`` / ``tokens_out`` where a reader kept them
    (whole numbers >= 0), else unknown (None), never 0: no step recorded them.

    Examples
    --------
    >>> stepless_tokens({"tokens_in": 812, "tokens_out": 44}), stepless_tokens(None)
    ((812, 44), (None, None))
    >>> stepless_tokens({"tokens_in": "812", "tokens_out": True})
    (None, None)
    """
    if not metadata:
        return None, None
    counts = [metadata.get(name) for name in ("tokens_in", "tokens_out")]
    known = [v if type(v) is int and 0 <= v <= INT64_MAX else None for v in counts]
    return known[0], known[1]


def step_problem(kind: Sequence[Any] | None, agent: Sequence[Any] | None, counts: Sequence[Sequence[Any] | None],
                 agents: Sequence[str] | None) -> Problem:
    """Steps whose values disagree: an unknown kind, a part of a token count above its whole (reasoning
    above output, cached above input tokens), an agent the run's ``agents`` do not list (or listed twice).

    ``counts`` holds the steps' token counts in :data:`TOKEN_FIELDS` order (None: every step's unknown).

    Examples
    --------
    >>> step_problem(None, None, ([10], [5], [6], None), None)
    ('steps[0].tokens_reasoning', 'tokens_reasoning 6 is more than tokens_out 5, which it is a part of')
    >>> step_problem(["tool", "handoff"], ["a", "b"], (None,) * 4, ["a"])
    ('steps[1].agent', "agent 'b' is not one of the run's agents ['a']")
    """
    if kind is not None and not _KINDS.issuperset(kind):
        k = next(k for k, value in enumerate(kind) if value not in _KINDS)
        return f"steps[{k}].kind", f"expected {' or '.join(map(repr, STEP_KINDS))}, got {json.dumps(kind[k])[:80]}"
    for (part, whole), (at_part, at_whole) in zip(TOKEN_PARTS, _PART_AT):
        parts, wholes = counts[at_part], counts[at_whole]
        if parts is None or wholes is None or parts.count(None) == len(parts):
            continue
        known_wholes = list(filter(_KNOWN, wholes))
        if not known_wholes or max(filter(_KNOWN, parts)) <= min(known_wholes):
            continue  # (every known part at most every known whole: the usual case, looked at in C)
        for k, (p, w) in enumerate(zip(parts, wholes)):
            if p is not None and w is not None and p > w:
                return f"steps[{k}].{part}", f"{part} {p} is more than {whole} {w}, which it is a part of"
    if agents is not None:
        if len(set(agents)) != len(agents):
            i = next(i for i, name in enumerate(agents) if name in agents[:i])
            return f"agents[{i}]", f"agent {agents[i]!r} is listed twice"
        if agent is not None and not frozenset((*agents, None)).issuperset(agent):
            listed = frozenset(agents)
            for k, name in enumerate(agent):
                if name is not None and name not in listed:
                    return f"steps[{k}].agent", f"agent {name!r} is not one of the run's agents {list(agents)[:8]!r}"
    return None


def run_totals(n_steps: int, counts: Sequence[Sequence[int | None] | None], step_metadata: Sequence[Any],
               run_metadata: dict[str, Any] | None, given: Sequence[int | None]
               ) -> tuple[tuple[int | None, ...], Problem]:
    """A run's token totals (:data:`TOKEN_FIELDS`) and the first problem with them.

    A total given at run level is the run's (it counts model calls that called no tool) and must be at
    least the sum of the steps' known counts; a total not given is the sum over the steps
    (:func:`run_tokens`), or for a run without steps its ``metadata`` counts (:func:`stepless_tokens`).
    Where both are known, reasoning tokens may not exceed output tokens nor cached input tokens, and every
    total (and tokens_in + tokens_out) must fit in 64 bits.

    Examples
    --------
    >>> run_totals(2, ([5, 5], [1, 1], None, None), [None, None], None, (None,) * 4)
    ((10, 2, None, None), None)
    >>> run_totals(2, ([5, 5], [1, 1], None, None), [None, None], None, (30, 1, None, None))[1]
    ('tokens_out', "the run's tokens_out 1 is less than the sum of its steps' tokens_out, 2")
    """
    if n_steps:
        summed = [None if c is None else run_tokens(c, step_metadata) for c in counts]
    else:
        summed = [*stepless_tokens(run_metadata), None, None]
    totals = tuple(s if g is None else g for g, s in zip(given, summed))
    if n_steps and given.count(None) != len(given):
        for name, g, c in zip(TOKEN_FIELDS, given, counts):
            if g is not None and c is not None:
                known = sum(filter(None, c))  # (the zeros left out too: the same sum)
                if g < known:
                    return totals, (name, f"the run's {name} {g} is less than the sum of its steps' {name}, {known}")
    for (part, whole), (at_part, at_whole) in zip(TOKEN_PARTS, _PART_AT):
        p, w = totals[at_part], totals[at_whole]
        if p is not None and w is not None and p > w:
            field = part if given[at_part] is not None else whole if given[at_whole] is not None else f"steps[*].{part}"
            return totals, (field, f"the run's {part} {p} is more than its {whole} {w}, which it is a part of")
    return totals, overflow(totals)


def overflow(totals: tuple[int | None, ...]) -> Problem:
    """A run's token totals that do not fit in 64 bits (only sums over steps can: each count fits)."""
    for name, total in zip(TOKEN_FIELDS, totals):
        if total is not None and total > INT64_MAX:
            return f"steps[*].{name}", f"the run's total {total} does not fit in 64 bits"
    if (totals[0] or 0) + (totals[1] or 0) > INT64_MAX:
        return "steps[*].tokens_out", "the run's total of tokens_in and tokens_out does not fit in 64 bits"
    return None
