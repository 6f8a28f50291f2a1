"""Claude Code's fast path: a session's lines decoded without the keys the reader never reads, walked once into
:class:`~agentab.formats.decode.PreparedSteps` columns (the rules are in :mod:`agentab.formats.claude_code`).

A session line carries much that the reader leaves alone (``parentUuid``, ``userType``, a text block's
``text``, a thinking block's ``signature``, a ``toolUseResult``'s ``stdout``...). :class:`Line` names the keys
it reads, typed ``Any`` where it reads the value whole (a call's ``input``, a result's ``content``, the
``agentab`` object), so msgspec skips the rest; ``toolUseResult`` is kept as raw JSON, decoded only for a
sub-agent's call. The values under the named keys are the ones a whole decode gives.

:func:`walk` mirrors :func:`agentab.formats._claude_code_lines.walk` for the plain case, each case inline;
anything else (a value of another type, a rejection, a count beyond 64 bits, a time of another shape) raises
:class:`~agentab.formats._fast_path.Slow`, and the reader reads the session its usual way, decoded whole.
``tests/test_formats_claude_code_fast.py`` checks both ways give the same tables.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import msgspec

from agentab.formats._claude_code_lines import Session
from agentab.formats._fast_path import Slow
from agentab.formats._message_parts import call_arguments, observation_of
from agentab.formats.decode import PreparedSteps
from agentab.formats.files import JSON_SPACE
from agentab.formats.record import INT64_MAX, TOKENS_WITH_STEP

__all__ = ["LINE_KEYS", "Dicts", "Line", "lines_of", "plain_fields", "step_times", "walk"]


class _Block(msgspec.Struct, gc=False):
    """The keys of a content block the reader reads (a call's, a result's; a text block's ``type`` only)."""

    type: Any = None
    id: Any = None
    name: Any = None
    input: Any = None
    tool_use_id: Any = None
    content: Any = None
    is_error: Any = None
    error: Any = None
    status: Any = None


class _Usage(msgspec.Struct, gc=False):
    """The counts of ``usage`` the reader reads (``service_tier``, ``cache_creation``... are not decoded)."""

    input_tokens: Any = None
    output_tokens: Any = None
    cache_creation_input_tokens: Any = None
    cache_read_input_tokens: Any = None


class _Message(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    usage: _Usage | None = None
    content: str | list[_Block] | None = None


#: The default run-level fields' dotted names, and others a user may map, as keys: a key that is itself the
#: path wins in :func:`~agentab.formats._base.lookup`, so a line that has one must still give it.
_DOTTED = {f"agentab_{name}": f"agentab.{name}" for name in ("task_id", "seed", "outcome", "arm", "cost_usd",
                                                              "latency_s", "model", "harness", "run_id")}


class Line(msgspec.Struct, gc=False, rename=_DOTTED):
    """The keys of a session line the reader reads (None: absent or null, which it reads alike; a dotted key,
    UNSET when absent). Values read whole are typed ``Any``; ``toolUseResult`` is kept as raw JSON."""

    type: Any = None
    uuid: Any = None
    sessionId: Any = None
    timestamp: Any = None
    isSidechain: Any = None
    agentId: Any = None
    message: _Message | None = None
    isApiErrorMessage: Any = None
    requestId: Any = None
    costUSD: Any = None
    toolUseResult: msgspec.Raw = None  # type: ignore[assignment]
    version: Any = None
    cwd: Any = None
    gitBranch: Any = None
    agentab: Any = None
    agentab_task_id: Any = msgspec.UNSET
    agentab_seed: Any = msgspec.UNSET
    agentab_outcome: Any = msgspec.UNSET
    agentab_arm: Any = msgspec.UNSET
    agentab_cost_usd: Any = msgspec.UNSET
    agentab_latency_s: Any = msgspec.UNSET
    agentab_model: Any = msgspec.UNSET
    agentab_harness: Any = msgspec.UNSET
    agentab_run_id: Any = msgspec.UNSET


#: The keys of :class:`Line` whose values are decoded whole (a run-level field may be looked up in them), and
#: the attribute of each.
_WHOLE = {_DOTTED.get(name, name): name for name in Line.__struct_fields__ if name not in ("message", "toolUseResult")}
LINE_KEYS = frozenset(_WHOLE)
_LINES = msgspec.json.Decoder(Line)


def plain_fields(plan: dict[str, str]) -> tuple[tuple[str, str], ...] | None:
    """The keys of :class:`Line` (and their attributes) that the run-level fields ``plan`` maps are looked up in
    (with the first line's ``version``, ``cwd`` and ``gitBranch``), when every one is found in what it decodes
    whole: a key of it, or a dotted path into one whose whole text is a key of it too; else None."""
    keys = {"version": None, "cwd": None, "gitBranch": None}
    for path in plan.values():
        if path not in LINE_KEYS:
            return None
        keys[path] = None
        if "." in path:
            head = path.split(".", 1)[0]
            if head not in LINE_KEYS:
                return None
            keys[head] = None
    return tuple((key, _WHOLE[key]) for key in keys)


class Dicts:
    """The lines as dicts of the keys ``keys`` (``(key, attribute)``; UNSET left out), for
    :func:`~agentab.formats._base.lookup`, each made when first reached: the run-level fields are found on the
    first lines, so the others are never made."""

    def __init__(self, lines: list[Line], keys: tuple[tuple[str, str], ...]) -> None:
        self.lines = lines
        self.keys = keys
        self.made: list[dict[str, Any]] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        made = self.made
        for k, line in enumerate(self.lines):
            if k == len(made):
                made.append({key: value for key, name in self.keys
                             if (value := getattr(line, name)) is not msgspec.UNSET})
            yield made[k]

    def of(self, line: Line) -> dict[str, Any]:
        """``line`` (one of the lines) as a dict of the keys."""
        return {key: value for key, name in self.keys if (value := getattr(line, name)) is not msgspec.UNSET}


def lines_of(body: bytes) -> tuple[list[Line], Sequence[int]] | None:
    """The session's lines decoded as :class:`Line` and their line numbers, or None (a line that does not decode
    so: malformed, not an object, a value of another shape; the usual path reads it)."""
    try:
        lines = _LINES.decode_lines(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    n = body.count(b"\n") + 1
    if not body[body.rfind(b"\n") + 1:].strip(JSON_SPACE):
        n -= 1
    if len(lines) == n:  # no blank line: line k is the k-th
        return lines, range(1, n + 1)
    numbers = [k for k, raw in enumerate(body.split(b"\n"), start=1) if raw.strip(JSON_SPACE)]
    return (lines, numbers) if len(numbers) == len(lines) else None


#: The tool-use block types, and the tools whose calls start a sub-agent (as the usual path has them).
_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_SUB_AGENT_TOOLS = frozenset({"Task", "Agent"})
_SUB_AGENT_TOTALS = (("totalToolUseCount", "sub_agent_tool_calls"), ("totalTokens", "sub_agent_tokens"),
                     ("totalDurationMs", "sub_agent_duration_ms"))

#: Where a step's values are in its row while the lines are walked.
_TOOL, _ARGS, _OBS, _STARTED, _ENDED, _LINE, _CALL, _AGENT, _KEY, _FIRST, _GETS, _SUB = range(12)


def _sub_agent(line: Line) -> dict[str, Any] | None:
    """The metadata a Task / Agent call's answer adds (``_claude_code_lines._sub_agent_totals``), or None."""
    raw = line.toolUseResult
    result = msgspec.json.decode(raw) if raw is not None else None
    result = result if isinstance(result, dict) else {}
    agent = result.get("agentId", line.agentId if line.isSidechain is not True else None)
    out: dict[str, Any] = {}
    if isinstance(agent, str) and agent:
        out["sub_agent"] = agent
    for key, name in _SUB_AGENT_TOTALS:
        value = result.get(key)
        if type(value) is int and value >= 0:
            if value > INT64_MAX:
                raise Slow
            out[name] = value
    return out or None


def _counts(usage: _Usage | None) -> tuple[int | None, int | None, dict[str, int] | None]:
    """A response's ``(tokens_in, tokens_out, cache counts)`` when every count is a whole number in 64 bits."""
    if usage is None:
        return None, None, None
    tin, tout = usage.input_tokens, usage.output_tokens
    made, read = usage.cache_creation_input_tokens, usage.cache_read_input_tokens
    for value in (tin, tout, made, read):
        if value is not None and (type(value) is not int or not 0 <= value <= INT64_MAX):
            raise Slow
    if made is None and read is None:
        return tin, tout, None
    cache: dict[str, int] = {}
    if made is not None:
        cache["cache_creation_input_tokens"] = made
        tin = made if tin is None else tin + made
    if read is not None:
        cache["cache_read_input_tokens"] = read
        tin = read if tin is None else tin + read
    if tin is not None and tin > INT64_MAX:
        raise Slow
    return tin, tout, cache


def walk(state: Session, lines: list[Line], numbers: Sequence[int], costs: dict[str, Any],
         sessions: dict[str, None]) -> tuple[PreparedSteps, Line, str | None]:
    """The session's steps in columns (times still as written), its first conversation line (else its first
    line) and a sub-agent transcript's agentId (else None); the counts go to ``state``, each response's
    ``costUSD`` to ``costs`` and the session ids to ``sessions``, as the usual walk has them.
    :class:`~agentab.formats._fast_path.Slow` for anything but the plain case."""
    # kept whole: one pass with each case inline is what makes it fast (no call per line or block)
    line_types = state.line_types
    uuids = state.uuids
    stamps = state.stamps
    models = state.models
    rows: list[list[Any]] = []
    waiting: dict[str, list[Any]] = {}  # call id -> its step's row, until answered
    answered: set[str] = set()
    finals: dict[str, list[Any]] = {}  # response -> its last usage and costUSD (the streamed lines repeat them)
    charged: dict[str, None] = {}  # responses counted, in the order the usual walk charges them
    first_of: dict[str, int] = {}  # response -> the row of its first step
    per_response: dict[str, int] = {}  # response -> its steps
    first: Line | None = None
    agent_ids: set[Any] = set()
    sides = True
    unread = 0
    key = ""
    for number, line in zip(numbers, lines):
        kind = line.type
        if type(kind) is not str:
            raise Slow
        line_types[kind] = line_types.get(kind, 0) + 1
        if kind == "assistant":
            mine = True
        elif kind == "user":
            mine = False
        else:
            unread += 1
            continue
        if first is None:
            first = line
        agent_id = line.agentId
        try:
            agent_ids.add(agent_id)
        except TypeError:
            raise Slow from None
        side = line.isSidechain is True
        if not side:
            sides = False
        message = line.message
        if message is None:
            raise Slow
        api_error = False
        if mine:
            key = message.id
            if type(key) is str and key:
                key = "m:" + key
            else:
                key = line.requestId
                key = "r:" + key if type(key) is str and key else f"l:{number}"
            api_error = line.isApiErrorMessage
            if not api_error:  # every assistant line, a repeated one too, may carry its response's last usage
                final = finals.get(key)
                usage, cost = message.usage, line.costUSD
                if final is None:
                    finals[key] = [usage, cost]
                else:
                    if usage is not None:
                        final[0] = usage
                    if cost is not None:
                        final[1] = cost
        uuid = line.uuid
        if type(uuid) is str:
            if uuid in uuids:  # a line written twice: read once
                unread += 1
                continue
            uuids.add(uuid)
        stamp = line.timestamp
        if stamp is not None:
            if type(stamp) is not str:
                raise Slow
            stamps.append(stamp)
        session = line.sessionId
        if type(session) is str and session not in sessions:
            sessions[session] = None
        if mine:
            if api_error:
                state.api_errors += 1
            elif key not in charged:
                charged[key] = None
                model = message.model
                if type(model) is str and model and model != "<synthetic>" and model not in models:
                    models.append(model)
        content = message.content
        if type(content) is not list:
            continue
        agent = None
        if side:
            agent = agent_id if type(agent_id) is str and agent_id else "sidechain"
        for block in content:
            block_type = block.type
            if block_type == "text" or block_type == "thinking":
                continue
            if mine:
                if type(block_type) is not str:
                    raise Slow  # the usual path's own handling
                if block_type not in _USE_TYPES:
                    continue
                call_id = block.id
                if type(call_id) is not str or not call_id:
                    raise Slow
                if call_id in waiting or call_id in answered:  # the same call written again: one step
                    state.repeated += 1
                    continue
                name = block.name
                if type(name) is not str or not name:
                    raise Slow
                args = block.input
                if type(args) is not dict:
                    args = call_arguments(args, "input")
                at = len(rows)
                head = first_of.get(key)
                if head is None:
                    first_of[key] = head = at
                if agent is not None:
                    state.agents.setdefault(agent)
                per_response[key] = per_response.get(key, 0) + 1
                row = [name, args, None, stamp, None, number, call_id, agent, key, head, key in charged, None]
                rows.append(row)
                waiting[call_id] = row
            elif block_type == "tool_result" or type(block_type) is str and block_type.endswith("_tool_result"):
                call_id = block.tool_use_id
                if type(call_id) is not str or not call_id:
                    raise Slow
                row = waiting.pop(call_id, None)
                if row is None:
                    if call_id in answered:
                        raise Slow  # the usual path's rejection
                    state.unmatched += 1
                    continue
                answered.add(call_id)
                if block.is_error is False:
                    row[_OBS] = {"status": "ok", "content": block.content}
                else:  # the error rule reads these three keys (absent and null alike)
                    row[_OBS] = observation_of({"is_error": block.is_error, "error": block.error,
                                                "status": block.status}, block.content)
                if stamp is not None:
                    row[_ENDED] = stamp
                if row[_TOOL] in _SUB_AGENT_TOOLS:
                    row[_SUB] = _sub_agent(line)
    state.unread += unread
    counts = {}
    totals = state.totals
    for key in charged:
        usage, cost = finals[key]
        counts[key] = found = _counts(usage)
        totals.add(*found)
        costs[key] = cost
    agent_of = None
    if sides and len(agent_ids) == 1:
        (only,) = agent_ids
        agent_of = only if type(only) is str and only else None
    return _columns(rows, counts, per_response), lines[0] if first is None else first, agent_of


def _columns(rows: list[list[Any]], counts: dict[str, tuple[Any, Any, Any]],
             per_response: dict[str, int]) -> PreparedSteps:
    """The walked rows as columns: each response's tokens on its first step (when it was counted by then), the
    others pointing at it, the metadata in the usual path's key order."""
    n = len(rows)
    tokens_in: list[int | None] = [None] * n
    tokens_out: list[int | None] = [None] * n
    cached: list[int | None] = [None] * n
    parallel: list[Any] = [None] * n
    metadata: list[dict[str, Any] | None] = []
    for k, row in enumerate(rows):
        meta = {"line": row[_LINE], "call_id": row[_CALL]}
        head = row[_FIRST]
        key = row[_KEY]
        if head == k:
            if row[_GETS]:
                tin, tout, cache = counts[key]
                tokens_in[k], tokens_out[k] = tin, tout
                if cache:
                    meta.update(cache)
                    cached[k] = cache.get("cache_read_input_tokens")
        elif tokens_in[head] is not None or tokens_out[head] is not None:
            meta[TOKENS_WITH_STEP] = head
        if row[_SUB] is not None:
            meta.update(row[_SUB])
        if per_response[key] >= 2:
            parallel[k] = key[2:]
        metadata.append(meta)
    cols = list(zip(*rows)) if rows else [()] * 12
    nothing = [None] * n
    agents = list(cols[_AGENT])
    return PreparedSteps(list(cols[_TOOL]), list(cols[_ARGS]), list(cols[_OBS]), tokens_in, tokens_out,
                         list(cols[_STARTED]), list(cols[_ENDED]), metadata, None,
                         None if agents == nothing else agents, None if parallel == nothing else parallel, None,
                         None if cached == nothing else cached, None)


#: The one shape of time Claude Code writes (JavaScript's ``toISOString``), its digits as zeros.
_SHAPE = b"0000-00-00T00:00:00.000Z"
_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_NAIVE_EPOCH = datetime(1970, 1, 1)
#: Python 3.11 reads the trailing ``Z`` itself (faster); 3.10 reads the time without it, as UTC.
_READS_Z = sys.version_info >= (3, 11)
_MICROSECOND = timedelta(microseconds=1)
#: The years read here (well inside the nanosecond range the record's times have).
_FIRST_YEAR, _LAST_YEAR = "1700", "2261"


def step_times(stamps: list[str], started: list[Any], ended: list[Any]) -> tuple[list[Any], list[Any]]:
    """The steps' times as unix nanoseconds, as the decoder's parser reads them, when every time of the
    session's conversation lines (``stamps``, which hold the steps' own) has the shape Claude Code writes;
    else :class:`~agentab.formats._fast_path.Slow` (the usual path parses and judges them)."""
    if not stamps:
        return started, ended
    if "".join(stamps).encode().translate(_ZEROS) != _SHAPE * len(stamps):
        raise Slow
    if min(stamps)[:4] < _FIRST_YEAR or max(stamps)[:4] > _LAST_YEAR:  # text of one shape sorts as its times do
        raise Slow
    parse = datetime.fromisoformat
    try:
        if _READS_Z:
            return ([None if s is None else (parse(s) - _EPOCH) // _MICROSECOND * 1000 for s in started],
                    [None if s is None else (parse(s) - _EPOCH) // _MICROSECOND * 1000 for s in ended])
        return ([None if s is None else (parse(s[:-1]) - _NAIVE_EPOCH) // _MICROSECOND * 1000 for s in started],
                [None if s is None else (parse(s[:-1]) - _NAIVE_EPOCH) // _MICROSECOND * 1000 for s in ended])
    except ValueError:  # a day the month does not have, hour 24...: the usual path names it
        raise Slow from None
