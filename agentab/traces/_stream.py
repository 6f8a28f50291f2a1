"""Traces larger than memory: ``load_traces(..., engine="stream" | "dask")`` read in blocks (internal).

The plan
    A source is cut into blocks, each read on its own with the loader's own code: agentab's JSON Lines
    record in byte ranges of whole lines (about ``batch_size`` bytes each); a converted JSON Lines format
    that can be read in parts (:attr:`agentab.formats.Format.read_part`, e.g. OpenTelemetry spans) in byte
    ranges too, adjacent ranges merged until no key (an OTel trace id) is in two blocks, so a trace is never
    split; every other file (``.json`` arrays, gzip, the other formats) whole, one block per file; a
    folder file by file. Block ``k`` numbers its records from ``k << 40`` (:data:`_ORDINAL_BITS`), so
    blocks order their records as one read does.
The load pass
    :func:`load_batched` reads every block once (in this process, or in Dask's workers) and keeps only
    what the load reports: the rejected records, the records read, each accepted run's id (a run id
    accepted in two blocks is a duplicate, rejected in the later one exactly as one read rejects it: the
    blocks' accepted ids are merged in block order by :meth:`RecordDecoder.merge`, which also raises the
    earliest problem of a strict load), and a small index of the runs (task, arm, steps, whether the
    outcome is true/false). The tables are dropped.
:class:`BatchedTraces`
    Reads the blocks again when asked (:meth:`BatchedTraces.map_batches`): each batch is an in-memory
    :class:`~agentab.Traces` of one block, with the duplicates found across blocks left out and the
    outcome typed as the whole load's (true/false only when every outcome is). :func:`agentab.score`
    scores batch by batch this way and concatenates the per-run score tables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agentab import formats
from agentab.errors import TraceError
from agentab.formats.decode import DecodedPart, RecordDecoder, Rejection
from agentab.traces._overlay import Overlay
from agentab.traces._parallel import _read_converted, read_lines
from agentab.traces._tables import Traces, _frames, _keep, _rejected_frame, warn_mixed

#: Records of block ``k`` are numbered from ``k << _ORDINAL_BITS``.
_ORDINAL_BITS = 40
#: Bytes of input per batch by default.
DEFAULT_BATCH_BYTES = 64 * 2**20
#: The engines of ``load_traces``.
ENGINES = ("memory", "stream", "dask")
_COUNT_BLOCK = 8 * 2**20
_INDEX_COLUMNS = ("_ordinal", "_outcome_is_bool", "task_id", "arm", "n_steps", "n_handoffs")
_TEXT = pd.Index(["text"]).dtype  # the text dtype of a load's categories


@dataclass(frozen=True)
class Block:
    """One block of a source: a file's byte range ``[start, end)`` of whole lines (``end`` None: the whole
    file), or an unreadable path (``reason``: one rejection)."""

    index: int
    path: str
    arm: str | None
    root: str | None
    format: str
    start: int = 0
    end: int | None = None
    first_line: int = 1
    reason: str | None = None

    @property
    def first_ordinal(self) -> int:
        return self.index << _ORDINAL_BITS


@dataclass(frozen=True)
class Settings:
    """What every block is read with: the user's ``fields`` (without ``path``), the path template, and the
    loader's file reader (``_load._Reader``, given by the loader: this module does not import it)."""

    fields: dict[str, str] | None
    overlay: Overlay
    reader: type


@dataclass(frozen=True)
class PathRules:
    """The loader's rules for paths (given by :mod:`agentab.traces._load`): ``files(path)`` lists a source's
    files, ``unreadable`` is the type of those that cannot be read, ``kind(path)`` a file's kind by its name."""

    files: Callable[[Path], list[Path]]
    unreadable: type
    kind: Callable[[Path], str | None]


@dataclass
class BlockInfo:
    """What the load pass keeps of a block: its decoder's result without tables, its keys and run index."""

    part: DecodedPart
    keys: frozenset[str]
    index: pa.Table


# --------------------------------------------------------------------------- #
# Reading one block (in this process or a Dask worker)
# --------------------------------------------------------------------------- #
def decode_block(block: Block, settings: Settings) -> tuple[DecodedPart, frozenset[str]]:
    """Every record of ``block``, decoded leniently (the load pass raises a strict load's earliest problem)."""
    decoder = RecordDecoder(strict=False, first_ordinal=block.first_ordinal)
    if block.reason is not None:
        decoder.reject(block.path, 1, None, block.reason)
        return decoder.export(), frozenset()
    path = Path(block.path)
    fmt = formats.get(block.format)
    if block.end is None:
        reader = settings.reader(decoder, 1, None, block.format, settings.fields, settings.overlay)
        reader.read_file(path, block.arm, None if block.root is None else Path(block.root))
        return decoder.export(), frozenset()
    if fmt.name == "record":
        read_lines(decoder, path, block.arm, block.start, block.end, block.first_line)
        return decoder.export(), frozenset()
    fields = formats.resolve_fields(fmt.fields, settings.fields, formats.RUN_FIELDS)
    return _read_converted(fmt, fields, path, block.arm, (block.start, block.end, block.first_line),
                           block.first_ordinal)


def info_block(block: Block, settings: Settings) -> BlockInfo:
    """The load pass of one block: rejections, accepted ids and counts, keys, and the index of its runs."""
    part, keys = decode_block(block, settings)
    runs = _keep(part.runs, pa.array([r.ordinal for r in part.rejected], pa.int64()))
    index = runs.select(list(_INDEX_COLUMNS))
    empty = pa.table({"_": pa.array([], pa.int8())}).select([])
    return BlockInfo(DecodedPart(empty, empty, part.rejected, part.seen, part.n_read, part.next_ordinal), keys,
                     index)


def batch_block(block: Block, extra: list[Rejection], settings: Settings, all_bool: bool,
                function: Callable[[Traces], Any]) -> Any:
    """``function`` of the in-memory :class:`Traces` of one block, the runs of ``extra`` (duplicates of runs
    in earlier blocks) left out, outcomes typed as the whole load's."""
    part, _ = decode_block(block, settings)
    rejected = sorted([*part.rejected, *extra], key=lambda r: r.ordinal)
    runs, steps = _frames(part.runs, part.steps, rejected, all_bool=all_bool)
    traces = Traces(runs=runs, steps=steps, rejected=_rejected_frame(rejected), n_read=part.n_read,
                    sources=(block.path,), formats=((block.path, block.format),))
    return function(traces)


# --------------------------------------------------------------------------- #
# The plan
# --------------------------------------------------------------------------- #
def line_blocks(path: Path, size: int) -> list[tuple[int, int, int]]:
    """``path`` cut into ``(start, end, first_line)`` ranges of whole lines, each about ``size`` bytes."""
    total = path.stat().st_size
    if total <= size:
        return [(0, total, 1)]
    starts = [0]
    with path.open("rb") as fh:
        while starts[-1] + size < total:
            fh.seek(starts[-1] + size - 1)
            fh.readline()  # to the start of the next line
            if fh.tell() >= total:
                break
            starts.append(fh.tell())
        out, line, position = [], 1, 0
        fh.seek(0)
        for start, end in zip(starts, [*starts[1:], total]):
            while position < start:
                chunk = fh.read(min(_COUNT_BLOCK, start - position))
                line += chunk.count(b"\n")
                position += len(chunk)
            out.append((start, end, line))
    return out


class Planner:
    """Walks a source as :func:`agentab.load_traces` does and cuts it into :class:`Block`\\ s."""

    def __init__(self, reader: Any, batch_size: int, rules: PathRules) -> None:
        self.reader = reader  # a _Reader: the format detection, fields and overlay of the load
        self.batch_size = batch_size
        self.rules = rules
        self.blocks: list[Block] = []

    def feed(self, source: Any, arm: str | None) -> None:
        if isinstance(source, (str, os.PathLike)):
            root = str(source) if os.path.isdir(source) else None
            for path in self.rules.files(Path(source)):
                self.reader.sources.append(str(path))
                if isinstance(path, self.rules.unreadable):
                    if self.reader.decoder.strict:
                        raise TraceError(path.reason, source=str(path))
                    self._add(str(path), arm, root, "record", reason=path.reason)
                else:
                    self._plan_file(path, arm, root)
        elif isinstance(source, (list, tuple)):
            for position, item in enumerate(source, start=1):
                if isinstance(item, Mapping):
                    raise TypeError("records given in memory are loaded in memory: engine='memory' (the stream "
                                    "and dask engines read files)")
                if not isinstance(item, (str, os.PathLike)):
                    raise TypeError(f"item {position} of the source list is a {type(item).__name__}: "
                                    "expected a path or a record dict")
                self.feed(item, arm)
        else:
            raise TypeError(f"cannot read traces from a {type(source).__name__}")

    def _add(self, path: str, arm: str | None, root: str | None, fmt: str, **where: Any) -> None:
        self.blocks.append(Block(len(self.blocks), path, arm, root, fmt, **where))

    def _plan_file(self, path: Path, arm: str | None, root: str | None) -> None:
        reader = self.reader
        try:
            fmt = reader._file_format(path)
            if fmt.name == "record" and reader.overlay.active:
                raise TraceError("agentab's own record carries its identity and outcome: fields['path'] and "
                                 "outcomes= apply to converted formats only", source=str(path))
            plain = not path.name.lower().endswith(".gz") and path.stat().st_size > self.batch_size
            if fmt.name == "record":
                split = plain and self.rules.kind(path) == "lines"
            else:
                split = (plain and not reader.overlay.active and fmt.read_part is not None
                         and fmt.splits is not None and fmt.splits(path))
            if not split:
                self._add(str(path), arm, root, fmt.name)
                return
            for start, end, first_line in line_blocks(path, self.batch_size):
                self._add(str(path), arm, root, fmt.name, start=start, end=end, first_line=first_line)
        except (OSError, EOFError) as err:
            raise TraceError(f"cannot read file: {err}", source=str(path)) from err


def merge_keyed(blocks: list[Block], infos: list[BlockInfo]) -> tuple[list[Block], list[int]]:
    """Blocks of one file sharing a key (an OTel trace id) merged into one range, and the positions of the
    merged blocks (whose load pass must be done again); a merged block keeps its first block's index."""
    span = list(range(len(blocks)))  # span[i]: the last block merged with block i
    last_seen: dict[tuple[str, str], int] = {}
    for i, (block, info) in enumerate(zip(blocks, infos)):
        for key in info.keys:
            j = last_seen.get((block.path, key))
            if j is not None:
                span[j] = max(span[j], i)
            last_seen[(block.path, key)] = i
    out: list[Block] = []
    again: list[int] = []
    i = 0
    while i < len(blocks):
        end = span[i]
        k = i
        while k <= end:  # spans overlapping this one extend it
            end = max(end, span[k])
            k += 1
        if end > i:
            first = blocks[i]
            out.append(Block(first.index, first.path, first.arm, first.root, first.format, first.start,
                             blocks[end].end, first.first_line))
            again.append(len(out) - 1)
        else:
            out.append(blocks[i])
        i = end + 1
    return out, again


# --------------------------------------------------------------------------- #
# The load pass
# --------------------------------------------------------------------------- #
def load_batched(planner: Planner, settings: Settings, runner: Any, strict: bool, engine: str,
                 load: Callable[..., Traces], load_args: dict[str, Any],
                 progress: Callable[[str, int, int], None] | None) -> BatchedTraces:
    """The load pass over the planned blocks: a :class:`BatchedTraces` (``load(**load_args)`` loads the same
    source in memory), or the load's error (``n_read`` 0: the caller says there were no records)."""
    blocks = planner.blocks
    infos = runner.map(info_block, blocks, settings)
    if any(info.keys for info in infos):
        blocks, again = merge_keyed(blocks, infos)
        if again:
            redone = dict(zip(again, runner.map(info_block, [blocks[i] for i in again], settings)))
            by_index = {b.index: info for b, info in zip(planner.blocks, infos)}
            infos = [redone.get(i, by_index.get(b.index)) for i, b in enumerate(blocks)]
    decoder = RecordDecoder(strict=strict)
    for done, (block, info) in enumerate(zip(blocks, infos), start=1):
        decoder.merge(info.part)  # cross-block duplicates; a strict load raises its earliest problem
        if progress is not None:
            progress(block.path, done, len(blocks))
    rejected = sorted(decoder.rejected, key=lambda r: r.ordinal)
    extra = _cross_duplicates(rejected, infos)
    index = _run_index(blocks, infos, extra)
    n_bool = int(index["_outcome_is_bool"].sum())
    warn_mixed(n_bool, len(index), stacklevel=4)
    return BatchedTraces(
        engine=engine, blocks=tuple(blocks), settings=settings, runner=runner, extra=extra,
        all_bool=n_bool == len(index), index=index.drop(columns=["_outcome_is_bool"]),
        rejected=_rejected_frame(rejected), n_read=decoder.n_read, sources=tuple(planner.reader.sources),
        formats=tuple(planner.reader.chosen), load=load, load_args=load_args,
    )


def _cross_duplicates(rejected: list[Rejection], infos: list[BlockInfo]) -> dict[int, list[Rejection]]:
    """The rejections no block made itself (a run id accepted in an earlier block), by block index."""
    own = {r.ordinal for info in infos for r in info.part.rejected}
    extra: dict[int, list[Rejection]] = {}
    for r in rejected:
        if r.ordinal not in own:
            extra.setdefault(r.ordinal >> _ORDINAL_BITS, []).append(r)
    return extra


def _run_index(blocks: list[Block], infos: list[BlockInfo], extra: dict[int, list[Rejection]]) -> pd.DataFrame:
    """One row per accepted run, in run order: task, arm, steps (tool calls and handoffs), true/false outcome.

    Task and arm are categoricals whose categories come in order of first appearance, as a load's."""
    parts: dict[str, list[Any]] = {"task_id": [], "arm": [], "steps": [], "_outcome_is_bool": []}
    for block, info in zip(blocks, infos):
        table = info.index
        if block.index in extra:
            table = _keep(table, pa.array([r.ordinal for r in extra[block.index]], pa.int64()))
        for column in ("task_id", "arm"):
            encoded = table[column].combine_chunks().cast(pa.string()).dictionary_encode()
            codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
            categories = pd.Index(encoded.dictionary.to_pylist(), dtype=object)
            parts[column].append(pd.Categorical.from_codes(codes, categories=categories))
        parts["steps"].append(pc.add(table["n_steps"], table["n_handoffs"]).to_numpy(zero_copy_only=False))
        parts["_outcome_is_bool"].append(table["_outcome_is_bool"].to_numpy(zero_copy_only=False))
    index = pd.DataFrame({"steps": np.concatenate(parts["steps"]).astype(np.int64),
                          "_outcome_is_bool": np.concatenate(parts["_outcome_is_bool"]).astype(bool)})
    for column in ("task_id", "arm"):
        joined = pd.api.types.union_categoricals(parts[column])
        index.insert(len(index.columns) - 2, column, pd.Categorical.from_codes(
            joined.codes, categories=pd.Index([str(c) for c in joined.categories], dtype=_TEXT)))
    return index


# --------------------------------------------------------------------------- #
# Running blocks
# --------------------------------------------------------------------------- #
class LocalRunner:
    """Runs blocks one after another in this process (the stream engine)."""

    def map(self, function: Callable[..., Any], blocks: Iterable[Block], *args: Any) -> list[Any]:
        return [function(block, *args) for block in blocks]

    def map_each(self, function: Callable[..., Any], blocks: list[Block], per_block: list[tuple[Any, ...]],
                 *args: Any) -> list[Any]:
        return [function(block, *own, *args) for block, own in zip(blocks, per_block)]

    def describe(self) -> str:
        return "this process"


# --------------------------------------------------------------------------- #
# The traces
# --------------------------------------------------------------------------- #
class BatchedTraces(Traces):
    """Traces read in batches when needed: ``load_traces(..., engine="stream" | "dask")``.

    The same interface as :class:`~agentab.Traces`. Known without reading the runs again: ``len()``,
    ``arms``, ``rejected``, ``n_read``, ``sources``, ``formats``, :meth:`task_ids` and ``repr()``.
    :meth:`map_batches` reads the blocks again (in this process, or in Dask's workers) and applies a
    function to each batch; :func:`agentab.score` scores this way. Everything else -- ``runs``,
    ``steps``, :meth:`metadata_values`, :meth:`summary`, :meth:`to_parquet`, :meth:`to_records`,
    :meth:`to_jsonl`, and the functions taking traces other than ``score`` (``summarize``, ``diagnose``,
    ``report``, ...) -- **materialises**: the source is loaded into memory on this machine once (as
    ``engine="memory"`` would: the same tables), and kept.
    """

    def __init__(self, *, engine: str, blocks: tuple[Block, ...], settings: Settings, runner: Any,
                 extra: dict[int, list[Rejection]], all_bool: bool, index: pd.DataFrame, rejected: pd.DataFrame,
                 n_read: int, sources: tuple[str, ...], formats: tuple[tuple[str, str], ...],
                 load: Callable[..., Traces], load_args: dict[str, Any]) -> None:
        for name, value in (("_engine", engine), ("_blocks", blocks), ("_settings", settings), ("_runner", runner),
                            ("_extra", extra), ("_all_bool", all_bool), ("_index", index), ("rejected", rejected),
                            ("n_read", n_read), ("sources", sources), ("formats", formats),
                            ("unmatched_outcomes", None), ("_load", load), ("_load_args", load_args),
                            ("_memory", [])):
            object.__setattr__(self, name, value)

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    @property
    def engine(self) -> str:
        """``"stream"`` or ``"dask"``: the engine the traces were loaded with."""
        return self._engine

    @property
    def n_batches(self) -> int:
        """The batches :meth:`map_batches` reads (blocks of files, or files)."""
        return len(self._blocks)

    @property
    def runs(self) -> pd.DataFrame:  # type: ignore[override]
        """The runs table: materialises (loads the source into memory on this machine, once)."""
        return self.in_memory().runs

    @property
    def steps(self) -> pd.DataFrame:  # type: ignore[override]
        """The steps table: materialises (loads the source into memory on this machine, once)."""
        return self.in_memory().steps

    @property
    def arms(self) -> list[str]:
        """Arm names in order of first appearance (from the load's index: no reading)."""
        return [str(a) for a in pd.unique(self._index["arm"].dropna())]

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        def plural(n: int, word: str) -> str:
            return f"{n:,} {word}{'' if n == 1 else 's'}"

        arms = self.arms
        arm_text = f", {plural(len(arms), 'arm')}" if arms else ""
        return (f"Traces({plural(len(self), 'run')}, {plural(int(self._index['steps'].sum()), 'step')}{arm_text}, "
                f"{len(self.rejected):,} rejected; engine={self._engine!r}, {plural(self.n_batches, 'batch')})"
                .replace("batchs", "batches"))

    def task_ids(self) -> pd.Series:
        """Every run's ``task_id`` (categorical), in run order, from the load's index (no reading)."""
        return self._index["task_id"].rename("task_id")

    def map_batches(self, function: Callable[[Traces], Any]) -> list[Any]:
        """``function`` of each batch (an in-memory :class:`~agentab.Traces` of one block), in run order.

        Every block is read again: in this process one after another (``engine="stream"``: one batch in
        memory at a time), or in Dask's workers (``engine="dask"``: ``function`` must be picklable, and
        its results are gathered here).
        """
        per_block = [(self._extra.get(b.index, []),) for b in self._blocks]
        return self._runner.map_each(batch_block, list(self._blocks), per_block, self._settings, self._all_bool,
                                     function)

    def in_memory(self) -> Traces:
        """These traces loaded into memory on this machine (``engine="memory"``), once: the same tables."""
        if not self._memory:
            self._memory.append(self._load(**self._load_args))
        return self._memory[0]

    def metadata_values(self, key: str) -> pd.Series:
        """``metadata[key]`` of every run (see :meth:`Traces.metadata_values`): materialises."""
        return self.in_memory().metadata_values(key)

    def summary(self, by: str = "arm") -> pd.DataFrame:
        """Per-arm summary table (:func:`agentab.summarize`): materialises."""
        return self.in_memory().summary(by=by)

    def to_parquet(self, path: Any) -> Path:
        """Write the store of :meth:`Traces.to_parquet`: materialises."""
        return self.in_memory().to_parquet(path)

    def to_records(self) -> list[dict[str, Any]]:
        """One trace record per run (:meth:`Traces.to_records`): materialises."""
        return self.in_memory().to_records()

    def to_jsonl(self, path: Any) -> Path:
        """Write :meth:`to_records` as JSON Lines: materialises."""
        return self.in_memory().to_jsonl(path)


def check_engine(engine: Any, batch_size: Any, scheduler: Any) -> tuple[str, int]:
    """The engine (None: "stream" when ``batch_size`` is given, else "memory") and the batch size, checked."""
    if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1):
        raise TypeError(f"`batch_size` must be a positive number of bytes or None, got {batch_size!r}")
    if engine is None:
        engine = "memory" if batch_size is None else "stream"
    if engine not in ENGINES:
        raise TypeError(f"`engine` == {engine!r}: must be one of {', '.join(map(repr, ENGINES))}")
    if engine == "memory" and batch_size is not None:
        raise TypeError("`batch_size` cuts the source into batches: give it with engine='stream' or 'dask'")
    if scheduler is not None and engine != "dask":
        raise TypeError("`scheduler` names a Dask scheduler: give it with engine='dask'")
    return engine, DEFAULT_BATCH_BYTES if batch_size is None else batch_size

