"""Opening trace files: decompression, the byte-order mark and JSON's whitespace, shared by every reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

__all__ = ["BOM", "JSON_SPACE", "first_keys", "is_record_keys", "open_trace_file"]

BOM = b"\xef\xbb\xbf"
#: JSON's whitespace: a line of only these is blank; any other character makes it a (bad) record.
JSON_SPACE = b" \t\n\r"


def open_trace_file(path: Path):
    """Open a trace file for binary reading, decompressing ``.gz``."""
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")


def first_keys(head: bytes) -> frozenset[str] | None:
    """The top-level keys of the first JSON Lines record in ``head``, or None when that line is not whole there
    (or not a JSON object), so a format's signature is read from where it stands, not from a nested value.

    Examples
    --------
    >>> sorted(first_keys(b'{"run_id": 1, "steps": [{"args": {"traj": []}}]}\\n{"run_id": 2'))
    ['run_id', 'steps']
    >>> first_keys(b'[{"run_id": 1}]') is None, first_keys(b'{"run_id": 1, "st') is None
    (True, True)
    """
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    line, newline, _ = body.partition(b"\n")
    if not newline or not line.startswith(b"{"):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to look at: the bytes decide
        return None
    return frozenset(record) if isinstance(record, dict) else None


def is_record_keys(keys: frozenset[str]) -> bool:
    """Whether a record's top-level keys are our record's: ``run_id`` and ``steps``, and no message list."""
    return {"run_id", "steps"} <= keys and not keys & {"messages", "traj", "resourceSpans", "samples", "eval"}
