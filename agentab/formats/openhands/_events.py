"""OpenHands' event history (the ``action`` / ``observation`` events of OpenHands before its SDK) -> steps.

The rules are in :mod:`agentab.formats.openhands` ("Steps", "Tokens").
"""

from __future__ import annotations

from typing import Any

from agentab.formats._base import Reject, describe

__all__ = ["count", "describe", "event_steps"]

#: Agent actions that are tool calls (any action with ``tool_call_metadata`` is one too).
_TOOL_ACTIONS = frozenset({
    "run", "run_ipython", "read", "write", "edit", "browse", "browse_interactive", "think", "mcp", "delegate",
    "call_tool_mcp", "task_tracking", "push", "send_pr", "add_task", "modify_task", "summarize",
})
#: Actions that are not tool calls: counted in ``metadata.events``.
_OTHER_ACTIONS = frozenset({
    "message", "finish", "system", "recall", "start", "reject", "null", "pause", "resume", "stop",
    "change_agent_state", "condensation", "condensation_request", "loop_recovery", "regenerate", "agent_think",
})
_OBSERVATIONS = frozenset({
    "read", "write", "edit", "browse", "run", "run_ipython", "chat", "delegate", "message", "error", "null",
    "think", "agent_state_changed", "user_rejected", "condense", "recall", "mcp", "download", "task_tracking",
    "loop_detection", "success", "file_download", "agent_condensation",
})
_ERROR_OBSERVATIONS = frozenset({"error", "user_rejected"})


def count(n: Any) -> int | None:
    return n if (type(n) is int or isinstance(n, int) and not isinstance(n, bool)) and n >= 0 else None


# --------------------------------------------------------------------------- #
# History -> steps
# --------------------------------------------------------------------------- #
class _Tokens:
    """Token counts of model responses not yet given to a step, and the responses already counted."""

    def __init__(self) -> None:
        self.pending_in: int | None = None
        self.pending_out: int | None = None
        self.cached: int | None = None
        self.seen: set[str] = set()

    def add(self, event: dict[str, Any]) -> tuple[str | None, bool]:
        """Count the event's model response once: (its id, whether it was new)."""
        meta = event.get("tool_call_metadata")
        response = meta.get("model_response") if isinstance(meta, dict) else None
        if not isinstance(response, dict):
            return None, False
        rid = response.get("id")
        rid = rid if isinstance(rid, str) and rid else None
        if rid is not None:
            if rid in self.seen:
                return rid, False
            self.seen.add(rid)
        usage = response.get("usage")
        if type(usage) is dict:
            n = count(usage.get("prompt_tokens"))
            if n is not None:
                self.pending_in = (self.pending_in or 0) + n
            n = count(usage.get("completion_tokens"))
            if n is not None:
                self.pending_out = (self.pending_out or 0) + n
            details = usage.get("prompt_tokens_details")
            cached = count(usage.get("cache_read_input_tokens"))
            if cached is None and isinstance(details, dict):
                cached = count(details.get("cached_tokens"))
            if cached is not None:
                self.cached = (self.cached or 0) + cached
        return rid, True

    def give(self, step: dict[str, Any]) -> None:
        """Put the pending counts on ``step`` (added to what it has)."""
        for name, key in (("pending_in", "tokens_in"), ("pending_out", "tokens_out")):
            n = getattr(self, name)
            if n is not None:
                step[key] = step.get(key, 0) + n
                setattr(self, name, None)
        if self.cached is not None:
            step["tokens_cached"] = step.get("tokens_cached", 0) + self.cached
            self.cached = None


def _observation(event: dict[str, Any]) -> dict[str, Any]:
    kind = event.get("observation")
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    content = event.get("content")
    obs: dict[str, Any] = {"status": "ok", "type": kind, "content": content, "extras": extras}
    code = extras.get("exit_code")
    if code is None and isinstance(extras.get("metadata"), dict):
        code = extras["metadata"].get("exit_code")
    if kind in _ERROR_OBSERVATIONS:
        obs["status"] = "error"
        obs["error"] = content if content not in (None, "") else kind
    elif isinstance(code, int) and not isinstance(code, bool) and code != 0:
        obs["status"] = "error"
        obs["error"] = f"exit code {code}"
    return obs


def _step(event: dict[str, Any], steps: list[dict[str, Any]], tokens: _Tokens,
          first_of: dict[str, int]) -> dict[str, Any]:
    meta = event.get("tool_call_metadata")
    name = meta.get("function_name") if isinstance(meta, dict) else None
    tool = name if isinstance(name, str) and name else event["action"]
    args = event.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise Reject("args", f"expected the action's arguments as an object, got {describe(args)}")
    step: dict[str, Any] = {"index": len(steps), "tool": tool, "args": args, "observation": None}
    info: dict[str, Any] = {"event": event.get("id")}
    if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
        info["call_id"] = meta["tool_call_id"]
    rid, new = tokens.add(event)
    if rid is not None:
        info["response_id"] = rid
    step["metadata"] = info
    if new or rid is None:
        tokens.give(step)
        if rid is not None:
            first_of[rid] = step["index"]
    else:
        first = steps[first_of[rid]]
        first["parallel"] = step["parallel"] = rid  # the calls of one model response
        if "tokens_in" in first or "tokens_out" in first:
            info["tokens_with_step"] = first_of[rid]
    stamp = event.get("timestamp")
    if stamp is not None:
        step["started_at"] = stamp
    steps.append(step)
    return step


def _event_kind(event: Any) -> str:
    """'tool', 'other' (an action that is no tool call) or 'observation'; raises Reject for what is not understood."""
    if isinstance(event, list):
        raise Reject(None, "an [action, observation] pair: the history of OpenHands before its event stream "
                           "(about v0.9) is not read")
    if not isinstance(event, dict):
        raise Reject(None, f"expected an event object, got {describe(event)}")
    action, observation = event.get("action"), event.get("observation")
    if isinstance(action, str):
        if event.get("source") not in (None, "agent"):
            return "other"
        called = isinstance(event.get("tool_call_metadata"), dict)
        if action in _TOOL_ACTIONS or (action not in _OTHER_ACTIONS and called):
            return "tool"
        if action in _OTHER_ACTIONS:
            return "other"
        raise Reject("action", f"unknown OpenHands action {action!r} (without tool_call_metadata)")
    if isinstance(observation, str):
        if observation not in _OBSERVATIONS:
            raise Reject("observation", f"unknown OpenHands observation {observation!r}")
        return "observation"
    raise Reject(None, f"neither an action nor an observation event (keys: {', '.join(sorted(event)[:8])})")


def event_steps(history: list[Any], key: str = "history") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps of an event list and the counts for ``metadata``; raises Reject naming ``key[i]...``."""
    steps: list[dict[str, Any]] = []
    by_id: dict[Any, dict[str, Any]] = {}
    first_of: dict[str, int] = {}
    tokens = _Tokens()
    events: dict[str, int] = {}
    refused = unpaired = 0
    action_ids: set[Any] = set()
    for i, event in enumerate(history):
        try:
            kind = _event_kind(event)
            if kind != "observation" and isinstance(event.get("id"), (int, str)):
                action_ids.add(event["id"])
            if kind == "tool":
                step = _step(event, steps, tokens, first_of)
                if event.get("id") is not None:
                    by_id[event["id"]] = step
            elif kind == "other":
                events[event["action"]] = events.get(event["action"], 0) + 1
                if event.get("source") in (None, "agent"):
                    tokens.add(event)
            else:
                cause = event.get("cause")
                if cause is not None and (not isinstance(cause, (int, str)) or isinstance(cause, bool)):
                    raise Reject("cause", f"expected the id of an action, got {describe(cause)}")
                step = by_id.get(cause) if cause is not None else None
                if step is None:
                    if cause is None and event["observation"] == "error":
                        refused += 1
                    elif cause is not None and cause not in action_ids:
                        unpaired += 1
                    continue
                if step["observation"] is not None:
                    raise Reject("cause", f"a second observation of the action with id {cause!r}")
                step["observation"] = _observation(event)
                if event.get("timestamp") is not None:
                    step["ended_at"] = event["timestamp"]
        except Reject as problem:
            problem.field = f"{key}[{i}].{problem.field}" if problem.field else f"{key}[{i}]"
            raise
    if steps:
        last = steps[-1]
        tokens.give(steps[last["metadata"].get("tokens_with_step", last["index"])])
    counts: dict[str, Any] = {"events": events, "refused_calls": refused, "unpaired_observations": unpaired}
    if not steps:
        for name, out in (("pending_in", "tokens_in"), ("pending_out", "tokens_out")):
            if getattr(tokens, name) is not None:
                counts[out] = getattr(tokens, name)
    return steps, counts
