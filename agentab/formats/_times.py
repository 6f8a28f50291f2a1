"""Step times of a chunk of records to ``datetime64[ns]``: unix nanoseconds, ISO-8601 texts, epoch seconds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["iso_texts", "ns_times", "parse_times"]

_MAX_EPOCH_S = 9.2e9  # 2261-07-13, inside datetime64[ns]; milliseconds (1.7e12 today) are far beyond
_NS = 1_000_000_000


def ns_times(values: list[int | None]) -> np.ndarray:
    """Unix nanoseconds (None: missing) as ``datetime64[ns]`` (NaT where missing)."""
    return pa.array(values, pa.timestamp("ns")).to_numpy(zero_copy_only=False)


def iso_texts(values: Sequence[int | None]) -> list[str | None]:
    """Unix nanoseconds as ISO-8601 UTC text (``2026-01-01T00:00:00.200000000Z``), None kept."""
    text = pa.array(values, pa.timestamp("ns")).cast(pa.string())  # "YYYY-MM-DD HH:MM:SS.nnnnnnnnn"
    return pc.binary_join_element_wise(pc.utf8_replace_slice(text, start=10, stop=11, replacement="T"),
                                       "Z", "").to_pylist()


def parse_times(values: list[Any]) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """Parse ISO-8601 texts and epoch seconds into ``datetime64[ns]`` (UTC).

    Returns the parsed array (NaT where missing or bad) and ``(row, reason)``
    for every bad value.
    """
    n = len(values)
    out = np.full(n, np.datetime64("NaT", "ns"))
    bad: list[tuple[int, str]] = []
    try:  # the common case: one kind of value (or none) in the whole chunk
        array = pa.array(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid, OverflowError):
        array = None
    if array is not None and pa.types.is_null(array.type):
        return out, bad
    if array is not None and pa.types.is_string(array.type):
        text_rows = np.arange(n) if array.null_count == 0 else np.flatnonzero(array.is_valid().to_numpy(zero_copy_only=False))
        number_rows = np.zeros(0, dtype=np.int64)
    elif array is not None and (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        text_rows = np.zeros(0, dtype=np.int64)
        number_rows = np.arange(n) if array.null_count == 0 else np.flatnonzero(array.is_valid().to_numpy(zero_copy_only=False))
    else:
        kinds = np.fromiter((0 if v is None else 1 if type(v) is str else 2 for v in values), np.int8, n)
        text_rows = np.flatnonzero(kinds == 1)
        number_rows = np.flatnonzero(kinds == 2)
    if len(text_rows):
        texts = [values[i] for i in text_rows] if len(text_rows) < n else values
        parsed = _parse_iso(texts)
        out[text_rows] = parsed
        for j in np.flatnonzero(np.isnat(parsed)):
            bad.append((int(text_rows[j]), f"not an ISO-8601 timestamp between 1677 and 2262: {texts[j]!r}"))
    if len(number_rows):
        seconds = np.asarray([float(values[i]) for i in number_rows], dtype=np.float64)
        ok = np.abs(seconds) < _MAX_EPOCH_S
        whole = np.floor(seconds[ok])
        nanos = whole.astype(np.int64) * _NS + np.round((seconds[ok] - whole) * _NS).astype(np.int64)
        out[number_rows[ok]] = nanos.view("datetime64[ns]")
        for j in np.flatnonzero(~ok):
            bad.append((int(number_rows[j]), f"epoch seconds out of range: {values[number_rows[j]]!r} "
                        f"(must be below {_MAX_EPOCH_S:.3g}; milliseconds are not accepted)"))
    return out, bad


_ISO_SHAPE = r"^\s*[+-]?\d{4}-\d{2}-\d{2}"
_NS_UNITS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _parse_iso(texts: list[str]) -> np.ndarray:
    """ISO-8601 texts -> datetime64[ns] in UTC; NaT where unparseable or out of range.

    Arrow's parser is tried first (fast; needs an explicit offset, checks the
    nanosecond range); when it rejects any text, pandas parses the chunk
    (``format="ISO8601"``, reading texts without an offset as UTC) and the
    nanosecond range is checked here. Only texts that start with a date
    (``YYYY-MM-DD``) are accepted, so pandas' ``"now"`` and ``"today"`` are not.
    """
    array = pa.array(texts, pa.string())
    shaped = pc.fill_null(pc.match_substring_regex(array, _ISO_SHAPE), False).to_numpy(zero_copy_only=False)
    try:
        parsed = array.cast(pa.timestamp("ns", tz="UTC")).to_numpy(zero_copy_only=False).astype("datetime64[ns]")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        import pandas as pd  # only here: a loader worker process (agentab.traces._parallel) starts without pandas

        values = pd.to_datetime(pd.Series(texts, dtype=object), format="ISO8601", utc=True, errors="coerce")
        stamps = values.dt.tz_localize(None).to_numpy()
        factor = _NS_UNITS[np.datetime_data(stamps.dtype)[0]]
        ticks = stamps.view(np.int64)
        missing = np.isnat(stamps) | (np.abs(ticks) > np.iinfo(np.int64).max // factor)
        parsed = np.where(missing, np.iinfo(np.int64).min, ticks * np.where(missing, 0, factor)).view("datetime64[ns]")
    parsed[~shaped] = np.datetime64("NaT", "ns")
    return parsed
