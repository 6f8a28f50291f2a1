"""tau2-bench results (format ``"tau2"``): one run per simulation, read without tau2 installed.

tau2-bench (github.com/sierra-research/tau2-bench) writes the results of
``tau2 run`` as one JSON document, ``data/simulations/<name>.json``:
``{"timestamp", "info", "tasks", "simulations": [...]}`` (the ``Results``
model of ``src/tau2/data_model/simulation.py``). Each entry of
``simulations`` (a ``SimulationRun``) is one record read: a run, or a
rejection. ``info`` (``git_commit``, ``num_trials``, ``agent_info``,
``user_info``, ``environment_info``, ``seed``) is shared by every simulation;
``tasks`` (task definitions and their evaluation criteria) is not read.

Also read: simulations one per line (JSON Lines; a ``.json`` file holding
one simulation or an array of them), in tau2's own shape or in the reshaped
shape of the shared ``tau2-bench-grok-policy-ab`` data (``sim_id``,
``reward``, ``duration_sec``, ``agent_model``, ``tool_call_id``), whose names
are tried where tau2's own are absent.

Mapping to the trace record
---------------------------
============ ================================== =========================================
record       from (default ``fields`` entry)    notes
============ ================================== =========================================
run_id       ``id`` (else ``sim_id``)           the simulation's uuid
task_id      ``task_id``                        text (tau2 task ids are text)
seed         ``trial``                          0, 1, ... per task; the simulation's own
                                                RNG ``seed`` goes to
                                                ``metadata.simulation_seed``
arm          none                               ``load_traces(arm=...)``, or e.g.
                                                ``fields={"arm": "info.agent_info.llm"}``
outcome      ``reward_info.reward`` (else       a reward of exactly 0 or 1 is read as
             ``reward``)                        false / true (tau2's rewards are binary);
                                                any other value stays a number; the value
                                                as written is ``metadata.reward``
cost_usd     ``agent_cost``                     the agent's cost only, never added to
                                                ``user_cost_usd``
user_cost_usd ``user_cost``                     the user simulator's cost
latency_s    ``duration`` (else                 seconds
             ``duration_sec``)
model        ``info.agent_info.llm`` (else      ``metadata.model``
             ``agent_model``)
harness      ``info.agent_info.implementation`` ``metadata.harness`` (``llm_agent``)
steps        ``messages``                       each agent tool call, below
============ ================================== =========================================

A ``fields`` entry is a dotted path looked up in the simulation, then (for
a results document) in the document (``"info.environment_info.domain_name"``,
``"timestamp"``). A default path the input lacks leaves an optional field
out; a path you gave that a simulation lacks rejects it.

Steps
    Each ``tool_calls`` entry (``{id, name, arguments, requestor}``) of an
    assistant message whose ``requestor`` is not ``"user"``, in order;
    ``args`` is ``arguments``. Its observation is the ``tool`` message whose
    ``id`` matches (tau2 names the call's id ``id`` on the tool message; the
    reshaped data's ``tool_call_id`` is read too), with tau2's ``error``
    flag deciding ``status`` (``"error"``: the content is the step's
    error). Tool calls made by the user simulator (in user messages, or with
    ``requestor: "user"``: telecom's user-side device tools) are not the
    agent's steps: they and their answers are counted in
    ``metadata.user_tool_calls`` / ``user_tool_errors``. A call never
    answered keeps observation ``null``. Step ``metadata`` has ``message``
    and ``call_id``; the message's first step has its ``cost`` as
    ``cost_usd``, and the calls of one message share a ``parallel`` id (its
    index) when they are two or more.
Tokens
    Assistant messages' ``usage`` (``prompt_tokens`` / ``completion_tokens``)
    as the ``openai`` format reads them (:mod:`.messages`): the run's
    ``tokens_in`` / ``tokens_out`` (and cached / reasoning tokens where
    reported) are the sums over every assistant message; a message's tokens
    are also on its first call's step. A message without ``usage`` (tau2's
    fixed greeting) adds nothing; no usage at all leaves the tokens unknown,
    never 0. User
    messages' usage (the simulator's) goes to ``metadata.user_tokens_in`` /
    ``user_tokens_out``.
Metadata
    ``model``, ``harness``, ``user_model``, ``domain``, ``reward``,
    ``reward_basis``, ``db_match``, ``action_checks`` / ``action_matches``
    (counts), ``termination_reason``, ``simulation_seed``,
    ``user_tool_calls``, ``user_tool_errors``, the user tokens, and every
    other small top-level scalar of the simulation (``timestamp``,
    ``start_time``, the reshaped data's ``policy_variant``, ...).

Bad input
    A simulation never evaluated (``reward_info: null``), or without a
    reward, task or trial, is read whole with the field named in
    ``Item.missing``: the loader fills it from the file path or an outcomes
    table (``fields={"path": ...}``, ``outcomes=``) or rejects the run with
    that reason. Rejections name the simulation's field: a ``trial`` that is
    not an integer, an outcome that is not a number or true/false, a
    tool message whose id matches no earlier call, a message whose
    ``role`` is not ``assistant``, ``user``, ``tool`` or ``system``, a call
    without an id or name. A document without a ``simulations`` list is one
    rejection for the file.

Detection keys on a JSON object whose ``info`` object holds ``agent_info``
and ``user_info`` (the results document: ``simulations`` may lie beyond the
first 64 KiB, after ``tasks``), or a simulation object with
``reward_info`` and ``termination_reason``, or the reshaped data's
``sim_id``, ``user_cost`` and ``termination_reason``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats import _fast_path as fast
from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats._message_fields import describe
from agentab.formats._message_parts import (
    Calls,
    Tokens,
    Totals,
    add_step,
    call_arguments,
    check_usage,
    finish,
    in_message,
    observation_of,
    parallel,
    required_text,
    usage_openai,
)
from agentab.formats._missing import absent
from agentab.formats.files import BOM, JSON_SPACE, open_trace_file

__all__ = ["FIELDS", "FORMAT", "sniff"]

#: Default run-level mapping: agentab's name -> the path in a simulation (then in the results document).
FIELDS: dict[str, str] = {
    "run_id": "id", "task_id": "task_id", "seed": "trial", "outcome": "reward_info.reward",
    "cost_usd": "agent_cost", "latency_s": "duration", "model": "info.agent_info.llm",
    "harness": "info.agent_info.implementation", "messages": "messages",
}
#: Tried when the default path is in use and absent (the reshaped shared data's names).
_FALLBACK = {"run_id": "sim_id", "outcome": "reward", "latency_s": "duration_sec", "model": "agent_model"}
#: Top-level simulation keys read into named places (not copied to metadata as they are).
_USED = frozenset({"id", "sim_id", "task_id", "trial", "seed", "reward", "agent_cost", "user_cost", "duration",
                   "duration_sec", "agent_model", "messages", "reward_info"})
_MAX_TEXT = 256
_ROLES = frozenset({"assistant", "user", "tool", "system"})
_decode = msgspec.json.decode


# --------------------------------------------------------------------------- #
# Run-level fields
# --------------------------------------------------------------------------- #
def _find(sim: dict[str, Any], doc: dict[str, Any] | None, fields: Mapping[str, str], key: str
          ) -> tuple[str, Any]:
    """(path, value) of a mapped field: the simulation first, then the document; fallback names for defaults."""
    path = fields[key]
    names = [path] + ([_FALLBACK[key]] if key in _FALLBACK and path == FIELDS.get(key) else [])
    for name in names:
        value = lookup(sim, name)
        if value is MISSING and doc is not None:
            value = lookup(doc, name)
        if value is not MISSING:
            return name, value
    return path, MISSING


def _given(fields: Mapping[str, str], key: str) -> bool:
    """Whether the user mapped ``key`` (a path they gave must be there)."""
    return key in fields and fields[key] != FIELDS.get(key)


def _outcome(sim: dict[str, Any], doc: dict[str, Any] | None, fields: Mapping[str, str],
             missing: dict[str, tuple[str | None, str]]) -> tuple[Any, Any]:
    """(outcome, value as written): a reward of exactly 0 or 1 is a bool; (MISSING, MISSING) when the simulation
    has none (never evaluated), named in ``missing``."""
    if fields["outcome"] == FIELDS["outcome"] and "reward_info" in sim and sim["reward_info"] is None:
        absent(missing, "outcome", "reward_info",
               "reward_info is null: the simulation was never evaluated, so it has no outcome")
        return MISSING, MISSING
    name, value = _find(sim, doc, fields, "outcome")
    if value is MISSING or value is None:
        absent(missing, "outcome", name, f"no outcome: the simulation has no {name!r}")
        return MISSING, MISSING
    if isinstance(value, bool):
        return value, value
    if not isinstance(value, (int, float)) or abs(value) > 1e100 or not math.isfinite(value):
        raise Reject(name, f"outcome must be a finite number or true/false, got {describe(value)}")
    if value == 0 or value == 1:
        return bool(value), value
    return float(value), value


def _run_fields(sim: dict[str, Any], doc: dict[str, Any] | None, fields: Mapping[str, str], where: str,
                line: int, missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The record without steps (identity, outcome, cost, latency, model) and its metadata; the required fields
    the simulation lacks are left out and named in ``missing``."""
    out: dict[str, Any] = {}
    for key in ("run_id", "task_id"):
        name, value = _find(sim, doc, fields, key)
        if value is MISSING or value is None:
            if key == "task_id" or _given(fields, key):
                absent(missing, key, name, f"no {key}: the simulation has no {name!r}")
            else:
                out[key] = f"{where}:{line}"
        elif (isinstance(value, str) and value) or (type(value) is int):
            out[key] = value
        else:
            raise Reject(name, f"{key} must be non-empty text or an integer, got {describe(value)}")
    name, value = _find(sim, doc, fields, "seed")
    if value is MISSING or value is None:
        absent(missing, "seed", name, f"no seed: the simulation has no {name!r}")
    elif type(value) is not int:
        raise Reject(name, f"seed must be an integer, got {describe(value)}")
    else:
        out["seed"] = value
    outcome, reward = _outcome(sim, doc, fields, missing)
    if outcome is not MISSING:
        out["outcome"] = outcome
    meta: dict[str, Any] = {}
    for key in ("cost_usd", "latency_s", "arm", "model", "harness"):
        if key not in fields:
            continue
        name, value = _find(sim, doc, fields, key)
        if value is MISSING or value is None:
            if _given(fields, key):
                raise Reject(name, f"no {key}: the simulation has no {name!r}")
            continue
        if key in ("cost_usd", "latency_s"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise Reject(name, f"{key} must be a number >= 0, got {describe(value)}")
            out[key] = value
        elif not isinstance(value, str) or not value:
            raise Reject(name, f"{key} must be non-empty text, got {describe(value)}")
        elif key == "arm":
            out["arm"] = value
        else:
            meta[key] = value
    user_cost = sim.get("user_cost")
    if isinstance(user_cost, (int, float)) and not isinstance(user_cost, bool) and 0 <= user_cost < math.inf:
        out["user_cost_usd"] = user_cost  # the user simulator's, apart from the agent's cost_usd
    elif user_cost is not None:
        meta["user_cost"] = user_cost  # not an amount: kept as written
    out["metadata"] = _metadata(sim, doc, meta, reward)
    return out


def _metadata(sim: dict[str, Any], doc: dict[str, Any] | None, meta: dict[str, Any], reward: Any) -> dict[str, Any]:
    """Small top-level scalars of the simulation, what tau2 says about the run around it, then ``meta``."""
    extra: dict[str, Any] = {}
    for key, value in sim.items():
        if key in _USED:
            continue
        if value is None or isinstance(value, (bool, int, float)) or (
                isinstance(value, str) and len(value) <= _MAX_TEXT):
            extra[key] = value
    if "seed" in sim:
        extra["simulation_seed"] = sim["seed"]
    info = doc.get("info") if doc is not None else None
    if isinstance(info, dict):
        for key, path in (("user_model", "user_info.llm"), ("domain", "environment_info.domain_name"),
                          ("git_commit", "git_commit")):
            value = lookup(info, path)
            if isinstance(value, str) and value:
                extra[key] = value
    if doc is not None and isinstance(doc.get("timestamp"), str):
        extra["results_timestamp"] = doc["timestamp"]
    if reward is not MISSING:
        extra["reward"] = reward
    extra.update(_reward_details(sim.get("reward_info")))
    extra.update(meta)
    return extra


def _reward_details(info: Any) -> dict[str, Any]:
    """``db_match``, ``reward_basis`` and the action checks' counts of a ``reward_info``."""
    if not isinstance(info, dict):
        return {}
    out: dict[str, Any] = {}
    db = info.get("db_check")
    if isinstance(db, dict) and isinstance(db.get("db_match"), bool):
        out["db_match"] = db["db_match"]
    basis = info.get("reward_basis")
    if isinstance(basis, list) and all(isinstance(b, str) for b in basis):
        out["reward_basis"] = basis
    checks = info.get("action_checks")
    if isinstance(checks, list):
        out["action_checks"] = len(checks)
        out["action_matches"] = sum(1 for c in checks if isinstance(c, dict) and c.get("action_match") is True)
    return out


# --------------------------------------------------------------------------- #
# Steps
# --------------------------------------------------------------------------- #
class _Run:
    """The state of one simulation's messages while its steps are built."""

    __slots__ = ("calls", "pending", "steps", "totals", "user")

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.calls = Calls("messages")
        self.pending = Tokens()
        self.totals = Totals()
        self.user = {"user_tool_calls": 0, "user_tool_errors": 0}

    def user_tokens(self, usage: Any) -> None:
        tin, tout, *_ = usage_openai(usage)
        for key, value in (("user_tokens_in", tin), ("user_tokens_out", tout)):
            if value is not None:
                self.user[key] = self.user.get(key, 0) + value


def _calls(msg: dict[str, Any], i: int, run: _Run) -> None:
    tool_calls = msg.get("tool_calls")
    if not tool_calls:
        return
    if not isinstance(tool_calls, list):
        raise Reject("tool_calls", f"expected a list of tool calls, got {describe(tool_calls)}")
    agents = msg.get("role") == "assistant"
    first: dict[str, Any] | None = None
    start = len(run.steps)
    for j, call in enumerate(tool_calls):
        try:
            if not isinstance(call, dict):
                raise Reject(None, f"expected a tool call object, got {describe(call)}")
            call_id = required_text(call.get("id"), "id", "tool call id")
            if not agents or call.get("requestor") == "user":
                run.calls.new(call_id, None)
                run.user["user_tool_calls"] += 1
                continue
            name = required_text(call.get("name"), "name", "tool name")
            args = call_arguments(call.get("arguments"), "arguments")
            step = add_step(run.steps, name, args, i, call_id, msg.get("timestamp"), first, run.pending)
            run.calls.new(call_id, step)
            if first is None:
                first = step
                cost = msg.get("cost")
                if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < math.inf:
                    step["cost_usd"] = cost  # the message's cost: the model call that made the step
        except Reject as problem:
            problem.field = f"tool_calls[{j}].{problem.field}" if problem.field else f"tool_calls[{j}]"
            raise
    parallel(run.steps, start, i)


def _answer(msg: dict[str, Any], i: int, run: _Run) -> None:
    key = "id" if "id" in msg else "tool_call_id"
    step = run.calls.answer(msg.get(key), key, i)
    if step is None:
        if msg.get("error") is True:
            run.user["user_tool_errors"] += 1
        return
    step["observation"] = observation_of(msg, msg.get("content"))
    if msg.get("timestamp") is not None:
        step["ended_at"] = msg["timestamp"]


def _message(msg: Any, i: int, run: _Run) -> None:
    if not isinstance(msg, dict):
        raise Reject(None, f"expected a message object, got {describe(msg)}")
    role = msg.get("role")
    if role not in _ROLES:
        raise Reject("role", f"a message role this reader does not know: {describe(role)} "
                             "(expected assistant, user, tool or system)")
    if role == "tool":
        parts = msg.get("tool_messages")  # tau2's MultiToolMessage: several answers in one message
        if isinstance(parts, list):
            for j, part in enumerate(parts):
                try:
                    if not isinstance(part, dict):
                        raise Reject(None, f"expected a tool message object, got {describe(part)}")
                    _answer(part, i, run)
                except Reject as problem:
                    problem.field = f"tool_messages[{j}].{problem.field}" if problem.field else f"tool_messages[{j}]"
                    raise
        else:
            _answer(msg, i, run)
        return
    if role == "assistant":
        run.pending.clear()
        usage = msg.get("usage")
        if usage is not None:
            counts = usage_openai(usage)
            run.pending.add(*counts)
            run.totals.add(*counts)
    elif role == "user" and msg.get("usage") is not None:
        run.user_tokens(msg["usage"])
    start = len(run.steps)
    _calls(msg, i, run)
    if role == "assistant":
        check_usage(run.steps, start, msg.get("usage"), run.totals)


def _convert(sim: Any, doc: dict[str, Any] | None, fields: Mapping[str, str], where: str, line: int,
             source: str | None = None) -> Item:
    """One simulation -> an Item (a record, or a rejection naming the field)."""
    if not isinstance(sim, dict):
        return Item(line, reason=f"expected a simulation object, got {describe(sim)}", source=source)
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        out = _run_fields(sim, doc, fields, where, line, missing)
        name, messages = _find(sim, doc, fields, "messages")
        if not isinstance(messages, list):
            raise Reject(name, "no messages: the simulation has no message list" if messages in (MISSING, None)
                         else f"expected a list of messages, got {describe(messages)}")
        run = _Run()
        for i, msg in enumerate(messages):
            try:
                _message(msg, i, run)
            except Reject as problem:
                raise in_message(problem, name, i) from None
        out["metadata"].update(run.user)
        return Item(line, record=finish(out, run.steps, run.totals), source=source, missing=missing or None)
    except Reject as problem:
        return Item(line, field=problem.field, reason=problem.reason, source=source)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read", source=source)


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #
def _plan(fields: FieldMap | None) -> dict[str, str]:
    plan = dict(FIELDS)
    plan.update(fields or {})
    return plan


def _trimmed(fields: Mapping[str, str]) -> bool:
    """Whether simulations may be decoded without the message keys the reader never reads (:mod:`._fast_path`)."""
    return fields["messages"] == "messages" and fast.untouched(fields, ("messages",), "messages")


def _convert_raw(raw: bytes | msgspec.Raw, doc: dict[str, Any] | None, fields: Mapping[str, str], where: str,
                 line: int, trim: bool) -> tuple[Item, Callable[[], Item] | None]:
    """One simulation's JSON -> ``(item, slow)`` for :func:`~._fast_path.timed`: built in columns when it is the plain
    case (decoded without the unread message keys), else read whole (``slow`` None)."""
    sim = fast.tau2_simulation(raw) if trim else None
    if sim is None:
        return _convert(_decode(raw), doc, fields, where, line), None
    def slow() -> Item:
        return _convert(_decode(raw), doc, fields, where, line)
    try:
        return _fast(sim, doc, fields, where, line), slow
    except (fast.Slow, Reject, RecursionError):
        return fast.whole_first(_convert(sim, doc, fields, where, line), slow), None


def _fast(sim: dict[str, Any], doc: dict[str, Any] | None, fields: Mapping[str, str], where: str, line: int) -> Item:
    """The plain case in columns (:func:`~._fast_path.tau2_walk`); :class:`~._fast_path.Slow` otherwise."""
    missing: dict[str, tuple[str | None, str]] = {}
    out = _run_fields(sim, doc, fields, where, line, missing)
    messages = sim.get("messages")
    if missing or type(messages) is not list:  # a run the loader completes is given as a dict (Item.missing)
        raise fast.Slow
    steps, totals, user = fast.tau2_walk(messages)
    out["metadata"].update(user)
    return Item(line, record=fast.prepared(out, steps, totals), missing=missing or None)


def _read_lines(data: bytes, fields: Mapping[str, str], where: str) -> Iterator[Item]:
    yield from fast.timed(_line_entries(data, fields, where))


def _line_entries(data: bytes, fields: Mapping[str, str], where: str
                  ) -> Iterator[tuple[Item, Callable[[], Item] | None]]:
    trim = _trimmed(fields)
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip(JSON_SPACE):
            continue
        try:
            entry = _convert_raw(raw, None, fields, where, number, trim)
        except msgspec.DecodeError as err:
            entry = Item(number, reason=f"malformed JSON: {err}"), None
        except RecursionError:
            entry = Item(number, reason="JSON nested too deeply to read"), None
        yield entry


def _read_document(top: dict[str, msgspec.Raw], fields: Mapping[str, str], where: str) -> Iterator[Item]:
    """A results document: its simulations, each decoded only when converted (``tasks`` is never decoded)."""
    try:
        sims = _decode(top["simulations"], type=list[msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError):
        yield Item(1, field="simulations", reason="`simulations` must be a list of simulation objects")
        return
    doc = {key: _decode(value) for key, value in top.items() if key in ("timestamp", "info")}
    yield from fast.timed(_document_entries(sims, doc, fields, where))


def _document_entries(sims: list[msgspec.Raw], doc: dict[str, Any], fields: Mapping[str, str], where: str
                      ) -> Iterator[tuple[Item, Callable[[], Item] | None]]:
    trim = _trimmed(fields)
    for position, raw in enumerate(sims, start=1):
        try:
            entry = _convert_raw(raw, doc, fields, where, position, trim)
        except RecursionError:
            entry = Item(position, reason="JSON nested too deeply to read"), None
        yield entry


def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The simulations of a tau2 results file (or of simulations one per line / in a JSON array)."""
    plan = _plan(fields)
    where = str(path)
    with open_trace_file(Path(path)) as fh:
        data = fh.read().removeprefix(BOM)
    body = data.lstrip(JSON_SPACE)
    if not body:
        return
    plain = fast.tau2_document(body) if body[:1] == b"{" else None
    if plain is not None:
        yield from fast.timed(_document_entries(*plain, plan, where))
        return
    try:
        top = _decode(body, type=dict[str, msgspec.Raw] | list[msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError):
        if body[:1] == b"{":  # JSON Lines
            yield from _read_lines(data, plan, where)
        else:
            yield Item(1, reason="not a tau2-bench results file: expected a JSON object with `simulations`, "
                                 "or simulations one per line; the whole file was left out")
        return
    except RecursionError:
        yield Item(1, reason="JSON nested too deeply to read; the whole file was left out")
        return
    if isinstance(top, list):
        for position, raw in enumerate(top, start=1):
            yield _convert(_decode(raw), None, plan, where, position)
    elif "simulations" in top:
        yield from _read_document(top, plan, where)
    elif "info" in top and "tasks" in top:
        yield Item(1, field="simulations", reason="a tau2-bench results document without `simulations`")
    else:
        yield _convert({key: _decode(value) for key, value in top.items()}, None, plan, where, 1)


def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
    """In-memory results documents (``Results.model_dump()``) or simulation dicts; ``line`` counts simulations."""
    plan = _plan(fields)
    position = 0
    for obj in objects:
        if isinstance(obj, dict) and isinstance(obj.get("simulations"), list):
            doc = {key: obj[key] for key in ("timestamp", "info") if key in obj}
            for sim in obj["simulations"]:
                position += 1
                yield _convert(sim, doc, plan, name, position)
        else:
            position += 1
            yield _convert(obj, None, plan, name, position)


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
_INFO = re.compile(rb'"info"\s*:\s*\{')
_AGENT_INFO = re.compile(rb'"agent_info"\s*:\s*\{')
_USER_INFO = re.compile(rb'"user_info"\s*:\s*\{')
_REWARD_INFO = re.compile(rb'"reward_info"\s*:')
_TERMINATION = re.compile(rb'"termination_reason"\s*:')
_SIM_ID = re.compile(rb'"sim_id"\s*:')
_USER_COST = re.compile(rb'"user_cost"\s*:')
_MESSAGES = re.compile(rb'"messages"\s*:\s*\[')


def sniff(head: bytes, name: str = "") -> bool:
    """A tau2 results document (``info`` with ``agent_info`` and ``user_info``), or simulations one per line.

    A simulation: ``reward_info`` and ``termination_reason`` keys, or the
    reshaped shared data's ``sim_id``, ``user_cost`` and
    ``termination_reason`` with a ``messages`` list.
    """
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    if body[:1] not in (b"{", b"[") or b'"resourceSpans"' in head:
        return False
    if _INFO.search(head) and _AGENT_INFO.search(head) and _USER_INFO.search(head):
        return True
    if not _TERMINATION.search(head):
        return False
    return bool(_REWARD_INFO.search(head) or (_SIM_ID.search(head) and _USER_COST.search(head)
                                              and _MESSAGES.search(head)))


FORMAT = Format(
    name="tau2",
    summary="tau2-bench results: {timestamp, info, tasks, simulations} documents, or simulations one per line",
    example='{"timestamp": "2025-10-05T07:52:53", "info": {"agent_info": {"implementation": "llm_agent", '
    '"llm": "xai/grok-3"}, "user_info": {"implementation": "user_simulator", "llm": "xai/grok-3"}}, "tasks": [], '
    '"simulations": [{"id": "s1", "task_id": "8", "trial": 0, "duration": 21.3, "agent_cost": 0.02, '
    '"user_cost": 0.01, "termination_reason": "user_stop", "reward_info": {"reward": 1.0}, "messages": '
    '[{"role": "assistant", "tool_calls": [{"id": "c1", "name": "get_user_details", "arguments": '
    '{"user_id": "u1"}, "requestor": "assistant"}], "usage": {"prompt_tokens": 812, "completion_tokens": 44}}, '
    '{"role": "tool", "id": "c1", "content": "{}", "requestor": "assistant", "error": false}]}]}',
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
)
