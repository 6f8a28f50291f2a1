"""Decode trace records into columns (internal to :mod:`agentab.traces`).

Design
------
Each record is decoded by :mod:`msgspec` against the typed schema in
:mod:`agentab.formats.record`, which validates types and ranges in C and names the
offending field. Values then go straight into per-column Python lists for a
chunk of records; argument and observation objects are re-encoded as
canonical JSON (sorted keys) into one byte buffer per column, so no Python
string is created per step. Every ``chunk_size`` records the lists become
Arrow arrays, and timestamps are parsed for the whole chunk at once. Memory is
therefore the final Arrow tables plus one chunk of Python objects.

Problems are collected as :class:`Rejection` entries carrying the source,
line and field. In strict mode the earliest problem is raised as a
:class:`~agentab.errors.TraceError`; otherwise the record is left out of both
tables and listed in ``Traces.rejected``, so that records read == runs loaded
+ records rejected, always.

The pieces: why a record failed to decode (:mod:`._diagnose`), a chunk's
lists and their Arrow batches (:mod:`._chunk`), step times
(:mod:`._times`); the record-level checks and :class:`RecordDecoder` are here.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, NamedTuple

import msgspec
import numpy as np
import pyarrow as pa

from agentab.errors import TraceError, where
from agentab.formats._chunk import (AT_N_HANDOFFS, AT_N_STEPS, TOKEN_FIELDS, Chunk, StepColumns, observed,
                                    run_tokens, runs_batch, step_columns, steps_batch)
from agentab.formats._diagnose import (arm_problem, diagnose, errors, metadata_problem, overflow, run_totals,
                                       statuses_problem, step_problem, terminal_problem)
from agentab.formats._times import iso_texts, ns_times, parse_times
from agentab.formats.record import TERMINAL_LISTS, Record

#: Records held as Python objects before a chunk becomes Arrow arrays.
CHUNK_RECORDS = 2048
#: Runs built in columns (:meth:`RecordDecoder.add_prepared`) are appended to the chunk this many at a time.
PENDING_RUNS = 64

_NO_TOTALS = (None,) * len(TOKEN_FIELDS)
_FIRST_GROWN_COLUMN = StepColumns._fields.index("kind")


@dataclass(frozen=True)
class Rejection:
    """One record left out, and why."""

    ordinal: int  # position among all records read (0-based)
    source: str
    line: int
    run_id: str | None
    field: str | None
    reason: str

    def __post_init__(self) -> None:
        # text from the input may hold a lone surrogate ("\ud800"), which no table or terminal can show: escape it
        for name in ("source", "run_id", "field", "reason"):
            value = getattr(self, name)
            if isinstance(value, str) and not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    object.__setattr__(self, name, value.encode("utf-8", "backslashreplace").decode("utf-8"))

    def error(self) -> TraceError:
        return TraceError(self.reason, source=self.source, line=self.line, field=self.field)


class gc_paused:  # noqa: N801 (used as a function: ``with gc_paused():``)
    """Pause the cyclic garbage collector (if on) for the block.

    Reading creates millions of small containers that live until the file
    is done and form no cycles: collections triggered meanwhile would only
    walk them again and again (up to two thirds of the reading time). A class:
    entered once per file, 0.3 us against a generator's 1.3 us.
    """
    __slots__ = ("_enabled",)

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            gc.enable()


@dataclass
class DecodedPart:
    """What one decoder read: tables, rejections, accepted run ids, counts."""

    runs: pa.Table
    steps: pa.Table
    rejected: list[Rejection]
    seen: dict[str, tuple[str, int, int]]
    n_read: int
    next_ordinal: int


class PreparedSteps(NamedTuple):
    """A run's steps as columns, one entry per step (step ``k`` has index ``k``).

    Times are unix nanoseconds (below 2**63) or None (as written: ``Prepared.text_times``); the other columns hold
    what the trace record's step fields hold (:class:`agentab.formats.record.Step`).
    The columns after ``metadata`` may be None as a whole: every step's value
    absent (``kind`` then ``"tool"``, the others unknown).
    """

    tool: list[str]
    args: list[dict[str, Any]]
    observation: list[dict[str, Any] | None]
    tokens_in: list[int | None]
    tokens_out: list[int | None]
    started_ns: list[int | None]
    ended_ns: list[int | None]
    metadata: list[dict[str, Any] | None]
    kind: list[str | None] | None = None
    agent: list[str | None] | None = None
    parallel: list[str | int | None] | None = None
    tokens_reasoning: list[int | None] | None = None
    tokens_cached: list[int | None] | None = None
    cost_usd: list[float | None] | None = None


#: The columns of :class:`PreparedSteps` that may be None, and the step fields they hold.
_GROWN = ("kind", "agent", "parallel", "tokens_reasoning", "tokens_cached", "cost_usd")
_FIRST_GROWN = PreparedSteps._fields.index("kind")
_NOTHING_GROWN = (None,) * len(_GROWN)


class Prepared(NamedTuple):
    """A run a format reader built in the decoder's own shape (:meth:`RecordDecoder.add_prepared`).

    The reader guarantees what the schema (:mod:`agentab.formats.record`) would
    check of a record: the types, non-empty ids and tool names, integers
    that fit in 64 bits, counts and amounts >= 0, finite numbers; the
    decoder still makes its record-level checks (arm, token totals,
    metadata, step times in order, duplicate run ids). It skips building a
    record of dicts and validating it again: for a reader that converts
    many runs (OpenTelemetry spans), that was a fifth of the loading time.

    ``run_id``, ``task_id``, ``seed`` and ``outcome`` are None while the run
    awaits them from the loader (:attr:`agentab.formats.Item.missing`), which
    fills them in (``_replace``); ``terminal_state`` is the record's, checked
    as the record's is (None: not given). ``text_times``: step times as written,
    parsed with the chunk's (a record's judgement, far cheaper than run by run).
    """

    run_id: str
    task_id: str | int
    seed: int
    arm: str | None
    outcome: bool | int | float
    cost_usd: float | None
    latency_s: float | None
    metadata: dict[str, Any] | None
    steps: PreparedSteps
    agents: list[str] | None = None
    totals: dict[str, int] | None = None  # any of TOKEN_FIELDS: the run's totals over all its model calls
    user_cost_usd: float | None = None
    terminal_state: dict[str, Any] | None = None
    text_times: bool = False

    def given(self) -> tuple[int | None, ...]:
        """The run-level token totals, in :data:`~agentab.formats._chunk.TOKEN_FIELDS` order (None: not given)."""
        totals = self.totals
        return (None,) * len(TOKEN_FIELDS) if not totals else tuple(map(totals.get, TOKEN_FIELDS))

    def to_record(self) -> dict[str, Any]:
        """The trace record (:mod:`agentab.formats.record`) of this run; times as ISO-8601 text with nanoseconds."""
        steps = self.steps
        started = steps.started_ns if self.text_times else iso_texts(steps.started_ns)
        ended = steps.ended_ns if self.text_times else iso_texts(steps.ended_ns)
        out = []
        for k, tool in enumerate(steps.tool):
            step: dict[str, Any] = {"index": k, "tool": tool, "args": steps.args[k],
                                    "observation": steps.observation[k], "started_at": started[k]}
            if ended[k] is not None:
                step["ended_at"] = ended[k]
            step["metadata"] = steps.metadata[k]
            for name in ("tokens_in", "tokens_out", *_GROWN):
                column = getattr(steps, name)
                if column is not None and column[k] is not None:
                    step[name] = column[k]
            out.append(step)
        record: dict[str, Any] = {"run_id": self.run_id, "task_id": self.task_id, "seed": self.seed}
        if self.arm is not None:
            record["arm"] = self.arm
        record["steps"] = out
        if self.terminal_state is not None:
            record["terminal_state"] = self.terminal_state
        record["outcome"] = self.outcome
        for name in ("cost_usd", "latency_s", "agents", "user_cost_usd"):
            if getattr(self, name) is not None:
                record[name] = getattr(self, name)
        record.update((name, total) for name, total in zip(TOKEN_FIELDS, self.given()) if total is not None)
        record["metadata"] = self.metadata
        return record


def derived_totals(steps: Sequence[dict[str, Any]], metadata: dict[str, Any] | None) -> tuple[int | None, ...]:
    """The token totals (``tokens_in``, ``tokens_out``, ``tokens_reasoning``, ``tokens_cached``) a record's steps
    give, which a run's totals are when the record gives none at run level (unknown: None).

    Examples
    --------
    >>> derived_totals([{"tokens_in": 5, "tokens_out": 1}, {"tokens_in": 7, "tokens_out": 2}], None)
    (12, 3, None, None)
    >>> derived_totals([], {"tokens_in": 40, "tokens_out": 4})
    (40, 4, None, None)
    """
    counts = [[step.get(name) for step in steps] for name in TOKEN_FIELDS]
    return run_totals(len(steps), counts, [step.get("metadata") for step in steps], metadata,
                      (None,) * len(TOKEN_FIELDS))[0]


class RecordDecoder:
    """Accumulate decoded records into Arrow tables (see module docstring).

    Parameters
    ----------
    strict : bool
        Raise the earliest problem as a TraceError instead of collecting it.
    chunk_size : int, optional
        Records held as Python objects before conversion to Arrow
        (default :data:`CHUNK_RECORDS`).
    first_ordinal : int
        Ordinal of the first record read; ordinals order records across
        decoders whose results are merged.
    """

    def __init__(self, *, strict: bool = True, chunk_size: int | None = None, first_ordinal: int = 0) -> None:
        self.strict = strict
        self.chunk_size = CHUNK_RECORDS if chunk_size is None else chunk_size
        self._decode = msgspec.json.Decoder(Record).decode
        self._encoder = msgspec.json.Encoder(order="sorted")
        self.n_read = 0
        self.next_ordinal = first_ordinal
        self.rejected: list[Rejection] = []
        self.seen: dict[str, tuple[str, int, int]] = {}  # run_id -> (source, line, ordinal) of accepted runs
        self._run_parts: list[pa.RecordBatch] = []
        self._step_parts: list[pa.RecordBatch] = []
        self._chunk = Chunk(self._encoder)
        # runs of add_prepared not yet in the chunk: appended many at once, before anything else touches the chunk
        self._pending: list[tuple[tuple[Any, ...], PreparedSteps, list[Any]]] = []
        self._pending_text = False  # the pending runs' times are texts (Prepared.text_times), else nanoseconds

    # -- public ------------------------------------------------------------ #
    def add(self, source: str, line: int, raw: bytes, arm: str | None = None) -> None:
        """Decode one record (JSON bytes) read from ``source`` at ``line``."""
        ordinal = self.next_ordinal
        self.next_ordinal += 1
        self.n_read += 1
        try:
            rec = self._decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            field, reason, offset, run_id = diagnose(raw, exc)
            self._reject(Rejection(ordinal, source, line + offset, run_id, field, reason))
            return
        except RecursionError:
            self._reject(Rejection(ordinal, source, line, None, None, "JSON nested too deeply to read"))
            return
        self._take(rec, ordinal, source, line, arm)

    def add_parsed(self, source: str, line: int, obj: Any, arm: str | None = None) -> None:
        """Validate one record given as plain Python values parsed from JSON (a format reader's output).

        ``msgspec.convert`` checks it against the same typed schema without a
        round trip through JSON text. Only for values parsed from JSON: they
        hold no NaN or infinity, which JSON text cannot carry and the schema's
        free-form objects would let through. A record that fails is encoded
        and decoded as text, so its rejection names the field exactly as for
        our own JSON Lines.
        """
        try:
            rec = msgspec.convert(obj, Record)
        except (msgspec.ValidationError, TypeError, RecursionError):
            try:
                raw = self._encoder.encode(obj)
            except (TypeError, msgspec.EncodeError, RecursionError) as err:
                self.reject(source, line, None, f"record is not JSON-serialisable: {err}")
                return
            self.add(source, line, raw, arm)
            return
        ordinal = self.next_ordinal
        self.next_ordinal += 1
        self.n_read += 1
        self._take(rec, ordinal, source, line, arm)

    def add_items(self, source: str, items: Iterable[Any], arm: str | None = None) -> None:
        """Take a format reader's items (:class:`agentab.formats.Item`): records converted from JSON (see
        :meth:`add_parsed`), runs built in columns (:meth:`add_prepared`) and rejections; an item's own
        ``source`` (an archive member) names it."""
        prepared: list[tuple[str, int, Prepared]] = []  # consecutive runs in columns, taken together
        for item in items:
            record = item.record
            if type(record) is Prepared:
                prepared.append((item.source or source, item.line, record))
                continue
            if prepared:
                self.add_prepared(prepared, arm)
                prepared = []
            if record is None:
                self.reject(item.source or source, item.line, item.field, item.reason or "cannot be converted",
                            item.run_id)
            else:
                self.add_parsed(item.source or source, item.line, record, arm)
        if prepared:
            self.add_prepared(prepared, arm)

    def add_prepared(self, runs: Sequence[tuple[str, int, Prepared]], arm: str | None = None) -> None:
        """Take runs a format reader built in columns (:class:`Prepared`; ``(source, line, run)`` each, in
        reading order): checked and appended without a record of dicts or a second schema validation, the
        steps of many runs at once (and of consecutive calls: :data:`PENDING_RUNS`)."""
        accepted = self._pending  # not yet in the chunk
        for source, line, run in runs:
            ordinal = self.next_ordinal
            self.next_ordinal += 1
            self.n_read += 1
            steps = run.steps
            status = observed(steps.observation, "status")
            counts = (steps.tokens_in, steps.tokens_out, steps.tokens_reasoning, steps.tokens_cached)
            problem = (arm_problem(run.arm, arm) or statuses_problem(status)
                       or step_problem(steps.kind, steps.agent, counts, run.agents))
            if problem is None:
                totals, problem = run_totals(len(steps.tool), counts, steps.metadata, run.metadata, run.given())
            if problem is None and run.terminal_state is not None:
                problem = terminal_problem(run.terminal_state)
            if problem is None and run.metadata is not None:
                problem = metadata_problem(run.metadata)
            if problem is not None:  # the runs pending came earlier: a strict read flushes them before it raises
                self._reject(Rejection(ordinal, source, line, run.run_id, *problem))
                continue
            if run.text_times != self._pending_text:  # the runs pending hold their times the other way
                self._append_prepared()
                accepted, self._pending_text = self._pending, run.text_times
            n_handoffs = 0 if steps.kind is None else steps.kind.count("handoff")
            accepted.append((self._row(ordinal, run.run_id, run.task_id, run.seed,
                                       arm if arm is not None else run.arm, run.metadata, run.agents, run.outcome,
                                       (len(steps.tool) - n_handoffs, n_handoffs, errors(status, steps.kind)),
                                       totals, (run.cost_usd, run.user_cost_usd, run.latency_s), None, None,
                                       run.terminal_state, source, line), steps, status))
            if len(accepted) >= PENDING_RUNS or len(accepted) + len(self._chunk) >= self.chunk_size:
                self._append_prepared()
                accepted = self._pending

    def _append_prepared(self) -> None:
        """Append the runs of :meth:`add_prepared` pending (rows, steps, statuses) to the chunk; flush it if full."""
        accepted = self._pending
        if not accepted:
            return
        self._pending = []
        c = self._chunk
        ns = not self._pending_text
        if c.ns is not ns:  # a chunk holds step times either as text and numbers, or as nanoseconds
            if len(c):
                self._flush()
                c = self._chunk
            c.ns = ns
        steps = [entry[1] for entry in accepted]
        observations = list(chain.from_iterable(s.observation for s in steps))
        c.status.extend(chain.from_iterable(entry[2] for entry in accepted))
        c.error.extend(observed(observations, "error"))
        c.observation.extend(observations)
        c.args.extend(list(chain.from_iterable(s.args for s in steps)))
        c.tokens_in.extend(chain.from_iterable(s.tokens_in for s in steps))
        c.tokens_out.extend(chain.from_iterable(s.tokens_out for s in steps))
        c.started_at.extend(chain.from_iterable(s.started_ns for s in steps))
        c.ended_at.extend(chain.from_iterable(s.ended_ns for s in steps))
        c.step_metadata.extend(list(chain.from_iterable(s.metadata for s in steps)))
        start = len(c.tool)
        for s in steps:
            grown = s[_FIRST_GROWN:]
            if grown != _NOTHING_GROWN:
                c.grown.append((start, grown))
            start += len(s.tool)
        c.tool.extend(chain.from_iterable(s.tool for s in steps))
        c.runs.extend(entry[0] for entry in accepted)
        if len(c) >= self.chunk_size:
            self._flush()

    def _take(self, rec: Record, ordinal: int, source: str, line: int, arm: str | None) -> None:
        """Check a decoded record and append it, or reject it."""
        run_id = str(rec.run_id)
        columns = step_columns(rec.steps)
        problem, totals = self._check(rec, arm, columns)
        if problem is not None:
            self._reject(Rejection(ordinal, source, line, run_id, *problem))
            return
        self._append(rec, ordinal, source, line, run_id, arm, columns, totals)
        if len(self._chunk) >= self.chunk_size:
            self._flush()

    def reject(self, source: str, line: int, field: str | None, reason: str, run_id: str | None = None) -> None:
        """Count a record that could not even be read as JSON bytes (or a converted run rejected by its id)."""
        ordinal = self.next_ordinal
        self.next_ordinal += 1
        self.n_read += 1
        self._reject(Rejection(ordinal, source, line, run_id, field, reason))

    def merge(self, part: DecodedPart) -> None:
        """Take in the result of another decoder that read later records.

        Run ids are checked against every run accepted so far; in strict mode
        the earliest problem of the part is raised.
        """
        self._flush()
        self.n_read += part.n_read
        self.next_ordinal = max(self.next_ordinal, part.next_ordinal)
        for rejection in part.rejected:
            if rejection.field == "run_id" and rejection.run_id in self.seen:  # name the run seen first overall
                rejection = Rejection(rejection.ordinal, rejection.source, rejection.line, rejection.run_id,
                                      "run_id", _duplicate(rejection.run_id, self.seen[rejection.run_id]))
            self.rejected.append(rejection)
        found = bool(part.rejected)
        for run_id, (source, line, ordinal) in part.seen.items():
            first = self.seen.get(run_id)
            if first is None:
                self.seen[run_id] = (source, line, ordinal)
            else:
                found = True
                self.rejected.append(Rejection(ordinal, source, line, run_id, "run_id", _duplicate(run_id, first)))
        self._run_parts.extend(part.runs.to_batches())
        self._step_parts.extend(part.steps.to_batches())
        if self.strict and found:
            raise min(self.rejected, key=lambda r: r.ordinal).error()

    def export(self) -> DecodedPart:
        """Everything decoded so far, for :meth:`merge` into another decoder."""
        runs, steps, rejected = self.finish()
        return DecodedPart(runs, steps, rejected, dict(self.seen), self.n_read, self.next_ordinal)

    def finish(self) -> tuple[pa.Table, pa.Table, list[Rejection]]:
        """Return ``(runs, steps, rejected)``; runs/steps keep an ``_ordinal`` column."""
        self._flush()
        if not self._run_parts:  # nothing accepted: empty tables with the right schema
            empty = Chunk(self._encoder)
            nothing = np.zeros(0, dtype=np.int64)
            self._run_parts.append(runs_batch(empty))
            self._step_parts.append(steps_batch(empty, nothing, nothing, nothing.view("datetime64[ns]"),
                                                 nothing.view("datetime64[ns]")))
        runs = pa.Table.from_batches(self._run_parts)
        steps = pa.Table.from_batches(self._step_parts)
        self._run_parts, self._step_parts = [], []
        return runs, steps, sorted(self.rejected, key=lambda r: r.ordinal)

    # -- checks ---------------------------------------------------------------- #
    def _check(self, rec: Record, arm: str | None, columns: StepColumns | None
               ) -> tuple[tuple[str, str] | None, tuple[int | None, ...]]:
        """The record's first problem (or None) and its token totals."""
        given = (rec.tokens_in, rec.tokens_out, rec.tokens_reasoning, rec.tokens_cached)
        problem = arm_problem(rec.arm, arm)
        if columns is None:
            counts: tuple[Any, ...] = (None,) * len(TOKEN_FIELDS)
            if problem is None and rec.agents is not None:
                problem = step_problem(None, None, counts, rec.agents)
        else:
            n = len(columns.index)
            if columns.index != tuple(range(n)):
                k = next(k for k, value in enumerate(columns.index) if value != k)
                return ((f"steps[{k}].index",
                         f"expected {k} (step indices must be 0..{n - 1} in order), got {columns.index[k]}"), given)
            counts = (columns.tokens_in, columns.tokens_out, columns.tokens_reasoning, columns.tokens_cached)
            problem = problem or statuses_problem(columns.status)
            if problem is None and (columns.grown or rec.agents is not None):
                problem = step_problem(None, columns.agent, counts, rec.agents)
        if problem is not None:
            return problem, given
        if columns is not None and not columns.grown and given == _NO_TOTALS:  # a record of the old shape
            totals = (run_tokens(columns.tokens_in, columns.metadata), run_tokens(columns.tokens_out, columns.metadata),
                      None, None)
            problem = overflow(totals)
        else:
            totals, problem = run_totals(0 if columns is None else len(columns.index), counts,
                                         () if columns is None else columns.metadata, rec.metadata, given)
        if problem is None and rec.terminal_state is not None:
            problem = terminal_problem(rec.terminal_state)
        if problem is None and rec.metadata is not None:
            problem = metadata_problem(rec.metadata)
        return problem, totals

    def _reject(self, rejection: Rejection) -> None:
        self.rejected.append(rejection)
        if self.strict:
            self._flush()  # chunk-level checks may find an earlier problem
            raise min(self.rejected, key=lambda r: r.ordinal).error()

    # -- accumulation ---------------------------------------------------------- #
    def _append(self, rec: Record, ordinal: int, source: str, line: int, run_id: str, arm: str | None,
                columns: StepColumns | None, totals: tuple[int | None, ...]) -> None:
        self._append_prepared()  # the converted runs read before it
        c = self._chunk
        if c.ns:  # see add_prepared
            self._flush()
            c = self._chunk
        if columns is None:
            steps: tuple[int, int, int | None] = (0, 0, 0)
        else:
            if columns.grown:
                c.grown.append((len(c.tool), columns[_FIRST_GROWN_COLUMN:_FIRST_GROWN_COLUMN + len(_GROWN)]))
                n_handoffs = columns.kind.count("handoff")
                steps = (len(columns.index) - n_handoffs, n_handoffs, errors(columns.status, columns.kind))
            else:
                steps = (len(columns.index), 0, errors(columns.status))
            c.status.extend(columns.status)
            c.error.extend(columns.error)
            c.observation.extend(columns.observation)
            c.tool.extend(columns.tool)
            c.args.extend(columns.args)
            c.tokens_in.extend(columns.tokens_in)
            c.tokens_out.extend(columns.tokens_out)
            c.started_at.extend(columns.started_at)
            c.ended_at.extend(columns.ended_at)
            c.step_metadata.extend(columns.metadata)
        c.runs.append(self._row(ordinal, run_id, rec.task_id, rec.seed, arm if arm is not None else rec.arm,
                                rec.metadata, rec.agents, rec.outcome, steps, totals,
                                (rec.cost_usd, rec.user_cost_usd, rec.latency_s), rec.retries, rec.backtracks,
                                rec.terminal_state, source, line))

    def _row(self, ordinal: int, run_id: str, task_id: str | int, seed: int, arm: str | None,
             meta: dict[str, Any] | None, agents: list[str] | None, outcome: Any,
             steps: tuple[int, int, int | None], totals: tuple[int | None, ...],
             money: tuple[float | None, float | None, float | None], retries: int | None, backtracks: int | None,
             state: dict[str, Any] | None, source: str, line: int) -> tuple[Any, ...]:
        """A run's tuple of run-level values (:data:`RUN_FIELDS`): ``steps`` is (tool calls, handoffs, errors),
        ``totals`` the token totals (:data:`TOKEN_FIELDS`), ``money`` (cost_usd, user_cost_usd, latency_s)."""
        encode = self._encoder.encode
        if state is None:
            counts: tuple[int | None, ...] = (None,) * len(TERMINAL_LISTS)
        else:
            counts = tuple(None if state.get(key) is None else len(state[key]) for key in TERMINAL_LISTS)
        return (
            ordinal, run_id, str(task_id), seed, arm,
            None if meta is None else meta.get("model"), None if meta is None else meta.get("harness"),
            None if agents is None else encode(agents), outcome, *steps, *totals, *money, retries, backtracks,
            *counts, None if state is None else encode(state), None if meta is None else encode(meta), source, line,
        )

    def _flush(self) -> None:
        """Convert the chunk to Arrow, after the checks that need the whole chunk.

        Timestamps are parsed for the whole chunk at once; then, in reading
        order, each run that survived every check claims its ``run_id`` (a
        later run with the same id is a duplicate). Claiming ids here rather
        than in :meth:`add` keeps a rejected run from shadowing a valid one,
        whatever the chunk or part boundaries.
        """
        self._append_prepared()  # (which flushes a full chunk itself)
        c = self._chunk
        if not len(c):
            return
        self._chunk = Chunk(self._encoder)
        n_steps = np.fromiter((run[AT_N_STEPS] + run[AT_N_HANDOFFS] for run in c.runs), dtype=np.int64,
                              count=len(c.runs))
        step_record = np.repeat(np.arange(len(c)), n_steps)
        index = np.arange(len(step_record), dtype=np.int64) - np.repeat(np.cumsum(n_steps) - n_steps, n_steps)
        if c.ns:
            started, bad_start = ns_times(c.started_at), []
            ended, bad_end = ns_times(c.ended_at), []
        else:
            started, bad_start = parse_times(c.started_at)
            ended, bad_end = parse_times(c.ended_at)
        problems = [(row, "started_at", why) for row, why in bad_start]
        problems += [(row, "ended_at", why) for row, why in bad_end]
        both = ~(np.isnat(started) | np.isnat(ended))
        for row in np.flatnonzero(both & (ended < started)):
            problems.append((int(row), "ended_at", f"ended_at {ended[row]} is before started_at {started[row]}"))
        first_problem: dict[int, tuple[str, str]] = {}
        problems.sort(key=lambda p: (p[0], p[1] != "started_at"))
        for row, name, why in problems:  # one rejection per run: its first problem
            first_problem.setdefault(int(step_record[row]), (f"steps[{index[row]}].{name}", why))
        found = False
        for position, run in enumerate(c.runs):
            ordinal, run_id, *_, source, line = run
            problem = first_problem.get(position)
            if problem is None and run_id in self.seen:
                problem = ("run_id", _duplicate(run_id, self.seen[run_id]))
            if problem is None:
                self.seen[run_id] = (source, line, ordinal)
            else:
                found = True
                self.rejected.append(Rejection(ordinal, source, line, run_id, *problem))
        self._run_parts.append(runs_batch(c))
        self._step_parts.append(steps_batch(c, step_record, index, started, ended))
        if self.strict and found:
            raise min(self.rejected, key=lambda r: r.ordinal).error()


def _duplicate(run_id: str, first: tuple[str, int, int]) -> str:
    return f"duplicate run_id {run_id!r} (first seen in {where(first[0], first[1])})"
