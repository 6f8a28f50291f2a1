"""Cutting a JSON array of records into its elements, each with its line, so one bad element is one rejection.

:func:`locate` pairs the elements of a well-formed array with their lines; :func:`split_array` cuts an
array whose elements do not parse (NaN, too deep) by counting brackets; :func:`resync_array` cuts one whose
brackets do not balance (an element with an unclosed or extra bracket) by parsing element by element.
"""
from __future__ import annotations

import json
import re

import msgspec

from agentab.formats.files import JSON_SPACE

__all__ = ["locate", "resync_array", "split_array"]


#: A JSON string (escapes included), an unterminated quote, or a structural character.
_ARRAY_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{},]', re.S)


def locate(data: bytes, elements: list[msgspec.Raw]) -> list[tuple[int, bytes]]:
    """Pair each raw array element with the line it starts on."""
    located, search_from, previous, line = [], 0, 0, 1
    for element in elements:
        raw = bytes(element)
        offset = data.find(raw, search_from)
        line += data.count(b"\n", previous, offset)
        located.append((line, raw))
        previous, search_from = offset, offset + len(raw)
    return located


def split_array(data: bytes, start: int) -> tuple[list[tuple[int, bytes]], tuple[int, str] | None]:
    """Cut the JSON array at ``data[start]`` into ``(line, element)``; no recursion, no parsing.

    Each element is then decoded (and, if bad, rejected) on its own. Returns
    the elements and, if the array itself is broken (not closed, an
    unterminated string, text after it), ``(line, reason)`` for the whole file.
    Brackets are only counted, not matched: a mismatched pair inside an
    element makes that element malformed, which its decoding reports.
    """
    elements: list[tuple[int, bytes]] = []
    counted = [0, 1]  # newlines are counted once, front to back: (position, line there)

    def line_of(position: int) -> int:
        counted[1] += data.count(b"\n", counted[0], position)
        counted[0] = position
        return counted[1]

    def close(begin: int, end: int) -> None:
        text = data[begin:end]
        lead = len(text) - len(text.lstrip(JSON_SPACE))
        elements.append((line_of(begin + lead), text.strip(JSON_SPACE)))

    depth, element_start = 0, start + 1
    for match in _ARRAY_TOKEN.finditer(data, start):
        token = match.group()
        if token == b'"':
            return elements, (line_of(match.start()), "malformed JSON: unterminated string")
        if token in (b"[", b"{"):
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                if elements or data[element_start:match.start()].strip(JSON_SPACE):  # "[]" has no element
                    close(element_start, match.start())
                rest = data[match.end():].lstrip(JSON_SPACE)
                if rest:
                    return elements, (line_of(len(data) - len(rest)), "malformed JSON: extra data after the array")
                return elements, None
        elif token == b"," and depth == 1:
            close(element_start, match.start())
            element_start = match.end()
    return elements, (line_of(start), "malformed JSON: the array is not closed")


#: Where an array element may start again after a bad one: a comma, then an object.
_NEXT_OBJECT = re.compile(rb",[ \t\n\r]*(?=\{)")


def resync_array(data: bytes, start: int) -> list[tuple[int, bytes]] | None:
    """Cut a JSON array whose brackets do not balance into ``(line, element)`` by parsing each element.

    A bad element runs to the next ``,{`` from which the rest parses as an element followed by ``,`` or
    ``]``, and is kept (its decoding rejects it, naming why); the others load. None when the array itself
    is broken (not closed, text after it) or no element parses: the caller rejects the whole file.
    """
    text = data.decode("latin-1")  # one character per byte: offsets stay byte offsets; only ASCII is structural
    scan = json.JSONDecoder().raw_decode
    elements: list[tuple[int, bytes]] = []
    good = 0

    def skip(position: int) -> int:
        while position < len(text) and text[position] in " \t\n\r":
            position += 1
        return position

    def parses(position: int) -> int | None:
        """The end of the element at ``position`` if it parses and is followed by ``,`` or ``]``."""
        try:
            end = scan(text, position)[1]
        except (ValueError, RecursionError):
            return None
        after = skip(end)
        return end if after < len(text) and text[after] in ",]" else None


    def line_at(position: int) -> int:  # only on broken input: no need to count newlines once
        return data.count(b"\n", 0, position) + 1

    position = skip(start + 1)
    if text[position:position + 1] == "]":
        position += 1
    else:
        while position < len(text):
            end = parses(position)
            if end is None:  # a bad element: up to the next place the rest parses again
                end = next((m.start() for m in _NEXT_OBJECT.finditer(data, position + 1)
                            if parses(m.end()) is not None), None)
                if end is None:
                    closing = data.rfind(b"]")
                    end = closing if closing > position else len(data)
                    elements.append((line_at(position), data[position:end].rstrip(JSON_SPACE)))
                    position = end
                    break
                elements.append((line_at(position), data[position:end].rstrip(JSON_SPACE)))
            else:
                elements.append((line_at(position), data[position:end]))
                good += 1
            position = skip(end)
            if text[position:position + 1] != ",":
                break
            position = skip(position + 1)
        if text[position:position + 1] != "]":
            return None
        position += 1
    return elements if good and skip(position) == len(text) else None
