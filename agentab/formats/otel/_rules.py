"""The rules the two OTel readers share: attribute names, span kinds, and run-level values.

Both readers (span by span, :mod:`._spans` and :mod:`._span_runs`; in columns,
:mod:`._arrays` and :mod:`._columns`) find the attribute values of a run
their own way and hand them here: which names are read, how a span's kind
follows from its operation or name, which values a task id, seed, outcome,
arm or amount takes, how a run's identity, amounts and metadata are put
together, how a step's tool, arguments and result are read, how a run id
shared by several runs is qualified, and the keys of part of a file. A value
outside the rules raises :class:`~agentab.formats._base.Reject` (the column
reader, which reads only files without rejections, then declines the file).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol

import msgspec

from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap
from agentab.formats._base import Reject as _Reject
from agentab.formats.decode import Prepared
from agentab.errors import TraceError
from agentab.formats.record import INT64_MAX, TOKENS_WITH_STEP

#: An attribute found: (its name, its value).
Hit = tuple[str, Any]

#: Default run-level field mapping: agentab name -> span/resource attribute.
FIELDS: dict[str, str] = {
    "run_id": "gen_ai.conversation.id",
    "task_id": "agentab.task_id",
    "seed": "agentab.seed",
    "arm": "agentab.arm",
    "outcome": "agentab.outcome",
    "model": "gen_ai.request.model",
    "harness": "gen_ai.agent.name",
}


# Names read after the default one (only while the default is in use).
ALIASES: dict[str, tuple[str, ...]] = {
    "gen_ai.request.model": ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name"),
    "gen_ai.agent.name": ("gen_ai.agent.name", "agent.name", "agent_name", "traceloop.workflow.name"),
}
PROVIDER = ("gen_ai.provider.name", "gen_ai.system")
# the GenAI conventions, OpenInference, OpenLLMetry (Traceloop), pydantic-ai's instrumentation version 1/2
TOOL_NAME = ("gen_ai.tool.name", "tool.name", "traceloop.entity.name")
TOOL_ARGS = ("gen_ai.tool.call.arguments", "tool.arguments", "input.value", "traceloop.entity.input",
             "tool_arguments")
TOOL_RESULT = ("gen_ai.tool.call.result", "tool.result", "output.value", "traceloop.entity.output",
               "tool_response")
TOOL_CALL_ID = ("gen_ai.tool.call.id", "tool_call.id")
TOKENS_IN = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens",
              "llm.token_count.prompt")
TOKENS_OUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens",
               "llm.token_count.completion")
#: Input tokens read from a prompt cache (a part of the input tokens), every family's name.
TOKENS_CACHED = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                 "llm.token_count.prompt_details.cache_read", "gen_ai.usage.details.cache_read_tokens")
#: Reasoning tokens (a part of the output tokens), every family's name.
TOKENS_REASONING = ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                    "llm.usage.reasoning_tokens", "llm.token_count.completion_details.reasoning",
                    "gen_ai.usage.details.reasoning_tokens")
USAGE = frozenset(TOKENS_IN + TOKENS_OUT)
DETAILS = frozenset(TOKENS_CACHED + TOKENS_REASONING)
OPERATION = "gen_ai.operation.name"
OPENINFERENCE_KIND = "openinference.span.kind"
TRACELOOP_KIND = "traceloop.span.kind"
REQUEST_TYPE = "llm.request.type"
MIME_TYPE = "input.mime_type"
#: Attributes besides the operation that decide a span's kind (read only when the span has no operation).
KIND_ATTRIBUTES = (OPENINFERENCE_KIND, TRACELOOP_KIND, REQUEST_TYPE)
MODEL_OPS = frozenset({"chat", "text_completion", "generate_content"})
OPENINFERENCE_KINDS = {"AGENT": "agent", "TOOL": "tool", "LLM": "model"}
TRACELOOP_KINDS = {"workflow": "agent", "agent": "agent", "tool": "tool"}
REQUEST_TYPES = frozenset({"chat", "completion"})
#: pydantic-ai's instrumentation version 1 and 2 span names (version 3 on: the conventions' names).
PYDANTIC_AI_NAMES = {"agent run": "agent", "running tool": "tool"}
GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.", "agentab.", "tool.name", "traceloop.")
STATUS_ERROR = frozenset({2, "STATUS_CODE_ERROR", "2"})

AGENT, TOOL, MODEL = "agent", "tool", "model"
OPERATION_KINDS = {"invoke_agent": AGENT, "execute_tool": TOOL, **dict.fromkeys(MODEL_OPS, MODEL)}
ARROW_NS = 2**63  # Arrow's timestamps (int64 nanoseconds) hold the unix nanoseconds below this
_JSON = msgspec.json.Decoder()


# ---------------------------------------------------------------- names and kinds


def kind_without_operation(name: str, openinference: Any = _MISSING, traceloop: Any = _MISSING,
                           request_type: Any = _MISSING) -> str | None:
    """The kind of a span without ``gen_ai.operation.name``: from ``openinference.span.kind``, else
    ``traceloop.span.kind`` (workflow and agent: an agent span; tool), else ``llm.request.type`` (chat,
    completion: a model call) (each: its value, if the span has the attribute), else from its name:
    pydantic-ai's ``agent run`` and ``running tool`` (instrumentation version 1 and 2), else its first
    word (a leading ``gen_ai.`` ignored)."""
    if openinference is not _MISSING:
        found = OPENINFERENCE_KINDS.get(str(openinference).upper())
        if found:
            return found
    if traceloop is not _MISSING:
        found = TRACELOOP_KINDS.get(str(traceloop).lower())
        if found:
            return found
    if request_type is not _MISSING and str(request_type).lower() in REQUEST_TYPES:
        return MODEL
    found = PYDANTIC_AI_NAMES.get(name)
    if found:
        return found
    word = name.removeprefix("gen_ai.")
    if word.startswith("invoke_agent"):
        return AGENT
    if word.startswith("execute_tool"):
        return TOOL
    return MODEL if word.split(" ", 1)[0] in MODEL_OPS else None


def name_after(name: str, operation: str) -> str:
    """What a span's name says after its operation (``execute_tool read_file`` -> ``read_file``)."""
    return name.removeprefix("gen_ai.").removeprefix(operation).strip()


def names_of(mapping: Mapping[str, str], key: str) -> tuple[str, ...]:
    name = mapping[key]
    return ALIASES.get(name, (name,)) if name == FIELDS[key] else (name,)


def iso(ns: int | None) -> str | None:
    """Unix nanoseconds as ISO-8601 UTC text with nanoseconds (``2026-01-01T00:00:00.200000000Z``)."""
    if ns is None:
        return None
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)) + f"{fraction:09d}Z"


# ---------------------------------------------------------------- values


def as_task_id(value: Any) -> str | int | None:
    """A task id: text or an integer (an integral float becomes one); None if the value is neither."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return value


def as_run_id(value: Any) -> str | None:
    """A run id as text: from text or an integer; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return str(value)


def as_seed(value: Any) -> int | None:
    """A seed: an integer (or integral text or float) that fits in 64 bits; None otherwise."""
    seed = as_integer(value)
    return seed if seed is not None and -INT64_MAX - 1 <= seed <= INT64_MAX else None


def as_arm(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_amount(value: Any) -> float | None:
    """A cost or duration: a number >= 0 (NaN is not); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None
    return float(value)


def as_integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_outcome(value: Any) -> bool | int | float | None:
    """An outcome: a bool, a finite number, or text of one ("true", "0.5"); None otherwise."""
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
        try:
            value = float(text)
        except ValueError:
            return None
    return value if isinstance(value, float) and math.isfinite(value) else None


# ---------------------------------------------------------------- one run, from the values found


class RunView(Protocol):
    """What the run assembly below asks a reader about one of its runs (``run``: the reader's handle)."""

    def where(self, run: Any) -> str:
        """The run span, in words (for a rejection)."""

    def in_run(self, run: Any, names: tuple[str, ...]) -> Any:
        """The first value among ``names`` of the run's model spans, in pre-order, or None."""

    def agent_name(self, run: Any) -> str | None:
        """The run span's name when it is an agent span, else None."""


class Source(NamedTuple):
    """Where a run-level field is read (``fields=``): an attribute of the run span, its ancestors or its
    resource (``kind`` "attribute"; the default), the resource only ("resource"), or the run span's name
    ("name"; ``pattern``: a regular expression whose ``group`` is the value, None: the whole name)."""

    kind: str
    name: str
    spec: str
    pattern: re.Pattern[str] | None = None
    group: int | str = 0


#: The run-level fields that a source (``fields=``) may name.
RUN_KEYS = ("run_id", "task_id", "seed", "arm", "outcome", "model", "harness", "cost_usd", "latency_s")


def source(spec: str, key: str) -> Source:
    """The source a ``fields=`` entry names: ``span.name``, ``span.name:<regex>`` (its one capture group,
    or the group named ``key``), ``resource:<attribute>``, else an attribute's name.

    Examples
    --------
    >>> source("span.name:^solve ([a-z-]+)", "task_id").group, source("resource:service.name", "arm").name
    (1, 'service.name')
    """
    if spec == "span.name":
        return Source("name", "", spec)
    if spec.startswith("span.name:"):
        try:
            pattern = re.compile(spec.removeprefix("span.name:"))
        except re.error as exc:
            raise TraceError(f"`fields[{key!r}]` = {spec!r} is not a regular expression: {exc}") from None
        if key in pattern.groupindex:
            return Source("name", "", spec, pattern, key)
        if pattern.groups != 1:
            raise TraceError(f"`fields[{key!r}]` = {spec!r} must have one capture group (or a group named {key!r}), "
                             f"it has {pattern.groups}")
        return Source("name", "", spec, pattern, 1)
    if spec.startswith("resource:") and len(spec) > len("resource:"):
        return Source("resource", spec.removeprefix("resource:"), spec)
    return Source("attribute", spec, spec)


def sources(mapping: Mapping[str, str]) -> dict[str, Source]:
    """The source of every run-level field the mapping names."""
    return {key: source(mapping[key], key) for key in RUN_KEYS if mapping.get(key)}


def from_name(src: Source, name: str) -> Hit | None:
    """The value a source of kind "name" finds in the run span's name (None: empty, or no match)."""
    if src.pattern is None:
        return (src.spec, name) if name else None
    found = src.pattern.search(name)
    value = found.group(src.group) if found is not None else None
    return (src.spec, value) if value else None


def missing(where: str, key: str, src: Source) -> tuple[str, str]:
    """The field and reason of a required run-level field not found: for the loader to fill, else to reject."""
    if src.kind == "name":
        what = "is empty" if src.pattern is None else f"does not match {src.pattern.pattern!r}"
        return src.spec, f"the name of the run span ({where}) {what}, which fields={{{key!r}: {src.spec!r}}} reads"
    if src.kind == "resource":
        return src.spec, f"the resource of the run span ({where}) has no attribute {src.name} for {key}"
    return src.name, (f"the run span ({where}) has no attribute {src.name} for {key} (looked in the span, its "
                      f"ancestors and its resource); name the attribute with fields={{{key!r}: ...}}")


def ill_typed(where: str, key: str, name: str, value: Any, expected: str) -> _Reject:
    return _Reject(name, f"attribute {name} of the run span ({where}) gives {key} {value!r}: expected {expected}")


def _required(hit: Hit | None, srcs: Mapping[str, Source], key: str, convert: Callable[[Any], Any],
              expected: str, view: RunView, run: Any, absent: dict[str, tuple[str | None, str]]) -> Any:
    """A required run-level field: the value found (``hit``) converted; None, with the field added to
    ``absent``, when not found; a rejection naming the attribute when ``convert`` gives None."""
    if hit is None:
        absent[key] = missing(view.where(run), key, srcs[key])
        return None
    value = convert(hit[1])
    if value is None:
        raise ill_typed(view.where(run), key, hit[0], hit[1], expected)
    return value


def identity(srcs: Mapping[str, Source], task: Hit | None, seed: Hit | None, outcome: Hit | None,
             run_id: Hit | None, arm: Hit | None, trace_id: str, span_id: str, view: RunView,
             run: Any) -> tuple[str | int | None, int | None, Any, str | None, str | None, str | None,
                                dict[str, tuple[str | None, str]] | None]:
    """A run's task id, seed, outcome, run id, where the run id came from ("attribute", "trace"; None: a
    user-mapped source) and arm, from the values found for them (checked in that order), and the
    required fields not found (None: all found; their values are None)."""
    absent: dict[str, tuple[str | None, str]] = {}
    task_id = _required(task, srcs, "task_id", as_task_id, "text or an integer", view, run, absent)
    seed_value = _required(seed, srcs, "seed", as_seed, "an integer that fits in 64 bits", view, run, absent)
    outcome_value = _required(outcome, srcs, "outcome", as_outcome, "a bool or a finite number", view, run, absent)
    default_run_id = srcs["run_id"].spec == FIELDS["run_id"]
    source_of_id: str | None = None
    run_text: str | None
    if run_id is not None:
        run_text = as_run_id(run_id[1])
        if run_text is None:
            raise ill_typed(view.where(run), "run_id", run_id[0], run_id[1], "text or an integer")
        source_of_id = "attribute" if default_run_id else None
    elif default_run_id:
        run_text, source_of_id = trace_id or span_id, "trace"
        if not run_text:
            raise _Reject("traceId", f"{view.where(run)}: no run id: no attribute {FIELDS['run_id']}, and no "
                                     "trace or span id")
    else:
        run_text = None
        absent["run_id"] = missing(view.where(run), "run_id", srcs["run_id"])
    arm_text = None
    if arm is not None:
        arm_text = as_arm(arm[1])
        if arm_text is None:
            raise ill_typed(view.where(run), "arm", arm[0], arm[1], "text")
    return task_id, seed_value, outcome_value, run_text, source_of_id, arm_text, absent or None


def amounts(found: Mapping[str, Hit | None], start: int | None, end: int | None, view: RunView,
            run: Any) -> dict[str, float]:
    """``cost_usd`` and ``latency_s`` from the attributes found for them (keys: the mapped ones); the
    latency is otherwise the run span's duration (``start``/``end``: unix nanoseconds, None: unset)."""
    out: dict[str, float] = {}
    for key, hit in found.items():
        if hit is not None:
            amount = as_amount(hit[1])
            if amount is None:
                raise ill_typed(view.where(run), key, hit[0], hit[1], "a number >= 0")
            out[key] = amount
    if "latency_s" not in out and start is not None and end is not None and end >= start:
        out["latency_s"] = (end - start) / 1e9
    return out


def metadata(mapping: FieldMap, model: Hit | None, harness: Hit | None, provider: Hit | None,
             conversation: Any, trace_id: str, span_id: str, started: str | None, ended: str | None,
             view: RunView, run: Any) -> dict[str, Any]:
    """A run's metadata from the attributes found for the run span.

    Without a model (by the default names), the run's first model call's;
    without a harness (default name), the agent span's name after
    ``invoke_agent``; without a provider, the run's first model call's.
    """
    out: dict[str, Any] = {}
    if model is not None:
        out["model"] = str(model[1])
    elif mapping["model"] == FIELDS["model"]:
        found = view.in_run(run, ALIASES[FIELDS["model"]])
        if found is not None:
            out["model"] = str(found)
    if harness is not None:
        out["harness"] = str(harness[1])
    elif mapping["harness"] == FIELDS["harness"]:
        agent = view.agent_name(run)
        name = name_after(agent, "invoke_agent") if agent is not None else ""
        if name:
            out["harness"] = name
    if provider is None:
        found = view.in_run(run, PROVIDER)
        if found is not None:
            out["provider"] = str(found)
    else:
        out["provider"] = str(provider[1])
    out["trace_id"] = trace_id
    out["span_id"] = span_id
    if conversation is not None:
        out["conversation_id"] = str(conversation)
    if started is not None:
        out["started_at"] = started
    if ended is not None:
        out["ended_at"] = ended
    return out


#: The record's names of the cached and reasoning tokens (:data:`TOKENS_CACHED`, :data:`TOKENS_REASONING`).
DETAIL_KEYS = ("tokens_cached", "tokens_reasoning")


def store_details(steps: Any, tokens_in: int | None, tokens_out: int | None,
                  found: Mapping[str, tuple[list[int], list[bool], int | None]]) -> tuple[Any, dict[str, int] | None]:
    """A run's steps with their cached and reasoning tokens, and the run's token totals (``found``: per
    :data:`DETAIL_KEYS` key, the count of each step, which steps received one, and the run's total, None: no
    span of the run records it).

    The one place these counts are written: the steps' ``tokens_cached`` / ``tokens_reasoning`` (a step that
    received none has none: unknown, never 0), and the run's totals (:class:`~agentab.formats.decode.Prepared`
    ``totals``), which also take the ``tokens_in`` / ``tokens_out`` of every model call of the run, those
    that called no tool included (``tokens_in``, ``tokens_out``; None: unknown).
    """
    totals = {key: value for key, value in (("tokens_in", tokens_in), ("tokens_out", tokens_out)) if value is not None}
    columns = {}
    for key, (per_step, received, total) in found.items():
        if total is None:
            continue
        totals[key] = total
        columns[key] = [per_step[k] if got else None for k, got in enumerate(received)]
    return (steps._replace(**columns) if columns else steps), (totals or None)


# ---------------------------------------------------------------- one step, from the values found


def tool_name(value: Any, span_name: str, where: Callable[[Any], str], span: Any) -> str:
    """A step's tool: ``value`` (the first of :data:`TOOL_NAME` the span records; MISSING: none) as text,
    else its span name after ``execute_tool``; a rejection (``where(span)`` words the span) when neither
    names one."""
    if value is _MISSING:
        name = name_after(span_name, "execute_tool")
    else:
        name = value if isinstance(value, str) else str(value)
    if not name:
        raise _Reject(TOOL_NAME[0], f"the tool span {where(span)} names no tool: no attribute "
                                    f"{' or '.join(TOOL_NAME)}, and no name after execute_tool in its span name")
    return name


def arguments(attribute: str, raw: Any, where: Callable[[Any], str], span: Any,
              mime: Any = None) -> dict[str, Any]:
    """A step's arguments from attribute ``attribute``'s value: JSON text of an object (blank: none), or an
    object; a rejection (``where(span)`` words the span) otherwise.

    Two families differ: OpenInference's ``input.value`` is what the tool was given, JSON or text (its
    ``input.mime_type``, ``mime``): a JSON object is the arguments, anything else (text/plain, JSON of
    another type, text that is not JSON) is kept as ``{"input": <value>}``, never a rejection. Traceloop's
    ``traceloop.entity.input`` wraps the call as ``{"args": [...], "kwargs": {...}}``: without
    positional arguments, the keyword arguments are the arguments (else the wrapper is kept).
    """
    if attribute == "input.value":
        return _input_value(raw, mime)
    args = raw
    if isinstance(raw, str):
        args = {}
        if raw.strip():
            try:
                args = _JSON.decode(raw)
            except msgspec.DecodeError as exc:
                raise _Reject(attribute, f"attribute {attribute} of the tool span {where(span)} is not JSON: "
                                         f"{exc}") from None
    if not isinstance(args, dict):
        raise _Reject(attribute, f"attribute {attribute} of the tool span {where(span)} is not a JSON object "
                                 f"of arguments: {raw!r}")
    if attribute == "traceloop.entity.input" and set(args) == {"args", "kwargs"} and args["args"] == [] \
            and isinstance(args["kwargs"], dict):
        return args["kwargs"]
    return args


def _input_value(raw: Any, mime: Any) -> dict[str, Any]:
    """OpenInference's ``input.value`` as arguments (:func:`arguments`)."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or (isinstance(mime, str) and mime.strip().lower().startswith("text/")):
        return {"input": raw}
    if not raw.strip():
        return {}
    try:
        value = _JSON.decode(raw)
    except msgspec.DecodeError:
        return {"input": raw}
    return value if isinstance(value, dict) else {"input": value}


def result(value: Any) -> Any:
    """A step's result: JSON text parsed, other text kept as text, any other value as it is."""
    if isinstance(value, str):
        try:
            return _JSON.decode(value)
        except msgspec.DecodeError:
            pass
    return value


# ---------------------------------------------------------------- runs of a file


def qualified(record: Prepared, source: str | None, trace_id: str, span_id: str, ids: Mapping[str, int],
              per_trace: Mapping[str, int]) -> Prepared:
    """A run with a default run id (``source``: "attribute", "trace") shared by several runs of the file,
    qualified by its run span's id: ``<id>:<span id>``."""
    if source is not None and (ids[record.run_id] > 1 or (source == "trace" and per_trace[trace_id] > 1)):
        return record._replace(run_id=f"{trace_id}:{span_id}" if source == "trace"
                               else f"{record.run_id}:{span_id}")
    return record


def part_keys(trace_ids: Iterable[str], run_ids: Iterable[str]) -> frozenset[str]:
    """The keys of part of a file (:class:`~agentab.formats._base.Part`): its trace ids and default run ids."""
    return frozenset([*(f"trace:{trace_id}" for trace_id in trace_ids), *(f"run:{run_id}" for run_id in run_ids)])


def counted_elsewhere(tokens_in: list[int | None], tokens_out: list[int | None], got: list[bool],
                      metadata: list[dict[str, Any]]) -> tuple[list[int | None], list[int | None]]:
    """One run's step counts with the steps that received no usage (``got`` false) made unknown (None):
    their model call is counted at another step, the nearest before them that received some (else the
    nearest after), which ``metadata[k]["tokens_with_step"]`` names; the run's total stays known. A kind
    the run does not record (every count None) stays as it is.

    Examples
    --------
    >>> meta = [{}, {}, {}]
    >>> counted_elsewhere([10, 0, 5], [2, 0, 1], [True, False, True], meta), meta[1]
    (([10, None, 5], [2, None, 1]), {'tokens_with_step': 0})
    """
    if all(got) or not any(got):
        return tokens_in, tokens_out
    receiving = [k for k, g in enumerate(got) if g]
    tokens_in, tokens_out = list(tokens_in), list(tokens_out)
    at = -1
    for k, g in enumerate(got):
        if g:
            at = k
            continue
        metadata[k][TOKENS_WITH_STEP] = at if at >= 0 else receiving[0]
        if tokens_in[k] is not None:
            tokens_in[k] = None
        if tokens_out[k] is not None:
            tokens_out[k] = None
    return tokens_in, tokens_out
