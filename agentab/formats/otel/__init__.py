"""OpenTelemetry traces (OTLP/JSON) following the GenAI semantic conventions.

Input
-----
What OpenTelemetry's file and JSON exporters write (the Collector's ``file``
exporter, the OTLP file exporters of the SDKs): one ``{"resourceSpans": [...]}``
batch (an ``ExportTraceServiceRequest``) per line, or one JSON document (a
batch, or a list of batches), optionally gzip-compressed. The OTLP/JSON
encoding is that of the OTLP specification: ``traceId``/``spanId``/
``parentSpanId`` as hex text (base64, what protobuf's own JSON printer gives,
is accepted too and turned into hex), times as unix nanoseconds
(``startTimeUnixNano``/``endTimeUnixNano``, text or number), attributes as
``[{"key": k, "value": {"stringValue" | "intValue" | "doubleValue" |
"boolValue" | "arrayValue" | "kvlistValue" | "bytesValue": ...}}]`` (an
``intValue`` is text; a ``doubleValue`` that is NaN or infinite, written
``"NaN"``/``"Infinity"``, stays text: no record field takes it as a
number), status ``{"code": 2}`` or ``{"code":
"STATUS_CODE_ERROR"}``. Unknown fields (events, links, kind, flags...) are
ignored; the pre-1.0 ``instrumentationLibrarySpans`` is read like
``scopeSpans``. All batches of a file are read before runs are built, so a
run whose spans were exported in several batches (lines) is whole; a run
split across *files* is not (its spans in the other file are orphans).

Spans to runs (GenAI semantic conventions, ``gen_ai.*`` attributes)
-------------------------------------------------------------------
The conventions: https://opentelemetry.io/docs/specs/semconv/gen-ai/ (agent
spans: ``gen-ai-agent-spans``; since 2025 maintained in the
open-telemetry/semantic-conventions-genai repository, ``docs/gen-ai/``). The
deprecated names below are the ones the semantic-conventions registry
(``opentelemetry-semantic-conventions`` 0.66b2,
``opentelemetry.semconv._incubating.attributes.gen_ai_attributes``) lists as
replaced: ``gen_ai.system`` -> ``gen_ai.provider.name``,
``gen_ai.usage.prompt_tokens`` -> ``gen_ai.usage.input_tokens``,
``gen_ai.usage.completion_tokens`` -> ``gen_ai.usage.output_tokens``; plus
the names other instrumentations still emit: OpenLLMetry's older
``llm.usage.prompt_tokens``/``llm.usage.completion_tokens`` and
OpenInference's (Arize, ``spec/semantic_conventions.md``)
``openinference.span.kind`` (``AGENT``/``TOOL``/``LLM``), ``tool.name``,
``input.value``/``output.value``, ``llm.token_count.prompt``/
``llm.token_count.completion`` and ``llm.model_name``.

*Families.* Besides the conventions, the attribute families that frameworks'
instrumentations write are read (``docs/traces/otel.md`` has the table per
family): OpenLLMetry / Traceloop (``traceloop.span.kind`` workflow / agent /
tool, ``traceloop.entity.name``, ``traceloop.entity.input`` /
``traceloop.entity.output``, ``traceloop.workflow.name``, ``llm.request.type``,
``llm.usage.*``), OpenInference / Arize Phoenix (``openinference.span.kind``,
``tool.name``, ``input.value`` with ``input.mime_type``, ``output.value``,
``llm.token_count.*``, ``llm.model_name``, ``agent.name``), and pydantic-ai's
instrumentation version 1 and 2 (``agent run`` / ``running tool`` spans,
``agent_name``, ``tool_arguments``, ``tool_response``). Cached and reasoning
tokens are read by every family's name (:data:`._rules.TOKENS_CACHED`,
:data:`._rules.TOKENS_REASONING`).

*Span kinds.* ``gen_ai.operation.name`` decides (``invoke_agent``;
``execute_tool``; ``chat``/``text_completion``/``generate_content`` are model
calls); without it, ``openinference.span.kind`` (``AGENT``/``TOOL``/``LLM``),
``traceloop.span.kind`` (``workflow`` and ``agent``: agent spans; ``tool``),
``llm.request.type`` (``chat``, ``completion``: model calls); without any,
pydantic-ai's ``agent run`` / ``running tool``, else the span name's first
word (``invoke_agent ...``, ``execute_tool ...``, ``chat ...``; a leading
``gen_ai.`` is ignored). Span kinds and status codes may be numbers or enum
names (``"SPAN_KIND_CLIENT"``, ``"STATUS_CODE_ERROR"``).

*Runs.* Spans are grouped into trees by ``parentSpanId``. A tree's root is a
span without a parent, or an *orphan*: a span whose parent is not in the
file. Every outermost ``invoke_agent`` span of a tree is a run (a trace may
hold several; an ``invoke_agent`` span inside another, a sub-agent, belongs
to the outer run). A tree without one is a run when its root has no parent
(a plain root span, e.g. an agent instrumented by hand); an orphan tree
without one is a rejection ("span tree with no run"). Trees without any GenAI
span (no ``gen_ai.*``/``llm.*``/``openinference.*``/``agentab.*``/``tool.name``
attribute, no GenAI span name, no mapped task id on the root or its
resource), e.g. HTTP spans exported alongside, are not agent runs and are
skipped. A span id seen twice in a trace is read once (the first).

*Steps.* Every tool span in the run's subtree (sub-agents' ones included) is
a step, in order of start time (ties: order in the file):

==================  ==========================================================
step field          from
==================  ==========================================================
``tool``            ``gen_ai.tool.name``, ``tool.name``,
                    ``traceloop.entity.name``, else the span name after
                    ``execute_tool``
``args``            ``gen_ai.tool.call.arguments``, ``tool.arguments``,
                    ``input.value``, ``traceloop.entity.input``,
                    ``tool_arguments``: JSON text of an object (or a kvlist);
                    ``{}`` when none is recorded (the conventions make it
                    opt-in); malformed JSON or a non-object is a rejection,
                    except for ``input.value`` (OpenInference: text/plain,
                    or JSON that is no object, is kept as ``{"input":
                    <value>}``); ``traceloop.entity.input``'s ``{"args": [],
                    "kwargs": {...}}`` gives the kwargs
``observation``     ``{"status": "error"`` if the span status is ERROR else
                    ``"ok"``, ``"result"``: ``gen_ai.tool.call.result`` /
                    ``tool.result`` / ``output.value`` /
                    ``traceloop.entity.output`` / ``tool_response`` (JSON
                    text parsed; other text kept as text) when recorded,
                    ``"error"``: the status message, else ``error.type``,
                    when failed ``}``; ``null`` when the span has no end time
                    (a call never answered: kept as a non-terminated step)
``started_at``,     the span's start and end, ISO-8601 UTC text with
``ended_at``        nanoseconds
``tokens_cached``,  cached and reasoning tokens (below)
``tokens_reasoning``
``metadata``        ``span_id``; ``tool_call_id`` from ``gen_ai.tool.call.id`` or ``tool_call.id``
==================  ==========================================================

A run with no tool span whose model calls record tool calls in their messages
(the model client instrumented alone) takes its steps from those messages
(:mod:`._messages`); one whose tool calls are only in pydantic-ai's version 1
message events is a rejection naming that layout.

*Tokens* (``gen_ai.usage.input_tokens`` / ``gen_ai.usage.prompt_tokens`` /
``llm.usage.prompt_tokens`` / ``llm.token_count.prompt``, and the ``output``
/ ``completion`` counterparts) are counted once, at the lowest level they are
recorded: a span's usage counts only if no span below it (in the run) records
usage of that kind (input and output are decided separately). So when the
agent span carries the total and its ``chat`` children carry their own, the
children's sum is used; the agent span's own only when no child records
usage; a sub-agent's total is likewise replaced by its model calls'. Each
counted usage goes to one step: the innermost step whose span contains it
(a model call made inside a tool, e.g. an agent used as a tool), else the
first step that starts at or after it starts (the model call that chose the
tool), else the last step (the final answer after the last tool call). A
step that receives none (e.g. the second of parallel tool calls) has no
counts of its own (unknown, not 0): ``metadata.tokens_with_step`` names the
step its model call is counted at (the nearest before that received some,
else after), so the steps' known counts sum to the run's total. A run where
no span records usage of a kind has that kind unknown (``null``) on every
step. The run's totals over every model call (those that called no tool
included, and a run without steps) are the record's run-level
``tokens_in``/``tokens_out`` (given on every run whose usage is known).
Cached and reasoning tokens (every family's names) follow the same rule,
each kind on its own, into the steps' and the run's ``tokens_cached`` /
``tokens_reasoning`` (:func:`._rules.store_details`), absent where no span
records them.

*Run-level fields* come from the run span's attributes, else its ancestors'
(nearest first: e.g. an evaluation harness's span around several runs), else
its resource's attributes; ``fields={"task_id": "my.attribute", ...}``
replaces an attribute name (keys: run_id, task_id, seed, arm, model, harness,
outcome, cost_usd, latency_s); ``"span.name"`` reads the run span's name,
``"span.name:<regex>"`` the regex's one capture group (or the group named
after the field) in it (no match: not found), ``"resource:<attribute>"`` the
resource's attribute only (:func:`._rules.source`):

==============  ======================================  =====================
record field    default attribute                       also read (defaults)
==============  ======================================  =====================
``run_id``      ``gen_ai.conversation.id``              the trace id
``task_id``     ``agentab.task_id``
``seed``        ``agentab.seed`` (integer)
``arm``         ``agentab.arm``
``outcome``     ``agentab.outcome`` (bool or number)
model           ``gen_ai.request.model``                ``gen_ai.response.model``,
                                                        ``llm.model_name``, then
                                                        the run's first model call
harness         ``gen_ai.agent.name``                   ``agent.name``,
                                                        ``agent_name``,
                                                        ``traceloop.workflow.name``,
                                                        the span name after
                                                        ``invoke_agent``
provider        ``gen_ai.provider.name`` (fixed)        ``gen_ai.system``
``cost_usd``    none (no convention records cost)
``latency_s``   none: the run span's duration
==============  ======================================  =====================

Model, harness and provider go to ``metadata`` (with ``trace_id``,
``span_id``, ``conversation_id``, ``started_at``/``ended_at`` of the run
span); ``latency_s`` is the run span's duration. With the default ``run_id``,
an id shared by several runs of the file (several runs in one trace, or
several turns of one conversation) is qualified with the run span's id:
``<trace id>:<span id>``, ``<conversation id>:<span id>``. An ill-typed task_id, seed (text is read when
it is a whole number) or outcome is a rejection naming the span (trace id / span id) and the attribute; a
missing one (or a user-mapped run_id) is no rejection: the item's
:attr:`~agentab.formats._base.Item.missing` names it, with the attribute and the reason, for the loader to
fill (``fields={"path": ...}``, ``outcomes=``) or reject, and the run holds None there.

*Two readers.* A JSON Lines file is read in columns by
:mod:`._columns` and :mod:`._column_runs` (pyarrow's JSON reader, then
vectorised operations), which gives the same runs as reading span by span
(:mod:`._spans`, :mod:`._span_runs`) and leaves any file it does not read
that way (odd value types, base64 ids, duplicate spans, any record to
reject...) to the span-by-span reader. Both take their values by the rules
of :mod:`._rules`; this module holds the format and its file entry points. A large
JSON Lines file is also split over processes by :func:`agentab.load_traces`
(:func:`read_part`: each part read in columns where that reader reads it) when
its lines look like they hold whole traces; one whose traces cross lines (a
collector's export by time) is read by one process (:func:`read_whole`), as
is a file whose parts turn out to share a trace. Either way a file (or part)
is read whole into memory first.

Each run is one :class:`~agentab.formats._base.Item` (``line``: the line, or
1-based position in a list of batches, of the batch holding the run span);
each orphan tree without a run, malformed JSON line and line that is not an
OTLP batch is one rejection.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import FieldMap, Format, Item, Part
from agentab.formats.decode import gc_paused
from agentab.formats.files import BOM, open_trace_file
from agentab.formats.otel import _span_runs
from agentab.formats.otel._rules import FIELDS
from agentab.formats.otel._spans import NON_SPACE, Batch, batches_of_bytes, head, is_document

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "read_part", "read_whole", "sniff", "splits"]

_BLOCK = 1 << 24  # bytes read at a time


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The runs (and rejections) of an OTLP/JSON file (JSON Lines or one document; ``.gz`` too)."""
    with open_trace_file(Path(path)) as fh:
        return iter(_read_lines(fh.read(), 1, fields, whole=True).items)


def splits(path: Path) -> bool:
    """Whether :func:`read_part` can read ``path`` in parts: it is JSON Lines (not one document)."""
    with open_trace_file(Path(path)) as fh:
        _, _, first = _first_line(fh)
    return first is not None and not is_document(first)


def _first_line(fh: Any) -> tuple[bytes, int, bytes | None]:
    """The bytes read so far (at least the first non-blank line, whole, unless the file ends first), where
    the content starts (after a byte-order mark), and the first non-blank line (None: the file is blank).

    Read in blocks of :data:`_BLOCK` bytes: a batch line is often megabytes."""
    data = fh.read(_BLOCK)
    while True:  # until the first non-blank line is whole
        offset = len(BOM) if data[:len(BOM)] == BOM else 0
        found = NON_SPACE.search(data, offset)
        if found is not None and data.find(b"\n", found.start()) >= 0:
            break
        more = fh.read(_BLOCK)
        if not more:
            break
        data += more
    if found is None:
        return data, offset, None
    end = data.find(b"\n", found.start())
    return data, offset, data[found.start():end if end >= 0 else len(data)].rstrip()


def read_part(path: Path, start: int, end: int, first_line: int, fields: FieldMap | None = None) -> Part:
    """The runs (and rejections) of the lines in bytes ``[start, end)`` of a JSON Lines file (see
    :attr:`~agentab.formats._base.Format.read_part`); ``first_line``: the number of the line at ``start``."""
    with open_trace_file(Path(path)) as fh:
        fh.seek(start)
        return _read_lines(fh.read(end - start), first_line, fields, whole=start == 0)


def read_whole(path: Path, fields: FieldMap | None = None) -> Part | None:
    """The runs and keys of a large JSON Lines file read in columns by this process, or None (see
    :attr:`~agentab.formats._base.Format.read_whole`): the loader then reads it in parts by several processes
    (:func:`read_part`, the column reader in each), and whole only if two parts share a trace.

    None when the file's lines look like they hold whole traces (:func:`_traces_cross_lines`: no trace seen
    on both sides of a line boundary; parts then convert as the whole does, over all the cores), or when the
    column reader declines the file. A file whose traces do cross lines (a collector's export by time) is read
    whole here: its parts would share a trace and be read twice. A wrong guess costs time only.
    """
    from agentab.formats.otel import _columns  # pyarrow: imported when a file is read in columns

    path = Path(path)
    if not _traces_cross_lines(path):
        return None
    with open_trace_file(path) as fh:
        data = fh.read()
    with gc_paused():
        return _columns.read(data, 1, fields or {})


#: Points of a file where :func:`_traces_cross_lines` looks, and the bytes it reads on each side of each.
_PROBES = 7
_WINDOW = 1 << 19
_TRACE_ID = re.compile(rb'"traceId"\s*:\s*"([^"\\]*)"')


def _traces_cross_lines(path: Path) -> bool:
    """Whether some trace of a JSON Lines file has spans on both sides of a line boundary, as far as a look at
    :data:`_PROBES` evenly spaced boundaries shows: the trace ids in the :data:`_WINDOW` bytes before each and
    after it (a few MiB in all, not parsed). Only a guess (where the loader would cut the file is its own
    choice, and a trace may be split far from any boundary looked at): it decides how the file is read, never
    what is read."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        for k in range(1, _PROBES + 1):
            at = max(0, size * k // (_PROBES + 1) - _WINDOW)
            fh.seek(at)
            block = fh.read(2 * _WINDOW)
            middle = size * k // (_PROBES + 1) - at
            boundary = block.find(b"\n", max(middle - 1, 0)) + 1  # the start of the next line
            if boundary <= 0 or boundary >= len(block):
                boundary = block.rfind(b"\n", 0, max(middle - 1, 0)) + 1  # or of this one
                if boundary <= 0:
                    continue  # no line boundary near this point
            before = {found.lower() for found in _TRACE_ID.findall(block, 0, boundary)}
            if before and any(found.lower() in before for found in _TRACE_ID.findall(block, boundary)):
                return True
    return False


def _read_lines(data: bytes, first_line: int, fields: FieldMap | None, whole: bool) -> Part:
    """The items and keys of a file's content (``whole``; ``first_line`` 1), or of whole lines of a JSON
    Lines file from line ``first_line``.

    JSON Lines are read in columns (:mod:`._columns`)
    when that reader reads them; anything else span by span.
    """
    from agentab.formats.otel import _columns  # pyarrow: imported when a file is read in columns

    if not whole or not is_document(head(data) or b"["):
        with gc_paused():
            part = _columns.read(data, first_line, fields or {})
        if part is not None:
            return part
    return _span_runs.read(batches_of_bytes(data, 1 if whole else first_line), fields)


def read_objects(objects: Sequence[Any], name: str = "", fields: FieldMap | None = None) -> Iterator[Item]:
    """The runs (and rejections) of in-memory OTLP/JSON batches (dicts), ``line`` = 1-based position."""

    def batches() -> Iterator[tuple[int, Batch | None, str | None]]:
        for position, obj in enumerate(objects, start=1):
            try:
                yield position, msgspec.convert(obj, Batch), None
            except msgspec.ValidationError as exc:
                yield position, None, f"not an OTLP trace batch ({{\"resourceSpans\": [...]}}): {exc}"

    return iter(_span_runs.read(batches(), fields).items)


def sniff(head: bytes, name: str = "") -> bool:
    """Whether a file's first bytes look like OTLP/JSON traces."""
    return b'"resourceSpans"' in head


_EXAMPLE = (
    '{"resourceSpans":[{"resource":{"attributes":[{"key":"agentab.task_id","value":{"stringValue":"fix-test"}},'
    '{"key":"agentab.seed","value":{"intValue":"0"}}]},"scopeSpans":[{"spans":['
    '{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"invoke_agent coder",'
    '"startTimeUnixNano":"1767225600000000000","endTimeUnixNano":"1767225604000000000","attributes":['
    '{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},'
    '{"key":"agentab.outcome","value":{"boolValue":true}}]},'
    '{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","parentSpanId":"eee19b7ec3c1b174",'
    '"name":"execute_tool read_file","startTimeUnixNano":"1767225601000000000",'
    '"endTimeUnixNano":"1767225601500000000","attributes":['
    '{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},'
    '{"key":"gen_ai.tool.name","value":{"stringValue":"read_file"}},'
    '{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\\"path\\": \\"src/main.py\\"}"}}],'
    '"status":{}}]}]}]}'
)

FORMAT = Format(
    name="otel",
    summary="OpenTelemetry OTLP/JSON trace export (GenAI semantic conventions): "
            "invoke_agent spans are runs, execute_tool spans are steps",
    example=_EXAMPLE,
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
    suffixes=(),
    read_part=read_part,
    splits=splits,
    read_whole=read_whole,
)
