"""One Inspect sample to one trace record: its messages as steps, tokens from its events or usage.

:func:`sample_item` converts a sample (:func:`_convert`): attachments
resolved, tool calls and their results as steps (:func:`_steps`), tokens
attributed to steps from model events, else from the sample's usage
(:func:`_tokens`); the run-level fields come from :mod:`._inspect_fields`.
The rules are in :mod:`agentab.formats.inspect_ai`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from agentab.formats._base import FieldMap, Item
from agentab.formats._base import Reject as _Reject
from agentab.formats._inspect_fields import Header, record_fields
from agentab.formats.record import TOKENS_WITH_STEP

_ATTACHMENT = "attachment://"
_LEGACY_ATTACHMENT = "tc://"


def _label(sample: Any) -> str:
    if not isinstance(sample, dict):
        return "sample ?"
    return f"sample {sample.get('id', '?')!r} epoch {sample.get('epoch', '?')}"


def sample_item(sample: Any, header: Header, fields: FieldMap, line: int, source: str | None) -> Item:
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        record = _convert(sample, header, fields, missing)
        lacking = {name: (field, f"{_label(sample)}: {reason}") for name, (field, reason) in missing.items()}
        return Item(line=line, record=record, source=source, missing=lacking or None)
    except _Reject as bad:
        return Item(line=line, field=bad.field, reason=f"{_label(sample)}: {bad.reason}", source=source)


def _convert(sample: Any, header: Header, fields: FieldMap, missing: dict[str, tuple[str | None, str]]
             ) -> dict[str, Any]:
    if not isinstance(sample, dict):
        raise _Reject(None, f"a sample must be a JSON object, got {type(sample).__name__}")
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or sample_id == "":
        raise _Reject("id", f"the sample id must be text or an integer, got {sample_id!r}")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise _Reject("epoch", f"the epoch must be an integer, got {epoch!r}")
    transcript = sample.get("transcript") if isinstance(sample.get("transcript"), dict) else {}
    attachments = sample.get("attachments") or transcript.get("content") or {}
    events = sample.get("events") or transcript.get("events") or []
    if not isinstance(attachments, dict):
        raise _Reject("attachments", f"expected an object {{hash: text}}, got {type(attachments).__name__}")
    resolve = _resolver(attachments)

    steps, call_ids = _steps(sample.get("messages"), resolve)
    calls = None
    if steps and isinstance(events, list) and events:
        calls = _events(steps, call_ids, events)
    if steps:
        _tokens(steps, call_ids, calls, sample.get("model_usage"))
    record = record_fields(sample, header, fields, steps, missing)
    if steps:
        record.update(run_totals(calls))
    else:  # the sample's model_usage: the run's totals (else its tokens are unknown, not 0)
        record.update(_stepless_totals(sample.get("model_usage")))
    return record


def _resolver(attachments: Mapping[str, Any]):
    """A function replacing ``attachment://<hash>`` (and legacy ``tc://<hash>``) strings, deeply."""
    if not attachments:
        return lambda value: value

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(_ATTACHMENT):
                return attachments.get(value[len(_ATTACHMENT):], value)
            if value.startswith(_LEGACY_ATTACHMENT):
                return attachments.get(value[len(_LEGACY_ATTACHMENT):], value)
            return value
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [resolve(item) for item in value]
        return value

    return resolve


def _steps(messages: Any, resolve) -> tuple[list[dict[str, Any]], list[Any]]:
    """Tool calls of the assistant messages, each with the tool message answering it; and their call ids."""
    steps: list[dict[str, Any]] = []
    ids: list[Any] = []
    if messages is None:
        return steps, ids
    if not isinstance(messages, list):
        raise _Reject("messages", f"expected a list of chat messages, got {type(messages).__name__}")
    pending: dict[Any, list[int]] = {}  # tool call id -> unanswered steps with that id, in order
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _Reject(f"messages[{i}]", f"a chat message must be an object, got {type(message).__name__}")
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls")
            if not calls or message.get("source") == "input":  # input: the dataset's own, not done in this run
                continue
            if not isinstance(calls, list):
                raise _Reject(f"messages[{i}].tool_calls", f"expected a list, got {type(calls).__name__}")
            for j, call in enumerate(calls):
                step, call_id = _call_step(call, i, j, len(steps), resolve)
                pending.setdefault(call_id, []).append(len(steps))
                steps.append(step)
                ids.append(call_id)
        elif role == "tool" and message.get("source") != "input":
            call_id = message.get("tool_call_id")
            waiting = pending.get(call_id)
            if not waiting:
                again = " (already answered)" if waiting is not None else ""
                raise _Reject(f"messages[{i}].tool_call_id",
                              f"tool result for call {call_id!r} has no matching tool call before it{again}")
            steps[waiting.pop(0)]["observation"] = _observation(message, resolve)
    return steps, ids


def _call_step(call: Any, i: int, j: int, index: int, resolve) -> tuple[dict[str, Any], Any]:
    if not isinstance(call, dict):
        raise _Reject(f"messages[{i}].tool_calls[{j}]", f"a tool call must be an object, got {type(call).__name__}")
    function = call.get("function")
    if not isinstance(function, str) or not function:
        raise _Reject(f"messages[{i}].tool_calls[{j}].function",
                      f"the tool call has no function name (got {function!r})")
    args = call.get("arguments")
    if not isinstance(args, dict):
        args = _arguments(args, f"messages[{i}].tool_calls[{j}].arguments")
    call_id = call.get("id")
    meta = {"tool_call_id": call_id}
    if call.get("parse_error"):
        meta["parse_error"] = call["parse_error"]
    return {"index": index, "tool": function, "args": resolve(args), "metadata": meta}, call_id


def _arguments(args: Any, field: str) -> dict[str, Any]:
    """Arguments that are not an object: none (``{}``), or JSON text of an object (a provider's raw form)."""
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as err:
            raise _Reject(field, f"arguments are not JSON: {err.msg}") from None
    if not isinstance(args, dict):
        raise _Reject(field, f"arguments must be an object, got {type(args).__name__}")
    return args


def _observation(message: Mapping[str, Any], resolve) -> dict[str, Any]:
    error = message.get("error")
    if not error and message.get("tool_error"):  # logs before ToolCallError
        error = {"type": "unknown", "message": message["tool_error"]}
    observation: dict[str, Any] = {"status": "error" if error else "ok", "content": resolve(message.get("content"))}
    if error:
        if isinstance(error, dict):
            observation["error"] = resolve(error.get("message")) or error.get("type") or "error"
            if error.get("type") is not None:
                observation["error_type"] = error["type"]
        else:
            observation["error"] = resolve(error)
    return observation


def _usage(usage: Any, field: str) -> tuple[int, int] | None:
    """(tokens_in, tokens_out) of one ModelUsage: every prompt token, cached or not, and the output."""
    if not isinstance(usage, dict):
        return None
    out, total = usage.get("output_tokens") or 0, usage.get("total_tokens") or 0
    if type(out) is int and type(total) is int and total >= out >= 0 and total > 0:  # the common case
        return total - out, out
    values = {}
    for key in ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_read",
                "input_tokens_cache_write"):
        value = usage.get(key)
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _Reject(f"{field}.{key}", f"token count {key} must be a number, got {value!r}")
        values[key] = int(value)
    out, total = values["output_tokens"], values["total_tokens"]
    if total > 0 and total >= out:
        return total - out, out
    return values["input_tokens"] + values["input_tokens_cache_read"] + values["input_tokens_cache_write"], out


def _parts(usage: Any, tokens_out: int) -> tuple[int | None, int | None]:
    """(cached, reasoning) tokens of one ModelUsage: ``input_tokens_cache_read`` and ``reasoning_tokens``, each
    None when not reported (reasoning above the output tokens too: then not a part of them)."""
    cached, reasoning = usage.get("input_tokens_cache_read"), usage.get("reasoning_tokens")
    if not (type(cached) is int and cached >= 0):
        cached = None
    if not (type(reasoning) is int and tokens_out >= reasoning >= 0):
        reasoning = None
    return cached, reasoning


def _events(steps: list[dict[str, Any]], call_ids: list[Any], events: list[Any]) -> list[tuple[Any, ...]] | None:
    """One pass over the events: step times from ToolEvents; each agent model call's tokens and tool-call ids.

    The calls come back as ``(tokens_in, tokens_out, ids, tokens_cached, tokens_reasoning)``, or None unless
    every agent call has usage. Calls made inside a scorer span (or an old
    scorer ``step``) are not the agent's.
    """
    waiting: dict[Any, list[int]] = {}
    for index, call_id in enumerate(call_ids):
        waiting.setdefault(call_id, []).append(index)
    calls: list[tuple[Any, ...]] | None = []
    scorer_spans: set[Any] = set()
    in_scorer_step = 0
    for number, event in enumerate(events):
        try:
            kind = event.get("event")
        except AttributeError:  # not an object: not an event this reader uses
            continue
        if kind == "tool":
            queue = waiting.get(event.get("id"))
            if queue:
                step = steps[queue.pop(0)]
                if isinstance(event.get("timestamp"), str):
                    step["started_at"] = event["timestamp"]
                    if isinstance(event.get("completed"), str):
                        step["ended_at"] = event["completed"]
        elif kind == "model":
            if calls is None or in_scorer_step or (scorer_spans and event.get("span_id") in scorer_spans):
                continue
            output = event.get("output")
            if not isinstance(output, dict):
                calls = None
                continue
            counted = _usage(output.get("usage"), f"events[{number}].output.usage")
            if counted is None:
                if event.get("error") or event.get("pending"):
                    continue  # a failed (or unfinished) call without usage: no tokens to count
                calls = None
                continue
            ids = []
            for choice in output.get("choices") or ():
                message = choice.get("message") if isinstance(choice, dict) else None
                for call in (message.get("tool_calls") if isinstance(message, dict) else None) or ():
                    if isinstance(call, dict):
                        ids.append(call.get("id"))
            calls.append((counted[0], counted[1], ids, *_parts(output["usage"], counted[1])))
        elif kind == "span_begin":
            if (event.get("type") in ("scorer", "scorers") or event.get("name") == "scorers"
                    or (scorer_spans and event.get("parent_id") in scorer_spans)):
                scorer_spans.add(event.get("id"))
        elif kind == "step" and event.get("type") == "scorer":  # logs before spans
            in_scorer_step = max(0, in_scorer_step + (1 if event.get("action") == "begin" else -1))
    return calls or None


def _tokens(steps: list[dict[str, Any]], call_ids: list[Any], calls: list[tuple[Any, ...]] | None,
            model_usage: Any) -> None:
    """Step tokens: per model call from the events (cached and reasoning tokens too, where every call counted at
    a step reports them), else the sample's model_usage on the first step."""
    if calls is not None:
        for step in steps:
            step["tokens_in"] = step["tokens_out"] = 0
        by_id: dict[Any, list[int]] = {}
        for index, call_id in enumerate(call_ids):
            by_id.setdefault(call_id, []).append(index)
        carry: list[Any] = [0, 0, 0, 0]  # tokens in, out, cached, reasoning of calls that requested no tool
        parts: dict[int, list[Any]] = {}  # step -> its [cached, reasoning] (None: unknown)
        for tokens_in, tokens_out, ids, cached, reasoning in calls:
            carry = [carry[0] + tokens_in, carry[1] + tokens_out, _plus(carry[2], cached), _plus(carry[3], reasoning)]
            produced = sorted(by_id[i].pop(0) for i in ids if by_id.get(i))
            if produced:
                _give(steps[produced[0]], parts.setdefault(produced[0], [0, 0]), carry)
                carry = [0, 0, 0, 0]
                for other in produced[1:]:  # the same call: counted at its first step, own share unknown
                    _counted_at(steps[other], produced[0])
                    steps[other]["parallel"] = steps[produced[0]]["parallel"] = produced[0]
        index = len(steps) - 1
        _give(steps[index], parts.setdefault(index, [0, 0]), carry)  # no tool requested after: onto the last step
        for index, (cached, reasoning) in parts.items():
            for name, value in (("tokens_cached", cached), ("tokens_reasoning", reasoning)):
                if value is not None and "tokens_in" in steps[index]:
                    steps[index][name] = value
        return
    totals = _usage_totals(model_usage)
    if totals is None:
        return  # unknown
    steps[0]["tokens_in"], steps[0]["tokens_out"] = totals
    for step in steps[1:]:  # the sample's usage is counted at the first step; the others' shares are unknown
        _counted_at(step, 0)


def _plus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _give(step: dict[str, Any], parts: list[Any], counts: list[Any]) -> None:
    """Add model calls' counts (in, out, cached, reasoning) to ``step`` and its ``parts`` (cached, reasoning)."""
    step["tokens_in"] += counts[0]
    step["tokens_out"] += counts[1]
    parts[0], parts[1] = _plus(parts[0], counts[2]), _plus(parts[1], counts[3])


def run_totals(calls: list[tuple[Any, ...]] | None) -> dict[str, int]:
    """The run's token totals over its agent model calls (from the events; {} without them)."""
    if not calls:
        return {}
    totals: list[Any] = [0, 0, 0, 0]
    for tokens_in, tokens_out, _, cached, reasoning in calls:
        totals = [totals[0] + tokens_in, totals[1] + tokens_out, _plus(totals[2], cached), _plus(totals[3], reasoning)]
    names = ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning")
    return {name: value for name, value in zip(names, totals) if value is not None}


def _counted_at(step: dict[str, Any], first: int) -> None:
    """A step whose model call's tokens are counted at step ``first``: its own counts unknown (absent)."""
    step.pop("tokens_in", None)
    step.pop("tokens_out", None)
    step["metadata"][TOKENS_WITH_STEP] = first


def _usage_totals(model_usage: Any) -> tuple[int, int] | None:
    """(tokens_in, tokens_out) of a sample's ``model_usage`` summed over its models; None when it has none."""
    if not isinstance(model_usage, dict) or not model_usage:
        return None
    total_in = total_out = 0
    for model, usage in model_usage.items():
        counted = _usage(usage, f"model_usage.{model}")
        if counted is None:
            raise _Reject(f"model_usage.{model}", "each model's usage must be an object")
        total_in, total_out = total_in + counted[0], total_out + counted[1]
    return total_in, total_out


def _stepless_totals(model_usage: Any) -> dict[str, int]:
    """The run's totals from its ``model_usage`` (cached and reasoning tokens when every model reports them)."""
    totals = _usage_totals(model_usage)
    if totals is None:
        return {}
    out = {"tokens_in": totals[0], "tokens_out": totals[1]}
    parts = [_parts(usage, _usage(usage, "")[1]) for usage in model_usage.values()]  # type: ignore[index, union-attr]
    for k, name in enumerate(("tokens_cached", "tokens_reasoning")):
        if all(p[k] is not None for p in parts):
            out[name] = sum(p[k] for p in parts)  # type: ignore[misc]
    return out
