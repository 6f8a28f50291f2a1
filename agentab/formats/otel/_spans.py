"""The span-by-span OTel reader: OTLP/JSON batches decoded into spans, spans into trees, trees into runs.

Batches are decoded by msgspec into :class:`Span` structs (a file's bytes:
:func:`batches_of_bytes`, or in-memory dicts); :func:`read` fills in each
span's ids, times and kind (:func:`collect`), links spans to their parents
and finds the runs of each tree and the trees without one (:func:`_items`),
and converts each run (:func:`agentab.formats.otel._run.record`). The rules
are in the :mod:`agentab.formats.otel` docstring; this reader reads every
file, the column reader (:mod:`._columns`) the regular ones, faster.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import Item
from agentab.formats.files import BOM
from agentab.formats.otel._rules import (
    AGENT,
    GENAI_PREFIXES,
    KIND_ATTRIBUTES,
    OPERATION,
    OPERATION_KINDS,
    TOOL,
    kind_without_operation,
)

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


class Span(msgspec.Struct, rename="camel", gc=False):
    """A span as decoded; the fields after ``status`` are filled in by :func:`collect`.

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
    up: Span | None = _internal("up")
    below: int = _internal("below", 0)
    step: int | None = _internal("step")


class _ScopeSpans(msgspec.Struct, gc=False):
    spans: list[Span] | None = None


class _Resource(msgspec.Struct, gc=False):
    attributes: list[_KeyValue] | None = None


class _ResourceSpans(msgspec.Struct, rename="camel", gc=False):
    resource: _Resource | None = None
    scope_spans: list[_ScopeSpans] | None = None
    instrumentation_library_spans: list[_ScopeSpans] | None = None


class Batch(msgspec.Struct, rename="camel", gc=False):
    resource_spans: list[_ResourceSpans]


_BATCH = msgspec.json.Decoder(Batch)
_BATCHES = msgspec.json.Decoder(list[msgspec.Raw])
NON_SPACE = re.compile(rb"\S")


def any_value(v: _AnyValue | None) -> Any:
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
        return [any_value(x) for x in v.array_value.values]
    if v.kvlist_value is not None:
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
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


# ---------------------------------------------------------------- spans in memory


def get(span: Span, name: str) -> Any:
    return any_value(span.attrs.get(name))


def first(span: Span, names: Sequence[str]) -> tuple[str, Any] | None:
    """The first of ``names`` a span records, as (name, value)."""
    attrs = span.attrs
    for name in names:
        if name in attrs:
            value = any_value(attrs[name])
            if value is not None:
                return name, value
    return None


def where(span: Span) -> str:
    return f"trace {span.trace_id}, span {span.span_id} ({span.name or 'unnamed'})"


def _kind(name: str, attrs: dict[str, _AnyValue | None]) -> str | None:
    """The kind of a span without ``gen_ai.operation.name`` (:func:`~._rules.kind_without_operation`)."""
    return kind_without_operation(name, *(any_value(attrs[key]) if key in attrs else _MISSING
                                          for key in KIND_ATTRIBUTES))


def _genai(span: Span) -> bool:
    """Whether a span is GenAI-related (a kind, or an attribute of a GenAI vocabulary)."""
    return span.kind is not None or any(key.startswith(GENAI_PREFIXES) for key in span.attrs)


# ---------------------------------------------------------------- a file's bytes to batches


def batches_of_bytes(data: bytes, number: int = 1) -> Iterator[tuple[int, Batch | None, str | None]]:
    """``(line, batch, None)`` or ``(line, None, reason)`` for every batch of a file's bytes (``number``:
    1), or of whole lines of a JSON Lines file from line ``number``.

    JSON Lines unless the text is one document: it starts with ``[`` (a list
    of batches, numbered by position), or its first non-blank line does not
    end with ``}`` (a pretty-printed batch, line 1). Nothing is copied: lines
    are decoded as views of ``data``.
    """
    view = memoryview(data)
    size = len(data)
    offset = len(BOM) if number == 1 and data[:len(BOM)] == BOM else 0
    first_line = head(data) if number == 1 else b"{}"  # after the first: lines of a JSON Lines file
    if first_line is None:
        return
    if is_document(first_line) and not _broken_first_line(data, first_line):
        if first_line.startswith(b"["):
            try:
                raws = _BATCHES.decode(view[offset:])
            except msgspec.DecodeError as exc:
                yield 1, None, f"malformed JSON: {exc}"
                return
            for position, raw in enumerate(raws, start=1):
                yield (position, *decode_batch(raw))
            return
        yield (1, *decode_batch(view[offset:]))
        return
    non_space = NON_SPACE.search
    number, start = number - 1, offset
    while start <= size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        number += 1
        if non_space(data, start, end):
            yield (number, *decode_batch(view[start:end]))
        start = end + 1


def head(data: bytes) -> bytes | None:
    """The first non-blank line of a file's content (after a byte-order mark), stripped; None if blank."""
    offset = len(BOM) if data[:len(BOM)] == BOM else 0
    found = NON_SPACE.search(data, offset)
    if found is None:
        return None
    end = data.find(b"\n", found.start())
    return data[found.start():end if end >= 0 else len(data)].rstrip()


def _broken_first_line(data: bytes, first_line: bytes) -> bool:
    """Whether a file that looks like one document (:func:`is_document`) is JSON Lines with a broken first
    line: the whole does not parse, and the next non-blank line is a batch of its own (one bad line must
    not cost the others)."""
    start = data.find(first_line) + len(first_line)
    found = NON_SPACE.search(data, start)
    if found is None:
        return False
    end = data.find(b"\n", found.start())
    second = data[found.start():end if end >= 0 else len(data)].rstrip()
    if not (second.startswith(b"{") and second.endswith(b"}")) or decode_batch(second)[0] is None:
        return False
    try:
        msgspec.json.decode(data.removeprefix(BOM))
    except (msgspec.DecodeError, RecursionError):
        return True
    return False


def is_document(first_line: bytes) -> bool:
    """Whether a file whose first non-blank line is ``first_line`` is one JSON document (else JSON Lines)."""
    return first_line.startswith(b"[") or not first_line.endswith(b"}")


def decode_batch(raw: bytes | memoryview | msgspec.Raw) -> tuple[Batch | None, str | None]:
    try:
        return _BATCH.decode(raw), None
    except msgspec.ValidationError as exc:
        return None, f"not an OTLP trace batch ({{\"resourceSpans\": [...]}}): {exc}"
    except msgspec.DecodeError as exc:
        return None, f"malformed JSON: {exc}"


# ---------------------------------------------------------------- spans to runs


def collect(batches: Iterator[tuple[int, Batch | None, str | None]]) -> tuple[list[Span], list[Item]]:
    """All spans of the batches (their internal fields filled in), and the rejections of unreadable batches.

    The loop is written out (no helper calls for ids, times and kinds in the
    usual case): it runs once per span.
    """
    spans: list[Span] = []
    append = spans.append
    bad: list[Item] = []
    ids: dict[str, str] = {}  # raw trace / parent id -> hex (span ids are unique: converted directly)
    get_id = ids.get
    operation_kind = OPERATION_KINDS.get
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
                    op = attrs.get(OPERATION)
                    span.kind = kind = operation_kind(op.string_value) if op is not None and op.string_value \
                        else _kind(span.name, attrs)
                    if kind == TOOL:
                        span.at = inf if span.start is None else span.start
                    span.line = line
                    span.order = order
                    order += 1
                    append(span)
    return spans, bad


class Forest(NamedTuple):
    """A file's span trees: the runs found, in file order, the spans of trees that are runs by their root's
    order, every span's children (by the parent's order), and the trees that are no run's, as rejections
    (``(line, order, item)``)."""

    runs: list[Span]
    trees: dict[int, list[Span]]
    children: list[list[Span] | None]
    rejected: list[tuple[int, int, Item]]


def forest(spans: list[Span], mapping: Mapping[str, str]) -> Forest:
    """The runs of a file's spans (:func:`collect`), the first of a span seen twice read."""
    kept, roots, children = _link(spans)
    out: list[tuple[int, int, Item]] = []
    runs: list[Span] = []
    trees: dict[int, list[Span]] = {}  # the subtree of a run that is a tree's root, by its order
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
        tools = sum(span.kind == TOOL for span in tree)
        out.append((root.line, root.order, Item(
            line=root.line, field="parentSpanId",
            reason=f"span tree with no run: {where(root)} has parent {root.parent_span_id}, which is not in the "
                   f"file, and no invoke_agent span below it ({len(tree)} span(s), {tools} tool call(s)); "
                   "a run's spans must be in one file")))
    if seen < len(kept):  # spans on a parent cycle are reachable from no root
        first = min((s for s in kept if not _reachable(s)), key=lambda s: s.order)
        out.append((first.line, first.order, Item(
            line=first.line, field="parentSpanId",
            reason=f"span tree with no run: {where(first)} is on a cycle of parentSpanId links")))
    return Forest(runs, trees, children, out)


def _link(spans: list[Span]) -> tuple[list[Span], list[Span], list[list[Span] | None]]:
    """The spans kept (the first of a span id seen twice in a trace), the roots (no parent, or a parent not
    in the file), and every span's children by the parent's order; each span's ``up`` set."""
    index = {(span.trace_id, span.span_id): span for span in spans}
    kept = spans
    if len(index) < len(spans):  # a span seen twice: the first is read
        index, kept = {}, []
        for span in spans:
            key = (span.trace_id, span.span_id)
            if key not in index:
                index[key] = span
                kept.append(span)
    roots: list[Span] = []
    children: list[list[Span] | None] = [None] * len(spans)  # by the parent's order
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
    return kept, roots, children


def _reachable(span: Span) -> bool:
    seen = set()
    node: Span | None = span
    while node is not None:
        if id(node) in seen:
            return False
        seen.add(id(node))
        node = node.up
    return True


def subtree(top: Span, children: list[list[Span] | None]) -> list[Span]:
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


def _runs_in(root: Span, children: list[list[Span] | None]) -> tuple[list[Span], list[Span]]:
    """The outermost agent spans under ``root`` (itself included), and every span of the tree."""
    tree = subtree(root, children)
    runs = [span for span in tree if span.kind == AGENT and not _inside_run(span, root)]
    return runs, tree


def _inside_run(span: Span, root: Span) -> bool:
    node = span
    while node is not root and node.up is not None:
        node = node.up
        if node.kind == AGENT:
            return True
    return False


def _task_attribute(span: Span, mapping: Mapping[str, str]) -> bool:
    """Whether the span or its resource has the task id's attribute (``fields={"task_id": ...}``; a task
    id read from the span's name makes no tree a run)."""
    name = mapping["task_id"]
    if name.startswith("resource:"):
        return name.removeprefix("resource:") in span.res
    return not name.startswith("span.name") and (name in span.attrs or name in span.res)
