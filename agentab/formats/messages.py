"""OpenAI Chat Completions and Anthropic Messages logs -> agentab trace records.

Input
-----
One run per JSON object: run-level fields plus a message list. JSON Lines
(one run per line; blank lines skipped), or a ``.json`` file holding an
array of runs or one run object (or JSON Lines); either may be
gzip-compressed (``.gz``).
In memory: a list of such dicts. Every run read gives exactly one
:class:`~agentab.formats.Item`: a trace record, or a rejection naming the
input field at fault (``messages[3].tool_call_id``).

Run-level fields
----------------
Looked up under these names, each overridable with
``load_traces(..., fields={"task_id": "my_key"})``; a dotted name
(``"info.task_id"``) walks into nested objects (a key that itself contains
the dot is tried first). ``null`` is the same as absent.

============ ======================== =========================================
agentab      default key              notes
============ ======================== =========================================
run_id       ``run_id``               absent: ``"<source>:<line>"`` (the file
                                      path as given, or the in-memory source
                                      name, and the line / array position)
task_id      ``task_id``              required: text or integer
seed         ``seed``, else ``trial`` required: integer (tau-bench: ``trial``)
arm          ``arm``                  text
model        ``model``                text, to ``metadata.model``
harness      ``harness``              text, to ``metadata.harness``
outcome      ``outcome``, else        required: bool or number
             ``reward``               (tau-bench: ``reward``)
cost_usd     ``cost_usd``             number >= 0 (tau2-bench: ``agent_cost``)
latency_s    ``latency_s``            number >= 0 (tau2-bench:
                                      ``duration_sec``)
messages     ``messages``, else       the message list (tau-bench: ``traj``)
             ``traj``
============ ======================== =========================================

A required field (task_id, seed, outcome) the run lacks (or a null
outcome: not yet judged) is named in ``Item.missing``, for the loader to
fill from the file path or an outcomes table (``fields={"path": ...}``,
``outcomes=``); the run is rejected with that reason when nothing fills it.
The "else" names are tried only while the default name is in use. Values are
never converted: a seed of ``"3"`` or ``2.0`` is rejected, not read as 3.
Every other top-level key whose value is a small scalar (null, a boolean, a
number, or text of at most 256 characters) is kept in ``metadata`` under its
own name; lists, objects and longer text (system prompts, instructions,
expected actions) are dropped. A top-level ``metadata`` object is kept whole.

Steps (``"openai"``)
--------------------
Each entry of an assistant message's ``tool_calls`` is a step, in order:
``{"id", "type": "function", "function": {"name", "arguments"}}`` with the
arguments as JSON text (a JSON object; empty text or null means ``{}``;
malformed JSON or a non-object is a rejection naming
``messages[i].tool_calls[j].function.arguments``), or the flattened form
``{"id", "name", "arguments": {...}}`` used by tau-bench logs (arguments an
object, or JSON text). Its observation is the ``tool`` message with the
matching ``tool_call_id``. Tool calls made by the user (tau2-bench's user
simulator, ``role: "user"``) are not the agent's steps; their answers are
skipped. System and user messages and the assistant's text are not kept.

Steps (``"anthropic"``)
-----------------------
Each ``{"type": "tool_use", "id", "name", "input"}`` block (also
``server_tool_use`` and ``mcp_tool_use``) of an assistant message's
``content`` list is a step; its observation is the ``tool_result`` block
(or ``*_tool_result`` block) with the matching ``tool_use_id``, usually in
the next user message.

Observations and the error rule
-------------------------------
The observation is ``{"status": "ok" | "error", "content": <the result's
content, kept as given>}``, plus ``"error": <payload>`` when failed. A result
is an **error** when:

1. it carries an explicit flag, which then decides alone: ``is_error`` (a
   bool), ``error`` (not null: true, or a non-empty payload such as a message
   or an object; false or empty means ok; tau2-bench has one), or ``status``
   ``"error"`` (``"ok"`` / ``"success"`` mean ok);
2. otherwise, by its content: text (a string, or the ``text`` of text parts)
   starting with ``error:`` in any case (``"Error: flight not found"``, as
   tau-bench's tools answer), or a JSON object with a top-level ``"error"``
   that is not null/false/empty (``{"error": "timeout"}``), or (Anthropic
   server tools) an object whose ``type`` ends with ``_error``.

The payload is the flag's value when it is not a bool, the ``"error"`` value
of a JSON object, else the content's text (the content itself if it has no
text parts). Text such as ``"Error executing tool"`` (no colon) or ``"0
errors"`` is not an error: the rule errs towards ok.

A call never answered keeps observation ``null`` (a non-terminated step, not
dropped). A result is matched to the earlier call with its id that is still
awaiting an answer; a call id may be reused once its call was answered
(tau-bench's logs do). Rejections, naming the field: a result whose id
matches no earlier call, a result without an id, a second answer to a call,
a call reusing the id of a call still unanswered, a call without an id or a
tool name.

Tokens
------
Only assistant messages' ``usage`` counts (tau2-bench's user messages carry
the user simulator's). ``"openai"``: ``prompt_tokens`` / ``completion_tokens``
(or ``input_tokens`` / ``output_tokens``); OpenAI's prompt tokens already
include cached ones. ``"anthropic"``: ``tokens_in`` is ``input_tokens +
cache_creation_input_tokens + cache_read_input_tokens`` (every input token
the model read, comparable with OpenAI's prompt tokens); ``tokens_out`` is
``output_tokens``; the two cache counts are also kept in the step's
``metadata`` under their own names.

OpenAI's ``prompt_tokens_details.cached_tokens`` and
``completion_tokens_details.reasoning_tokens`` (or ``input_tokens_details`` /
``output_tokens_details``) are ``tokens_cached`` / ``tokens_reasoning``;
Anthropic's ``cache_read_input_tokens`` is ``tokens_cached``.

The run's ``tokens_in`` / ``tokens_out`` / ``tokens_cached`` /
``tokens_reasoning`` are the sums over its assistant messages that report
usage, those without tool calls (a final answer, a refusal) included; no
message reporting one (tau-bench's logs) leaves them unknown, never 0, and so
does a message that made tool calls without usage. Each message's tokens are
also on one step:

* a message with tool calls: on its first call's step; its other calls'
  own counts are absent (unknown: one response's tokens cannot be split
  between its calls), with ``metadata.tokens_with_step`` naming the first
  call's step when its count is known, and every call of the message the
  same ``parallel`` id (the message's index) when it made two or more;
* a message without tool calls (text to the user): in the run's totals only.

A usage count that is not an integer >= 0 is a rejection naming it.

Timestamps
----------
A message's ``timestamp`` (ISO-8601 text or epoch seconds, passed on
unchanged) gives ``started_at`` of the steps it calls and ``ended_at`` of the
step it answers. Each step's ``metadata`` has ``message`` (the index of the
assistant message in the list) and ``call_id``.

This module converts each format's message list into steps and reads the
files; the run-level fields are read in :mod:`._message_fields`, and the
pieces both formats build steps from are in :mod:`._message_parts`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import FieldMap, Format, Item
from agentab.formats._base import Reject as _Reject
from agentab.formats._message_fields import FIELDS, describe, run_fields
from agentab.formats._message_parts import (
    Calls,
    Tokens,
    Totals,
    add_step,
    call_arguments,
    check_usage,
    finish,
    in_message,
    observation_of,
    parallel,
    required_text,
    usage_anthropic,
    usage_openai,
)
from agentab.formats.files import (
    BOM,
    JSON_SPACE,
    first_keys,
    is_record_keys,
    open_trace_file,
)

__all__ = ["ANTHROPIC", "FIELDS", "OPENAI", "sniff_anthropic", "sniff_openai"]


_decode = msgspec.json.decode


# --------------------------------------------------------------------------- #
# Conversion, per format
# --------------------------------------------------------------------------- #
def _openai_calls(msg: dict[str, Any], tool_calls: Any, i: int, steps: list[dict[str, Any]], calls: Calls,
                  pending: Tokens) -> None:
    if not isinstance(tool_calls, list):
        raise _Reject("tool_calls", f"expected a list of tool calls, got {describe(tool_calls)}")
    mine = msg.get("role") == "assistant"
    stamp = msg.get("timestamp")
    first: dict[str, Any] | None = None
    start = len(steps)
    for j, call in enumerate(tool_calls):
        try:
            if not isinstance(call, dict):
                raise _Reject(None, f"expected a tool call object, got {describe(call)}")
            call_id = required_text(call.get("id"), "id", "tool call id")
            if not mine:
                calls.new(call_id, None)
                continue
            function = call.get("function")
            if isinstance(function, dict):
                name = required_text(function.get("name"), "function.name", "tool name")
                args = call_arguments(function.get("arguments"), "function.arguments")
            else:
                name = required_text(call.get("name"), "name", "tool name")
                args = call_arguments(call.get("arguments"), "arguments")
            step = add_step(steps, name, args, i, call_id, stamp, first, pending)
            calls.new(call_id, step)
            first = first or step
        except _Reject as problem:
            problem.field = f"tool_calls[{j}].{problem.field}" if problem.field else f"tool_calls[{j}]"
            raise
    parallel(steps, start, i)


def _openai_steps(out: dict[str, Any], messages: list[Any], mk: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    calls = Calls(mk)
    pending = Tokens()
    totals = Totals()
    for i, msg in enumerate(messages):
        try:
            if not isinstance(msg, dict):
                raise _Reject(None, f"expected a message object, got {describe(msg)}")
            role = msg.get("role")
            if role == "tool":
                step = calls.answer(msg.get("tool_call_id"), "tool_call_id", i)
                if step is not None:
                    step["observation"] = observation_of(msg, msg.get("content"))
                    stamp = msg.get("timestamp")
                    if stamp is not None:
                        step["ended_at"] = stamp
                continue
            if role == "assistant":
                pending.clear()
                usage = msg.get("usage")
                if usage is not None:
                    counts = usage_openai(usage)
                    pending.add(*counts)
                    totals.add(*counts)
            tool_calls = msg.get("tool_calls")
            if tool_calls:
                start = len(steps)
                _openai_calls(msg, tool_calls, i, steps, calls, pending)
                if role == "assistant":
                    check_usage(steps, start, msg.get("usage"), totals)
        except _Reject as problem:
            raise in_message(problem, mk, i) from None
    return finish(out, steps, totals)


_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def _is_result(kind: Any) -> bool:
    return kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result"))


def _anthropic_blocks(msg: dict[str, Any], content: list[Any], i: int, steps: list[dict[str, Any]], calls: Calls,
                      pending: Tokens) -> None:
    mine = msg.get("role") == "assistant"
    stamp = msg.get("timestamp")
    first: dict[str, Any] | None = None
    start = len(steps)
    for j, block in enumerate(content):
        try:
            if not isinstance(block, dict):
                raise _Reject(None, f"expected a content block object, got {describe(block)}")
            kind = block.get("type")
            if kind in _USE_TYPES:
                call_id = required_text(block.get("id"), "id", "tool use id")
                if not mine:
                    calls.new(call_id, None)
                    continue
                step = add_step(steps, required_text(block.get("name"), "name", "tool name"),
                             call_arguments(block.get("input"), "input"), i, call_id, stamp, first, pending)
                calls.new(call_id, step)
                first = first or step
            elif _is_result(kind):
                step = calls.answer(block.get("tool_use_id"), "tool_use_id", i)
                if step is not None:
                    step["observation"] = observation_of(block, block.get("content"))
                    if stamp is not None:
                        step["ended_at"] = stamp
        except _Reject as problem:
            problem.field = f"content[{j}].{problem.field}" if problem.field else f"content[{j}]"
            raise
    parallel(steps, start, i)


def _anthropic_steps(out: dict[str, Any], messages: list[Any], mk: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    calls = Calls(mk)
    pending = Tokens()
    totals = Totals()
    for i, msg in enumerate(messages):
        try:
            if not isinstance(msg, dict):
                raise _Reject(None, f"expected a message object, got {describe(msg)}")
            if msg.get("role") == "assistant":
                pending.clear()
                usage = msg.get("usage")
                if usage is not None:
                    counts = usage_anthropic(usage)
                    pending.add(*counts)
                    totals.add(*counts)
            content = msg.get("content")
            if isinstance(content, list):
                start = len(steps)
                _anthropic_blocks(msg, content, i, steps, calls, pending)
                if msg.get("role") == "assistant":
                    check_usage(steps, start, msg.get("usage"), totals)
        except _Reject as problem:
            raise in_message(problem, mk, i) from None
    return finish(out, steps, totals)


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #
def _plan(fields: FieldMap | None) -> dict[str, str]:
    plan = dict(FIELDS)
    if fields:
        plan.update(fields)
    return plan


def _convert(obj: Any, line: int, where: str, fields: dict[str, str], steps_of: Any) -> Item:
    if not isinstance(obj, dict):
        return Item(line, field=None, reason=f"expected a run object, got {describe(obj)}")
    try:
        out, messages, mk, lacking = run_fields(obj, fields, where, line)
        return Item(line, record=steps_of(out, messages, mk), missing=lacking or None)
    except _Reject as problem:
        return Item(line, field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read")


def _is_array_file(name: str) -> bool:
    name = name.lower().removesuffix(".gz")
    return name.endswith(".json")


def _lines(data: Any, first: int = 1) -> Iterator[tuple[int, Any, str | None]]:
    for number, raw in enumerate(data, start=first):
        if number == 1:
            raw = raw.removeprefix(BOM)
        if not raw.strip(JSON_SPACE):
            continue
        try:
            yield number, _decode(raw), None
        except msgspec.DecodeError as err:
            yield number, None, f"malformed JSON: {err}"
        except RecursionError:
            yield number, None, "JSON nested too deeply to read"


def _objects_in(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """``(line, object, None)`` or ``(line, None, reason)`` for each run of a file."""
    with open_trace_file(path) as fh:
        if not _is_array_file(path.name):
            yield from _lines(fh)
            return
        data = fh.read().removeprefix(BOM)
    body = data.lstrip(JSON_SPACE)
    if not body:
        return
    first_line = data.count(b"\n", 0, len(data) - len(body)) + 1
    try:
        parsed = _decode(body)
    except msgspec.DecodeError as err:
        if body[:1] == b"{":  # JSON Lines in a .json file
            yield from _lines(data.splitlines(keepends=True))
            return
        yield first_line, None, f"malformed JSON: {err}; the whole file was left out"
        return
    except RecursionError:
        yield first_line, None, "JSON nested too deeply to read; the whole file was left out"
        return
    if isinstance(parsed, list):
        for position, obj in enumerate(parsed, start=1):
            yield position, obj, None
    else:
        yield first_line, parsed, None


def _reader(steps_of: Any):
    def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
        plan = _plan(fields)
        where = str(path)
        for line, obj, problem in _objects_in(Path(path)):
            if problem is not None:
                yield Item(line, reason=problem)
            else:
                yield _convert(obj, line, where, plan, steps_of)

    def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
        plan = _plan(fields)
        for position, obj in enumerate(objects, start=1):
            yield _convert(obj, position, name, plan, steps_of)

    return read_file, read_objects


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
_ANTHROPIC_SIGN = re.compile(rb'"type"\s*:\s*"(?:tool_use|tool_result)"')
_OPENAI_SIGN = re.compile(rb'"(?:tool_calls|tool_call_id)"\s*:')
_ROLE = re.compile(rb'"role"\s*:')
_LIST_KEY = re.compile(rb'"(?:messages|traj)"\s*:\s*\[')
_TRAJ = re.compile(rb'"traj"\s*:\s*\[')
_INSPECT = re.compile(rb'"eval"\s*:\s*\{')
_STEPS = re.compile(rb'"steps"\s*:\s*\[')
_RUN_ID = re.compile(rb'"run_id"\s*:')


def _other_format(head: bytes, name: str) -> bool:
    """Not JSON, or another format's signature: OTel, Inspect, agentab's own record."""
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    if body[:1] not in (b"{", b"[") or name.lower().endswith(".eval"):
        return True
    if b'"resourceSpans"' in head or _INSPECT.search(head):
        return True
    keys = first_keys(head)
    if keys is not None:  # the first record's own keys: a tool argument named "traj" is not a message list
        return is_record_keys(keys)
    return bool(_STEPS.search(head) and _RUN_ID.search(head) and not _LIST_KEY.search(head))


def sniff_anthropic(head: bytes, name: str = "") -> bool:
    """Anthropic Messages logs: ``tool_use`` / ``tool_result`` content blocks in a message list."""
    return bool(_ANTHROPIC_SIGN.search(head) and _ROLE.search(head)) and not _other_format(head, name)


def sniff_openai(head: bytes, name: str = "") -> bool:
    """Chat Completions logs: a message list with ``role`` and ``tool_calls`` / ``tool_call_id``, or a tau-bench ``traj``.

    A message list without any tool call yet seen (``"messages": [`` with
    ``"role"``) also counts, unless it shows Anthropic content blocks.
    """
    if _ANTHROPIC_SIGN.search(head) or _other_format(head, name):
        return False
    if _TRAJ.search(head):
        return True
    return bool(_ROLE.search(head) and (_OPENAI_SIGN.search(head) or _LIST_KEY.search(head)))


_read_openai, _objects_openai = _reader(_openai_steps)
_read_anthropic, _objects_anthropic = _reader(_anthropic_steps)

OPENAI = Format(
    name="openai",
    summary="OpenAI Chat Completions message lists (tool_calls / tool messages), one run per line; tau-bench logs",
    example='{"run_id": "r1", "task_id": "t1", "seed": 0, "outcome": true, "messages": [{"role": "assistant", '
    '"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\\"path\\": \\".\\"}"}}], '
    '"usage": {"prompt_tokens": 812, "completion_tokens": 44}}, {"role": "tool", "tool_call_id": "c1", '
    '"content": "README.md"}]}',
    fields=FIELDS,
    sniff=sniff_openai,
    read_file=_read_openai,
    read_objects=_objects_openai,
)

ANTHROPIC = Format(
    name="anthropic",
    summary="Anthropic Messages lists (tool_use / tool_result content blocks), one run per line",
    example='{"run_id": "r1", "task_id": "t1", "seed": 0, "outcome": true, "messages": [{"role": "assistant", '
    '"content": [{"type": "tool_use", "id": "tu1", "name": "ls", "input": {"path": "."}}], '
    '"usage": {"input_tokens": 812, "output_tokens": 44}}, {"role": "user", "content": '
    '[{"type": "tool_result", "tool_use_id": "tu1", "content": "README.md"}]}]}',
    fields=FIELDS,
    sniff=sniff_anthropic,
    read_file=_read_anthropic,
    read_objects=_objects_anthropic,
)
