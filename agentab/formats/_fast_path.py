"""Fast paths shared by the harness readers (tau2, OpenHands, mini-SWE-agent, SWE-agent), and tau2's own.

A reader walks a few keys of each message or event, while the files hold much more (tau2's ``raw_data``, a
model response's ``choices``, SWE-agent's ``query``, OpenHands' ``llm_metrics``). Each reader decodes the lists
it walks into ``TypedDict`` shapes naming exactly the keys it reads (typed ``Any``), inside a
``msgspec.Struct`` of the document's known top-level keys (``forbid_unknown_fields``: a file with any other
key, which ``fields=`` may name, is decoded whole): plain dicts and lists, the same values under the same keys.
The plain case is then walked in one pass into step rows (:func:`step_row`, :func:`columns`) and given as a
:class:`~agentab.formats.decode.Prepared` (:func:`prepared`), whose step times :func:`timed` parses many runs at
a time.

The fast path never changes what a reader gives back, only how soon: whatever is not the plain case (a value
of another type or shape, a count beyond 64 bits, a rejection) raises :class:`Slow` or fails to decode, and the
reader reads that input its usual way, decoding it whole where a rejection may quote what the shapes leave
out (:func:`whole_first`). ``tests/test_formats_*_fast.py`` check both ways give the same tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypedDict

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from agentab.formats._base import Item
from agentab.formats._message_parts import call_arguments, observation_of, usage_openai
from agentab.formats._times import parse_times
from agentab.formats.decode import Prepared, PreparedSteps
from agentab.formats.record import INT64_MAX, TOKENS_WITH_STEP

__all__ = ["Slow", "columns", "prepared", "step_row", "tau2_document", "tau2_simulation", "tau2_walk", "timed", "untouched", "whole_first"]

def untouched(fields: Mapping[str, str], keys: Iterable[str], own: str) -> bool:
    """Whether no ``fields`` path but ``own`` (the reader's path to the list it walks) reaches into ``keys``."""
    reached = frozenset(keys)
    return all(key == own or path.split(".", 1)[0] not in reached for key, path in fields.items())


def whole_first(item: Item, again: Callable[[], Item]) -> Item:
    """``item``, or when it is a rejection, the item of ``again()`` (the input read whole, generically)."""
    return item if item.record is not None else again()


class Slow(Exception):
    """Raised by a fast path: this input is not the plain case it handles; read it the reader's usual way."""


#: Where a step's values are in its row of :class:`Rows` (the order of :class:`PreparedSteps`).
TOOL, ARGS, OBSERVATION, TOKENS_IN, TOKENS_OUT, STARTED, ENDED, METADATA, PARALLEL, REASONING, CACHED, COST = range(12)


def step_row(tool: str, args: dict[str, Any], started: Any, metadata: dict[str, Any]) -> list[Any]:
    """A new step's row: unanswered, without tokens; its time as written (:class:`Slow` when it is neither text
    nor a number: the schema's rejection)."""
    if started is None or type(started) is str or type(started) is float or type(started) is int:
        return [tool, args, None, None, None, started, None, metadata, None, None, None, None]
    raise Slow


def columns(rows: list[list[Any]]) -> PreparedSteps:
    """Steps given as rows (:func:`step_row`) in columns; a grown column that holds no value is None; a count
    beyond 64 bits is :class:`Slow` (the schema's rejection)."""
    if not rows:
        return PreparedSteps([], [], [], [], [], [], [], [], None, None, None, None, None, None)
    cols = list(zip(*rows))
    for column in (cols[TOKENS_IN], cols[TOKENS_OUT], cols[REASONING], cols[CACHED]):
        known = column if None not in column else [n for n in column if n is not None]
        if known and max(known) > INT64_MAX:
            raise Slow
    nothing = (None,) * len(rows)
    grown = [None if c == nothing else c for c in cols[PARALLEL:]]
    return PreparedSteps(*cols[:PARALLEL], None, None, *grown)  # type: ignore[arg-type]


def fits(totals: dict[str, int]) -> dict[str, int]:
    """Run totals that fit in 64 bits (the schema's range), else :class:`Slow`."""
    if any(value > INT64_MAX for value in totals.values()):
        raise Slow
    return totals


#: Runs parsed together by :func:`timed`: one call of the decoder's own time parser for all their steps.
TIME_BATCH = 512
_NAT = np.iinfo(np.int64).min


def timed(entries: Iterable[tuple[Item, Callable[[], Item] | None]]) -> Iterator[Item]:
    """The items, in order, with the step times of each run built in columns parsed into unix nanoseconds by
    the decoder's own parser (:func:`agentab.formats._times.parse_times`), many runs at a time.

    ``entries``: ``(item, slow)``; ``slow`` is None for an item to give as it is, else the reader's usual
    conversion, given instead when a step time of the run is not one the parser reads (its rejection).
    """
    batch: list[tuple[Item, Callable[[], Item] | None]] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) >= TIME_BATCH:
            yield from _parsed(batch)
            batch = []
    yield from _parsed(batch)


#: Times without an offset, in the shape both the decoder's parsers read alike (read as UTC), in years 1700-2259.
_NAIVE = (r"^(?:1[7-9]\d\d|2[01]\d\d|22[0-5]\d)-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
          r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?$")


def _nanoseconds(values: list[Any]) -> tuple[list[Any], frozenset[int]]:
    """Step times as unix nanoseconds (None kept), and the rows the decoder's parser does not read.

    Texts all of the plain shape without an offset (tau2's, OpenHands') are cast by Arrow at once, which reads
    them as :func:`~agentab.formats._times.parse_times` does, much faster; anything else goes to that parser.
    """
    try:
        array = pa.array(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid, OverflowError):
        array = None
    if array is not None and pa.types.is_string(array.type) and pc.all(
            pc.match_substring_regex(array, _NAIVE)).as_py() is not False:
        try:
            return array.cast(pa.timestamp("ns")).cast(pa.int64()).to_pylist(), frozenset()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # a day the month does not have: the parser names it
    parsed, problems = parse_times(values)
    return [None if v == _NAT else v for v in parsed.view(np.int64).tolist()], frozenset(row for row, _ in problems)


def _parsed(batch: list[tuple[Item, Callable[[], Item] | None]]) -> Iterator[Item]:
    values: list[Any] = []
    for item, slow in batch:
        if slow is not None:
            values += item.record.steps.started_ns  # type: ignore[union-attr]
            values += item.record.steps.ended_ns  # type: ignore[union-attr]
    if values.count(None) == len(values):
        ns: list[Any] = values
        bad: frozenset[int] = frozenset()
    else:
        ns, bad = _nanoseconds(values)
    at = 0
    for item, slow in batch:
        if slow is None:
            yield item
            continue
        steps = item.record.steps  # type: ignore[union-attr]
        n = len(steps.tool)
        if bad and any(at <= row < at + 2 * n for row in bad):
            yield slow()
        else:
            steps = steps._replace(started_ns=ns[at:at + n], ended_ns=ns[at + n:at + 2 * n])
            yield Item(item.line, item.record._replace(steps=steps), item.field, item.reason,  # type: ignore[union-attr]
                       item.source, item.missing, item.run_id)
        at += 2 * n


def prepared(out: dict[str, Any], steps: PreparedSteps, totals: dict[str, int] | None,
             text_times: bool = False) -> Prepared:
    """A reader's run fields (the record's keys; a required one the file lacks, in ``Item.missing``, is None
    here; ``terminal_state`` too) and its columns as a Prepared (``text_times``: :attr:`Prepared.text_times`)."""
    seed, outcome = out.get("seed"), out.get("outcome")
    if seed is not None and not -INT64_MAX - 1 <= seed <= INT64_MAX:
        raise Slow
    if outcome is not None and type(outcome) not in (bool, int, float):
        raise Slow  # the usual path rejects it by name (an int is kept: metadata.outcome_in_file shows it as read)
    run_id = out.get("run_id")
    return Prepared(None if run_id is None else str(run_id), out.get("task_id"), seed, out.get("arm"),  # type: ignore[arg-type]
                    outcome, out.get("cost_usd"), out.get("latency_s"), out.get("metadata"), steps, None,
                    fits(totals) if totals else None, out.get("user_cost_usd"), out.get("terminal_state"),
                    text_times)


def _plus(total: int | None, value: int | None) -> int | None:
    return total if value is None else value if total is None else total + value


def _stamp(value: Any) -> Any:
    if value is None or type(value) is str or type(value) is float or type(value) is int:
        return value
    raise Slow


_PLAIN = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})


def _usage(usage: Any) -> tuple[Any, ...]:
    """:func:`~._message_parts.usage_openai`, its plain case inline (the counts alone, whole numbers)."""
    if type(usage) is dict:
        tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if type(tin) is int and type(tout) is int and tin >= 0 and tout >= 0 and usage.keys() <= _PLAIN:
            return tin, tout, None, None, None
    return usage_openai(usage)


def tau2_walk(messages: list[dict[str, Any]]) -> tuple[PreparedSteps, dict[str, int] | None, dict[str, int]]:
    """A tau2 simulation's messages (dicts) -> its steps in columns, the run's token totals and the user
    simulator's counts for ``metadata``, by the rules of :mod:`agentab.formats.tau2`; :class:`Slow` (or a
    :class:`~agentab.formats._base.Reject`) for anything but the plain case, which the reader's own walk reads.
    """
    # kept whole: one pass over the messages with each case inline is what makes it fast (no call per message)
    rows: list[list[Any]] = []
    waiting: dict[str, list[Any]] = {}  # call id -> its step's row, until answered
    ignored: set[str] = set()  # the user simulator's calls awaiting their answer
    user = {"user_tool_calls": 0, "user_tool_errors": 0}
    tin = tout = cached = reasoning = None
    gap = False
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "tool":
            parts = msg.get("tool_messages")
            for part in parts if isinstance(parts, list) else (msg,):
                if type(part) is not dict:
                    raise Slow
                call_id = part.get("id" if "id" in part else "tool_call_id")
                row = waiting.pop(call_id, None) if type(call_id) is str else None
                if row is None:
                    if call_id not in ignored:
                        raise Slow  # an answer to no open call: the reader's own walk names it
                    ignored.discard(call_id)
                    if part.get("error") is True:
                        user["user_tool_errors"] += 1
                    continue
                if part.get("error") is False and part.get("is_error") is None:
                    row[OBSERVATION] = {"status": "ok", "content": part.get("content")}
                else:
                    row[OBSERVATION] = observation_of(part, part.get("content"))
                row[ENDED] = _stamp(part.get("timestamp"))
            continue
        usage = msg.get("usage")
        m_in = m_out = m_cached = m_reasoning = None
        if role == "assistant":
            if usage is not None:
                m_in, m_out, _, m_cached, m_reasoning = _usage(usage)
                tin, tout = _plus(tin, m_in), _plus(tout, m_out)
                if m_cached is not None or m_reasoning is not None:
                    cached, reasoning = _plus(cached, m_cached), _plus(reasoning, m_reasoning)
        elif role == "user":
            if usage is not None:
                u_in, u_out, *_ = _usage(usage)
                if u_in is not None:
                    user["user_tokens_in"] = user.get("user_tokens_in", 0) + u_in
                if u_out is not None:
                    user["user_tokens_out"] = user.get("user_tokens_out", 0) + u_out
        elif role != "system":
            raise Slow
        tool_calls = msg.get("tool_calls")
        if not tool_calls:
            continue
        if type(tool_calls) is not list:
            raise Slow
        start = len(rows)
        for call in tool_calls:
            if type(call) is not dict:
                raise Slow
            call_id = call.get("id")
            if type(call_id) is not str or not call_id or call_id in waiting or call_id in ignored:
                raise Slow
            if role != "assistant" or call.get("requestor") == "user":
                ignored.add(call_id)
                user["user_tool_calls"] += 1
                continue
            name = call.get("name")
            if type(name) is not str or not name:
                raise Slow
            args = call.get("arguments")
            if type(args) is not dict:
                args = call_arguments(args, "arguments")
            row = waiting[call_id] = step_row(name, args, msg.get("timestamp"), {"message": i, "call_id": call_id})
            if len(rows) == start:  # the message's tokens and cost go to its first step
                row[TOKENS_IN], row[TOKENS_OUT], row[CACHED], row[REASONING] = m_in, m_out, m_cached, m_reasoning
                cost = msg.get("cost")
                if (type(cost) is float or type(cost) is int) and 0 <= cost < math.inf:
                    row[COST] = cost
            elif m_in is not None or m_out is not None:
                row[METADATA][TOKENS_WITH_STEP] = start
            rows.append(row)
        if len(rows) - start >= 2:
            for row in rows[start:]:
                row[PARALLEL] = i
        if role == "assistant" and usage is None and len(rows) > start:
            gap = True
    totals: dict[str, int] = {}
    if not gap:
        for name, value in (("tokens_in", tin), ("tokens_out", tout)):
            if value is not None:
                totals[name] = value
        if cached is not None and tin is not None:
            totals["tokens_cached"] = cached
        if reasoning is not None and tout is not None:
            totals["tokens_reasoning"] = reasoning
    return columns(rows), totals or None, user


# --------------------------------------------------------------------------- #
# tau2 (agentab.formats.tau2)
# --------------------------------------------------------------------------- #
class _Tau2Message(TypedDict, total=False):
    """The keys of a message the reader reads (:mod:`._fast_path`: ``raw_data``, ``turn_idx``... are not decoded)."""

    role: Any
    content: Any
    tool_calls: Any
    tool_messages: Any
    usage: Any
    cost: Any
    timestamp: Any
    id: Any
    tool_call_id: Any
    error: Any
    is_error: Any
    status: Any


class _Tau2Simulation(msgspec.Struct, forbid_unknown_fields=True):
    """A simulation with tau2's own keys only (``SimulationRun``): one with any other key is decoded whole."""

    messages: list[_Tau2Message]
    id: Any = msgspec.UNSET
    task_id: Any = msgspec.UNSET
    timestamp: Any = msgspec.UNSET
    start_time: Any = msgspec.UNSET
    end_time: Any = msgspec.UNSET
    duration: Any = msgspec.UNSET
    termination_reason: Any = msgspec.UNSET
    agent_cost: Any = msgspec.UNSET
    user_cost: Any = msgspec.UNSET
    reward_info: Any = msgspec.UNSET
    trial: Any = msgspec.UNSET
    seed: Any = msgspec.UNSET


class _Tau2Document(TypedDict, total=False):
    timestamp: Any
    info: Any
    simulations: list[msgspec.Raw]


_SIMULATION = msgspec.json.Decoder(_Tau2Simulation)
_SIMULATION_KEYS = _Tau2Simulation.__struct_fields__
_DOCUMENT = msgspec.json.Decoder(_Tau2Document)


def tau2_simulation(raw: bytes | msgspec.Raw) -> dict[str, Any] | None:
    """The simulation without the message keys the reader never reads, or None when it has keys beyond tau2's
    own, or values of other shapes (then it is decoded whole)."""
    try:
        sim = _SIMULATION.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return {key: value for key, value in zip(_SIMULATION_KEYS, msgspec.structs.astuple(sim))
            if value is not msgspec.UNSET}


def tau2_document(body: bytes) -> tuple[list[msgspec.Raw], dict[str, Any]] | None:
    """A results document's simulations and ``{timestamp, info}`` in one pass, or None (read the usual way)."""
    try:
        top = _DOCUMENT.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if "simulations" not in top:
        return None
    sims = top.pop("simulations")
    return sims, top
