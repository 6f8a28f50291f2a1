"""ATIF's plain case, fast: a trajectory decoded without the keys the reader never reads (a step's ``message``,
``reasoning_content``, ``model_name``, a model call's token ids and logprobs...), its steps built in columns.

A trajectory of one segment whose steps hold no sub-agent reference, with plain values (a tool call's id, name
and arguments object; counts that are whole numbers; costs that are finite floats; times Arrow and pandas read
alike) is walked here in one pass by the rules of :mod:`agentab.formats.atif` (those of :class:`._steps.Walk`,
copied case by case) and given as a :class:`~agentab.formats.decode.Prepared`. Anything else (a continuation, a
sub-agent, a rejection, a field the loader fills, a value of another type or range) raises
:class:`~agentab.formats._fast_path.Slow`, and the reader reads the file its usual way: the fast path changes
how soon a run is read, never what it reads (``tests/test_formats_atif_fast.py``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentab.formats._base import FieldMap, Item
from agentab.formats._fast_path import Slow, prepared
from agentab.formats.atif._run import DEFAULTS, run_fields, trial_result
from agentab.formats.atif._steps import VERSIONS
from agentab.formats.decode import Prepared, PreparedSteps
from agentab.formats.record import INT64_MAX, TOKENS_WITH_STEP

__all__ = ["item"]


class _Call(msgspec.Struct, gc=False):
    tool_call_id: Any = None
    function_name: Any = None
    arguments: Any = None


class _Result(msgspec.Struct, gc=False):
    source_call_id: Any = None
    content: Any = msgspec.UNSET  # a result without `content` answers nothing (one with `content: null` does)
    extra: Any = None
    subagent_trajectory_ref: Any = None


class _Observation(msgspec.Struct, gc=False):
    results: list[_Result] | None = None


class _Metrics(msgspec.Struct, gc=False):
    prompt_tokens: Any = None
    completion_tokens: Any = None
    cached_tokens: Any = None
    cost_usd: Any = None


class _Step(msgspec.Struct, gc=False):
    """The keys of a step the reader reads (``message``, ``reasoning_content``... are skipped unread); absent and
    null read alike, as the reader's ``step.get(key)`` does."""

    step_id: Any = None
    timestamp: Any = None
    source: Any = None
    tool_calls: list[_Call] | None = None
    observation: _Observation | None = None
    metrics: _Metrics | None = None
    is_copied_context: Any = None
    llm_call_count: Any = None


class _Trajectory(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A trajectory with ATIF's own top-level keys only (one with any other key, which a ``fields`` path may name,
    is read the usual way); all but ``steps`` kept whole, for ``fields`` paths and the run-level rules."""

    steps: list[_Step]
    schema_version: Any = msgspec.UNSET
    session_id: Any = msgspec.UNSET
    trajectory_id: Any = msgspec.UNSET
    agent: Any = msgspec.UNSET
    notes: Any = msgspec.UNSET
    final_metrics: Any = msgspec.UNSET
    continued_trajectory_ref: Any = msgspec.UNSET
    extra: Any = msgspec.UNSET
    subagent_trajectories: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_Trajectory)
_KEYS = _Trajectory.__struct_fields__[1:]  # all but `steps`
_UNSET = msgspec.UNSET
_INF = math.inf
_NOT_GROUPED = object()  # a run whose steps are in no parallel group
#: Largest integer a float holds exactly: a run-level number beyond it is left to the schema's own conversion.
_EXACT = 2**53
#: Step times both the decoder's parsers (Arrow with an offset; pandas, read as UTC, without) and numpy read as
#: the same UTC instant, one per line: years 1700-2259 (inside nanoseconds), a real clock, UTC or no offset.
_STAMPS = re.compile(r"(?:(?:1[7-9]\d\d|2[01]\d\d|22[0-5]\d)-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
                     r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|\+00:00)?\n)*")


def _document(raw: bytes) -> tuple[list[_Step], dict[str, Any]]:
    """The trajectory's steps (without the keys the reader never reads) and its other keys; :class:`Slow` when it
    is not a plain ATIF object, or when the whole file would not decode (the typed decoder skips a string's bytes
    unchecked)."""
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Slow from None  # not UTF-8 in a key left unread: the usual path names it
    try:
        doc = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise Slow from None
    values = msgspec.structs.astuple(doc)
    return values[0], {key: value for key, value in zip(_KEYS, values[1:]) if value is not _UNSET}


def _observation(results: list[_Result]) -> dict[str, Any]:
    """:func:`._steps._observation` of decoded results."""
    if len(results) == 1:
        result = results[0]
        content = None if result.content is _UNSET else result.content
        if isinstance(result.extra, dict):
            return {"content": content, "extra": result.extra}
        return {"content": content}
    out: dict[str, Any] = {"content": [None if r.content is _UNSET else r.content for r in results]}
    extras = [r.extra for r in results if isinstance(r.extra, dict)]
    if extras:
        out["extra"] = extras[0] if len(extras) == 1 else extras
    return out


def _plain_calls(calls: list[_Call]) -> None:
    """:class:`Slow` unless every call has a text id (none twice), a text name and an arguments object."""
    for call in calls:
        call_id, name = call.tool_call_id, call.function_name
        if not (type(call_id) is str and call_id and type(name) is str and name and type(call.arguments) is dict):
            raise Slow
    if len(calls) > 1 and len({call.tool_call_id for call in calls}) != len(calls):
        raise Slow


def _group(step_id: Any, where: str) -> Any:
    """The ``parallel`` group of a step's calls, when the schema takes it (text or a 64-bit integer)."""
    if step_id is None:
        return where
    if (type(step_id) is str and step_id) or (type(step_id) is int and -INT64_MAX - 1 <= step_id <= INT64_MAX):
        return step_id
    raise Slow


#: Where a step's values are in its row (:func:`walk`).
_TOOL, _ARGS, _OBSERVATION, _STARTED, _META, _GROUP, _IN, _OUT, _CACHED, _COST = range(10)
_NO_SUMS = (0, 0, 0, 0)


def walk(steps: list[_Step]) -> tuple[list[list[Any]], tuple[Any, ...], list[str], int]:
    """One segment's steps -> (its steps' rows, the run's sums over its model calls: tokens in, out, cached and
    cost, the agent steps with an observation but no tool call, the number of model calls), by the rules of
    :class:`._steps.Walk`; :class:`Slow` for anything but the plain case."""
    # kept whole: one pass with each case inline, the sums in local variables, is what makes it fast
    rows: list[list[Any]] = []
    p_in = p_out = p_cached = p_cost = 0  # model calls not yet at a tool call (None: unknown)
    s_in = s_out = s_cached = s_cost = 0  # every model call
    untooled: list[str] = []
    n_calls = 0
    grouped = False
    for i, step in enumerate(steps):
        if step.is_copied_context is True:
            continue
        source = step.source
        if source == "agent":
            agent = True
        elif source == "user" or source == "system":
            agent = False
        else:
            raise Slow
        stamp = step.timestamp
        if stamp is not None and type(stamp) is not str:
            raise Slow
        calls = None
        if agent:
            calls = step.tool_calls
            if calls:
                if len(calls) == 1:
                    call = calls[0]
                    call_id, name = call.tool_call_id, call.function_name
                    if not (type(call_id) is str and call_id and type(name) is str and name
                            and type(call.arguments) is dict):
                        raise Slow
                else:
                    _plain_calls(calls)
            if step.llm_call_count != 0:
                n_calls += 1
                metrics = step.metrics
                if metrics is None:
                    p_in = p_out = p_cached = p_cost = s_in = s_out = s_cached = s_cost = None
                else:
                    tin, tout, cached, cost = (metrics.prompt_tokens, metrics.completion_tokens,
                                               metrics.cached_tokens, metrics.cost_usd)
                    if not (type(tin) is int and tin >= 0 and type(tout) is int and tout >= 0
                            and (cached is None or type(cached) is int and cached >= 0)):
                        for count in (tin, tout, cached):
                            if count is not None and not (type(count) is int and count >= 0):
                                raise Slow
                    if cost is not None and not (type(cost) is float and 0 <= cost < _INF):
                        raise Slow
                    p_in = None if p_in is None or tin is None else p_in + tin
                    p_out = None if p_out is None or tout is None else p_out + tout
                    p_cached = None if p_cached is None or cached is None else p_cached + cached
                    p_cost = None if p_cost is None or cost is None else p_cost + cost
                    s_in = None if s_in is None or tin is None else s_in + tin
                    s_out = None if s_out is None or tout is None else s_out + tout
                    s_cached = None if s_cached is None or cached is None else s_cached + cached
                    s_cost = None if s_cost is None or cost is None else s_cost + cost
        observation = step.observation
        if observation is None and not calls:
            continue
        own: list[_Result] = []
        loose: list[_Result] = []
        if observation is not None:
            results = observation.results
            if results is None:
                raise Slow  # no `results` list: a rejection
            for result in results:
                if result.subagent_trajectory_ref is not None:
                    raise Slow
                if result.source_call_id is not None:
                    own.append(result)
                elif result.content is not _UNSET:
                    loose.append(result)
        if not calls:
            if agent and loose:
                untooled.append(f"steps[{i}]")
            continue
        if len(calls) == 1 and len(own) <= 1:  # one call (the common case): answered by its one result, if any
            call = calls[0]
            call_id = call.tool_call_id
            if own and own[0].source_call_id != call_id:
                raise Slow  # a result naming no call of its step: a rejection
            answers = own or loose
            rows.append([call.function_name, call.arguments, _observation(answers) if answers else None, stamp,
                         {"tool_call_id": call_id, "step_id": step.step_id}, None, p_in, p_out, p_cached, p_cost])
            p_in = p_out = p_cached = p_cost = 0
            continue
        by_id: dict[str, list[_Result]] = {}
        ids = {call.tool_call_id for call in calls}
        for result in own:
            if result.source_call_id not in ids:
                raise Slow
            by_id.setdefault(result.source_call_id, []).append(result)
        first = len(rows)
        last = first + len(calls) - 1
        known = p_in is not None and p_out is not None
        group = None
        if len(calls) > 1:
            group = _group(step.step_id, f"steps[{i}]")
            grouped = True
        for j, call in enumerate(calls):
            answers = by_id.get(call.tool_call_id)
            if answers is None and loose and j == len(calls) - 1:
                answers = loose
            meta: dict[str, Any] = {"tool_call_id": call.tool_call_id, "step_id": step.step_id}
            row = [call.function_name, call.arguments,
                   _observation(answers) if answers else ({"output_at_step": last} if loose else None),
                   stamp, meta, group, None, None, None, None]
            if j == 0:
                row[_IN:] = p_in, p_out, p_cached, p_cost
            elif known:
                meta[TOKENS_WITH_STEP] = first
            rows.append(row)
        p_in = p_out = p_cached = p_cost = 0
    pending = (p_in, p_out, p_cached, p_cost)
    if rows and pending != _NO_SUMS:  # the model calls after the last tool call: added to it (Walk.finish)
        at = next(k for k in range(len(rows) - 1, -1, -1) if TOKENS_WITH_STEP not in rows[k][_META])
        target = rows[at]
        for where, value in zip((_IN, _OUT, _CACHED, _COST), pending):
            mine = target[where]
            target[where] = None if mine is None or value is None else mine + value
        if target[_IN] is None or target[_OUT] is None:
            for row in rows:  # the step its group's counts were at is unknown now
                meta = row[_META]
                if meta.get(TOKENS_WITH_STEP) == at:
                    del meta[TOKENS_WITH_STEP]
    if not grouped:
        for row in rows:
            row[_GROUP] = _NOT_GROUPED  # no parallel column at all
    return rows, (s_in, s_out, s_cached, s_cost), untooled, n_calls


def steps_of(rows: list[list[Any]]) -> PreparedSteps:
    """The rows as :class:`PreparedSteps` (a column holding no value None; times in nanoseconds); :class:`Slow`
    for a count beyond 64 bits or a time outside the plain shape (the schema's rejections, or the parser's)."""
    n = len(rows)
    if not n:
        return PreparedSteps([], [], [], [], [], [], [], [], None, None, None, None, None, None)
    tool, args, observation, started, meta, group, t_in, t_out, t_cached, cost = zip(*rows)
    for column in (t_in, t_out, t_cached):
        known = column if None not in column else [count for count in column if count is not None]
        if known and max(known) > INT64_MAX:
            raise Slow
    nothing = (None,) * n
    if 0 in cost:  # a step of no model call holds the sum 0: the schema's float
        cost = tuple(float(value) if type(value) is int else value for value in cost)
    return PreparedSteps(tool, args, observation, t_in, t_out, _nanoseconds(started), nothing, meta, None, None,
                         None if group[0] is _NOT_GROUPED else group, None,
                         None if t_cached == nothing else t_cached, None if cost == nothing else cost)


def _nanoseconds(stamps: list[Any]) -> list[Any]:
    """Step times (text or None) as unix nanoseconds, as the decoder's parser reads them; :class:`Slow` for a time
    outside the plain shape, or a day its month does not have."""
    texts = stamps if None not in stamps else [s for s in stamps if s is not None]
    if not texts:
        return stamps
    joined = "\n".join(texts) + "\n"
    if _STAMPS.fullmatch(joined) is None:
        raise Slow
    plain = joined.replace("Z\n", "\n").replace("+00:00\n", "\n").split("\n")
    plain.pop()
    if len(plain) != len(texts):
        raise Slow  # a time holding a line break
    try:
        ns = np.array(plain, dtype="datetime64[ns]").view(np.int64).tolist()
    except ValueError:
        raise Slow from None
    if texts is stamps:
        return ns
    found = iter(ns)
    return [None if s is None else next(found) for s in stamps]


def _number(value: Any) -> float | None:
    """A run-level amount (cost, latency) as the schema converts it (a float >= 0), or :class:`Slow`."""
    if value is None:
        return None
    if type(value) is float and 0 <= value < math.inf:
        return value
    if type(value) is int and 0 <= value <= _EXACT:
        return float(value)
    raise Slow


def _an_id(value: Any) -> None:
    """:class:`Slow` unless ``value`` is a run or task id the schema takes (non-empty text or an integer)."""
    if not ((type(value) is str and value) or type(value) is int):
        raise Slow


def item(raw: bytes, path: Path, fields: FieldMap) -> Item:
    """The run of one trajectory file as a :class:`Prepared`; :class:`Slow` (or a
    :class:`~agentab.formats._base.Reject`, which the usual path gives again) for anything but the plain case."""
    steps, doc = _document(raw)
    if doc.get("schema_version") not in VERSIONS or not steps or doc.get("continued_trajectory_ref") is not None:
        raise Slow
    for key, value in fields.items():
        if DEFAULTS.get(key) != value and key != "messages" and value.split(".", 1)[0] in ("steps", "*"):
            raise Slow  # a path into the steps, which are not decoded whole
    rows, sums, untooled, n_calls = walk(steps)
    if untooled and not rows:
        raise Slow  # the run's rejection
    result, trial_dir, step_name = trial_result(path)
    missing: dict[str, tuple[str | None, str]] = {}
    out = run_fields(doc, doc, path, result, trial_dir, step_name, fields, missing)
    if missing:
        raise Slow  # a run the loader completes is given as a dict (Item.missing)
    if untooled:
        out["metadata"]["observations_without_tool_call"] = untooled
    totals: dict[str, int] = {}
    if n_calls:
        for name, value in zip(("tokens_in", "tokens_out", "tokens_cached"), sums):
            if value is not None:
                totals[name] = value
        if "cost_usd" not in out and sums[3] is not None:
            out["cost_usd"] = sums[3]
    _an_id(out["run_id"])
    _an_id(out["task_id"])
    seed, outcome, arm = out["seed"], out["outcome"], out.get("arm")
    if type(seed) is not int or not (type(outcome) is bool or (type(outcome) is float and math.isfinite(outcome))
                                     or (type(outcome) is int and abs(outcome) <= _EXACT)):
        raise Slow
    if arm is not None and not (type(arm) is str and arm):
        raise Slow
    out["cost_usd"], out["latency_s"] = _number(out.get("cost_usd")), _number(out.get("latency_s"))
    run: Prepared = prepared(out, steps_of(rows), totals or None)
    return Item(line=1, record=run)
