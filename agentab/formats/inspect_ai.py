"""Inspect AI eval logs (format ``"inspect"``), read without inspect_ai installed.

Inspect (https://inspect.aisi.org.uk) writes one log per task run, in one of
two layouts:

``.eval``
    A zip archive: ``header.json`` (the log without its samples: ``version``,
    ``status``, ``eval``, ``plan``, ``results``, ``stats``), one member per
    sample and epoch, ``samples/{id}_epoch_{epoch}.json`` (an ``EvalSample``),
    and bookkeeping that is not read here (``summaries.json``,
    ``reductions.json``, ``_journal/``). A log still being written (or cut
    short) has no ``header.json`` yet; its ``_journal/start.json`` (``version``,
    ``eval``, ``plan``) is read instead, as Inspect does. A member name written
    twice (a re-logged sample) is read once, its last copy.
``.json``
    One ``EvalLog`` document: ``{"version", "status", "eval", "plan",
    "results", "stats", "samples": [...], ...}`` (``.json.gz`` too). Samples
    may hold ``NaN`` (an unscored score); they are read.

Each sample (one id at one epoch) is one record read: a run, or a rejection.

Field names follow inspect_ai's own readers and models (github.com/
UKGovernmentBEIS/inspect_ai, ``src/inspect_ai/``): ``log/_recorders/eval.py``
(zip layout, ``header.json`` / ``_journal/start.json``, ``_sample_filename``),
``log/_log.py`` (``EvalLog``, ``EvalSpec``, ``EvalPlan``, ``EvalSample``,
legacy ``score`` / ``transcript``), ``log/_condense.py`` (``attachment://``
references, legacy ``tc://``), ``model/_chat_message.py``
(``ChatMessageAssistant.tool_calls``, ``ChatMessageTool.tool_call_id`` /
``error``), ``tool/_tool_call.py`` (``ToolCall``, ``ToolCallError``),
``model/_model_output.py`` (``ModelUsage``), ``event/_model.py``,
``event/_tool.py``, ``event/_span.py`` (``ModelEvent``, ``ToolEvent``,
spans), ``scorer/_metric.py`` (``CORRECT``/``INCORRECT``/``PARTIAL``/
``NOANSWER``, ``value_to_float``).

Mapping to the trace record
---------------------------
============ ===================================================== ==========================
record       from (default ``fields`` entry)                       notes
============ ===================================================== ==========================
run_id       ``eval.eval_id:id:epoch``                             eval_id (one per log; the
                                                                    run_id is shared by all
                                                                    tasks of one ``inspect
                                                                    eval``), else (older logs)
                                                                    eval.task_id, else
                                                                    eval.run_id; joined by ":"
task_id      ``id``: the sample id                                 text or integer
seed         ``epoch``                                             1, 2, ... per sample
arm          none                                                  ``load_traces(arm=...)``, or
                                                                    e.g. ``fields={"arm":
                                                                    "eval.model"}``
outcome      ``scores[0]``: the sample's first scorer              rules below
model        ``eval.model``                                        metadata.model
harness      ``eval.solver``, else the plan's solver names         metadata.harness
             joined by `` > `` (``"system_message > generate"``)
cost_usd     ``model_usage.*.total_cost`` (sum over models)        only when every model has it
latency_s    ``total_time``                                        wall-clock seconds
steps        ``messages``: each assistant ``tool_calls`` entry     observation: the ``tool``
             is a step (``function``, ``arguments``)               message with its id
============ ===================================================== ==========================

A ``fields`` entry is a dotted path looked up in the sample first
(``"metadata.instance_id"``, ``"uuid"``), then, if the sample has no such
first key, in the log (``"eval.model"``, ``"eval.metadata.arm"``,
``"eval.task"``); several paths joined by ``:`` are looked up each and joined
(``fields={"run_id": "eval.task:id:epoch"}``). A default path the log lacks
leaves an optional field out; a path you gave that a sample lacks rejects the
sample, except for the required run_id, task_id, seed and outcome: those the
sample lacks are named in ``Item.missing``, for the loader to fill from the
file path or an outcomes table (``fields={"path": ...}``, ``outcomes=``), and
the sample is rejected with that reason when nothing fills them. ``fields={"outcome": name}`` picks the scorer: a scorer name
(``"match"``, also ``"scores.match"``), ``"scores[N]"`` for the N-th, or
``"scorer.key"`` for one entry of a dict-valued score; otherwise the name is
read as a path (``"metadata.passed"``) and converted the same way.

Steps
    Every ``tool_calls`` entry of an assistant message, in order. ``args`` is
    the call's ``arguments`` object (JSON text is parsed; ``{}`` for none).
    Its observation is the ``tool`` message whose ``tool_call_id`` matches
    (the earliest unanswered call with that id): ``{"status", "content",
    "error", "error_type"}``, with ``status`` ``"error"`` when the message
    has an ``error`` (its ``message`` becomes the step's error, its ``type``
    is kept as ``error_type``; legacy ``tool_error`` text counts too), else
    ``"ok"``. A call never answered (e.g. the sample hit a limit) is kept,
    with a null observation. ``started_at`` / ``ended_at`` come from the
    matching ``ToolEvent`` (``timestamp`` / ``completed``) when the sample has
    events. Step ``metadata`` keeps ``tool_call_id`` (and ``parse_error``).
    Messages whose ``source`` is ``"input"`` (the dataset's own messages,
    not generated in this run) are skipped.
Outcome
    The chosen score's ``value``, converted as Inspect's
    ``value_to_float`` reads it: ``"C"`` (correct) -> ``true``, ``"I"``
    (incorrect) -> ``false``, ``"N"`` (no answer) -> ``false``, ``"P"``
    (partial) -> ``0.5``; ``"yes"``/``"true"`` -> ``true``,
    ``"no"``/``"false"`` -> ``false`` (any case); a bool stays a bool; an
    integer, float or numeric text -> a float. So a C/I scorer gives a
    boolean outcome; one that also gives ``"P"`` mixes true/false with 0.5,
    which loads as floats (1, 0, 0.5) with an ``agentab.TraceWarning``.
    Absent (``Item.missing``; the reason quotes the sample's error): no
    scores at all (e.g. a sample that errored before scoring), or ``NaN``
    (``Score.unscored``). Rejected: an unknown scorer among the sample's
    scorers, infinite values, other text, lists, and dicts (pick a key with
    ``"scorer.key"``).
Tokens
    Counted per model call: ``tokens_in`` = ``total_tokens -
    output_tokens`` (every prompt token, cached or not: Inspect's
    ``input_tokens`` excludes cache reads and writes since its February 2026
    change (PR #3341) and included OpenAI cache reads before, while
    ``total_tokens`` means the same in both),
    or ``input_tokens + input_tokens_cache_read + input_tokens_cache_write``
    when ``total_tokens`` is missing; ``tokens_out`` = ``output_tokens``
    (reasoning included). When every agent ``ModelEvent`` in the sample's
    events has ``output.usage``, each call's tokens go to the first step its
    output message requested (the other steps of that call have no counts
    of their own, unknown, and ``metadata.tokens_with_step`` naming that
    first step); a call that requested no tool (the final answer) is added
    to the next step, or to the last step when none follows. Model calls
    made by scorers (inside a ``scorer``/``scorers`` span, or a scorer
    ``step``) are not counted, nor failed or unfinished calls that carry no
    usage. Without such events, the sample's ``model_usage`` (summed over
    models, scorer calls included: Inspect does not separate them there)
    goes on the first step, the others marked as counted there. Either way
    the run's total is right. With the events, a step's ``tokens_cached`` /
    ``tokens_reasoning`` are the ``input_tokens_cache_read`` /
    ``reasoning_tokens`` of the calls counted there (unknown when one lacks
    them; reasoning above ``output_tokens`` is not a part of it: unknown),
    the steps of one model call share a ``parallel`` group, and the run's
    ``tokens_in`` / ``tokens_out`` / ``tokens_cached`` / ``tokens_reasoning``
    are the totals over every agent call. A sample without tool calls has no
    steps: its ``model_usage`` totals are the run's (cached and reasoning
    when every model reports them; ``metadata.model_usage`` keeps the
    detail); no usage at all leaves the tokens unknown, never 0.
Attachments
    Inspect stores long or repeated text once in the sample's
    ``attachments`` map (legacy logs: ``transcript.content``) and writes
    ``attachment://<hash>`` in its place (legacy: ``tc://<hash>``). Every such
    string in tool-call arguments and tool messages (content and error) is
    replaced by its text; an unknown hash is kept as it is, as Inspect does.
Metadata
    ``model``, ``harness``, ``task`` (eval.task), ``eval_id``, ``sample_id``,
    ``epoch``, ``sample_uuid``, ``scorer`` (the one chosen), ``score`` (its
    raw value), ``scores`` (every scorer's raw value; NaN as null),
    ``model_usage``, ``error`` (the sample's error message) and ``limit``
    (the limit that stopped it), when present.

Bad input
    A rejection names the file (for ``.eval``, the member:
    ``"log.eval:samples/3_epoch_1.json"``), the sample and epoch, and the
    field (``"messages[4].tool_call_id"``): a sample member that is not JSON
    or not an object, a tool result with no matching call (or answering one
    twice), a call without a function name, arguments that are not an
    object, a missing or ill-typed id/epoch, no readable score. An archive
    without ``header.json`` and ``_journal/start.json`` (or with a header
    that is not JSON) rejects each of its samples. A file that is not a zip
    archive at all is a ``TraceError`` in both modes; a ``.json`` log that is
    not JSON is one rejection for the whole file. ``line`` is 1 for a
    ``.eval`` member, and the sample's position in ``samples`` (1-based) for a
    ``.json`` log.
Hostile archives
    A member is read by its name through :mod:`zipfile`, never extracted,
    so a name like ``samples/../../x.json`` is only a name; names (and error
    text quoting them) are shown with control characters and terminal
    escapes escaped (``samples/\\x1b[2J...``). Each member is inflated with a
    cap, and the archive's members share one more: together no more than
    :mod:`agentab.formats.files` allows one compressed file of the archive's
    size. A member over either cap, or corrupt (bad CRC, bad deflate, bzip2
    or LZMA data, encrypted, an unknown method), or whose name holds a NUL
    byte, is one rejection; the other samples load.

This module finds the logs and their samples (archives, JSON logs, objects);
a sample becomes a record in :mod:`._inspect_sample`, its run-level fields
and outcome in :mod:`._inspect_fields`.
"""

from __future__ import annotations

import lzma
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.errors import TraceError
from agentab.formats._base import FieldMap, Format, Item
from agentab.formats._inspect_fields import DEFAULTS, Header
from agentab.formats._inspect_sample import sample_item
from agentab.formats.files import (
    Budget,
    InflateLimit,
    decode_json,
    open_trace_file,
    printable,
    read_member,
)

__all__ = ["FORMAT"]

_HEADER = "header.json"
_START = "_journal/start.json"
_SAMPLES = "samples/"


#: What reading one archive member may raise: corrupt data (deflate: ``zlib.error``, bzip2: ``OSError``, LZMA:
#: ``lzma.LZMAError``), an encrypted member (``RuntimeError``), an unsupported compression method
#: (``NotImplementedError``), a bad header field (``ValueError``).
_MEMBER_ERRORS = (zipfile.BadZipFile, OSError, EOFError, zlib.error, lzma.LZMAError, RuntimeError,
                  NotImplementedError, ValueError, KeyError)
#: What opening an archive may raise: a corrupt central directory, an unsupported zip version
#: (``NotImplementedError``), a member name flagged UTF-8 that is not (``UnicodeDecodeError``, a ValueError).
_ARCHIVE_ERRORS = (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, ValueError)

_EVAL_KEY = re.compile(rb'"eval"\s*:\s*\{')


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
def _sniff(head: bytes, name: str) -> bool:
    """A zip archive named ``.eval`` (or holding Inspect's members), or a JSON object with an ``eval`` object."""
    if head.startswith(b"PK\x03\x04"):
        return name.lower().endswith(".eval") or any(
            key in head for key in (b"header.json", b"_journal/", b"samples/"))
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{") or not _EVAL_KEY.search(text):
        return False
    return b'"task"' in text and (b'"samples"' in text or (b'"version"' in text and b'"status"' in text))


# --------------------------------------------------------------------------- #
# Reading files and objects
# --------------------------------------------------------------------------- #
def _read_file(path: Path, fields: FieldMap) -> Iterator[Item]:
    """The samples of an Inspect log file: a ``.eval`` zip archive or a ``.json`` log."""
    fields = {**DEFAULTS, **fields}
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PK\x03\x04":
        yield from _read_archive(path, fields)
    else:
        yield from _read_json_log(path, fields)


def _read_archive(path: Path, fields: FieldMap) -> Iterator[Item]:
    """The samples of a ``.eval`` archive. Members are read by name through :mod:`zipfile`, never as paths;
    they share one inflation :class:`~agentab.formats.files.Budget`; errors show their names escaped."""
    name = printable(str(path))
    try:
        archive = zipfile.ZipFile(path)
        budget = Budget(os.fstat(archive.fp.fileno()).st_size)
    except _ARCHIVE_ERRORS as err:
        raise TraceError(f"not a readable Inspect .eval archive (zip): {printable(str(err))}", source=name) from err
    with archive:
        members = list(dict.fromkeys(archive.namelist()))  # a re-logged sample: its name once, its last copy read
        samples = sorted((m for m in members if m.startswith(_SAMPLES) and m.endswith(".json")), key=_member_order)
        header, problem = _archive_header(archive, members, budget)
        if header is None:
            field, reason = problem
            if not samples:
                yield Item(line=1, field=field, reason=reason)
            for member in samples:
                yield Item(line=1, field=field, reason=reason, source=f"{name}:{printable(member)}")
            return
        yield from _nul_named(archive, name)
        for member in samples:
            source = f"{name}:{printable(member)}"
            try:
                data = read_member(archive, member, source, budget)
            except InflateLimit as err:
                yield Item(line=1, reason=err.reason, source=source)
                continue
            except _MEMBER_ERRORS as err:  # corrupt, encrypted, or an unsupported compression method
                yield Item(line=1, reason=f"cannot read this archive member: {printable(str(err))}", source=source)
                continue
            sample, error = decode_json(data)
            if error is not None:
                yield Item(line=error[0], reason=f"malformed JSON: {error[1]}", source=source)
                continue
            yield sample_item(sample, header, fields, 1, source)


def _nul_named(archive: zipfile.ZipFile, name: str) -> Iterator[Item]:
    """A rejection for each sample member whose name holds a NUL byte (:mod:`zipfile` cuts the name there, so
    it would be dropped unseen, or taken for the member it is cut to)."""
    for info in archive.infolist():
        original = info.orig_filename
        if original != info.filename and original.startswith(_SAMPLES) and original.endswith(".json"):
            yield Item(line=1, field="name", source=f"{name}:{printable(original)}",
                       reason="the member's name holds a NUL byte: not a sample Inspect wrote, left out")


def _archive_header(archive: zipfile.ZipFile, members: list[str],
                    budget: Budget) -> tuple[Header | None, tuple[str, str]]:
    """The log header (``header.json``, else ``_journal/start.json``), or why there is none."""
    member = _HEADER if _HEADER in members else _START if _START in members else None
    if member is None:
        return None, (_HEADER, ("the archive has no header.json (nor _journal/start.json): "
                                "not an Inspect .eval log, or one whose writing never started"))
    try:
        doc, error = decode_json(read_member(archive, member, f"{archive.filename}:{member}", budget))
    except InflateLimit as err:
        return None, (member, f"cannot read {member}: {err.reason}")
    except _MEMBER_ERRORS as err:
        return None, (member, f"cannot read {member}: {printable(str(err))}")
    if error is not None:
        return None, (member, f"{member} is not JSON (line {error[0]}: {error[1]})")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        return None, (f"{member}.eval", f"{member} has no `eval` object: not an Inspect log header")
    return Header(doc), ("", "")


def _member_order(member: str) -> tuple[int, str]:
    """Inspect's sample order: by epoch, then id (numbers by value) -- from ``samples/{id}_epoch_{n}.json``."""
    stem = member[len(_SAMPLES):-len(".json")]
    sample_id, sep, epoch = stem.rpartition("_epoch_")
    if not sep or not epoch.isdigit():
        return (0, stem)
    return (int(epoch), sample_id.zfill(20) if sample_id.isdigit() else sample_id)


def _read_json_log(path: Path, fields: FieldMap) -> Iterator[Item]:
    with open_trace_file(path) as fh:
        data = fh.read()
    try:  # the header whole, each sample decoded only when converted: a big log is never all in memory as objects
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        raw_samples = top.pop("samples", None)
        doc = {key: msgspec.json.decode(value) for key, value in top.items()}
        samples = None if raw_samples is None else msgspec.json.decode(raw_samples, type=list[msgspec.Raw] | None)
    except (msgspec.DecodeError, msgspec.ValidationError):
        doc, error = decode_json(data)  # NaN or Infinity (Inspect writes them), or not a log at all
        if error is not None:
            yield Item(line=error[0], reason=f"malformed JSON: {error[1]}; the whole Inspect log was left out")
            return
        yield from _read_log(doc, fields, None, 0)
        return
    if samples is not None:
        doc["samples"] = samples
    yield from _read_log(doc, fields, None, 0)


def _read_log(doc: Any, fields: FieldMap, source: str | None, position: int) -> Iterator[Item]:
    """The samples of one EvalLog document; ``position`` counts samples before it (their 1-based line)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        yield Item(line=position + 1, field="eval", source=source,
                   reason="not an Inspect eval log: expected a JSON object with an `eval` object and `samples`")
        return
    header = Header(doc)
    samples = doc.get("samples")
    if samples is None:
        return  # a header-only log: no samples were logged
    if not isinstance(samples, list):
        yield Item(line=position + 1, field="samples", source=source,
                   reason=f"`samples` must be a list of samples, got {type(samples).__name__}")
        return
    for offset, sample in enumerate(samples, start=1):
        if isinstance(sample, msgspec.Raw):
            sample = msgspec.json.decode(sample)
        yield sample_item(sample, header, fields, position + offset, source)


def _read_objects(objects: Sequence[Any], name: str, fields: FieldMap) -> Iterator[Item]:
    """In-memory EvalLog dicts (e.g. ``log.model_dump()``); ``line`` counts samples across them (1-based)."""
    fields = {**DEFAULTS, **fields}
    position = 0
    for obj in objects:
        if isinstance(obj, Mapping) and not isinstance(obj, dict):
            obj = dict(obj)
        for item in _read_log(obj, fields, None, position):
            position = item.line
            yield item


FORMAT = Format(
    name="inspect",
    summary="Inspect AI eval logs: .eval zip archives (header.json + samples/*_epoch_*.json) or .json EvalLog files",
    example='{"version": 2, "status": "success", "eval": {"eval_id": "e1", "task": "popularity", '
            '"model": "openai/gpt-4o", "solver": "react"}, "samples": [{"id": 1, "epoch": 1, '
            '"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "function": "bash", '
            '"arguments": {"cmd": "ls"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}], '
            '"scores": {"match": {"value": "C"}}}]}',
    fields=DEFAULTS,
    sniff=_sniff,
    read_file=_read_file,
    read_objects=_read_objects,
    suffixes=(".eval",),
)
