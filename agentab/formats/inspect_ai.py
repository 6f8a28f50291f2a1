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
sample. ``fields={"outcome": name}`` picks the scorer: a scorer name
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
    Rejected: no scores at all (e.g. a sample that errored before scoring;
    the reason quotes the sample's error), an unknown scorer, ``NaN``
    (``Score.unscored``) or infinite values, other text, lists, and dicts
    (pick a key with ``"scorer.key"``).
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
    output message requested (the other steps of that call get 0); a call
    that requested no tool (the final answer) is added to the next step, or
    to the last step when none follows. Model calls made by scorers (inside
    a ``scorer``/``scorers`` span, or a scorer ``step``) are not counted, nor
    failed or unfinished calls that carry no usage.
    Without such events, the sample's ``model_usage`` (summed over models,
    scorer calls included: Inspect does not separate them there) goes on the
    first step, 0 on the others. Either way the run's total is right. A
    sample without tool calls has no steps and so no tokens in the tables
    (``metadata.model_usage`` keeps them); no usage at all leaves step tokens
    unknown.
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
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.errors import TraceError
from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap, Format, Item
from agentab.formats._base import Reject as _Reject
from agentab.formats._base import lookup as _path

__all__ = ["FORMAT"]

_ATTACHMENT = "attachment://"
_LEGACY_ATTACHMENT = "tc://"
_HEADER = "header.json"
_START = "_journal/start.json"
_SAMPLES = "samples/"

#: Default run-level field mapping (see the module docstring).
_DEFAULTS: dict[str, str] = {
    "run_id": "eval.eval_id:id:epoch",
    "task_id": "id",
    "seed": "epoch",
    "model": "eval.model",
    "harness": "eval.solver",
    "outcome": "scores[0]",
    "cost_usd": "model_usage.*.total_cost",
    "latency_s": "total_time",
}

#: Score values as Inspect's value_to_float reads them (CORRECT, INCORRECT, NOANSWER, PARTIAL).
_SCORE_TEXT: dict[str, bool | float] = {"C": True, "I": False, "N": False, "P": 0.5}
_SCORE_WORDS: dict[str, bool] = {"yes": True, "true": True, "no": False, "false": False}
_NTH_SCORE = re.compile(r"scores\[(\d+)\]")
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
    fields = {**_DEFAULTS, **fields}
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PK\x03\x04":
        yield from _read_archive(path, fields)
    else:
        yield from _read_json_log(path, fields)


def _read_archive(path: Path, fields: FieldMap) -> Iterator[Item]:
    name = str(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise TraceError(f"not a readable Inspect .eval archive (zip): {err}", source=name) from err
    with archive:
        members = list(dict.fromkeys(archive.namelist()))  # a re-logged sample: its name once, its last copy read
        samples = sorted((m for m in members if m.startswith(_SAMPLES) and m.endswith(".json")), key=_member_order)
        header, problem = _archive_header(archive, members)
        if header is None:
            field, reason = problem
            if not samples:
                yield Item(line=1, field=field, reason=reason)
            for member in samples:
                yield Item(line=1, field=field, reason=reason, source=f"{name}:{member}")
            return
        for member in samples:
            source = f"{name}:{member}"
            try:
                data = archive.read(member)
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as err:
                yield Item(line=1, reason=f"cannot read this archive member: {err}", source=source)
                continue
            sample, error = _decode(data)
            if error is not None:
                yield Item(line=error[0], reason=f"malformed JSON: {error[1]}", source=source)
                continue
            yield _item(sample, header, fields, 1, source)


def _archive_header(archive: zipfile.ZipFile, members: list[str]) -> tuple[_Header | None, tuple[str, str]]:
    """The log header (``header.json``, else ``_journal/start.json``), or why there is none."""
    member = _HEADER if _HEADER in members else _START if _START in members else None
    if member is None:
        return None, (_HEADER, ("the archive has no header.json (nor _journal/start.json): "
                                "not an Inspect .eval log, or one whose writing never started"))
    try:
        doc, error = _decode(archive.read(member))
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as err:
        return None, (member, f"cannot read {member}: {err}")
    if error is not None:
        return None, (member, f"{member} is not JSON (line {error[0]}: {error[1]})")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        return None, (f"{member}.eval", f"{member} has no `eval` object: not an Inspect log header")
    return _Header(doc), ("", "")


def _member_order(member: str) -> tuple[int, str]:
    """Inspect's sample order: by epoch, then id (numbers by value) -- from ``samples/{id}_epoch_{n}.json``."""
    stem = member[len(_SAMPLES):-len(".json")]
    sample_id, sep, epoch = stem.rpartition("_epoch_")
    if not sep or not epoch.isdigit():
        return (0, stem)
    return (int(epoch), sample_id.zfill(20) if sample_id.isdigit() else sample_id)


def _read_json_log(path: Path, fields: FieldMap) -> Iterator[Item]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = fh.read()
    try:  # the header whole, each sample decoded only when converted: a big log is never all in memory as objects
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        raw_samples = top.pop("samples", None)
        doc = {key: msgspec.json.decode(value) for key, value in top.items()}
        samples = None if raw_samples is None else msgspec.json.decode(raw_samples, type=list[msgspec.Raw] | None)
    except (msgspec.DecodeError, msgspec.ValidationError):
        doc, error = _decode(data)  # NaN or Infinity (Inspect writes them), or not a log at all
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
    header = _Header(doc)
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
        yield _item(sample, header, fields, position + offset, source)


def _read_objects(objects: Sequence[Any], name: str, fields: FieldMap) -> Iterator[Item]:
    """In-memory EvalLog dicts (e.g. ``log.model_dump()``); ``line`` counts samples across them (1-based)."""
    fields = {**_DEFAULTS, **fields}
    position = 0
    for obj in objects:
        if isinstance(obj, Mapping) and not isinstance(obj, dict):
            obj = dict(obj)
        for item in _read_log(obj, fields, None, position):
            position = item.line
            yield item


def _decode(data: bytes) -> tuple[Any, tuple[int, str] | None]:
    """JSON bytes -> (value, None), or (None, (line, message)). NaN and Infinity (Inspect writes them) are read."""
    try:
        return msgspec.json.decode(data), None
    except msgspec.DecodeError:
        pass
    try:
        return json.loads(data), None
    except UnicodeDecodeError as err:
        return None, (1, f"not UTF-8 text ({err.reason} at byte {err.start})")
    except (json.JSONDecodeError, RecursionError) as err:
        if isinstance(err, json.JSONDecodeError):
            return None, (err.lineno, f"{err.msg} (column {err.colno})")
        return None, (1, "nested too deeply")


# --------------------------------------------------------------------------- #
# One sample -> one record
# --------------------------------------------------------------------------- #
class _Header:
    """What every sample of one log shares: the log document and the defaults derived from it."""

    __slots__ = ("doc", "eval", "first_scorer", "harness", "key")

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc
        spec = doc.get("eval") or {}
        self.eval = spec
        self.key = next((spec[k] for k in ("eval_id", "task_id", "run_id")
                         if isinstance(spec.get(k), (str, int)) and spec.get(k) != ""), _MISSING)
        harness = spec.get("solver")
        if not isinstance(harness, str) or not harness:
            plan = doc.get("plan")
            steps = plan.get("steps") if isinstance(plan, dict) else None
            names = [s.get("solver") for s in steps or () if isinstance(s, dict)]
            harness = " > ".join(n for n in names if isinstance(n, str) and n) or None
        self.harness = harness
        results = doc.get("results")
        scores = results.get("scores") if isinstance(results, dict) else None
        first = scores[0] if isinstance(scores, list) and scores and isinstance(scores[0], dict) else {}
        self.first_scorer = first.get("name") if isinstance(first.get("name"), str) else None


def _label(sample: Any) -> str:
    if not isinstance(sample, dict):
        return "sample ?"
    return f"sample {sample.get('id', '?')!r} epoch {sample.get('epoch', '?')}"


def _item(sample: Any, header: _Header, fields: FieldMap, line: int, source: str | None) -> Item:
    try:
        return Item(line=line, record=_convert(sample, header, fields), source=source)
    except _Reject as bad:
        return Item(line=line, field=bad.field, reason=f"{_label(sample)}: {bad.reason}", source=source)


def _convert(sample: Any, header: _Header, fields: FieldMap) -> dict[str, Any]:
    if not isinstance(sample, dict):
        raise _Reject(None, f"a sample must be a JSON object, got {type(sample).__name__}")
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or sample_id == "":
        raise _Reject("id", f"the sample id must be text or an integer, got {sample_id!r}")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise _Reject("epoch", f"the epoch must be an integer, got {epoch!r}")
    transcript = sample.get("transcript") if isinstance(sample.get("transcript"), dict) else {}
    attachments = sample.get("attachments") or transcript.get("content") or {}
    events = sample.get("events") or transcript.get("events") or []
    if not isinstance(attachments, dict):
        raise _Reject("attachments", f"expected an object {{hash: text}}, got {type(attachments).__name__}")
    resolve = _resolver(attachments)

    steps, call_ids = _steps(sample.get("messages"), resolve)
    calls = None
    if steps and isinstance(events, list) and events:
        calls = _events(steps, call_ids, events)
    if steps:
        _tokens(steps, call_ids, calls, sample.get("model_usage"))

    scorer, raw, outcome = _outcome(sample, header, fields)
    record: dict[str, Any] = {
        "run_id": _ident(sample, header, fields, "run_id"),
        "task_id": _ident(sample, header, fields, "task_id"),
        "seed": _seed(sample, header, fields),
        "steps": steps,
        "outcome": outcome,
    }
    arm = _text_field(sample, header, fields, "arm")
    if arm is not None:
        record["arm"] = arm
    for name in ("cost_usd", "latency_s"):
        value = _number_field(sample, header, fields, name)
        if value is not None:
            record[name] = value

    metadata: dict[str, Any] = {}
    for name in ("model", "harness"):
        value = _text_field(sample, header, fields, name)
        if value is not None:
            metadata[name] = value
    spec = header.eval
    for key, value in (("task", spec.get("task")), ("eval_id", spec.get("eval_id")),
                       ("sample_id", sample_id), ("epoch", epoch), ("sample_uuid", sample.get("uuid"))):
        if value not in (None, ""):
            metadata[key] = value
    metadata["scorer"] = scorer
    metadata["score"] = _plain(raw)
    scores = _scores(sample, header)
    if scores:
        metadata["scores"] = {name: _plain(score.get("value") if isinstance(score, dict) else score)
                              for name, score in scores.items()}
    usage = sample.get("model_usage")
    if isinstance(usage, dict) and usage:
        metadata["model_usage"] = _plain(usage)
    error = sample.get("error")
    if isinstance(error, dict) and error.get("message"):
        metadata["error"] = error["message"]
    elif isinstance(error, str) and error:
        metadata["error"] = error
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        metadata["limit"] = limit["type"]
    record["metadata"] = metadata
    return record


def _plain(value: Any) -> Any:
    """``value`` with non-finite floats as None (the record stores metadata as JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ----- attachments ---------------------------------------------------------- #
def _resolver(attachments: Mapping[str, Any]):
    """A function replacing ``attachment://<hash>`` (and legacy ``tc://<hash>``) strings, deeply."""
    if not attachments:
        return lambda value: value

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(_ATTACHMENT):
                return attachments.get(value[len(_ATTACHMENT):], value)
            if value.startswith(_LEGACY_ATTACHMENT):
                return attachments.get(value[len(_LEGACY_ATTACHMENT):], value)
            return value
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [resolve(item) for item in value]
        return value

    return resolve


# ----- steps ---------------------------------------------------------------- #
def _steps(messages: Any, resolve) -> tuple[list[dict[str, Any]], list[Any]]:
    """Tool calls of the assistant messages, each with the tool message answering it; and their call ids."""
    steps: list[dict[str, Any]] = []
    ids: list[Any] = []
    if messages is None:
        return steps, ids
    if not isinstance(messages, list):
        raise _Reject("messages", f"expected a list of chat messages, got {type(messages).__name__}")
    pending: dict[Any, list[int]] = {}  # tool call id -> unanswered steps with that id, in order
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _Reject(f"messages[{i}]", f"a chat message must be an object, got {type(message).__name__}")
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls")
            if not calls or message.get("source") == "input":  # input: the dataset's own, not done in this run
                continue
            if not isinstance(calls, list):
                raise _Reject(f"messages[{i}].tool_calls", f"expected a list, got {type(calls).__name__}")
            for j, call in enumerate(calls):
                step, call_id = _call_step(call, i, j, len(steps), resolve)
                pending.setdefault(call_id, []).append(len(steps))
                steps.append(step)
                ids.append(call_id)
        elif role == "tool" and message.get("source") != "input":
            call_id = message.get("tool_call_id")
            waiting = pending.get(call_id)
            if not waiting:
                again = " (already answered)" if waiting is not None else ""
                raise _Reject(f"messages[{i}].tool_call_id",
                              f"tool result for call {call_id!r} has no matching tool call before it{again}")
            steps[waiting.pop(0)]["observation"] = _observation(message, resolve)
    return steps, ids


def _call_step(call: Any, i: int, j: int, index: int, resolve) -> tuple[dict[str, Any], Any]:
    if not isinstance(call, dict):
        raise _Reject(f"messages[{i}].tool_calls[{j}]", f"a tool call must be an object, got {type(call).__name__}")
    function = call.get("function")
    if not isinstance(function, str) or not function:
        raise _Reject(f"messages[{i}].tool_calls[{j}].function",
                      f"the tool call has no function name (got {function!r})")
    args = call.get("arguments")
    if not isinstance(args, dict):
        args = _arguments(args, f"messages[{i}].tool_calls[{j}].arguments")
    call_id = call.get("id")
    meta = {"tool_call_id": call_id}
    if call.get("parse_error"):
        meta["parse_error"] = call["parse_error"]
    return {"index": index, "tool": function, "args": resolve(args), "metadata": meta}, call_id


def _arguments(args: Any, field: str) -> dict[str, Any]:
    """Arguments that are not an object: none (``{}``), or JSON text of an object (a provider's raw form)."""
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as err:
            raise _Reject(field, f"arguments are not JSON: {err.msg}") from None
    if not isinstance(args, dict):
        raise _Reject(field, f"arguments must be an object, got {type(args).__name__}")
    return args


def _observation(message: Mapping[str, Any], resolve) -> dict[str, Any]:
    error = message.get("error")
    if not error and message.get("tool_error"):  # logs before ToolCallError
        error = {"type": "unknown", "message": message["tool_error"]}
    observation: dict[str, Any] = {"status": "error" if error else "ok", "content": resolve(message.get("content"))}
    if error:
        if isinstance(error, dict):
            observation["error"] = resolve(error.get("message")) or error.get("type") or "error"
            if error.get("type") is not None:
                observation["error_type"] = error["type"]
        else:
            observation["error"] = resolve(error)
    return observation


# ----- tokens --------------------------------------------------------------- #
def _usage(usage: Any, field: str) -> tuple[int, int] | None:
    """(tokens_in, tokens_out) of one ModelUsage: every prompt token, cached or not, and the output."""
    if not isinstance(usage, dict):
        return None
    out, total = usage.get("output_tokens") or 0, usage.get("total_tokens") or 0
    if type(out) is int and type(total) is int and total >= out >= 0 and total > 0:  # the common case
        return total - out, out
    values = {}
    for key in ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_read",
                "input_tokens_cache_write"):
        value = usage.get(key)
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _Reject(f"{field}.{key}", f"token count {key} must be a number, got {value!r}")
        values[key] = int(value)
    out, total = values["output_tokens"], values["total_tokens"]
    if total > 0 and total >= out:
        return total - out, out
    return values["input_tokens"] + values["input_tokens_cache_read"] + values["input_tokens_cache_write"], out


def _events(steps: list[dict[str, Any]], call_ids: list[Any], events: list[Any]) -> list[tuple[int, int, list]] | None:
    """One pass over the events: step times from ToolEvents; each agent model call's tokens and tool-call ids.

    The calls come back as ``(tokens_in, tokens_out, ids)``, or None unless
    every agent call has usage. Calls made inside a scorer span (or an old
    scorer ``step``) are not the agent's.
    """
    waiting: dict[Any, list[int]] = {}
    for index, call_id in enumerate(call_ids):
        waiting.setdefault(call_id, []).append(index)
    calls: list[tuple[int, int, list]] | None = []
    scorer_spans: set[Any] = set()
    in_scorer_step = 0
    for number, event in enumerate(events):
        try:
            kind = event.get("event")
        except AttributeError:  # not an object: not an event this reader uses
            continue
        if kind == "tool":
            queue = waiting.get(event.get("id"))
            if queue:
                step = steps[queue.pop(0)]
                if isinstance(event.get("timestamp"), str):
                    step["started_at"] = event["timestamp"]
                    if isinstance(event.get("completed"), str):
                        step["ended_at"] = event["completed"]
        elif kind == "model":
            if calls is None or in_scorer_step or (scorer_spans and event.get("span_id") in scorer_spans):
                continue
            output = event.get("output")
            if not isinstance(output, dict):
                calls = None
                continue
            counted = _usage(output.get("usage"), f"events[{number}].output.usage")
            if counted is None:
                if event.get("error") or event.get("pending"):
                    continue  # a failed (or unfinished) call without usage: no tokens to count
                calls = None
                continue
            ids = []
            for choice in output.get("choices") or ():
                message = choice.get("message") if isinstance(choice, dict) else None
                for call in (message.get("tool_calls") if isinstance(message, dict) else None) or ():
                    if isinstance(call, dict):
                        ids.append(call.get("id"))
            calls.append((counted[0], counted[1], ids))
        elif kind == "span_begin":
            if (event.get("type") in ("scorer", "scorers") or event.get("name") == "scorers"
                    or (scorer_spans and event.get("parent_id") in scorer_spans)):
                scorer_spans.add(event.get("id"))
        elif kind == "step" and event.get("type") == "scorer":  # logs before spans
            in_scorer_step = max(0, in_scorer_step + (1 if event.get("action") == "begin" else -1))
    return calls or None


def _tokens(steps: list[dict[str, Any]], call_ids: list[Any], calls: list[tuple[int, int, list]] | None,
            model_usage: Any) -> None:
    """Step tokens: per model call from the events, else the sample's model_usage on the first step."""
    if calls is not None:
        for step in steps:
            step["tokens_in"] = step["tokens_out"] = 0
        by_id: dict[Any, list[int]] = {}
        for index, call_id in enumerate(call_ids):
            by_id.setdefault(call_id, []).append(index)
        carry_in = carry_out = 0
        for tokens_in, tokens_out, ids in calls:
            produced = [by_id[i].pop(0) for i in ids if by_id.get(i)]
            if produced:
                step = steps[min(produced)]
                step["tokens_in"] += tokens_in + carry_in
                step["tokens_out"] += tokens_out + carry_out
                carry_in = carry_out = 0
            else:  # no tool requested (e.g. the final answer): onto the next step
                carry_in, carry_out = carry_in + tokens_in, carry_out + tokens_out
        steps[-1]["tokens_in"] += carry_in
        steps[-1]["tokens_out"] += carry_out
        return
    if not isinstance(model_usage, dict) or not model_usage:
        return  # unknown
    total_in = total_out = 0
    for model, usage in model_usage.items():
        counted = _usage(usage, f"model_usage.{model}")
        if counted is None:
            raise _Reject(f"model_usage.{model}", "each model's usage must be an object")
        total_in, total_out = total_in + counted[0], total_out + counted[1]
    for step in steps:
        step["tokens_in"] = step["tokens_out"] = 0
    steps[0]["tokens_in"], steps[0]["tokens_out"] = total_in, total_out


# ----- run-level fields ----------------------------------------------------- #
def _lookup(sample: Mapping[str, Any], header: _Header, path: str) -> Any:
    """A dotted path in the sample, or (if the sample has no such first key) in the log; the defaults' fallbacks."""
    if "." not in path:
        return sample[path] if path in sample else header.doc.get(path)
    if path == "eval.eval_id":
        return None if header.key is _MISSING else header.key
    if path == "eval.solver":
        return header.harness
    first = path.split(".", 1)[0]
    value = _path(sample if first in sample else header.doc, path)
    return None if value is _MISSING else value


def _given(fields: FieldMap, name: str) -> tuple[str | None, bool]:
    """The path for ``name`` and whether it is the default (a default that is missing is not an error)."""
    path = fields.get(name)
    return path, path == _DEFAULTS.get(name)


def _ident(sample: Mapping[str, Any], header: _Header, fields: FieldMap, name: str) -> str | int:
    path, _ = _given(fields, name)
    parts = []
    for part in (path or _DEFAULTS[name]).split(":"):
        value = _lookup(sample, header, part)
        if value is None or value == "":
            raise _Reject(part, f"{name}: no `{part}` in the sample or the log")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _Reject(part, f"{name}: `{part}` must be text or an integer, got {value!r}")
        parts.append(value)
    return parts[0] if len(parts) == 1 else ":".join(str(p) for p in parts)


def _seed(sample: Mapping[str, Any], header: _Header, fields: FieldMap) -> int:
    path = fields.get("seed") or _DEFAULTS["seed"]
    value = _lookup(sample, header, path)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Reject(path, f"seed: `{path}` must be an integer, got {value!r}")
    return value


def _text_field(sample: Mapping[str, Any], header: _Header, fields: FieldMap, name: str) -> str | None:
    path, default = _given(fields, name)
    if path is None:
        return None
    value = _lookup(sample, header, path)
    if value is None or value == "":
        if default:
            return None
        raise _Reject(path, f"{name}: no `{path}` in the sample or the log")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise _Reject(path, f"{name}: `{path}` must be text, got {type(value).__name__}")


def _number_field(sample: Mapping[str, Any], header: _Header, fields: FieldMap, name: str) -> float | None:
    path, default = _given(fields, name)
    if path is None:
        return None
    value = _lookup(sample, header, path)
    if isinstance(value, list):  # a `*` path: the sum, when every entry has the number
        if not value or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
            value = None
        else:
            value = sum(value)
        if value is None and not default:
            raise _Reject(path, f"{name}: `{path}` is not a number in every entry")
    if value is None:
        if default:
            return None
        raise _Reject(path, f"{name}: no `{path}` in the sample or the log")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Reject(path, f"{name}: `{path}` must be a number, got {value!r}")
    return float(value)


# ----- outcome -------------------------------------------------------------- #
def _scores(sample: Mapping[str, Any], header: _Header) -> dict[str, Any]:
    scores = sample.get("scores")
    if scores is None and sample.get("score") is not None:  # logs before multiple scorers
        scores = {header.first_scorer or "score": sample["score"]}
    if scores is None:
        return {}
    if not isinstance(scores, dict):
        raise _Reject("scores", f"expected an object {{scorer: score}}, got {type(scores).__name__}")
    return dict(scores)


def _outcome(sample: Mapping[str, Any], header: _Header, fields: FieldMap) -> tuple[str, Any, bool | float]:
    """(scorer, its raw value, the outcome) of the chosen score."""
    spec = fields.get("outcome") or _DEFAULTS["outcome"]
    scores = _scores(sample, header)
    nth = _NTH_SCORE.fullmatch(spec)
    if nth is not None or spec in scores or (spec.startswith("scores.") and spec[7:] in scores):
        if not scores:
            raise _Reject("scores", f"no scores{_why_unscored(sample)}: a run needs an external verdict")
        if nth is not None:
            if int(nth.group(1)) >= len(scores):
                raise _Reject("scores", f"outcome {spec!r}: the sample has {len(scores)} scorer(s): {', '.join(scores)}")
            name = list(scores)[int(nth.group(1))]
        else:
            name = spec if spec in scores else spec[7:]
        score = scores[name]
        if not isinstance(score, dict) or "value" not in score:
            raise _Reject(f"scores.{name}.value", f"scorer {name!r}: the score has no `value`")
        return name, score["value"], _to_outcome(score["value"], name, f"scores.{name}.value")
    for cut in (i for i, ch in enumerate(spec) if ch == "."):  # "scorer.key" of a dict-valued score
        name, key = spec[:cut], spec[cut + 1:]
        score = scores.get(name)
        if isinstance(score, dict) and isinstance(score.get("value"), dict) and key in score["value"]:
            return spec, score["value"][key], _to_outcome(score["value"][key], spec, f"scores.{name}.value.{key}")
    value = _lookup(sample, header, spec)
    if value is not None:
        return spec, value, _to_outcome(value, spec, spec)
    known = f"; its scorers: {', '.join(scores)}" if scores else f"; it has no scores{_why_unscored(sample)}"
    raise _Reject("scores", f"outcome {spec!r}: no such scorer (nor a path in the sample or log){known}")


def _why_unscored(sample: Mapping[str, Any]) -> str:
    error = sample.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str) and message:
        first = message.strip().splitlines()[0] if message.strip() else message
        return f" (the sample ended with an error: {first[:200]})"
    return ""


def _to_outcome(value: Any, scorer: str, field: str) -> bool | float:
    """A score value as the record's outcome (the rules are in the module docstring)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            what = "NaN (unscored)" if math.isnan(value) else str(value)
            raise _Reject(field, f"scorer {scorer!r}: the score is {what}, not a verdict")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in _SCORE_TEXT:
            return _SCORE_TEXT[text]
        if text.lower() in _SCORE_WORDS:
            return _SCORE_WORDS[text.lower()]
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
        raise _Reject(field, f"scorer {scorer!r}: score value {value!r} is not C/I/P/N, yes/no, true/false "
                             "or a number")
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:6]))
        raise _Reject(field, f"scorer {scorer!r}: the score is an object ({keys}); pick one entry with "
                             f"fields={{'outcome': '{scorer}.<key>'}}")
    raise _Reject(field, f"scorer {scorer!r}: score value {value!r} cannot be read as an outcome")


FORMAT = Format(
    name="inspect",
    summary="Inspect AI eval logs: .eval zip archives (header.json + samples/*_epoch_*.json) or .json EvalLog files",
    example='{"version": 2, "status": "success", "eval": {"eval_id": "e1", "task": "popularity", '
            '"model": "openai/gpt-4o", "solver": "react"}, "samples": [{"id": 1, "epoch": 1, '
            '"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "function": "bash", '
            '"arguments": {"cmd": "ls"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}], '
            '"scores": {"match": {"value": "C"}}}]}',
    fields=_DEFAULTS,
    sniff=_sniff,
    read_file=_read_file,
    read_objects=_read_objects,
    suffixes=(".eval",),
)
