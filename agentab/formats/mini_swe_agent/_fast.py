"""mini-SWE-agent's plain case, fast: a v1 text-mode trajectory decoded without the parts the reader never reads
(a model response's ``choices``...), its steps built in columns.

What is not the plain case (tool mode, v2's ``extra.actions``, a timeout, the submission as a reply, a value of
another type) raises :class:`~agentab.formats._fast_path.Slow` and is read by the reader's own walk
(:mod:`._steps`), which these rules copy: "Steps" and "Tokens and cost" in :mod:`agentab.formats.mini_swe_agent`.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec

from agentab.formats._fast_path import (
    CACHED,
    COST,
    OBSERVATION,
    REASONING,
    TOKENS_IN,
    TOKENS_OUT,
    Slow,
    columns,
)
from agentab.formats.decode import PreparedSteps
from agentab.formats.mini_swe_agent._steps import (
    _V1_REPLY,
    Run,
    _call,
    _reply,
    reasoning_apart,
)

__all__ = ["trajectory", "walk"]


class _Response(TypedDict, total=False):
    usage: Any


class _Extra(TypedDict, total=False):
    response: _Response | None
    cost: Any
    actions: Any
    timestamp: Any
    interrupt_type: Any
    returncode: Any
    raw_output: Any
    exception_info: Any
    exit_status: Any
    submission: Any


class _Message(TypedDict, total=False):
    role: Any
    content: Any
    extra: _Extra | None


class _Trajectory(msgspec.Struct, forbid_unknown_fields=True):
    """A trajectory with the keys mini-SWE-agent writes (and those the docs have users add): any other is decoded
    whole."""

    messages: list[_Message]
    info: Any = msgspec.UNSET
    trajectory_format: Any = msgspec.UNSET
    instance_id: Any = msgspec.UNSET
    run_id: Any = msgspec.UNSET
    seed: Any = msgspec.UNSET
    arm: Any = msgspec.UNSET
    outcome: Any = msgspec.UNSET
    harness: Any = msgspec.UNSET
    latency_s: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_Trajectory)
_KEYS = _Trajectory.__struct_fields__


def trajectory(body: bytes) -> dict[str, Any] | None:
    """The trajectory as dicts without the keys the reader never reads, or None (decode it whole)."""
    try:
        obj = _DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return {key: value for key, value in zip(_KEYS, msgspec.structs.astuple(obj)) if value is not msgspec.UNSET}


def _with_code(code: int, text: Any) -> dict[str, Any]:
    if code == 0:
        return {"status": "ok", "returncode": 0, "content": text}
    return {"status": "error", "returncode": code, "content": text, "error": f"returncode {code}"}


def _sum(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(None if x is None or y is None else x + y for x, y in zip(a, b))


_PLAIN = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})


def _model_call(extra: Any) -> tuple[tuple[Any, ...], int]:
    """A model call's counts and its reasoning tokens apart (:func:`._steps._call`, :func:`reasoning_apart`), the
    plain case inline: the counts alone, whole numbers, a cost in dollars or none."""
    if extra is not None:
        response = extra.get("response")
        usage = response.get("usage") if response is not None else None
        cost = extra.get("cost")
        if type(usage) is dict and (cost is None or (type(cost) is float and cost >= 0)):
            tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if type(tin) is int and type(tout) is int and tin >= 0 and tout >= 0 and usage.keys() <= _PLAIN:
                return (tin, tout, None, None, cost or None), 0
    return reasoning_apart(_call(extra))


def _give(row: list[Any], sums: tuple[Any, ...]) -> None:
    """The pending calls' sums added onto a step that has its own: a count either lacks is unknown."""
    for at, value in zip((TOKENS_IN, TOKENS_OUT, REASONING, CACHED, COST), sums):
        row[at] = None if value is None or row[at] is None else row[at] + value


def walk(messages: list[dict[str, Any]], run: Run) -> tuple[PreparedSteps, dict[str, Any], int]:
    """(steps in columns, the run's token totals as :func:`._steps.walk_steps` gives them, format errors) of a
    v1 text-mode message list; :class:`Slow` (or a Reject) for anything else."""
    # kept whole: one pass with each case inline (no call per message but the regular expressions') is what
    # makes it fast
    if run.action.groups > 1:
        raise Slow  # its findall gives tuples: the reader's own walk
    rows: list[list[Any]] = []
    waiting: list[list[Any]] = []
    pending: tuple[Any, ...] | None = None  # sums of the calls not yet given to a step
    calls: list[tuple[Any, ...]] = []  # every call
    apart = format_errors = 0
    findall = run.action.findall
    reply_of = _V1_REPLY.match
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "assistant":
            extra = msg.get("extra")
            call = None
            if extra is not None:
                if "actions" in extra or "timestamp" in extra:
                    raise Slow  # v2
                response = extra.get("response")
                usage = response.get("usage") if response is not None else None
                cost = extra.get("cost")
                if type(usage) is dict and (cost is None or (type(cost) is float and cost >= 0)):
                    # the plain case of _model_call: the counts alone, whole numbers, a cost in dollars or none
                    tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
                    if type(tin) is int and type(tout) is int and tin >= 0 and tout >= 0 and usage.keys() <= _PLAIN:
                        call = (tin, tout, None, None, cost or None)
            if call is None:
                call, more = _model_call(extra)
                apart += more
            pending = call if pending is None else _sum(pending, call)
            calls.append(call)
            content = msg.get("content")
            if type(content) is not str:
                raise Slow
            found = findall(content)
            if len(found) != 1:
                format_errors += 1
                continue
            # a new step takes the calls not given to a step yet (its row: see _fast_path.TOOL ... COST)
            row = ["bash", {"command": found[0].strip()}, None, pending[0], pending[1], None, None, {"message": i},
                   None, pending[2], pending[3], pending[4]]
            pending = None
            rows.append(row)
            waiting.append(row)
        elif role == "user":
            if msg.get("extra") is not None:
                raise Slow  # v2
            if i < 2 or not waiting:
                continue
            content = msg.get("content")
            reply = reply_of(content) if type(content) is str else None
            if reply is None:  # a timeout, the submission, a reply without <output>: the reader's own rules
                waiting.pop(0)[OBSERVATION] = _reply(msg, i, run)
                continue
            code, text = reply.groups()
            code = int(code)
            waiting.pop(0)[OBSERVATION] = ({"status": "ok", "returncode": 0, "content": text} if code == 0 else
                                           {"status": "error", "returncode": code, "content": text,
                                            "error": f"returncode {code}"})
        elif role != "system":
            raise Slow  # a tool message (v2), or an unknown role
    if rows and pending is not None:
        _give(rows[-1], pending)
    totals: dict[str, Any] = {}
    if calls:
        totals = {key: sum(column) for key, column in zip(("tokens_in", "tokens_out", "tokens_reasoning",
                                                           "tokens_cached"), zip(*calls)) if None not in column}
    if apart:
        totals["reasoning_apart"] = apart
    return columns(rows), totals, format_errors
