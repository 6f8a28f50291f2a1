"""Claude Code session transcripts (``~/.claude/projects/<project>/<session-id>.jsonl``) -> agentab trace records.

Input
-----
One session file is one run: JSON Lines, one object per line, each with a
``type`` (``user``, ``assistant``, ``summary``, ``system``, ``progress``,
``file-history-snapshot``, ``queue-operation``, ...), and for the
conversation's lines ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``,
``isSidechain`` and ``message`` (an Anthropic Messages API message). Either
may be gzip-compressed (``.gz``). In memory: a list of such line dicts is one
session. Each file read gives exactly one :class:`~agentab.formats.Item`.

Run-level fields
----------------
``run_id`` is the ``sessionId`` (a sub-agent's own file, every line
``isSidechain`` with one ``agentId``: ``<sessionId>:agent-<agentId>``, so it
does not collide with its parent session; not when ``run_id`` is mapped to
another key). Claude Code records no task, seed or
external verdict: ``task_id``, ``seed`` and ``outcome`` are read from an
``agentab`` object that a line may carry (``"agentab": {"task_id": "t1",
"seed": 0, "outcome": true}``, added by the harness that ran the session,
like OpenTelemetry's ``agentab.*`` attributes), or mapped with
``load_traces(..., fields={"task_id": "gitBranch", ...})``. Each name is a key
(or dotted path) looked up in the session's lines, the first line that has it
giving the value; not found, the field is named in ``Item.missing`` with a
reason saying so, for the loader to fill from the file path or an outcomes
table (``fields={"path": ...}``, ``outcomes=``), and the session is rejected
with that reason when nothing fills it. ``arm``,
``cost_usd`` and ``latency_s`` may be mapped the same way, and ``model`` /
``harness``, which then replace the ones below.

Steps
-----
Each ``tool_use`` block (also ``server_tool_use``, ``mcp_tool_use``) of an
``assistant`` line is a step, in file order; its observation is the
``tool_result`` block with the same ``tool_use_id`` (in a later ``user``
line), by the error rule of :mod:`agentab.formats.messages` (``is_error:
true`` is an error). Calls are paired by id, not by walking ``parentUuid``.
A Task / Agent call's step also has ``metadata.sub_agent`` (the ``agentId``
it started) and, when its ``toolUseResult`` reports them,
``sub_agent_tool_calls``, ``sub_agent_tokens`` and ``sub_agent_duration_ms``.
A line whose ``uuid`` was already read, and a call whose id was already
seen, are read once (repeats counted: ``metadata.unread_lines``,
``metadata.repeated_calls``). A call never answered keeps observation ``null``; a result whose call is not
in the file (a cut or compacted transcript) is counted in the run's
``metadata.unmatched_results``. Lines with ``isSidechain: true`` are a
sub-agent's (the Task / Agent tool): their steps are kept, with ``agent``
(the line's ``agentId``, else ``"sidechain"``), listed in the run's
``agents``; main-thread steps have no ``agent``.

Tokens
------
Claude Code writes one line per content block of a streamed response, each
repeating the response's ``usage``: usage is counted once per response (same
``message.id``, else ``requestId``), from its last line (whose counts are the
most complete). ``tokens_in`` = ``input_tokens + cache_creation_input_tokens
+ cache_read_input_tokens`` (every input token read), ``tokens_out`` =
``output_tokens``, ``tokens_cached`` = ``cache_read_input_tokens`` (a part of
``tokens_in``); the two cache counts are also in the step's ``metadata``. The
run's totals are the sums over every response (those without tool calls
included); a response's tokens are also on its first step (its other steps:
``tokens_with_step``, and all of them the response's id as ``parallel``).
``costUSD`` (older
versions) is summed per response into ``cost_usd`` when every response has
it; otherwise the partial sum is ``metadata.cost_usd_reported``.

Other lines
-----------
Every line's ``type`` is counted in ``metadata.line_types``; lines of any type
other than ``user`` / ``assistant`` are not read (``metadata.unread_lines``).
``metadata`` also has ``harness`` (``"claude-code"``), ``model`` (and
``models`` when several), ``claude_code_version``, ``cwd``, ``gitBranch``,
``wall_s`` (last minus first timestamp, time waiting for the user included),
``api_error_lines`` (synthetic ``isApiErrorMessage`` lines, which add no usage),
``session_ids`` (when the file's lines carry several, in order; the run id is
the first's).
Malformed JSON, a non-object line, a malformed content block or usage count
is a rejection of the session at that line, naming the field
(``message.content[0].id``); a run-level field of the wrong type is one at
the session's first line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats._message_fields import describe
from agentab.formats._message_parts import (
    call_arguments,
    observation_of,
    required_text,
    usage_anthropic,
)
from agentab.formats._missing import absent
from agentab.formats.files import (
    BOM,
    JSON_SPACE,
    first_keys,
    is_record_keys,
    open_trace_file,
)
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "session_items", "sniff"]

#: Default run-level mapping: the run id is the session's; Claude Code writes no task, seed or verdict, so these
#: are read from an ``agentab`` object a line may carry (the names OpenTelemetry runs use), or mapped.
FIELDS: dict[str, str] = {"run_id": "sessionId", "task_id": "agentab.task_id", "seed": "agentab.seed",
                          "outcome": "agentab.outcome"}
_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_READ_TYPES = frozenset({"user", "assistant"})
_HOW = {"task_id": "the task", "seed": "a seed", "outcome": "an external verdict"}
_decode = msgspec.json.decode
_lines_decoder = msgspec.json.Decoder()


class _AtLine(Reject):
    """A rejection at a given line of the session (the item's line is then that line, not the session's first)."""

    def __init__(self, line: int, problem: Reject) -> None:
        super().__init__(problem.field, problem.reason)
        self.line = line


def _is_result(kind: Any) -> bool:
    return kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result"))


class _Session:
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
_Final = tuple[Any, int, Any]


def _finals(lines: Sequence[tuple[int, dict[str, Any]]]) -> dict[str, _Final]:
    """Each response's last ``usage`` (and its line) and ``costUSD`` (the streamed lines of one response repeat them)."""
    out: dict[str, _Final] = {}
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


def _step(state: _Session, block: dict[str, Any], line: dict[str, Any], number: int, agent: str,
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


def _answer(state: _Session, block: dict[str, Any], line: dict[str, Any]) -> None:
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
        if _is_int(value) and value >= 0:
            meta[name] = value


def _read_line(state: _Session, line: dict[str, Any], number: int, finals: dict[str, _Final],
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


def _charge(state: _Session, key: str, finals: dict[str, _Final], costs: dict[str, Any],
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
        raise _AtLine(where, problem) from None
    costs[key] = cost
    model = message.get("model")
    if isinstance(model, str) and model and model != "<synthetic>" and model not in state.models:
        state.models.append(model)


def _seconds(stamp: Any) -> float | None:
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _finish(state: _Session, costs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps with every agent's leftover tokens placed, and the session-derived metadata."""
    meta: dict[str, Any] = {"harness": "claude-code"}
    for step in state.steps:  # a parallel id only where one response made two calls or more
        if state.parallel[step["parallel"]] < 2:
            del step["parallel"]
        else:
            step["parallel"] = step["parallel"][2:]
    if state.models:
        meta["model"] = state.models[0]
        if len(state.models) > 1:
            meta["models"] = state.models
    reported = [cost for cost in costs.values() if cost is not None]
    if reported:
        if not all(isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 for cost in reported):
            raise Reject("costUSD", "expected costUSD numbers >= 0")
        meta["cost_usd_reported" if len(reported) < len(costs) else "cost_usd"] = float(sum(reported))
    meta["line_types"] = state.line_types
    meta["unread_lines"] = state.unread
    if state.unmatched:
        meta["unmatched_results"] = state.unmatched
    if state.api_errors:
        meta["api_error_lines"] = state.api_errors
    if state.repeated:
        meta["repeated_calls"] = state.repeated
    stamps = state.stamps
    if stamps and all(type(x) is str and x[-1:] == "Z" and len(x) == len(stamps[0]) for x in stamps):
        stamps = [min(stamps), max(stamps)]  # UTC text of one shape sorts as its times do: parse the extremes
    seconds = [s for s in map(_seconds, stamps) if s is not None]
    if len(seconds) > 1 and len(state.stamps) > 1:
        meta["wall_s"] = max(seconds) - min(seconds)
    return state.steps, meta


def _identity(lines: Sequence[tuple[int, dict[str, Any]]], fields: FieldMap,
              missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The run-level fields, each from the first line that has its mapped key; the required ones no line has go
    to ``missing``; raises Reject."""
    found: dict[str, tuple[str, Any]] = {}
    for key, name in fields.items():
        for _, line in lines:
            value = lookup(line, name)
            if value is not MISSING and value is not None:
                found[key] = (name, value)
                break
    out: dict[str, Any] = {}
    for key in ("run_id", "task_id", "seed", "outcome"):
        if key not in found:
            if key == "run_id":
                absent(missing, key, fields[key], f"no run_id: no line has {fields[key]!r}")
            else:
                absent(missing, key, fields[key], f"no {key}: a Claude Code session does not record {_HOW[key]} and "
                                                  f"no line has {fields[key]!r}; map one with "
                                                  f"fields={{{key!r}: <a key of its lines>}}")
            continue
        name, value = found[key]
        ok = {"run_id": lambda v: (isinstance(v, str) and v) or _is_int(v),
              "task_id": lambda v: (isinstance(v, str) and v) or _is_int(v),
              "seed": _is_int, "outcome": lambda v: isinstance(v, (bool, int, float))}[key](value)
        if not ok:
            raise Reject(name, f"{key} has the wrong type: {describe(value)}")
        out[key] = value
    for key in ("arm", "cost_usd", "latency_s", "model", "harness"):
        if key in found:
            name, value = found[key]
            good = (isinstance(value, str) and value) if key in ("arm", "model", "harness") else (
                isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0)
            if not good:
                raise Reject(name, f"{key} has the wrong type or value: {describe(value)}")
            out[key] = value
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sub_agent(lines: Sequence[tuple[int, dict[str, Any]]]) -> str | None:
    """The agentId of a sub-agent's own transcript (every conversation line a sidechain of one agent), else None."""
    agents = {line.get("agentId") for _, line in lines if line.get("type") in _READ_TYPES}
    sides = all(line.get("isSidechain") is True for _, line in lines if line.get("type") in _READ_TYPES)
    if sides and len(agents) == 1:
        (agent,) = agents
        return agent if isinstance(agent, str) and agent else None
    return None


#: :func:`_walk` could not tell a sub-agent's transcript in passing (an agentId no set holds): :func:`_sub_agent`.
_UNSEEN: Any = object()


def _walk(state: _Session, lines: list[tuple[int, dict[str, Any]]], finals: dict[str, _Final],
          costs: dict[str, Any], sessions: dict[str, None]) -> tuple[dict[str, Any], Any]:
    """Read the session's lines into ``state``; its first conversation line (else its first line), and the agentId
    of a sub-agent's own transcript (:func:`_sub_agent`, found in the same pass)."""
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
        if kind not in _READ_TYPES:
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
        except _AtLine:
            raise
        except Reject as problem:
            raise _AtLine(number, problem) from None
    agent = None
    if odd:
        agent = _UNSEEN
    elif sides and len(agent_ids) == 1:
        (only,) = agent_ids
        agent = only if isinstance(only, str) and only else None
    return lines[0][1] if first is None else first, agent


def _convert(lines: list[tuple[int, dict[str, Any]]], fields: FieldMap,
             missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    state = _Session()
    finals = _finals(lines)
    costs: dict[str, Any] = {}
    sessions: dict[str, None] = {}  # in order of first appearance
    first, agent = _walk(state, lines, finals, costs, sessions)
    steps, meta = _finish(state, costs)
    for key, name in (("claude_code_version", "version"), ("cwd", "cwd"), ("gitBranch", "gitBranch")):
        if isinstance(first.get(name), str):
            meta[key] = first[name]
    if len(sessions) > 1:  # e.g. a resumed session's earlier lines
        meta["session_ids"] = list(sessions)
    out = _identity(lines, fields, missing)
    for key in ("model", "harness"):  # a mapping of them replaces what the session gives
        if key in out:
            meta[key] = out.pop(key)
            meta.pop("models", None)
    if agent is _UNSEEN:
        agent = _sub_agent(lines)
    if agent is not None and fields.get("run_id") == FIELDS["run_id"] and "run_id" in out:
        meta["parent_session"] = out["run_id"]
        meta["agent"] = agent
        out["run_id"] = f"{out['run_id']}:agent-{agent}"
    if "cost_usd" in meta and "cost_usd" not in out:
        out["cost_usd"] = meta.pop("cost_usd")
    if state.agents:
        out["agents"] = list(state.agents)
    state.totals.into(out)
    out["steps"] = steps
    out["metadata"] = meta
    return out


def session_items(numbered: Iterable[tuple[int, Any, str | None]], fields: FieldMap | None = None) -> Item:
    """The one item of a session from its ``(line, object, problem)`` triples."""
    plan = {**FIELDS, **(fields or {})}
    lines: list[tuple[int, dict[str, Any]]] = []
    for number, obj, problem in numbered:
        if problem is not None:
            return Item(number, reason=problem)
        if not isinstance(obj, dict):
            return Item(number, reason=f"expected a JSON object on line {number}, got {describe(obj)}")
        lines.append((number, obj))
    if not lines:
        return Item(1, reason="an empty Claude Code session file (no lines)")
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        return Item(lines[0][0], record=_convert(lines, plan, missing), missing=missing or None)
    except _AtLine as problem:
        return Item(problem.line, field=problem.field, reason=problem.reason)
    except Reject as problem:
        return Item(lines[0][0], field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(lines[0][0], reason="JSON nested too deeply to read")


def _numbered(fh: Any) -> Iterator[tuple[int, Any, str | None]]:
    body = fh.read().removeprefix(BOM)
    lines = body.split(b"\n")
    numbers = [number for number, raw in enumerate(lines, start=1) if raw.strip(JSON_SPACE)]
    try:  # every line at once; a malformed line (or a count that differs) is found line by line below
        objects = _lines_decoder.decode_lines(body)
    except (msgspec.DecodeError, RecursionError):
        objects = None
    if objects is not None and len(objects) == len(numbers):
        yield from ((number, obj, None) for number, obj in zip(numbers, objects))
        return
    for number in numbers:
        try:
            yield number, _decode(lines[number - 1]), None
        except msgspec.DecodeError as err:
            yield number, None, f"malformed JSON on line {number}: {err}; the whole session was left out"
        except RecursionError:
            yield number, None, f"JSON nested too deeply to read on line {number}"


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """One item: the session in ``path`` (a record, or a rejection naming the line and field at fault)."""
    with open_trace_file(Path(path)) as fh:
        item = session_items(_numbered(fh), fields)
    yield item


def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
    """One item: the session whose lines (dicts) are ``objects``."""
    yield session_items(((i, obj, None) for i, obj in enumerate(objects, start=1)), fields)


_SIGNS = (re.compile(rb'"sessionId"\s*:'), re.compile(rb'"parentUuid"\s*:'), re.compile(rb'"isSidechain"\s*:'))


def sniff(head: bytes, name: str = "") -> bool:
    """Claude Code sessions: JSON Lines whose lines carry ``sessionId``, ``parentUuid`` and ``isSidechain`` keys.

    Keyed on those three (Claude Code's own line keys, none of them used by another format), and never a file whose
    first record has our record's keys.
    """
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    if body[:1] != b"{":
        return False
    keys = first_keys(head)
    if keys is not None and is_record_keys(keys):
        return False
    return all(sign.search(head) for sign in _SIGNS)


FORMAT = Format(
    name="claude-code",
    summary="Claude Code session transcripts (~/.claude/projects/<project>/<session>.jsonl), one session per file",
    example='{"type": "assistant", "sessionId": "s1", "uuid": "u2", "parentUuid": "u1", "isSidechain": false, '
    '"timestamp": "2026-02-10T21:11:58Z", "agentab": {"task_id": "t1", "seed": 0, "outcome": true}, '
    '"message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}], '
    '"usage": {"input_tokens": 3, "output_tokens": 27}}}',
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
)
