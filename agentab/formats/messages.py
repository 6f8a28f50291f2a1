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
outcome      ``outcome``, else        required, not null: bool or number
             ``reward``               (tau-bench: ``reward``)
cost_usd     ``cost_usd``             number >= 0 (tau2-bench: ``agent_cost``)
latency_s    ``latency_s``            number >= 0 (tau2-bench:
                                      ``duration_sec``)
messages     ``messages``, else       the message list (tau-bench: ``traj``)
             ``traj``
============ ======================== =========================================

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

The record counts tokens per step, so each assistant message's tokens go to
exactly one step, and the run's ``tokens`` (the steps' sum) is the sum over
its assistant messages:

* a message with tool calls: on its first call's step; its other calls get 0
  (when the first's count is known);
* a message without tool calls (text to the user): on the next step, or on
  the run's last step if none follows;
* a message without ``usage`` adds nothing; a step's count is absent
  (unknown) when no message given to it reports one;
* a run without steps has no step to carry them: its totals go to
  ``metadata.tokens_in`` / ``metadata.tokens_out`` (the runs table counts
  the tokens of a run without steps as 0).

A usage count that is not an integer >= 0 is a rejection naming it.

Timestamps
----------
A message's ``timestamp`` (ISO-8601 text or epoch seconds, passed on
unchanged) gives ``started_at`` of the steps it calls and ``ended_at`` of the
step it answers. Each step's ``metadata`` has ``message`` (the index of the
assistant message in the list) and ``call_id``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats.files import BOM, JSON_SPACE, open_trace_file
from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap, Format, Item
from agentab.formats._base import Reject as _Reject
from agentab.formats._base import lookup as _lookup

__all__ = ["ANTHROPIC", "FIELDS", "OPENAI", "sniff_anthropic", "sniff_openai"]

#: Default run-level mapping: agentab's name -> the key in the input.
FIELDS: dict[str, str] = {
    "run_id": "run_id", "task_id": "task_id", "seed": "seed", "arm": "arm", "model": "model",
    "harness": "harness", "outcome": "outcome", "cost_usd": "cost_usd", "latency_s": "latency_s",
    "messages": "messages",
}
#: Tried when the default key is in use and absent (tau-bench's names).
_FALLBACK = {"seed": "trial", "outcome": "reward", "messages": "traj"}
#: Longest text kept in metadata from an unmapped run-level key.
_MAX_TEXT = 256

_decode = msgspec.json.decode


def _describe(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --------------------------------------------------------------------------- #
# Run-level fields
# --------------------------------------------------------------------------- #
def _run_fields(rec: dict[str, Any], fields: Mapping[str, str], where: str, line: int
                ) -> tuple[dict[str, Any], list[Any], str]:
    """The record without steps, the message list and its key; raises _Reject."""
    used: set[str] = set()
    found: dict[str, tuple[str, Any]] = {}  # agentab name -> (input name, value)
    for key, name in fields.items():
        value = _lookup(rec, name)
        if (value is _MISSING or value is None) and key in _FALLBACK and name == FIELDS[key]:
            other = _lookup(rec, _FALLBACK[key])
            if other is not _MISSING and other is not None:
                name, value = _FALLBACK[key], other
        if name in rec:
            used.add(name)
        if value is not _MISSING and value is not None:
            found[key] = (name, value)
        elif key == "outcome" and value is None:
            raise _Reject(name, "outcome is null: a run needs the verdict of an external check")

    def missing(key: str) -> _Reject:
        name = fields[key]
        also = f" or {_FALLBACK[key]!r}" if key in _FALLBACK and name == FIELDS[key] else ""
        return _Reject(name, f"no {key}: the run has no {name!r}{also}")

    out: dict[str, Any] = {}
    for key in ("run_id", "task_id"):
        if key in found:
            name, value = found[key]
            if not ((isinstance(value, str) and value) or _is_int(value)):
                raise _Reject(name, f"{key} must be non-empty text or an integer, got {_describe(value)}")
            out[key] = value
        elif key == "task_id":
            raise missing(key)
    if "run_id" not in out:
        out["run_id"] = f"{where}:{line}"
    if "seed" not in found:
        raise missing("seed")
    name, value = found["seed"]
    if not _is_int(value):
        raise _Reject(name, f"seed must be an integer, got {_describe(value)}")
    out["seed"] = value
    if "outcome" not in found:
        raise missing("outcome")
    name, value = found["outcome"]
    if not isinstance(value, (bool, int, float)):
        raise _Reject(name, f"outcome must be true/false or a number, got {_describe(value)}")
    out["outcome"] = value
    meta: dict[str, Any] = {}
    for key in ("arm", "model", "harness"):
        if key in found:
            name, value = found[key]
            if not isinstance(value, str) or not value:
                raise _Reject(name, f"{key} must be non-empty text, got {_describe(value)}")
            if key == "arm":
                out["arm"] = value
            else:
                meta[key] = value
    for key in ("cost_usd", "latency_s"):
        if key in found:
            name, value = found[key]
            if not _is_number(value) or not value >= 0:
                raise _Reject(name, f"{key} must be a number >= 0, got {_describe(value)}")
            out[key] = value
    if "messages" not in found:
        raise missing("messages")
    messages_key, messages = found["messages"]
    if not isinstance(messages, list):
        raise _Reject(messages_key, f"expected a list of messages, got {_describe(messages)}")
    extra: dict[str, Any] = {}
    for key, value in rec.items():
        if key in used:
            continue
        if key == "metadata" and isinstance(value, dict):
            continue
        if value is None or isinstance(value, (bool, int, float)) or (
                isinstance(value, str) and len(value) <= _MAX_TEXT):
            extra[key] = value
    given = rec.get("metadata") if "metadata" not in used else None
    if isinstance(given, dict):
        extra.update(given)
    extra.update(meta)
    if extra:
        out["metadata"] = extra
    return out, messages, messages_key


# --------------------------------------------------------------------------- #
# Observations
# --------------------------------------------------------------------------- #
_ERROR_PREFIX = re.compile(r"\s*error\s*:", re.IGNORECASE)
_OK_STATUS = ("ok", "success")
_OK = object()


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        texts = [text for text in parts if isinstance(text, str)]
        return "".join(texts) if texts else None
    return None


def _error_value(obj: Any) -> Any:
    """The top-level ``error`` of an object when it reports one, else None."""
    if isinstance(obj, dict):
        value = obj.get("error")
        if value:
            return obj if value is True else value
        kind = obj.get("type")
        if isinstance(kind, str) and kind.endswith("_error"):
            return obj
    return None


def _observation(result: dict[str, Any], content: Any) -> dict[str, Any]:
    """``{"status", "content"[, "error"]}`` for a tool result, by the module's error rule."""
    payload: Any = _OK
    text = _OK
    flag = result.get("is_error")
    if isinstance(flag, bool):
        if flag:
            payload = None
    elif result.get("error") is not None:
        flag = result["error"]
        if flag:
            payload = None if flag is True else flag
    elif result.get("status") == "error":
        payload = None
    elif result.get("status") not in _OK_STATUS:
        text = _text_of(content)
        if text is None:
            found = _error_value(content)
        elif _ERROR_PREFIX.match(text):
            found = text
        elif text.lstrip(" \t\r\n")[:1] == "{":
            try:
                found = _error_value(_decode(text))
            except (msgspec.DecodeError, RecursionError):
                found = None
        else:
            found = None
        if found is not None:
            payload = found
    if payload is None:  # flagged: the payload is the content's text (the content when it has none)
        text = _text_of(content) if text is _OK else text
        payload = content if text is None else text
    if payload is _OK:
        return {"status": "ok", "content": content}
    return {"status": "error", "content": content, "error": payload}


# --------------------------------------------------------------------------- #
# Tokens
# --------------------------------------------------------------------------- #
def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None or (type(value) is int and value >= 0):
        return value
    raise _Reject(f"usage.{key}", f"expected a token count (integer >= 0), got {_describe(value)}")


def _usage_openai(usage: Any) -> tuple[int | None, int | None, None]:
    if not isinstance(usage, dict):
        if usage is None:
            return None, None, None
        raise _Reject("usage", f"expected a usage object, got {_describe(usage)}")
    tin = _count(usage, "prompt_tokens")
    if tin is None:
        tin = _count(usage, "input_tokens")
    tout = _count(usage, "completion_tokens")
    if tout is None:
        tout = _count(usage, "output_tokens")
    return tin, tout, None


_CACHE_KEYS = ("cache_creation_input_tokens", "cache_read_input_tokens")


def _usage_anthropic(usage: Any) -> tuple[int | None, int | None, dict[str, int] | None]:
    if not isinstance(usage, dict):
        if usage is None:
            return None, None, None
        raise _Reject("usage", f"expected a usage object, got {_describe(usage)}")
    tin = _count(usage, "input_tokens")
    tout = _count(usage, "output_tokens")
    cache: dict[str, int] | None = None
    for key in _CACHE_KEYS:
        value = _count(usage, key)
        if value is not None:
            cache = cache or {}
            cache[key] = value
            tin = value if tin is None else tin + value
    return tin, tout, cache


class _Tokens:
    """Tokens of assistant messages not yet given to a step (None: none reported)."""

    __slots__ = ("cache", "tin", "tout")

    def __init__(self) -> None:
        self.tin: int | None = None
        self.tout: int | None = None
        self.cache: dict[str, int] | None = None

    def add(self, tin: int | None, tout: int | None, cache: dict[str, int] | None) -> None:
        if tin is not None:
            self.tin = tin if self.tin is None else self.tin + tin
        if tout is not None:
            self.tout = tout if self.tout is None else self.tout + tout
        if cache:
            if self.cache is None:
                self.cache = dict(cache)
            else:
                for key, value in cache.items():
                    self.cache[key] = self.cache.get(key, 0) + value

    def give(self, step: dict[str, Any]) -> None:
        """Add the pending tokens to ``step`` and start afresh."""
        if self.tin is not None:
            step["tokens_in"] = step.get("tokens_in", 0) + self.tin
        if self.tout is not None:
            step["tokens_out"] = step.get("tokens_out", 0) + self.tout
        if self.cache:
            meta = step["metadata"]
            for key, value in self.cache.items():
                meta[key] = meta.get(key, 0) + value
        self.tin = self.tout = self.cache = None


def _finish(out: dict[str, Any], steps: list[dict[str, Any]], pending: _Tokens) -> dict[str, Any]:
    if steps:
        pending.give(steps[-1])
    elif pending.tin is not None or pending.tout is not None or pending.cache:
        meta = out.setdefault("metadata", {})
        if pending.tin is not None:
            meta["tokens_in"] = pending.tin
        if pending.tout is not None:
            meta["tokens_out"] = pending.tout
        if pending.cache:
            meta.update(pending.cache)
    out["steps"] = steps
    return out


def _arguments(value: Any, where: str) -> dict[str, Any]:
    if type(value) is dict:
        return value
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip(" \t\r\n"):
            return {}
        try:
            parsed = _decode(value)
        except (msgspec.DecodeError, RecursionError) as err:
            raise _Reject(where, f"arguments are not valid JSON: {err}") from None
        if isinstance(parsed, dict):
            return parsed
        raise _Reject(where, f"arguments must be a JSON object, got {_describe(parsed)}")
    if isinstance(value, dict):
        return value
    raise _Reject(where, f"arguments must be a JSON object or JSON text, got {_describe(value)}")


def _text(value: Any, where: str, what: str) -> str:
    if type(value) is str and value:
        return value
    raise _Reject(where, f"missing {what}" if value is None else f"expected a {what} (text), got {_describe(value)}")


class _Calls:
    """The calls of a run awaiting an answer, by id; ids may be reused once answered (tau-bench does)."""

    __slots__ = ("answered", "ignored", "mk", "open")

    def __init__(self, mk: str) -> None:
        self.open: dict[str, dict[str, Any]] = {}
        self.ignored: set[str] = set()
        self.answered: dict[str, int] = {}
        self.mk = mk

    def new(self, call_id: str, step: dict[str, Any] | None) -> None:
        """A call (``step`` None: not the agent's); an id still awaiting its answer is ambiguous."""
        if call_id in self.open or call_id in self.ignored:
            raise _Reject("id", f"duplicate tool call id {call_id!r}: an earlier call with it is not answered yet")
        if step is None:
            self.ignored.add(call_id)
        else:
            self.open[call_id] = step

    def answer(self, call_id: Any, where: str, i: int) -> dict[str, Any] | None:
        """The step answered, or None for an answer to a call that is not the agent's."""
        step = self.open.pop(call_id, None) if type(call_id) is str else None
        if step is not None:
            self.answered[call_id] = i
            return step
        if call_id is None:
            raise _Reject(where, "a tool result without the id of its call")
        if not isinstance(call_id, str):
            raise _Reject(where, f"expected a call id (text), got {_describe(call_id)}")
        if call_id in self.ignored:
            self.ignored.discard(call_id)
            return None
        if call_id in self.answered:
            raise _Reject(where, f"call {call_id!r} was already answered by {self.mk}[{self.answered[call_id]}]")
        raise _Reject(where, f"no earlier tool call has id {call_id!r}")


def _step(steps: list[dict[str, Any]], name: str, args: dict[str, Any], i: int, call_id: str, stamp: Any,
          first: dict[str, Any] | None, pending: _Tokens) -> dict[str, Any]:
    """Append a new step; the first of a message takes the pending tokens, the others 0 when those are known."""
    step: dict[str, Any] = {"index": len(steps), "tool": name, "args": args, "observation": None,
                            "metadata": {"message": i, "call_id": call_id}}
    if stamp is not None:
        step["started_at"] = stamp
    if first is None:
        pending.give(step)
    else:
        if "tokens_in" in first:
            step["tokens_in"] = 0
        if "tokens_out" in first:
            step["tokens_out"] = 0
    steps.append(step)
    return step


def _in_message(problem: _Reject, mk: str, i: int) -> _Reject:
    problem.field = f"{mk}[{i}].{problem.field}" if problem.field else f"{mk}[{i}]"
    return problem


# --------------------------------------------------------------------------- #
# Conversion, per format
# --------------------------------------------------------------------------- #
def _openai_calls(msg: dict[str, Any], tool_calls: Any, i: int, steps: list[dict[str, Any]], calls: _Calls,
                  pending: _Tokens) -> None:
    if not isinstance(tool_calls, list):
        raise _Reject("tool_calls", f"expected a list of tool calls, got {_describe(tool_calls)}")
    mine = msg.get("role") == "assistant"
    stamp = msg.get("timestamp")
    first: dict[str, Any] | None = None
    for j, call in enumerate(tool_calls):
        try:
            if not isinstance(call, dict):
                raise _Reject(None, f"expected a tool call object, got {_describe(call)}")
            call_id = _text(call.get("id"), "id", "tool call id")
            if not mine:
                calls.new(call_id, None)
                continue
            function = call.get("function")
            if isinstance(function, dict):
                name = _text(function.get("name"), "function.name", "tool name")
                args = _arguments(function.get("arguments"), "function.arguments")
            else:
                name = _text(call.get("name"), "name", "tool name")
                args = _arguments(call.get("arguments"), "arguments")
            step = _step(steps, name, args, i, call_id, stamp, first, pending)
            calls.new(call_id, step)
            first = first or step
        except _Reject as problem:
            problem.field = f"tool_calls[{j}].{problem.field}" if problem.field else f"tool_calls[{j}]"
            raise


def _openai_steps(out: dict[str, Any], messages: list[Any], mk: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    calls = _Calls(mk)
    pending = _Tokens()
    for i, msg in enumerate(messages):
        try:
            if not isinstance(msg, dict):
                raise _Reject(None, f"expected a message object, got {_describe(msg)}")
            role = msg.get("role")
            if role == "tool":
                step = calls.answer(msg.get("tool_call_id"), "tool_call_id", i)
                if step is not None:
                    step["observation"] = _observation(msg, msg.get("content"))
                    stamp = msg.get("timestamp")
                    if stamp is not None:
                        step["ended_at"] = stamp
                continue
            if role == "assistant":
                usage = msg.get("usage")
                if usage is not None:
                    pending.add(*_usage_openai(usage))
            tool_calls = msg.get("tool_calls")
            if tool_calls:
                _openai_calls(msg, tool_calls, i, steps, calls, pending)
        except _Reject as problem:
            raise _in_message(problem, mk, i) from None
    return _finish(out, steps, pending)


_USE_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def _is_result(kind: Any) -> bool:
    return kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result"))


def _anthropic_blocks(msg: dict[str, Any], content: list[Any], i: int, steps: list[dict[str, Any]], calls: _Calls,
                      pending: _Tokens) -> None:
    mine = msg.get("role") == "assistant"
    stamp = msg.get("timestamp")
    first: dict[str, Any] | None = None
    for j, block in enumerate(content):
        try:
            if not isinstance(block, dict):
                raise _Reject(None, f"expected a content block object, got {_describe(block)}")
            kind = block.get("type")
            if kind in _USE_TYPES:
                call_id = _text(block.get("id"), "id", "tool use id")
                if not mine:
                    calls.new(call_id, None)
                    continue
                step = _step(steps, _text(block.get("name"), "name", "tool name"),
                             _arguments(block.get("input"), "input"), i, call_id, stamp, first, pending)
                calls.new(call_id, step)
                first = first or step
            elif _is_result(kind):
                step = calls.answer(block.get("tool_use_id"), "tool_use_id", i)
                if step is not None:
                    step["observation"] = _observation(block, block.get("content"))
                    if stamp is not None:
                        step["ended_at"] = stamp
        except _Reject as problem:
            problem.field = f"content[{j}].{problem.field}" if problem.field else f"content[{j}]"
            raise


def _anthropic_steps(out: dict[str, Any], messages: list[Any], mk: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    calls = _Calls(mk)
    pending = _Tokens()
    for i, msg in enumerate(messages):
        try:
            if not isinstance(msg, dict):
                raise _Reject(None, f"expected a message object, got {_describe(msg)}")
            if msg.get("role") == "assistant":
                usage = msg.get("usage")
                if usage is not None:
                    pending.add(*_usage_anthropic(usage))
            content = msg.get("content")
            if isinstance(content, list):
                _anthropic_blocks(msg, content, i, steps, calls, pending)
        except _Reject as problem:
            raise _in_message(problem, mk, i) from None
    return _finish(out, steps, pending)


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
        return Item(line, field=None, reason=f"expected a run object, got {_describe(obj)}")
    try:
        out, messages, mk = _run_fields(obj, fields, where, line)
        return Item(line, record=steps_of(out, messages, mk))
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
