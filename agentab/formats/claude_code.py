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

import functools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats._claude_code_fast import Dicts, default_found, lines_of, plain_fields, uniform
from agentab.formats._claude_code_fast import walk as fast_walk
from agentab.formats._claude_code_lines import (
    UNSEEN,
    AtLine,
    Session,
    final_usages,
    is_int,
    walk,
)
from agentab.formats._fast_path import Slow, prepared
from agentab.formats._message_fields import describe
from agentab.formats._missing import absent
from agentab.formats.files import (
    BOM,
    JSON_SPACE,
    first_keys,
    is_record_keys,
    object_lines,
    read_trace_bytes,
)

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "session_items", "sniff"]

#: Default run-level mapping: the run id is the session's; Claude Code writes no task, seed or verdict, so these
#: are read from an ``agentab`` object a line may carry (the names OpenTelemetry runs use), or mapped.
FIELDS: dict[str, str] = {"run_id": "sessionId", "task_id": "agentab.task_id", "seed": "agentab.seed",
                          "outcome": "agentab.outcome"}
_HOW = {"task_id": "the task", "seed": "a seed", "outcome": "an external verdict"}
_decode = msgspec.json.decode
_lines_decoder = msgspec.json.Decoder()
_EXACT = 2**53  # an integer outcome the fast path gives as a float: exactly


def _seconds(stamp: Any) -> float | None:
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _finish(state: Session, costs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps with every agent's leftover tokens placed, and the session-derived metadata."""
    for step in state.steps:  # a parallel id only where one response made two calls or more
        if state.parallel[step["parallel"]] < 2:
            del step["parallel"]
        else:
            step["parallel"] = step["parallel"][2:]
    return state.steps, _session_meta(state, costs)


def _session_meta(state: Session, costs: dict[str, Any], uniform: bool = False) -> dict[str, Any]:
    """The metadata a walk of the session's lines gives (both walks: the usual one, the fast one; ``uniform``:
    every time is known to be UTC text of one shape)."""
    meta: dict[str, Any] = {"harness": "claude-code"}
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
    if stamps and (uniform or all(type(x) is str and x[-1:] == "Z" and len(x) == len(stamps[0]) for x in stamps)):
        stamps = [min(stamps), max(stamps)]  # UTC text of one shape sorts as its times do: parse the extremes
    seconds = [s for s in map(_seconds, stamps) if s is not None]
    if len(seconds) > 1 and len(state.stamps) > 1:
        meta["wall_s"] = max(seconds) - min(seconds)
    return meta


def _is_id(value: Any) -> bool:
    return bool((isinstance(value, str) and value) or is_int(value))


#: The check of each required run-level field's value.
_RIGHT_TYPE = {"run_id": _is_id, "task_id": _is_id, "seed": is_int,
               "outcome": lambda value: isinstance(value, (bool, int, float))}


def _first_values(lines: Iterable[dict[str, Any]], fields: FieldMap) -> dict[str, tuple[str, Any]]:
    """Each mapped field's key and first value that is not null, from the first line that has it (``lines`` is
    iterated once per field)."""
    found: dict[str, tuple[str, Any]] = {}
    for key, name in fields.items():
        for line in lines:
            value = lookup(line, name)
            if value is not MISSING and value is not None:
                found[key] = (name, value)
                break
    return found


def _identity(found: dict[str, tuple[str, Any]], fields: FieldMap,
              missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The run-level fields from what :func:`_first_values` found (or the fast path's ``default_found``); the
    required ones no line has go to ``missing``; raises Reject."""
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
        if not _RIGHT_TYPE[key](value):
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


def _convert(lines: list[tuple[int, dict[str, Any]]], fields: FieldMap,
             missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    state = Session()
    finals = final_usages(lines)
    costs: dict[str, Any] = {}
    sessions: dict[str, None] = {}  # in order of first appearance
    first, agent = walk(state, lines, finals, costs, sessions)
    steps, meta = _finish(state, costs)
    if agent is UNSEEN:  # an agentId no set holds (an object, a list): not one text agentId on every line
        agent = None
    found = _identity(_first_values([line for _, line in lines], fields), fields, missing)
    out = _run(state, found, first, agent, sessions, meta, fields)
    out["steps"] = steps
    out["metadata"] = meta
    return out


def _run(state: Session, out: dict[str, Any], first: dict[str, Any], agent: str | None,
         sessions: dict[str, None], meta: dict[str, Any], fields: FieldMap) -> dict[str, Any]:
    """The run-level fields (both walks; ``out``: what :func:`_identity` found), completing ``meta``: the
    record's keys but its steps and metadata."""
    for key, name in (("claude_code_version", "version"), ("cwd", "cwd"), ("gitBranch", "gitBranch")):
        if isinstance(first.get(name), str):
            meta[key] = first[name]
    if len(sessions) > 1:  # e.g. a resumed session's earlier lines
        meta["session_ids"] = list(sessions)
    for key in ("model", "harness"):  # a mapping of them replaces what the session gives
        if key in out:
            meta[key] = out.pop(key)
            meta.pop("models", None)
    if agent is not None and fields.get("run_id") == FIELDS["run_id"] and "run_id" in out:
        meta["parent_session"] = out["run_id"]
        meta["agent"] = agent
        out["run_id"] = f"{out['run_id']}:agent-{agent}"
    if "cost_usd" in meta and "cost_usd" not in out:
        out["cost_usd"] = meta.pop("cost_usd")
    if state.agents:
        out["agents"] = list(state.agents)
    state.totals.into(out)
    return out


def _fast_item(body: bytes, fields: FieldMap, keys: tuple[tuple[str, str, bool], ...]) -> Item | None:
    """The session's item built in columns (:mod:`._claude_code_fast`) when it is the plain case, else None
    (``keys``: what :func:`~._claude_code_fast.plain_fields` gives for ``fields``)."""
    source = lines_of(body)
    if source is None or not source.lines:
        return None
    try:
        state = Session()
        costs: dict[str, Any] = {}
        sessions: dict[str, None] = {}
        missing: dict[str, tuple[str | None, str]] = {}
        first_values = (default_found(source.lines, FIELDS) if fields == FIELDS
                        else _first_values(Dicts(source, keys), fields))
        found = _identity(first_values, fields, missing)
        if missing:  # a run the loader completes is given as a dict (Item.missing), by the usual path
            return None
        steps, first, agent = fast_walk(state, source, costs, sessions)
        meta = _session_meta(state, costs, uniform=uniform(state.stamps))
        out = _run(state, found, source.as_dict(first, keys), agent, sessions, meta, fields)
        for key in ("cost_usd", "latency_s"):
            if key in out:
                if not math.isfinite(out[key]):
                    return None  # the schema's judgement
                out[key] = float(out[key])
        outcome = out.get("outcome", False)
        if type(outcome) is not bool and not (type(outcome) is int and abs(outcome) <= _EXACT) and not (
                type(outcome) is float and math.isfinite(outcome)):
            return None  # the schema's judgement
        out["metadata"] = meta
        totals = {name: out.pop(name) for name in ("tokens_in", "tokens_out", "tokens_cached") if name in out}
        run = prepared(out, steps, totals, text_times=True)
        return Item(source.numbers[0], record=run._replace(agents=out.get("agents")))
    except (Slow, Reject, RecursionError, OverflowError):
        return None


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
    except AtLine as problem:
        return Item(problem.line, field=problem.field, reason=problem.reason)
    except Reject as problem:
        return Item(lines[0][0], field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(lines[0][0], reason="JSON nested too deeply to read")


def _numbered(body: bytes) -> Iterator[tuple[int, Any, str | None]]:
    lines = body.split(b"\n")
    numbers, whole = object_lines(body, lines)
    try:  # every line at once; a malformed line (or a count that differs) is found line by line below
        objects = _lines_decoder.decode_lines(body) if whole else None
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


@functools.lru_cache(maxsize=8)
def _plain_fields(plan: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str, bool], ...] | None:
    """:func:`~._claude_code_fast.plain_fields` of a mapping, found once per mapping (not once per file)."""
    return plain_fields(dict(plan))


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """One item: the session in ``path`` (a record, or a rejection naming the line and field at fault)."""
    body = read_trace_bytes(path if isinstance(path, Path) else Path(path)).removeprefix(BOM)  # the loader: a Path
    plan = {**FIELDS, **(fields or {})}
    try:
        keys = _plain_fields(tuple(plan.items()))
    except TypeError:  # a value no cache holds (the mapping's check names it)
        keys = plain_fields(plan)
    item = None if keys is None else _fast_item(body, plan, keys)
    yield item if item is not None else session_items(_numbered(body), fields)


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
