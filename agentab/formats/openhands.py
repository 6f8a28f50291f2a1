"""OpenHands evaluation output (``output.jsonl``) and event streams -> agentab trace records.

Input
-----
* An evaluation's ``output.jsonl``: one instance per line, with ``instance_id``,
  ``history`` (the list of events), ``metrics`` (``accumulated_cost``,
  ``accumulated_token_usage``, ``costs``, ``token_usages``), ``test_result``
  (``git_patch``; ``report.resolved`` once the benchmark's evaluation, e.g.
  SWE-bench ``eval_infer``, has run), ``error``, ``instruction``, ``metadata``.
  Gzip-compressed (``.gz``) too. Every line gives one
  :class:`~agentab.formats.Item`.
* A raw event stream: a ``.json`` file holding a list of events (as OpenHands
  saves a trajectory); the whole list is one run, its ``task_id`` the file's
  name without suffixes. A ``.json`` file may also hold one output line (an
  object, possibly indented) or an array of them. In memory: a list of output
  lines, or a list of events.

Run-level fields
----------------
Overridable with ``load_traces(..., fields={...})`` (dotted paths walk into
objects). ``null`` is the same as absent.

============ ================================ ===================================
agentab      default key                      notes
============ ================================ ===================================
run_id       ``run_id``                       absent: ``"<source>:<instance_id>"``
task_id      ``instance_id``                  required: text or integer
seed         ``seed``                         absent: 0 (one run per instance a file)
outcome      ``test_result.report.resolved``  required: bool or number; else
                                              ``report.resolved``
cost_usd     ``metrics.accumulated_cost``     unknown when no call was priced (below)
model        ``metadata.llm_config.model``    to ``metadata.model``
harness      ``metadata.agent_class``         to ``metadata.harness``
arm          ``arm``                          text
messages     ``history``                      the event list
============ ================================ ===================================

A line without an outcome is a rejection saying so (OpenHands' inference
output has none until the benchmark's evaluation adds ``report``); an event
stream never carries one. ``accumulated_cost`` is unknown, not 0, when
``metrics.costs`` is empty while tokens were used (LiteLLM prices no call of
a model it does not know, and OpenHands then adds up zeros); the raw value is
kept in ``metadata.accumulated_cost``. ``error`` (text) goes to
``metadata.error``; the totals of ``metrics.accumulated_token_usage`` to
``metadata.accumulated_prompt_tokens`` / ``accumulated_completion_tokens``.

Steps
-----
An agent action event (``action``: ``run``, ``run_ipython``, ``read``,
``edit``, ``write``, ``browse``, ``think``, ``mcp``, ...) is a step, in
order: ``tool`` is ``tool_call_metadata.function_name`` when present, else
the action's name; ``args`` the event's ``args`` object. Its observation is
the event whose ``cause`` is the action's ``id``: ``{"status", "type",
"content", "extras"}``. It is an **error** when its type is ``error`` or
``user_rejected``, or its exit code (``extras.metadata.exit_code``, or
``extras.exit_code`` in older files) is a non-zero integer (``-1``: no output
within the command's timeout, the command left running); ``error`` is then the content (or ``"exit code N"``). An action
never answered keeps observation ``null``.

Not steps, counted in ``metadata.events``: ``message``, ``finish``,
``system``, ``recall`` and the controller's events (``change_agent_state``,
``condensation``, ...). An error observation without a ``cause`` (a tool call
OpenHands refused before running it, e.g. invalid arguments) is counted in
``metadata.refused_calls``; an observation whose ``cause`` matches no action
in ``metadata.unpaired_observations``. Rejections, naming the entry
(``history[3].action``): an entry that is not an event object, an event with
neither a known ``action`` nor a known ``observation``, a second observation
of one action.

Tokens
------
From ``tool_call_metadata.model_response.usage`` (``prompt_tokens`` /
``completion_tokens``), once per model response (``model_response.id``): on
the first step of that response; the response's other calls (parallel tool
calls) have their own share unknown, with ``metadata.tokens_with_step``
naming the first. A response that made no step (``finish``, an agent
message) is counted on the next step, or on the last (the first call of its
response, when the last is a parallel sibling). No usage anywhere:
unknown, not 0. A run without steps keeps its totals in ``metadata.tokens_in``
/ ``tokens_out`` when known. Cached prompt tokens (``cache_read_input_tokens``
or ``prompt_tokens_details.cached_tokens``) go to the step's ``metadata``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats.files import BOM, JSON_SPACE, open_trace_file

__all__ = ["FORMAT", "FIELDS", "sniff", "history_steps"]

#: Default run-level mapping: agentab's name -> the key (dotted path) in an output line.
FIELDS: dict[str, str] = {
    "run_id": "run_id", "task_id": "instance_id", "seed": "seed", "arm": "arm",
    "model": "metadata.llm_config.model", "harness": "metadata.agent_class",
    "outcome": "test_result.report.resolved", "cost_usd": "metrics.accumulated_cost",
    "latency_s": "latency_s", "messages": "history",
}
_OUTCOME_ELSE = "report.resolved"

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

_decode = msgspec.json.decode


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _count(n: Any) -> int | None:
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


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
        if isinstance(usage, dict):
            for name, key in (("pending_in", "prompt_tokens"), ("pending_out", "completion_tokens")):
                n = _count(usage.get(key))
                if n is not None:
                    setattr(self, name, (getattr(self, name) or 0) + n)
            details = usage.get("prompt_tokens_details")
            cached = _count(usage.get("cache_read_input_tokens"))
            if cached is None and isinstance(details, dict):
                cached = _count(details.get("cached_tokens"))
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
            meta = step.setdefault("metadata", {})
            meta["tokens_cached"] = meta.get("tokens_cached", 0) + self.cached
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
        raise Reject("args", f"expected the action's arguments as an object, got {_describe(args)}")
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
    elif "tokens_in" in steps[first_of[rid]] or "tokens_out" in steps[first_of[rid]]:
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
        raise Reject(None, f"expected an event object, got {_describe(event)}")
    action, observation = event.get("action"), event.get("observation")
    if isinstance(action, str):
        if event.get("source") not in (None, "agent"):
            return "other"
        if action in _TOOL_ACTIONS or (action not in _OTHER_ACTIONS and isinstance(event.get("tool_call_metadata"), dict)):
            return "tool"
        if action in _OTHER_ACTIONS:
            return "other"
        raise Reject("action", f"unknown OpenHands action {action!r} (without tool_call_metadata)")
    if isinstance(observation, str):
        if observation not in _OBSERVATIONS:
            raise Reject("observation", f"unknown OpenHands observation {observation!r}")
        return "observation"
    raise Reject(None, f"neither an action nor an observation event (keys: {', '.join(sorted(event)[:8])})")


def history_steps(history: list[Any], key: str = "history") -> tuple[list[dict[str, Any]], dict[str, Any]]:
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
                    raise Reject("cause", f"expected the id of an action, got {_describe(cause)}")
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



# --------------------------------------------------------------------------- #
# Run-level fields
# --------------------------------------------------------------------------- #
def _get(rec: dict[str, Any], fields: FieldMap, key: str) -> tuple[str, Any]:
    """(the input name, its value or MISSING); null is MISSING."""
    name = fields.get(key) or FIELDS[key]
    value = lookup(rec, name)
    if key == "outcome" and value is MISSING and name == FIELDS["outcome"]:
        other = lookup(rec, _OUTCOME_ELSE)
        if other is not MISSING and other is not None:
            return _OUTCOME_ELSE, other
    return name, (MISSING if value is None else value)


def _identity(rec: dict[str, Any], fields: FieldMap, where: str, stream: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    name, task = _get(rec, fields, "task_id")
    if task is MISSING:
        raise Reject(name, f"no task_id: the line has no {name!r} (an OpenHands output line names its instance)")
    if not ((isinstance(task, str) and task) or (isinstance(task, int) and not isinstance(task, bool))):
        raise Reject(name, f"task_id must be non-empty text or an integer, got {_describe(task)}")
    name, run = _get(rec, fields, "run_id")
    if run is not MISSING and not ((isinstance(run, str) and run) or (isinstance(run, int) and not isinstance(run, bool))):
        raise Reject(name, f"run_id must be non-empty text or an integer, got {_describe(run)}")
    out["run_id"] = run if run is not MISSING else (where if stream else f"{where}:{task}")
    out["task_id"] = task
    name, seed = _get(rec, fields, "seed")
    if seed is not MISSING and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise Reject(name, f"seed must be an integer, got {_describe(seed)}")
    out["seed"] = 0 if seed is MISSING else seed
    name, outcome = _get(rec, fields, "outcome")
    if outcome is MISSING:
        if stream:
            raise Reject(None, "no outcome: an OpenHands event stream records no verdict of an external check")
        raise Reject(name, f"no outcome: the line has no {name!r}; OpenHands' inference output has none until "
                           "the benchmark's evaluation (e.g. SWE-bench eval_infer) adds test_result.report")
    if not isinstance(outcome, (bool, int, float)):
        raise Reject(name, f"outcome must be true/false or a number, got {_describe(outcome)}")
    out["outcome"] = outcome
    return out


def _cost(rec: dict[str, Any], fields: FieldMap, meta: dict[str, Any]) -> float | None:
    name, cost = _get(rec, fields, "cost_usd")
    if cost is MISSING:
        return None
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0:
        raise Reject(name, f"cost_usd must be a number >= 0, got {_describe(cost)}")
    if name != FIELDS["cost_usd"]:
        return cost
    meta["accumulated_cost"] = cost
    priced = lookup(rec, "metrics.costs")
    used = (meta.get("accumulated_prompt_tokens") or 0) + (meta.get("accumulated_completion_tokens") or 0)
    if cost == 0 and used > 0 and (not isinstance(priced, list) or not priced):
        return None  # LiteLLM priced no call: a sum of zeros, not a cost of zero
    return cost


def _run_meta(rec: dict[str, Any], fields: FieldMap, out: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("model", "harness", "arm"):
        name, value = _get(rec, fields, key)
        if value is MISSING:
            continue
        if not isinstance(value, str) or not value:
            raise Reject(name, f"{key} must be non-empty text, got {_describe(value)}")
        if key == "arm":
            out["arm"] = value
        else:
            meta[key] = value
    usage = lookup(rec, "metrics.accumulated_token_usage")
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            if _count(usage.get(key)) is not None:
                meta[f"accumulated_{key}"] = usage[key]
    error = rec.get("error")
    if isinstance(error, str) and error:
        meta["error"] = error
    cost = _cost(rec, fields, meta)
    if cost is not None:
        out["cost_usd"] = cost
    name, latency = _get(rec, fields, "latency_s")
    if latency is not MISSING:
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not latency >= 0:
            raise Reject(name, f"latency_s must be a number >= 0, got {_describe(latency)}")
        out["latency_s"] = latency
    return meta


def convert(rec: Any, where: str, fields: FieldMap, stream: bool = False) -> dict[str, Any]:
    """One output line (or ``{"instance_id": ..., "history": events}`` of a stream) as a record; raises Reject."""
    if not isinstance(rec, dict):
        raise Reject(None, f"expected an OpenHands output line (an object), got {_describe(rec)}")
    out = _identity(rec, fields, where, stream)
    meta = _run_meta(rec, fields, out)
    key = fields.get("messages") or FIELDS["messages"]
    history = lookup(rec, key)
    if history is MISSING or history is None:
        raise Reject(key, f"no history: the line has no {key!r} event list")
    if not isinstance(history, list):
        raise Reject(key, f"expected the event list, got {_describe(history)}")
    steps, counts = history_steps(history, key)
    out["steps"] = steps
    meta.update(counts)
    out["metadata"] = meta
    return out


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #
def _item(rec: Any, line: int, where: str, fields: FieldMap, stream: bool = False) -> Item:
    try:
        return Item(line, record=convert(rec, where, fields, stream))
    except Reject as problem:
        return Item(line, field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read")


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".jsonl"):
        name = name.removesuffix(suffix)
    return name or path.name


def _is_stream(objects: Sequence[Any]) -> bool:
    """A list of events (not of output lines): its first object is an event with an ``id``."""
    first = objects[0] if objects else None
    return (isinstance(first, dict) and "history" not in first and "instance_id" not in first
            and ("action" in first or "observation" in first) and "id" in first)


def _stream_item(events: list[Any], task: str, where: str, fields: FieldMap) -> Item:
    key = fields.get("messages") or FIELDS["messages"]
    run = {"instance_id": task, key: events}
    plan = {**fields, "task_id": "instance_id"}
    return _item(run, 1, where, plan, stream=True)


def _lines(path: Path, where: str, plan: FieldMap) -> Iterator[Item]:
    with open_trace_file(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1:
                raw = raw.removeprefix(BOM)
            if not raw.strip(JSON_SPACE):
                continue
            try:
                rec = _decode(raw)
            except msgspec.DecodeError as err:
                yield Item(number, reason=f"malformed JSON: {err}")
                continue
            except RecursionError:
                yield Item(number, reason="JSON nested too deeply to read")
                continue
            yield _item(rec, number, where, plan)


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """Every run of an ``output.jsonl`` (one per line, read as a stream) or the run of an event-stream ``.json``."""
    plan = {**FIELDS, **(fields or {})}
    path = Path(path)
    where = str(path)
    with open_trace_file(path) as fh:
        start = fh.read(4096).removeprefix(BOM).lstrip(JSON_SPACE)[:1]
    one_object = start == b"{" and path.name.lower().removesuffix(".gz").endswith(".json")
    if start != b"[" and not one_object:
        yield from _lines(path, where, plan)
        return
    with open_trace_file(path) as fh:
        body = fh.read().removeprefix(BOM).lstrip(JSON_SPACE)
    try:
        parsed = _decode(body)
    except (msgspec.DecodeError, RecursionError) as err:
        if one_object:  # JSON Lines in a .json file
            yield from _lines(path, where, plan)
            return
        yield Item(1, reason=f"malformed JSON: {err}; the whole file was left out")
        return
    if isinstance(parsed, dict):
        yield _item(parsed, 1, where, plan)
    elif _is_stream(parsed):
        yield _stream_item(parsed, _stem(path), where, plan)
    else:
        for position, rec in enumerate(parsed, start=1):
            yield _item(rec, position, where, plan)


def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
    """In memory: output lines (one run each), or one event stream (a list of events: one run named ``name``)."""
    plan = {**FIELDS, **(fields or {})}
    if _is_stream(objects):
        yield _stream_item(list(objects), name, name, plan)
        return
    for position, rec in enumerate(objects, start=1):
        yield _item(rec, position, name, plan)


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
_INSTANCE = re.compile(rb'"instance_id"\s*:')
_HISTORY = re.compile(rb'"history"\s*:\s*\[\s*(?:\]|\{\s*"(?:id|timestamp|source)"\s*:)')
_SOURCE = re.compile(rb'"source"\s*:\s*"(?:agent|user|environment)"')
_EVENT_KIND = re.compile(rb'"(?:action|observation)"\s*:\s*"')
_STREAM_START = re.compile(rb'\[\s*\{\s*"id"\s*:\s*\d+\s*,\s*"timestamp"\s*:')


def sniff(head: bytes, name: str = "") -> bool:
    """OpenHands: an ``instance_id`` with a ``history`` event list whose events start with ``id`` /
    ``timestamp`` / ``source`` and carry ``source`` (agent, user, environment) and ``action`` /
    ``observation``; or a JSON array of such events (``id``, ``timestamp`` first, as OpenHands writes).

    A ``history`` of messages (``role``: SWE-agent) or of ``[action, observation]`` pairs is not claimed.
    """
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    events = bool(_SOURCE.search(head) and _EVENT_KIND.search(head))
    if body[:1] == b"{":
        return bool(_INSTANCE.search(head) and _HISTORY.search(head) and events)
    if body[:1] == b"[":
        return bool(_STREAM_START.match(body) and events) or bool(
            _INSTANCE.search(head) and _HISTORY.search(head) and events)
    return False


FORMAT = Format(
    name="openhands",
    summary="OpenHands evaluation output.jsonl (instance_id, history of events, metrics) and event-stream .json files",
    example='{"instance_id": "django__django-11099", "test_result": {"report": {"resolved": true}}, "history": '
    '[{"id": 5, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": '
    '{"function_name": "execute_bash", "tool_call_id": "t1", "model_response": {"id": "r1", "usage": '
    '{"prompt_tokens": 812, "completion_tokens": 44}}}}, {"id": 6, "source": "agent", "cause": 5, '
    '"observation": "run", "content": "README.md", "extras": {"exit_code": 0}}], "metrics": {"accumulated_cost": 0.01}}',
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
)
