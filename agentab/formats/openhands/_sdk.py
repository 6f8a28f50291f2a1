"""The history of the OpenHands SDK (``kind``: ``ActionEvent``, ``ObservationEvent``, ...) -> steps.

The OpenHands software-agent SDK (OpenHands V1, the ``OpenHands/benchmarks``
evaluations) writes each event with a ``kind``. The rules are in
:mod:`agentab.formats.openhands` ("Steps, OpenHands SDK").
"""

from __future__ import annotations

import json
from typing import Any

from agentab.formats._base import Reject
from agentab.formats.openhands._events import describe

__all__ = ["is_sdk", "sdk_steps"]

#: Event kinds that are not tool calls nor their answers: counted in ``metadata.events``.
_OTHER_KINDS = frozenset({
    "MessageEvent", "SystemPromptEvent", "Condensation", "CondensationRequest", "CondensationSummaryEvent",
    "PauseEvent", "ConversationStateUpdateEvent", "ConversationErrorEvent", "LLMCompletionLogEvent",
    "TokenEvent", "HookExecutionEvent", "StreamingDeltaEvent",
})
_FINISH = frozenset({"FinishAction"})


def is_sdk(history: list[Any]) -> bool:
    """Whether the history's first event is an SDK event (it has a ``kind``)."""
    return bool(history) and isinstance(history[0], dict) and isinstance(history[0].get("kind"), str)


def _args(event: dict[str, Any]) -> dict[str, Any]:
    """The action's fields without its ``kind``; without an action, the tool call's arguments (JSON text)."""
    action = event.get("action")
    if isinstance(action, dict):
        return {k: v for k, v in action.items() if k != "kind"}
    if action is not None:
        raise Reject("action", f"expected the action as an object, got {describe(action)}")
    call = event.get("tool_call")
    text = call.get("arguments") if isinstance(call, dict) else None
    if isinstance(text, str) and text.strip():
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return {"arguments": text}
        return parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return {}


def _exit_code(obs: dict[str, Any]) -> Any:
    code = obs.get("exit_code")
    if code is None and isinstance(obs.get("metadata"), dict):
        code = obs["metadata"].get("exit_code")
    return code


def _observation(obs: Any, kind: str) -> dict[str, Any]:
    if not isinstance(obs, dict):
        raise Reject("observation", f"expected the observation as an object, got {describe(obs)}")
    out: dict[str, Any] = {"status": "ok", "type": obs.get("kind", kind), "content": obs}
    error, code = obs.get("error"), _exit_code(obs)
    flagged = error not in (None, False, "") and error != []
    if obs.get("is_error") is True or flagged:
        out["status"] = "error"
        out["error"] = error if flagged and not isinstance(error, bool) else _text(obs) or "error"
    elif isinstance(code, int) and not isinstance(code, bool) and code != 0:
        out["status"] = "error"
        out["error"] = f"exit code {code}"
    return out


def _text(obs: dict[str, Any]) -> str | None:
    for key in ("output", "content", "message"):
        value = obs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _answer(event: dict[str, Any], kind: str) -> dict[str, Any]:
    if kind == "ObservationEvent":
        return _observation(event.get("observation"), kind)
    if kind == "AgentErrorEvent":
        return {"status": "error", "type": kind, "content": event.get("error"), "error": event.get("error") or kind}
    reason = event.get("rejection_reason")
    return {"status": "error", "type": kind, "content": reason, "error": reason or "rejected by the user"}


def _new_step(event: dict[str, Any], steps: list[dict[str, Any]], first_of: dict[str, int]) -> dict[str, Any]:
    action = event.get("action")
    name = event.get("tool_name")
    if not (isinstance(name, str) and name):
        name = action.get("kind") if isinstance(action, dict) else None
    if not (isinstance(name, str) and name):
        raise Reject("tool_name", "an action event without a tool name")
    step: dict[str, Any] = {"index": len(steps), "tool": name, "args": _args(event), "observation": None}
    info: dict[str, Any] = {"event": event.get("id")}
    if isinstance(event.get("tool_call_id"), str):
        info["call_id"] = event["tool_call_id"]
    rid = event.get("llm_response_id")
    if isinstance(rid, str) and rid:
        info["response_id"] = rid
        if rid in first_of:
            info["parallel_with_step"] = first_of[rid]
            step["parallel"] = steps[first_of[rid]]["parallel"] = rid  # the calls of one model response
        else:
            first_of[rid] = step["index"]
    step["metadata"] = info
    if event.get("timestamp") is not None:
        step["started_at"] = event["timestamp"]
    steps.append(step)
    return step


def _find(event: dict[str, Any], by_action: dict[Any, dict[str, Any]], by_call: dict[Any, dict[str, Any]]):
    action_id, call_id = event.get("action_id"), event.get("tool_call_id")
    if isinstance(action_id, str) and action_id in by_action:
        return by_action[action_id]
    if isinstance(call_id, str):
        return by_call.get(call_id)
    return None


def sdk_steps(history: list[Any], key: str = "history") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps of an SDK event list and the counts for ``metadata``; raises Reject naming ``key[i]...``."""
    steps: list[dict[str, Any]] = []
    by_action: dict[Any, dict[str, Any]] = {}
    by_call: dict[Any, dict[str, Any]] = {}
    first_of: dict[str, int] = {}
    events: dict[str, int] = {}
    refused = unpaired = 0
    others: set[Any] = set()
    for i, event in enumerate(history):
        try:
            if not isinstance(event, dict):
                raise Reject(None, f"expected an event object, got {describe(event)}")
            kind = event.get("kind")
            action = event.get("action")
            if kind == "ActionEvent":
                if isinstance(action, dict) and action.get("kind") in _FINISH or event.get("tool_name") == "finish":
                    events["finish"] = events.get("finish", 0) + 1
                    others.add(event.get("id"))
                    continue
                step = _new_step(event, steps, first_of)
                if isinstance(event.get("id"), str):
                    by_action[event["id"]] = step
                if isinstance(event.get("tool_call_id"), str):
                    by_call[event["tool_call_id"]] = step
            elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
                step = _find(event, by_action, by_call)
                if step is None:
                    if event.get("action_id") in others and event.get("action_id") is not None:
                        continue
                    if kind == "AgentErrorEvent":
                        refused += 1
                    else:
                        unpaired += 1
                    continue
                if step["observation"] is not None:
                    raise Reject("action_id", "a second observation of one action")
                step["observation"] = _answer(event, kind)
                if event.get("timestamp") is not None:
                    step["ended_at"] = event["timestamp"]
            elif kind in _OTHER_KINDS:
                events[kind] = events.get(kind, 0) + 1
            else:
                raise Reject("kind", f"unknown OpenHands SDK event kind {kind!r}")
        except Reject as problem:
            problem.field = f"{key}[{i}].{problem.field}" if problem.field else f"{key}[{i}]"
            raise
    return steps, {"events": events, "refused_calls": refused, "unpaired_observations": unpaired}
