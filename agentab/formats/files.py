"""Opening trace files: decompression, the byte-order mark and JSON's whitespace, shared by every reader.

Decompression is bounded: a gzip file (``.gz``) or an archive member (an Inspect ``.eval`` zip) is inflated as a
stream, and reading stops with :class:`InflateLimit` (a :class:`~agentab.errors.TraceError` naming the file and
the limit) once it has given more than :data:`MAX_INFLATED_BYTES`, or more than :data:`MAX_INFLATION_RATIO`
times its compressed size (past the first :data:`RATIO_FREE_BYTES`). Both are module constants a user may set
(``agentab.formats.files.MAX_INFLATED_BYTES = 16 * 2**30``); they are read at each opening. The members of
one archive share one more budget (:class:`Budget`): together they may inflate to no more than one file of the
archive's size on disk, so neither thousands of small members nor members whose compressed data overlap (each
honest alone) escape the ratio. A member is read only through :mod:`zipfile`, by name: its name is never a path
on disk; :func:`printable` makes it (and errors quoting it) safe to show.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zipfile
from itertools import repeat
from pathlib import Path
from typing import Any

import msgspec

from agentab.errors import TraceError

__all__ = ["BOM", "JSON_SPACE", "Budget", "InflateLimit", "MAX_INFLATED_BYTES", "MAX_INFLATION_RATIO",
           "RATIO_FREE_BYTES", "decode_json", "first_keys", "inflate_cap", "is_record_keys", "object_lines", "open_trace_file",
           "printable", "read_member", "read_trace_bytes"]

#: Most bytes one compressed file or archive member may inflate to (4 GiB).
MAX_INFLATED_BYTES = 4 * 2**30
#: Most inflated bytes per compressed byte (a gzip of JSON text rarely passes 20; a decompression bomb 1,000).
MAX_INFLATION_RATIO = 200
#: Inflated bytes always allowed whatever the ratio (a tiny, very repetitive file is no bomb).
RATIO_FREE_BYTES = 2**20


class InflateLimit(TraceError):
    """A compressed file or archive member inflates past :data:`MAX_INFLATED_BYTES` or :data:`MAX_INFLATION_RATIO`."""


def inflate_cap(compressed: int) -> tuple[int, str]:
    """The most bytes ``compressed`` bytes may inflate to, and the limit that sets it, in words."""
    by_ratio = max(RATIO_FREE_BYTES, MAX_INFLATION_RATIO * compressed)
    if by_ratio < MAX_INFLATED_BYTES:
        return by_ratio, (f"inflates to more than {MAX_INFLATION_RATIO} times its compressed size of {compressed:,} "
                          "bytes (the limit agentab.formats.files.MAX_INFLATION_RATIO)")
    return MAX_INFLATED_BYTES, (f"inflates to more than {MAX_INFLATED_BYTES:,} bytes "
                                "(the limit agentab.formats.files.MAX_INFLATED_BYTES)")


class _Bounded(io.RawIOBase):
    """A raw stream over a decompressing file object that stops past ``cap`` inflated bytes."""

    def __init__(self, inner, outer, cap: int, why: str, name: str) -> None:
        self._inner, self._outer, self._cap, self._why, self._name = inner, outer, cap, why, name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._inner.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def tell(self) -> int:
        return self._inner.tell()

    def readinto(self, buffer) -> int:
        n = self._inner.readinto(buffer)
        if self._inner.tell() > self._cap:
            raise InflateLimit(self._why, source=self._name)
        return n

    def close(self) -> None:
        try:
            self._inner.close()
            self._outer.close()
        finally:
            super().close()

BOM = b"\xef\xbb\xbf"
#: JSON's whitespace: a line of only these is blank; any other character makes it a (bad) record.
JSON_SPACE = b" \t\n\r"


def open_trace_file(path: Path):
    """Open a trace file for binary reading, decompressing ``.gz`` (bounded: :class:`InflateLimit`)."""
    if not path.name.lower().endswith(".gz"):
        return path.open("rb")
    raw = path.open("rb")
    try:
        cap, why = inflate_cap(os.fstat(raw.fileno()).st_size)
        return io.BufferedReader(_Bounded(gzip.GzipFile(fileobj=raw, mode="rb"), raw, cap, why, str(path)), 2**20)
    except BaseException:
        raw.close()
        raise


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_trace_bytes(path: Path) -> bytes:
    """A trace file's bytes, whole: a plain file read by its descriptor (one system call for its bytes), a ``.gz``
    one inflated (bounded, as :func:`open_trace_file`)."""
    if not path.name.lower().endswith(".gz"):  # a file descriptor, no file object: 12 us a file, not 14
        fd = os.open(path, _READ_FLAGS)
        try:
            size = os.fstat(fd).st_size
            data = os.read(fd, size + 1)  # one read for the whole file, a byte more to see it grew
            if len(data) == size:
                return data
            parts = [data]
            while more := os.read(fd, 2**20):
                parts.append(more)
            return b"".join(parts)
        finally:
            os.close(fd)
    with open_trace_file(path) as fh:
        return fh.read()


class Budget:
    """The inflated bytes the members of one archive have left, together: :func:`inflate_cap` of the archive's
    size on disk (``compressed``), spent by each :func:`read_member` given it.

    Examples
    --------
    >>> budget = Budget(1_000)  # 200 times 1,000 bytes is less than the free first MiB
    >>> budget.left == RATIO_FREE_BYTES, "members together" in budget.why
    (True, True)
    """

    def __init__(self, compressed: int) -> None:
        self.left, why = inflate_cap(compressed)
        self.why = "the archive's members together " + why.replace("inflates", "inflate", 1).replace(
            "its compressed size", "the archive's size")


def read_member(archive: zipfile.ZipFile, member: str, name: str, budget: Budget | None = None) -> bytearray:
    """The inflated bytes of an archive member, streamed and bounded (:class:`InflateLimit`).

    ``name``: how errors name the member (``"log.eval:samples/1_epoch_1.json"``). ``budget``: the archive's
    (:class:`Budget`), lowered by what this member inflated to, also when it stops. :mod:`zipfile` gives no
    more than the member's declared size (a member longer than it says fails its CRC check). An encrypted
    member or an unsupported compression method raises ``RuntimeError`` / ``NotImplementedError``.
    """
    info = archive.getinfo(member)
    cap, why = inflate_cap(info.compress_size)
    if budget is not None and budget.left < cap:
        cap, why = budget.left, budget.why
    if info.file_size > cap:  # the declared size already says no (a lying one is caught while reading)
        raise InflateLimit(why, source=name)
    data = bytearray()  # grown in place and returned as it is: the member is in memory once, not twice
    try:
        with archive.open(info) as fh:
            while chunk := fh.read(2**20):
                if len(data) + len(chunk) > cap:
                    raise InflateLimit(why, source=name)
                data += chunk
    finally:
        if budget is not None:
            budget.left -= min(len(data), budget.left)
    return data


def printable(text: str) -> str:
    r"""``text`` with every character Python cannot print (control characters, NUL, newlines, terminal escapes,
    bidirectional overrides, lone surrogates) written as its escape, so it shows as one safe line.

    Examples
    --------
    >>> printable("samples/\x1b[2Jx\n\u202e_epoch_1.json")
    'samples/\\x1b[2Jx\\n\\u202e_epoch_1.json'
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


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


def decode_json(data: bytes | bytearray | str) -> tuple[Any, tuple[int, str] | None]:
    """One JSON document -> (value, None), or (None, (line, message)): msgspec first, then :mod:`json` for what
    it refuses (NaN and Infinity, which Inspect writes; integers beyond 64 bits), and a lone surrogate escape
    (``"\\ud800"``, no text agentab can store) is a problem, never a value that fails later.

    Examples
    --------
    >>> decode_json(b'{"a": NaN}')[0], decode_json(b'[1,')[1][0]
    ({'a': nan}, 1)
    """
    try:
        return msgspec.json.decode(data), None
    except msgspec.DecodeError:
        pass
    try:
        value = json.loads(data)
        msgspec.json.encode(value)  # a lone surrogate escape ("\\ud800") is no text agentab can store
    except UnicodeDecodeError as err:
        return None, (1, f"not UTF-8 text ({err.reason} at byte {err.start})")
    except UnicodeEncodeError:
        return None, (1, "a string holds a lone surrogate escape (such as \\ud800): not UTF-8 text")
    except (ValueError, RecursionError) as err:
        if isinstance(err, json.JSONDecodeError):
            return None, (err.lineno, f"{err.msg} (column {err.colno})")
        if isinstance(err, RecursionError):
            return None, (1, "nested too deeply")
        return None, (1, str(err).split(";")[0])  # e.g. an integer of more than 4,300 digits
    return value, None


def object_lines(body: bytes, rows: list[bytes] | None = None, first: int = 1) -> tuple[list[int], bool]:
    """The numbers of the lines of ``body`` (whole lines, split at ``b"\\n"`` into ``rows``, split here if not
    given; the first is line ``first``) that are not blank, and whether each of them opens with ``{`` and closes
    with ``}``.

    When they all do, no JSON object runs over two lines (a ``}`` then a ``{`` across a line break is valid JSON only
    between two objects), so a ``decode_lines`` of the body that finds as many objects as there are such lines
    found one on each, and the numbers are theirs; else the lines are to be read one by one.

    Examples
    --------
    >>> body = b'{"a": 1}\\n\\n {"b": 2}\\r\\n'
    >>> object_lines(body, body.split(b"\\n"))
    ([1, 3], True)
    >>> body = b'{"a":\\n1} {"b": 2}\\n{"c": 3}'  # three objects on three lines, not one on each
    >>> object_lines(body, body.split(b"\\n"))
    ([1, 2, 3], False)
    """
    if rows is None:
        rows = body.split(b"\n")  # (memchr: quicker than counting the newlines)
    # the usual file: every line "{...}", a newline last (its last row is then empty); looked at line by line in C
    filled = len(rows) - (rows[-1] == b"")
    if sum(map(bytes.startswith, rows, repeat(b"{", filled))) == filled == sum(
            map(bytes.endswith, rows, repeat(b"}", filled))) and filled:
        return list(range(first, first + filled)), True
    numbers = []
    whole = True
    for number, raw in enumerate(rows, start=first):
        text = raw.strip(JSON_SPACE)
        if text:
            numbers.append(number)
            if whole and (text[0] != 123 or text[-1] != 125):  # b"{", b"}"
                whole = False
    return numbers, whole
