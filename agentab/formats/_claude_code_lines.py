"""One pass over a Claude Code session's lines: steps, their results, usage once per response, sub-agents (the
rules are in :mod:`agentab.formats.claude_code`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentab.formats._base import Reject
from agentab.formats._message_fields import describe
from agentab.formats._message_parts import (
    call_arguments,
    observation_of,
    required_text,
    usage_anthropic,
)
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["READ_TYPES", "UNSEEN", "AtLine", "Final", "Session", "final_usages", "is_int", "walk"]


#: The content blocks that are tool calls, and the line types read (the others are counted, not read).
_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
READ_TYPES = frozenset({"user", "assistant"})


class AtLine(Reject):
    """A rejection at a given line of the session (the item's line is then that line, not the session's first)."""

    def __init__(self, line: int, problem: Reject) -> None:
        super().__init__(problem.field, problem.reason)
        self.line = line


def _is_result(kind: Any) -> bool:
    return kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result"))


class Session:
    """What one pass over a session's lines collects (linear in its size)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.open: dict[str, dict[str, Any]] = {}
        self.answered: set[str] = set()
        self.usage: dict[str, tuple[int | None, int | None, dict[str, int] | None]] = {}  # per response
        self.totals = _Totals()
        self.agents: dict[str, None] = {}  # sub-agents, in order of first appearance
        self.first_of: dict[str, dict[str, Any]] = {}
        self.parallel: dict[str, int] = {}  # response -> its steps
        self.charged: set[str] = set()
        self.line_types: dict[str, int] = {}
        self.unread = 0
        self.unmatched = 0
        self.api_errors = 0
        self.repeated = 0
        self.uuids: set[str] = set()
        self.models: list[str] = []
        self.stamps: list[Any] = []


class _Totals:
    """A session's token totals over its responses (None: a response did not report that count)."""

    __slots__ = ("cached", "n", "tin", "tout")

    def __init__(self) -> None:
        self.n = 0
        self.tin: int | None = 0
        self.tout: int | None = 0
        self.cached: int | None = 0

    def add(self, tin: int | None, tout: int | None, cache: dict[str, int] | None) -> None:
        self.n += 1
        read = None if cache is None else cache.get("cache_read_input_tokens")
        self.tin = None if self.tin is None or tin is None else self.tin + tin
        self.tout = None if self.tout is None or tout is None else self.tout + tout
        self.cached = None if self.cached is None or read is None else self.cached + read

    def into(self, out: dict[str, Any]) -> None:
        if self.n:
            for name, value in (("tokens_in", self.tin), ("tokens_out", self.tout), ("tokens_cached", self.cached)):
                if value is not None:
                    out[name] = value


def _response_key(line: dict[str, Any], message: dict[str, Any], number: int) -> str:
    key = message.get("id")
    if isinstance(key, str) and key:
        return "m:" + key
    key = line.get("requestId")
    return "r:" + key if isinstance(key, str) and key else f"l:{number}"


#: A response's last ``usage``, the line it is on, and its last ``costUSD``.
Final = tuple[Any, int, Any]


def final_usages(lines: Sequence[tuple[int, dict[str, Any]]]) -> dict[str, Final]:
    """Each response's last ``usage`` (and its line) and ``costUSD`` (the streamed lines of one response repeat them)."""
    out: dict[str, Final] = {}
    for number, line in lines:
        get = line.get
        if get("type") != "assistant":
            continue
        message = get("message")
        if type(message) is not dict and not isinstance(message, dict) or get("isApiErrorMessage"):
            continue
        key = message.get("id")
        key = "m:" + key if type(key) is str and key else _response_key(line, message, number)
        usage, where, cost = out.get(key, (None, number, None))
        if message.get("usage") is not None:
            usage, where = message["usage"], number
        if get("costUSD") is not None:
            cost = line["costUSD"]
        out[key] = (usage, where, cost)
    return out


def _agent(line: dict[str, Any]) -> str:
    if line.get("isSidechain") is True:
        agent = line.get("agentId")
        return agent if isinstance(agent, str) and agent else "sidechain"
    return ""


def _step(state: Session, block: dict[str, Any], line: dict[str, Any], number: int, agent: str,
          key: str) -> dict[str, Any] | None:
    call_id = block.get("id")
    if type(call_id) is not str or not call_id:
        call_id = required_text(call_id, "id", "tool use id")
    if call_id in state.open or call_id in state.answered:  # the same call written again: one step
        state.repeated += 1
        return None
    name = block.get("name")
    if type(name) is not str or not name:
        name = required_text(name, "name", "tool name")
    meta: dict[str, Any] = {"line": number, "call_id": call_id}
    args = block.get("input")
    if type(args) is not dict:
        args = call_arguments(args, "input")
    step: dict[str, Any] = {"index": len(state.steps), "tool": name, "args": args, "observation": None, "metadata": meta}
    if agent:
        step["agent"] = agent
        state.agents.setdefault(agent)
    stamp = line.get("timestamp")
    if stamp is not None:
        step["started_at"] = stamp
    first = state.first_of.get(key)
    if first is None:
        state.first_of[key] = step
        tin, tout, cache = state.usage.get(key, (None, None, None))
        if tin is not None:
            step["tokens_in"] = tin
        if tout is not None:
            step["tokens_out"] = tout
        if cache:
            meta.update(cache)
            if "cache_read_input_tokens" in cache:
                step["tokens_cached"] = cache["cache_read_input_tokens"]
    elif "tokens_in" in first or "tokens_out" in first:
        meta[TOKENS_WITH_STEP] = first["index"]
    step["parallel"] = key
    state.parallel[key] = state.parallel.get(key, 0) + 1
    state.steps.append(step)
    state.open[call_id] = step
    return step


def _answer(state: Session, block: dict[str, Any], line: dict[str, Any]) -> None:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise Reject("tool_use_id", "a tool result without the id of its call" if call_id is None
                     else f"expected a call id (text), got {describe(call_id)}")
    step = state.open.pop(call_id, None)
    if step is None:
        if call_id in state.answered:
            raise Reject("tool_use_id", f"call {call_id!r} was already answered")
        state.unmatched += 1
        return
    state.answered.add(call_id)
    step["observation"] = observation_of(block, block.get("content"))
    if line.get("timestamp") is not None:
        step["ended_at"] = line["timestamp"]
    if step["tool"] in _SUB_AGENT_TOOLS:
        _sub_agent_totals(step["metadata"], line)


#: The tools that start a sub-agent (a sidechain).
_SUB_AGENT_TOOLS = frozenset({"Task", "Agent"})
#: ``toolUseResult`` totals of a sub-agent call -> the step's metadata key.
_SUB_AGENT_TOTALS = {"totalToolUseCount": "sub_agent_tool_calls", "totalTokens": "sub_agent_tokens",
                     "totalDurationMs": "sub_agent_duration_ms"}


def _sub_agent_totals(meta: dict[str, Any], line: dict[str, Any]) -> None:
    """The sub-agent a Task / Agent call started (its ``agentId``) and the totals Claude Code reports for it."""
    result = line.get("toolUseResult")
    result = result if isinstance(result, dict) else {}
    agent = result.get("agentId", line.get("agentId") if line.get("isSidechain") is not True else None)
    if isinstance(agent, str) and agent:
        meta["sub_agent"] = agent
    for key, name in _SUB_AGENT_TOTALS.items():
        value = result.get(key)
        if is_int(value) and value >= 0:
            meta[name] = value


def _read_line(state: Session, line: dict[str, Any], number: int, finals: dict[str, Final],
               costs: dict[str, Any]) -> None:
    message = line.get("message")
    if type(message) is not dict and not isinstance(message, dict):
        raise Reject("message", f"expected a message object, got {describe(message)}")
    agent = _agent(line) if line.get("isSidechain") is True else ""
    mine = line.get("type") == "assistant"
    key = ""  # the response's key: only an assistant line's is used
    if mine:
        key = message.get("id")
        key = "m:" + key if type(key) is str and key else _response_key(line, message, number)
        if line.get("isApiErrorMessage"):
            state.api_errors += 1
        elif key not in state.charged:
            _charge(state, key, finals, costs, message)
    content = message.get("content")
    if type(content) is not list and not isinstance(content, list):
        return
    for j, block in enumerate(content):
        try:
            if type(block) is not dict and not isinstance(block, dict):
                raise Reject(None, f"expected a content block object, got {describe(block)}")
            kind = block.get("type")
            if kind == "text" or kind == "thinking":
                continue
            if kind in _USE_TYPES and mine:
                _step(state, block, line, number, agent, key)
            elif not mine and (kind == "tool_result" or _is_result(kind)):
                _answer(state, block, line)
        except Reject as problem:
            problem.field = f"message.content[{j}].{problem.field}" if problem.field else f"message.content[{j}]"
            raise


def _usage(usage: Any) -> tuple[int | None, int | None, dict[str, int] | None]:
    """``usage_anthropic(usage)[:3]``, without its per-key calls when every count present is a plain integer."""
    if type(usage) is dict:
        get = usage.get
        tin, tout = get("input_tokens"), get("output_tokens")
        made, read = get("cache_creation_input_tokens"), get("cache_read_input_tokens")
        if ((tin is None or type(tin) is int and tin >= 0) and (tout is None or type(tout) is int and tout >= 0)
                and (made is None or type(made) is int and made >= 0)
                and (read is None or type(read) is int and read >= 0)):
            if made is None and read is None:
                return tin, tout, None
            cache: dict[str, int] = {}
            if made is not None:
                cache["cache_creation_input_tokens"] = made
                tin = made if tin is None else tin + made
            if read is not None:
                cache["cache_read_input_tokens"] = read
                tin = read if tin is None else tin + read
            return tin, tout, cache
    return usage_anthropic(usage)[:3]


def _charge(state: Session, key: str, finals: dict[str, Final], costs: dict[str, Any],
            message: dict[str, Any]) -> None:
    """Count a response's usage (from its last line), cost and model, once."""
    state.charged.add(key)
    usage, where, cost = finals[key]
    try:
        counts = _usage(usage)
        state.usage[key] = counts
        state.totals.add(*counts)
    except Reject as problem:
        problem.field = f"message.{problem.field}"
        raise AtLine(where, problem) from None
    costs[key] = cost
    model = message.get("model")
    if isinstance(model, str) and model and model != "<synthetic>" and model not in state.models:
        state.models.append(model)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: :func:`walk` could not tell a sub-agent's transcript in passing (an agentId no set holds): the caller's own test.
UNSEEN: Any = object()


def walk(state: Session, lines: list[tuple[int, dict[str, Any]]], finals: dict[str, Final],
         costs: dict[str, Any], sessions: dict[str, None]) -> tuple[dict[str, Any], Any]:
    """Read the session's lines into ``state``; its first conversation line (else its first line), and the agentId
    of a sub-agent's own transcript (every conversation line a sidechain of one agent; None if not; :data:`UNSEEN`
    when an agentId cannot be put in a set), found in the same pass."""
    line_types = state.line_types
    uuids = state.uuids
    stamps = state.stamps
    first: dict[str, Any] | None = None
    agent_ids: set[Any] = set()
    sides = True
    odd = False
    for number, line in lines:
        get = line.get
        kind = get("type")
        name = kind if isinstance(kind, str) else repr(kind)
        line_types[name] = line_types.get(name, 0) + 1
        if kind not in READ_TYPES:
            state.unread += 1
            continue
        if first is None:
            first = line
        try:
            agent_ids.add(get("agentId"))
        except TypeError:
            odd = True
        if sides and get("isSidechain") is not True:
            sides = False
        uuid = get("uuid")
        if isinstance(uuid, str):
            if uuid in uuids:  # a line written twice (Claude Code has done so): read once
                state.unread += 1
                continue
            uuids.add(uuid)
        stamp = get("timestamp")
        if stamp is not None:
            stamps.append(stamp)
        session = get("sessionId")
        if isinstance(session, str) and session not in sessions:
            sessions[session] = None
        try:
            _read_line(state, line, number, finals, costs)
        except AtLine:
            raise
        except Reject as problem:
            raise AtLine(number, problem) from None
    agent = None
    if odd:
        agent = UNSEEN
    elif sides and len(agent_ids) == 1:
        (only,) = agent_ids
        agent = only if isinstance(only, str) and only else None
    return lines[0][1] if first is None else first, agent
