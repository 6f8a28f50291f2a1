"""The pieces both message-list formats build runs from: observations, token usage, tool calls and steps.

A tool result becomes an observation by the error rule of
:mod:`agentab.formats.messages` (:func:`observation_of`); usage objects give
token counts (:func:`usage_openai`, :func:`usage_anthropic`), held by
:class:`Tokens` until the step they belong to; :class:`Calls` pairs tool
calls with their results; :func:`add_step` appends a step, :func:`finish` ends a
run's steps. Problems raise :class:`~agentab.formats._base.Reject`.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from agentab.formats._base import Reject as _Reject
from agentab.formats._base import token_count
from agentab.formats._message_fields import describe
from agentab.formats.record import TOKENS_WITH_STEP

_decode = msgspec.json.decode

_ERROR_PREFIX = re.compile(r"\s*error\s*:", re.IGNORECASE)
_OK_STATUS = ("ok", "success")
_OK = object()


def text_of(content: Any) -> str | None:
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


def observation_of(result: dict[str, Any], content: Any) -> dict[str, Any]:
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
        text = text_of(content)
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
        text = text_of(content) if text is _OK else text
        payload = content if text is None else text
    if payload is _OK:
        return {"status": "ok", "content": content}
    return {"status": "error", "content": content, "error": payload}


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None or (type(value) is int and value >= 0):
        return value
    return token_count(usage, key, "usage")  # the rejection, named as everywhere


#: A model call's usage: (tokens_in, tokens_out, Anthropic cache counts, tokens_cached, tokens_reasoning).
Usage = tuple[int | None, int | None, dict[str, int] | None, int | None, int | None]
_NO_USAGE: Usage = (None, None, None, None, None)


def _detail(usage: dict[str, Any], key: str, part: str) -> int | None:
    """``usage[key][part]`` (OpenAI's ``prompt_tokens_details.cached_tokens``...): a count, or None."""
    details = usage.get(key)
    value = details.get(part) if isinstance(details, dict) else None
    return value if type(value) is int and value >= 0 else None  # a malformed detail is not read, not rejected


_PLAIN = frozenset({"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens"})


def usage_openai(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        if usage is None:
            return _NO_USAGE
        raise _Reject("usage", f"expected a usage object, got {describe(usage)}")
    tin = _count(usage, "prompt_tokens")
    if tin is None:
        tin = _count(usage, "input_tokens")
    tout = _count(usage, "completion_tokens")
    if tout is None:
        tout = _count(usage, "output_tokens")
    if usage.keys() <= _PLAIN:  # the counts alone: no details
        return tin, tout, None, None, None
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
    if cached is None:
        cached = _detail(usage, "input_tokens_details", "cached_tokens")
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    if reasoning is None:
        reasoning = _detail(usage, "output_tokens_details", "reasoning_tokens")
    if cached is not None and (tin is None or cached > tin):
        cached = None  # a part above its whole is not read as a part
    if reasoning is not None and (tout is None or reasoning > tout):
        reasoning = None
    return tin, tout, None, cached, reasoning


_CACHE_KEYS = ("cache_creation_input_tokens", "cache_read_input_tokens")


def usage_anthropic(usage: Any) -> Usage:
    """Anthropic's usage: ``tokens_in`` counts the cache reads and writes too (every input token read), and
    ``tokens_cached`` is the cache reads."""
    if not isinstance(usage, dict):
        if usage is None:
            return _NO_USAGE
        raise _Reject("usage", f"expected a usage object, got {describe(usage)}")
    tin = _count(usage, "input_tokens")
    tout = _count(usage, "output_tokens")
    cache: dict[str, int] | None = None
    for key in _CACHE_KEYS:
        value = _count(usage, key)
        if value is not None:
            cache = cache or {}
            cache[key] = value
            tin = value if tin is None else tin + value
    return tin, tout, cache, None if cache is None else cache.get("cache_read_input_tokens"), None


def _plus(total: int | None, value: int | None) -> int | None:
    return total if value is None else value if total is None else total + value


class Tokens:
    """Tokens of the assistant message being read, until its first step takes them (None: none reported)."""

    __slots__ = ("cache", "cached", "reasoning", "tin", "tout")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Nothing pending (a new message: the last one's tokens, if no step took them, are the run's only)."""
        self.tin: int | None = None
        self.tout: int | None = None
        self.cache: dict[str, int] | None = None
        self.cached: int | None = None
        self.reasoning: int | None = None

    def add(self, tin: int | None, tout: int | None, cache: dict[str, int] | None, cached: int | None = None,
            reasoning: int | None = None) -> None:
        self.tin = _plus(self.tin, tin)
        self.tout = _plus(self.tout, tout)
        self.cached = _plus(self.cached, cached)
        self.reasoning = _plus(self.reasoning, reasoning)
        if cache:
            if self.cache is None:
                self.cache = dict(cache)
            else:
                for key, value in cache.items():
                    self.cache[key] = self.cache.get(key, 0) + value

    def give(self, step: dict[str, Any]) -> None:
        """Put the pending tokens on ``step`` and start afresh."""
        for name, value in (("tokens_in", self.tin), ("tokens_out", self.tout), ("tokens_cached", self.cached),
                            ("tokens_reasoning", self.reasoning)):
            if value is not None:
                step[name] = value
        if self.cache:
            step["metadata"].update(self.cache)
        self.clear()


class Totals:
    """A run's token totals over its assistant messages that report usage (none reports one: unknown)."""

    __slots__ = ("cached", "gap", "reasoning", "tin", "tout")

    def __init__(self) -> None:
        self.tin: int | None = None
        self.tout: int | None = None
        self.cached: int | None = None
        self.reasoning: int | None = None
        self.gap = False  # a message that made tool calls reported no usage: the totals are unknown

    def add(self, tin: int | None, tout: int | None, cache: dict[str, int] | None = None, cached: int | None = None,
            reasoning: int | None = None) -> None:
        self.tin = _plus(self.tin, tin)
        self.tout = _plus(self.tout, tout)
        self.cached = _plus(self.cached, cached)
        self.reasoning = _plus(self.reasoning, reasoning)

    def into(self, out: dict[str, Any]) -> None:
        """Set the run's totals that are known (a part only with its whole)."""
        if self.gap:
            return
        for name, value in (("tokens_in", self.tin), ("tokens_out", self.tout)):
            if value is not None:
                out[name] = value
        if self.cached is not None and self.tin is not None:
            out["tokens_cached"] = self.cached
        if self.reasoning is not None and self.tout is not None:
            out["tokens_reasoning"] = self.reasoning


def finish(out: dict[str, Any], steps: list[dict[str, Any]], totals: Totals) -> dict[str, Any]:
    """The record: its steps and its token totals."""
    totals.into(out)
    out["steps"] = steps
    return out


def parallel(steps: list[dict[str, Any]], start: int, group: Any) -> None:
    """Give the steps from ``start`` on (one message's calls) the id ``group`` when they are two or more."""
    if len(steps) - start >= 2:
        for step in steps[start:]:
            step["parallel"] = group


def check_usage(steps: list[dict[str, Any]], start: int, usage: Any, totals: Totals) -> None:
    """A message without usage that made calls leaves the run's totals unknown (one without calls, such as
    tau2's fixed greeting, was no model call that counts)."""
    if usage is None and len(steps) > start:
        totals.gap = True


def call_arguments(value: Any, where: str) -> dict[str, Any]:
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
        raise _Reject(where, f"arguments must be a JSON object, got {describe(parsed)}")
    if isinstance(value, dict):
        return value
    raise _Reject(where, f"arguments must be a JSON object or JSON text, got {describe(value)}")


def required_text(value: Any, where: str, what: str) -> str:
    if type(value) is str and value:
        return value
    raise _Reject(where, f"missing {what}" if value is None else f"expected a {what} (text), got {describe(value)}")


class Calls:
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
            raise _Reject(where, f"expected a call id (text), got {describe(call_id)}")
        if call_id in self.ignored:
            self.ignored.discard(call_id)
            return None
        if call_id in self.answered:
            raise _Reject(where, f"call {call_id!r} was already answered by {self.mk}[{self.answered[call_id]}]")
        raise _Reject(where, f"no earlier tool call has id {call_id!r}")


def add_step(steps: list[dict[str, Any]], name: str, args: dict[str, Any], i: int, call_id: str, stamp: Any,
             first: dict[str, Any] | None, pending: Tokens) -> dict[str, Any]:
    """Append a new step; the first of a message takes the message's tokens; the others' own share is unknown
    (absent), their model call counted at the first (``metadata.tokens_with_step``) when its count is known."""
    step: dict[str, Any] = {"index": len(steps), "tool": name, "args": args, "observation": None,
                            "metadata": {"message": i, "call_id": call_id}}
    if stamp is not None:
        step["started_at"] = stamp
    if first is None:
        pending.give(step)
    elif "tokens_in" in first or "tokens_out" in first:
        step["metadata"][TOKENS_WITH_STEP] = first["index"]
    steps.append(step)
    return step


def in_message(problem: _Reject, mk: str, i: int) -> _Reject:
    problem.field = f"{mk}[{i}].{problem.field}" if problem.field else f"{mk}[{i}]"
    return problem
