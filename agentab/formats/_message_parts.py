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
    return token_count(usage, key, "usage")


def usage_openai(usage: Any) -> tuple[int | None, int | None, None]:
    if not isinstance(usage, dict):
        if usage is None:
            return None, None, None
        raise _Reject("usage", f"expected a usage object, got {describe(usage)}")
    tin = _count(usage, "prompt_tokens")
    if tin is None:
        tin = _count(usage, "input_tokens")
    tout = _count(usage, "completion_tokens")
    if tout is None:
        tout = _count(usage, "output_tokens")
    return tin, tout, None


_CACHE_KEYS = ("cache_creation_input_tokens", "cache_read_input_tokens")


def usage_anthropic(usage: Any) -> tuple[int | None, int | None, dict[str, int] | None]:
    if not isinstance(usage, dict):
        if usage is None:
            return None, None, None
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
    return tin, tout, cache


class Tokens:
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


def finish(out: dict[str, Any], steps: list[dict[str, Any]], pending: Tokens) -> dict[str, Any]:
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
    """Append a new step; the first of a message takes the pending tokens; the others' own share is unknown
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
