"""The column reader's arrays: an OTLP/JSON Lines file parsed by pyarrow, spans as arrays, runs and steps found.

:func:`spans` parses the file into :class:`Spans` (one array per span
field, the attributes looked up by key for all spans at once:
:class:`Attrs`); :func:`layout` finds each span's kind, parent and run and
the steps' order (:class:`Layout`); :func:`usage` attributes token counts
to steps. All of it is vectorised (numpy, pyarrow compute); anything the
arrays cannot express in the span-by-span reader's terms raises
:class:`Unhandled` (the reader then declines the file). The rules are those
of :mod:`agentab.formats.otel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from agentab.formats._base import MISSING
from agentab.formats.otel import _rules
from agentab.formats.record import INT64_MAX

#: Array, kvlist and bytes values are read only to see that they are there (an empty struct: present or not).
_ANY = pa.struct([("stringValue", pa.string()), ("intValue", pa.string()), ("boolValue", pa.bool_()),
                  ("doubleValue", pa.float64()), ("arrayValue", pa.struct([])), ("kvlistValue", pa.struct([])),
                  ("bytesValue", pa.string())])
_OTHER_VALUES = ("arrayValue", "kvlistValue", "bytesValue")
_KVS = pa.list_(pa.struct([("key", pa.string()), ("value", _ANY)]))
_SPAN = pa.struct([
    ("traceId", pa.string()), ("spanId", pa.string()), ("parentSpanId", pa.string()), ("name", pa.string()),
    ("startTimeUnixNano", pa.string()), ("endTimeUnixNano", pa.string()), ("attributes", _KVS),
    ("status", pa.struct([("code", pa.int64()), ("message", pa.string())])),
])
_SCHEMA = pa.schema([("resourceSpans", pa.list_(pa.struct([
    ("resource", pa.struct([("attributes", _KVS)])),
    ("scopeSpans", pa.list_(pa.struct([("spans", pa.list_(_SPAN))]))),
    ("instrumentationLibrarySpans", pa.list_(pa.struct([]))),
])))])
_BLOCK = 1 << 24  # bytes per block of the JSON reader (a block must hold a whole line)
NONE, AGENT, TOOL, MODEL = 0, 1, 2, 3
_KIND = {None: NONE, _rules.AGENT: AGENT, _rules.TOOL: TOOL, _rules.MODEL: MODEL}
_OPERATIONS = list(_rules.OPERATION_KINDS)
_OPERATION_CODES = np.array([_KIND[_rules.OPERATION_KINDS[name]] for name in _OPERATIONS] + [NONE], np.int8)


class Unhandled(Exception):
    """The input is outside what this reader reads: the span-by-span reader reads it."""


def _parse(data: bytes) -> pa.Table:
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    options = pj.ParseOptions(explicit_schema=_SCHEMA, unexpected_field_behavior="ignore")
    for block in (_BLOCK, len(data) + 1):
        try:
            table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=block),
                                 parse_options=options)
        except pa.ArrowInvalid as err:
            if "straddl" in str(err) and block < len(data) + 1:
                continue  # a line longer than a block: one block
            raise Unhandled from err
        except (pa.ArrowException, ValueError) as err:
            raise Unhandled from err
        break
    if table.num_rows != lines:  # a blank line (skipped by the reader): line numbers would not match
        raise Unhandled
    return table


def _field(array: pa.Array, name: str) -> pa.Array:
    return pc.struct_field(array, name)


def _array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array (the JSON reader's blocks are chunks)."""
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def numpy(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False)


class Attrs:
    """The attributes of a file's spans (or resources), looked up by key for all of them at once."""

    def __init__(self, lists: pa.Array) -> None:
        self.owner = numpy(pc.list_parent_indices(lists)).astype(np.int64)
        kvs = pc.list_flatten(lists)
        keys = _field(kvs, "key")
        values = _field(kvs, "value")
        if keys.null_count or values.null_count:  # a key without a value (or a value without a key)
            raise Unhandled
        self.other: np.ndarray | None = None  # rows holding an array, kvlist or bytes value (None: no row)
        for name in _OTHER_VALUES:
            column = _field(values, name)
            if column.null_count < len(values):
                valid = numpy(pc.is_valid(column))
                self.other = valid if self.other is None else self.other | valid
        encoded = pc.dictionary_encode(_array(keys))
        self.code = numpy(encoded.indices).astype(np.int64)
        self.names: list[str] = encoded.dictionary.to_pylist()
        self.index = {name: k for k, name in enumerate(self.names)}
        if len(self.code) and _repeats(self.owner, self.code, len(self.names)):
            raise Unhandled  # a key twice on one span: the last would win
        self.sv = _field(values, "stringValue")
        self.iv = _field(values, "intValue")
        self.bv = _field(values, "boolValue")
        self.dv = _field(values, "doubleValue")

    def rows(self, key: str) -> np.ndarray:
        code = self.index.get(key)
        return np.zeros(0, np.int64) if code is None else np.flatnonzero(self.code == code)

    def has(self, key: str, n: int) -> np.ndarray:
        out = np.zeros(n, bool)
        out[self.owner[self.rows(key)]] = True
        return out

    def strings(self, key: str, owners: np.ndarray, n: int) -> list[str | None]:
        """The attribute's ``stringValue`` on each of ``owners`` (of ``n``; None: absent, or another type)."""
        at = np.full(n, -1, np.int64)  # the row of each owner's attribute
        rows = self.rows(key)
        at[self.owner[rows]] = rows
        taken = at[owners]
        return self.sv.take(pa.array(taken, mask=taken < 0)).to_pylist()

    def values(self, key: str) -> dict[int, Any]:
        """Owner -> the attribute's value as :func:`agentab.formats.otel._spans.any_value` gives it."""
        rows = self.rows(key)
        if not len(rows):
            return {}
        if self.other is not None and self.other[rows].any():
            raise Unhandled  # an array, kvlist or bytes value of an attribute read
        take = pa.array(rows)
        texts = self.sv.take(take)
        if not texts.null_count:  # every value text (the usual case): no other type to look at
            return dict(zip(self.owner[rows].tolist(), texts.to_pylist()))
        out = {}
        for owner, sv, iv, bv, dv in zip(self.owner[rows].tolist(), texts.to_pylist(),
                                         self.iv.take(take).to_pylist(), self.bv.take(take).to_pylist(),
                                         self.dv.take(take).to_pylist()):
            if sv is not None:
                out[owner] = sv
            elif iv is not None:
                try:
                    out[owner] = int(iv)
                except ValueError:
                    out[owner] = iv
            elif bv is not None:
                out[owner] = bv
            else:
                out[owner] = dv  # JSON holds no NaN or infinity; None when the value is empty
        return out


def _repeats(owner: np.ndarray, code: np.ndarray, n_codes: int) -> bool:
    """Whether some owner has some code twice."""
    pairs = owner * n_codes + code
    if (int(owner[-1]) + 1) * n_codes <= 1 << 26:  # counting is cheaper than sorting
        return bool(np.bincount(pairs).max() > 1)
    pairs = np.sort(pairs)
    return bool((pairs[1:] == pairs[:-1]).any())


def fixed_point(step: Any, start: np.ndarray, limit: int = 10_000) -> np.ndarray:
    """Apply ``step`` until nothing changes (``limit`` times at most: then the input is not read here)."""
    current = start
    for _ in range(limit):
        following = step(current)
        if np.array_equal(following, current):
            return current
        current = following
    raise Unhandled


def _times(texts: pa.Array) -> np.ndarray:
    """Unix nanoseconds from OTLP's decimal text; -1 where absent or not positive (unset)."""
    try:
        values = pc.cast(texts, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:  # not plain digits, or past int64
        raise Unhandled from err
    out = numpy(pc.fill_null(values, -1)).astype(np.int64)
    out[out <= 0] = -1
    return out


# ---------------------------------------------------------------- a file's spans


@dataclass(frozen=True)
class Spans:
    """A file's spans in file order (lines, resources, scopes, spans), one array (or attribute table) per
    field; ids lowercase, times unix nanoseconds (-1: unset), ``kind`` codes (NONE, AGENT, TOOL, MODEL)."""

    n: int
    line_of: np.ndarray  # the line of each span's batch
    resource_of: np.ndarray  # the index of each span's resource
    n_resources: int
    trace: pa.Array
    span_id: pa.Array
    parent_id: pa.Array  # "" for none
    names: pa.Array
    starts: np.ndarray
    ends: np.ndarray
    failed: np.ndarray  # status ERROR
    messages: pa.Array  # status messages
    attrs: Attrs
    res: Attrs  # the resources' attributes
    kind: np.ndarray


def spans(data: bytes, first_line: int) -> Spans:
    """The spans of whole JSON Lines ``data`` whose first line is ``first_line``."""
    batches = _parse(data).column("resourceSpans")  # chunks of lines: not copied into one array
    if batches.null_count:
        raise Unhandled  # a line that is not an OTLP batch
    line_of_resource = numpy(pc.list_parent_indices(batches))
    resources = pc.list_flatten(batches)
    if _field(resources, "instrumentationLibrarySpans").null_count < len(resources):
        raise Unhandled  # the pre-1.0 name of scopeSpans
    scopes = _field(resources, "scopeSpans")
    resource_of_scope = numpy(pc.list_parent_indices(scopes))
    scope_spans = _field(pc.list_flatten(scopes), "spans")
    scope_of_span = numpy(pc.list_parent_indices(scope_spans))
    flat = pc.list_flatten(scope_spans)
    resource_of = resource_of_scope[scope_of_span].astype(np.int64)
    trace, span_id, parent_id = _ids(flat)
    names = pc.fill_null(_field(flat, "name"), "")
    status = _field(flat, "status")
    attrs = Attrs(_field(flat, "attributes"))
    return Spans(
        n=len(flat), line_of=(line_of_resource[resource_of] + first_line).astype(np.int64),
        resource_of=resource_of, n_resources=len(resources),
        trace=trace, span_id=span_id, parent_id=parent_id, names=names,
        starts=_times(_field(flat, "startTimeUnixNano")), ends=_times(_field(flat, "endTimeUnixNano")),
        failed=numpy(pc.fill_null(pc.equal(_field(status, "code"), 2), False)), messages=_field(status, "message"),
        attrs=attrs,
        res=Attrs(_field(_field(resources, "resource"), "attributes") if len(resources) else pa.array([], _KVS)),
        kind=_kinds(attrs, names, len(flat)))


def _ids(flat: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Trace, span and parent ids, lowercase (parent: "" for none); empty, base64 or non-ASCII ids are
    :class:`Unhandled`."""
    trace = _field(flat, "traceId")
    span_id = _field(flat, "spanId")
    parent_id = pc.fill_null(_field(flat, "parentSpanId"), "")
    for ids in (trace, span_id):
        if ids.null_count or pc.any(pc.equal(ids, "")).as_py():
            raise Unhandled
    if any(pc.any(pc.ends_with(ids, "=")).as_py() for ids in (trace, span_id, parent_id)):
        raise Unhandled  # base64 ids (protobuf's JSON printer)
    for ids in (trace, span_id, parent_id):
        if not pc.all(pc.string_is_ascii(ids)).as_py():
            raise Unhandled
    return pc.ascii_lower(trace), pc.ascii_lower(span_id), pc.ascii_lower(parent_id)


def _kinds(attrs: Attrs, names: pa.Array, n: int) -> np.ndarray:
    """Each span's kind: gen_ai.operation.name, else the other families' kind attributes, else the span name
    (:func:`~._rules.kind_without_operation`)."""
    kind = np.zeros(n, np.int8)
    decided = np.zeros(n, bool)
    rows = attrs.rows(_rules.OPERATION)
    if len(rows):
        operation = attrs.sv.take(pa.array(rows))
        named = numpy(pc.fill_null(pc.not_equal(operation, ""), False))
        codes = numpy(pc.fill_null(pc.index_in(operation, value_set=pa.array(_OPERATIONS)), len(_OPERATIONS)))
        owners = attrs.owner[rows][named]
        kind[owners] = _OPERATION_CODES[codes[named]]
        decided[owners] = True
    undecided = np.flatnonzero(~decided)
    if len(undecided):
        by_key = [attrs.values(key) for key in _rules.KIND_ATTRIBUTES]
        name_list = names.take(pa.array(undecided)).to_pylist()
        for i, name in zip(undecided.tolist(), name_list):
            kind[i] = _KIND[_rules.kind_without_operation(name, *(values.get(i, MISSING) for values in by_key))]
    return kind


# ---------------------------------------------------------------- trees, runs and steps


@dataclass(frozen=True)
class Layout:
    """Where each span is: its parent (-1: none in the file), the run it belongs to (-1: none), the run
    spans, and the steps (tool spans of a run, by start time, none last, ties in file order) with each
    run's first step and step count, each span's step (-1: none) and each run span's rank among runs."""

    parent: np.ndarray
    run_of: np.ndarray
    runs: np.ndarray
    tool: np.ndarray  # tool spans of a run
    steps: np.ndarray
    first_step: np.ndarray
    n_steps: np.ndarray
    step_of: np.ndarray
    run_rank: np.ndarray


def layout(s: Spans, mapping: Mapping[str, str]) -> Layout:
    """The runs and steps of a file's spans."""
    parent, has_parent = _parents(s)
    run_of = _run_of(s, parent, has_parent, mapping)
    runs = np.flatnonzero(run_of == np.arange(s.n, dtype=np.int64))
    tool = (s.kind == TOOL) & (run_of >= 0)
    start_null = s.starts < 0
    start_key = np.where(start_null, 0, s.starts)
    tools = np.flatnonzero(tool)
    order = np.lexsort((tools, start_key[tools], start_null[tools], run_of[tools]))
    steps = tools[order]
    step_run = run_of[steps]
    first_step = np.searchsorted(step_run, runs, side="left")
    n_steps = np.searchsorted(step_run, runs, side="right") - first_step
    run_rank = np.full(s.n, -1, np.int64)
    run_rank[runs] = np.arange(len(runs))
    step_of = np.full(s.n, -1, np.int64)  # span -> its position in ``steps``
    step_of[steps] = np.arange(len(steps))
    return Layout(parent, run_of, runs, tool, steps, first_step, n_steps, step_of, run_rank)


def _parents(s: Spans) -> tuple[np.ndarray, np.ndarray]:
    """Each span's parent in its trace (-1: no parent, or none in the file), and whether it names one."""
    n, trace, span_id, parent_id = s.n, s.trace, s.span_id, s.parent_id
    has_parent = numpy(pc.not_equal(parent_id, ""))
    if len(pc.unique(span_id)) == n:  # span ids unique in the file (the usual case): a parent by its id alone,
        found = numpy(pc.fill_null(pc.index_in(parent_id, value_set=_array(span_id)), -1)).astype(np.int64)
        traces = numpy(pc.dictionary_encode(_array(trace)).indices).astype(np.int64)
        parent = np.where((found >= 0) & (traces[np.maximum(found, 0)] == traces), found, -1)  # in its trace
    else:  # ids are unique within a trace only
        keys = pc.binary_join_element_wise(trace, span_id, "/")
        if len(pc.unique(keys)) != n:
            raise Unhandled  # a span exported twice
        found = pc.index_in(pc.binary_join_element_wise(trace, parent_id, "/"), value_set=_array(keys))
        parent = numpy(pc.fill_null(found, -1)).astype(np.int64)
    parent[~has_parent] = -1
    return parent, has_parent


def _run_of(s: Spans, parent: np.ndarray, has_parent: np.ndarray, mapping: Mapping[str, str]) -> np.ndarray:
    """The run span each span belongs to (-1: none): its outermost agent span, else its tree's root when
    that has no parent and the tree holds a GenAI span or the task attribute; a tree that would be a run
    but whose root is an orphan is a rejection (:class:`Unhandled`)."""
    n, kind, attrs = s.n, s.kind, s.attrs
    orphan = has_parent & (parent < 0)
    index = np.arange(n, dtype=np.int64)
    has = parent >= 0
    safe = np.where(has, parent, 0)
    root = fixed_point(lambda r: r[r], np.where(has, parent, index), limit=70)  # doubling: 2**70 levels
    if n and (parent[root] >= 0).any():
        raise Unhandled  # a cycle of parent links
    agent = kind == AGENT
    own = np.where(agent, index, -1)
    outer = fixed_point(lambda f: np.where(has & (f[safe] >= 0), f[safe], own), own)
    tree_has_agent = np.zeros(n, bool)
    tree_has_agent[root[agent]] = True
    genai_names = np.array([name.startswith(_rules.GENAI_PREFIXES) for name in attrs.names] + [False])
    genai = kind != NONE
    if len(attrs.code):
        genai[attrs.owner[genai_names[attrs.code]]] = True
    tree_genai = np.zeros(n, bool)
    tree_genai[root[genai]] = True
    task_key = mapping["task_id"]  # the task id's attribute (:func:`agentab.formats.otel._spans._task_attribute`)
    on_resource = s.res.has(task_key.removeprefix("resource:"), s.n_resources)[s.resource_of] if n else genai
    if task_key.startswith("resource:"):
        task_attr = on_resource
    elif task_key.startswith("span.name"):
        task_attr = np.zeros(n, bool)
    else:
        task_attr = attrs.has(task_key, n) | on_resource if n else genai
    plain = (parent < 0) & ~tree_has_agent  # roots of trees without an agent span
    if (plain & orphan & (tree_genai | task_attr)).any():
        raise Unhandled  # a span tree with no run: a rejection
    plain_run = plain & ~orphan & (tree_genai | task_attr)
    return np.where(outer >= 0, outer, np.where(plain_run[root], root, -1))


# ---------------------------------------------------------------- tokens


def usage(s: Spans, at: Layout, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tokens of one kind per step, per run (-1: no span of the run records them), and which steps received
    a count, by the rule of
    :func:`agentab.formats.otel._span_runs._usage`: a span's count is used if no span below it in the run
    records one; it goes to the innermost step containing it, else the first step starting at or after it,
    else the last step."""
    n, parent, run_of, run_rank = s.n, at.parent, at.run_of, at.run_rank
    count = _counts(s.attrs, names, n)
    per_step = np.zeros(len(at.steps), np.int64)
    received = np.zeros(len(at.steps), bool)
    totals = np.full(len(at.first_step), -1, np.int64)
    recorded = (count >= 0) & (run_of >= 0)
    if not recorded.any():
        return per_step, totals, received
    if count.max() >= INT64_MAX // max(int(recorded.sum()), 1):
        raise Unhandled  # sums that may not fit in 64 bits: the decoder words that rejection
    index = np.arange(n)
    member = (run_of >= 0) & (index != run_of)  # below the run span, in its run
    below = np.zeros(n, bool)
    frontier = np.flatnonzero(recorded & member)
    while len(frontier):
        up = parent[frontier]
        up = up[~below[up]]
        below[up] = True
        frontier = np.unique(up[member[up]])
    used = np.flatnonzero(recorded & ~below)
    used_runs = run_rank[run_of[used]]
    np.add.at(totals, np.unique(run_rank[run_of[np.flatnonzero(recorded)]]), 1)  # -1 -> 0: recorded
    np.add.at(totals, used_runs, count[used])
    # the innermost step whose span is this one or contains it, within the run
    own = np.where(at.tool & member, index, -1)  # a run span that is a tool span contains nothing (its run)
    safe = np.where(parent >= 0, parent, 0)
    inner = fixed_point(lambda f: np.where((f < 0) & member, f[safe], f), own)
    has_steps = at.n_steps[used_runs] > 0
    used, used_runs = used[has_steps], used_runs[has_steps]
    container = inner[used]
    target = np.where(container >= 0, at.step_of[np.maximum(container, 0)], -1)
    loose = target < 0
    if loose.any():
        target[loose] = _first_at_or_after(s.starts, at, used[loose], used_runs[loose])
    np.add.at(per_step, target, count[used])
    received[target] = True
    return per_step, totals, received


def _counts(attrs: Attrs, names: tuple[str, ...], n: int) -> np.ndarray:
    """Each span's token count by the first of ``names`` it records (-1: none); only non-negative
    ``intValue`` counts, one name per span, are read here."""
    count = np.full(n, -1, np.int64)
    for name in names:
        rows = attrs.rows(name)
        if not len(rows):
            continue
        owners = attrs.owner[rows]
        if (count[owners] >= 0).any():
            raise Unhandled  # two names for one count on a span
        take = pa.array(rows)
        if attrs.sv.take(take).null_count != len(rows) or attrs.iv.take(take).null_count:
            raise Unhandled  # usage that is not an intValue
        try:
            values = numpy(pc.cast(attrs.iv.take(take), pa.int64())).astype(np.int64)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise Unhandled from err
        if (values < 0).any():
            raise Unhandled  # a negative count: a rejection
        count[owners] = values
    return count


def _first_at_or_after(starts: np.ndarray, at: Layout, spans: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """For spans in no step of their run (``runs``: the runs' ranks), the first step of the run starting at
    or after the span starts, else (or when the span has no start) the run's last step."""
    first_step, n_steps, steps = at.first_step, at.n_steps, at.steps
    last = first_step[runs] + n_steps[runs] - 1
    out = np.array(last)
    timed = starts[spans] >= 0
    if timed.any():  # bisect_left of the span's start among its run's steps' starts (none last)
        step_null = starts[steps] < 0
        step_start = np.where(step_null, 0, starts[steps])
        t = starts[spans[timed]]
        lo = first_step[runs[timed]]
        hi = lo + n_steps[runs[timed]]
        while True:
            open_ = lo < hi
            if not open_.any():
                break
            mid = np.where(open_, (lo + hi) // 2, 0)
            before = open_ & ~step_null[mid] & (step_start[mid] < t)
            lo = np.where(before, mid + 1, lo)
            hi = np.where(open_ & ~before, mid, hi)
        out[timed] = np.minimum(lo, last[timed])
    return out
