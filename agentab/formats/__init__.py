"""Trace formats: agentab's own record, and the formats agents and eval frameworks already write.

=============== ==================================================================
name            what
=============== ==================================================================
record          agentab's trace record (:mod:`agentab.formats.record`), JSON Lines or JSON
otel            OpenTelemetry GenAI spans as OTLP JSON (:mod:`.otel`)
openai          records with a Chat Completions message list (:mod:`.messages`)
anthropic       records with a Messages API content-block list (:mod:`.messages`)
inspect         Inspect AI eval logs, ``.eval`` archives and ``.json`` (:mod:`.inspect_ai`)
openai-agents   OpenAI Agents SDK trace export (``trace`` and ``trace.span`` objects) (:mod:`.openai_agents`)
tau2            tau2-bench results documents (``simulations``), or simulations one per line (:mod:`.tau2`)
mini-swe-agent  mini-SWE-agent ``*.traj.json`` trajectories, v1 and v2 (:mod:`.mini_swe_agent`)
swe-agent       SWE-agent ``.traj`` trajectories, 0.x text actions and 1.x function calling (:mod:`.swe_agent`)
openhands       OpenHands evaluation ``output.jsonl`` and event streams (:mod:`.openhands`)
claude-code     Claude Code session transcripts (JSON Lines) (:mod:`.claude_code`)
atif            Harbor ATIF ``trajectory.json`` with the trial's ``result.json`` (:mod:`.atif`)
=============== ==================================================================

Every other format is converted, run by run, to the trace record and then
validated by the same decoder, so scoring, comparison, power and reports work
unchanged on any of them. :func:`detect` picks a file's format from its first
bytes; :func:`agentab.load_traces` (``format="auto"``) uses it and records
its choice in ``Traces.formats``.
"""

from __future__ import annotations

import importlib

from agentab.formats._base import FieldMap, Format, Item, resolve_fields
from agentab.formats._missing import settle
from agentab.formats.files import first_keys, is_record_keys

__all__ = ["Format", "Item", "FieldMap", "RUN_FIELDS", "HEAD_BYTES", "available", "get", "detect", "resolve_fields",
           "settle"]

#: The run-level fields a ``fields=`` mapping may rename.
RUN_FIELDS = ("run_id", "task_id", "seed", "arm", "model", "harness", "outcome", "cost_usd", "latency_s", "messages")
#: Bytes of a file (decompressed) that format detection looks at.
HEAD_BYTES = 65536

_OTHERS = (b'"resourceSpans"', b'"tool_use"', b'"tool_result"', b'"messages"', b'"traj"', b'"samples"')


def _record_sniff(head: bytes, name: str) -> bool:
    """Our record: ``run_id`` and ``steps`` keys, and none of the other formats' signature keys.

    Read from the first record's top-level keys when its line is whole in ``head`` (a tool argument named
    ``messages`` or ``traj`` is not another format's signature), else from the bytes.
    """
    keys = first_keys(head)
    if keys is not None:
        return is_record_keys(keys)
    return b'"steps"' in head and b'"run_id"' in head and not any(key in head for key in _OTHERS)


RECORD = Format(
    name="record",
    summary="agentab's trace record (agentab.formats.record): one JSON object per run, JSON Lines or a JSON array",
    example='{"run_id": "r1", "task_id": "t1", "seed": 0, "outcome": true, "steps": '
    '[{"index": 0, "tool": "ls", "args": {"path": "."}, "observation": {"status": "ok"}}]}',
    fields={},
    sniff=_record_sniff,
    read_file=None,  # agentab.traces reads its own record (fast paths, parallel decoding)
)


#: Where each converted format is defined (module, name), in detection order: specific signatures before the message
#: lists (openai's sniff also claims tau2, mini-SWE-agent, SWE-agent and OpenHands files, whose histories hold chat
#: messages; anthropic's claims Claude Code sessions).
_MODULES = {
    "otel": ("otel", "FORMAT"), "openai-agents": ("openai_agents", "FORMAT"), "tau2": ("tau2", "FORMAT"),
    "mini-swe-agent": ("mini_swe_agent", "FORMAT"), "swe-agent": ("swe_agent", "FORMAT"),
    "openhands": ("openhands", "FORMAT"), "claude-code": ("claude_code", "FORMAT"), "openai": ("messages", "OPENAI"),
    "anthropic": ("messages", "ANTHROPIC"), "inspect": ("inspect_ai", "FORMAT"), "atif": ("atif", "FORMAT"),
}


def _converted(name: str) -> Format:
    module, attribute = _MODULES[name]
    return getattr(importlib.import_module(f"agentab.formats.{module}"), attribute)


def available() -> dict[str, Format]:
    """Every format by name (in the order :func:`detect` tries them, our record first)."""
    return {"record": RECORD, **{name: _converted(name) for name in _MODULES}}


def get(name: str) -> Format:
    """The format called ``name`` (only its own module is imported); a ValueError listing the formats otherwise."""
    if name == "record":
        return RECORD
    if name not in _MODULES:
        raise ValueError(f"unknown trace format {name!r}; formats: auto, {', '.join(['record', *_MODULES])}")
    return _converted(name)


def detect(head: bytes, name: str = "") -> str | None:
    """The name of the format whose signature ``head`` (a file's first bytes) shows, or None.

    The converted formats are tried first: their signatures are specific, while a
    header of theirs can look like our record's (``run_id`` and ``steps`` keys).
    """
    formats = available()
    for fmt in [*(f for f in formats.values() if f.name != "record"), formats["record"]]:
        if fmt.sniff(head, name):
            return fmt.name
    return None
