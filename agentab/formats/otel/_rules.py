"""The rules the two OTel readers share: attribute names, span kinds, and run-level values.

Both readers (span by span, :mod:`._spans` and :mod:`._run`; in columns,
:mod:`._columns` and :mod:`._column_runs`) find the attribute values of a run
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
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import msgspec

from agentab.formats._base import MISSING as _MISSING
from agentab.formats._base import FieldMap
from agentab.formats._base import Reject as _Reject
from agentab.formats.decode import Prepared
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
}
PROVIDER = ("gen_ai.provider.name", "gen_ai.system")
TOOL_NAME = ("gen_ai.tool.name", "tool.name")
TOOL_ARGS = ("gen_ai.tool.call.arguments", "tool.arguments", "input.value")
TOOL_RESULT = ("gen_ai.tool.call.result", "tool.result", "output.value")
TOKENS_IN = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens",
              "llm.token_count.prompt")
TOKENS_OUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens",
               "llm.token_count.completion")
USAGE = frozenset(TOKENS_IN + TOKENS_OUT)
OPERATION = "gen_ai.operation.name"
OPENINFERENCE_KIND = "openinference.span.kind"
MODEL_OPS = frozenset({"chat", "text_completion", "generate_content"})
OPENINFERENCE_KINDS = {"AGENT": "agent", "TOOL": "tool", "LLM": "model"}
GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.", "agentab.", "tool.name")
STATUS_ERROR = frozenset({2, "STATUS_CODE_ERROR", "2"})

AGENT, TOOL, MODEL = "agent", "tool", "model"
OPERATION_KINDS = {"invoke_agent": AGENT, "execute_tool": TOOL, **dict.fromkeys(MODEL_OPS, MODEL)}
ARROW_NS = 2**63  # Arrow's timestamps (int64 nanoseconds) hold the unix nanoseconds below this
_JSON = msgspec.json.Decoder()


# ---------------------------------------------------------------- names and kinds


def kind_without_operation(name: str, openinference: Any = _MISSING) -> str | None:
    """The kind of a span without ``gen_ai.operation.name``: from ``openinference.span.kind`` (its value, if
    the span has the attribute), else from its name's first word (a leading ``gen_ai.`` ignored)."""
    if openinference is not _MISSING:
        found = OPENINFERENCE_KINDS.get(str(openinference).upper())
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


def missing(where: str, key: str, name: str) -> _Reject:
    return _Reject(name, f"the run span ({where}) has no attribute {name} for {key} (looked in the span, "
                         f"its ancestors and its resource); name the attribute with fields={{{key!r}: ...}}")


def ill_typed(where: str, key: str, name: str, value: Any, expected: str) -> _Reject:
    return _Reject(name, f"attribute {name} of the run span ({where}) gives {key} {value!r}: expected {expected}")


def required(hit: Hit | None, mapping: Mapping[str, str], key: str, convert: Callable[[Any], Any],
             expected: str, view: RunView, run: Any) -> Any:
    """A required run-level field: the attribute found (``hit``) converted, or a rejection naming the
    attribute (missing, or ``convert`` gives None)."""
    if hit is None:
        raise missing(view.where(run), key, mapping[key])
    value = convert(hit[1])
    if value is None:
        raise ill_typed(view.where(run), key, hit[0], hit[1], expected)
    return value


def identity(mapping: FieldMap, task: Hit | None, seed: Hit | None, outcome: Hit | None, run_id: Hit | None,
             arm: Hit | None, trace_id: str, span_id: str, view: RunView,
             run: Any) -> tuple[str | int, int, Any, str, str | None, str | None]:
    """A run's task id, seed, outcome, run id, where the run id came from ("attribute", "trace"; None: a
    user-mapped attribute) and arm, from the attributes found for them (checked in that order)."""
    task_id = required(task, mapping, "task_id", as_task_id, "text or an integer", view, run)
    seed_value = required(seed, mapping, "seed", as_seed, "an integer that fits in 64 bits", view, run)
    outcome_value = required(outcome, mapping, "outcome", as_outcome, "a bool or a finite number", view, run)
    default_run_id = mapping["run_id"] == FIELDS["run_id"]
    source: str | None
    if run_id is not None:
        run_text = as_run_id(run_id[1])
        if run_text is None:
            raise ill_typed(view.where(run), "run_id", run_id[0], run_id[1], "text or an integer")
        source = "attribute" if default_run_id else None
    elif default_run_id:
        run_text, source = trace_id or span_id, "trace"
        if not run_text:
            raise _Reject("traceId", f"{view.where(run)}: no run id: no attribute {FIELDS['run_id']}, and no trace "
                                     "or span id")
    else:
        raise missing(view.where(run), "run_id", mapping["run_id"])
    arm_text = None
    if arm is not None:
        arm_text = as_arm(arm[1])
        if arm_text is None:
            raise ill_typed(view.where(run), "arm", arm[0], arm[1], "text")
    return task_id, seed_value, outcome_value, run_text, source, arm_text


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
             tokens_in: int | None, tokens_out: int | None, view: RunView, run: Any) -> dict[str, Any]:
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
    if tokens_in is not None:
        out["tokens_in"] = tokens_in
    if tokens_out is not None:
        out["tokens_out"] = tokens_out
    return out


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


def arguments(attribute: str, raw: Any, where: Callable[[Any], str], span: Any) -> dict[str, Any]:
    """A step's arguments from attribute ``attribute``'s value: JSON text of an object (blank: none), or an
    object; a rejection (``where(span)`` words the span) otherwise."""
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
    return args


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
