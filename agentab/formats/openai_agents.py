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
its items; the item's line is the line of the trace's first item. A model
call's prompt and completion (a ``generation`` span's ``input`` / ``output``,
which the SDK records by default) are not read: their messages are left
undecoded, so they cost little beyond their bytes.

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
observation ``null``. The step's ``agent`` is the name of the nearest
``agent`` span above it; ``mcp_data`` is kept in its metadata. Each
``handoff`` span is a step of kind ``"handoff"``: tool
``transfer_to_<to_agent>`` (the SDK's default handoff tool name, lower case,
other characters as ``_``; a renamed handoff tool is not in the trace), args
``{"to": to_agent}``, agent ``from_agent``. The run's ``agents`` are the
agent spans' names and the handoffs' agents, in order of first appearance.

Tokens
------
``generation`` and ``response`` spans are the model calls (a trace with none
uses the SDK's ``custom`` ``turn`` spans instead): ``usage.input_tokens`` /
``output_tokens``, ``input_tokens_details.cached_tokens`` (a turn's
``cached_input_tokens``) and ``output_tokens_details.reasoning_tokens``. The
run's ``tokens_in`` / ``tokens_out`` / ``tokens_cached`` /
``tokens_reasoning`` are the sums over every call (a final answer that made
no call included); a count a call lacks leaves that total unknown. A call's
steps are its agent's steps that follow it before the agent's next call: the
first has the call's tokens, the others ``tokens_with_step`` and, with it, a
``parallel`` id (the call's span id). A call without usage leaves its step's
tokens unknown (``metadata.tokens_unknown``), never 0.

Other spans
-----------
``metadata`` has ``harness`` (``"openai-agents"``), ``model`` (of the model
calls; ``models`` when several), ``workflow_name``, ``group_id``,
``trace_metadata`` (the trace's metadata),
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

import math
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Union

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Part, Reject, lookup
from agentab.formats._message_fields import describe
from agentab.formats._missing import absent
from agentab.formats._openai_agents_steps import (
    SPAN_TYPES,
    AtLine,
    Shallow,
    Span,
    handoff_tool,
    span_decoder,
    span_of,
    walk,
)
from agentab.formats.decode import Prepared
from agentab.formats.files import (
    BOM,
    JSON_SPACE,
    first_keys,
    is_record_keys,
    object_lines,
    open_trace_file,
)

__all__ = ["FIELDS", "FORMAT", "SPAN_TYPES", "handoff_tool", "read_file", "read_objects", "read_part", "sniff", "splits",
           "trace_items"]

#: Default run-level mapping (looked up in the trace object, then in its ``metadata``).
FIELDS: dict[str, str] = {"run_id": "id", "task_id": "agentab.task_id", "seed": "agentab.seed",
                          "outcome": "agentab.outcome"}
_HOW = {"task_id": "the task", "seed": "a seed", "outcome": "an external verdict"}
_decode = msgspec.json.decode


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
    ok = isinstance(number, (int, float)) and not isinstance(number, bool) and number >= 0 and math.isfinite(number)
    return number if ok else None


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


def _convert(trace: dict[str, Any], spans: list[tuple[int, Span]], fields: FieldMap,
             missing: dict[str, tuple[str | None, str]]) -> Prepared:
    meta: dict[str, Any] = {"harness": "openai-agents"}
    for key in ("workflow_name", "group_id"):
        if type(trace.get(key)) is str:
            meta[key] = trace[key]
    if type(trace.get("metadata")) is dict and trace["metadata"]:
        meta["trace_metadata"] = trace["metadata"]
    steps, agents, totals = walk(spans, meta)
    out = _identity(trace, fields, missing)
    for key in ("model", "harness"):
        if key in out:
            meta[key] = out.pop(key)
            meta.pop("models", None)
    wall = meta.pop("_wall", None)
    latency = out.get("latency_s", wall)
    cost = out.get("cost_usd")
    run_id = out.get("run_id")
    return Prepared(None if run_id is None else str(run_id), out.get("task_id"), out.get("seed"), out.get("arm"),
                    out.get("outcome"), None if cost is None else float(cost),
                    None if latency is None else float(latency), meta, steps, agents, totals)


def trace_items(numbered: Iterator[tuple[int, Any, str | None]], fields: FieldMap | None = None) -> Iterator[Item]:
    """The items of ``(line, object, problem)`` triples: one per trace, and one per item that belongs to none.

    An object is a trace's dict, a span's :class:`Span`, or anything else (a rejection)."""
    odd, runs = _gather(numbered)
    yield from odd
    yield from _run_items(runs, fields)


def _run_items(runs: dict[str, list[Any]], fields: FieldMap | None) -> Iterator[Item]:
    """One item per trace of :func:`_gather`, in order of first appearance."""
    plan = {**FIELDS, **(fields or {})}
    for key, (line, trace, spans, problem) in runs.items():
        yield _trace_item(key, line, trace, spans, problem, plan)


def _gather(numbered: Iterable[tuple[int, Any, str | None]]) -> tuple[list[Item], dict[str, list[Any]]]:
    """The items that belong to no trace (rejections, in line order) and the traces: trace id -> ``[line, trace,
    spans, problem]`` (the line of its first item, its ``trace`` object or None, its ``(line, span)`` pairs, a
    problem found while gathering)."""
    odd: list[Item] = []
    runs: dict[str, list[Any]] = {}
    for number, obj, problem in numbered:
        if type(obj) is Span and obj.object == "trace.span":  # the usual item: a span of a trace already seen
            run = runs.get(obj.trace_id) if type(obj.trace_id) is str else None
            if run is not None:
                run[2].append((number, obj))
                continue
        if problem is not None:
            odd.append(Item(number, reason=problem))
            continue
        if type(obj) is dict:
            obj = _typed(obj)
            if type(obj) is _Bad:
                odd.append(Item(number, reason=obj.reason))
                continue
        kind = obj.object if type(obj) is Span else obj.get("object") if type(obj) is dict else None
        if kind not in ("trace", "trace.span") or (kind == "trace") != (type(obj) is dict):
            odd.append(Item(number, field="object", reason=f"expected an item with object 'trace' or 'trace.span', "
                                                         f"got {describe(obj if kind is None and type(obj) is not Span else kind)}"))
            continue
        key = obj.get("id") if kind == "trace" else obj.trace_id
        if type(key) is not str or not key:
            odd.append(Item(number, field="id" if kind == "trace" else "trace_id",
                            reason=f"expected a trace id (text), got {describe(key)}"))
            continue
        run = runs.get(key)
        if run is None:
            run = runs[key] = [number, None, [], None]
        if kind == "trace":
            if run[1] is not None and run[3] is None:
                run[3] = AtLine(number, "id", f"trace {key!r} is written twice")
            run[1] = obj
        else:
            run[2].append((number, obj))
    return odd, runs


def _trace_item(key: str, line: int, trace: dict[str, Any] | None, spans: list[tuple[int, Span]],
                problem: AtLine | None, plan: FieldMap) -> Item:
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        if problem is not None:
            raise problem
        record: Any = _convert(trace if trace is not None else {"id": key}, spans, plan, missing)
        if missing:  # the record then leaves the missing fields out, for the loader to fill
            record = record.to_record()
            for name in missing:
                record.pop(name, None)
        return Item(line, record=record, missing=missing or None)
    except AtLine as at:
        return Item(at.line or line, field=at.field, reason=at.reason)
    except Reject as at:
        return Item(line, field=at.field, reason=at.reason)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read")


def _typed(obj: Any) -> Any:
    """An in-memory span's dict as a :class:`Span` (through its JSON: a Span holds the members of its ``input`` and
    ``output`` as JSON), or :class:`_Bad` when it is not JSON; other objects as they are."""
    if type(obj) is dict and obj.get("object") == "trace.span":
        try:
            return span_of(obj)
        except (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError) as err:
            return _Bad(f"a span that is not JSON: {err}")
    return obj


class _Top(msgspec.Struct):
    """A JSON object document's keys the reader looks at: an ingest payload's ``data`` (and no ``object``)."""

    data: Shallow = None
    object: Any = msgspec.UNSET


_TOP = msgspec.json.Decoder(Union[list[msgspec.Raw], _Top])


def _numbered(fh: Any) -> Iterator[tuple[int, Any, str | None]]:
    """``(line, object, problem)`` of a JSON Lines file, a JSON array, or the ingest payload ``{"data": [...]}``:
    spans as :class:`Span`, traces as dicts."""
    body = fh.read().removeprefix(BOM)
    opener = body.lstrip(JSON_SPACE)[:1]
    if opener in (b"[", b"{"):
        try:  # the document's items as undecoded JSON, each decoded by itself below
            top = _TOP.decode(body)
        except (msgspec.DecodeError, RecursionError) as err:
            top = _Bad(str(err))  # not the exception: its traceback would hold this frame in a reference cycle
        if type(top) is list:
            yield from (_member(i, raw) for i, raw in enumerate(top, start=1))
            return
        if type(top) is _Top and type(top.data) is list and top.object is msgspec.UNSET:
            yield from (_member(i, raw) for i, raw in enumerate(top.data, start=1))
            return
        if type(top) is _Top:  # one item (a one-line file, or one object spread over lines)
            yield _member(1, body)
            return
        if opener == b"[":
            yield 1, None, f"malformed JSON array: {top.reason}"
            return
    yield from _lines(body, 1)


def _member(number: int, raw: Any) -> tuple[int, Any, str | None]:
    """``(number, object, problem)`` of an item of a JSON array or an ingest payload (valid JSON): a span as a
    :class:`Span`, anything else decoded whole."""
    try:
        try:
            obj = span_decoder.decode(raw)
        except msgspec.ValidationError:  # not an object
            return number, _decode(raw), None
        return number, obj if obj.object == "trace.span" else _decode(raw), None
    except RecursionError:
        return number, None, "JSON nested too deeply to read"


def _lines(body: bytes, first: int) -> Iterator[tuple[int, Any, str | None]]:
    """``(line, object, problem)`` of JSON Lines (``body``, whole lines; its first is line ``first``)."""
    lines = body.split(b"\n")
    numbers, whole = object_lines(body, lines, first)
    try:  # every line at once; a malformed line (or a count that differs) is found line by line below
        objects = span_decoder.decode_lines(body) if whole else None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        objects = None
    if objects is not None and len(objects) == len(numbers):
        pairs: Iterator[tuple[int, Any]] = zip(numbers, objects)
    else:
        pairs = ((number, _line(lines[number - first], number)) for number in numbers)
    for number, obj in pairs:
        if type(obj) is Span:
            kind = obj.object
            if kind == "trace.span":  # the usual line first
                yield number, obj, None
            elif kind == "trace":
                yield number, _decode(lines[number - first]), None
            elif kind is None and type(obj.data) is list:  # one ingest payload per line
                yield from (_member(number, raw) for raw in obj.data)
            else:
                yield number, obj, None
        elif type(obj) is _Bad:
            yield number, None, obj.reason
        else:
            yield number, obj, None


class _Bad:
    """A line that is not JSON."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _line(raw: bytes, number: int) -> Any:
    """A line's span (:class:`Span`) or other value, or why it is not JSON."""
    try:
        try:
            return span_decoder.decode(raw)
        except msgspec.ValidationError:  # another value, or a malformed line that opens as one ('"id": 1}')
            return _decode(raw)
    except msgspec.DecodeError as err:
        return _Bad(f"malformed JSON on line {number}: {err}")
    except RecursionError:
        return _Bad(f"JSON nested too deeply to read on line {number}")


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The items of ``path``: one per trace (a record or a rejection naming the line and field)."""
    with open_trace_file(Path(path)) as fh:
        numbered = list(_numbered(fh))
    yield from trace_items(iter(numbered), fields)


#: How far past a part's end (and its next part's start) a trace's first line is looked for.
_REACH = 8 * 2**20
#: What is read past a part's end first (and of a file's head, to see its first line): the rest of the reach only
#: if the line looked for is not in it.
_GLANCE = 256 * 2**10
_TRACE_LINE = re.compile(rb'"object"\s*:\s*"trace"')


def splits(path: Path) -> bool:
    """Whether :func:`read_part` can read ``path`` in parts: JSON Lines whose first line is one exported item (not
    a JSON array, an ingest payload, or one object spread over lines), without a byte-order mark."""
    with open_trace_file(Path(path)) as fh:
        head = fh.read(_GLANCE)  # the first line, and something past it: a file's first item is short
        body = head.lstrip(JSON_SPACE)
        line, newline, rest = body.partition(b"\n")
        if not newline or not rest.strip(JSON_SPACE):  # else as far as the reach
            body = (head + fh.read(_REACH - len(head))).lstrip(JSON_SPACE)
            line, newline, rest = body.partition(b"\n")
    if not newline or not rest.strip(JSON_SPACE) or body[:1] != b"{":
        return False
    try:
        first = span_decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False
    return first.object in ("trace", "trace.span")


def _boundary(data: bytes, at: int, rest: int) -> int | None:
    """The first line at or after offset ``at`` (a line start) that is a ``trace`` item, within :data:`_REACH`
    bytes: where a part ends and the next begins, found alike by both (``rest``: the bytes from ``data``'s start
    to the end of the file). ``at`` when there is no such line that near; the end of the file when it comes
    first; None when ``data`` stops short of both before such a line (more is to be read)."""
    limit = min(len(data), at + _REACH)
    ends = limit >= rest  # the lines looked at run to the end of the file
    short = not ends and limit < at + _REACH
    position = at
    while position < limit:
        stop = data.find(b"\n", position, limit)
        if stop < 0:  # a line running past the limit (or, at the end of the file, without a newline)
            break
        line = data[position:stop]
        if _TRACE_LINE.search(line) is not None:
            try:
                if span_decoder.decode(line).object == "trace":
                    return position
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                pass
        position = stop + 1
    return None if short else rest if ends else at


def read_part(path: Path, start: int, end: int, first_line: int, fields: FieldMap | None = None) -> Part:
    """The traces of the lines in bytes ``[start, end)`` of a JSON Lines export (see
    :attr:`~agentab.formats._base.Format.read_part`), the part's edges moved to the next ``trace`` item's line
    (:func:`_boundary`) so that a trace written in one stretch is read whole by one part. Its keys are its trace
    ids; and ``"\\0"`` in the first part and in any later part with a line that is no trace's (a rejection of
    its own, which a serial read gives before every run): two parts then share a key, and the file is read in one
    piece."""
    with open_trace_file(Path(path)) as fh:
        rest = os.fstat(fh.fileno()).st_size - start
        for reach in (_GLANCE, _REACH):  # the next trace's line is usually near: read further only if it is not
            fh.seek(start)
            data = fh.read(end - start + reach)
            lo = _boundary(data, 0, rest) if start > 0 else 0
            hi = _boundary(data, end - start, rest)
            if lo is not None and hi is not None:
                break
    assert lo is not None and hi is not None  # (read to the reach: always found)
    if hi <= lo:
        return Part([], frozenset())
    odd, runs = _gather(_lines(data[lo:hi], first_line + data.count(b"\n", 0, lo)))
    keys = set(runs)
    if start == 0 or odd:
        keys.add("\0")
    return Part([*odd, *_run_items(runs, fields)], frozenset(keys))


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
    read_part=read_part,
    splits=splits,
)
