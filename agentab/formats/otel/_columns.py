"""The column OTel reader (internal): the fast path of :mod:`agentab.formats.otel`.

pyarrow's JSON reader (C++, multithreaded) parses a JSON Lines export into
columns, and spans become runs by vectorised operations on span and
attribute arrays (kinds, parent links, the run each span belongs to, step
order, token attribution); only what is per run (run-level fields) or per
step (arguments and results: JSON text to parse) is Python. For the files it
reads, its items are exactly those of the span-by-span reader
(:mod:`._span_runs`; :mod:`agentab.formats.otel`'s docstring gives the rules):
the tests compare the two on random files and on every odd value they try.
The span-by-span reader does Python work for every span and attribute: it
took five times as long as loading our own record. The arrays come
from :mod:`._arrays`; this module reads the steps' and runs' fields from
them, by the rules both readers share (:mod:`._rules`).

It reads the regular case and declines (:func:`read` returns None; the
span-by-span reader then reads the file) anything else: a byte-order mark,
blank lines, a value of another JSON type than the specification's (an
``intValue`` or a time as a number, a status code as its name), array,
kvlist or bytes values of an attribute it reads (elsewhere they are
ignored, as the span reader ignores them), ``instrumentationLibrarySpans``,
a line that is not an OTLP batch, empty, base64 or non-ASCII ids, a span
exported twice, an attribute key twice on a span or without a value, a
parent cycle, usage that is not one non-negative ``intValue`` per count,
token sums near 2**63, a run without tool spans in a file whose model calls
record tool calls in their messages (:mod:`._messages`), and every file with
a record to reject (the span-by-span reader words the rejection).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from agentab.formats._base import MISSING, Item, Part
from agentab.formats._base import Reject as _Reject
from agentab.formats._times import iso_texts
from agentab.formats.decode import Prepared, PreparedSteps
from agentab.formats.files import BOM
from agentab.formats.otel import _arrays, _messages, _rules
from agentab.formats.otel._arrays import AGENT, MODEL, Attrs, Layout, Spans, Unhandled
from agentab.formats.otel._spans import NON_SPACE

__all__ = ["read"]

_JSON = msgspec.json.Decoder()


def _unworded(i: int) -> str:
    """Where a rejection is: not worded here (the span-by-span reader words it)."""
    return ""


def read(data: bytes, first_line: int, fields: Mapping[str, str]) -> Part | None:
    """The items and keys of the JSON Lines ``data`` (whole lines; the first is line ``first_line``), or
    None when this reader does not read them (see the module docstring)."""
    if NON_SPACE.search(data) is None:
        return Part([], frozenset())
    if data.startswith(BOM):
        return None
    mapping = {**_rules.FIELDS, **fields}
    try:
        spans = _arrays.spans(data, first_line)
        at = _arrays.layout(spans, mapping)
        if (at.n_steps == 0).any() and _messages.has_message_tool_calls(spans.attrs.names):
            raise Unhandled  # a run without tool spans may have steps in its model calls' messages
        return _Runs(spans, at, mapping, _steps(spans, at)).part()
    except (Unhandled, _Reject, UnicodeDecodeError):  # a rejection (or text that is not UTF-8, which Arrow's
        return None  # JSON reader passes through): the span-by-span reader words it


def _first(found: list[dict[int, Any]], i: int) -> Any:
    """The first value a span has among lookups by key (:func:`agentab.formats.otel._spans.first`), or MISSING."""
    for values in found:
        value = values.get(i)
        if value is not None:
            return value
    return MISSING


def _tool_names(attrs: Attrs, names: pa.Array, steps: np.ndarray, n: int) -> list[str]:
    """The tool of each step (:func:`agentab.formats.otel._span_runs._step`)."""
    out = []
    generic = None
    for i, name in zip(steps.tolist(), attrs.strings(_rules.TOOL_NAME[0], steps, n)):
        if not name:
            if generic is None:
                generic = [attrs.values(key) for key in _rules.TOOL_NAME]
            value = _first(generic, i)
            name = _rules.tool_name(value, names[i].as_py() if value is MISSING else "", _unworded, i)
        out.append(name)
    return out


def _first_hit(found: list[dict[int, Any]], names: tuple[str, ...], i: int) -> tuple[str, Any] | None:
    """The first of ``names`` a span has (``found``: their values by span), as (name, value)."""
    for name, values in zip(names, found):
        value = values.get(i)
        if value is not None:
            return name, value
    return None


def _arguments(attrs: Attrs, steps: np.ndarray, n: int) -> list[dict[str, Any]]:
    """The arguments of each step (:func:`agentab.formats.otel._span_runs._step`)."""
    out = []
    generic = mimes = None
    decode = _JSON.decode
    for i, raw in zip(steps.tolist(), attrs.strings(_rules.TOOL_ARGS[0], steps, n)):
        if raw is None:
            if generic is None:
                generic = [attrs.values(key) for key in _rules.TOOL_ARGS]
                mimes = attrs.values(_rules.MIME_TYPE)
            hit = _first_hit(generic, _rules.TOOL_ARGS, i)
            out.append({} if hit is None else _rules.arguments(hit[0], hit[1], _unworded, i, mimes.get(i)))
            continue
        try:
            args = decode(raw)
        except msgspec.DecodeError:
            args = None
        if type(args) is not dict:  # blank, not JSON, or not an object: by the rule (or a rejection)
            args = _rules.arguments(_rules.TOOL_ARGS[0], raw, _unworded, i)
        out.append(args)
    return out


def _observations(attrs: Attrs, steps: np.ndarray, n: int, ends: np.ndarray, failed: np.ndarray,
                  messages: pa.Array) -> list[dict[str, Any] | None]:
    """The observation of each step (:func:`agentab.formats.otel._span_runs._step`)."""
    generic = None
    error_types = None
    out: list[dict[str, Any] | None] = []
    decode = _JSON.decode
    ended = (ends[steps] >= 0).tolist()
    errors = failed[steps].tolist()
    results = attrs.strings(_rules.TOOL_RESULT[0], steps, n)
    failed_steps = steps[failed[steps]]
    status_messages = dict(zip(failed_steps.tolist(), messages.take(pa.array(failed_steps)).to_pylist()))
    for i, has_end, error, value in zip(steps.tolist(), ended, errors, results):
        if not has_end:  # never answered
            out.append(None)
            continue
        observation: dict[str, Any] = {"status": "error" if error else "ok"}
        if value is None:
            if generic is None:
                generic = [attrs.values(key) for key in _rules.TOOL_RESULT]
            value = _first(generic, i)
        if value is not MISSING:  # JSON text parsed, other text kept (:func:`._rules.result`, inlined: per step)
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


# ---------------------------------------------------------------- steps


@dataclass(frozen=True)
class _Steps:
    """Every step of the file (in :attr:`~._arrays.Layout.steps` order) as the decoder's columns take
    them, and each run's token totals (by the runs' ranks; -1: no span of the run records them)."""

    tool: list[str]
    args: list[dict[str, Any]]
    observation: list[dict[str, Any] | None]
    metadata: list[dict[str, Any]]
    started_ns: list[int | None]
    ended_ns: list[int | None]
    tokens_in: list[int]
    tokens_out: list[int]
    total_in: list[int]
    total_out: list[int]
    received: list[bool]
    details: dict[str, tuple[list[int], list[int], list[bool]]]  # cached, reasoning: per step, per run, received

    def of(self, lo: int, hi: int, total_in: int, total_out: int) -> PreparedSteps:
        """The steps ``lo`` to ``hi`` (one run's), their tokens unknown when the run's total is, and on the
        steps whose model call is counted at another (:func:`._rules.counted_elsewhere`)."""
        unknown = [None] * (hi - lo)
        metadata = self.metadata[lo:hi]
        tokens_in, tokens_out = _rules.counted_elsewhere(unknown if total_in < 0 else self.tokens_in[lo:hi],
                                                         unknown if total_out < 0 else self.tokens_out[lo:hi],
                                                         self.received[lo:hi], metadata)
        return PreparedSteps(self.tool[lo:hi], self.args[lo:hi], self.observation[lo:hi], tokens_in, tokens_out,
                             self.started_ns[lo:hi], self.ended_ns[lo:hi], metadata)

    def details_of(self, lo: int, hi: int, r: int) -> dict[str, tuple[list[int], list[bool], int | None]]:
        """Run ``r``'s cached and reasoning tokens (steps ``lo`` to ``hi``), as :func:`._rules.store_details`
        takes them."""
        return {key: (per_step[lo:hi], received[lo:hi], None if per_run[r] < 0 else per_run[r])
                for key, (per_step, per_run, received) in self.details.items()}


def _steps(s: Spans, at: Layout) -> _Steps:
    """The fields of every step (per step: JSON to parse), and the tokens per step and per run."""
    steps, n, attrs = at.steps, s.n, s.attrs
    call_ids = attrs.values(_rules.TOOL_CALL_ID[0])
    for name in _rules.TOOL_CALL_ID[1:]:  # the first name a span records
        if name in attrs.index:
            call_ids = {**attrs.values(name), **call_ids}
    step_meta = [{"span_id": text} for text in s.span_id.take(pa.array(steps)).to_pylist()]
    for k, i in enumerate(steps.tolist()) if call_ids else ():
        if i in call_ids:
            step_meta[k]["tool_call_id"] = str(call_ids[i])
    tokens_in, total_in, got_in = _arrays.usage(s, at, _rules.TOKENS_IN)
    tokens_out, total_out, got_out = _arrays.usage(s, at, _rules.TOKENS_OUT)
    details = {}
    if any(name in attrs.index for name in _rules.DETAILS):
        for key, names in zip(_rules.DETAIL_KEYS, (_rules.TOKENS_CACHED, _rules.TOKENS_REASONING)):
            per_step, per_run, received = _arrays.usage(s, at, names)
            details[key] = (per_step.tolist(), per_run.tolist(), received.tolist())
    return _Steps(
        tool=_tool_names(attrs, s.names, steps, n), args=_arguments(attrs, steps, n),
        observation=_observations(attrs, steps, n, s.ends, s.failed, s.messages), metadata=step_meta,
        started_ns=[None if t < 0 else t for t in s.starts[steps].tolist()],
        ended_ns=[None if t < 0 else t for t in s.ends[steps].tolist()],
        tokens_in=tokens_in.tolist(), tokens_out=tokens_out.tolist(),
        total_in=total_in.tolist(), total_out=total_out.tolist(), received=(got_in | got_out).tolist(),
        details=details)


# ---------------------------------------------------------------- runs


class _Runs:
    """The runs of a file in columns (:func:`agentab.formats.otel._span_runs.record`): run-level attributes
    looked up on the run spans, their ancestors and their resources, for all runs at once. It is the
    :class:`~._rules.RunView` of its runs (a run: its span's index)."""

    def __init__(self, s: Spans, at: Layout, mapping: dict[str, str], steps: _Steps) -> None:
        self.s, self.at, self.mapping, self.steps = s, at, mapping, steps
        self.run_list: list[int] = at.runs.tolist()
        self.parents: list[int] = at.parent.tolist()
        self.resources: list[int] = s.resource_of.tolist()
        self.span_values: dict[str, dict[int, Any]] = {}
        self.resource_values: dict[str, dict[int, Any]] = {}
        self.candidates: dict[tuple[str, ...], dict[int, list[tuple[int, Any]]]] = {}

    def values_of(self, name: str) -> dict[int, Any]:
        """Span -> the attribute's value (cached)."""
        if name not in self.span_values:
            self.span_values[name] = self.s.attrs.values(name)
        return self.span_values[name]

    def lookup(self, i: int, keys: tuple[str, ...]) -> tuple[str, Any] | None:
        """The first of ``keys`` on span ``i``, its ancestors (nearest first), then its resource."""
        node = i
        while node >= 0:
            for name in keys:
                found = self.values_of(name).get(node)
                if found is not None:
                    return name, found
            node = self.parents[node]
        return self.on_resource(i, keys)

    def on_resource(self, i: int, keys: tuple[str, ...]) -> tuple[str, Any] | None:
        """The first of ``keys`` on span ``i``'s resource."""
        for name in keys:
            if name not in self.resource_values:
                self.resource_values[name] = self.s.res.values(name)
            found = self.resource_values[name].get(self.resources[i])
            if found is not None:
                return name, found
        return None

    def lookup_all(self, keys: tuple[str, ...]) -> list[tuple[str, Any] | None]:
        """:meth:`lookup` for every run: the run spans' own values first, for all runs at once."""
        run_list = self.run_list
        out: list[tuple[str, Any] | None] = [None] * len(run_list)
        pending = range(len(run_list))
        on_spans = False  # whether any span records one of the keys
        for name in keys:
            values = self.values_of(name)
            if not values:  # often: an alias no span of the file records
                continue
            on_spans = True
            rest = []
            for r in pending:
                found = values.get(run_list[r])
                if found is None:
                    rest.append(r)
                else:
                    out[r] = (name, found)
            pending = rest
        if not pending:
            return out
        # on an ancestor, or the resource (no ancestor to walk when no span records any key)
        look = self.lookup if on_spans else self.on_resource
        for r in pending:
            out[r] = look(run_list[r], keys)
        return out

    def where(self, i: int) -> str:
        """Span ``i`` in words, as the span-by-span reader words it (:func:`agentab.formats.otel._spans.where`):
        in the reasons of fields not found (any rejection declines the file)."""
        s = self.s
        return f"trace {s.trace[i].as_py()}, span {s.span_id[i].as_py()} ({s.names[i].as_py() or 'unnamed'})"

    def find_all(self, src: _rules.Source, names: tuple[str, ...] | None = None) -> list[tuple[str, Any] | None]:
        """:meth:`lookup_all` by a field's source (:func:`~._rules.source`; ``names``: an attribute
        source's names, default its own)."""
        if src.kind == "attribute":
            return self.lookup_all(names or (src.name,))
        if src.kind == "resource":
            values = self.s.res.values(src.name)
            return [None if (value := values.get(self.resources[i])) is None else (src.spec, value)
                    for i in self.run_list]
        return [_rules.from_name(src, self.s.names[i].as_py()) for i in self.run_list]

    def agent_name(self, i: int) -> str | None:
        """Span ``i``'s name when it is an agent span, else None."""
        return self.s.names[i].as_py() if self.s.kind[i] == AGENT else None

    def in_run(self, run: int, keys: tuple[str, ...]) -> Any:
        """The first value among ``keys`` of the run's model spans, in pre-order (None: none)."""
        if keys not in self.candidates:  # run -> its model spans with a value, in file order
            run_of = self.at.run_of
            model_span = (self.s.kind == MODEL) & (run_of >= 0)
            found = [self.values_of(k) for k in keys]
            having = np.zeros(len(model_span), bool)
            for values in found:
                having[list(values)] = True
            by_run: dict[int, list[tuple[int, Any]]] = {}
            for i in np.flatnonzero(model_span & having).tolist():
                hit = _first(found, i)
                if hit is not MISSING:
                    by_run.setdefault(int(run_of[i]), []).append((i, hit))
            self.candidates[keys] = by_run
        hits = self.candidates[keys].get(run)
        if not hits:
            return None
        parents = self.parents

        def path(i: int) -> list[int]:  # pre-order compares root-to-span paths (children in file order)
            out = []
            while i >= 0:
                out.append(i)
                i = parents[i]
            return out[::-1]

        return min(hits, key=lambda hit: path(hit[0]))[1]

    def part(self) -> Part:
        """Every run's item (run ids qualified) and the file's keys."""
        s, at, mapping, run_list = self.s, self.at, self.mapping, self.run_list
        runs = at.runs
        take = pa.array(runs)
        traces = s.trace.take(take).to_pylist() if len(runs) else []
        span_texts = s.span_id.take(take).to_pylist() if len(runs) else []
        srcs = _rules.sources(mapping)
        tasks, seeds, outcomes, run_ids, arms = (self.find_all(srcs[key])
                                                 for key in ("task_id", "seed", "outcome", "run_id", "arm"))
        amounts = {key: self.find_all(srcs[key]) for key in ("cost_usd", "latency_s") if key in srcs}
        models = self.find_all(srcs["model"], _rules.names_of(mapping, "model"))
        harnesses = self.find_all(srcs["harness"], _rules.names_of(mapping, "harness"))
        providers = self.lookup_all(_rules.PROVIDER)
        conversations = self.values_of("gen_ai.conversation.id")
        run_starts = iso_texts([t if t >= 0 else None for t in s.starts[runs].tolist()])
        run_ends = iso_texts([t if t >= 0 else None for t in s.ends[runs].tolist()])
        starts_ns, ends_ns = s.starts[runs].tolist(), s.ends[runs].tolist()
        bounds = np.stack([at.first_step, at.first_step + at.n_steps], axis=1).tolist()
        totals_in, totals_out = self.steps.total_in, self.steps.total_out
        converted = []
        ids: dict[str, int] = {}
        per_trace: dict[str, int] = {}
        for r, (i, trace_id, span_text) in enumerate(zip(run_list, traces, span_texts)):
            per_trace[trace_id] = per_trace.get(trace_id, 0) + 1
            task_id, seed, outcome, run_id, source, arm, absent = _rules.identity(
                srcs, tasks[r], seeds[r], outcomes[r], run_ids[r], arms[r], trace_id, span_text, self, i)
            start, end = starts_ns[r], ends_ns[r]
            start, end = (start if start >= 0 else None), (end if end >= 0 else None)
            money = _rules.amounts({key: found[r] for key, found in amounts.items()}, start, end, self, i)
            t_in, t_out = totals_in[r], totals_out[r]
            metadata = _rules.metadata(
                mapping, models[r], harnesses[r], providers[r], conversations.get(i), trace_id, span_text,
                run_starts[r], run_ends[r], self, i)
            steps = self.steps.of(*bounds[r], t_in, t_out)
            steps, totals = _rules.store_details(steps, t_in if t_in >= 0 else None, t_out if t_out >= 0 else None,
                                                 self.steps.details_of(*bounds[r], r) if self.steps.details else {})
            record = Prepared(run_id, task_id, seed, arm, outcome, money.get("cost_usd"),  # type: ignore[arg-type]
                              money.get("latency_s"), metadata, steps, totals=totals)
            converted.append((i, trace_id, span_text, record, source, absent))
            if source is not None:
                ids[run_id] = ids.get(run_id, 0) + 1
        items = [Item(line=int(s.line_of[i]), record=_rules.qualified(record, source, trace_id, span_text, ids,
                                                                      per_trace), missing=absent)
                 for i, trace_id, span_text, record, source, absent in converted]
        return Part(items, _rules.part_keys(pc.unique(s.trace).to_pylist(), ids))
