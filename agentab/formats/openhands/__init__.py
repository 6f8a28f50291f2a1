"""OpenHands evaluation output (``output.jsonl``) and event streams -> agentab trace records.

Input
-----
* An evaluation's ``output.jsonl``: one instance per line, with ``instance_id``,
  ``history`` (the list of events), ``metrics`` (``accumulated_cost``,
  ``accumulated_token_usage``, ``costs``, ``token_usages``), ``test_result``
  (``git_patch``; ``report.resolved`` once the benchmark's evaluation, e.g.
  SWE-bench ``eval_infer``, has run), ``error``, ``instruction``, ``metadata``.
  Gzip-compressed (``.gz``) too. Every line gives one
  :class:`~agentab.formats.Item`.
* A raw event stream: a ``.json`` file holding a list of events (as OpenHands
  saves a trajectory); the whole list is one run, its ``task_id`` the file's
  name without suffixes. A ``.json`` file may also hold one output line (an
  object, possibly indented) or an array of them. In memory: a list of output
  lines, or a list of events.

Run-level fields
----------------
Overridable with ``load_traces(..., fields={...})`` (dotted paths walk into
objects). ``null`` is the same as absent.

============ ================================ ===================================
agentab      default key                      notes
============ ================================ ===================================
run_id       ``run_id``                       absent: ``"<source>:<instance_id>"``
task_id      ``instance_id``                  required: text or integer
seed         ``seed``                         absent: 0 (one run per instance a file)
outcome      ``test_result.report.resolved``  required: bool or number; else
                                              ``report.resolved``
cost_usd     ``metrics.accumulated_cost``     unknown when no call was priced (below)
model        ``metadata.llm_config.model``    to ``metadata.model``; else
                                              ``metadata.llm.model`` (SDK)
harness      ``metadata.agent_class``         to ``metadata.harness``
arm          ``arm``                          text
messages     ``history``                      the event list
============ ================================ ===================================

A line without an outcome (OpenHands' inference output has none until the
benchmark's evaluation adds ``report``; an event stream never carries one) or
without a task is read whole, the field named in ``Item.missing`` with the
reason: the loader fills it from the file path or an outcomes table
(``fields={"path": ...}``, ``outcomes=``; SWE-bench's ``report.json``), or
rejects the run with that reason (a line without a task then has the run id
``"<source>:<line>"``). ``accumulated_cost`` is unknown, not 0, when
``metrics.costs`` is empty while tokens were used (LiteLLM prices no call of
a model it does not know, and OpenHands then adds up zeros); the raw value is
kept in ``metadata.accumulated_cost``. ``error`` (text) goes to
``metadata.error``; the totals of ``metrics.accumulated_token_usage`` to
``metadata.accumulated_prompt_tokens`` / ``accumulated_completion_tokens``.

Steps
-----
An agent action event (``action``: ``run``, ``run_ipython``, ``read``,
``edit``, ``write``, ``browse``, ``think``, ``mcp``, ...) is a step, in
order: ``tool`` is ``tool_call_metadata.function_name`` when present, else
the action's name; ``args`` the event's ``args`` object. Its observation is
the event whose ``cause`` is the action's ``id``: ``{"status", "type",
"content", "extras"}``. It is an **error** when its type is ``error`` or
``user_rejected``, or its exit code (``extras.metadata.exit_code``, or
``extras.exit_code`` in older files) is a non-zero integer (``-1``: no output
within the command's timeout, the command left running); ``error`` is then
the content (or ``"exit code N"``). An action never answered keeps
observation ``null``.

Not steps, counted in ``metadata.events``: ``message``, ``finish``,
``system``, ``recall`` and the controller's events (``change_agent_state``,
``condensation``, ...). An error observation without a ``cause`` (a tool call
OpenHands refused before running it, e.g. invalid arguments) is counted in
``metadata.refused_calls``; an observation whose ``cause`` matches no action
in ``metadata.unpaired_observations``. Rejections, naming the entry
(``history[3].action``): an entry that is not an event object, an event with
neither a known ``action`` nor a known ``observation``, a second observation
of one action.

Steps, OpenHands SDK
--------------------
The OpenHands software-agent SDK (OpenHands V1; the ``OpenHands/benchmarks``
evaluations write the same ``output.jsonl`` lines) gives each event a
``kind``; a history whose first event has one is read this way. Each
``ActionEvent`` is a step (``tool``: ``tool_name``; ``args``: the ``action``
object without its ``kind``, or the parsed ``tool_call.arguments`` when there
is no action), except a ``FinishAction``; its answer is the
``ObservationEvent`` with its ``action_id`` (else its ``tool_call_id``), an
``AgentErrorEvent`` (an error) or a ``UserRejectObservation`` (an error).
The observation is ``{"status", "type", "content": <the observation object>}``,
an error when it has ``is_error: true``, a non-empty ``error``, or a non-zero
exit code (``exit_code``, else ``metadata.exit_code``). Calls of one model
response (``llm_response_id``) after the first have
``metadata.parallel_with_step``. An ``AgentErrorEvent`` answering no action is
counted in ``metadata.refused_calls``; ``MessageEvent``, ``SystemPromptEvent``,
condensation and state events in ``metadata.events``; any other ``kind`` is a
rejection naming ``history[i].kind``. SDK events carry no token counts: a
run's tokens are its ``metrics.accumulated_token_usage`` totals when given
(see "Tokens"), else unknown. ``model`` falls back to ``metadata.llm.model``.

Tokens
------
Events before the SDK: from ``tool_call_metadata.model_response.usage`` (``prompt_tokens`` /
``completion_tokens``), once per model response (``model_response.id``): on
the first step of that response; the response's other calls (parallel tool
calls) have their own share unknown, with ``metadata.tokens_with_step``
naming the first. A response that made no step (``finish``, an agent
message) is counted on the next step, or on the last (the first call of its
response, when the last is a parallel sibling). No usage anywhere:
unknown, not 0. When the line's ``metrics.accumulated_token_usage`` (OpenHands'
own totals, kept in ``metadata.accumulated_prompt_tokens`` /
``accumulated_completion_tokens``) counts more than the events do (a text-only
reply carries no usage), the difference goes on the last step and is noted in
``metadata.tokens_not_in_events``; steps whose own counts are unknown are then
marked ``tokens_with_step`` (counted there), so the run's total is OpenHands'
own. A run without steps has them as its ``tokens_in``
/ ``tokens_out`` when known. Cached prompt tokens (``cache_read_input_tokens``
or ``prompt_tokens_details.cached_tokens``) go to the step's ``tokens_cached``.
The actions of one model response (one ``model_response.id``; the SDK's
``llm_response_id``) share it as their ``parallel`` group.
"""


from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import FieldMap, Format, Item, Part, Reject
from agentab.formats._fast_path import Slow, timed, untouched, whole_first
from agentab.formats.files import BOM, JSON_SPACE, open_trace_file, read_trace_bytes
from agentab.formats.openhands._fast import line, run
from agentab.formats.openhands._fields import FIELDS, convert, history_steps
from agentab.formats.openhands._sdk import is_sdk

__all__ = ["FIELDS", "FORMAT", "history_steps", "read_file", "read_objects", "read_part", "sniff", "splits"]

_decode = msgspec.json.decode


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #
def _item(rec: Any, line: int, where: str, fields: FieldMap, stream: bool = False) -> Item:
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        return Item(line, record=convert(rec, where, fields, stream, line, missing), missing=missing or None)
    except Reject as problem:
        return Item(line, field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read")


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".jsonl"):
        name = name.removesuffix(suffix)
    return name or path.name


def _is_stream(objects: Sequence[Any]) -> bool:
    """A list of events (not of output lines): its first object is an event with an ``id``."""
    first = objects[0] if objects else None
    return (isinstance(first, dict) and "history" not in first and "instance_id" not in first
            and ("action" in first or "observation" in first) and "id" in first)


def _stream_item(events: list[Any], task: str, where: str, fields: FieldMap) -> Item:
    key = fields.get("messages") or FIELDS["messages"]
    run = {"instance_id": task, key: events}
    plan = {**fields, "task_id": "instance_id"}
    return _item(run, 1, where, plan, stream=True)


def _lines(path: Path, where: str, plan: FieldMap, start: int = 0, end: int | None = None,
           first_line: int = 1) -> Iterator[Item]:
    yield from timed(_line_entries(path, where, plan, start, end, first_line))


def _numbered(path: Path, start: int, end: int | None, first_line: int) -> Iterator[tuple[int, bytes]]:
    """The lines of bytes ``[start, end)`` of ``path`` (whole lines; ``end`` None: to the end), numbered from
    ``first_line``, a byte-order mark off the file's first line."""
    with open_trace_file(path) as fh:
        if start:
            fh.seek(start)
        position = start
        for number, raw in enumerate(fh, start=first_line):
            if end is not None and position >= end:
                return
            position += len(raw)
            yield number, raw.removeprefix(BOM) if number == 1 else raw


def _line_entries(path: Path, where: str, plan: FieldMap, start: int = 0, end: int | None = None,
                  first_line: int = 1) -> Iterator[tuple[Item, Callable[[], Item] | None]]:
    """Each line's item, built in columns when it is the plain case (:mod:`._fast`), with the reader's usual
    conversion of the line (for :func:`~agentab.formats._fast_path.timed`)."""
    trim = plan["messages"] == FIELDS["messages"] and untouched(plan, (FIELDS["messages"],), "messages")
    for number, raw in _numbered(path, start, end, first_line):
        if not raw.strip(JSON_SPACE):
            continue
        rec = line(raw) if trim else None
        if rec is not None:
            yield _plain(rec, raw, number, where, plan)
            continue
        try:
            rec = _decode(raw)
        except msgspec.DecodeError as err:
            yield Item(number, reason=f"malformed JSON: {err}"), None
            continue
        except RecursionError:
            yield Item(number, reason="JSON nested too deeply to read"), None
            continue
        yield _item(rec, number, where, plan), None


def _plain(rec: dict[str, Any], raw: bytes, number: int, where: str, plan: FieldMap
           ) -> tuple[Item, Callable[[], Item] | None]:
    def usual() -> Item:
        return _item(_decode(raw), number, where, plan)
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        return Item(number, record=run(rec, where, plan, number, missing), missing=missing or None), usual
    except (Slow, Reject, RecursionError):
        if is_sdk(rec.get("history") or []):  # the SDK's events have keys the shapes leave out: read whole
            return usual(), None
        return whole_first(_item(rec, number, where, plan), usual), None


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """Every run of an ``output.jsonl`` (one per line, read as a stream) or the run of an event-stream ``.json``."""
    plan = {**FIELDS, **(fields or {})}
    path = Path(path)
    where = str(path)
    start, one_object = _shape(path)
    if start != b"[" and not one_object:
        yield from _lines(path, where, plan)
        return
    body = read_trace_bytes(path).removeprefix(BOM).lstrip(JSON_SPACE)
    try:
        parsed = _decode(body)
    except (msgspec.DecodeError, RecursionError) as err:
        if one_object:  # JSON Lines in a .json file
            yield from _lines(path, where, plan)
            return
        yield Item(1, reason=f"malformed JSON: {err}; the whole file was left out")
        return
    if isinstance(parsed, dict):
        yield _item(parsed, 1, where, plan)
    elif _is_stream(parsed):
        yield _stream_item(parsed, _stem(path), where, plan)
    else:
        for position, rec in enumerate(parsed, start=1):
            yield _item(rec, position, where, plan)


def splits(path: Path) -> bool:
    """Whether :func:`read_part` can read ``path`` in parts: it is read as JSON Lines (``output.jsonl``), every line
    a run of its own (not an event-stream ``.json``, a JSON array, or one object in a ``.json`` file)."""
    start, one_object = _shape(Path(path))
    return start == b"{" and not one_object


def _shape(path: Path) -> tuple[bytes, bool]:
    """A file's first character of JSON, and whether it is one object in a ``.json`` file (else lines are read)."""
    with open_trace_file(path) as fh:
        start = fh.read(4096).removeprefix(BOM).lstrip(JSON_SPACE)[:1]
    return start, start == b"{" and path.name.lower().removesuffix(".gz").endswith(".json")


def read_part(path: Path, start: int, end: int, first_line: int, fields: FieldMap | None = None) -> Part:
    """The runs of the lines in bytes ``[start, end)`` of an ``output.jsonl`` (see
    :attr:`~agentab.formats._base.Format.read_part`): each line is a run of its own, so parts have no keys."""
    plan = {**FIELDS, **(fields or {})}
    path = Path(path)
    return Part(list(_lines(path, str(path), plan, start, end, first_line)), frozenset())


def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
    """In memory: output lines (one run each), or one event stream (a list of events: one run named ``name``)."""
    plan = {**FIELDS, **(fields or {})}
    if _is_stream(objects):
        yield _stream_item(list(objects), name, name, plan)
        return
    for position, rec in enumerate(objects, start=1):
        yield _item(rec, position, name, plan)


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
_INSTANCE = re.compile(rb'"instance_id"\s*:')
_HISTORY = re.compile(rb'"history"\s*:\s*\[\s*(?:\]|\{\s*"(?:id|timestamp|source|kind)"\s*:)')
_SDK_EVENT = re.compile(rb'"kind"\s*:\s*"(?:ActionEvent|ObservationEvent|MessageEvent|SystemPromptEvent)"')
_HISTORY_KEY = re.compile(rb'"history"\s*:')
_INSTRUCTION = re.compile(rb'"instruction"\s*:\s*"')
_TEST_RESULT = re.compile(rb'"test_result"\s*:\s*\{')
_SOURCE = re.compile(rb'"source"\s*:\s*"(?:agent|user|environment)"')
_EVENT_KIND = re.compile(rb'"(?:action|observation)"\s*:\s*"')
_STREAM_START = re.compile(rb'\[\s*\{\s*"id"\s*:\s*\d+\s*,\s*"timestamp"\s*:')


def sniff(head: bytes, name: str = "") -> bool:
    """OpenHands: an ``instance_id`` with a ``history`` event list whose events start with ``id`` /
    ``timestamp`` / ``source`` / ``kind`` and carry ``source`` (agent, user, environment) and ``action`` /
    ``observation`` text (or an SDK ``kind``: ``ActionEvent``, ``ObservationEvent``, ``MessageEvent``,
    ``SystemPromptEvent``); or a JSON array of such events (``id``, ``timestamp`` first, as OpenHands writes).

    A ``history`` of messages (``role``: SWE-agent) or of ``[action, observation]`` pairs is not claimed.
    When the first line's ``instruction`` is so long that ``history`` is past ``head``: ``instance_id``,
    ``instruction`` (text) and ``test_result`` (an object), the keys OpenHands writes before ``history``.
    """
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    events = bool(_SOURCE.search(head) and (_EVENT_KIND.search(head) or _SDK_EVENT.search(head)))
    if body[:1] == b"{":
        if _INSTANCE.search(head) and not _HISTORY_KEY.search(head):  # a long instruction: history not yet reached
            return bool(_INSTRUCTION.search(head) and _TEST_RESULT.search(head))
        return bool(_INSTANCE.search(head) and _HISTORY.search(head) and events)
    if body[:1] == b"[":
        return bool(_STREAM_START.match(body) and events) or bool(
            _INSTANCE.search(head) and _HISTORY.search(head) and events)
    return False


FORMAT = Format(
    name="openhands",
    summary="OpenHands evaluation output.jsonl (instance_id, history of events, metrics) and event-stream .json files",
    example='{"instance_id": "django__django-11099", "test_result": {"report": {"resolved": true}}, "history": '
    '[{"id": 5, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": '
    '{"function_name": "execute_bash", "tool_call_id": "t1", "model_response": {"id": "r1", "usage": '
    '{"prompt_tokens": 812, "completion_tokens": 44}}}}, {"id": 6, "source": "agent", "cause": 5, '
    '"observation": "run", "content": "README.md", "extras": {"exit_code": 0}}], '
    '"metrics": {"accumulated_cost": 0.01}}',
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
    read_part=read_part,
    splits=splits,
)
