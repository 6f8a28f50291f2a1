"""A chunk of accepted records as Python lists, and those lists as Arrow record batches.

:class:`Chunk` holds one tuple of run-level values per run (:data:`RUN_FIELDS`)
and one list per step column; arguments, observations and step metadata are
kept as canonical JSON blobs (:class:`JsonColumn`), so no Python string is
made per step. :func:`runs_batch` and :func:`steps_batch` turn a chunk into
Arrow. :func:`step_columns` transposes one record's steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any, NamedTuple

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec.structs import astuple

from agentab.formats.record import STEP_KINDS, TERMINAL_LISTS, TOKENS_WITH_STEP, Step

_STATUSES = frozenset(("ok", "error", None))


class JsonColumn:
    """Canonical JSON texts, one per row, kept as joined blobs plus lengths."""

    __slots__ = ("blobs", "lengths", "nulls", "n", "_encode")

    def __init__(self, encoder: msgspec.json.Encoder) -> None:
        self.blobs: list[bytes] = []
        self.lengths: list[int] = []
        self.nulls: list[int] = []
        self.n = 0
        self._encode = encoder.encode

    def extend(self, objects: Sequence[Any]) -> None:
        """Append the canonical JSON of each object (``None`` becomes a null)."""
        count = len(objects)
        missing = objects.count(None)
        if missing == 0:
            encoded = list(map(self._encode, objects))
        elif missing == count:
            self.nulls.extend(range(self.n, self.n + count))
            self.lengths.extend(repeat(0, count))
            self.n += count
            return
        else:
            self.nulls.extend(self.n + i for i, obj in enumerate(objects) if obj is None)
            encoded = [b"" if obj is None else self._encode(obj) for obj in objects]
        self.blobs.append(b"".join(encoded))
        self.lengths.extend(map(len, encoded))
        self.n += count

    def to_arrow(self) -> pa.Array:
        data = b"".join(self.blobs)
        large = len(data) >= 2**31
        offsets = np.zeros(self.n + 1, dtype=np.int64 if large else np.int32)
        np.cumsum(self.lengths, out=offsets[1:])
        bitmap = None
        if self.nulls:
            valid = np.ones(self.n, dtype=bool)
            valid[self.nulls] = False
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        kind = pa.large_string() if large else pa.string()
        return pa.Array.from_buffers(kind, self.n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                     null_count=len(self.nulls))


#: Run-level values, in the order each accepted record's tuple holds them (``tokens`` follows ``tokens_out``).
RUN_FIELDS = (
    ("_ordinal", pa.int64()), ("run_id", pa.string()), ("task_id", pa.string()), ("seed", pa.int64()),
    ("arm", pa.string()), ("model", pa.string()), ("harness", pa.string()), ("agents", pa.binary()),
    ("outcome", None), ("n_steps", pa.int64()), ("n_handoffs", pa.int64()), ("n_errors", pa.int64()),
    ("tokens_in", pa.int64()), ("tokens_out", pa.int64()), ("tokens_reasoning", pa.int64()),
    ("tokens_cached", pa.int64()), ("cost_usd", pa.float64()), ("user_cost_usd", pa.float64()),
    ("latency_s", pa.float64()), ("retries", pa.int64()), ("backtracks", pa.int64()),
    *((key, pa.int64()) for key in TERMINAL_LISTS),
    ("terminal_state", pa.binary()), ("metadata", pa.binary()), ("source", pa.string()), ("line", pa.int64()),
)

#: The token totals of a run, in the order of the run's tuple.
TOKEN_FIELDS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached")

AT_N_STEPS = [name for name, _ in RUN_FIELDS].index("n_steps")
AT_N_HANDOFFS = AT_N_STEPS + 1


class Chunk:
    """A chunk of accepted records: one tuple per run, per-column lists for steps."""

    def __init__(self, encoder: msgspec.json.Encoder) -> None:
        self.encoder = encoder
        self.runs: list[tuple[Any, ...]] = []
        self.tool: list[str] = []
        self.args = JsonColumn(encoder)
        self.observation = JsonColumn(encoder)
        self.status: list[str | None] = []
        self.error: list[Any] = []
        self.tokens_in: list[int | None] = []
        self.tokens_out: list[int | None] = []
        self.started_at: list[Any] = []
        self.ended_at: list[Any] = []
        self.step_metadata = JsonColumn(encoder)
        # the step fields of :data:`GROWN_STEP_FIELDS`, only for runs that hold one: (first step row, columns)
        self.grown: list[tuple[int, Sequence[Sequence[Any] | None]]] = []
        self.ns = False  # step times: unix nanoseconds (runs of add_prepared), else texts and numbers

    def __len__(self) -> int:
        return len(self.runs)


#: The step fields the record gained (after ``metadata``), with their Arrow types; a run's steps usually hold
#: none of them, so a chunk keeps them only for the runs that do (:attr:`Chunk.grown`).
GROWN_STEP_FIELDS = (("kind", pa.dictionary(pa.int8(), pa.string())), ("agent", pa.string()), ("parallel", pa.string()),
                     ("tokens_reasoning", pa.int64()), ("tokens_cached", pa.int64()), ("cost_usd", pa.float64()))


class StepColumns(NamedTuple):
    """The steps of one record, transposed into per-field tuples."""

    index: tuple[int, ...]
    tool: tuple[str, ...]
    args: tuple[dict[str, Any], ...]
    observation: tuple[dict[str, Any] | None, ...]
    tokens_in: tuple[int | None, ...]
    tokens_out: tuple[int | None, ...]
    started_at: tuple[Any, ...]
    ended_at: tuple[Any, ...]
    metadata: tuple[dict[str, Any] | None, ...]
    kind: tuple[str | None, ...]
    agent: tuple[str | None, ...]
    parallel: tuple[str | int | None, ...]
    tokens_reasoning: tuple[int | None, ...]
    tokens_cached: tuple[int | None, ...]
    cost_usd: tuple[float | None, ...]
    status: list[Any]
    error: list[Any]
    grown: bool  # a step holds one of the fields after ``metadata`` (else every one is None)


_FIRST_GROWN = StepColumns._fields.index("kind")
_N_GROWN = StepColumns._fields.index("status") - _FIRST_GROWN


def statuses_valid(statuses: Sequence[Any]) -> bool:
    try:
        return _STATUSES.issuperset(statuses)
    except TypeError:  # an unhashable status such as a list
        return False


def step_columns(steps: list[Step]) -> StepColumns | None:
    """Transpose steps into columns with C-level calls only (no per-step Python code)."""
    if not steps:
        return None
    fields = tuple(zip(*map(astuple, steps)))
    status, error = observed(fields[3], "status"), observed(fields[3], "error")
    nothing = (None,) * len(steps)
    return StepColumns(*fields, status, error, fields[_FIRST_GROWN:] != (nothing,) * _N_GROWN)


def observed(observations: Sequence[dict[str, Any] | None], key: str) -> list[Any]:
    """Each observation's ``key`` (None where absent, or no observation), in C when every step has one."""
    if None in observations:
        return [None if o is None else o.get(key) for o in observations]
    return list(map(dict.get, observations, repeat(key)))


def run_tokens(counts: Sequence[int | None], metadata: Sequence[dict[str, Any] | None]) -> int | None:
    """A run's total of one token kind from its steps' counts: None (unknown) when a step's count is unknown,
    unless that step's model call is counted at another step with a known count (:data:`TOKENS_WITH_STEP`).

    Examples
    --------
    >>> run_tokens([5, 0], [None, None]), run_tokens([5, None], [None, None])
    (5, None)
    >>> run_tokens([5, None], [None, {"tokens_with_step": 0}])
    5
    >>> run_tokens([None, None], [None, {"tokens_with_step": 0}])  # the step it points at is unknown too
    >>> run_tokens([5, None], [None, {"tokens_with_step": 1}])  # itself: unknown
    """
    if None not in counts:
        return sum(counts)
    for k, count in enumerate(counts):
        if count is None:
            meta = metadata[k]
            at = meta.get(TOKENS_WITH_STEP) if type(meta) is dict else None
            if type(at) is not int or not 0 <= at < len(counts) or at == k or counts[at] is None:
                return None
    return sum(count for count in counts if count is not None)


def runs_batch(c: Chunk) -> pa.RecordBatch:
    values = list(zip(*c.runs)) if c.runs else [()] * len(RUN_FIELDS)
    columns: dict[str, pa.Array] = {}
    for (name, kind), column in zip(RUN_FIELDS, values):
        if name == "outcome":
            columns["outcome"] = pa.array([float(v) for v in column], pa.float64())
            columns["_outcome_is_bool"] = pa.array([type(v) is bool for v in column], pa.bool_())
        elif kind == pa.binary():
            columns[name] = pa.array(column, kind).cast(pa.string())
        else:
            columns[name] = pa.array(column, kind)
        if name == "tokens_out":
            columns["tokens"] = pc.add(columns["tokens_in"], columns["tokens_out"])
    return pa.RecordBatch.from_pydict(columns)


def _error_texts(errors: list[Any], encoder: msgspec.json.Encoder) -> pa.Array:
    """Error payloads as text: strings as they are, anything else as canonical JSON."""
    try:
        return pa.array(errors, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([e if e is None or type(e) is str else encoder.encode(e).decode() for e in errors],
                        pa.string())


def _group_texts(groups: list[Any]) -> pa.Array:
    """Parallel group ids as text (integers as their digits)."""
    try:
        return pa.array(groups, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([g if g is None or type(g) is str else str(g) for g in groups], pa.string())


def _grown_columns(c: Chunk) -> dict[str, pa.Array]:
    """The arrays of :data:`GROWN_STEP_FIELDS` (missing where no step holds a value; ``kind`` is ``"tool"``)."""
    n = len(c.tool)
    columns = {}
    for k, (name, kind) in enumerate(GROWN_STEP_FIELDS):
        parts = [(start, fields[k]) for start, fields in c.grown if fields[k] is not None]
        if name == "kind":  # a dictionary array with one byte per step: 0 a tool call, 1 a handoff
            codes = np.zeros(n, dtype=np.int8)
            for start, part in parts:
                codes[start:start + len(part)] = [value == "handoff" for value in part]
            columns[name] = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(STEP_KINDS, pa.string()))
            continue
        if not parts:
            columns[name] = pa.nulls(n, kind)
            continue
        values: list[Any] = [None] * n
        for start, part in parts:
            values[start:start + len(part)] = part
        if name == "parallel":
            columns[name] = _group_texts(values)
        else:
            columns[name] = pa.array(values, kind)
    return columns


def steps_batch(
    c: Chunk, step_record: np.ndarray, index: np.ndarray, started: np.ndarray, ended: np.ndarray
) -> pa.RecordBatch:
    ordinal = np.fromiter((run[0] for run in c.runs), dtype=np.int64, count=len(c.runs))[step_record]
    encoder = c.encoder
    grown = _grown_columns(c)
    columns = {
        "_ordinal": pa.array(ordinal),
        "index": pa.array(index),
        "kind": grown["kind"],
        "agent": grown["agent"],
        "tool": pa.array(c.tool, pa.string()),
        "args": c.args.to_arrow(),
        "status": pa.array(c.status, pa.string()),
        "error": _error_texts(c.error, encoder),
        "tokens_in": pa.array(c.tokens_in, pa.int64()),
        "tokens_out": pa.array(c.tokens_out, pa.int64()),
        "tokens_reasoning": grown["tokens_reasoning"],
        "tokens_cached": grown["tokens_cached"],
        "cost_usd": grown["cost_usd"],
        "parallel": grown["parallel"],
        "started_at": pa.array(started, pa.timestamp("ns", tz="UTC")),
        "ended_at": pa.array(ended, pa.timestamp("ns", tz="UTC")),
        "observation": c.observation.to_arrow(),
        "metadata": c.step_metadata.to_arrow(),
    }
    return pa.RecordBatch.from_pydict(columns)
