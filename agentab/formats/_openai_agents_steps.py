"""The spans of one OpenAI Agents SDK trace -> steps in columns, the run's agents and token totals.

The rules are in :mod:`agentab.formats.openai_agents` ("Steps", "Tokens"). Spans are
decoded into :class:`Span` (only the fields read; the members of an array or
object in ``input`` / ``output``, such as a generation's prompt and completion,
kept undecoded: :data:`Shallow`), walked in start order by :func:`walk`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Any, Union

import msgspec

from agentab.formats._base import Reject
from agentab.formats._message_fields import describe
from agentab.formats._message_parts import call_arguments
from agentab.formats.decode import PreparedSteps
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["SPAN_TYPES", "AtLine", "Data", "Shallow", "Span", "Usage", "handoff_tool", "span_decoder", "span_of", "walk",
           "whole"]

#: The span types the SDK writes.
SPAN_TYPES = frozenset({"agent", "function", "generation", "response", "handoff", "guardrail", "custom",
                        "mcp_tools", "transcription", "speech", "speech_group"})
_MODEL_TYPES = frozenset({"generation", "response"})
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
_NS_LIMIT = 2**63
_NEVER = datetime.max.replace(tzinfo=timezone.utc)  # sorts spans never started last


#: A JSON value decoded one level deep: text, numbers, true/false/null as they are; an array's or an object's members
#: left as undecoded JSON (``msgspec.Raw``) until :func:`whole` reads them. A generation span's ``input`` and
#: ``output`` (the prompt and the completion, which the SDK records unless told not to, the prompt growing with every
#: turn) are the bulk of a real export, and the reader reads neither: kept so, they cost no Python objects.
Shallow = Union[str, int, float, bool, None, list[msgspec.Raw], dict[str, msgspec.Raw]]
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


def whole(value: Shallow) -> Any:
    """A :data:`Shallow` value decoded whole.

    Examples
    --------
    >>> shallow = msgspec.json.decode(b'[{"role": "user"}]', type=Shallow)
    >>> type(shallow[0]).__name__, whole(shallow)
    ('Raw', [{'role': 'user'}])
    """
    return _decode(_encode(value)) if type(value) is list or type(value) is dict else value


#: A JSON value that is not an object.
_NOT_OBJECT = Union[str, int, float, bool, None, list[Any]]


class _TokenDetails(msgspec.Struct):
    """``input_tokens_details`` / ``output_tokens_details``: the counts read."""

    cached_tokens: Any = None
    reasoning_tokens: Any = None


class Usage(msgspec.Struct):
    """A model call's ``usage`` (a generation's or response's; a turn's, ``cached_input_tokens`` its cached count):
    the counts read (any other key skipped when decoding)."""

    input_tokens: Any = None
    output_tokens: Any = None
    input_tokens_details: _TokenDetails | _NOT_OBJECT = None
    output_tokens_details: _TokenDetails | _NOT_OBJECT = None
    cached_input_tokens: Any = None


class Data(msgspec.Struct):
    """The ``span_data`` fields the reader uses (any other is skipped when decoding)."""

    type: Any = None
    name: Any = None
    input: Shallow = None
    output: Shallow = None
    usage: Usage | _NOT_OBJECT = None
    model: Any = None
    from_agent: Any = None
    to_agent: Any = None
    triggered: Any = None
    data: Any = None
    mcp_data: Any = None


class Span(msgspec.Struct):
    """An exported item's fields the reader uses: a span's, or (``object``, ``id``) of a trace; ``data``: the
    ingest payload's list."""

    object: Any = None
    id: Any = None
    trace_id: Any = None
    parent_id: Any = None
    started_at: Any = None
    ended_at: Any = None
    span_data: Data | str | int | float | bool | list[Any] | None = None
    error: Any = None
    data: Shallow = None


span_decoder = msgspec.json.Decoder(Span)


def span_of(obj: dict[str, Any]) -> Span:
    """An in-memory span's dict as a :class:`Span`, through its JSON (a Span keeps the members of ``input`` /
    ``output`` as JSON); raises what encoding raises when it is not JSON."""
    return span_decoder.decode(_encode(obj))


class AtLine(Reject):
    """A rejection at a given line."""

    def __init__(self, line: int, field: str | None, reason: str) -> None:
        super().__init__(field, reason)
        self.line = line


def _moment(stamp: Any, line: int, where: str) -> datetime | None:
    """An ISO-8601 time (text without an offset is UTC, as in the record); None for null."""
    if stamp is None:
        return None
    if type(stamp) is str:
        try:
            moment = datetime.fromisoformat(stamp[:-1] + "+00:00" if stamp[-1:] == "Z" else stamp)
        except ValueError:
            moment = None
        if moment is not None:
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    raise AtLine(line, where, f"expected an ISO-8601 time, got {describe(stamp)}")


def _ns(moment: datetime | None, line: int, where: str) -> int | None:
    """A time as unix nanoseconds (the decoder's step times)."""
    if moment is None:
        return None
    ns = (moment - _EPOCH) // _MICROSECOND * 1000
    if -_NS_LIMIT < ns < _NS_LIMIT:
        return ns
    raise AtLine(line, where, f"a time out of range (years 1678-2262): {moment.isoformat()}")


def _usage(usage: Any, line: int) -> tuple[int, int, int | None, int | None] | None:
    """(input, output, cached, reasoning) tokens of a model call's usage (a :class:`Usage`, or a turn's as a dict);
    None when it reports none."""
    if usage is None:
        return None
    if type(usage) is dict:  # a turn's (in a custom span's data)
        usage = msgspec.convert(usage, Usage)
    if type(usage) is not Usage:
        raise AtLine(line, "span_data.usage", f"expected a usage object, got {describe(usage)}")
    tin, tout = usage.input_tokens, usage.output_tokens
    if type(tin) is not int or type(tout) is not int or tin < 0 or tout < 0:  # counts: integers >= 0
        raise AtLine(line, "span_data.usage", "expected input_tokens and output_tokens (whole numbers >= 0)")
    details_in = usage.input_tokens_details
    details_out = usage.output_tokens_details
    cached = details_in.cached_tokens if type(details_in) is _TokenDetails else usage.cached_input_tokens
    reasoning = details_out.reasoning_tokens if type(details_out) is _TokenDetails else None
    return (tin, tout, cached if type(cached) is int and 0 <= cached <= tin else None,
            reasoning if type(reasoning) is int and 0 <= reasoning <= tout else None)


class _Call:
    """A model call (a generation or response span) and the first step it made."""

    __slots__ = ("first", "id", "n", "usage")

    def __init__(self, span_id: Any, usage: tuple[int, int, int | None, int | None] | None) -> None:
        self.id = span_id
        self.usage = usage
        self.first: int | None = None  # the index of its first step
        self.n = 0  # its steps


class _Totals:
    """A run's token totals over all its model calls (None: a call did not report that count)."""

    __slots__ = ("cached", "calls", "reasoning", "tin", "tout")

    def __init__(self) -> None:
        self.calls = 0
        self.tin: int | None = 0
        self.tout: int | None = 0
        self.cached: int | None = 0
        self.reasoning: int | None = 0

    def add(self, usage: tuple[int, int, int | None, int | None] | None) -> None:
        self.calls += 1
        if usage is None:
            self.tin = self.tout = self.cached = self.reasoning = None
            return
        tin, tout, cached, reasoning = usage
        self.tin = None if self.tin is None else self.tin + tin
        self.tout = None if self.tout is None else self.tout + tout
        self.cached = None if self.cached is None or cached is None else self.cached + cached
        self.reasoning = None if self.reasoning is None or reasoning is None else self.reasoning + reasoning

    def given(self) -> dict[str, int] | None:
        if not self.calls:
            return None
        values = (("tokens_in", self.tin), ("tokens_out", self.tout), ("tokens_reasoning", self.reasoning),
                  ("tokens_cached", self.cached))
        return {name: value for name, value in values if value is not None} or None


_MISS: Any = object()


def _agent_of(span_id: Any, spans: dict[Any, Span], memo: dict[Any, str | None]) -> str | None:
    """The name of the nearest ``agent`` span at or above ``span_id`` (iterative, cycle-safe)."""
    if span_id is None:
        return None
    found = memo.get(span_id, _MISS)
    if found is not _MISS:  # the common case: a parent whose agent is known
        return found
    chain: list[Any] = []
    seen: set[Any] = set()
    found = None
    current = span_id
    while current is not None and current not in seen:
        if current in memo:
            found = memo[current]
            break
        seen.add(current)
        chain.append(current)
        span = spans.get(current)
        if span is None:
            break
        data = span.span_data
        if data.type == "agent" and type(data.name) is str:
            found = data.name
            break
        current = span.parent_id
    for key in chain:
        memo[key] = found
    return found


def handoff_tool(target: str) -> str:
    """The name the SDK gives the tool of a handoff to ``target`` by default (``Handoff.default_tool_name``).

    Examples
    --------
    >>> handoff_tool("Refund Agent")
    'transfer_to_refund_agent'
    """
    return re.sub(r"[^a-zA-Z0-9_]", "_", f"transfer_to_{target}".replace(" ", "_")).lower()


class _Steps:
    """The steps of a trace as columns (:class:`~agentab.formats.decode.PreparedSteps`), built span by span (a row
    each, turned into columns at the end)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []  # the columns of PreparedSteps up to cost_usd, and parallel

    def add(self, line: int, span: Span, times: tuple[int | None, int | None], tool: str,
            args: dict[str, Any], output: Any, agent: str | None, call: _Call | None, kind: str) -> dict[str, Any]:
        """Append a step; its tokens are its model call's when it is the call's first step (its metadata back)."""
        meta: dict[str, Any] = {"line": line, "span_id": span.id}
        usage = None
        parallel = None
        if call is not None:
            parallel = call.id
            if call.first is None:
                call.first = len(self.rows)
                usage = call.usage
                if usage is None:
                    meta["tokens_unknown"] = True
            elif call.usage is not None:
                meta[TOKENS_WITH_STEP] = call.first
            call.n += 1
        error = span.error
        observation: dict[str, Any] | None = None
        if times[1] is not None or error is not None:
            observation = {"status": "ok", "output": output} if kind == "tool" else {"status": "ok"}
            if error is not None:
                observation["status"] = "error"
                observation["error"] = error.get("message") if type(error) is dict and "message" in error else error
                if type(error) is dict and error.get("data") is not None:
                    observation["error_data"] = error["data"]
        if usage is None:
            self.rows.append((tool, args, observation, None, None, times[0], times[1], meta, kind, agent, None, None,
                              parallel))
        else:
            self.rows.append((tool, args, observation, usage[0], usage[1], times[0], times[1], meta, kind, agent,
                              usage[3], usage[2], parallel))
        return meta

    def columns(self, calls: list[_Call]) -> PreparedSteps:
        """The columns; a ``parallel`` id only where a model call made two steps or more."""
        if not self.rows:
            return PreparedSteps([], [], [], [], [], [], [], [], None, None, None, None, None, None)
        (tool, args, observation, tokens_in, tokens_out, started, ended, metadata, kind, agent, reasoning, cached,
         parallel) = map(list, zip(*self.rows))
        lone = {call.id for call in calls if call.n == 1}
        if lone:
            parallel = [None if p in lone else p for p in parallel]

        def some(values: list[Any]) -> list[Any] | None:
            return values if values.count(None) != len(values) else None

        return PreparedSteps(tool, args, observation, tokens_in, tokens_out, started, ended, metadata,
                             kind if "handoff" in kind else None, some(agent), some(parallel), some(reasoning),
                             some(cached), None)


def _order(spans: list[tuple[int, Span]], meta: dict[str, Any]
           ) -> list[tuple[datetime, int, Span, datetime | None, datetime | None]]:
    """The spans in start order (unstarted last, then by line), with their times; the wall time into ``meta``.

    Checks each span's ``span_data`` and times (raises :class:`AtLine`)."""
    out = []
    first: datetime | None = None
    last: datetime | None = None
    for line, span in spans:
        data = span.span_data
        if type(data) is not Data:
            raise AtLine(line, "span_data", f"expected a span_data object, got {describe(data)}")
        if data.type not in SPAN_TYPES:
            raise AtLine(line, "span_data.type", f"a span type the reader does not know: {describe(data.type)}")
        if type(span.id) in _NOT_IDS or type(span.parent_id) in _NOT_IDS:
            where = "id" if type(span.id) in _NOT_IDS else "parent_id"
            raise AtLine(line, where, f"expected a span id, got {describe(getattr(span, where))}")
        start, end = span.started_at, span.ended_at
        try:  # the usual time, with its offset (as the SDK writes it), read here; any other by _moment
            start = _FROM_ISO(start)
            if start.tzinfo is None:
                raise ValueError
        except (TypeError, ValueError):
            start = _moment(span.started_at, line, "started_at")
        try:
            end = _FROM_ISO(end)
            if end.tzinfo is None:
                raise ValueError
        except (TypeError, ValueError):
            end = _moment(span.ended_at, line, "ended_at")
        if start is not None:
            if end is not None and end < start:
                raise AtLine(line, "ended_at", "ended_at precedes started_at")
            if first is None or start < first:
                first = start
        if end is not None and (last is None or end > last):
            last = end
        out.append((_NEVER if start is None else start, line, span, start, end))
    out.sort(key=_START_AND_LINE)
    if first is not None and last is not None and last >= first:
        meta["_wall"] = (last - first).total_seconds()
    return out


_START_AND_LINE = itemgetter(0, 1)
_NOT_IDS = (list, dict)  # JSON values that cannot be an id (nor a key)
_FROM_ISO = datetime.fromisoformat


def _times(line: int, start: datetime | None, end: datetime | None) -> tuple[int | None, int | None]:
    return _ns(start, line, "started_at"), _ns(end, line, "ended_at")


def _is_turn(kind: str, data: Data) -> bool:
    return kind == "custom" and type(data.data) is dict and data.data.get("sdk_span_type") == "turn"


def walk(spans: list[tuple[int, Span]], meta: dict[str, Any]
          ) -> tuple[PreparedSteps, list[str] | None, dict[str, int] | None]:
    """The steps with their tokens, the run's agents and token totals; the span counts in ``meta``."""
    ordered = _order(spans, meta)  # (which checks the ids first)
    by_id = {span.id: span for _, span in spans if span.id is not None}
    memo: dict[Any, str | None] = {}  # span id -> its agent (:func:`_agent_of`)
    has_model = any(entry[2].span_data.type in _MODEL_TYPES for entry in ordered)
    steps = _Steps()
    calls: list[_Call] = []
    latest: dict[str | None, _Call] = {}  # per agent: its last model call, whose steps follow it
    totals = _Totals()
    agents: dict[str, None] = {}  # in order of first appearance
    seen = _Seen()
    types = seen.types
    for _, line, span, start, end in ordered:
        data = span.span_data
        kind = data.type
        types[kind] = types.get(kind, 0) + 1
        if kind in _MODEL_TYPES or (not has_model and _is_turn(kind, data)):
            usage = _usage(data.usage if kind in _MODEL_TYPES else data.data.get("usage"), line)
            totals.add(usage)
            call = _Call(span.id, usage)
            calls.append(call)
            latest[_agent_of(span.parent_id, by_id, memo)] = call
        if kind == "function":
            agent = _agent_of(span.parent_id, by_id, memo)
            name = data.name
            if type(name) is not str or not name:
                raise AtLine(line, "span_data.name", f"expected a tool name (text), got {describe(name)}")
            try:
                args = call_arguments(whole(data.input), "span_data.input")
            except Reject as problem:
                raise AtLine(line, problem.field, problem.reason) from None
            step_meta = steps.add(line, span, _times(line, start, end), name, args, whole(data.output), agent,
                                  latest.get(agent), "tool")
            if data.mcp_data is not None:
                step_meta["mcp_data"] = data.mcp_data
            if agent is not None:
                agents.setdefault(agent)
        elif kind == "handoff":
            source, target = data.from_agent, data.to_agent
            parent = _agent_of(span.parent_id, by_id, memo)
            agent = source if type(source) is str and source else parent
            call = latest.get(agent, latest.get(parent))
            named = type(target) is str and bool(target)
            steps.add(line, span, _times(line, start, end), handoff_tool(target) if named else "handoff",
                      {"to": target} if named else {}, None, agent, call, "handoff")
            for name in (agent, target if named else None):
                if name is not None:
                    agents.setdefault(name)
        else:
            seen.note(span, data)
            if kind == "agent" and type(data.name) is str:
                agents.setdefault(data.name)
    seen.into(meta)
    return steps.columns(calls), list(agents) or None, totals.given()


class _Seen:
    """Counts of the spans of a trace (models, guardrails, MCP tool listings, errors of spans that are not steps)."""

    def __init__(self) -> None:
        self.types: dict[str, int] = {}
        self.models: list[str] = []
        self.guardrails = 0
        self.triggered = 0
        self.errors = 0
        self.run_usage: dict[str, Any] | None = None

    def note(self, span: Span, data: Data) -> None:
        """A span that is not a step (its type already counted)."""
        kind = data.type
        if span.error is not None:
            self.errors += 1
        if kind in _MODEL_TYPES:
            model = data.model
            if type(model) is str and model and model not in self.models:
                self.models.append(model)
        elif kind == "guardrail":
            self.guardrails += 1
            self.triggered += data.triggered is True
        elif (kind == "custom" and type(data.data) is dict and data.data.get("sdk_span_type") == "task"
              and type(data.data.get("usage")) is dict and self.run_usage is None):
            self.run_usage = data.data["usage"]

    def into(self, meta: dict[str, Any]) -> None:
        if self.models:
            meta["model"] = self.models[0]
            if len(self.models) > 1:
                meta["models"] = self.models
        meta["span_types"] = self.types
        if self.guardrails:
            meta.update(guardrails=self.guardrails, guardrails_triggered=self.triggered)
        if self.types.get("mcp_tools"):
            meta["mcp_tools_spans"] = self.types["mcp_tools"]
        if self.errors:
            meta["span_errors"] = self.errors
        if self.run_usage is not None:
            meta["sdk_run_usage"] = self.run_usage


