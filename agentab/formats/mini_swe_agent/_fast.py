"""mini-SWE-agent's plain case, fast: a v1 text-mode trajectory decoded without the parts the reader never reads
(a model response's ``choices``...), its steps built in columns.

What is not the plain case (tool mode, v2's ``extra.actions``, a timeout, the submission as a reply, a value of
another type) raises :class:`~agentab.formats._fast_path.Slow` and is read by the reader's own walk
(:mod:`._steps`), which these rules copy: "Steps" and "Tokens and cost" in :mod:`agentab.formats.mini_swe_agent`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UnsetType

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

__all__ = ["as_dicts", "trajectory", "walk"]


_UNSET = msgspec.UNSET


class _Usage(msgspec.Struct, gc=False):
    """The counts of a model call that :func:`._steps._call` reads (others are not decoded)."""

    prompt_tokens: Any = _UNSET
    completion_tokens: Any = _UNSET
    input_tokens: Any = _UNSET
    output_tokens: Any = _UNSET
    prompt_tokens_details: Any = _UNSET
    input_tokens_details: Any = _UNSET
    completion_tokens_details: Any = _UNSET
    output_tokens_details: Any = _UNSET
    cost: Any = _UNSET


class _Response(msgspec.Struct, gc=False):
    usage: _Usage | None | UnsetType = _UNSET


class _Extra(msgspec.Struct, gc=False):
    response: _Response | None | UnsetType = _UNSET
    cost: Any = _UNSET
    actions: Any = _UNSET
    timestamp: Any = _UNSET
    interrupt_type: Any = _UNSET
    returncode: Any = _UNSET
    raw_output: Any = _UNSET
    exception_info: Any = _UNSET
    exit_status: Any = _UNSET
    submission: Any = _UNSET


class _Message(msgspec.Struct, gc=False):
    """A message as structs (cheaper to build than dicts): an absent key is ``UNSET``; :func:`as_dicts` gives the
    dicts of the keys the file has, for the reader's own walk."""

    role: Any = _UNSET
    content: Any = _UNSET
    extra: _Extra | None | UnsetType = _UNSET


class _Trajectory(msgspec.Struct, forbid_unknown_fields=True):
    """A trajectory with the keys mini-SWE-agent writes (and those the docs have users add): any other is decoded
    whole."""

    messages: list[_Message]
    info: Any = _UNSET
    trajectory_format: Any = _UNSET
    instance_id: Any = _UNSET
    run_id: Any = _UNSET
    seed: Any = _UNSET
    arm: Any = _UNSET
    outcome: Any = _UNSET
    harness: Any = _UNSET
    latency_s: Any = _UNSET


_DECODER = msgspec.json.Decoder(_Trajectory)
_KEYS = _Trajectory.__struct_fields__


def trajectory(body: bytes) -> dict[str, Any] | None:
    """The trajectory's keys (its messages as :class:`_Message` structs) without the parts the reader never
    reads, or None (decode it whole)."""
    try:
        obj = _DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return {key: value for key, value in zip(_KEYS, msgspec.structs.astuple(obj)) if value is not _UNSET}


def as_dicts(obj: dict[str, Any]) -> dict[str, Any]:
    """A :func:`trajectory` with its messages as dicts holding the keys the file has (``UNSET`` left out), as the
    reader's own walk reads them."""
    return {**obj, "messages": msgspec.to_builtins(obj["messages"])}


def _sum(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(None if x is None or y is None else x + y for x, y in zip(a, b))


def _model_call(extra: Any) -> tuple[tuple[Any, ...], int]:
    """A model call's counts and its reasoning tokens apart, by :func:`._steps._call` and :func:`reasoning_apart`
    (``extra``: an :class:`_Extra`, None or ``UNSET``)."""
    return reasoning_apart(_call(None if extra is None or extra is _UNSET else msgspec.to_builtins(extra)))


def _give(row: list[Any], sums: tuple[Any, ...]) -> None:
    """The pending calls' sums added onto a step that has its own: a count either lacks is unknown."""
    for at, value in zip((TOKENS_IN, TOKENS_OUT, REASONING, CACHED, COST), sums):
        row[at] = None if value is None or row[at] is None else row[at] + value


def walk(messages: list[_Message], run: Run) -> tuple[PreparedSteps, dict[str, Any], int]:
    """(steps in columns, the run's token totals as :func:`._steps.walk_steps` gives them, format errors) of a
    v1 text-mode message list; :class:`Slow` (or a Reject) for anything else."""
    # kept whole: one pass with each case inline (no call per message but the regular expressions') is what
    # makes it fast
    rows: list[list[Any]] = []
    waiting: list[list[Any]] = []
    pending: tuple[Any, ...] | None = None  # sums of the calls not yet given to a step
    calls: list[tuple[Any, ...]] = []  # every call
    apart = format_errors = 0
    findall = run.action.findall
    reply_of = _V1_REPLY.match
    unset, extra_type, response_type, usage_type = _UNSET, _Extra, _Response, _Usage  # local: read per message
    for i, msg in enumerate(messages):
        role = msg.role
        if role == "assistant":
            extra = msg.extra
            call = None
            if type(extra) is extra_type:
                if extra.actions is not unset or extra.timestamp is not unset:
                    raise Slow  # v2
                response = extra.response
                usage = response.usage if type(response) is response_type else None
                cost = extra.cost
                if type(usage) is usage_type and (cost is unset or cost is None or (type(cost) is float and cost >= 0)):
                    # the plain case of _model_call: the counts alone, whole numbers, a cost in dollars or none
                    tin, tout = usage.prompt_tokens, usage.completion_tokens
                    if (type(tin) is int and type(tout) is int and tin >= 0 and tout >= 0
                            and usage.input_tokens is unset and usage.output_tokens is unset
                            and usage.prompt_tokens_details is unset and usage.completion_tokens_details is unset
                            and usage.input_tokens_details is unset and usage.output_tokens_details is unset
                            and usage.cost is unset):
                        call = (tin, tout, None, None, None if cost is unset else cost or None)
            if call is None:
                call, more = _model_call(extra)
                apart += more
            pending = call if pending is None else _sum(pending, call)
            calls.append(call)
            content = msg.content
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
            if msg.extra is not None and msg.extra is not unset:
                raise Slow  # v2
            if i < 2 or not waiting:
                continue
            content = msg.content
            reply = reply_of(content) if type(content) is str else None
            if reply is None:  # a timeout, the submission, a reply without <output>: the reader's own rules
                waiting.pop(0)[OBSERVATION] = _reply({"content": None if content is unset else content}, i, run)
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
