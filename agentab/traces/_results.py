"""Per-run results tables: one row per run (task, arm columns, outcome, cost, ...), read as a DataFrame.

The most common shape of published benchmark data is not a trace but a results table: the Terminal-Bench
trials CSV, the SWE-bench leaderboard's per-instance table, METR's runs file. :func:`load_results` reads
them (CSV, TSV, Parquet, JSON Lines of flat records, or a DataFrame), renames columns to agentab's names
(``fields=``), filters rows (``where=``), and reads True/False columns with blanks as nullable booleans
whose missing values are counted, never read as False or 0.

What is a table and what is a trace (:func:`is_results_table`): a ``.csv``, ``.tsv`` or ``.parquet``
file is a table; a ``.jsonl``/``.ndjson`` file is a table when its first record is a JSON object whose
values are all scalars (no lists, no objects, so no ``steps`` or ``messages``) and no trace format
recognises it. Everything else is left to :func:`agentab.load_traces`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentab.errors import TraceError, TraceWarning

__all__ = ["OUTCOME_CANDIDATES", "TABLE_SUFFIXES", "column_hint", "is_results_table", "load_results"]

#: File endings that are always results tables.
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")
#: File endings that are results tables when their records are flat (else traces).
_JSONL_SUFFIXES = (".jsonl", ".ndjson")
#: Columns offered as the ``outcome`` when a table has none, in this order.
OUTCOME_CANDIDATES = ("resolved", "is_resolved", "success", "passed", "reward", "score")
_TRUE = {"true", "1", "1.0"}
_FALSE = {"false", "0", "0.0"}
_SHOWN = 30  # columns listed in an error before "..."


def is_results_table(path: str | Path) -> bool:
    """Whether ``path`` is a per-run results table rather than a trace file.

    A ``.csv``, ``.tsv`` or ``.parquet`` file always is; a ``.jsonl`` or ``.ndjson`` file is when its
    first record is a JSON object of scalar values only and no trace format recognises it. Folders and
    other files are not.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> flat = folder / "runs.jsonl"
    >>> _ = flat.write_text(json.dumps({"run_id": "r1", "task_id": "t1", "score": 0.5}) + "\\n")
    >>> trace = folder / "trace.jsonl"
    >>> _ = trace.write_text(json.dumps({"run_id": "r1", "task_id": "t1", "seed": 0, "steps": []}) + "\\n")
    >>> is_results_table(flat), is_results_table(trace), is_results_table(folder / "x.csv")
    (True, False, True)
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith(TABLE_SUFFIXES):
        return True
    if not name.endswith(_JSONL_SUFFIXES) or not path.is_file():
        return False
    from agentab.formats import detect

    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
    except OSError:
        return False
    first = next((line for line in head.splitlines() if line.strip()), b"")
    try:
        record = json.loads(first)
    except ValueError:
        return False
    if not isinstance(record, dict) or not record or not all(_scalar(v) for v in record.values()):
        return False
    return detect(head, path.name) is None


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _columns(columns: Any) -> str:
    """The columns, listed (the first few of a wide table)."""
    names = [str(c) for c in columns]
    shown = ", ".join(names[:_SHOWN])
    return shown + (f", ... ({len(names)} columns)" if len(names) > _SHOWN else "")


def column_hint(table: pd.DataFrame, name: str, *, cli: bool = False) -> str:
    """Why ``name`` is needed and absent: the candidate columns, the columns and the fix, in one sentence.

    For ``outcome``, the candidates are the columns named as in :data:`OUTCOME_CANDIDATES` (``resolved``,
    ``is_resolved``, ``success``, ``passed``, ``reward``, ``score``) or starting with one of them and ``_``
    (``score_binarized``), each with its kind.

    Parameters
    ----------
    table : pandas.DataFrame
        The results table (after :func:`load_results`).
    name : str
        The agentab name that has no column, e.g. ``"outcome"`` or ``"task_id"``.
    cli : bool, default False
        Word the fix as the command line's flag (``--field outcome=COL``) instead of Python's
        ``fields={"outcome": "COL"}``.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"instance_id": ["a"], "resolved": [True], "cost": [0.1]})
    >>> column_hint(table, "outcome", cli=True)
    "no column 'outcome'; candidates: resolved (binary); map one with --field outcome=COL (columns: instance_id, resolved, cost)"
    """
    names = OUTCOME_CANDIDATES if name == "outcome" else ()
    columns = [str(c) for c in table.columns]
    offered = [c for n in names for c in columns if c == n or c.startswith(f"{n}_")]  # score, score_binarized, ...
    found = [f"{c} ({_kind_word(table[c])})" for c in dict.fromkeys(offered)]
    fix = f"--field {name}=COL" if cli else f'fields={{"{name}": COL}}'
    offered = f"candidates: {', '.join(found)}; " if found else ""
    return f"no column {name!r}; {offered}map one with {fix} (columns: {_columns(table.columns)})"


def _kind_word(column: pd.Series) -> str:
    if isinstance(column.dtype, pd.BooleanDtype) or column.dtype == bool:
        return "binary"
    return "numeric" if pd.api.types.is_numeric_dtype(column) else "text"


def load_results(
    source: Any,
    *,
    fields: Mapping[str, str] | None = None,
    where: str | Sequence[str] | None = None,
    strict: bool = True,
) -> pd.DataFrame:
    """Read a per-run results table: one row per run, columns such as task, arm, outcome, cost.

    Parameters
    ----------
    source : str, pathlib.Path, pandas.DataFrame, or a sequence of them
        A ``.csv``, ``.tsv``, ``.parquet`` or ``.jsonl``/``.ndjson`` file of flat records (one JSON object of
        scalar values per line), or a DataFrame (copied, never changed). Several sources are stacked.
    fields : mapping of str to str, optional
        agentab's names for columns of the table, ``{name: column}``, e.g. ``{"task_id": "instance_id",
        "outcome": "is_resolved"}`` (the command line's ``--field NAME=KEY``). Each named column is copied
        under the name (the original stays, so ``where`` can use either).
    where : str or sequence of str, optional
        Row filters in :meth:`pandas.DataFrame.query` syntax, applied in order after ``fields``, e.g.
        ``"agent == 'Droid'"`` (the command line's ``--where``). A name with spaces goes in backticks.
    strict : bool, default True
        Stop at the first bad line of a JSON Lines file (or CSV row); with False, skip it with a warning
        that counts the skipped lines.

    Returns
    -------
    pandas.DataFrame
        One row per run. Columns of True/False (``True``/``False``, ``true``/``false``, or numbers 0 and 1
        with blanks; not text "0"/"1" alone, nor a numeric column of one value) are nullable booleans (``boolean``) whose blanks are missing (``pd.NA``), never False. ``attrs``
        records ``"missing"`` ({column: blank count} of the booleans and the ``fields`` columns, a mapped
        column under its agentab name),
        ``"where"`` ([(expression, rows before, rows after)]) and ``"source"``.

    Raises
    ------
    TraceError
        A file that cannot be read, a ``fields`` column the table lacks, a ``where`` expression that
        cannot be evaluated (the message names it and lists the columns), no rows left.

    Warns
    -----
    TraceWarning
        Missing values in a boolean or ``fields`` column (counted: they are left out of rates, not read as
        0), and lines skipped with ``strict=False``.

    See Also
    --------
    is_results_table : whether a file is a results table or a trace file.
    agentab.load_traces : trace files (runs with their steps).

    Examples
    --------
    >>> import pandas as pd
    >>> import agentab
    >>> runs = pd.DataFrame({
    ...     "instance_id": ["a", "a", "b", "b"], "agent": ["X", "Y", "X", "Y"],
    ...     "is_resolved": ["True", "False", None, "True"], "cost": [0.1, 0.2, 0.3, 0.4]})
    >>> table = agentab.load_results(runs, fields={"task_id": "instance_id", "outcome": "is_resolved"},
    ...                              where="cost < 0.35")
    >>> table[["task_id", "agent", "outcome"]]
      task_id agent  outcome
    0       a     X     True
    1       a     Y    False
    2       b     X     <NA>
    >>> table.attrs["missing"]  # the outcome's blank, counted under its agentab name
    {'outcome': 1}
    """
    sources = [source] if isinstance(source, (str, Path, pd.DataFrame)) else list(source)
    if not sources:
        raise TraceError("no results table given")
    frames = [_read(item, strict=strict) for item in sources]
    label = ", ".join(_label(item) for item in sources)
    table = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    if table.columns.duplicated().any():
        repeated = sorted({str(c) for c in table.columns[table.columns.duplicated()]})
        raise TraceError(f"repeated column names: {', '.join(repeated)}", source=label)
    if table.empty:
        raise TraceError("the table has no rows", source=label)
    table = table.apply(_binary)
    table = _map_fields(table, fields, label)
    table, kept = _filter(table, [where] if isinstance(where, str) else list(where or ()), label)
    missing = _missing(table, fields)
    table.attrs.update(missing=missing, where=kept, source=label)
    if missing:
        counts = ", ".join(f"{col} {n:,}" for col, n in missing.items())
        warnings.warn(f"{label}: blank values of {len(table):,} rows, kept as missing (never 0 or False): {counts}",
                      TraceWarning, stacklevel=2)
    return table


def _label(item: Any) -> str:
    return "<DataFrame>" if isinstance(item, pd.DataFrame) else str(item)


def _read(item: Any, *, strict: bool) -> pd.DataFrame:
    """One source as a DataFrame (a copy of a DataFrame)."""
    if isinstance(item, pd.DataFrame):
        return item.copy()
    if not isinstance(item, (str, Path)):
        raise TypeError(f"`source` must be a path or a DataFrame, got {type(item).__name__}")
    path = Path(item)
    if not path.is_file():
        raise TraceError("no such file" if not path.exists() else "not a file", source=str(path))
    name = path.name.lower()
    try:
        if name.endswith(_JSONL_SUFFIXES):
            return _read_jsonl(path, strict=strict)
        if name.endswith(".parquet"):
            _check_parquet_size(path)
            return pd.read_parquet(path)
        if name.endswith((".csv", ".tsv")):
            return pd.read_csv(path, sep="\t" if name.endswith(".tsv") else ",",
                               on_bad_lines="error" if strict else "warn")
    except TraceError:
        raise
    except (ValueError, OSError, ImportError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TraceError(f"cannot read the table: {first}", source=str(path)) from err
    raise TraceError("not a results table: expected .csv, .tsv, .parquet, .jsonl or .ndjson", source=str(path))


def _check_parquet_size(path: Path) -> None:
    """Refuse, unread, a Parquet file whose column chunks declare more inflated bytes than the limits of
    :mod:`agentab.formats.files` allow for its size on disk (a decompression bomb)."""
    import pyarrow.parquet as pq

    from agentab.formats.files import InflateLimit, inflate_cap

    meta = pq.ParquetFile(path).metadata
    inflated = sum(meta.row_group(i).column(j).total_uncompressed_size
                   for i in range(meta.num_row_groups) for j in range(meta.num_columns))
    cap, why = inflate_cap(path.stat().st_size)
    if inflated > cap:
        raise InflateLimit(why, source=str(path))


def _read_jsonl(path: Path, *, strict: bool) -> pd.DataFrame:
    """JSON Lines of flat records; a nested value or bad line stops it (strict) or is skipped and counted."""
    records, skipped = [], []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            field = None
            try:
                record = json.loads(line)
                problem = None if isinstance(record, dict) else f"expected a JSON object, got {type(record).__name__}"
            except ValueError as err:
                record, problem = None, f"malformed JSON: {err}"
            if problem is None:
                nested = [k for k, v in record.items() if not _scalar(v)]
                if nested:
                    field, problem = str(nested[0]), ("a results table's records are flat (scalar values); runs "
                                                      "with steps are traces (agentab.load_traces)")
            if problem is not None:
                if strict:
                    raise TraceError(problem, source=str(path), line=number, field=field)
                skipped.append(number)
                continue
            records.append(record)
    if skipped:
        warnings.warn(f"{path}: {len(skipped):,} bad lines skipped (e.g. line {skipped[0]})", TraceWarning,
                      stacklevel=4)
    return pd.DataFrame.from_records(records)


def _binary(column: pd.Series) -> pd.Series:
    """A True/False column (also "true"/"false", 0/1 with blanks) as nullable booleans; others unchanged."""
    if column.dtype == bool:
        return column.astype("boolean")
    if isinstance(column.dtype, pd.BooleanDtype):
        return column
    values = column.dropna()
    if values.empty:
        return column
    if pd.api.types.is_numeric_dtype(column):
        if not column.isna().any() or not values.isin([0, 1]).all() or values.nunique() < 2:
            return column  # 0/1 without blanks (or all 0: a count) stays numeric; compare asks for its kind
        return column.astype("boolean")
    if column.dtype != object and not pd.api.types.is_string_dtype(column):
        return column
    words = values.map(lambda v: str(v).strip().lower())
    words = words[words != ""]  # an empty cell is a blank
    if words.empty or not words.isin(_TRUE | _FALSE).all() or not words.isin({"true", "false"}).any():
        return column  # text of 0/1 alone is read as text: ids can look like that
    flags = column.map(lambda v: pd.NA if _blank(v) else str(v).strip().lower() in _TRUE)
    return flags.astype("boolean")


def _blank(value: Any) -> bool:
    return (value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
            or (isinstance(value, str) and not value.strip()))


def _map_fields(table: pd.DataFrame, fields: Mapping[str, str] | None, label: str) -> pd.DataFrame:
    """Each ``fields`` column copied under its agentab name."""
    if fields is None:
        return table
    if not isinstance(fields, Mapping):
        raise TypeError(f"`fields` must be a mapping of agentab names to columns, got {type(fields).__name__}")
    copies = {}
    for name, key in fields.items():
        if not isinstance(name, str) or not isinstance(key, str):
            raise TypeError(f"`fields` maps names to column names (text), got {name!r}: {key!r}")
        if key not in table.columns:
            raise TraceError(f"field {name}: no column {key!r} (columns: {_columns(table.columns)})", source=label)
        copies[name] = table[key]
    return table.assign(**copies)


def _filter(table: pd.DataFrame, expressions: list[str], label: str) -> tuple[pd.DataFrame, list[tuple[str, int, int]]]:
    """The rows each expression keeps, in order; an expression that fails is a one-line error naming it."""
    kept = []
    for expression in expressions:
        if not isinstance(expression, str) or not expression.strip():
            raise TraceError(f"where: expected a pandas query expression (text), got {expression!r}", source=label)
        before = len(table)
        try:
            mask = table.eval(expression, engine="python")
        except Exception as err:  # pandas raises NameError, SyntaxError, TypeError, KeyError, ValueError...
            reason = " ".join(str(err).split()) or type(err).__name__
            raise TraceError(f"where {expression!r}: {reason} (columns: {_columns(table.columns)}; "
                             "a name with spaces goes in `backticks`, text in quotes)", source=label) from None
        if not isinstance(mask, pd.Series) or not (mask.dtype == bool or isinstance(mask.dtype, pd.BooleanDtype)):
            raise TraceError(f"where {expression!r}: not a condition (true or false for each row), e.g. "
                             "\"agent == 'Droid'\"", source=label)
        table = table.loc[mask.fillna(False).astype(bool)]
        if table.empty:
            raise TraceError(f"where {expression!r}: no rows left (of {before:,})", source=label)
        kept.append((expression, before, len(table)))
    return table.reset_index(drop=True), kept


def _missing(table: pd.DataFrame, fields: Mapping[str, str] | None) -> dict[str, int]:
    """Blank counts of the boolean columns and the mapped fields that have blanks."""
    mapped = dict(fields or {})
    watched = [c for c in table.columns if isinstance(table[c].dtype, pd.BooleanDtype) and c not in mapped.values()]
    watched += [name for name in mapped if name not in watched]
    counts = {str(c): int(table[c].isna().sum()) for c in watched}
    return {c: n for c, n in counts.items() if n}
