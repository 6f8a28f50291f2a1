"""OpenHands' plain case, fast: an output line decoded without the parts the reader never reads (an event's
``message``, ``llm_metrics``, a model response's ``choices``...), its event history built in columns.

What is not the plain case (the SDK's events, an unknown event, an observation answering nothing, tokens the
events do not account for) raises :class:`~agentab.formats._fast_path.Slow` and is read by the reader's own walk
(:mod:`._events`), whose rules ("Steps", "Tokens" in :mod:`agentab.formats.openhands`) these copy.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec

from agentab.formats._fast_path import (
    CACHED,
    ENDED,
    METADATA,
    OBSERVATION,
    PARALLEL,
    TOKENS_IN,
    TOKENS_OUT,
    Slow,
    columns,
    prepared,
    step_row,
)
from agentab.formats.decode import Prepared
from agentab.formats.openhands._events import (
    _ERROR_OBSERVATIONS,
    _OBSERVATIONS,
    _OTHER_ACTIONS,
    _TOOL_ACTIONS,
)
from agentab.formats.openhands._fields import FIELDS, _get, _identity, _run_meta
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["line", "run"]


class _Response(TypedDict, total=False):
    id: Any
    usage: Any


class _CallMetadata(TypedDict, total=False):
    function_name: Any
    tool_call_id: Any
    model_response: _Response | None


class _Event(TypedDict, total=False):
    """The keys of an event the reader reads (``tool_call_metadata`` whole: a step's tokens come from it)."""

    id: Any
    timestamp: Any
    source: Any
    action: Any
    observation: Any
    cause: Any
    args: Any
    content: Any
    extras: Any
    kind: Any
    tool_call_metadata: _CallMetadata | None


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    """An output line with the keys OpenHands writes (and those the docs have users add): any other is decoded
    whole."""

    history: list[_Event]
    instance_id: Any = msgspec.UNSET
    instance: Any = msgspec.UNSET
    instruction: Any = msgspec.UNSET
    test_result: Any = msgspec.UNSET
    metadata: Any = msgspec.UNSET
    metrics: Any = msgspec.UNSET
    error: Any = msgspec.UNSET
    report: Any = msgspec.UNSET
    run_id: Any = msgspec.UNSET
    seed: Any = msgspec.UNSET
    arm: Any = msgspec.UNSET
    latency_s: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_Line)
_KEYS = _Line.__struct_fields__


def line(raw: bytes) -> dict[str, Any] | None:
    """An output line without the event keys the reader never reads, or None (decode it whole)."""
    try:
        obj = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return {key: value for key, value in zip(_KEYS, msgspec.structs.astuple(obj)) if value is not msgspec.UNSET}


def _count(n: Any) -> int | None:
    return n if type(n) is int and n >= 0 else None


def _observation(event: dict[str, Any], kind: str) -> dict[str, Any]:
    extras = event.get("extras")
    if type(extras) is not dict:
        extras = {}
    content = event.get("content")
    obs: dict[str, Any] = {"status": "ok", "type": kind, "content": content, "extras": extras}
    code = extras.get("exit_code")
    if code is None and type(extras.get("metadata")) is dict:
        code = extras["metadata"].get("exit_code")
    if kind in _ERROR_OBSERVATIONS:
        obs["status"] = "error"
        obs["error"] = content if content not in (None, "") else kind
    elif type(code) is int and code != 0:
        obs["status"] = "error"
        obs["error"] = f"exit code {code}"
    return obs


def walk(history: list[dict[str, Any]]) -> tuple[list[list[Any]], dict[str, Any], tuple[Any, Any]]:
    """(step rows, the counts for ``metadata``, the tokens no step took) of an event list, by the reader's rules;
    :class:`Slow` for anything but the plain case."""
    # kept whole: one pass over the events with each case inline is what makes it fast
    rows: list[list[Any]] = []
    by_id: dict[Any, list[Any]] = {}
    first_of: dict[str, tuple[int, list[Any]]] = {}  # response id -> its first step (index, row)
    seen: set[str] = set()
    events: dict[str, int] = {}
    refused = unpaired = 0
    action_ids: set[Any] = set()
    p_in = p_out = p_cached = None  # tokens of responses not yet given to a step
    for event in history:
        action = event.get("action")
        if type(action) is str:
            source = event.get("source")
            meta = event.get("tool_call_metadata")
            event_id = event.get("id")
            if isinstance(event_id, (int, str)):
                action_ids.add(event_id)
            if source is not None and source != "agent":
                events[action] = events.get(action, 0) + 1
                continue
            if not (action in _TOOL_ACTIONS or (action not in _OTHER_ACTIONS and meta is not None)):
                if action not in _OTHER_ACTIONS:
                    raise Slow
                events[action] = events.get(action, 0) + 1
                # an agent's non-tool action counts its model response (the reader's tokens.add)
            rid, new = None, False
            response = meta.get("model_response") if meta is not None else None
            if type(response) is dict:
                rid = response.get("id")
                rid = rid if type(rid) is str and rid else None
                new = rid is None or rid not in seen
                if new:
                    if rid is not None:
                        seen.add(rid)
                    usage = response.get("usage")
                    if type(usage) is dict:
                        n = _count(usage.get("prompt_tokens"))
                        if n is not None:
                            p_in = n if p_in is None else p_in + n
                        n = _count(usage.get("completion_tokens"))
                        if n is not None:
                            p_out = n if p_out is None else p_out + n
                        n = _count(usage.get("cache_read_input_tokens"))
                        details = usage.get("prompt_tokens_details")
                        if n is None and type(details) is dict:
                            n = _count(details.get("cached_tokens"))
                        if n is not None:
                            p_cached = n if p_cached is None else p_cached + n
            if not (action in _TOOL_ACTIONS or (action not in _OTHER_ACTIONS and meta is not None)):
                continue
            name = meta.get("function_name") if meta is not None else None
            args = event.get("args", {})
            if args is None:
                args = {}
            elif type(args) is not dict:
                raise Slow
            info: dict[str, Any] = {"event": event_id}
            if meta is not None and type(meta.get("tool_call_id")) is str:
                info["call_id"] = meta["tool_call_id"]
            if rid is not None:
                info["response_id"] = rid
            row = step_row(name if type(name) is str and name else action, args, event.get("timestamp"), info)
            if new or rid is None:  # the response's first step takes the tokens not given to a step yet
                row[TOKENS_IN], row[TOKENS_OUT], row[CACHED] = p_in, p_out, p_cached
                p_in = p_out = p_cached = None
                if rid is not None:
                    first_of[rid] = len(rows), row
            else:
                at, first = first_of[rid]
                first[PARALLEL] = row[PARALLEL] = rid
                if first[TOKENS_IN] is not None or first[TOKENS_OUT] is not None:
                    info[TOKENS_WITH_STEP] = at
            rows.append(row)
            if event_id is not None:
                by_id[event_id] = row
            continue
        kind = event.get("observation")
        if type(kind) is not str or kind not in _OBSERVATIONS:
            raise Slow
        cause = event.get("cause")
        if cause is not None and (type(cause) is not int and type(cause) is not str):
            raise Slow
        row = by_id.get(cause) if cause is not None else None
        if row is None:
            if cause is None and kind == "error":
                refused += 1
            elif cause is not None and cause not in action_ids:
                unpaired += 1
            continue
        if row[OBSERVATION] is not None:
            raise Slow
        row[OBSERVATION] = _observation(event, kind)
        stamp = event.get("timestamp")
        if stamp is not None:
            if not (type(stamp) is str or type(stamp) is float or type(stamp) is int):
                raise Slow
            row[ENDED] = stamp
    return rows, {"events": events, "refused_calls": refused, "unpaired_observations": unpaired}, (p_in, p_out,
                                                                                                    p_cached)


def run(rec: dict[str, Any], where: str, fields: Any, line: int, missing: dict[str, Any]) -> Prepared:
    """An output line's run in columns (:func:`walk`); :class:`Slow` when it is not the plain case."""
    out = _identity(rec, fields, where, False, line, missing)
    if missing:  # a run the loader completes is given as a dict (Item.missing)
        raise Slow
    meta = _run_meta(rec, fields, out)
    name, history = _get(rec, fields, "messages")
    if name != FIELDS["messages"] or type(history) is not list or (history and "kind" in history[0]):
        raise Slow  # another key, or the SDK's events
    rows, counts, left = walk(history)
    if rows:
        last = rows[-1]
        target = rows[last[METADATA].get(TOKENS_WITH_STEP, len(rows) - 1)]
        for at, value in zip((TOKENS_IN, TOKENS_OUT, CACHED), left):
            if value is not None:
                target[at] = value if target[at] is None else target[at] + value
    meta.update(counts)
    reported = (meta.get("accumulated_prompt_tokens"), meta.get("accumulated_completion_tokens"))
    if not rows:  # the run's totals: its model calls' tokens, or OpenHands' own when they are more
        totals = {name: value for name, value in zip(("tokens_in", "tokens_out"), left) if value is not None}
        if reported[0] is not None and reported[1] is not None:
            for name, total in zip(("tokens_in", "tokens_out"), reported):
                totals[name] = max(totals.get(name, 0), total)
        out["metadata"] = meta
        return prepared(out, columns(rows), totals or None)
    if reported[0] is not None and reported[1] is not None:
        counted = [sum(row[at] or 0 for row in rows) for at in (TOKENS_IN, TOKENS_OUT)]
        if any(total > n for total, n in zip(reported, counted)) or any(
                row[TOKENS_IN] is None and row[TOKENS_OUT] is None and TOKENS_WITH_STEP not in row[METADATA]
                for row in rows):
            raise Slow  # tokens the events do not hold: the reader's top-up
    out["metadata"] = meta
    return prepared(out, columns(rows), None)
