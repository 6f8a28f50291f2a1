"""What a trace-format reader gives back: agentab trace records (dicts) or rejections, with where they came from.

A reader converts one input file (or in-memory objects) of its format into
:class:`Item` s, one per *record read*: a run converted to the agentab trace
record (:mod:`agentab.formats.record`; validated afterwards by the same decoder as
our own JSON Lines), or a rejection saying which field of which record is at
fault and why. Counting one item per record read is what keeps
``len(runs) + len(rejected) == n_read`` for every format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentab.formats.decode import Prepared

__all__ = ["Item", "Part", "Format", "FieldMap", "Reject", "MISSING", "describe", "lookup", "resolve_fields", "token_count"]

#: agentab's name of a run-level field -> the format's name for it (an attribute, a key, a dotted path).
FieldMap = Mapping[str, str]


@dataclass(frozen=True)
class Item:
    """One record read: ``record`` (a trace-record dict) or, if it could not be converted, ``reason``.

    A reader may give a run already in the decoder's columns instead of a
    dict (``record``: an :class:`agentab.formats.decode.Prepared`, whose
    ``to_record()`` is the dict): faster, for a reader that guarantees the
    schema's types and ranges itself.

    ``line`` is where the record is: the line of a JSON Lines file, the
    position in a JSON array (1-based), or for formats whose runs span
    several records (OpenTelemetry spans) the line of the run's first
    record. ``source`` overrides the file name (e.g. the member of a zip
    archive: ``"log.eval:samples/3_epoch_1.json"``). ``field`` names the
    field at fault, as a path into the input (``"messages[3].tool_call_id"``).

    ``missing``: the required run-level fields (``run_id``, ``task_id``,
    ``seed``, ``outcome``) that the file does not hold, each with
    ``(field, reason)`` as a rejection would give them. The record leaves
    them out (a :class:`~agentab.formats.decode.Prepared` holds None there);
    the loader fills them from ``fields={"path": ...}`` or ``outcomes=`` and
    rejects the run with that field and reason when it cannot.

    ``run_id``: of a rejection whose run was converted far enough to have
    one (``Traces.rejected.run_id``); None otherwise.
    """

    line: int
    record: dict[str, Any] | Prepared | None = None
    field: str | None = None
    reason: str | None = None
    source: str | None = None
    missing: Mapping[str, tuple[str | None, str]] | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Format:
    """A trace format agentab reads.

    Attributes
    ----------
    name : str
        The name given to ``load_traces(..., format=name)``.
    summary : str
        One line: what the format is.
    example : str
        One line of input in the format (shown by ``agentab formats``).
    fields : mapping
        Default run-level field mapping (agentab name -> the format's name);
        ``load_traces(fields=...)`` overrides entries.
    sniff : callable
        ``sniff(head, name) -> bool``: whether a file whose first bytes
        (decompressed, up to 64 KiB) are ``head`` is in this format.
    read_file : callable or None
        ``read_file(path, fields) -> Iterator[Item]`` (None for agentab's
        own record, which :mod:`agentab.traces` reads itself).
    read_objects : callable or None
        ``read_objects(objects, name, fields) -> Iterator[Item]`` for
        in-memory input (a list of dicts); None if the format has none.
    suffixes : tuple of str
        File name endings read when a folder is given (besides .json, .jsonl, .gz).
    read_part : callable or None
        For a large JSON Lines file read by several processes:
        ``read_part(path, start, end, first_line, fields) -> Part``, the
        items of the lines in bytes ``[start, end)`` of ``path`` (offsets at
        line starts; ``first_line``: the number of the line at ``start``).
        None if the format cannot be read in parts.
    splits : callable or None
        ``splits(path) -> bool``: whether ``read_part`` can read this file in
        parts (it is JSON Lines in the format's sense).
    read_whole : callable or None
        ``read_whole(path, fields) -> Part | None``: a reader of the whole
        file that is faster than reading it in parts but may decline (None),
        tried first on a file large enough to split.
    companions : callable or None
        ``companions(paths) -> paths``: of the files found under a folder
        (their paths as text, in reading order), the ones to read; a format
        whose files are read along with another (Harbor's ``result.json``
        with the trajectory beside it) leaves those out, so the loader does
        not open them on their own. Used when the format is named
        (``format="atif"``); files given by their own path are always read.
    """

    name: str
    summary: str
    example: str
    fields: FieldMap
    sniff: Callable[[bytes, str], bool]
    read_file: Callable[[Path, FieldMap], Iterator[Item]] | None
    read_objects: Callable[[Sequence[Any], str, FieldMap], Iterator[Item]] | None = None
    suffixes: tuple[str, ...] = field(default=())
    read_part: Callable[[Path, int, int, int, FieldMap], Part] | None = None
    splits: Callable[[Path], bool] | None = None
    read_whole: Callable[[Path, FieldMap], Part | None] | None = None
    companions: Callable[[list[str]], list[str]] | None = None


@dataclass(frozen=True)
class Part:
    """The items of part of a file (:attr:`Format.read_part`) and its ``keys``.

    ``keys``: strings (ids the conversion of a record depends on beyond its
    own line, e.g. OpenTelemetry trace ids) such that parts whose keys are
    pairwise disjoint convert exactly as the whole file does; when two parts
    share a key, the file is read in one piece instead.
    """

    items: list[Item]
    keys: frozenset[str]


def resolve_fields(defaults: FieldMap, given: Mapping[str, Any] | None, known: Sequence[str]) -> dict[str, str]:
    """The field mapping: the format's defaults with the user's entries; unknown agentab names are an error."""
    out = dict(defaults)
    for key, value in (given or {}).items():
        if key not in known:
            raise ValueError(f"`fields` has {key!r}, not a run-level field agentab maps; known: {', '.join(known)}")
        if not isinstance(value, str) or not value:
            raise ValueError(f"`fields[{key!r}]` must be a non-empty name, got {value!r}")
        out[key] = value
    return out


class Reject(Exception):
    """Raised inside a reader: this record cannot be converted (``field``: a path into the input; ``reason``)."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def describe(value: Any) -> str:
    """A value as a rejection quotes it: its type and the start of its JSON."""
    text = json.dumps(value, default=repr)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def token_count(obj: Any, key: str, where: str, *, whole_floats: bool = False) -> int | None:
    """The count at ``obj[key]``: an integer >= 0, or None when absent (unknown, never 0); a :class:`Reject`
    naming ``where.key`` otherwise. ``whole_floats`` also takes 12.0 as 12 (writers that store counts as floats).

    Examples
    --------
    >>> token_count({"prompt_tokens": 12}, "prompt_tokens", "usage"), token_count({}, "prompt_tokens", "usage")
    (12, None)
    """
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if whole_floats and isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None or (type(value) is int and value >= 0):
        return value
    raise Reject(f"{where}.{key}", f"expected a token count, a whole number (integer >= 0), got {describe(value)}")


#: What :func:`lookup` returns for a path that is not there (``None`` is a value).
MISSING: Any = object()


def lookup(obj: Any, path: str) -> Any:
    """The value at ``path`` in parsed JSON, or :data:`MISSING`.

    A key that is itself ``path`` wins (keys may contain dots); otherwise
    ``path`` is dotted: each part a key of an object, a digit an index of a
    list, ``*`` every value of an object (the result is then a list).
    """
    if isinstance(obj, dict) and path in obj:
        return obj[path]
    parts = path.split(".")
    if "*" not in parts:  # one value at each step: walk it, without lists of candidates (readers call this per run)
        value = obj
        for part in parts:
            if isinstance(value, dict):
                if part not in value:
                    return MISSING
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return MISSING
        return value
    values = [obj]
    star = False
    for part in parts:
        found = []
        for value in values:
            if part == "*" and isinstance(value, dict):
                found.extend(value.values())
                star = True
            elif isinstance(value, dict) and part in value:
                found.append(value[part])
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                found.append(value[int(part)])
        if not found:
            return MISSING
        values = found
    return values if star else values[0]
