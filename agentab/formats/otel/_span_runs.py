"""The span-by-span OTel reader's runs: a run span and the spans below it as one run of the decoder.

:func:`read` collects a file's spans and trees (:mod:`._spans`), converts
each run (:func:`record`: run-level attributes looked up on the run span,
its ancestors and its resource; :func:`_steps`: tool spans as steps, token
usage attributed at the lowest level it is recorded) and qualifies run ids
shared by several runs. Values follow :mod:`._rules`, which the column
reader shares.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any

import msgspec

from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap, Item, Part
from agentab.formats._base import Reject as _Reject
from agentab.formats.decode import Prepared, PreparedSteps, gc_paused
from agentab.formats.otel import _messages, _rules
from agentab.formats.otel._rules import (
    ARROW_NS,
    FIELDS,
    MIME_TYPE,
    MODEL,
    PROVIDER,
    STATUS_ERROR,
    DETAILS,
    TOKENS_CACHED,
    TOKENS_IN,
    TOKENS_OUT,
    TOKENS_REASONING,
    TOOL,
    TOOL_ARGS,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_RESULT,
    USAGE,
    AGENT,
    as_integer,
    names_of,
)
from agentab.formats.otel._spans import Batch, Span, any_value, collect, first, forest, get, subtree, where


_JSON = msgspec.json.Decoder()


def read(batches: Iterator[tuple[int, Batch | None, str | None]], fields: FieldMap | None) -> Part:
    """Every item of a file (or part of one), with the garbage collector paused, and the part's keys.

    The keys (:class:`~agentab.formats._base.Part`) are the trace ids of all
    spans read (``trace:<id>``: a span's parent, a duplicate span, the runs
    sharing a trace are found within its trace) and the run ids taken from
    the default ``run_id`` attribute or the trace id (``run:<id>``: one
    shared by several runs is qualified).

    Reading creates hundreds of thousands of small objects, none in a cycle
    (:func:`~agentab.formats.decode.gc_paused`).
    """
    with gc_paused():
        spans, bad = collect(batches)
        return _items(spans, bad, {**FIELDS, **(fields or {})})


def _items(spans: list[Span], bad: list[Item], mapping: Mapping[str, str]) -> Part:
    """Runs and rejections of a file's spans, in order of where they were read, and their keys (:func:`read`)."""
    runs, trees, children, out = forest(spans, mapping)
    per_trace: dict[str, int] = {}
    for run in runs:
        per_trace[run.trace_id] = per_trace.get(run.trace_id, 0) + 1
    converted: list[tuple[Span, Prepared | _Reject, str | None, dict | None]] = []
    srcs = _rules.sources(mapping)
    ids: dict[str, int] = {}
    for run in runs:
        tree = trees.get(run.order) or subtree(run, children)
        try:
            prepared, source, absent = record(run, mapping, _messages.with_message_steps(tree), srcs)
        except _Reject as exc:
            converted.append((run, exc, None, None))
        else:
            converted.append((run, prepared, source, absent))
            if source is not None:
                ids[prepared.run_id] = ids.get(prepared.run_id, 0) + 1
        for span in tree:  # no longer needed (runs' subtrees are disjoint): freed while still in cache
            span.attrs = span.status = None
    for run, prepared, source, absent in converted:
        if isinstance(prepared, _Reject):
            out.append((run.line, run.order, Item(line=run.line, field=prepared.field, reason=prepared.reason)))
            continue
        prepared = _rules.qualified(prepared, source, run.trace_id, run.span_id, ids, per_trace)
        out.append((run.line, run.order, Item(line=run.line, record=prepared, missing=absent)))
    for span in spans:  # no span outlives the reading with a parent link
        span.up = None
    out.extend((item.line, -1, item) for item in bad)
    out.sort(key=lambda entry: (entry[0], entry[1]))
    return Part([item for _, _, item in out], _rules.part_keys({span.trace_id for span in spans}, ids))


class _View:
    """What the run assembly (:mod:`._rules`) asks of a run, for a run given as its tree (the run span
    and the spans below it, in pre-order: the run span first)."""

    @staticmethod
    def where(tree: list[Span]) -> str:
        return where(tree[0])

    @staticmethod
    def in_run(tree: list[Span], names: tuple[str, ...]) -> Any:
        for span in tree:
            if span.kind == MODEL:
                hit = first(span, names)
                if hit is not None:
                    return hit[1]
        return None

    @staticmethod
    def agent_name(tree: list[Span]) -> str | None:
        return tree[0].name if tree[0].kind == AGENT else None


_VIEW = _View()


def record(run: Span, mapping: Mapping[str, str], tree: list[Span],
           srcs: Mapping[str, _rules.Source] | None = None) -> tuple[Prepared, str | None, dict | None]:
    """The run of a run span (``tree``: it and the spans below it, in pre-order), in the decoder's
    shape (:class:`~agentab.formats.decode.Prepared`: every value as the record's schema requires it,
    None for a required field not found), where its run_id came from (None: a user-mapped source), and
    the required fields not found (:attr:`~agentab.formats._base.Item.missing`; None: none)."""
    srcs = srcs or _rules.sources(mapping)
    task_id, seed, outcome, run_id, source, arm, absent = _rules.identity(
        srcs, _find(run, srcs["task_id"]), _find(run, srcs["seed"]), _find(run, srcs["outcome"]),
        _find(run, srcs["run_id"]), _find(run, srcs["arm"]), run.trace_id, run.span_id, _VIEW, tree)
    steps, tokens_in, tokens_out, details = _steps(run, tree)
    # no default attribute for the amounts: latency is the run span's duration
    amounts = _rules.amounts({key: _find(run, srcs[key]) for key in ("cost_usd", "latency_s") if key in srcs},
                             run.start, run.end, _VIEW, tree)
    for ns, name in ((run.start, "startTimeUnixNano"), (run.end, "endTimeUnixNano")):
        if ns is not None and ns >= ARROW_NS:
            raise _Reject(name, f"{where(run)}: {name} is out of range (after the year 2262)")
    metadata = _rules.metadata(
        mapping, _find(run, srcs["model"], names_of(mapping, "model")),
        _find(run, srcs["harness"], names_of(mapping, "harness")),
        _lookup(run, PROVIDER), get(run, "gen_ai.conversation.id"), run.trace_id, run.span_id,
        _rules.iso(run.start), _rules.iso(run.end), _VIEW, tree)
    steps, totals = _rules.store_details(steps, tokens_in, tokens_out, details)
    return (Prepared(run_id, task_id, seed, arm, outcome, amounts.get("cost_usd"), amounts.get("latency_s"),
                     metadata, steps, totals=totals), source, absent)  # type: ignore[arg-type]  # None: for the loader to fill


def _find(run: Span, src: _rules.Source, names: Sequence[str] | None = None) -> tuple[str, Any] | None:
    """The value of a run-level field by its source (:func:`~._rules.source`; ``names``: an attribute
    source's names, default its own)."""
    if src.kind == "attribute":
        return _lookup(run, names or (src.name,))
    if src.kind == "resource":
        value = any_value(run.res.get(src.name))
        return None if value is None else (src.spec, value)
    return _rules.from_name(src, run.name)


def _lookup(run: Span, names: Sequence[str]) -> tuple[str, Any, Span | None] | None:
    """The first of ``names`` on the run span, its ancestors (nearest first), then its resource."""
    attrs = run.attrs  # the run span itself (_first, inline)
    for name in names:
        value = attrs.get(name)
        if value is not None:
            if value.string_value is not None:
                return name, value.string_value, run
            value = any_value(value)
            if value is not None:
                return name, value, run
    node: Span | None = run.up
    while node is not None:
        hit = first(node, names)
        if hit is not None:
            return hit[0], hit[1], node
        node = node.up
    for name in names:
        value = any_value(run.res.get(name))
        if value is not None:
            return name, value, None
    return None


def _tokens(span: Span, names: Sequence[str]) -> int | None:
    hit = first(span, names)
    if hit is None:
        return None
    count = as_integer(hit[1])
    if count is None or count < 0:
        raise _Reject(hit[0], f"attribute {hit[0]} of {where(span)} is {hit[1]!r}: expected a token count "
                              "(an integer >= 0)")
    return count


def _count(span: Span, names: Sequence[str]) -> int | None:
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


def _steps(run: Span, tree: list[Span]) -> tuple[PreparedSteps, int | None, int | None, dict[str, Any]]:
    """The run's steps (tokens attributed) as columns, its input and output token totals (None: not
    recorded) and its cached and reasoning tokens (:func:`_details`). A time Arrow cannot hold (after
    2262) rejects the run."""
    tools = [span for span in tree if span.kind == TOOL]
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
        if (start is not None and start >= ARROW_NS) or (end is not None and end >= ARROW_NS):
            # past 2262-04-11: no datetime64[ns] holds it (and past year 9999 no text formatting does)
            name = "startTimeUnixNano" if start is not None and start >= ARROW_NS else "endTimeUnixNano"
            raise _Reject(name, f"{where(span)}: {name} is out of range (after the year 2262)")
        starts_ns.append(start)
        ends_ns.append(end)
    unknown = [None] * len(tools)
    tokens_in, tokens_out, total_in, total_out, got = _usage(run, tree, tools)
    tokens_in, tokens_out = _rules.counted_elsewhere(unknown if total_in is None else tokens_in,
                                                     unknown if total_out is None else tokens_out, got, step_metadata)
    details = _details(run, tree, tools)
    return (PreparedSteps(names, arguments, observations, tokens_in, tokens_out, starts_ns, ends_ns, step_metadata),
            total_in, total_out, details)


def _details(run: Span, tree: list[Span],
             tools: list[Span]) -> dict[str, tuple[list[int], list[bool], int | None]]:
    """The cached and reasoning tokens (:data:`~._rules.DETAIL_KEYS`) per step, which steps received a
    count, and the run's totals, by the rule of :func:`_usage` (the lowest level recorded, each kind on
    its own); empty when no span of the run records any."""
    spans = [span for span in reversed(tree) if not DETAILS.isdisjoint(span.attrs)]
    if not spans:
        return {}
    n_steps = len(tools)
    starts = [span.at for span in tools]
    out = {}
    for key, names, bit in zip(_rules.DETAIL_KEYS, (TOKENS_CACHED, TOKENS_REASONING), (4, 8)):
        per_step, received, total = [0] * n_steps, [False] * n_steps, None
        for span in spans:
            count = _tokens(span, names)
            if count is None:
                continue
            node = span.up
            while node is not None and span is not run and not node.below & bit:
                node.below |= bit
                if node is run:
                    break
                node = node.up
            if span.below & bit:
                continue  # recorded below: used there
            total = count if total is None else total + count
            if n_steps:
                at = _step_of(span, run, starts)
                received[at] = True
                per_step[at] += count
        out[key] = (per_step, received, total)
    return out


def _step_of(span: Span, run: Span, starts: list[Any]) -> int:
    """The step a count recorded on ``span`` goes to (:func:`_usage`): the innermost step whose span is
    this one or contains it, else the first step starting at or after it, else the last step."""
    node = span
    while node is not None and node is not run:
        if node.step is not None:
            return node.step
        node = node.up
    last = len(starts) - 1
    return last if span.start is None else min(bisect.bisect_left(starts, span.start), last)


def _usage(run: Span, tree: list[Span],
           tools: list[Span]) -> tuple[list[int], list[int], int | None, int | None, list[bool]]:
    """Input and output tokens per step, the run's totals (None: no span records them), and which steps
    received a count.

    Usage at the lowest level: a span's count is used only if no span below
    it (in the run) records one. Descendants come before their ancestors
    (reversed pre-order); each span recording usage marks its ancestors up to
    the run (``below``), stopping at one already marked (its ancestors are,
    too). The loop is written out: it runs once per span recording usage. A count used goes to the step whose span contains it, else the
    first step starting at or after it, else the last step (bisect on the
    steps' starts: ``at``, sorted).
    """
    n_steps = len(tools)
    per_in = [0] * n_steps
    per_out = [0] * n_steps
    got = [False] * n_steps
    usage = [span for span in reversed(tree) if not USAGE.isdisjoint(span.attrs)]
    if not usage:
        return per_in, per_out, None, None, got
    last = n_steps - 1
    starts = [span.at for span in tools]
    total_in: int | None = None
    total_out: int | None = None
    for span in usage:
        count_in = _count(span, TOKENS_IN)
        count_out = _count(span, TOKENS_OUT)
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
        if mark and span is not run:  # mark the ancestors up to the run, stopping at one already marked
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
        got[at] = True
        if count_in is not None:
            per_in[at] += count_in
        if count_out is not None:
            per_out[at] += count_out
    return per_in, per_out, total_in, total_out, got


def _step(span: Span) -> tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """The tool, arguments, observation (None: never answered) and metadata of a tool span's step."""
    attrs = span.attrs
    value = attrs.get(TOOL_NAME[0])  # the usual names first, directly
    name = value.string_value if value is not None else None
    if not name:
        tool = first(span, TOOL_NAME)
        name = _rules.tool_name(_MISSING if tool is None else tool[1], span.name, where, span)
    args: Any = {}
    value = attrs.get(TOOL_ARGS[0])
    if value is not None and value.string_value is not None:  # JSON text of an object, decoded directly
        raw = value.string_value
        try:
            args = _JSON.decode(raw)
        except msgspec.DecodeError:
            args = None
        if type(args) is not dict:  # by the rule (or a rejection)
            args = _rules.arguments(TOOL_ARGS[0], raw, where, span)
    else:
        hit = first(span, TOOL_ARGS)
        if hit is not None:  # the other families' names: by the rule
            args = _rules.arguments(hit[0], hit[1], where, span, get(span, MIME_TYPE))
    metadata = {"span_id": span.span_id}
    value = attrs.get(TOOL_CALL_ID[0])
    if value is None and TOOL_CALL_ID[1] in attrs:
        value = attrs[TOOL_CALL_ID[1]]
    if value is not None:
        metadata["tool_call_id"] = str(any_value(value))
    if span.end is None:  # never answered
        return name, args, None, metadata
    status = span.status
    error = status is not None and status.code in STATUS_ERROR
    observation: dict[str, Any] = {"status": "error" if error else "ok"}
    value = attrs.get(TOOL_RESULT[0])
    result = (TOOL_RESULT[0], value.string_value) if value is not None and value.string_value is not None \
        else first(span, TOOL_RESULT)
    if result is not None:
        observation["result"] = _rules.result(result[1])
    if error:
        message = status.message or any_value(attrs.get("error.type"))
        if message:
            observation["error"] = message
    return name, args, observation, metadata
