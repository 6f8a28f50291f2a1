"""OpenAI Agents SDK native trace export (``trace`` / ``trace.span`` objects) -> agentab trace records.

Input
-----
The items the SDK's ``BackendSpanExporter`` sends to the traces ingest
endpoint (``trace.export()`` / ``span.export()``): objects with ``"object":
"trace"`` (``id``, ``workflow_name``, ``group_id``, ``metadata``) and
``"object": "trace.span"`` (``id``, ``trace_id``, ``parent_id``,
``started_at``, ``ended_at``, ``span_data`` with a ``type``, ``error``), as
JSON Lines, a JSON array, or the ingest payload ``{"data": [...]}`` (also one
per line). One
trace (its ``id``; a span's ``trace_id``) is one run, whatever the order of
its items; the item's line is the line of the trace's first item.

Run-level fields
----------------
``run_id`` is the trace id. The SDK records no task, seed or external
verdict: ``task_id``, ``seed`` and ``outcome`` are read from the trace's
``metadata`` (``agentab.task_id``, ``agentab.seed``, ``agentab.outcome``, the
names OpenTelemetry runs use; the SDK's metadata values are text, so
``"0"`` is read as seed 0 and ``"true"`` / ``"false"`` / a number text as the
outcome), or mapped with ``load_traces(..., fields={"task_id": "workflow_name",
...})``: each name is looked up in the trace object, then in its ``metadata``.
Not found, the field is named in ``Item.missing`` with a reason saying how to
map it, for the loader to fill from the file path or an outcomes table
(``fields={"path": ...}``, ``outcomes=``); the run is rejected with that
reason when nothing fills it.

Steps
-----
Each ``function`` span is a step, in ``started_at`` order: ``name`` -> tool,
``input`` (JSON text) -> args, ``output`` -> ``observation.output``, the span's
``error`` -> ``observation.status = "error"`` and ``observation.error`` (its
``message``; ``data`` kept as ``error_data``). A span never ended keeps
observation ``null``. The step's ``metadata.agent`` is the name of the
nearest ``agent`` span above it; ``mcp_data`` is kept.

Tokens
------
``generation`` and ``response`` spans are the model calls (a trace with none
uses the SDK's ``custom`` ``turn`` spans instead): ``usage.input_tokens`` /
``output_tokens``, with ``cached_tokens`` and ``reasoning_tokens`` summed into
the step's ``metadata.tokens_cached`` / ``tokens_reasoning``. A call's tokens go
to the next step started after it (further steps of the same call:
``tokens_with_step``); calls after the last step go to the last step; with no
steps, to the run's ``metadata.tokens_in`` / ``tokens_out``. A call without
usage makes the tokens it would be counted in unknown, never 0.

Other spans
-----------
``metadata`` has ``harness`` (``"openai-agents"``), ``model`` (of the model
calls; ``models`` when several), ``workflow_name``, ``group_id``,
``trace_metadata`` (the trace's metadata), ``agents`` (in order of start),
``handoffs`` (the count) and ``handoff_path`` (``[from, to]`` pairs),
``guardrails`` / ``guardrails_triggered``, ``mcp_tools_spans``,
``span_types`` (a count per type), ``span_errors`` (errors of spans that
are not steps) and ``sdk_run_usage`` (the usage the SDK's ``task`` span totals,
kept as written). ``latency_s`` is the last ``ended_at`` minus the first
``started_at``. A malformed line is a rejection of its own (the trace it
belonged to cannot be known). An item of an unknown ``object``, a span without an object
``span_data`` or of a type the SDK does not write, or a malformed timestamp is
a rejection of its run naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats._message_fields import describe
from agentab.formats._message_parts import call_arguments
from agentab.formats._missing import absent
from agentab.formats.files import (
    BOM,
    JSON_SPACE,
    first_keys,
    is_record_keys,
    open_trace_file,
)
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "sniff", "trace_items"]

#: Default run-level mapping (looked up in the trace object, then in its ``metadata``).
FIELDS: dict[str, str] = {"run_id": "id", "task_id": "agentab.task_id", "seed": "agentab.seed",
                          "outcome": "agentab.outcome"}
#: The span types the SDK writes.
SPAN_TYPES = frozenset({"agent", "function", "generation", "response", "handoff", "guardrail", "custom",
                        "mcp_tools", "transcription", "speech", "speech_group"})
_MODEL_TYPES = frozenset({"generation", "response"})
_HOW = {"task_id": "the task", "seed": "a seed", "outcome": "an external verdict"}
_decode = msgspec.json.decode


class _AtLine(Reject):
    """A rejection at a given line."""

    def __init__(self, line: int, field: str | None, reason: str) -> None:
        super().__init__(field, reason)
        self.line = line


def _seconds(stamp: Any, line: int, where: str) -> float | None:
    if stamp is None:
        return None
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise _AtLine(line, where, f"expected an ISO-8601 time, got {describe(stamp)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Usage:
    """Tokens of model calls not yet given to a step (``known`` False once a call has no usage)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Nothing pending."""
        self.tin = 0
        self.tout = 0
        self.cached = 0
        self.reasoning = 0
        self.calls = 0
        self.known = True

    def add(self, usage: Any, line: int) -> None:
        self.calls += 1
        if usage is None:
            self.known = False
            return
        if not isinstance(usage, dict):
            raise _AtLine(line, "span_data.usage", f"expected a usage object, got {describe(usage)}")
        tin, tout = usage.get("input_tokens"), usage.get("output_tokens")
        if not (_is_int(tin) and _is_int(tout) and tin >= 0 and tout >= 0):
            raise _AtLine(line, "span_data.usage", "expected input_tokens and output_tokens (whole numbers >= 0)")
        self.tin += tin
        self.tout += tout
        details_in = usage.get("input_tokens_details")
        details_out = usage.get("output_tokens_details")
        cached = details_in.get("cached_tokens") if isinstance(details_in, dict) else usage.get("cached_input_tokens")
        reasoning = details_out.get("reasoning_tokens") if isinstance(details_out, dict) else None
        self.cached += cached if _is_int(cached) and cached > 0 else 0
        self.reasoning += reasoning if _is_int(reasoning) and reasoning > 0 else 0

    def give(self, target: dict[str, Any]) -> None:
        """Put these tokens on a step (or run metadata) dict, adding to what it has."""
        if not self.calls:
            return
        meta = target.setdefault("metadata", {}) if "index" in target else target
        if not self.known:
            target.pop("tokens_in", None)
            target.pop("tokens_out", None)
            meta["tokens_unknown"] = True
        elif not meta.get("tokens_unknown"):
            target["tokens_in"] = target.get("tokens_in", 0) + self.tin
            target["tokens_out"] = target.get("tokens_out", 0) + self.tout
        for key, value in (("tokens_cached", self.cached), ("tokens_reasoning", self.reasoning)):
            if value:
                meta[key] = meta.get(key, 0) + value
        meta.pop(TOKENS_WITH_STEP, None)
        self.reset()


def _agent_of(span_id: Any, spans: dict[str, tuple[int, dict[str, Any]]], memo: dict[Any, str | None]) -> str | None:
    """The name of the nearest ``agent`` span at or above ``span_id`` (iterative, cycle-safe)."""
    chain: list[Any] = []
    seen: set[Any] = set()
    found: str | None = None
    current = span_id
    while current is not None and current not in seen:
        if current in memo:
            found = memo[current]
            break
        seen.add(current)
        chain.append(current)
        entry = spans.get(current)
        if entry is None:
            break
        data = entry[1]["span_data"]
        if data.get("type") == "agent" and isinstance(data.get("name"), str):
            found = data["name"]
            break
        current = entry[1].get("parent_id")
    for key in chain:
        memo[key] = found
    return found


def _step(index: int, line: int, span: dict[str, Any], agent: str | None) -> dict[str, Any]:
    data = span["span_data"]
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _AtLine(line, "span_data.name", f"expected a tool name (text), got {describe(name)}")
    try:
        args = call_arguments(data.get("input"), "span_data.input")
    except Reject as problem:
        raise _AtLine(line, problem.field, problem.reason) from None
    meta: dict[str, Any] = {"line": line, "span_id": span.get("id")}
    if agent is not None:
        meta["agent"] = agent
    if data.get("mcp_data") is not None:
        meta["mcp_data"] = data["mcp_data"]
    step: dict[str, Any] = {"index": index, "tool": name, "args": args, "observation": None, "metadata": meta}
    if span.get("started_at") is not None:
        step["started_at"] = span["started_at"]
    error = span.get("error")
    if span.get("ended_at") is not None or error is not None:
        obs: dict[str, Any] = {"status": "ok", "output": data.get("output")}
        if error is not None:
            obs["status"] = "error"
            obs["error"] = error.get("message") if isinstance(error, dict) and "message" in error else error
            if isinstance(error, dict) and error.get("data") is not None:
                obs["error_data"] = error["data"]
        step["observation"] = obs
    if span.get("ended_at") is not None:
        step["ended_at"] = span["ended_at"]
    return step


def _order(spans: list[tuple[int, dict[str, Any]]], meta: dict[str, Any]) -> list[tuple[float, int, dict[str, Any]]]:
    """The spans in start order (unstarted last, then by line); the trace's wall time into ``meta["_wall"]``."""
    out = []
    first, last = float("inf"), float("-inf")
    for line, span in spans:
        start = _seconds(span.get("started_at"), line, "started_at")
        end = _seconds(span.get("ended_at"), line, "ended_at")
        if start is not None and end is not None and end < start:
            raise _AtLine(line, "ended_at", "ended_at precedes started_at")
        first = min(first, start) if start is not None else first
        last = max(last, end) if end is not None else last
        out.append((start if start is not None else float("inf"), line, span))
    out.sort(key=lambda t: (t[0], t[1]))
    if last >= first:
        meta["_wall"] = last - first
    return out


def _walk(spans: list[tuple[int, dict[str, Any]]], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps, tokens placed, and the span counts in ``meta``."""
    by_id = {span.get("id"): (line, span) for line, span in spans if span.get("id") is not None}
    memo: dict[Any, str | None] = {}
    ordered = _order(spans, meta)
    has_model = any(s["span_data"].get("type") in _MODEL_TYPES for _, _, s in ordered)
    steps: list[dict[str, Any]] = []
    pending: dict[str | None, _Usage] = {}  # per agent: model calls not yet given to a step
    holder: dict[str | None, dict[str, Any]] = {}  # per agent: the step its last model call was given to
    last: dict[str | None, dict[str, Any]] = {}  # per agent: its last step
    seen = _Seen()
    for _, line, span in ordered:
        data = span["span_data"]
        kind = data["type"]
        is_turn = kind == "custom" and isinstance(data.get("data"), dict) and data["data"].get("sdk_span_type") == "turn"
        if kind in _MODEL_TYPES or (is_turn and not has_model):
            agent = _agent_of(span.get("parent_id"), by_id, memo)
            pending.setdefault(agent, _Usage()).add(
                data.get("usage") if kind in _MODEL_TYPES else data["data"].get("usage"), line)
        if kind != "function":
            seen.note(span, data)
            continue
        seen.note(span, data, step=True)
        agent = _agent_of(span.get("parent_id"), by_id, memo)
        step = _step(len(steps), line, span, agent)
        mine = pending.get(agent)
        if mine is not None and mine.calls:
            mine.give(step)
            holder[agent] = step
        elif agent in holder and "tokens_in" in holder[agent]:
            step["metadata"][TOKENS_WITH_STEP] = holder[agent]["index"]
        steps.append(step)
        last[agent] = step
    for agent, usage in pending.items():  # calls after an agent's last step: to it, else the run's last step
        usage.give(last.get(agent) or (steps[-1] if steps else meta))
    seen.into(meta)
    return steps


class _Seen:
    """Counts of the spans of a trace that are not steps (agents, handoffs, guardrails, models, errors)."""

    def __init__(self) -> None:
        self.types: dict[str, int] = {}
        self.agents: list[str] = []
        self.models: list[str] = []
        self.handoffs: list[list[Any]] = []
        self.guardrails = 0
        self.triggered = 0
        self.errors = 0
        self.run_usage: dict[str, Any] | None = None

    def note(self, span: dict[str, Any], data: dict[str, Any], step: bool = False) -> None:
        kind = data["type"]
        self.types[kind] = self.types.get(kind, 0) + 1
        if step:
            return
        if span.get("error") is not None:
            self.errors += 1
        name = data.get("name")
        model = data.get("model")
        if kind in _MODEL_TYPES and isinstance(model, str) and model and model not in self.models:
            self.models.append(model)
        elif kind == "agent" and isinstance(name, str) and name not in self.agents:
            self.agents.append(name)
        elif kind == "handoff":
            self.handoffs.append([data.get("from_agent"), data.get("to_agent")])
        elif kind == "guardrail":
            self.guardrails += 1
            self.triggered += data.get("triggered") is True
        elif kind == "custom" and isinstance(data.get("data"), dict) and data["data"].get("sdk_span_type") == "task":
            if isinstance(data["data"].get("usage"), dict) and self.run_usage is None:
                self.run_usage = data["data"]["usage"]

    def into(self, meta: dict[str, Any]) -> None:
        if self.models:
            meta["model"] = self.models[0]
            if len(self.models) > 1:
                meta["models"] = self.models
        meta.update(agents=self.agents, handoffs=len(self.handoffs), span_types=self.types)
        if self.handoffs:
            meta["handoff_path"] = self.handoffs
        if self.guardrails:
            meta.update(guardrails=self.guardrails, guardrails_triggered=self.triggered)
        if self.types.get("mcp_tools"):
            meta["mcp_tools_spans"] = self.types["mcp_tools"]
        if self.errors:
            meta["span_errors"] = self.errors
        if self.run_usage is not None:
            meta["sdk_run_usage"] = self.run_usage


def _value(key: str, value: Any) -> Any:
    """A run-level value in the record's type (the SDK's metadata values are text), else None."""
    if key in ("run_id", "task_id"):
        return value if (isinstance(value, str) and value) or _is_int(value) else None
    if key == "seed":
        if _is_int(value):
            return value
        return int(value) if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()) else None
    if key == "outcome":
        if isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            text = value.strip().lower()
            if text in ("true", "false"):
                return text == "true"
            try:
                return float(text)
            except ValueError:
                return None
        return None
    if key in ("arm", "model", "harness"):
        return value if isinstance(value, str) and value else None
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    return number if isinstance(number, (int, float)) and not isinstance(number, bool) and number >= 0 else None


def _identity(trace: dict[str, Any], fields: FieldMap, missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The run-level fields; the required ones the trace lacks go to ``missing``; raises Reject."""
    out: dict[str, Any] = {}
    meta = trace.get("metadata") if isinstance(trace.get("metadata"), dict) else {}
    for key, name in fields.items():
        raw = lookup(trace, name)
        if raw is MISSING or raw is None:
            raw = lookup(meta, name)
        if raw is MISSING or raw is None:
            if key == "run_id":
                absent(missing, key, name, f"no run_id: the trace has no {name!r}")
            elif key in _HOW:
                absent(missing, key, name, f"no {key}: an OpenAI Agents trace does not record {_HOW[key]} and the "
                                           f"trace has no {name!r} (nor its metadata); set it in trace(metadata=...) "
                                           f"or map one with fields={{{key!r}: <a key of the trace or its metadata>}}")
            continue
        value = _value(key, raw)
        if value is None:
            raise Reject(name, f"{key} has the wrong type or value: {describe(raw)}")
        out[key] = value
    return out


def _convert(trace: dict[str, Any], spans: list[tuple[int, dict[str, Any]]], fields: FieldMap,
             missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    meta: dict[str, Any] = {"harness": "openai-agents"}
    for key in ("workflow_name", "group_id"):
        if isinstance(trace.get(key), str):
            meta[key] = trace[key]
    if isinstance(trace.get("metadata"), dict) and trace["metadata"]:
        meta["trace_metadata"] = trace["metadata"]
    steps = _walk(spans, meta)
    out = _identity(trace, fields, missing)
    for key in ("model", "harness"):
        if key in out:
            meta[key] = out.pop(key)
            meta.pop("models", None)
    wall = meta.pop("_wall", None)
    if wall is not None and "latency_s" not in out:
        out["latency_s"] = wall
    out["steps"] = steps
    out["metadata"] = meta
    return out


def _check_span(line: int, span: dict[str, Any]) -> None:
    data = span.get("span_data")
    if not isinstance(data, dict):
        raise _AtLine(line, "span_data", f"expected a span_data object, got {describe(data)}")
    kind = data.get("type")
    if kind not in SPAN_TYPES:
        raise _AtLine(line, "span_data.type", f"a span type the reader does not know: {describe(kind)}")


def trace_items(numbered: Iterator[tuple[int, Any, str | None]], fields: FieldMap | None = None) -> Iterator[Item]:
    """The items of ``(line, object, problem)`` triples: one per trace, and one per item that belongs to none."""
    plan = {**FIELDS, **(fields or {})}
    runs: dict[Any, dict[str, Any]] = {}  # trace id -> {"line", "trace", "spans", "problem"}
    for number, obj, problem in numbered:
        if problem is not None:
            yield Item(number, reason=problem)
            continue
        kind = obj.get("object") if isinstance(obj, dict) else None
        if kind not in ("trace", "trace.span"):
            yield Item(number, field="object", reason=f"expected an item with object 'trace' or 'trace.span', "
                                                       f"got {describe(kind if isinstance(obj, dict) else obj)}")
            continue
        key = obj.get("id") if kind == "trace" else obj.get("trace_id")
        if not isinstance(key, str) or not key:
            yield Item(number, field="id" if kind == "trace" else "trace_id",
                       reason=f"expected a trace id (text), got {describe(key)}")
            continue
        run = runs.setdefault(key, {"line": number, "trace": None, "spans": [], "problem": None})
        if kind == "trace":
            if run["trace"] is not None and run["problem"] is None:
                run["problem"] = _AtLine(number, "id", f"trace {key!r} is written twice")
            run["trace"] = obj
        else:
            run["spans"].append((number, obj))
    for key, run in runs.items():
        missing: dict[str, tuple[str | None, str]] = {}
        try:
            if run["problem"] is not None:
                raise run["problem"]
            for number, span in run["spans"]:
                _check_span(number, span)
            trace = run["trace"] if run["trace"] is not None else {"id": key}
            yield Item(run["line"], record=_convert(trace, run["spans"], plan, missing), missing=missing or None)
        except _AtLine as problem:
            yield Item(problem.line or run["line"], field=problem.field, reason=problem.reason)
        except Reject as problem:
            yield Item(run["line"], field=problem.field, reason=problem.reason)
        except RecursionError:
            yield Item(run["line"], reason="JSON nested too deeply to read")


def _numbered(fh: Any) -> Iterator[tuple[int, Any, str | None]]:
    """``(line, object, problem)`` of a JSON Lines file, a JSON array, or the ingest payload ``{"data": [...]}``."""
    body = fh.read().removeprefix(BOM)
    opener = body.lstrip(JSON_SPACE)[:1]
    if opener in (b"[", b"{"):
        try:
            whole = _decode(body)
        except (msgspec.DecodeError, RecursionError) as err:
            whole = err
        if isinstance(whole, list):
            yield from ((i, obj, None) for i, obj in enumerate(whole, start=1))
            return
        if isinstance(whole, dict) and isinstance(whole.get("data"), list) and "object" not in whole:
            yield from ((i, obj, None) for i, obj in enumerate(whole["data"], start=1))
            return
        if isinstance(whole, dict):  # one item (a one-line file, or one object spread over lines)
            yield 1, whole, None
            return
        if opener == b"[":
            yield 1, None, f"malformed JSON array: {whole}"
            return
    for number, raw in enumerate(body.split(b"\n"), start=1):
        if not raw.strip(JSON_SPACE):
            continue
        try:
            obj = _decode(raw)
        except msgspec.DecodeError as err:
            yield number, None, f"malformed JSON on line {number}: {err}"
            continue
        except RecursionError:
            yield number, None, f"JSON nested too deeply to read on line {number}"
            continue
        if isinstance(obj, dict) and isinstance(obj.get("data"), list) and "object" not in obj:
            yield from ((number, item, None) for item in obj["data"])  # one ingest payload per line
        else:
            yield number, obj, None


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The items of ``path``: one per trace (a record or a rejection naming the line and field)."""
    with open_trace_file(Path(path)) as fh:
        numbered = list(_numbered(fh))
    yield from trace_items(iter(numbered), fields)


def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
    """The items of in-memory exported traces and spans (dicts)."""
    yield from trace_items(((i, obj, None) for i, obj in enumerate(objects, start=1)), fields)


_SIGN = re.compile(rb'"object"\s*:\s*"trace(?:\.span)?"')


def sniff(head: bytes, name: str = "") -> bool:
    """OpenAI Agents exports: an ``"object": "trace"`` or ``"trace.span"`` key-value pair (the SDK's own tag).

    Never a file whose first record has our record's keys.
    """
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    if body[:1] not in (b"{", b"["):
        return False
    keys = first_keys(head)
    if keys is not None and is_record_keys(keys):
        return False
    return _SIGN.search(head) is not None


FORMAT = Format(
    name="openai-agents",
    summary="OpenAI Agents SDK trace export (trace and trace.span objects, as sent to the traces ingest endpoint)",
    example='{"data": [{"object": "trace", "id": "trace_1", "workflow_name": "fix-bug", "group_id": null, '
    '"metadata": {"agentab.task_id": "t1", "agentab.seed": "0", "agentab.outcome": "true"}}, '
    '{"object": "trace.span", "id": "span_1", "trace_id": "trace_1", "parent_id": null, '
    '"started_at": "2026-02-10T21:11:58+00:00", "ended_at": "2026-02-10T21:11:59+00:00", '
    '"span_data": {"type": "function", "name": "read_file", "input": "{\\"path\\": \\"a.py\\"}", "output": "x"}, '
    '"error": null}]}',
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
)
