"""Steps from the messages of model calls, for runs that record no tool span.

An instrumentation of the model client alone (OpenLLMetry's or OpenInference's OpenAI instrumentation,
without a framework's tool spans) records each model call with its messages as indexed attributes: the
tool calls the model asked for in its output, their results in the next call's input. Such a run has
no tool span, yet it called tools: reading it as 0 steps would be silently wrong. So, in a run without
tool spans, every tool call of a model span's output becomes a step (:func:`with_message_steps`):

====================  ========================================================================
GenAI conventions     ``gen_ai.output.messages`` (JSON: parts of type ``tool_call`` with ``name``,
(OpenLLMetry 0.62)    ``arguments``, ``id``); results: ``gen_ai.input.messages`` (parts of type
                      ``tool_call_response`` with ``id``, ``response``)
OpenLLMetry (older)   ``gen_ai.completion.<i>.tool_calls.<j>.name`` / ``.arguments`` / ``.id``;
                      results: ``gen_ai.prompt.<k>.role`` = ``tool``, ``.tool_call_id``, ``.content``
OpenInference         ``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.function.name`` /
                      ``.function.arguments`` / ``.tool_call.id``; results:
                      ``llm.input_messages.<k>.message.role`` = ``tool``, ``.tool_call_id``, ``.content``
====================  ========================================================================

A step starts when its model call ends and ends when the first later model call whose input holds its
result starts (that result is its observation, status ``ok``: messages carry no error flag); a call
whose result no later model call holds was never answered in the trace (observation null). The model
call's tokens then go to its first tool call, as for tool spans. A run whose tool calls are recorded
only as message events (pydantic-ai's instrumentation version 1: the ``events`` attribute) is rejected
by name rather than read as 0 steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from agentab.formats._base import Reject
from agentab.formats.otel._rules import MODEL, TOOL
from agentab.formats.otel._spans import Span, _AnyValue, any_value, where

__all__ = ["with_message_steps", "has_message_tool_calls"]

_CALLS = (
    re.compile(r"gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.(name|arguments|id)"),
    re.compile(r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(?:function\.)?(name|arguments|id)"),
)
_INPUTS = (
    re.compile(r"gen_ai\.prompt\.(\d+)\.(role|content|tool_call_id)"),
    re.compile(r"llm\.input_messages\.(\d+)\.message\.(role|content|tool_call_id)"),
)
OUTPUT_MESSAGES, INPUT_MESSAGES = "gen_ai.output.messages", "gen_ai.input.messages"
_EVENTS = ("events", "all_messages_events")  # pydantic-ai's instrumentation version 1
_JSON = msgspec.json.Decoder()


def has_message_tool_calls(keys: Iterable[str]) -> bool:
    """Whether attribute keys include a model output's tool call or a version-1 message event list (the
    column reader leaves such files to the span-by-span reader when a run has no tool span)."""
    return any(key in _EVENTS or key == OUTPUT_MESSAGES or any(pattern.fullmatch(key) for pattern in _CALLS)
               for key in keys)


def _json_messages(span: Span, key: str) -> list[dict[str, Any]]:
    """The messages of a GenAI-conventions message list attribute (``gen_ai.input.messages`` /
    ``gen_ai.output.messages``: JSON text of ``[{"role": ..., "parts": [...]}]``); [] when absent or not
    such a list."""
    value = any_value(span.attrs.get(key))
    if isinstance(value, str):
        try:
            value = _JSON.decode(value)
        except msgspec.DecodeError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _parts(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    parts = message.get("parts")
    return [p for p in parts if isinstance(p, dict) and p.get("type") == kind] if isinstance(parts, list) else []


def _calls(span: Span) -> list[tuple[tuple[int, int], dict[str, Any], str]]:
    """The tool calls of a model span's output, in order: ((message, call), {name, arguments, id}, the
    attribute prefix)."""
    if OUTPUT_MESSAGES in span.attrs:  # the GenAI conventions: parts of type tool_call
        return [((m, c), part, f"{OUTPUT_MESSAGES}[{m}].parts.")
                for m, message in enumerate(_json_messages(span, OUTPUT_MESSAGES))
                for c, part in enumerate(_parts(message, "tool_call"))]
    found: dict[tuple[int, int], tuple[dict[str, Any], str]] = {}
    for key in span.attrs:
        for pattern in _CALLS:
            match = pattern.fullmatch(key)
            if match is not None:
                place = (int(match[1]), int(match[2]))
                fields, _ = found.setdefault(place, ({}, key[:match.start(3)]))
                fields[match[3]] = any_value(span.attrs[key])
                break
    return [(place, fields, prefix) for place, (fields, prefix) in sorted(found.items())]


def _results(span: Span) -> dict[str, str]:
    """The tool results in a model span's input: tool call id -> content."""
    if INPUT_MESSAGES in span.attrs:  # the GenAI conventions: parts of type tool_call_response
        return {str(part["id"]): _text(part.get("response")) for message in _json_messages(span, INPUT_MESSAGES)
                for part in _parts(message, "tool_call_response") if part.get("id") is not None}
    messages: dict[int, dict[str, object]] = {}
    for key in span.attrs:
        for pattern in _INPUTS:
            match = pattern.fullmatch(key)
            if match is not None:
                messages.setdefault(int(match[1]), {})[match[2]] = any_value(span.attrs[key])
                break
    return {str(m["tool_call_id"]): _text(m.get("content"))
            for m in messages.values() if m.get("role") == "tool" and m.get("tool_call_id") is not None}


def _text(value: Any) -> str:
    """A tool result as text (JSON for other values; "" for none)."""
    return "" if value is None else value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _deprecated_events(tree: list[Span]) -> None:
    """Reject a run whose tool calls are only in message events (pydantic-ai's instrumentation version 1)."""
    for span in tree:
        for key in _EVENTS:
            value = any_value(span.attrs.get(key))
            if isinstance(value, str) and '"tool_calls"' in value:
                raise Reject(key, f"pydantic-ai instrumentation version 1 layout: the tool calls of {where(span)} "
                                  f"are recorded only as message events (attribute {key}), which this reader does "
                                  "not read; record with pydantic-ai's InstrumentationSettings(version=3) or later "
                                  "(tool calls as execute_tool spans)")


def with_message_steps(tree: list[Span]) -> list[Span]:
    """A run's spans (``tree``, the run span first) with a tool span made for every tool call of its
    model spans' outputs, when the run has no tool span (the module docstring); else ``tree`` itself."""
    if any(span.kind == TOOL for span in tree):
        return tree
    models = sorted((span for span in tree if span.kind == MODEL), key=lambda s: (s.start is None, s.start or 0))
    calls = [(span, _calls(span)) for span in models]
    if not any(found for _, found in calls):
        _deprecated_events(tree)
        return tree
    answered: dict[str, tuple[int | None, str]] = {}  # tool call id -> (the answering call's start, result)
    made: list[Span] = []
    for span, found in reversed(calls):  # the first later call holding a result wins
        for call_id, content in _results(span).items():
            answered[call_id] = (span.start, content)
    for span, found in calls:
        for _, fields, prefix in found:
            made.append(_step_span(span, fields, prefix, answered))
    return tree + made


def _step_span(model: Span, fields: dict[str, Any], prefix: str,
               answered: dict[str, tuple[int | None, str]]) -> Span:
    """A tool span for one tool call of a model span's output."""
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise Reject(f"{prefix}name", f"a tool call of {where(model)} names no tool ({prefix}name)")
    attrs: dict[str, _AnyValue | None] = {"gen_ai.tool.name": _AnyValue(string_value=name)}
    raw = fields.get("arguments")
    if raw is not None:
        try:
            args = raw if not isinstance(raw, str) else _JSON.decode(raw) if raw.strip() else {}
        except msgspec.DecodeError as exc:
            raise Reject(f"{prefix}arguments", f"attribute {prefix}arguments of {where(model)} is not JSON: "
                                               f"{exc}") from None
        if not isinstance(args, dict):
            raise Reject(f"{prefix}arguments", f"attribute {prefix}arguments of {where(model)} is not a JSON "
                                               f"object of arguments: {raw!r}")
        attrs["gen_ai.tool.call.arguments"] = _AnyValue(string_value=msgspec.json.encode(args).decode())
    call_id = fields.get("id")
    end = None
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = _AnyValue(string_value=str(call_id))
        if str(call_id) in answered:
            end, content = answered[str(call_id)]
            attrs["gen_ai.tool.call.result"] = _AnyValue(string_value=content)
    start = model.end
    if end is not None and start is not None and end < start:
        end = start
    return Span(trace_id=model.trace_id, span_id=model.span_id, name=f"execute_tool {name}", start=start,
                end=end, attrs=attrs, res=model.res, at=float("inf") if start is None else start, kind=TOOL,
                line=model.line, order=model.order, up=model)
