"""ATIF's plain case, fast: a trajectory decoded without the keys the reader never reads (a step's ``message``,
``reasoning_content``, ``model_name``, a model call's token ids and logprobs...), its steps built in one pass.

A trajectory of one segment whose steps hold no sub-agent reference, with plain values (a tool call's id, name
and arguments object; counts that are whole numbers; costs that are finite floats) is walked here by the rules
of :mod:`agentab.formats.atif` (those of :class:`._steps.Walk`, copied case by case, the model calls' sums in
local variables) into the same record the usual path builds. Anything else (a continuation, a sub-agent, a
rejection, a value of another type) raises :class:`~agentab.formats._fast_path.Slow`, and the reader reads the
file its usual way: the fast path changes how soon a run is read, never what it reads
(``tests/test_formats_atif_fast.py``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import FieldMap, Item
from agentab.formats._fast_path import Slow
from agentab.formats.atif._run import DEFAULTS, run_fields, trial_result
from agentab.formats.atif._steps import VERSIONS
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
    return rows, (s_in, s_out, s_cached, s_cost), untooled, n_calls


def _step_dicts(rows: list[list[Any]]) -> list[dict[str, Any]]:
    """The rows as the trace record's steps, each field as :class:`._steps.Walk` writes it (absent when unknown)."""
    out = []
    for k, (tool, args, observation, stamp, meta, group, t_in, t_out, t_cached, cost) in enumerate(rows):
        step = {"index": k, "tool": tool, "args": args, "observation": observation, "metadata": meta}
        if stamp is not None:
            step["started_at"] = stamp
        if t_in is not None:
            step["tokens_in"] = t_in
        if t_out is not None:
            step["tokens_out"] = t_out
        if t_cached is not None:
            step["tokens_cached"] = t_cached
        if cost is not None:
            step["cost_usd"] = cost
        if group is not None:
            step["parallel"] = group
        out.append(step)
    return out


def item(raw: bytes, path: Path, fields: FieldMap) -> Item:
    """The run of one trajectory file, its record built from the typed decode in one pass; :class:`Slow` (or a
    :class:`~agentab.formats._base.Reject`, which the usual path gives again) for anything but the plain case.

    The record is a dict, as the usual path gives it, not a :class:`Prepared`: the decoder flushes its chunk
    whenever runs in columns and runs as dicts alternate, so a job whose trials take both paths (a sub-agent
    here and there) would be read several times slower.
    """
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
    record = run_fields(doc, doc, path, result, trial_dir, step_name, fields, missing)
    record["steps"] = _step_dicts(rows)
    if untooled:
        record["metadata"]["observations_without_tool_call"] = untooled
    if n_calls:  # as _convert: the run's known totals, and its cost when final_metrics has none
        for name, value in zip(("tokens_in", "tokens_out", "tokens_cached"), sums):
            if value is not None:
                record[name] = value
        if "cost_usd" not in record and sums[3] is not None:
            record["cost_usd"] = sums[3]
    return Item(line=1, record=record, missing=missing or None)
