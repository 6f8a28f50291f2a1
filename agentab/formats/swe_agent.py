"""SWE-agent trajectories (format ``"swe-agent"``): one ``.traj`` file per run, read without SWE-agent installed.

SWE-agent (github.com/SWE-agent/SWE-agent) writes one JSON document per
instance it works on, ``<instance_id>.traj`` (1.x: in
``<output_dir>/<instance_id>/``): ``{"trajectory": [...], "history": [...],
"info": {...}, "replay_config": ..., "environment": ...}``. Field names follow
SWE-agent's ``sweagent/types.py`` (``TrajectoryStep``, ``HistoryItem``,
``AgentInfo``), ``sweagent/agent/agents.py`` (``get_trajectory_data``,
``add_step_to_trajectory``, ``handle_action``, ``forward_with_handling``) and
``sweagent/agent/models.py`` (``InstanceStats``); 0.x files (no
``execution_time``, ``history`` items with ``is_demo``) read the same way.

Mapping to the trace record
---------------------------
============ ============================================================ ==============================
record       from                                                         notes
============ ============================================================ ==============================
run_id       the file's path as given                                     unique by construction
task_id      ``replay_config.problem_statement.id``, else the file name   the SWE-bench instance id
             without ``.traj``
seed         none: 0                                                      a .traj records no seed
outcome      none: left out (``Item.missing``)                            SWE-bench's evaluation report
                                                                          holds it, not the .traj
model        ``replay_config.agent.model.name``                           metadata.model, when present
harness      ``"SWE-agent"`` (+ ``info.swe_agent_version``)               metadata.harness
cost_usd     ``info.model_stats.instance_cost``                           missing when absent, or 0 with
                                                                          steps or ``api_calls`` > 0
tokens_in    ``info.model_stats.tokens_sent`` (run total)                 unknown when 0 with steps or
                                                                          ``api_calls`` > 0 (Tokens below)
tokens_out   ``info.model_stats.tokens_received`` (run total)             as tokens_in
latency_s    none: missing                                                see ``execution_time`` below
steps        ``trajectory[]``: each entry with an ``action``              rules below
terminal     ``info.submission``: the patch's ``diff --git`` files        missing without a submission
============ ============================================================ ==============================

``fields={"name": "dotted.path"}`` reads a run-level field from the document
instead (``lookup`` rules: ``"info.exit_status"``, ``"replay_config.agent.name"``);
a path you gave that the file lacks rejects the run, except for run_id,
task_id, seed and outcome: those are named in ``Item.missing`` (as is the
outcome when no path is given), for the loader to fill from the file path or
an outcomes table (``fields={"path": ...}``, ``outcomes=``; SWE-bench's
``report.json``), and the run is rejected with that reason when nothing
fills them. This is how an outcome kept
in the file by your own tooling is read (``fields={"outcome": "info.resolved"}``:
a boolean or a number).

Steps
    One per ``trajectory`` entry whose ``action`` is not empty (an entry with
    an empty action is a model reply SWE-agent could not parse, or the
    automatic exit after an error: no tool ran; counted in
    ``metadata.entries_without_action``). The tool is the function name of the
    entry's call when the run used function calling (the ``history``
    assistant item with the same ``action``, in order, has ``tool_calls``),
    with ``args`` the call's parsed ``arguments`` (the step's
    ``metadata.action`` keeps the command text, ``tool_call_id`` the id);
    otherwise the command's first word (``find_file``, ``edit``, ``python``),
    with ``args = {"command": <the action text>}``; so is an entry the
    history does not hold (SWE-agent leaves a run's final step, e.g.
    ``submit``, out of its history).
Observation
    ``{"content": <observation text>}``. A ``status`` only where the file
    shows one: ``"error"`` when the command was cancelled by SWE-agent's
    timeout (the text of ``command_cancelled_timeout_template``), or when it
    was not run at all (a file with ``execution_time``: 0 seconds and no
    output, as SWE-agent leaves a blocked command or a bash syntax error it
    re-asks the model about). SWE-agent does not record exit codes, so other
    steps have no status, and a run none of whose steps shows an error has an
    unknown error count, not 0.
Tokens
    ``info.model_stats`` has only the run's totals (``tokens_sent``,
    ``tokens_received``, over every model call, also those that ran no
    command): they are the run's ``tokens_in`` / ``tokens_out`` totals, and
    each step's share is unknown (its tokens absent). Zero tokens sent by a run that
    has steps or ``api_calls`` > 0 (a replay, or a human demonstration: a
    "model" that counts nothing) are unknown, not 0; so is a cost of 0 then
    (also with tokens: a model SWE-agent has no price for). Zeros are kept
    only for a run that made no call and took no step.
Times
    A ``.traj`` has no timestamps. ``execution_time`` is how long the command
    ran in the environment (not the model's time): kept per step as
    ``metadata.execution_time_s``, and its sum as the run's
    ``metadata.execution_time_s`` when every step has one. The run's wall-clock
    time is not recorded, so ``latency_s`` is missing.
Metadata
    ``model``, ``harness``, ``environment``, ``exit_status``,
    ``model_stats`` (as written), ``api_calls``, where the task id came from
    (``task_from``), ``entries`` (trajectory entries),
    ``entries_without_action``, ``execution_time_s``, and for a retry-loop
    file (``attempts``) ``attempts`` (how many) and ``best_attempt_idx``: the
    steps are the chosen attempt's, cost and tokens the total over attempts
    (as SWE-agent writes them).

Bad input
    One rejection per file, naming the field: not JSON, not an object, no
    ``trajectory`` list (a demonstration file has only ``history``; a
    retry-loop file saved before choosing has only ``attempts``), an entry
    that is not an object or whose ``action`` / ``observation`` is not text
    (``trajectory[3].action``), a negative or non-numeric ``execution_time``,
    ill-typed ``model_stats`` values, unparsable ``tool_calls`` arguments.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import (
    MISSING,
    FieldMap,
    Format,
    Item,
    Reject,
    lookup,
    token_count,
)
from agentab.formats._fast_path import Slow, prepared, untouched, whole_first
from agentab.formats._missing import absent
from agentab.formats._swe_agent_fast import (
    CANCELLED,
    NOT_RUN,
    TIMEOUT,
    as_dicts,
    trimmed,
    walk,
)
from agentab.formats.files import BOM, decode_json, read_trace_bytes

__all__ = ["FIELDS", "FORMAT", "convert", "sniff"]

#: Default field mapping: the outcome from a top-level ``outcome`` key (a .traj has none of its own: it is
#: SWE-bench's verdict, added by the user; without it the run is rejected naming the key); other fields by the
#: rules above. ``fields=`` entries are dotted paths into the document.
FIELDS: dict[str, str] = {"outcome": "outcome"}

_HARNESS = "SWE-agent"
#: The run-level fields a record needs: a path the document lacks leaves them to the loader (Item.missing).
_REQUIRED = ("run_id", "task_id", "seed", "outcome")
_NO_VERDICT = " (a .traj records no verdict: SWE-bench's evaluation report holds it)"
_DIFF = re.compile(r"^diff --git a/(.*?) b/(.*)$")
#: A .traj's top level begins with one of these keys (SWE-agent 0.x and 1.x, retry-loop files).
_FIRST_KEY = re.compile(rb'\s*\{\s*"(?:environment|trajectory|history|info|attempts|replay_config)"\s*:')
#: Without the suffix: ``trajectory`` (maybe after ``environment``) holding objects with action/observation.
_CONTENT = re.compile(rb'\s*\{\s*(?:"environment"\s*:\s*"[^"]*"\s*,\s*)?"trajectory"\s*:\s*\[\s*\{')


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
def sniff(head: bytes, name: str) -> bool:
    """A SWE-agent ``.traj``: the ``.traj`` suffix (``.gz`` too) and an object whose first key is one of a
    .traj's, or any name with ``trajectory`` as the first key (after ``environment``) holding entries with
    ``action`` and ``observation`` keys. mini-SWE-agent's ``.traj.json`` (``messages``, ``trajectory_format``)
    has no ``trajectory`` key and is never claimed."""
    text = head.removeprefix(BOM)
    lower = name.lower().removesuffix(".gz")
    if b'"trajectory_format"' in text:
        return False
    if lower.endswith(".traj"):
        return _FIRST_KEY.match(text) is not None
    return _CONTENT.match(text) is not None and b'"action"' in text and b'"observation"' in text


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #
def _trimmed(raw: bytes, fields: FieldMap) -> dict[str, Any] | None:
    """The document without the entry keys the reader never reads (:func:`._swe_agent_fast.trimmed`: entries
    and history items as structs), or None (decode it whole)."""
    if not untouched(fields, ("trajectory", "history"), ""):
        return None
    return trimmed(raw)


def _read_file(path: Path, fields: FieldMap) -> Iterator[Item]:
    """The one run of a ``.traj`` file (or its rejection)."""
    raw = read_trace_bytes(path)
    doc = _trimmed(raw, fields)
    if doc is not None:
        try:
            item = _fast_item(doc, path.as_posix(), _stem(path.name), fields)
        except (Slow, Reject, RecursionError):  # read the usual way (a rejection: from the whole document)
            item = whole_first(_item(as_dicts(doc), 1, path.as_posix(), _stem(path.name), fields),
                               lambda: _item(msgspec.json.decode(raw), 1, path.as_posix(), _stem(path.name), fields))
        yield item
        return
    try:
        doc = msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        yield Item(1, reason=f"not a SWE-agent .traj: not JSON ({err})")
        return
    yield _item(doc, 1, path.as_posix(), _stem(path.name), fields)


def _read_objects(objects: Sequence[Any], name: str, fields: FieldMap) -> Iterator[Item]:
    """Runs from .traj documents in memory: run ids ``name[k]``; the task from the document or ``fields``."""
    for k, doc in enumerate(objects, 1):
        yield _item(doc, k, f"{name}[{k}]", None, fields)


def _stem(name: str) -> str:
    lower = name.lower()
    for suffix in (".traj.gz", ".traj", ".json.gz", ".json"):
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


#: The ``fields`` the fast path reads (run-level values it checks as the schema would); any other: the usual way.
_FAST_FIELDS = frozenset({*_REQUIRED, "model", "harness"})


def _fast_item(doc: dict[str, Any], run_id: str, stem: str, fields: FieldMap) -> Item:
    """The plain case (:mod:`._swe_agent_fast`) in columns; :class:`Slow` (or a Reject) otherwise."""
    if not fields.keys() <= _FAST_FIELDS:
        raise Slow
    missing: dict[str, tuple[str | None, str]] = {}
    record = _record(doc, run_id, stem, fields, missing, walk)
    if record.get("tokens_in") is None or record.get("tokens_out") is None:
        raise Slow  # no run totals: the decoder's rules for a record of the old shape
    run, task, seed, outcome = record.get("run_id"), record.get("task_id"), record.get("seed"), record.get("outcome")
    if not ((type(task) is str and task) or type(task) is int or task is None) or not (type(run) is str or run is None):
        raise Slow  # the schema's rejection, or an integer run id (the overlay matches it as given)
    if not (type(seed) is int or seed is None) or not (type(outcome) in (bool, int, float) or outcome is None):
        raise Slow  # the schema's rejection
    steps = record.pop("steps")
    totals = {"tokens_in": record.pop("tokens_in"), "tokens_out": record.pop("tokens_out")}
    return Item(1, record=prepared(record, steps, totals), missing=missing or None)


def _item(doc: Any, line: int, run_id: str, stem: str | None, fields: FieldMap) -> Item:
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        return Item(line, record=convert(doc, run_id, stem, fields, missing), missing=missing or None)
    except Reject as err:
        return Item(line, field=err.field, reason=err.reason)


def convert(doc: Any, run_id: str, stem: str | None = None, fields: FieldMap | None = None,
            missing: dict[str, tuple[str | None, str]] | None = None) -> dict[str, Any]:
    """One parsed .traj document as a trace-record dict (:class:`Reject` when it cannot be).

    The required fields the document does not hold (the outcome, always unless ``fields`` names it; the task
    of a document in memory without an instance id) are left out, and named with ``(field, reason)`` in
    ``missing`` when given (:attr:`~agentab.formats._base.Item.missing`).

    Parameters
    ----------
    doc : object
        The parsed JSON document.
    run_id : str
        The run's id (the file's path).
    stem : str or None
        The file name without ``.traj``: the task when the document names none.
    fields : mapping, optional
        agentab name -> dotted path into the document, overriding the rules.
    """
    if not isinstance(doc, dict):
        raise Reject(None, f"not a SWE-agent .traj: expected a JSON object, got {type(doc).__name__}")
    return _record(doc, run_id, stem, fields or {}, {} if missing is None else missing, _walk)


def _walk(trajectory: list[Any], history: Any) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    steps, meta = _steps(trajectory, _history_calls(history))
    return steps, meta, len(steps)


def _record(doc: dict[str, Any], run_id: str, stem: str | None, fields: FieldMap,
            missing: dict[str, tuple[str | None, str]], walk: Any) -> dict[str, Any]:
    """:func:`convert`, its steps built by ``walk(trajectory, history) -> (steps, metadata, number of steps)``:
    the usual walk's step dicts, or the fast path's columns."""
    trajectory = _trajectory(doc)
    info = doc.get("info")
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise Reject("info", f"expected an object, got {type(info).__name__}")
    replay = _replay_config(doc.get("replay_config"))
    steps, meta, n_steps = walk(trajectory, doc.get("history"))
    tokens_in, tokens_out, cost, stats_meta = _model_stats(info, n_steps > 0)
    meta.update(stats_meta)
    task, task_from = _task(replay, stem)
    record: dict[str, Any] = {"run_id": run_id, "task_id": task, "seed": 0, "steps": steps}
    if cost is not None:
        record["cost_usd"] = cost
    state = _terminal_state(info.get("submission"))
    if state is not None:
        record["terminal_state"] = state
    if tokens_in is not None and tokens_out is not None:  # the run's totals: each step's share is not recorded
        record["tokens_in"], record["tokens_out"] = tokens_in, tokens_out
    meta.update(_run_metadata(doc, info, replay))
    if task_from is not None:
        meta["task_from"] = task_from
    record["metadata"] = meta
    if task is None:
        del record["task_id"]
        absent(missing, "task_id", "replay_config.problem_statement.id",
               "no instance id in the document nor a file name: give fields={'task_id': <path>}")
    _apply_fields(doc, record, fields, missing)
    if "outcome" not in record:
        path = fields.get("outcome", FIELDS["outcome"])
        absent(missing, "outcome", path, f"outcome: no `{path}` in the .traj{_NO_VERDICT}")
    return record


def _trajectory(doc: Mapping[str, Any]) -> list[Any]:
    trajectory = doc.get("trajectory", MISSING)
    if trajectory is MISSING:
        if "attempts" in doc:
            raise Reject("trajectory", "a retry-loop .traj saved before an attempt was chosen (only `attempts`); "
                                       "read the final file")
        if "history" in doc:
            raise Reject("trajectory", "no `trajectory`: a demonstration (only `history`), not a run")
        raise Reject("trajectory", "not a SWE-agent .traj: no `trajectory` list")
    if not isinstance(trajectory, list):
        raise Reject("trajectory", f"expected a list, got {type(trajectory).__name__}")
    return trajectory


def _replay_config(value: Any) -> dict[str, Any]:
    """The run's configuration (SWE-agent 1.x writes it as JSON text); {} when absent or unreadable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _history_calls(history: Any) -> list[tuple[str, Any]]:
    """(action, tool_calls) of each assistant history item that took an action, demonstrations skipped."""
    if history is None:
        return []
    if not isinstance(history, list):
        raise Reject("history", f"expected a list, got {type(history).__name__}")
    calls = []
    for k, item in enumerate(history):
        if not isinstance(item, dict):
            raise Reject(f"history[{k}]", f"expected an object, got {type(item).__name__}")
        if item.get("role") == "assistant" and not item.get("is_demo") and isinstance(item.get("action"), str):
            tool_calls = item.get("tool_calls")
            if tool_calls is not None and not isinstance(tool_calls, list):
                raise Reject(f"history[{k}].tool_calls", f"expected a list, got {type(tool_calls).__name__}")
            calls.append((item["action"], tool_calls))
    return calls


def _steps(trajectory: list[Any], calls: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps of the trajectory's entries, and run metadata about them.

    Entry and history item are paired in order, comparing actions: an entry not in the history (one
    SWE-agent re-asked about) is left unpaired, so pairing is linear.
    """
    steps: list[dict[str, Any]] = []
    without_action = 0
    times: list[float | None] = []
    j, n_calls = 0, len(calls)
    for i, entry in enumerate(trajectory):
        if type(entry) is not dict:
            raise Reject(f"trajectory[{i}]", f"expected an object, got {type(entry).__name__}")
        action = entry.get("action")
        if type(action) is not str:
            raise Reject(f"trajectory[{i}].action", f"expected the command text, got {json.dumps(action)[:80]}")
        observation = entry.get("observation", "")
        if observation is None:
            observation = ""
        elif type(observation) is not str:
            raise Reject(f"trajectory[{i}].observation", f"expected text, got {type(observation).__name__}")
        seconds = entry.get("execution_time")
        if seconds is not None and (type(seconds) is not float or not seconds >= 0):
            seconds = _seconds(entry, f"trajectory[{i}]")
        tool_calls = None
        if j < n_calls and calls[j][0] == action:
            tool_calls = calls[j][1]
            j += 1
        if not action.strip():
            without_action += 1
            continue
        steps.append(_step(len(steps), action, observation, seconds, tool_calls, f"trajectory[{i}]"))
        times.append(seconds)
    meta: dict[str, Any] = {"entries": len(trajectory), "entries_without_action": without_action}
    if times and None not in times:
        meta["execution_time_s"] = float(sum(times))  # type: ignore[arg-type]
    return steps, meta


def _seconds(entry: Mapping[str, Any], where: str) -> float | None:
    if "execution_time" not in entry or entry["execution_time"] is None:
        return None
    seconds = entry["execution_time"]
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
        raise Reject(f"{where}.execution_time", f"expected seconds >= 0, got {json.dumps(seconds)[:80]}")
    return float(seconds)


def _step(index: int, action: str, observation: str, seconds: float | None, tool_calls: Any,
          where: str) -> dict[str, Any]:
    """One step: the tool call (function calling) or the command, and what the file shows of its result."""
    meta: dict[str, Any] = {}
    if isinstance(tool_calls, list) and tool_calls:
        tool, args, call_id = _function_call(tool_calls, where)
        meta["action"] = action
        if call_id is not None:
            meta["tool_call_id"] = call_id
        if len(tool_calls) > 1:
            meta["tool_calls"] = len(tool_calls)
    else:
        tool, args = action.split(None, 1)[0], {"command": action}
    obs: dict[str, Any] = {"content": observation}
    if "was cancelled because it took more than" in observation and TIMEOUT.match(observation.lstrip()):
        obs.update(status="error", error=CANCELLED)
    elif seconds == 0 and not observation and action.strip() != "exit":
        obs.update(status="error", error=NOT_RUN)
    if seconds is not None:
        meta["execution_time_s"] = seconds
    step: dict[str, Any] = {"index": index, "tool": tool, "args": args, "observation": obs}
    if meta:
        step["metadata"] = meta
    return step


def _function_call(tool_calls: list[Any], where: str) -> tuple[str, dict[str, Any], str | None]:
    """(name, parsed arguments, id) of the entry's (first) function call."""
    call = tool_calls[0]
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        raise Reject(f"{where}.tool_calls[0].function.name", "a tool call without a function name")
    arguments = function.get("arguments", {})  # type: ignore[union-attr]
    call_id = call.get("id")
    call_id = call_id if isinstance(call_id, str) else None
    if isinstance(arguments, str):
        return name, _arguments(arguments, where) if arguments.strip() else {}, call_id
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise Reject(f"{where}.tool_calls[0].function.arguments",
                     f"expected an object, got {type(arguments).__name__}")
    return name, arguments, call_id


def _arguments(text: str, where: str) -> dict[str, Any]:
    """A call's arguments text parsed (an object), or the rejection naming the call. msgspec parses what it can
    (one C call); what it refuses, :mod:`json` reads as before (NaN, integers beyond 64 bits) or rejects."""
    arguments, problem = decode_json(text)
    if problem is not None:
        raise Reject(f"{where}.tool_calls[0].function.arguments", f"arguments are not JSON: {text[:80]!r}")
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise Reject(f"{where}.tool_calls[0].function.arguments",
                     f"expected an object, got {type(arguments).__name__}")
    return arguments


def _count(stats: Mapping[str, Any], key: str) -> int | None:
    return token_count(stats, key, "info.model_stats", whole_floats=True)  # SWE-agent may write 900.0


def _model_stats(info: Mapping[str, Any], acted: bool) -> tuple[int | None, int | None, float | None, dict[str, Any]]:
    """(tokens in, tokens out, cost, metadata) from ``info.model_stats``; unknown stays None.

    ``acted``: the run has steps, so something (a model, a replay, a human demonstrator) replied.
    """
    stats = info.get("model_stats")
    if stats is None:
        return None, None, None, {}
    if not isinstance(stats, dict):
        raise Reject("info.model_stats", f"expected an object, got {type(stats).__name__}")
    sent, received, calls = _count(stats, "tokens_sent"), _count(stats, "tokens_received"), _count(stats, "api_calls")
    cost = stats.get("instance_cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0
                             or not math.isfinite(cost)):
        raise Reject("info.model_stats.instance_cost", f"expected dollars >= 0, got {json.dumps(cost)[:80]}")
    replied = bool(calls) or acted
    counted = not (replied and sent == 0)  # replies, nothing counted: a replayed or human "model"
    meta: dict[str, Any] = {"model_stats": stats}
    if calls is not None:
        meta["api_calls"] = calls
    if sent is None or received is None or not counted:
        sent = received = None
    if cost is not None and cost == 0 and replied:
        cost = None
    return sent, received, None if cost is None else float(cost), meta


def _task(replay: Mapping[str, Any], stem: str | None) -> tuple[str | None, str | None]:
    problem = replay.get("problem_statement")
    task = problem.get("id") if isinstance(problem, dict) else None
    if isinstance(task, str) and task:
        return task, "replay_config.problem_statement.id"
    if stem:
        return stem, "file name"
    return None, None


def _terminal_state(submission: Any) -> dict[str, Any] | None:
    """The files the submitted patch creates, modifies and deletes; None without a submission."""
    if not isinstance(submission, str):
        return None
    created: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    current: list[str] | None = None
    for line in submission.replace("\r", "").split("\n"):
        match = _DIFF.match(line)
        if match:
            modified.append(match.group(2))
            current = modified
        elif current is not None and line.startswith(("new file mode", "deleted file mode")):
            path = current.pop()
            (created if line.startswith("new") else deleted).append(path)
            current = None
        elif line.startswith("@@"):
            current = None
    return {"files_created": created, "files_modified": modified, "files_deleted": deleted}


def _run_metadata(doc: Mapping[str, Any], info: Mapping[str, Any], replay: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    agent = replay.get("agent")
    model = agent.get("model") if isinstance(agent, dict) else None
    if isinstance(model, dict) and isinstance(model.get("name"), str) and model["name"]:
        meta["model"] = model["name"]
    version = info.get("swe_agent_version")
    meta["harness"] = f"{_HARNESS} {version}" if isinstance(version, str) and version else _HARNESS
    for key in ("environment",):
        if isinstance(doc.get(key), str):
            meta[key] = doc[key]
    if isinstance(info.get("exit_status"), str):
        meta["exit_status"] = info["exit_status"]
    if isinstance(doc.get("attempts"), list):
        meta["attempts"] = len(doc["attempts"])
        if isinstance(info.get("best_attempt_idx"), int):
            meta["best_attempt_idx"] = info["best_attempt_idx"]
    return meta


def _apply_fields(doc: Mapping[str, Any], record: dict[str, Any], fields: FieldMap,
                  missing: dict[str, tuple[str | None, str]]) -> None:
    """Run-level fields read from the paths ``fields`` gives: a path the document lacks (or null) leaves a
    required field (run_id, task_id, seed, outcome) to ``missing``, and rejects the run for any other."""
    for name, path in fields.items():
        value = lookup(doc, path)
        if name in _REQUIRED and value in (MISSING, None):
            record.pop(name, None)
            missing.pop(name, None)
            why = _NO_VERDICT if name == "outcome" else ""
            absent(missing, name, path, f"{name}: no `{path}` in the .traj{why}")
            continue
        if name in _REQUIRED:
            missing.pop(name, None)
        if value is MISSING:
            raise Reject(path, f"{name}: no `{path}` in the .traj")
        if name in ("model", "harness"):
            if not isinstance(value, str) or not value:
                raise Reject(path, f"{name}: `{path}` must be text, got {json.dumps(value)[:80]}")
            record["metadata"][name] = value
        elif name == "outcome":
            if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
                record["outcome"] = value
            else:
                raise Reject(path, f"outcome: `{path}` must be true/false or a number, got {json.dumps(value)[:80]}")
        elif name == "messages":
            raise Reject(path, "messages: a .traj's steps come from its `trajectory`, not a message list")
        else:
            record[name] = value


FORMAT = Format(
    name="swe-agent",
    summary="SWE-agent trajectories: one .traj JSON document per instance (trajectory, history, info.model_stats)",
    example='{"trajectory": [{"action": "ls -F", "observation": "src/", "thought": "", "response": "", '
            '"execution_time": 0.2}], "history": [], "info": {"exit_status": "submitted", "model_stats": '
            '{"instance_cost": 0.01, "tokens_sent": 900, "tokens_received": 40, "api_calls": 1}}, "outcome": true}',
    fields=FIELDS,
    sniff=sniff,
    read_file=_read_file,
    read_objects=_read_objects,
    suffixes=(".traj",),
)
