"""OTLP/JSON spans to runs in columns (internal): the fast path of :mod:`agentab.formats.otel`.

pyarrow's JSON reader (C++, multithreaded) parses a JSON Lines export into
columns, and spans become runs by vectorised operations on span and
attribute arrays (kinds, parent links, the run each span belongs to, step
order, token attribution); only what is per run (run-level fields) or per
step (arguments and results: JSON text to parse) is Python. For the files it
reads, its items are exactly those of the span-by-span reader
(:func:`agentab.formats.otel._read`, whose module docstring gives the rules):
the tests compare the two on random files and on every odd value they try.
The span-by-span reader does Python work for every span and attribute: it
took five times as long as loading our own record.

It reads the regular case and declines (:func:`read` returns None; the
span-by-span reader then reads the file) anything else: a byte-order mark,
blank lines, a value of another JSON type than the specification's (an
``intValue`` or a time as a number, a status code as its name), array,
kvlist or bytes values, ``instrumentationLibrarySpans``, a line that is not
an OTLP batch, empty, base64 or non-ASCII ids, a span exported twice, an
attribute key twice on a span or without a value, a parent cycle, usage
that is not one non-negative ``intValue`` per count, token sums near 2**63,
and every file with a record to reject (the span-by-span reader words the
rejection).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from agentab.formats.decode import Prepared, PreparedSteps, iso_texts
from agentab.formats import otel as _otel
from agentab.formats._base import MISSING, Item, Part
from agentab.formats.record import INT64_MAX

__all__ = ["read"]

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
_NONE, _AGENT, _TOOL, _MODEL = 0, 1, 2, 3
_KIND = {None: _NONE, _otel._AGENT: _AGENT, _otel._TOOL: _TOOL, _otel._MODEL: _MODEL}
_OPERATIONS = list(_otel._OPERATION_KINDS)
_OPERATION_CODES = np.array([_KIND[_otel._OPERATION_KINDS[name]] for name in _OPERATIONS] + [_NONE], np.int8)
_JSON = msgspec.json.Decoder()


class _Unhandled(Exception):
    """The input is outside what this reader reads: the span-by-span reader reads it."""


def read(data: bytes, first_line: int, fields: Mapping[str, str]) -> Part | None:
    """The items and keys of the JSON Lines ``data`` (whole lines; the first is line ``first_line``), or
    None when this reader does not read them (see the module docstring)."""
    if _otel._NON_SPACE.search(data) is None:
        return Part([], frozenset())
    if data.startswith(_otel._BOM):
        return None
    try:
        return _read(data, first_line, {**_otel.FIELDS, **fields})
    except _Unhandled:
        return None


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
            raise _Unhandled from err
        except (pa.ArrowException, ValueError) as err:
            raise _Unhandled from err
        break
    if table.num_rows != lines:  # a blank line (skipped by the reader): line numbers would not match
        raise _Unhandled
    return table


def _field(array: pa.Array, name: str) -> pa.Array:
    return pc.struct_field(array, name)


def _array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array (the JSON reader's blocks are chunks)."""
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _numpy(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False)


class _Attrs:
    """The attributes of a file's spans (or resources), looked up by key for all of them at once."""

    def __init__(self, lists: pa.Array) -> None:
        self.owner = _numpy(pc.list_parent_indices(lists)).astype(np.int64)
        kvs = pc.list_flatten(lists)
        keys = _field(kvs, "key")
        values = _field(kvs, "value")
        if keys.null_count or values.null_count:  # a key without a value (or a value without a key)
            raise _Unhandled
        if any(_field(values, name).null_count < len(values) for name in _OTHER_VALUES):
            raise _Unhandled  # an array, kvlist or bytes value
        encoded = pc.dictionary_encode(_array(keys))
        self.code = _numpy(encoded.indices).astype(np.int64)
        self.names: list[str] = encoded.dictionary.to_pylist()
        self.index = {name: k for k, name in enumerate(self.names)}
        if len(self.code) and _repeats(self.owner, self.code, len(self.names)):
            raise _Unhandled  # a key twice on one span: the last would win
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
        """Owner -> the attribute's value as :func:`agentab.formats.otel._value` gives it."""
        rows = self.rows(key)
        if not len(rows):
            return {}
        take = pa.array(rows)
        out = {}
        for owner, sv, iv, bv, dv in zip(self.owner[rows].tolist(), self.sv.take(take).to_pylist(),
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


def _fixed_point(step: Any, start: np.ndarray, limit: int = 10_000) -> np.ndarray:
    """Apply ``step`` until nothing changes (``limit`` times at most: then the input is not read here)."""
    current = start
    for _ in range(limit):
        following = step(current)
        if np.array_equal(following, current):
            return current
        current = following
    raise _Unhandled


def _read(data: bytes, first_line: int, mapping: dict[str, str]) -> Part:
    table = _parse(data)

    # ---- spans in file order (lines, resources, scopes, spans), with their line and resource
    batches = table.column("resourceSpans")  # chunks of lines: not copied into one array
    if batches.null_count:
        raise _Unhandled  # a line that is not an OTLP batch
    line_of_resource = _numpy(pc.list_parent_indices(batches))
    resources = pc.list_flatten(batches)
    if _field(resources, "instrumentationLibrarySpans").null_count < len(resources):
        raise _Unhandled  # the pre-1.0 name of scopeSpans
    scopes = _field(resources, "scopeSpans")
    resource_of_scope = _numpy(pc.list_parent_indices(scopes))
    scope_spans = _field(pc.list_flatten(scopes), "spans")
    scope_of_span = _numpy(pc.list_parent_indices(scope_spans))
    spans = pc.list_flatten(scope_spans)
    n = len(spans)
    resource_of = resource_of_scope[scope_of_span].astype(np.int64)
    line_of = (line_of_resource[resource_of] + first_line).astype(np.int64)

    trace = _field(spans, "traceId")
    span_id = _field(spans, "spanId")
    parent_id = pc.fill_null(_field(spans, "parentSpanId"), "")
    for ids in (trace, span_id):
        if ids.null_count or pc.any(pc.equal(ids, "")).as_py():
            raise _Unhandled
    if any(pc.any(pc.ends_with(ids, "=")).as_py() for ids in (trace, span_id, parent_id)):
        raise _Unhandled  # base64 ids (protobuf's JSON printer)
    for ids in (trace, span_id, parent_id):
        if not pc.all(pc.string_is_ascii(ids)).as_py():
            raise _Unhandled
    trace, span_id, parent_id = pc.ascii_lower(trace), pc.ascii_lower(span_id), pc.ascii_lower(parent_id)
    names = pc.fill_null(_field(spans, "name"), "")
    starts = _times(_field(spans, "startTimeUnixNano"))
    ends = _times(_field(spans, "endTimeUnixNano"))
    status = _field(spans, "status")
    failed = _numpy(pc.fill_null(pc.equal(_field(status, "code"), 2), False))
    messages = _field(status, "message")
    attrs = _Attrs(_field(spans, "attributes"))
    res = _Attrs(_field(_field(resources, "resource"), "attributes") if len(resources) else pa.array([], _KVS))

    # ---- kinds: gen_ai.operation.name, else openinference.span.kind, else the span name
    kind = np.zeros(n, np.int8)
    decided = np.zeros(n, bool)
    rows = attrs.rows(_otel._OPERATION)
    if len(rows):
        operation = attrs.sv.take(pa.array(rows))
        named = _numpy(pc.fill_null(pc.not_equal(operation, ""), False))
        codes = _numpy(pc.fill_null(pc.index_in(operation, value_set=pa.array(_OPERATIONS)), len(_OPERATIONS)))
        owners = attrs.owner[rows][named]
        kind[owners] = _OPERATION_CODES[codes[named]]
        decided[owners] = True
    undecided = np.flatnonzero(~decided)
    if len(undecided):
        openinference = attrs.values(_otel._OPENINFERENCE_KIND)
        name_list = names.take(pa.array(undecided)).to_pylist()
        for i, name in zip(undecided.tolist(), name_list):
            kind[i] = _KIND[_otel._kind_without_operation(name, openinference.get(i, MISSING))]

    # ---- trees: parents, roots, the run each span belongs to
    has_parent = _numpy(pc.not_equal(parent_id, ""))
    if len(pc.unique(span_id)) == n:  # span ids unique in the file (the usual case): a parent by its id alone,
        found = _numpy(pc.fill_null(pc.index_in(parent_id, value_set=_array(span_id)), -1)).astype(np.int64)
        traces = _numpy(pc.dictionary_encode(_array(trace)).indices).astype(np.int64)
        parent = np.where((found >= 0) & (traces[np.maximum(found, 0)] == traces), found, -1)  # in its trace
    else:  # ids are unique within a trace only
        keys = pc.binary_join_element_wise(trace, span_id, "/")
        if len(pc.unique(keys)) != n:
            raise _Unhandled  # a span exported twice
        found = pc.index_in(pc.binary_join_element_wise(trace, parent_id, "/"), value_set=_array(keys))
        parent = _numpy(pc.fill_null(found, -1)).astype(np.int64)
    parent[~has_parent] = -1
    orphan = has_parent & (parent < 0)
    index = np.arange(n, dtype=np.int64)
    has = parent >= 0
    safe = np.where(has, parent, 0)
    root = _fixed_point(lambda r: r[r], np.where(has, parent, index), limit=70)  # doubling: 2**70 levels
    if n and (parent[root] >= 0).any():
        raise _Unhandled  # a cycle of parent links
    agent = kind == _AGENT
    own = np.where(agent, index, -1)
    outer = _fixed_point(lambda f: np.where(has & (f[safe] >= 0), f[safe], own), own)
    tree_has_agent = np.zeros(n, bool)
    tree_has_agent[root[agent]] = True
    genai_names = np.array([name.startswith(_otel._GENAI_PREFIXES) for name in attrs.names] + [False])
    genai = kind != _NONE
    if len(attrs.code):
        genai[attrs.owner[genai_names[attrs.code]]] = True
    tree_genai = np.zeros(n, bool)
    tree_genai[root[genai]] = True
    task_key = mapping["task_id"]
    task_attr = attrs.has(task_key, n) | res.has(task_key, len(resources))[resource_of] if n else genai
    plain = (parent < 0) & ~tree_has_agent  # roots of trees without an agent span
    if (plain & orphan & (tree_genai | task_attr)).any():
        raise _Unhandled  # a span tree with no run: a rejection
    plain_run = plain & ~orphan & (tree_genai | task_attr)
    run_of = np.where(outer >= 0, outer, np.where(plain_run[root], root, -1))
    runs = np.flatnonzero(run_of == index)

    # ---- steps: tool spans of a run, by start time (none last), ties in file order
    tool = (kind == _TOOL) & (run_of >= 0)
    start_null = starts < 0
    start_key = np.where(start_null, 0, starts)
    tools = np.flatnonzero(tool)
    order = np.lexsort((tools, start_key[tools], start_null[tools], run_of[tools]))
    steps = tools[order]
    step_run = run_of[steps]
    first_step = np.searchsorted(step_run, runs, side="left")
    n_steps = np.searchsorted(step_run, runs, side="right") - first_step
    run_rank = np.full(n, -1, np.int64)
    run_rank[runs] = np.arange(len(runs))
    step_of = np.full(n, -1, np.int64)  # span -> its position in ``steps``
    step_of[steps] = np.arange(len(steps))
    tokens_in, total_in = _usage(attrs, _otel._TOKENS_IN, n, parent, run_of, tool, steps, step_of, first_step,
                                 n_steps, run_rank, starts)
    tokens_out, total_out = _usage(attrs, _otel._TOKENS_OUT, n, parent, run_of, tool, steps, step_of, first_step,
                                   n_steps, run_rank, starts)

    # ---- steps' fields (per step: JSON to parse)
    tool_names = _tool_names(attrs, names, steps, n)
    arguments = _arguments(attrs, steps, n)
    observations = _observations(attrs, steps, n, ends, failed, messages)
    call_ids = attrs.values("gen_ai.tool.call.id")
    step_meta = [{"span_id": text} for text in span_id.take(pa.array(steps)).to_pylist()]
    for k, i in enumerate(steps.tolist()) if call_ids else ():
        if i in call_ids:
            step_meta[k]["tool_call_id"] = str(call_ids[i])
    start_list = [None if t < 0 else t for t in starts[steps].tolist()]
    end_list = [None if t < 0 else t for t in ends[steps].tolist()]

    # ---- runs
    return _runs(runs, mapping, attrs, res, resource_of, parent, names, kind, trace, span_id, starts, ends,
                 line_of, run_of, first_step, n_steps, tool_names, arguments, observations, tokens_in, tokens_out,
                 start_list, end_list, step_meta, total_in, total_out)


def _times(texts: pa.Array) -> np.ndarray:
    """Unix nanoseconds from OTLP's decimal text; -1 where absent or not positive (unset)."""
    try:
        values = pc.cast(texts, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:  # not plain digits, or past int64
        raise _Unhandled from err
    out = _numpy(pc.fill_null(values, -1)).astype(np.int64)
    out[out <= 0] = -1
    return out


def _usage(attrs: _Attrs, names: tuple[str, ...], n: int, parent: np.ndarray, run_of: np.ndarray,
           tool: np.ndarray, steps: np.ndarray, step_of: np.ndarray, first_step: np.ndarray,
           n_steps: np.ndarray, run_rank: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of one kind per step, and per run (-1: no span of the run records them), by the rule of
    :func:`agentab.formats.otel._steps`: a span's count is used if no span below it in the run records one;
    it goes to the innermost step containing it, else the first step starting at or after it, else the
    last step."""
    count = np.full(n, -1, np.int64)
    for name in names:
        rows = attrs.rows(name)
        if not len(rows):
            continue
        owners = attrs.owner[rows]
        if (count[owners] >= 0).any():
            raise _Unhandled  # two names for one count on a span
        take = pa.array(rows)
        if attrs.sv.take(take).null_count != len(rows) or attrs.iv.take(take).null_count:
            raise _Unhandled  # usage that is not an intValue
        try:
            values = _numpy(pc.cast(attrs.iv.take(take), pa.int64())).astype(np.int64)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise _Unhandled from err
        if (values < 0).any():
            raise _Unhandled  # a negative count: a rejection
        count[owners] = values
    per_step = np.zeros(len(steps), np.int64)
    totals = np.full(len(first_step), -1, np.int64)
    recorded = (count >= 0) & (run_of >= 0)
    if not recorded.any():
        return per_step, totals
    if count.max() >= INT64_MAX // max(int(recorded.sum()), 1):
        raise _Unhandled  # sums that may not fit in 64 bits: the decoder words that rejection
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
    own = np.where(tool & member, index, -1)  # a run span that is a tool span contains nothing (its run)
    safe = np.where(parent >= 0, parent, 0)
    inner = _fixed_point(lambda f: np.where((f < 0) & member, f[safe], f), own)
    has_steps = n_steps[used_runs] > 0
    used, used_runs = used[has_steps], used_runs[has_steps]
    container = inner[used]
    target = np.where(container >= 0, step_of[np.maximum(container, 0)], -1)
    loose = target < 0
    if loose.any():
        spans = used[loose]
        runs = used_runs[loose]
        last = first_step[runs] + n_steps[runs] - 1
        at = np.array(last)
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
            at[timed] = np.minimum(lo, last[timed])
        target[loose] = at
    np.add.at(per_step, target, count[used])
    return per_step, totals


def _first(found: list[dict[int, Any]], i: int) -> Any:
    """The first value a span has among lookups by key (:func:`agentab.formats.otel._first`), or MISSING."""
    for values in found:
        value = values.get(i)
        if value is not None:
            return value
    return MISSING


def _tool_names(attrs: _Attrs, names: pa.Array, steps: np.ndarray, n: int) -> list[str]:
    """The tool of each step (:func:`agentab.formats.otel._step`)."""
    out = []
    generic = None
    for i, name in zip(steps.tolist(), attrs.strings(_otel._TOOL_NAME[0], steps, n)):
        if not name:
            if generic is None:
                generic = [attrs.values(key) for key in _otel._TOOL_NAME]
            value = _first(generic, i)
            if value is not MISSING:
                name = value if isinstance(value, str) else str(value)
            else:
                name = _otel._name_after(names[i].as_py(), "execute_tool")
            if not name:
                raise _Unhandled  # a tool span naming no tool: a rejection
        out.append(name)
    return out


def _arguments(attrs: _Attrs, steps: np.ndarray, n: int) -> list[dict[str, Any]]:
    """The arguments of each step (:func:`agentab.formats.otel._step`)."""
    out = []
    generic = None
    decode = _JSON.decode
    for i, raw in zip(steps.tolist(), attrs.strings(_otel._TOOL_ARGS[0], steps, n)):
        if raw is None:
            if generic is None:
                generic = [attrs.values(key) for key in _otel._TOOL_ARGS]
            raw = _first(generic, i)
            if raw is MISSING:
                out.append({})
                continue
        args = raw
        if isinstance(raw, str):
            args = {}
            if raw.strip():
                try:
                    args = decode(raw)
                except msgspec.DecodeError as err:
                    raise _Unhandled from err  # not JSON: a rejection
        if type(args) is not dict:
            raise _Unhandled  # not an object of arguments: a rejection
        out.append(args)
    return out


def _observations(attrs: _Attrs, steps: np.ndarray, n: int, ends: np.ndarray, failed: np.ndarray,
                  messages: pa.Array) -> list[dict[str, Any] | None]:
    """The observation of each step (:func:`agentab.formats.otel._step`)."""
    generic = None
    error_types = None
    out: list[dict[str, Any] | None] = []
    decode = _JSON.decode
    ended = (ends[steps] >= 0).tolist()
    errors = failed[steps].tolist()
    results = attrs.strings(_otel._TOOL_RESULT[0], steps, n)
    failed_steps = steps[failed[steps]]
    status_messages = dict(zip(failed_steps.tolist(), messages.take(pa.array(failed_steps)).to_pylist()))
    for i, has_end, error, value in zip(steps.tolist(), ended, errors, results):
        if not has_end:  # never answered
            out.append(None)
            continue
        observation: dict[str, Any] = {"status": "error" if error else "ok"}
        if value is None:
            if generic is None:
                generic = [attrs.values(key) for key in _otel._TOOL_RESULT]
            value = _first(generic, i)
        if value is not MISSING:
            if isinstance(value, str):
                try:
                    value = decode(value)
                except msgspec.DecodeError:
                    pass
            observation["result"] = value
        if error:
            message = status_messages[i]
            if not message:
                if error_types is None:
                    error_types = attrs.values("error.type")
                message = error_types.get(i)
            if message:
                observation["error"] = message
        out.append(observation)
    return out


def _runs(runs: np.ndarray, mapping: dict[str, str], attrs: _Attrs, res: _Attrs, resource_of: np.ndarray,
          parent: np.ndarray, names: pa.Array, kind: np.ndarray, trace: pa.Array, span_id: pa.Array,
          starts: np.ndarray, ends: np.ndarray, line_of: np.ndarray, run_of: np.ndarray, first_step: np.ndarray,
          n_steps: np.ndarray, tool_names: list[str], arguments: list[dict[str, Any]],
          observations: list[dict[str, Any] | None], tokens_in: np.ndarray, tokens_out: np.ndarray,
          start_list: list[int | None], end_list: list[int | None], step_meta: list[dict[str, Any]],
          total_in: np.ndarray, total_out: np.ndarray) -> Part:
    """The runs' items (:func:`agentab.formats.otel._record`, :func:`agentab.formats.otel._items`)."""
    span_values: dict[str, dict[int, Any]] = {}
    resource_values: dict[str, dict[int, Any]] = {}
    parents = parent.tolist()
    resources = resource_of.tolist()

    def values_of(name: str) -> dict[int, Any]:
        if name not in span_values:
            span_values[name] = attrs.values(name)
        return span_values[name]

    def value(name: str, i: int) -> Any:
        return values_of(name).get(i)

    def lookup(i: int, keys: tuple[str, ...]) -> tuple[str, Any] | None:
        node = i
        while node >= 0:
            for name in keys:
                found = value(name, node)
                if found is not None:
                    return name, found
            node = parents[node]
        for name in keys:
            if name not in resource_values:
                resource_values[name] = res.values(name)
            found = resource_values[name].get(resources[i])
            if found is not None:
                return name, found
        return None

    run_list = runs.tolist()

    def lookup_all(keys: tuple[str, ...]) -> list[tuple[str, Any] | None]:
        """:func:`lookup` for every run: the run spans' own values first, for all runs at once."""
        out: list[tuple[str, Any] | None] = [None] * len(run_list)
        pending = range(len(run_list))
        for name in keys:
            values = values_of(name)
            rest = []
            for r in pending:
                found = values.get(run_list[r])
                if found is None:
                    rest.append(r)
                else:
                    out[r] = (name, found)
            pending = rest
        for r in pending:  # on an ancestor or the resource
            out[r] = lookup(run_list[r], keys)
        return out

    model_span = (kind == _MODEL) & (run_of >= 0)
    candidates: dict[tuple[str, ...], dict[int, list[tuple[int, Any]]]] = {}

    def first_in_run(run: int, keys: tuple[str, ...]) -> Any:
        """The first value among ``keys`` of the run's model spans, in pre-order (None: none)."""
        if keys not in candidates:  # run -> its model spans with a value, in file order
            found = [values_of(k) for k in keys]
            having = np.zeros(len(model_span), bool)
            for values in found:
                having[list(values)] = True
            by_run: dict[int, list[tuple[int, Any]]] = {}
            for i in np.flatnonzero(model_span & having).tolist():
                hit = _first(found, i)
                if hit is not MISSING:
                    by_run.setdefault(int(run_of[i]), []).append((i, hit))
            candidates[keys] = by_run
        hits = candidates[keys].get(run)
        if not hits:
            return None

        def path(i: int) -> list[int]:  # pre-order compares root-to-span paths (children in file order)
            out = []
            while i >= 0:
                out.append(i)
                i = parents[i]
            return out[::-1]

        return min(hits, key=lambda hit: path(hit[0]))[1]

    run_starts = iso_texts([t if t >= 0 else None for t in starts[runs].tolist()])
    run_ends = iso_texts([t if t >= 0 else None for t in ends[runs].tolist()])
    traces = trace.take(pa.array(runs)).to_pylist() if len(runs) else []
    span_texts = span_id.take(pa.array(runs)).to_pylist() if len(runs) else []
    default_model = mapping["model"] == _otel.FIELDS["model"]
    model_names = _otel._names(mapping, "model")
    harness_names = _otel._names(mapping, "harness")
    converted = []
    ids: dict[str, int] = {}
    per_trace: dict[str, int] = {}
    found_tasks = lookup_all((mapping["task_id"],))
    found_seeds = lookup_all((mapping["seed"],))
    found_outcomes = lookup_all((mapping["outcome"],))
    found_run_ids = lookup_all((mapping["run_id"],))
    found_arms = lookup_all((mapping["arm"],))
    found_amounts = {key: lookup_all((mapping[key],)) for key in ("cost_usd", "latency_s") if mapping.get(key)}
    found_models = lookup_all(model_names)
    found_harnesses = lookup_all(harness_names)
    found_providers = lookup_all(_otel._PROVIDER)
    conversations = [value("gen_ai.conversation.id", i) for i in run_list]
    run_start_ns, run_end_ns = starts[runs].tolist(), ends[runs].tolist()
    run_kinds = kind[runs].tolist()
    totals_in, totals_out = total_in.tolist(), total_out.tolist()
    bounds = np.stack([first_step, first_step + n_steps], axis=1).tolist()
    step_tokens_in, step_tokens_out = tokens_in.tolist(), tokens_out.tolist()
    default_run_id = mapping["run_id"] == _otel.FIELDS["run_id"]
    default_harness = mapping["harness"] == _otel.FIELDS["harness"]
    for r, (i, trace_id, span_text) in enumerate(zip(run_list, traces, span_texts)):
        per_trace[trace_id] = per_trace.get(trace_id, 0) + 1
        task = found_tasks[r]
        if task is None:
            raise _Unhandled
        task_id = _otel._task_id(task[1])
        if task_id is None:
            raise _Unhandled
        seed_hit = found_seeds[r]
        seed = None if seed_hit is None else _otel._seed(seed_hit[1])
        if seed is None:
            raise _Unhandled
        outcome_hit = found_outcomes[r]
        outcome = None if outcome_hit is None else _otel._outcome(outcome_hit[1])
        if outcome is None:
            raise _Unhandled
        conversation = conversations[r]
        run_id_hit = found_run_ids[r]
        if run_id_hit is not None:
            run_id = _otel._run_id(run_id_hit[1])
            if run_id is None:
                raise _Unhandled
            source = "attribute" if default_run_id else None
        elif default_run_id:
            run_id, source = trace_id, "trace"
        else:
            raise _Unhandled
        arm_hit = found_arms[r]
        arm = None
        if arm_hit is not None:
            arm = _otel._arm(arm_hit[1])
            if arm is None:
                raise _Unhandled
        amounts: dict[str, float] = {}
        for key, found in found_amounts.items():
            hit = found[r]
            if hit is not None:
                amount = _otel._amount(hit[1])
                if amount is None:
                    raise _Unhandled
                amounts[key] = amount
        start, end = run_start_ns[r], run_end_ns[r]
        if "latency_s" not in amounts and start >= 0 and end >= 0 and end >= start:
            amounts["latency_s"] = (end - start) / 1e9

        metadata: dict[str, Any] = {}
        model = found_models[r]
        if model is not None:
            metadata["model"] = str(model[1])
        elif default_model:
            found = first_in_run(i, _otel._ALIASES[_otel.FIELDS["model"]])
            if found is not None:
                metadata["model"] = str(found)
        harness = found_harnesses[r]
        if harness is not None:
            metadata["harness"] = str(harness[1])
        elif default_harness and run_kinds[r] == _AGENT:
            name = _otel._name_after(names[i].as_py(), "invoke_agent")
            if name:
                metadata["harness"] = name
        provider = found_providers[r]
        if provider is not None:
            metadata["provider"] = str(provider[1])
        else:
            found = first_in_run(i, _otel._PROVIDER)
            if found is not None:
                metadata["provider"] = str(found)
        metadata["trace_id"] = trace_id
        metadata["span_id"] = span_text
        if conversation is not None:
            metadata["conversation_id"] = str(conversation)
        if start >= 0:
            metadata["started_at"] = run_starts[r]
        if end >= 0:
            metadata["ended_at"] = run_ends[r]
        t_in, t_out = totals_in[r], totals_out[r]
        if t_in >= 0:
            metadata["tokens_in"] = t_in
        if t_out >= 0:
            metadata["tokens_out"] = t_out

        lo, hi = bounds[r]
        unknown = [None] * (hi - lo)
        steps = PreparedSteps(tool_names[lo:hi], arguments[lo:hi], observations[lo:hi],
                              unknown if t_in < 0 else step_tokens_in[lo:hi],
                              unknown if t_out < 0 else step_tokens_out[lo:hi],
                              start_list[lo:hi], end_list[lo:hi], step_meta[lo:hi])
        record = Prepared(run_id, task_id, seed, arm, outcome, amounts.get("cost_usd"), amounts.get("latency_s"),
                          metadata, steps)
        converted.append((i, trace_id, span_text, record, source))
        if source is not None:
            ids[run_id] = ids.get(run_id, 0) + 1

    items = [Item(line=int(line_of[i]), record=_otel._qualified(record, source, trace_id, span_text, ids, per_trace))
             for i, trace_id, span_text, record, source in converted]
    return Part(items, _otel._part_keys(pc.unique(trace).to_pylist(), ids))
