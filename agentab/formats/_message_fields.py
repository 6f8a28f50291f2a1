"""The run-level fields of a message-list run: looked up by the field mapping, checked, the rest kept as metadata.

The rules are in :mod:`agentab.formats.messages` ("Run-level fields").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import Reject as _Reject
from agentab.formats._base import describe
from agentab.formats._base import lookup as _lookup
from agentab.formats._missing import absent

#: Default run-level mapping: agentab's name -> the key in the input.
FIELDS: dict[str, str] = {
    "run_id": "run_id", "task_id": "task_id", "seed": "seed", "arm": "arm", "model": "model",
    "harness": "harness", "outcome": "outcome", "cost_usd": "cost_usd", "latency_s": "latency_s",
    "messages": "messages",
}
#: Tried when the default key is in use and absent (tau-bench's names).
_FALLBACK = {"seed": "trial", "outcome": "reward", "messages": "traj"}
#: Longest text kept in metadata from an unmapped run-level key.
_MAX_TEXT = 256


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def run_fields(rec: dict[str, Any], fields: Mapping[str, str], where: str, line: int
               ) -> tuple[dict[str, Any], list[Any], str, dict[str, tuple[str | None, str]]]:
    """The record without steps, the message list, its key, and the required fields the run lacks
    (:attr:`~agentab.formats._base.Item.missing`); raises _Reject."""
    found, used, nulls = _found(rec, fields)

    def missing(key: str) -> tuple[str, str]:
        name = fields[key]
        if key in nulls:
            return name, "outcome is null: a run needs the verdict of an external check"
        also = f" or {_FALLBACK[key]!r}" if key in _FALLBACK and name == FIELDS[key] else ""
        return name, f"no {key}: the run has no {name!r}{also}"

    out, lacking = _identity(found, missing, where, line)
    meta: dict[str, Any] = {}
    for key in ("arm", "model", "harness"):
        if key in found:
            name, value = found[key]
            if not isinstance(value, str) or not value:
                raise _Reject(name, f"{key} must be non-empty text, got {describe(value)}")
            if key == "arm":
                out["arm"] = value
            else:
                meta[key] = value
    for key in ("cost_usd", "latency_s"):
        if key in found:
            name, value = found[key]
            if not _is_number(value) or not value >= 0:
                raise _Reject(name, f"{key} must be a number >= 0, got {describe(value)}")
            out[key] = value
    if "messages" not in found:
        raise _Reject(*missing("messages"))
    messages_key, messages = found["messages"]
    if not isinstance(messages, list):
        raise _Reject(messages_key, f"expected a list of messages, got {describe(messages)}")
    extra = _extra(rec, used, meta)
    if extra:
        out["metadata"] = extra
    return out, messages, messages_key, lacking


def _found(rec: dict[str, Any], fields: Mapping[str, str]
           ) -> tuple[dict[str, tuple[str, Any]], set[str], set[str]]:
    """agentab name -> (input name, value) of every mapped field the run has (the fallback names tried
    while the default is in use), the top-level keys used, and ``{"outcome"}`` if the outcome is null
    (not yet judged: absent, with its own reason)."""
    used: set[str] = set()
    nulls: set[str] = set()
    found: dict[str, tuple[str, Any]] = {}
    for key, name in fields.items():
        value = _lookup(rec, name)
        if (value is _MISSING or value is None) and key in _FALLBACK and name == FIELDS[key]:
            other = _lookup(rec, _FALLBACK[key])
            if other is not _MISSING and other is not None:
                name, value = _FALLBACK[key], other
        if name in rec:
            used.add(name)
        if value is not _MISSING and value is not None:
            found[key] = (name, value)
        elif key == "outcome" and value is None:
            nulls.add(key)
    return found, used, nulls


def _identity(found: dict[str, tuple[str, Any]], missing: Callable[[str], tuple[str, str]], where: str,
              line: int) -> tuple[dict[str, Any], dict[str, tuple[str | None, str]]]:
    """``run_id`` (absent: ``<where>:<line>``), ``task_id``, ``seed`` and ``outcome``, checked in that order,
    and the required ones absent (left to the loader: :attr:`~agentab.formats._base.Item.missing`)."""
    out: dict[str, Any] = {}
    lacking: dict[str, tuple[str | None, str]] = {}
    for key in ("run_id", "task_id"):
        if key in found:
            name, value = found[key]
            if not ((isinstance(value, str) and value) or _is_int(value)):
                raise _Reject(name, f"{key} must be non-empty text or an integer, got {describe(value)}")
            out[key] = value
        elif key == "task_id":
            absent(lacking, key, *missing(key))
    if "run_id" not in out:
        out["run_id"] = f"{where}:{line}"
    for key, valid, expected in (("seed", _is_int, "an integer"),
                                 ("outcome", _is_outcome, "true/false or a number")):
        if key not in found:
            absent(lacking, key, *missing(key))
            continue
        name, value = found[key]
        if not valid(value):
            raise _Reject(name, f"{key} must be {expected}, got {describe(value)}")
        out[key] = value
    return out, lacking


def _is_outcome(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def _extra(rec: dict[str, Any], used: set[str], meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata: unmapped top-level small scalars, then a top-level ``metadata`` object, then ``meta``."""
    extra: dict[str, Any] = {}
    for key, value in rec.items():
        if key in used:
            continue
        if key == "metadata" and isinstance(value, dict):
            continue
        if value is None or isinstance(value, (bool, int, float)) or (
                isinstance(value, str) and len(value) <= _MAX_TEXT):
            extra[key] = value
    given = rec.get("metadata") if "metadata" not in used else None
    if isinstance(given, dict):
        extra.update(given)
    extra.update(meta)
    return extra
