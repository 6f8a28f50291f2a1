"""Why a record failed to decode: a msgspec error turned into the field it names and a reason in words."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec

__all__ = ["diagnose"]

_AT = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(.+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(.+)`$")
_PATH_TOKEN = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


def _join(path: str | None, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(obj: Any, path: str) -> Any:
    """Follow a msgspec path like ``.steps[2].tokens_in`` into a decoded object."""
    for name, index, quoted in _PATH_TOKEN.findall(path):
        if index:
            obj = obj[int(index)]
        else:
            obj = obj[name or quoted]
    return obj


def _find_nonfinite(obj: Any, path: str = "") -> str | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return path
    if isinstance(obj, dict):
        for key, value in obj.items():
            found = _find_nonfinite(value, _join(path, str(key)))
            if found:
                return found
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            found = _find_nonfinite(value, f"{path}[{i}]")
            if found:
                return found
    return None


def _plain(msg: str) -> str:
    msg = msg.replace("`", "")
    return msg[:1].lower() + msg[1:]


def _run_id_of(obj: Any) -> str | None:
    run_id = obj.get("run_id") if isinstance(obj, dict) else None
    if not isinstance(run_id, (str, int)) or isinstance(run_id, bool):
        return None
    # an id with a lone surrogate escape ("\ud800") is shown escaped: it is no text a table can hold
    return str(run_id).encode("utf-8", "backslashreplace").decode("utf-8")


def diagnose(raw: bytes, exc: Exception) -> tuple[str | None, str, int, str | None]:
    """Explain why ``raw`` failed to decode as a :class:`Record`.

    Returns ``(field, reason, line_offset, run_id)``; ``line_offset`` is the
    number of lines into ``raw`` at which a JSON syntax error sits (0 for
    one-line records); ``run_id`` is the record's id when it can be read.
    """
    field, reason, offset, obj = _explain(raw, exc)
    return field, reason, offset, _run_id_of(obj)


def _explain(raw: bytes, exc: Exception) -> tuple[str | None, str, int, Any]:
    try:
        obj = json.loads(raw.rstrip())
    except json.JSONDecodeError as err:
        return None, f"malformed JSON: {err.msg} (column {err.colno})", err.lineno - 1, None
    except (RecursionError, UnicodeDecodeError) as err:
        return None, f"malformed JSON: {err}", 0, None
    except ValueError as err:  # e.g. an integer of more than 4,300 digits, which Python will not convert
        return None, f"malformed JSON: {str(err).split(';')[0]}", 0, None
    if not isinstance(obj, dict):
        return None, f"expected a JSON object (one run), got {type(obj).__name__}", 0, obj
    if not isinstance(exc, msgspec.ValidationError):  # a syntax error (ValidationError subclasses DecodeError)
        location = _find_nonfinite(obj)
        if location:
            return location, "non-finite number (NaN or Infinity) is not allowed", 0, obj
        return None, f"malformed JSON: {exc}", 0, obj
    msg = str(exc)
    path = None
    match = _AT.match(msg)
    if match:
        msg, path = match.group(1), match.group(2)
    field = path.lstrip(".") if path else None
    if (m := _MISSING.match(msg)) is not None:
        return _join(field, m.group(1)), "missing required field", 0, obj
    if (m := _UNKNOWN.match(msg)) is not None:
        hint = "free-form data belongs in metadata" if not field else "not a field of a step"
        return _join(field, m.group(1)), f"unknown field ({hint})", 0, obj
    reason = _plain(msg)
    if path and "got" not in reason:
        try:
            value = _walk(obj, path)
        except (KeyError, IndexError, TypeError):
            pass
        else:
            reason = f"{reason}, got {json.dumps(value)[:80]}"
    return field, reason, 0, obj
