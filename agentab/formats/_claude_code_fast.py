"""Claude Code's fast path: a session's lines decoded without the keys the reader never reads, walked once into
:class:`~agentab.formats.decode.PreparedSteps` columns (the rules are in :mod:`agentab.formats.claude_code`).

A session line carries much that the reader leaves alone (``parentUuid``, ``userType``, a text block's
``text``, a thinking block's ``signature``, a ``toolUseResult``'s ``stdout``...). :class:`Line` names the keys
it reads, typed ``Any`` where it reads the value whole (a call's ``input``, a result's ``content``, the
``agentab`` object), so msgspec skips the rest; ``toolUseResult`` is kept as raw JSON, decoded only for a
sub-agent's call. The values under the named keys are the ones a whole decode gives.

:func:`walk` mirrors :func:`agentab.formats._claude_code_lines.walk` for the plain case, each case inline;
anything else (a value of another type, a rejection, a count beyond 64 bits) raises
:class:`~agentab.formats._fast_path.Slow`, and the reader reads the session its usual way, decoded whole.
``tests/test_formats_claude_code_fast.py`` checks both ways give the same tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from operator import attrgetter, itemgetter
from typing import Annotated, Any

import msgspec

from agentab.formats._claude_code_lines import Session
from agentab.formats._fast_path import Slow
from agentab.formats._message_parts import call_arguments, observation_of
from agentab.formats.decode import PreparedSteps
from agentab.formats.files import object_lines
from agentab.formats.record import INT64_MAX, TOKENS_WITH_STEP

__all__ = ["LINE_KEYS", "Dicts", "Extra", "Line", "Source", "default_found", "lines_of", "plain_fields",
           "uniform", "walk"]


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


#: A token count of the plain case: a whole number in 64 bits (anything else fails the decode: the usual path).
_Count = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]


class _Usage(msgspec.Struct, gc=False):
    """The counts of ``usage`` the reader reads (``service_tier``, ``cache_creation``... are not decoded)."""

    input_tokens: _Count | None = None
    output_tokens: _Count | None = None
    cache_creation_input_tokens: _Count | None = None
    cache_read_input_tokens: _Count | None = None


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
    """The keys of a session line the reader reads on every line (None: absent or null, which it reads alike;
    a dotted key, UNSET when absent). Values read whole are typed ``Any``. The keys it reads on a few lines only
    are in :class:`Extra`."""

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


class Extra(msgspec.Struct, gc=False):
    """The keys read on a few lines only (the first conversation line's, a sub-agent call's answer's): decoded
    from that line alone when it is reached, not on every line."""

    version: Any = None
    cwd: Any = None
    gitBranch: Any = None
    toolUseResult: msgspec.Raw = None  # type: ignore[assignment]


#: The keys decoded whole (a run-level field may be looked up in them): key -> (attribute, whether in Extra).
_WHOLE = {**{_DOTTED.get(name, name): (name, False) for name in Line.__struct_fields__ if name != "message"},
          **{name: (name, True) for name in Extra.__struct_fields__ if name != "toolUseResult"}}
LINE_KEYS = frozenset(_WHOLE)
_LINES = msgspec.json.Decoder(Line)
_EXTRA = msgspec.json.Decoder(Extra)


def plain_fields(plan: dict[str, str]) -> tuple[tuple[str, str, bool], ...] | None:
    """The keys (with their attribute and whether in :class:`Extra`) that the run-level fields ``plan`` maps are
    looked up in, and the first line's ``version``, ``cwd`` and ``gitBranch``, when every field is found in what
    the shapes decode whole: a key of them, or a dotted path into one whose whole text is a key too; else None."""
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
    return tuple((key, *_WHOLE[key]) for key in keys)


class Source:
    """A session's bytes, lines (:class:`Line`) and line numbers; each line's :class:`Extra` and its dict of
    given keys (for :func:`~agentab.formats._base.lookup`) made when first asked for."""

    def __init__(self, body: bytes, lines: list[Line], numbers: Sequence[int]) -> None:
        self.body = body
        self.lines = lines
        self.numbers = numbers
        self.rows: list[bytes] | None = None  # the body's lines, split when first needed
        self._extras: dict[int, Extra] = {}
        self._dicts: dict[int, dict[str, Any]] = {}

    def extra(self, k: int) -> Extra:
        """The :class:`Extra` of the ``k``-th line (from 0)."""
        found = self._extras.get(k)
        if found is None:
            rows = self.rows
            if rows is None:
                rows = self.rows = self.body.split(b"\n")
            found = self._extras[k] = _EXTRA.decode(rows[self.numbers[k] - 1])
        return found

    def as_dict(self, k: int, keys: tuple[tuple[str, str, bool], ...]) -> dict[str, Any]:
        """The ``k``-th line's keys ``keys`` (from :func:`plain_fields`, the same on every call) as a dict, UNSET
        left out (made once: the first line's is asked for twice)."""
        out = self._dicts.get(k)
        if out is not None:
            return out
        line = self.lines[k]
        out = self._dicts[k] = {}
        for key, name, extra in keys:
            value = getattr(self.extra(k) if extra else line, name)
            if value is not msgspec.UNSET:
                out[key] = value
        return out


def default_found(lines: list[Line], plan: dict[str, str]) -> dict[str, tuple[str, Any]]:
    """What :func:`~agentab.formats.claude_code._identity` finds for the default mapping ``plan`` (``run_id``
    from ``sessionId``, the others from ``agentab.<name>``), read off the lines themselves: each field's first
    value that is not null, a key that is itself the dotted path winning over the ``agentab`` object's key, as
    in :func:`~agentab.formats._base.lookup`."""
    found: dict[str, tuple[str, Any]] = {}
    wanted = [key for key in plan if key != "run_id"]
    for line in lines:
        if "run_id" not in found and line.sessionId is not None:
            found["run_id"] = (plan["run_id"], line.sessionId)
        inner = line.agentab
        for key in wanted:
            if key not in found:
                value = getattr(line, _ATTRIBUTE[key])
                if value is msgspec.UNSET:
                    value = inner.get(key) if type(inner) is dict else None
                if value is not None:
                    found[key] = (plan[key], value)
        if len(found) == len(plan):
            break
    return found


#: A run-level field's dotted key (``agentab.<name>``) as an attribute of :class:`Line`.
_ATTRIBUTE = {dotted.split(".", 1)[1]: attribute for attribute, dotted in _DOTTED.items()}


class Dicts:
    """The lines of ``source`` as dicts of ``keys`` (:meth:`Source.as_dict`, which keeps them), each made when
    first reached: the run-level fields are found on the first lines, so the others are never made."""

    def __init__(self, source: Source, keys: tuple[tuple[str, str, bool], ...]) -> None:
        self.source = source
        self.keys = keys

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for k in range(len(self.source.lines)):
            yield self.source.as_dict(k, self.keys)


def lines_of(body: bytes) -> Source | None:
    """The session's lines decoded as :class:`Line`, or None (a line that does not decode so: malformed, not an
    object, a value of another shape; the usual path reads it)."""
    # numbered as the usual path numbers them: one object per line that is not blank (else it reads them one by
    # one: two objects on a line, or one over two lines, are malformed JSON there); looked at before decoding
    rows = body.split(b"\n")
    numbers, whole = object_lines(body, rows)
    if not whole:
        return None
    try:
        lines = _LINES.decode_lines(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if len(numbers) != len(lines):
        return None
    source = Source(body, lines, numbers)
    source.rows = rows
    return source


#: The tool-use block types, and the tools whose calls start a sub-agent (as the usual path has them).
_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_SUB_AGENT_TOOLS = frozenset({"Task", "Agent"})
_SUB_AGENT_TOTALS = (("totalToolUseCount", "sub_agent_tool_calls"), ("totalTokens", "sub_agent_tokens"),
                     ("totalDurationMs", "sub_agent_duration_ms"))

#: Where a step's values are in its row while the lines are walked.
_TOOL, _ARGS, _OBS, _STARTED, _ENDED, _META, _AGENT, _KEY, _FIRST, _GETS = range(10)


def _sub_agent(line: Line, extra: Extra) -> dict[str, Any] | None:
    """The metadata a Task / Agent call's answer adds (``_claude_code_lines._sub_agent_totals``), or None."""
    raw = extra.toolUseResult
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


def walk(state: Session, source: Source, costs: dict[str, Any],
         sessions: dict[str, None]) -> tuple[PreparedSteps, int, str | None]:
    """The session's steps in columns (times still as written), the index of its first conversation line (else
    0) and a sub-agent transcript's agentId (else None); the counts go to ``state``, each response's ``costUSD``
    to ``costs`` and the session ids to ``sessions``, as the usual walk has them.
    :class:`~agentab.formats._fast_path.Slow` for anything but the plain case."""
    # kept whole: one pass with each case inline is what makes it fast (no call per line or block)
    lines = source.lines
    uuids = state.uuids
    stamps = state.stamps
    models = state.models
    rows: list[list[Any]] = []
    waiting: dict[str, list[Any]] = {}  # call id -> its step's row, until answered
    answered: set[str] = set()
    # a response is keyed by its message id, else ("r", its request id), else ("l", its line number)
    usages: dict[Any, Any] = {}  # response -> its last usage (the streamed lines repeat it)
    prices: dict[Any, Any] = {}  # response -> its last costUSD
    charged: dict[Any, None] = {}  # responses counted, in the order the usual walk charges them
    first_of: dict[Any, int] = {}  # response -> the row of its first step
    first = -1
    sides = True
    repeated = 0
    key: Any = ""
    for k, line in enumerate(lines):
        kind = line.type
        if kind == "assistant":
            mine = True
        elif kind == "user":
            mine = False
        else:
            continue
        if first < 0:
            first = k
        if line.isSidechain is not True:
            sides = False
        message = line.message
        if message is None:
            raise Slow
        api_error = False
        if mine:
            key = message.id
            if type(key) is not str or not key:
                key = line.requestId
                key = ("r", key) if type(key) is str and key else ("l", str(source.numbers[k]))
            api_error = line.isApiErrorMessage
            if not api_error:  # every assistant line, a repeated one too, may carry its response's last usage
                if message.usage is not None:
                    usages[key] = message.usage
                if line.costUSD is not None:
                    prices[key] = line.costUSD
        uuid = line.uuid
        if type(uuid) is str:
            if uuid in uuids:  # a line written twice: read once
                repeated += 1
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
        if line.isSidechain is True:
            agent = line.agentId if type(line.agentId) is str and line.agentId else "sidechain"
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
                head = first_of.setdefault(key, len(rows))
                if agent is not None:
                    state.agents.setdefault(agent)
                row = [name, args, None, stamp, None, {"line": source.numbers[k], "call_id": call_id}, agent, key,
                       head, key in charged]
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
                    sub = _sub_agent(line, source.extra(k))
                    if sub is not None:
                        row[_META].update(sub)
    try:  # every line's type, in order of first appearance (a type no dict holds: the usual path's own)
        kinds = Counter(map(_TYPE, lines))
    except TypeError:
        raise Slow from None
    if not all(type(kind) is str for kind in kinds):
        raise Slow
    state.line_types.update(kinds)
    state.unread = len(lines) - kinds.get("user", 0) - kinds.get("assistant", 0) + repeated
    agent_of = None
    if sides and first >= 0:  # a sub-agent's own transcript: every conversation line a sidechain of one agent
        try:
            agents = {line.agentId for line in lines if line.type == "user" or line.type == "assistant"}
        except TypeError:
            agents = set()  # an agentId no set holds: not one text agentId
        if len(agents) == 1:
            (only,) = agents
            agent_of = only if type(only) is str and only else None
    return _columns(rows, charged, usages, prices, costs, state, first_of), max(first, 0), agent_of


_TYPE = attrgetter("type")
_KEY_OF = itemgetter(_KEY)


def _columns(rows: list[list[Any]], charged: dict[Any, None], usages: dict[Any, Any], prices: dict[Any, Any],
             costs: dict[Any, Any], state: Session, first_of: dict[Any, int]) -> PreparedSteps:
    """The walked rows as columns: each response's usage counted once (its last), its tokens on its first step
    (``first_of``; when it was counted by then), the response's other steps pointing at it."""
    counts: dict[Any, tuple[int | None, int | None, dict[str, int] | None]] = {}
    add = state.totals.add
    for key in charged:  # as the usual path's _usage, the plain case: whole numbers in 64 bits
        usage = usages.get(key)
        costs[key] = prices.get(key)
        if usage is None:
            found: tuple[Any, Any, Any] = (None, None, None)
        else:  # each count a whole number in 64 bits, or None (the decode's types)
            tin, tout = usage.input_tokens, usage.output_tokens
            made, read = usage.cache_creation_input_tokens, usage.cache_read_input_tokens
            if made is None and read is None:
                found = (tin, tout, None)
            else:
                cache: dict[str, int] = {}
                if made is not None:
                    cache["cache_creation_input_tokens"] = made
                    tin = made if tin is None else tin + made
                if read is not None:
                    cache["cache_read_input_tokens"] = read
                    tin = read if tin is None else tin + read
                if tin is not None and tin > INT64_MAX:
                    raise Slow
                found = (tin, tout, cache)
        counts[key] = found
        add(*found)
    n = len(rows)
    tokens_in: list[int | None] = [None] * n
    tokens_out: list[int | None] = [None] * n
    cached: list[int | None] = [None] * n
    parallel: list[Any] = [None] * n
    for key, head in first_of.items():
        row = rows[head]
        if row[_GETS]:
            tin, tout, cache = counts[key]  # type: ignore[assignment]
            tokens_in[head], tokens_out[head] = tin, tout
            if cache:
                row[_META].update(cache)
                cached[head] = cache.get("cache_read_input_tokens")
    if len(first_of) < n:  # a response that made two calls or more: a parallel group, its tokens on its first
        per_response = Counter(map(_KEY_OF, rows))
        for k, row in enumerate(rows):
            key = row[_KEY]
            if per_response[key] >= 2:
                parallel[k] = key if type(key) is str else key[1]
                head = row[_FIRST]
                if head != k and (tokens_in[head] is not None or tokens_out[head] is not None):
                    row[_META][TOKENS_WITH_STEP] = head
    cols = list(zip(*rows)) if rows else [()] * 10
    nothing = [None] * n
    agents = list(cols[_AGENT])
    return PreparedSteps(list(cols[_TOOL]), list(cols[_ARGS]), list(cols[_OBS]), tokens_in, tokens_out,
                         list(cols[_STARTED]), list(cols[_ENDED]), list(cols[_META]), None,
                         None if agents == nothing else agents, None if parallel == nothing else parallel, None,
                         None if cached == nothing else cached, None)


#: The one shape of time Claude Code writes (JavaScript's ``toISOString``), its digits as zeros.
_SHAPE = b"0000-00-00T00:00:00.000Z"
_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_SHAPED = len(_SHAPE)


def uniform(stamps: list[str]) -> bool:
    """Whether every time of the session's conversation lines has the shape Claude Code writes (UTC text of one
    shape, which sorts as its times do). The steps' times themselves stay as written
    (:attr:`agentab.formats.decode.Prepared.text_times`): the decoder parses them with a chunk's, as the usual
    path's.

    Examples
    --------
    >>> uniform(["2026-11-02T09:00:01.184Z", "2026-11-02T09:00:03.152Z"]), uniform(["2026-11-02T09:00:01Z"])
    (True, False)
    """
    return all(map(_SHAPED.__eq__, map(len, stamps))) and (
        "".join(stamps).encode().translate(_ZEROS) == _SHAPE * len(stamps))
