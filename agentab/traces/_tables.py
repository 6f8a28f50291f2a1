"""The tables of loaded traces: :class:`Traces` (runs, steps, rejected records), built from the decoder's
columns, written to and read from Parquet and JSON Lines.

The record format is documented in :mod:`agentab.formats.record`; :mod:`agentab.traces._load` reads
files into the columns these tables are built from.

``Traces.runs`` columns
    ``run_id``, ``task_id``, ``arm``, ``model``, ``harness`` (categorical);
    ``agents`` (canonical JSON text of the run's list of agents, missing when
    not recorded); ``seed`` (Int64); ``outcome`` (``boolean`` when every
    outcome is true/false, else float64); ``n_steps`` (tool calls: handoff
    steps are not counted), ``n_handoffs`` (handoff steps), ``n_errors``
    (tool calls whose observation status is ``"error"``; missing when no tool
    call records a status), ``tokens_in``, ``tokens_out``, ``tokens``,
    ``tokens_reasoning``, ``tokens_cached`` (the record's run-level totals
    where it gives them, else sums over steps; missing if any step's count is
    missing, except a step whose call is counted at another,
    ``metadata.tokens_with_step``; a run without steps: its
    ``metadata.tokens_in``/``tokens_out``, else missing, never 0),
    ``retries``, ``backtracks``, ``files_created``, ``files_modified``,
    ``files_deleted``, ``external_calls`` (counts of the terminal-state lists;
    missing when not recorded) as Int64; ``cost_usd``, ``user_cost_usd``
    (the user simulator's), ``latency_s`` (float64, NaN when not recorded);
    ``terminal_state``, ``metadata`` (canonical JSON text); ``source``,
    ``line`` (where the record was read).
``Traces.steps`` columns
    ``run_id`` (categorical, same categories as the runs), ``index`` (Int64),
    ``kind`` (categorical ``tool``/``handoff``), ``agent`` (categorical),
    ``tool`` (categorical), ``args`` (canonical JSON text: sorted keys, no
    whitespace, so equal arguments compare equal), ``status`` (categorical
    ``ok``/``error``), ``error`` (text), ``tokens_in``, ``tokens_out``,
    ``tokens_reasoning``, ``tokens_cached`` (Int64), ``cost_usd`` (float64),
    ``parallel`` (text: the group id), ``started_at``, ``ended_at``
    (``datetime64[ns, UTC]``), ``observation``, ``metadata`` (canonical JSON
    text).
``Traces.rejected`` columns
    ``source``, ``line``, ``run_id``, ``field``, ``reason``: one row per
    record left out (only with ``strict=False``).
"""

from __future__ import annotations

import json
import os
import secrets
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from agentab._write import atomic_file, atomic_folder, atomic_text
from agentab.errors import TraceError, TraceWarning
from agentab.formats.decode import RecordDecoder, Rejection, derived_totals

__all__ = ["Traces", "read_traces"]

PathLike = Union[str, "os.PathLike[str]"]

_RUN_CATEGORIES = ("run_id", "task_id", "arm", "model", "harness", "source")
_STEP_CATEGORIES = ("tool", "agent")
_KIND = pd.CategoricalDtype(["tool", "handoff"])
_STATUS = pd.CategoricalDtype(["ok", "error"])

#: Run-level token totals, kept by :meth:`Traces.to_records` where the steps do not give them.
_TOTALS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached")
#: The value of a column added to a store written before it existed (default: missing).
_ADDED = {"n_handoffs": 0, "kind": "tool"}


_TEXT = pd.Index(["text"]).dtype  # the default dtype of text categories in this pandas


_REJECTED_COLUMNS = ("source", "line", "run_id", "field", "reason")

#: The files of a store written by :meth:`Traces.to_parquet`, and the key of its id in their metadata.
_STORE_FILES = ("runs.parquet", "steps.parquet", "rejected.parquet", "traces.json")
_STORE_KEY = b"agentab.store"


@dataclass(frozen=True, repr=False)
class Traces:
    """Loaded agent runs: ``runs`` (one row per run) and ``steps`` (one per step).

    Attributes
    ----------
    runs, steps : pandas.DataFrame
        See the module docstring for every column.
    rejected : pandas.DataFrame
        Records left out by ``load_traces(..., strict=False)``, with
        ``source``, ``line``, ``run_id``, ``field`` and ``reason``.
    n_read : int
        Records read: always ``len(runs) + len(rejected)``.
    sources : tuple of str
        The files (or ``"<records>"``) read, in order.
    formats : tuple of (str, str)
        Each file's (or record list's) format, as given or detected by
        ``load_traces(format="auto")``.
    unmatched_outcomes : pandas.DataFrame or None
        The rows of ``load_traces(..., outcomes=)`` that matched no run
        loaded (None when no ``outcomes`` table was given). Runs that no row
        matched are in ``rejected``. Not kept by :meth:`to_parquet`.

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.load_traces([
    ...     {"run_id": "r1", "task_id": "t1", "seed": 0, "outcome": True,
    ...      "steps": [{"index": 0, "tool": "ls", "args": {"path": "."},
    ...                 "observation": {"status": "ok"}}]}])
    >>> traces
    Traces(1 run, 1 step, 0 rejected)
    >>> traces.steps.loc[0, "args"]
    '{"path":"."}'
    """

    runs: pd.DataFrame
    steps: pd.DataFrame
    rejected: pd.DataFrame
    n_read: int
    sources: tuple[str, ...] = field(default=())
    formats: tuple[tuple[str, str], ...] = field(default=())
    unmatched_outcomes: pd.DataFrame | None = field(default=None)

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        def plural(n: int, word: str) -> str:
            return f"{n:,} {word}{'' if n == 1 else 's'}"

        arms = self.arms
        arm_text = f", {plural(len(arms), 'arm')}" if arms else ""
        return (
            f"Traces({plural(len(self.runs), 'run')}, {plural(len(self.steps), 'step')}"
            f"{arm_text}, {len(self.rejected):,} rejected)"
        )

    @property
    def arms(self) -> list[str]:
        """Arm names in order of first appearance (missing arms left out)."""
        return [str(a) for a in pd.unique(self.runs["arm"].dropna())]

    @property
    def engine(self) -> str:
        """Where the runs are held: ``"memory"`` (these tables); ``"stream"`` or ``"dask"`` for the traces of
        ``load_traces(..., engine=)``, read batch by batch when needed (see ``docs/scale.md``)."""
        return "memory"

    def map_batches(self, function: Callable[[Traces], Any]) -> list[Any]:
        """``function`` applied to each batch of runs (an in-memory :class:`Traces`), the results in run order.

        Here the one batch is these traces: ``[function(self)]``. Traces of ``engine="stream"`` read and
        apply it batch by batch in this process, those of ``engine="dask"`` in the cluster's workers (the
        function must then be picklable); :func:`agentab.score` scores them this way.

        Examples
        --------
        >>> import agentab
        >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=4, n_seeds=2)
        >>> traces.map_batches(len)
        [16]
        """
        return [function(self)]

    def task_ids(self) -> pd.Series:
        """Every run's ``task_id`` (categorical), in run order: ``runs["task_id"]``, without reading the runs
        of a streamed load."""
        return self.runs["task_id"]

    def metadata_values(self, key: str) -> pd.Series:
        """``metadata[key]`` of every run, as text, indexed like ``runs`` (None where a run has no such key).

        Text stays as it is; any other value (a number, a flag, a list) becomes
        its canonical JSON text (``true``, ``3``), so equal values compare equal.

        Examples
        --------
        >>> import agentab
        >>> traces = agentab.load_traces([
        ...     {"run_id": "a", "task_id": "t", "seed": 0, "outcome": True, "steps": [],
        ...      "metadata": {"task_type": "edit", "retried": True}},
        ...     {"run_id": "b", "task_id": "t", "seed": 1, "outcome": False, "steps": []}])
        >>> traces.metadata_values("task_type").tolist(), traces.metadata_values("retried").tolist()
        (['edit', None], ['true', None])
        """
        def value(text: Any) -> Any:
            meta = json.loads(text) if isinstance(text, str) else None
            found = meta.get(key) if isinstance(meta, dict) else None
            return found if found is None or isinstance(found, str) else json.dumps(found, sort_keys=True)

        return pd.Series([value(text) for text in self.runs["metadata"]], index=self.runs.index, dtype=object)

    def summary(self, by: str = "arm") -> pd.DataFrame:
        """Per-arm summary table; see :func:`agentab.summarize`."""
        from agentab.traces.summary import summarize

        return summarize(self, by=by)

    # -- persistence ---------------------------------------------------------- #
    def to_parquet(self, path: PathLike) -> Path:
        """Write ``runs.parquet``, ``steps.parquet``, ``rejected.parquet`` into ``path``.

        Dtypes (categoricals, nullable ints, timestamps) survive the round
        trip through :func:`read_traces`. The write is atomic: a new or empty
        folder (or one holding only an earlier store) is built as a temporary
        sibling and swapped into place, so a process killed at any moment
        leaves the earlier store or the new one. In a folder holding other
        files too (or a symlink to a folder), each file is replaced atomically and all four carry one
        store id, so :func:`read_traces` refuses a mixture of two writes.
        """
        out = Path(path)
        token = secrets.token_hex(8)
        if out.is_dir() and (out.is_symlink() or not set(os.listdir(out)) <= set(_STORE_FILES)):
            self._write_store(out, token, in_place=True)
            return out
        with atomic_folder(out) as temp:
            self._write_store(temp, token, in_place=False)
        return out

    def _write_store(self, folder: Path, token: str, *, in_place: bool) -> None:
        for name, frame in (("runs", self.runs), ("steps", self.steps), ("rejected", self.rejected)):
            table = pa.Table.from_pandas(frame, preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), _STORE_KEY: token.encode()})
            if in_place:
                with atomic_file(folder / f"{name}.parquet") as handle:
                    pq.write_table(table, handle)
            else:
                pq.write_table(table, folder / f"{name}.parquet")
        info = json.dumps({"n_read": self.n_read, "sources": list(self.sources), "store": token})
        if in_place:
            atomic_text(folder / "traces.json", info)
        else:
            (folder / "traces.json").write_text(info, encoding="utf-8")

    def to_records(self) -> list[dict[str, Any]]:
        """Rebuild one trace record (dict) per run, in the documented format.

        Ids come back as text and timestamps as ISO-8601 text in UTC; every
        other value comes back as it was loaded.
        """
        by_run: dict[str, list[dict[str, Any]]] = {}
        grown_steps = "kind" in self.steps.columns
        for row in self.steps.itertuples(index=False):
            by_run.setdefault(row.run_id, []).append(_step_record(row, grown_steps))
        grown = "agents" in self.runs.columns
        return [_run_record(row, by_run.get(row.run_id, []), grown) for row in self.runs.itertuples(index=False)]

    def to_jsonl(self, path: PathLike) -> Path:
        """Write :meth:`to_records` as JSON Lines (one run per line)."""
        out = Path(path)
        with atomic_file(out, "wb") as fh:  # a temporary sibling renamed into place: old or new, whole
            for record in self.to_records():
                fh.write(msgspec.json.encode(record) + b"\n")
        return out


def _copy_present(rec: dict[str, Any], row: Any, names: tuple[str, ...], convert: Any) -> None:
    """Set ``rec[name] = convert(row.name)`` for each name whose value is not missing."""
    for name in names:
        value = getattr(row, name)
        if not pd.isna(value):
            rec[name] = convert(value)


def _step_record(row: Any, grown: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {"index": int(row.index), "tool": row.tool, "args": json.loads(row.args)}
    _copy_present(rec, row, ("observation",), json.loads)
    _copy_present(rec, row, ("tokens_in", "tokens_out"), int)
    _copy_present(rec, row, ("started_at", "ended_at"), lambda t: t.isoformat())
    _copy_present(rec, row, ("metadata",), json.loads)
    if grown:  # the fields a store written before them lacks
        if row.kind == "handoff":
            rec["kind"] = "handoff"
        _copy_present(rec, row, ("agent", "parallel"), str)
        _copy_present(rec, row, ("tokens_reasoning", "tokens_cached"), int)
        _copy_present(rec, row, ("cost_usd",), float)
    return rec


def _run_record(row: Any, steps: list[dict[str, Any]], grown: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {"run_id": row.run_id, "task_id": row.task_id, "seed": int(row.seed)}
    _copy_present(rec, row, ("arm",), str)
    rec["steps"] = steps
    _copy_present(rec, row, ("terminal_state",), json.loads)
    _copy_present(rec, row, ("retries", "backtracks"), int)
    outcome = row.outcome
    rec["outcome"] = bool(outcome) if isinstance(outcome, (bool, np.bool_)) else float(outcome)
    _copy_present(rec, row, ("cost_usd", "latency_s"), float)
    _copy_present(rec, row, ("metadata",), json.loads)
    if grown:
        _copy_present(rec, row, ("agents",), json.loads)
        _copy_present(rec, row, ("user_cost_usd",), float)
        # a run-level total is kept where the steps would not give it back (it counts calls without a tool)
        derived = derived_totals(steps, rec.get("metadata"))
        for name, known in zip(_TOTALS, derived):
            value = getattr(row, name)
            if not pd.isna(value) and value != known:
                rec[name] = int(value)
    return rec


def _types_mapper(kind: pa.DataType) -> Any:
    if pa.types.is_integer(kind):
        return pd.Int64Dtype()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pd.StringDtype("pyarrow")
    if pa.types.is_boolean(kind):
        return pd.BooleanDtype()
    return None


def _keep(table: pa.Table, drop: pa.Array) -> pa.Table:
    if len(drop) == 0:
        return table
    return table.filter(pc.invert(pc.is_in(table["_ordinal"], value_set=drop)))


def _frames(runs_table: pa.Table, steps_table: pa.Table, rejected: list[Rejection],
            all_bool: bool | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs and steps frames of the decoder's tables, the ``rejected`` runs left out.

    ``all_bool``: whether every outcome of the whole load is true/false (a batch of a streamed load is told,
    and warns of nothing); None: decided from these runs, with the warning of a mixture.
    """
    drop = pa.array([r.ordinal for r in rejected], pa.int64())
    runs_table = _keep(runs_table, drop)
    steps_table = _keep(steps_table, drop)

    if all_bool is None:
        n_bool = pc.sum(runs_table["_outcome_is_bool"]).as_py() or 0
        all_bool = n_bool == runs_table.num_rows
        warn_mixed(n_bool, runs_table.num_rows, stacklevel=4)
    run_ordinals = runs_table["_ordinal"].to_numpy()
    step_ordinals = steps_table["_ordinal"].to_numpy()
    columns = {}
    for name in runs_table.column_names:
        if name.startswith("_"):
            continue
        column = runs_table[name]
        if name in _RUN_CATEGORIES:
            column = column.combine_chunks().dictionary_encode()
        elif name == "outcome" and all_bool:
            column = pc.not_equal(column, 0.0)
        columns[name] = column
    runs = pa.table(columns).to_pandas(types_mapper=_types_mapper, split_blocks=True, self_destruct=True)
    runs["seed"] = runs["seed"].astype("Int64")

    step_columns = {}
    for name in steps_table.column_names:
        if name.startswith("_"):
            continue
        column = steps_table[name]
        if name in ("tool", "status", "agent"):
            column = column.combine_chunks().dictionary_encode()
        step_columns[name] = column
    steps = pa.table(step_columns).to_pandas(types_mapper=_types_mapper, split_blocks=True, self_destruct=True)
    _text_categories(runs, _RUN_CATEGORIES)
    _text_categories(steps, _STEP_CATEGORIES)
    run_codes = runs["run_id"].cat.codes.to_numpy()
    position = np.searchsorted(run_ordinals, step_ordinals)
    steps.insert(0, "run_id", pd.Categorical.from_codes(run_codes[position], dtype=runs["run_id"].dtype))
    steps["status"] = steps["status"].astype(_STATUS)
    steps["kind"] = steps["kind"].astype(_KIND)
    return runs, steps


def warn_mixed(n_bool: int, n_runs: int, stacklevel: int) -> None:
    """The warning of outcomes mixing true/false with numbers (the true/false are read as 1.0/0.0)."""
    if 0 < n_bool < n_runs:
        warnings.warn(f"outcome mixes true/false ({n_bool} runs) with numbers ({n_runs - n_bool} runs); "
                      "true/false are read as 1.0/0.0", TraceWarning, stacklevel=stacklevel)


def _text_categories(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    """Make ``columns`` categoricals whose categories have this pandas' default text dtype.

    Arrow gives an empty or all-missing column object-dtype categories and
    parquet can hand back other text dtypes; one rule keeps ``DataFrame.equals``
    true across load, save and read.
    """
    for column in columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            categories = values.cat.categories
            if categories.dtype == _TEXT:
                continue
            codes = values.cat.codes.to_numpy()
        else:
            codes, categories = pd.factorize(values, sort=True)
        frame[column] = pd.Categorical.from_codes(codes, categories=pd.Index(list(categories), dtype=_TEXT))


def _rejected_frame(rejected: list[Rejection]) -> pd.DataFrame:
    frame = pd.DataFrame(
        [(r.source, r.line, r.run_id, r.field, r.reason) for r in rejected], columns=list(_REJECTED_COLUMNS)
    )
    return frame.astype({"source": pd.StringDtype("pyarrow"), "line": "Int64", "run_id": pd.StringDtype("pyarrow"),
                         "field": pd.StringDtype("pyarrow"), "reason": pd.StringDtype("pyarrow")})


def _arrow_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Older pandas read text columns back with Python storage: restore Arrow storage."""
    text = [c for c in frame.columns if isinstance(frame[c].dtype, pd.StringDtype)]
    return frame.astype({c: pd.StringDtype("pyarrow") for c in text}) if text else frame


def _store_info(folder: Path) -> dict[str, Any]:
    """``traces.json``, checked: one store id in every file."""
    info_path = folder / "traces.json"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
    except (OSError, ValueError) as err:
        raise TraceError(f"traces.json cannot be read: {err}", source=str(folder)) from None
    if not isinstance(info, dict):
        raise TraceError("traces.json is not an object", source=str(folder))
    token = info.get("store")
    if token is not None:
        for name in ("runs", "steps", "rejected"):
            try:
                found = (pq.read_schema(folder / f"{name}.parquet").metadata or {}).get(_STORE_KEY)
            except (OSError, pa.ArrowException) as err:
                raise TraceError(f"{name}.parquet cannot be read: {err}", source=str(folder)) from None
            if found != str(token).encode():
                raise TraceError(f"{name}.parquet belongs to another write than traces.json "
                                 "(an interrupted Traces.to_parquet?): write the store again", source=str(folder))
    return info


def _n_read(folder: Path, info: dict[str, Any], n_rows: int) -> int:
    """``n_read`` of ``traces.json``, which must be the rows read (runs and rejections)."""
    n_read = info.get("n_read", n_rows)
    if not isinstance(n_read, int) or n_read != n_rows:
        raise TraceError(f"traces.json says n_read {n_read!r} but the store holds {n_rows:,} runs and rejections "
                         "(an interrupted Traces.to_parquet?): write the store again", source=str(folder))
    return n_read


def _added_columns(runs: pd.DataFrame, steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A store written before some columns existed, given them (missing values, or :data:`_ADDED`'s) in the
    order of a fresh load; any other columns follow."""
    template = _frames(*RecordDecoder(strict=False).finish()[:2], [])
    out = []
    for frame, empty in zip((runs, steps), template):
        lacking = [name for name in empty.columns if name not in frame.columns]
        if not lacking:
            out.append(frame)
            continue
        frame = frame.copy()
        for name in lacking:
            dtype = empty[name].dtype
            if isinstance(dtype, pd.CategoricalDtype) and name not in _ADDED:
                dtype = np.dtype(object)  # made a text categorical by the caller
            frame[name] = pd.Series([_ADDED.get(name)] * len(frame), index=frame.index, dtype=object).astype(dtype)
        order = [name for name in empty.columns if name in frame.columns]
        out.append(frame[order + [name for name in frame.columns if name not in order]])
    return out[0], out[1]


def read_traces(path: PathLike) -> Traces:
    """Read traces written by :meth:`Traces.to_parquet`.

    Examples
    --------
    >>> import tempfile, agentab
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=4, n_seeds=2)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     back = agentab.read_traces(traces.to_parquet(tmp))
    >>> back.runs.equals(traces.runs) and back.steps.equals(traces.steps)
    True
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such directory (expected one written by Traces.to_parquet)")
    missing = [n for n in ("runs.parquet", "steps.parquet", "rejected.parquet") if not (folder / n).exists()]
    if missing:
        raise TraceError(f"not a traces folder: missing {', '.join(missing)}", source=str(folder))
    info = _store_info(folder)
    runs, steps, rejected = (_arrow_strings(pd.read_parquet(folder / f"{name}.parquet"))
                             for name in ("runs", "steps", "rejected"))
    runs, steps = _added_columns(runs, steps)
    _text_categories(runs, _RUN_CATEGORIES)  # parquet drops categoricals from a table without rows
    _text_categories(steps, _STEP_CATEGORIES)
    steps["run_id"] = steps["run_id"].astype(runs["run_id"].dtype)
    steps["status"] = steps["status"].astype(_STATUS)
    steps["kind"] = steps["kind"].astype(_KIND)
    return Traces(runs=runs, steps=steps, rejected=rejected,
                  n_read=_n_read(folder, info, len(runs) + len(rejected)),
                  sources=tuple(info.get("sources", ())))
