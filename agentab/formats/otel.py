"""OpenTelemetry traces (OTLP/JSON) following the GenAI semantic conventions.

Input
-----
What OpenTelemetry's file and JSON exporters write (the Collector's ``file``
exporter, the OTLP file exporters of the SDKs): one ``{"resourceSpans": [...]}``
batch (an ``ExportTraceServiceRequest``) per line, or one JSON document (a
batch, or a list of batches), optionally gzip-compressed. The OTLP/JSON
encoding is that of the OTLP specification: ``traceId``/``spanId``/
``parentSpanId`` as hex text (base64, what protobuf's own JSON printer gives,
is accepted too and turned into hex), times as unix nanoseconds
(``startTimeUnixNano``/``endTimeUnixNano``, text or number), attributes as
``[{"key": k, "value": {"stringValue" | "intValue" | "doubleValue" |
"boolValue" | "arrayValue" | "kvlistValue" | "bytesValue": ...}}]`` (an
``intValue`` is text; a ``doubleValue`` that is NaN or infinite, written
``"NaN"``/``"Infinity"``, stays text: no record field takes it as a
number), status ``{"code": 2}`` or ``{"code":
"STATUS_CODE_ERROR"}``. Unknown fields (events, links, kind, flags...) are
ignored; the pre-1.0 ``instrumentationLibrarySpans`` is read like
``scopeSpans``. All batches of a file are read before runs are built, so a
run whose spans were exported in several batches (lines) is whole; a run
split across *files* is not (its spans in the other file are orphans).

Spans to runs (GenAI semantic conventions, ``gen_ai.*`` attributes)
-------------------------------------------------------------------
The conventions: https://opentelemetry.io/docs/specs/semconv/gen-ai/ (agent
spans: ``gen-ai-agent-spans``; since 2025 maintained in the
open-telemetry/semantic-conventions-genai repository, ``docs/gen-ai/``). The
deprecated names below are the ones the semantic-conventions registry
(``opentelemetry-semantic-conventions`` 0.66b2,
``opentelemetry.semconv._incubating.attributes.gen_ai_attributes``) lists as
replaced: ``gen_ai.system`` -> ``gen_ai.provider.name``,
``gen_ai.usage.prompt_tokens`` -> ``gen_ai.usage.input_tokens``,
``gen_ai.usage.completion_tokens`` -> ``gen_ai.usage.output_tokens``; plus
the names other instrumentations still emit: OpenLLMetry's older
``llm.usage.prompt_tokens``/``llm.usage.completion_tokens`` and
OpenInference's (Arize, ``spec/semantic_conventions.md``)
``openinference.span.kind`` (``AGENT``/``TOOL``/``LLM``), ``tool.name``,
``input.value``/``output.value``, ``llm.token_count.prompt``/
``llm.token_count.completion`` and ``llm.model_name``.

*Span kinds.* ``gen_ai.operation.name`` decides (``invoke_agent``;
``execute_tool``; ``chat``/``text_completion``/``generate_content`` are model
calls); without it, ``openinference.span.kind`` (``AGENT``/``TOOL``/``LLM``);
without either, the span name's first word (``invoke_agent ...``,
``execute_tool ...``, ``chat ...``; a leading ``gen_ai.`` is ignored).

*Runs.* Spans are grouped into trees by ``parentSpanId``. A tree's root is a
span without a parent, or an *orphan*: a span whose parent is not in the
file. Every outermost ``invoke_agent`` span of a tree is a run (a trace may
hold several; an ``invoke_agent`` span inside another, a sub-agent, belongs
to the outer run). A tree without one is a run when its root has no parent
(a plain root span, e.g. an agent instrumented by hand); an orphan tree
without one is a rejection ("span tree with no run"). Trees without any GenAI
span (no ``gen_ai.*``/``llm.*``/``openinference.*``/``agentab.*``/``tool.name``
attribute, no GenAI span name, no mapped task id on the root or its
resource), e.g. HTTP spans exported alongside, are not agent runs and are
skipped. A span id seen twice in a trace is read once (the first).

*Steps.* Every tool span in the run's subtree (sub-agents' ones included) is
a step, in order of start time (ties: order in the file):

==================  ==========================================================
step field          from
==================  ==========================================================
``tool``            ``gen_ai.tool.name``, ``tool.name``, else the span name
                    after ``execute_tool``
``args``            ``gen_ai.tool.call.arguments``, ``tool.arguments``,
                    ``input.value``: JSON text of an object (or a kvlist);
                    ``{}`` when none is recorded (the conventions make it
                    opt-in); malformed JSON or a non-object is a rejection
``observation``     ``{"status": "error"`` if the span status is ERROR else
                    ``"ok"``, ``"result"``: ``gen_ai.tool.call.result`` /
                    ``tool.result`` / ``output.value`` (JSON text parsed;
                    other text kept as text) when recorded, ``"error"``: the
                    status message, else ``error.type``, when failed ``}``;
                    ``null`` when the span has no end time (a call never
                    answered: kept as a non-terminated step)
``started_at``,     the span's start and end, ISO-8601 UTC text with
``ended_at``        nanoseconds
``metadata``        ``span_id``; ``tool_call_id`` from ``gen_ai.tool.call.id``
==================  ==========================================================

*Tokens* (``gen_ai.usage.input_tokens`` / ``gen_ai.usage.prompt_tokens`` /
``llm.usage.prompt_tokens`` / ``llm.token_count.prompt``, and the ``output``
/ ``completion`` counterparts) are counted once, at the lowest level they are
recorded: a span's usage counts only if no span below it (in the run) records
usage of that kind (input and output are decided separately). So when the
agent span carries the total and its ``chat`` children carry their own, the
children's sum is used; the agent span's own only when no child records
usage; a sub-agent's total is likewise replaced by its model calls'. Each
counted usage goes to one step: the innermost step whose span contains it
(a model call made inside a tool, e.g. an agent used as a tool), else the
first step that starts at or after it starts (the model call that chose the
tool), else the last step (the final answer after the last tool call). Steps
that receive none get 0, so the steps' sum is the run's total. A run where
no span records usage of a kind has that kind unknown (``null``) on every
step. A run without steps cannot hold its tokens in steps: its totals are
kept in ``metadata.tokens_in``/``tokens_out`` (given on every run whose
usage is known).

*Run-level fields* come from the run span's attributes, else its ancestors'
(nearest first: e.g. an evaluation harness's span around several runs), else
its resource's attributes; ``fields={"task_id": "my.attribute", ...}``
replaces an attribute name (keys: run_id, task_id, seed, arm, model, harness,
outcome, cost_usd, latency_s):

==============  ======================================  =====================
record field    default attribute                       also read (defaults)
==============  ======================================  =====================
``run_id``      ``gen_ai.conversation.id``              the trace id
``task_id``     ``agentab.task_id``
``seed``        ``agentab.seed`` (integer)
``arm``         ``agentab.arm``
``outcome``     ``agentab.outcome`` (bool or number)
model           ``gen_ai.request.model``                ``gen_ai.response.model``,
                                                        ``llm.model_name``, then
                                                        the run's first model call
harness         ``gen_ai.agent.name``                   the span name after
                                                        ``invoke_agent``
provider        ``gen_ai.provider.name`` (fixed)        ``gen_ai.system``
``cost_usd``    none (no convention records cost)
``latency_s``   none: the run span's duration
==============  ======================================  =====================

Model, harness and provider go to ``metadata`` (with ``trace_id``,
``span_id``, ``conversation_id``, ``started_at``/``ended_at`` of the run
span); ``latency_s`` is the run span's duration. With the default ``run_id``,
an id shared by several runs of the file (several runs in one trace, or
several turns of one conversation) is qualified with the run span's id:
``<trace id>:<span id>``, ``<conversation id>:<span id>``. A missing or ill-typed task_id, seed or outcome is
a rejection naming the span (trace id / span id) and the attribute.

*Two readers.* A JSON Lines file is read in columns by
:mod:`agentab.formats._otel_columns` (pyarrow's JSON reader, then vectorised
operations), which gives the same runs as reading span by span and leaves
any file it does not read that way (odd value types, base64 ids, duplicate
spans, any record to reject...) to the span-by-span reader here. A large
JSON Lines file is also split over processes by :func:`agentab.load_traces`
(:func:`read_part`). Either way a file is read whole into memory first.

Each run is one :class:`~agentab.formats._base.Item` (``line``: the line, or
1-based position in a list of batches, of the batch holding the run span);
each orphan tree without a run, malformed JSON line and line that is not an
OTLP batch is one rejection.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats.decode import Prepared, PreparedSteps, gc_paused
from agentab.formats.files import open_trace_file
from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap, Format, Item, Part
from agentab.formats._base import Reject as _Reject
from agentab.formats.record import INT64_MAX

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "read_part", "read_whole", "sniff", "splits"]

#: Default run-level field mapping: agentab name -> span/resource attribute.
FIELDS: dict[str, str] = {
    "run_id": "gen_ai.conversation.id",
    "task_id": "agentab.task_id",
    "seed": "agentab.seed",
    "arm": "agentab.arm",
    "outcome": "agentab.outcome",
    "model": "gen_ai.request.model",
    "harness": "gen_ai.agent.name",
}

# Names read after the default one (only while the default is in use).
_ALIASES: dict[str, tuple[str, ...]] = {
    "gen_ai.request.model": ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name"),
}
_PROVIDER = ("gen_ai.provider.name", "gen_ai.system")
_TOOL_NAME = ("gen_ai.tool.name", "tool.name")
_TOOL_ARGS = ("gen_ai.tool.call.arguments", "tool.arguments", "input.value")
_TOOL_RESULT = ("gen_ai.tool.call.result", "tool.result", "output.value")
_TOKENS_IN = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens",
              "llm.token_count.prompt")
_TOKENS_OUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens",
               "llm.token_count.completion")
_USAGE = frozenset(_TOKENS_IN + _TOKENS_OUT)
_OPERATION = "gen_ai.operation.name"
_OPENINFERENCE_KIND = "openinference.span.kind"
_MODEL_OPS = frozenset({"chat", "text_completion", "generate_content"})
_OPENINFERENCE_KINDS = {"AGENT": "agent", "TOOL": "tool", "LLM": "model"}
_GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.", "agentab.", "tool.name")
_STATUS_ERROR = frozenset({2, "STATUS_CODE_ERROR", "2"})

_AGENT, _TOOL, _MODEL = "agent", "tool", "model"
_OPERATION_KINDS = {"invoke_agent": _AGENT, "execute_tool": _TOOL, **dict.fromkeys(_MODEL_OPS, _MODEL)}


# ---------------------------------------------------------------- OTLP/JSON types


class _AnyValue(msgspec.Struct, rename="camel", gc=False):
    string_value: str | None = None
    bool_value: bool | None = None
    int_value: int | str | None = None
    double_value: float | str | None = None
    array_value: _ArrayValue | None = None
    kvlist_value: _KvList | None = None
    bytes_value: str | None = None


class _KeyValue(msgspec.Struct, gc=False):
    key: str
    value: _AnyValue | None = None


class _ArrayValue(msgspec.Struct, gc=False):
    values: list[_AnyValue] = []


class _KvList(msgspec.Struct, gc=False):
    values: list[_KeyValue] = []


class _Status(msgspec.Struct, gc=False):
    code: int | str | None = None
    message: str | None = None


def _internal(name: str, default: Any = None) -> Any:
    """A field filled in after decoding, under a JSON name no input has."""
    return msgspec.field(default=default, name=f"(agentab internal) {name}")


class _Span(msgspec.Struct, rename="camel", gc=False):
    """A span as decoded; the fields after ``status`` are filled in by :func:`_collect`.

    ``trace_id``, ``span_id`` and ``parent_span_id`` are rewritten as hex;
    ``attrs`` is the attributes by key (raw values); ``start``/``end`` (the
    span's ``startTimeUnixNano``/``endTimeUnixNano``) are rewritten as unix
    nanoseconds or None (``at``, of tool spans: ``start``, infinity when
    None, the sort key of steps); ``up`` the parent span when it is in the
    file; ``below`` what spans below it in its run record (1: input tokens,
    2: output tokens); ``step`` the index of the step a tool span became.
    The structs are not tracked by the garbage collector: spans refer to
    their parents only, never in a cycle.
    """

    trace_id: str = ""
    span_id: str = ""
    parent_span_id: str | None = None
    name: str = ""
    start: int | str | None = msgspec.field(default=None, name="startTimeUnixNano")
    end: int | str | None = msgspec.field(default=None, name="endTimeUnixNano")
    attributes: list[_KeyValue] | None = None
    status: _Status | None = None
    attrs: dict[str, _AnyValue | None] | None = _internal("attrs")
    res: dict[str, _AnyValue | None] | None = _internal("res")
    at: int | float | None = _internal("at")
    kind: str | None = _internal("kind")
    line: int | None = _internal("line")
    order: int | None = _internal("order")
    up: _Span | None = _internal("up")
    below: int = _internal("below", 0)
    step: int | None = _internal("step")


class _ScopeSpans(msgspec.Struct, gc=False):
    spans: list[_Span] | None = None


class _Resource(msgspec.Struct, gc=False):
    attributes: list[_KeyValue] | None = None


class _ResourceSpans(msgspec.Struct, rename="camel", gc=False):
    resource: _Resource | None = None
    scope_spans: list[_ScopeSpans] | None = None
    instrumentation_library_spans: list[_ScopeSpans] | None = None


class _Batch(msgspec.Struct, rename="camel", gc=False):
    resource_spans: list[_ResourceSpans]


_BATCH = msgspec.json.Decoder(_Batch)
_BATCHES = msgspec.json.Decoder(list[msgspec.Raw])
_JSON = msgspec.json.Decoder()
_NON_SPACE = re.compile(rb"\S")
_BOM = b"\xef\xbb\xbf"
_BLOCK = 1 << 24  # bytes read at a time
_ARROW_NS = 2**63  # Arrow's timestamps (int64 nanoseconds) hold the unix nanoseconds below this


def _value(v: _AnyValue | None) -> Any:
    """An OTLP ``AnyValue`` as a Python value (None when empty)."""
    if v is None:
        return None
    if v.string_value is not None:
        return v.string_value
    if v.int_value is not None:
        if isinstance(v.int_value, int):
            return v.int_value
        try:
            return int(v.int_value)
        except ValueError:
            return v.int_value
    if v.bool_value is not None:
        return v.bool_value
    if v.double_value is not None:
        try:
            number = float(v.double_value)
        except ValueError:
            return v.double_value
        # NaN and infinities (OTLP/JSON writes "NaN", "Infinity"): JSON, and agentab's record, has no such
        # number, so they stay text ("NaN", "inf"), which no numeric field accepts
        return number if math.isfinite(number) else str(v.double_value)
    if v.array_value is not None:
        return [_value(x) for x in v.array_value.values]
    if v.kvlist_value is not None:
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return v.bytes_value


def _hex_id(raw: str | None, cache: dict[str, str]) -> str:
    """A trace or span id as lowercase hex; base64 ids (protobuf's JSON printer) are converted."""
    if not raw:
        return ""
    out = raw.lower()
    if raw.endswith("=") and len(raw) in (12, 24):  # base64 of 8 / 16 bytes (padded); hex has no "="
        try:
            out = base64.b64decode(raw, validate=True).hex()
        except (binascii.Error, ValueError):
            pass
    cache[raw] = out
    return out


def _iso(ns: int | None) -> str | None:
    """Unix nanoseconds as ISO-8601 UTC text with nanoseconds (``2026-01-01T00:00:00.200000000Z``)."""
    if ns is None:
        return None
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)) + f"{fraction:09d}Z"


# ---------------------------------------------------------------- spans in memory


def _get(span: _Span, name: str) -> Any:
    return _value(span.attrs.get(name))


def _first(span: _Span, names: Sequence[str]) -> tuple[str, Any] | None:
    """The first of ``names`` a span records, as (name, value)."""
    attrs = span.attrs
    for name in names:
        if name in attrs:
            value = _value(attrs[name])
            if value is not None:
                return name, value
    return None


def _where(span: _Span) -> str:
    return f"trace {span.trace_id}, span {span.span_id} ({span.name or 'unnamed'})"


def _kind(name: str, attrs: dict[str, _AnyValue | None]) -> str | None:
    op = attrs.get(_OPERATION)
    if op is not None and op.string_value:
        op = op.string_value
        if op == "invoke_agent":
            return _AGENT
        if op == "execute_tool":
            return _TOOL
        return _MODEL if op in _MODEL_OPS else None
    return _kind_without_operation(name, _value(attrs[_OPENINFERENCE_KIND]) if _OPENINFERENCE_KIND in attrs
                                   else _MISSING)


def _kind_without_operation(name: str, openinference: Any = _MISSING) -> str | None:
    """The kind of a span without ``gen_ai.operation.name``: from ``openinference.span.kind`` (its value, if
    the span has the attribute), else from its name's first word (a leading ``gen_ai.`` ignored)."""
    if openinference is not _MISSING:
        found = _OPENINFERENCE_KINDS.get(str(openinference).upper())
        if found:
            return found
    word = name.removeprefix("gen_ai.")
    if word.startswith("invoke_agent"):
        return _AGENT
    if word.startswith("execute_tool"):
        return _TOOL
    return _MODEL if word.split(" ", 1)[0] in _MODEL_OPS else None


def _name_after(name: str, operation: str) -> str:
    """What a span's name says after its operation (``execute_tool read_file`` -> ``read_file``)."""
    return name.removeprefix("gen_ai.").removeprefix(operation).strip()


def _genai(span: _Span) -> bool:
    """Whether a span is GenAI-related (a kind, or an attribute of a GenAI vocabulary)."""
    return span.kind is not None or any(key.startswith(_GENAI_PREFIXES) for key in span.attrs)


# ---------------------------------------------------------------- reading


def _batches_of_bytes(data: bytes, number: int = 1) -> Iterator[tuple[int, _Batch | None, str | None]]:
    """``(line, batch, None)`` or ``(line, None, reason)`` for every batch of a file's bytes (``number``:
    1), or of whole lines of a JSON Lines file from line ``number``.

    JSON Lines unless the text is one document: it starts with ``[`` (a list
    of batches, numbered by position), or its first non-blank line does not
    end with ``}`` (a pretty-printed batch, line 1). Nothing is copied: lines
    are decoded as views of ``data``.
    """
    view = memoryview(data)
    size = len(data)
    offset = len(_BOM) if number == 1 and data[:len(_BOM)] == _BOM else 0
    first_line = _head(data) if number == 1 else b"{}"  # after the first: lines of a JSON Lines file
    if first_line is None:
        return
    if first_line.startswith(b"["):
        try:
            raws = _BATCHES.decode(view[offset:])
        except msgspec.DecodeError as exc:
            yield 1, None, f"malformed JSON: {exc}"
            return
        for position, raw in enumerate(raws, start=1):
            yield (position, *_decode_batch(raw))
        return
    if _is_document(first_line):
        yield (1, *_decode_batch(view[offset:]))
        return
    non_space = _NON_SPACE.search
    number, start = number - 1, offset
    while start <= size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        number += 1
        if non_space(data, start, end):
            yield (number, *_decode_batch(view[start:end]))
        start = end + 1


def _head(data: bytes) -> bytes | None:
    """The first non-blank line of a file's content (after a byte-order mark), stripped; None if blank."""
    offset = len(_BOM) if data[:len(_BOM)] == _BOM else 0
    found = _NON_SPACE.search(data, offset)
    if found is None:
        return None
    end = data.find(b"\n", found.start())
    return data[found.start():end if end >= 0 else len(data)].rstrip()


def _is_document(first_line: bytes) -> bool:
    """Whether a file whose first non-blank line is ``first_line`` is one JSON document (else JSON Lines)."""
    return first_line.startswith(b"[") or not first_line.endswith(b"}")


def _first_line(fh: Any) -> tuple[bytes, int, bytes | None]:
    """The bytes read so far (at least the first non-blank line, whole, unless the file ends first), where
    the content starts (after a byte-order mark), and the first non-blank line (None: the file is blank).

    Read in blocks of :data:`_BLOCK` bytes: a batch line is often megabytes."""
    data = fh.read(_BLOCK)
    while True:  # until the first non-blank line is whole
        offset = len(_BOM) if data[:len(_BOM)] == _BOM else 0
        found = _NON_SPACE.search(data, offset)
        if found is not None and data.find(b"\n", found.start()) >= 0:
            break
        more = fh.read(_BLOCK)
        if not more:
            break
        data += more
    if found is None:
        return data, offset, None
    end = data.find(b"\n", found.start())
    return data, offset, data[found.start():end if end >= 0 else len(data)].rstrip()


def _decode_batch(raw: bytes | memoryview | msgspec.Raw) -> tuple[_Batch | None, str | None]:
    try:
        return _BATCH.decode(raw), None
    except msgspec.ValidationError as exc:
        return None, f"not an OTLP trace batch ({{\"resourceSpans\": [...]}}): {exc}"
    except msgspec.DecodeError as exc:
        return None, f"malformed JSON: {exc}"


def _collect(batches: Iterator[tuple[int, _Batch | None, str | None]]) -> tuple[list[_Span], list[Item]]:
    """All spans of the batches (their internal fields filled in), and the rejections of unreadable batches.

    The loop is written out (no helper calls for ids, times and kinds in the
    usual case): it runs once per span.
    """
    spans: list[_Span] = []
    append = spans.append
    bad: list[Item] = []
    ids: dict[str, str] = {}  # raw trace / parent id -> hex (span ids are unique: converted directly)
    get_id = ids.get
    operation_kind = _OPERATION_KINDS.get
    inf = math.inf
    order = 0
    for line, batch, reason in batches:
        if batch is None:
            bad.append(Item(line=line, reason=reason))
            continue
        for rs in batch.resource_spans:
            res = {kv.key: kv.value for kv in rs.resource.attributes or ()} if rs.resource is not None else {}
            for scope in (rs.scope_spans or []) + (rs.instrumentation_library_spans or []):
                for span in scope.spans or ():
                    raw = span.trace_id
                    span.trace_id = get_id(raw) or _hex_id(raw, ids)
                    raw = span.span_id
                    span.span_id = raw.lower() if raw[-1:] != "=" else _hex_id(raw, ids)
                    raw = span.parent_span_id
                    span.parent_span_id = (get_id(raw) or _hex_id(raw, ids)) if raw else ""
                    attrs = {}
                    kvs = span.attributes
                    if kvs:
                        for kv in kvs:
                            attrs[kv.key] = kv.value
                        span.attributes = None
                    span.attrs = attrs
                    span.res = res
                    raw = span.start  # unix nanoseconds, None when absent, not an integer, or zero (unset)
                    if raw is not None:
                        try:
                            raw = int(raw)
                        except ValueError:
                            raw = None
                        else:
                            if raw <= 0:
                                raw = None
                        span.start = raw
                    raw = span.end
                    if raw is not None:
                        try:
                            raw = int(raw)
                        except ValueError:
                            raw = None
                        else:
                            if raw <= 0:
                                raw = None
                        span.end = raw
                    op = attrs.get(_OPERATION)
                    span.kind = kind = operation_kind(op.string_value) if op is not None and op.string_value \
                        else _kind(span.name, attrs)
                    if kind == _TOOL:
                        span.at = inf if span.start is None else span.start
                    span.line = line
                    span.order = order
                    order += 1
                    append(span)
    return spans, bad


def _read(batches: Iterator[tuple[int, _Batch | None, str | None]], fields: FieldMap | None) -> Part:
    """Every item of a file (or part of one), with the garbage collector paused, and the part's keys.

    The keys (:class:`~agentab.formats._base.Part`) are the trace ids of all
    spans read (``trace:<id>``: a span's parent, a duplicate span, the runs
    sharing a trace are found within its trace) and the run ids taken from
    the default ``run_id`` attribute or the trace id (``run:<id>``: one
    shared by several runs is qualified).

    Reading creates hundreds of thousands of small objects, none in a cycle
    (:func:`~agentab._decode.gc_paused`).
    """
    with gc_paused():
        return _items(*_collect(batches), {**FIELDS, **(fields or {})})


def _items(spans: list[_Span], bad: list[Item], mapping: Mapping[str, str]) -> Part:
    """Runs and rejections of a file's spans, in order of where they were read, and their keys (:func:`_read`)."""
    index = {(span.trace_id, span.span_id): span for span in spans}
    kept = spans
    if len(index) < len(spans):  # a span seen twice: the first is read
        index, kept = {}, []
        for span in spans:
            key = (span.trace_id, span.span_id)
            if key not in index:
                index[key] = span
                kept.append(span)
    roots: list[_Span] = []
    children: list[list[_Span] | None] = [None] * len(spans)  # by the parent's order
    get = index.get
    for span in kept:
        parent_id = span.parent_span_id
        if parent_id:
            parent = get((span.trace_id, parent_id))
            if parent is not None:
                span.up = parent
                siblings = children[parent.order]
                if siblings is None:
                    children[parent.order] = [span]
                else:
                    siblings.append(span)
                continue
        roots.append(span)

    out: list[tuple[int, int, Item | _Span]] = []  # (line, order, item)
    runs: list[_Span] = []
    trees: dict[int, list[_Span]] = {}  # the subtree of a run that is a tree's root, by its order
    seen = 0
    for root in roots:
        found, tree = _runs_in(root, children)
        seen += len(tree)
        if found and found[0] is root or not found and not root.parent_span_id:
            trees[root.order] = tree
        if found:
            runs.extend(found)
            continue
        if not any(_genai(span) for span in tree) and not _task_attribute(root, mapping):
            continue  # not an agent's spans (e.g. HTTP spans exported alongside)
        if not root.parent_span_id:
            runs.append(root)
            continue
        tools = sum(span.kind == _TOOL for span in tree)
        out.append((root.line, root.order, Item(
            line=root.line, field="parentSpanId",
            reason=f"span tree with no run: {_where(root)} has parent {root.parent_span_id}, which is not in the "
                   f"file, and no invoke_agent span below it ({len(tree)} span(s), {tools} tool call(s)); "
                   "a run's spans must be in one file")))
    if seen < len(kept):  # spans on a parent cycle are reachable from no root
        first = min((s for s in kept if not _reachable(s)), key=lambda s: s.order)
        out.append((first.line, first.order, Item(
            line=first.line, field="parentSpanId",
            reason=f"span tree with no run: {_where(first)} is on a cycle of parentSpanId links")))

    per_trace: dict[str, int] = {}
    for run in runs:
        per_trace[run.trace_id] = per_trace.get(run.trace_id, 0) + 1
    converted: list[tuple[_Span, dict[str, Any] | _Reject, str | None]] = []
    ids: dict[str, int] = {}
    for run in runs:
        subtree = trees.get(run.order) or _subtree(run, children)
        try:
            record, source = _record(run, mapping, subtree)
        except _Reject as exc:
            converted.append((run, exc, None))
        else:
            converted.append((run, record, source))
            if source is not None:
                ids[record.run_id] = ids.get(record.run_id, 0) + 1
        for span in subtree:  # no longer needed (runs' subtrees are disjoint): freed while still in cache
            span.attrs = span.status = None
    for run, record, source in converted:
        if isinstance(record, _Reject):
            out.append((run.line, run.order, Item(line=run.line, field=record.field, reason=record.reason)))
            continue
        record = _qualified(record, source, run.trace_id, run.span_id, ids, per_trace)
        out.append((run.line, run.order, Item(line=run.line, record=record)))
    for span in spans:  # no span outlives the reading with a parent link
        span.up = None
    out.extend((item.line, -1, item) for item in bad)
    out.sort(key=lambda entry: (entry[0], entry[1]))
    return Part([item for _, _, item in out], _part_keys({span.trace_id for span in spans}, ids))


def _reachable(span: _Span) -> bool:
    seen = set()
    node: _Span | None = span
    while node is not None:
        if id(node) in seen:
            return False
        seen.add(id(node))
        node = node.up
    return True


def _subtree(top: _Span, children: list[list[_Span] | None]) -> list[_Span]:
    """``top`` and every span below it, in pre-order (a parent before its descendants)."""
    out = [top]
    below = children[top.order]
    if not below:
        return out
    append = out.append
    stack = below[::-1]
    pop = stack.pop
    extend = stack.extend
    while stack:
        span = pop()
        append(span)
        below = children[span.order]
        if below:
            extend(reversed(below))
    return out


def _runs_in(root: _Span, children: list[list[_Span] | None]) -> tuple[list[_Span], list[_Span]]:
    """The outermost agent spans under ``root`` (itself included), and every span of the tree."""
    tree = _subtree(root, children)
    runs = [span for span in tree if span.kind == _AGENT and not _inside_run(span, root)]
    return runs, tree


def _inside_run(span: _Span, root: _Span) -> bool:
    node = span
    while node is not root and node.up is not None:
        node = node.up
        if node.kind == _AGENT:
            return True
    return False


def _task_attribute(span: _Span, mapping: Mapping[str, str]) -> bool:
    name = mapping["task_id"]
    return name in span.attrs or name in span.res


# ---------------------------------------------------------------- one run


def _lookup(run: _Span, names: Sequence[str]) -> tuple[str, Any, _Span | None] | None:
    """The first of ``names`` on the run span, its ancestors (nearest first), then its resource."""
    attrs = run.attrs  # the run span itself (_first, inline)
    for name in names:
        value = attrs.get(name)
        if value is not None:
            if value.string_value is not None:
                return name, value.string_value, run
            value = _value(value)
            if value is not None:
                return name, value, run
    node: _Span | None = run.up
    while node is not None:
        hit = _first(node, names)
        if hit is not None:
            return hit[0], hit[1], node
        node = node.up
    for name in names:
        value = _value(run.res.get(name))
        if value is not None:
            return name, value, None
    return None


def _names(mapping: Mapping[str, str], key: str) -> tuple[str, ...]:
    name = mapping[key]
    return _ALIASES.get(name, (name,)) if name == FIELDS[key] else (name,)


def _missing(run: _Span, key: str, name: str) -> _Reject:
    return _Reject(name, f"the run span ({_where(run)}) has no attribute {name} for {key} (looked in the span, "
                         f"its ancestors and its resource); name the attribute with fields={{{key!r}: ...}}")


def _ill_typed(run: _Span, key: str, name: str, value: Any, expected: str) -> _Reject:
    return _Reject(name, f"attribute {name} of the run span ({_where(run)}) gives {key} {value!r}: "
                         f"expected {expected}")


def _record(run: _Span, mapping: Mapping[str, str], subtree: list[_Span]) -> tuple[Prepared, str | None]:
    """The run of a run span (``subtree``: it and the spans below it, in pre-order), in the decoder's
    shape (:class:`~agentab._decode.Prepared`: every value as the record's schema requires it), and where
    its run_id came from (None: a user-mapped attribute)."""

    # ids and outcome
    task_id = _required(run, mapping, "task_id", _task_id, "text or an integer")
    seed = _required(run, mapping, "seed", _seed, "an integer that fits in 64 bits")
    outcome = _required(run, mapping, "outcome", _outcome, "a bool or a finite number")

    conversation = _get(run, "gen_ai.conversation.id")
    run_id_hit = _lookup(run, (mapping["run_id"],))
    source: str | None
    if run_id_hit is not None:
        run_id = _run_id(run_id_hit[1])
        if run_id is None:
            raise _ill_typed(run, "run_id", run_id_hit[0], run_id_hit[1], "text or an integer")
        source = "attribute" if mapping["run_id"] == FIELDS["run_id"] else None
    elif mapping["run_id"] == FIELDS["run_id"]:
        run_id, source = run.trace_id or run.span_id, "trace"
        if not run_id:
            raise _Reject("traceId", f"{_where(run)}: no run id: no attribute {FIELDS['run_id']}, and no trace "
                                     "or span id")
    else:
        raise _missing(run, "run_id", mapping["run_id"])

    arm = None
    arm_hit = _lookup(run, (mapping["arm"],))
    if arm_hit is not None:
        arm = _arm(arm_hit[1])
        if arm is None:
            raise _ill_typed(run, "arm", arm_hit[0], arm_hit[1], "text")

    steps, tokens_in, tokens_out = _steps(run, subtree)
    amounts: dict[str, float] = {}
    for key in ("cost_usd", "latency_s"):  # no default attribute: latency is the run span's duration
        name = mapping.get(key)
        hit = _lookup(run, (name,)) if name else None
        if hit is not None:
            amount = _amount(hit[1])
            if amount is None:
                raise _ill_typed(run, key, hit[0], hit[1], "a number >= 0")
            amounts[key] = amount
    if "latency_s" not in amounts and run.start is not None and run.end is not None and run.end >= run.start:
        amounts["latency_s"] = (run.end - run.start) / 1e9

    metadata: dict[str, Any] = {}
    model = _lookup(run, _names(mapping, "model"))
    if model is None and mapping["model"] == FIELDS["model"]:
        for span in subtree:
            if span.kind == _MODEL:
                hit = _first(span, _ALIASES[FIELDS["model"]])
                if hit is not None:
                    model = (*hit, span)
                    break
    if model is not None:
        metadata["model"] = str(model[1])
    harness = _lookup(run, _names(mapping, "harness"))
    if harness is not None:
        metadata["harness"] = str(harness[1])
    elif mapping["harness"] == FIELDS["harness"] and run.kind == _AGENT:
        name = _name_after(run.name, "invoke_agent")
        if name:
            metadata["harness"] = name
    provider = _lookup(run, _PROVIDER)
    if provider is None:
        for span in subtree:
            if span.kind == _MODEL:
                hit = _first(span, _PROVIDER)
                if hit is not None:
                    provider = (*hit, span)
                    break
    if provider is not None:
        metadata["provider"] = str(provider[1])
    metadata["trace_id"] = run.trace_id
    metadata["span_id"] = run.span_id
    if conversation is not None:
        metadata["conversation_id"] = str(conversation)
    for key, ns, name in (("started_at", run.start, "startTimeUnixNano"), ("ended_at", run.end, "endTimeUnixNano")):
        if ns is not None and ns >= _ARROW_NS:
            raise _Reject(name, f"{_where(run)}: {name} is out of range (after the year 2262)")
        if ns is not None:
            metadata[key] = _iso(ns)
    if tokens_in is not None:
        metadata["tokens_in"] = tokens_in
    if tokens_out is not None:
        metadata["tokens_out"] = tokens_out
    return Prepared(run_id, task_id, seed, arm, outcome, amounts.get("cost_usd"), amounts.get("latency_s"),
                    metadata, steps), source


def _required(run: _Span, mapping: Mapping[str, str], key: str, convert: Callable[[Any], Any],
              expected: str) -> Any:
    """A required run-level field: its attribute looked up (:func:`_lookup`) and converted, or a rejection
    naming the attribute (missing, or ``convert`` gives None)."""
    hit = _lookup(run, (mapping[key],))
    if hit is None:
        raise _missing(run, key, mapping[key])
    value = convert(hit[1])
    if value is None:
        raise _ill_typed(run, key, hit[0], hit[1], expected)
    return value


def _task_id(value: Any) -> str | int | None:
    """A task id: text or an integer (an integral float becomes one); None if the value is neither."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return value


def _run_id(value: Any) -> str | None:
    """A run id as text: from text or an integer; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return str(value)


def _seed(value: Any) -> int | None:
    """A seed: an integer (or integral text or float) that fits in 64 bits; None otherwise."""
    seed = _integer(value)
    return seed if seed is not None and -INT64_MAX - 1 <= seed <= INT64_MAX else None


def _arm(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _amount(value: Any) -> float | None:
    """A cost or duration: a number >= 0 (NaN is not); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None
    return float(value)


def _qualified(record: Prepared, source: str | None, trace_id: str, span_id: str, ids: Mapping[str, int],
               per_trace: Mapping[str, int]) -> Prepared:
    """A run with a default run id (``source``: "attribute", "trace") shared by several runs of the file,
    qualified by its run span's id: ``<id>:<span id>``."""
    if source is not None and (ids[record.run_id] > 1 or (source == "trace" and per_trace[trace_id] > 1)):
        return record._replace(run_id=f"{trace_id}:{span_id}" if source == "trace"
                               else f"{record.run_id}:{span_id}")
    return record


def _part_keys(trace_ids: Iterable[str], run_ids: Iterable[str]) -> frozenset[str]:
    """The keys of part of a file (:class:`~agentab.formats._base.Part`): its trace ids and default run ids."""
    return frozenset([*(f"trace:{trace_id}" for trace_id in trace_ids), *(f"run:{run_id}" for run_id in run_ids)])


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _outcome(value: Any) -> bool | int | float | None:
    """An outcome: a bool, a finite number, or text of one ("true", "0.5"); None otherwise."""
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
        try:
            value = float(text)
        except ValueError:
            return None
    return value if isinstance(value, float) and math.isfinite(value) else None


def _tokens(span: _Span, names: Sequence[str]) -> int | None:
    hit = _first(span, names)
    if hit is None:
        return None
    count = _integer(hit[1])
    if count is None or count < 0:
        raise _Reject(hit[0], f"attribute {hit[0]} of {_where(span)} is {hit[1]!r}: expected a token count "
                              "(an integer >= 0)")
    return count


def _count(span: _Span, names: Sequence[str]) -> int | None:
    """:func:`_tokens`, fast when the first name present holds an ``intValue``."""
    attrs = span.attrs
    for name in names:
        value = attrs.get(name)
        if value is not None:
            raw = value.int_value
            if raw is not None and value.string_value is None:
                try:
                    count = int(raw)
                except ValueError:
                    break
                if count >= 0:
                    return count
            break
    return _tokens(span, names)


_BY_ORDER = attrgetter("order")
_BY_START = attrgetter("at")


def _steps(run: _Span, subtree: list[_Span]) -> tuple[PreparedSteps, int | None, int | None]:
    """The run's steps (tokens attributed) as columns, and its input and output token totals (None: not
    recorded). A time Arrow cannot hold (after 2262) rejects the run."""
    tools = [span for span in subtree if span.kind == _TOOL]
    if len(tools) > 1:  # by start time (None last), ties in file order
        tools.sort(key=_BY_ORDER)
        tools.sort(key=_BY_START)
    names, arguments, observations, step_metadata = [], [], [], []
    starts_ns, ends_ns = [], []
    for i, span in enumerate(tools):
        tool, args, observation, metadata = _step(span)
        names.append(tool)
        arguments.append(args)
        observations.append(observation)
        step_metadata.append(metadata)
        span.step = i
        start, end = span.start, span.end
        if (start is not None and start >= _ARROW_NS) or (end is not None and end >= _ARROW_NS):
            # past 2262-04-11: no datetime64[ns] holds it (and past year 9999 no text formatting does)
            name = "startTimeUnixNano" if start is not None and start >= _ARROW_NS else "endTimeUnixNano"
            raise _Reject(name, f"{_where(span)}: {name} is out of range (after the year 2262)")
        starts_ns.append(start)
        ends_ns.append(end)
    n_steps = len(tools)
    unknown = [None] * n_steps

    def columns(tokens_in: list[int | None], tokens_out: list[int | None]) -> PreparedSteps:
        return PreparedSteps(names, arguments, observations, tokens_in, tokens_out, starts_ns, ends_ns,
                             step_metadata)

    # usage at the lowest level: a span's count is used only if no span below it (in the run) records one.
    # Descendants come before their ancestors (reversed pre-order); each span recording usage marks its
    # ancestors up to the run (``below``), stopping at one already marked (its ancestors are, too). A count
    # used goes to the step whose span contains it, else the first step starting at or after it, else the
    # last step (bisect on the steps' starts: ``at``, sorted).
    usage = [span for span in reversed(subtree) if not _USAGE.isdisjoint(span.attrs)]
    if not usage:
        return columns(unknown, unknown), None, None
    last = n_steps - 1
    starts = [span.at for span in tools]
    per_in = [0] * n_steps
    per_out = [0] * n_steps
    total_in: int | None = None
    total_out: int | None = None
    for span in usage:
        count_in = _count(span, _TOKENS_IN)
        count_out = _count(span, _TOKENS_OUT)
        below = span.below
        mark = 0
        if count_in is not None:
            mark = 1
            if below & 1:
                count_in = None  # recorded below: used there
        if count_out is not None:
            mark |= 2
            if below & 2:
                count_out = None
        if mark and span is not run:
            node = span.up
            while node is not None:
                below = node.below
                if below & mark == mark:
                    break
                node.below = below | mark
                if node is run:
                    break
                node = node.up
        if count_in is None and count_out is None:
            continue
        if count_in is not None:
            total_in = count_in if total_in is None else total_in + count_in
        if count_out is not None:
            total_out = count_out if total_out is None else total_out + count_out
        if not n_steps:
            continue
        node = span  # the innermost step whose span is this one or contains it (within the run)
        at = None
        while node is not None and node is not run:
            at = node.step
            if at is not None:
                break
            node = node.up
        if at is None:
            at = last if span.start is None else min(bisect.bisect_left(starts, span.start), last)
        if count_in is not None:
            per_in[at] += count_in
        if count_out is not None:
            per_out[at] += count_out
    return (columns(unknown if total_in is None else per_in, unknown if total_out is None else per_out),
            total_in, total_out)


def _step(span: _Span) -> tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """The tool, arguments, observation (None: never answered) and metadata of a tool span's step."""
    attrs = span.attrs
    value = attrs.get(_TOOL_NAME[0])  # the usual names first, directly
    name = value.string_value if value is not None else None
    if not name:
        tool = _first(span, _TOOL_NAME)
        if tool is not None:
            name = tool[1] if isinstance(tool[1], str) else str(tool[1])
        else:
            name = _name_after(span.name, "execute_tool")
        if not name:
            raise _Reject(_TOOL_NAME[0], f"the tool span {_where(span)} names no tool: no attribute "
                                         f"{' or '.join(_TOOL_NAME)}, and no name after execute_tool in its span "
                                         "name")
    args: Any = {}
    value = attrs.get(_TOOL_ARGS[0])
    hit = (_TOOL_ARGS[0], value.string_value) if value is not None and value.string_value is not None \
        else _first(span, _TOOL_ARGS)
    if hit is not None:
        attr, raw = hit
        if isinstance(raw, str):
            if raw.strip():
                try:
                    args = _JSON.decode(raw)
                except msgspec.DecodeError as exc:
                    raise _Reject(attr, f"attribute {attr} of the tool span {_where(span)} is not JSON: "
                                        f"{exc}") from None
        else:
            args = raw
        if not isinstance(args, dict):
            raise _Reject(attr, f"attribute {attr} of the tool span {_where(span)} is not a JSON object "
                                f"of arguments: {raw!r}")
    metadata = {"span_id": span.span_id}
    value = attrs.get("gen_ai.tool.call.id")
    if value is not None:
        metadata["tool_call_id"] = str(_value(value))
    if span.end is None:  # never answered
        return name, args, None, metadata
    status = span.status
    error = status is not None and status.code in _STATUS_ERROR
    observation: dict[str, Any] = {"status": "error" if error else "ok"}
    value = attrs.get(_TOOL_RESULT[0])
    result = (_TOOL_RESULT[0], value.string_value) if value is not None and value.string_value is not None \
        else _first(span, _TOOL_RESULT)
    if result is not None:
        value = result[1]
        if isinstance(value, str):
            try:
                value = _JSON.decode(value)
            except msgspec.DecodeError:
                pass
        observation["result"] = value
    if error:
        message = status.message or _value(attrs.get("error.type"))
        if message:
            observation["error"] = message
    return name, args, observation, metadata


# ---------------------------------------------------------------- the format


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The runs (and rejections) of an OTLP/JSON file (JSON Lines or one document; ``.gz`` too)."""
    with open_trace_file(Path(path)) as fh:
        return iter(_read_lines(fh.read(), 1, fields, whole=True).items)


def splits(path: Path) -> bool:
    """Whether :func:`read_part` can read ``path`` in parts: it is JSON Lines (not one document)."""
    with open_trace_file(Path(path)) as fh:
        _, _, first = _first_line(fh)
    return first is not None and not _is_document(first)


def read_part(path: Path, start: int, end: int, first_line: int, fields: FieldMap | None = None) -> Part:
    """The runs (and rejections) of the lines in bytes ``[start, end)`` of a JSON Lines file (see
    :attr:`~agentab.formats._base.Format.read_part`); ``first_line``: the number of the line at ``start``."""
    with open_trace_file(Path(path)) as fh:
        fh.seek(start)
        return _read_lines(fh.read(end - start), first_line, fields, whole=start == 0)


def read_whole(path: Path, fields: FieldMap | None = None) -> Part | None:
    """The runs and keys of a JSON Lines file read in columns, or None if that reader declines it (see
    :attr:`~agentab.formats._base.Format.read_whole`)."""
    from agentab.formats import _otel_columns

    with open_trace_file(Path(path)) as fh:
        data = fh.read()
    with gc_paused():
        return _otel_columns.read(data, 1, fields or {})


def _read_lines(data: bytes, first_line: int, fields: FieldMap | None, whole: bool) -> Part:
    """The items and keys of a file's content (``whole``; ``first_line`` 1), or of whole lines of a JSON
    Lines file from line ``first_line``.

    JSON Lines are read in columns (:mod:`agentab.formats._otel_columns`)
    when that reader reads them; anything else span by span.
    """
    # the column reader is built on this module's rules: imported once they exist
    from agentab.formats import _otel_columns

    if not whole or not _is_document(_head(data) or b"["):
        with gc_paused():
            part = _otel_columns.read(data, first_line, fields or {})
        if part is not None:
            return part
    return _read(_batches_of_bytes(data, 1 if whole else first_line), fields)


def read_objects(objects: Sequence[Any], name: str = "", fields: FieldMap | None = None) -> Iterator[Item]:
    """The runs (and rejections) of in-memory OTLP/JSON batches (dicts), ``line`` = 1-based position."""

    def batches() -> Iterator[tuple[int, _Batch | None, str | None]]:
        for position, obj in enumerate(objects, start=1):
            try:
                yield position, msgspec.convert(obj, _Batch), None
            except msgspec.ValidationError as exc:
                yield position, None, f"not an OTLP trace batch ({{\"resourceSpans\": [...]}}): {exc}"

    return iter(_read(batches(), fields).items)


def sniff(head: bytes, name: str = "") -> bool:
    """Whether a file's first bytes look like OTLP/JSON traces."""
    return b'"resourceSpans"' in head


_EXAMPLE = (
    '{"resourceSpans":[{"resource":{"attributes":[{"key":"agentab.task_id","value":{"stringValue":"fix-test"}},'
    '{"key":"agentab.seed","value":{"intValue":"0"}}]},"scopeSpans":[{"spans":['
    '{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"invoke_agent coder",'
    '"startTimeUnixNano":"1767225600000000000","endTimeUnixNano":"1767225604000000000","attributes":['
    '{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},'
    '{"key":"agentab.outcome","value":{"boolValue":true}}]},'
    '{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","parentSpanId":"eee19b7ec3c1b174",'
    '"name":"execute_tool read_file","startTimeUnixNano":"1767225601000000000",'
    '"endTimeUnixNano":"1767225601500000000","attributes":['
    '{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},'
    '{"key":"gen_ai.tool.name","value":{"stringValue":"read_file"}},'
    '{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\\"path\\": \\"src/main.py\\"}"}}],'
    '"status":{}}]}]}]}'
)

FORMAT = Format(
    name="otel",
    summary="OpenTelemetry OTLP/JSON trace export (GenAI semantic conventions): "
            "invoke_agent spans are runs, execute_tool spans are steps",
    example=_EXAMPLE,
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
    suffixes=(),
    read_part=read_part,
    splits=splits,
    read_whole=read_whole,
)
