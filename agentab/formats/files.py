"""Opening trace files: decompression, the byte-order mark and JSON's whitespace, shared by every reader."""

from __future__ import annotations

import gzip
from pathlib import Path

__all__ = ["BOM", "JSON_SPACE", "open_trace_file"]

BOM = b"\xef\xbb\xbf"
#: JSON's whitespace: a line of only these is blank; any other character makes it a (bad) record.
JSON_SPACE = b" \t\n\r"


def open_trace_file(path: Path):
    """Open a trace file for binary reading, decompressing ``.gz``."""
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")
