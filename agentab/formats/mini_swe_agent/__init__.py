"""mini-SWE-agent trajectory files (``*.traj.json``) -> agentab trace records.

Input
-----
One run per file: the JSON object mini-SWE-agent saves after every step
(``info``, ``messages``, ``trajectory_format``; the SWE-bench runner adds
``instance_id``). Both layouts are read:

* ``"mini-swe-agent-1"`` (v1.x): text mode only. Each assistant message's
  bash block (the agent's ``action_regex``, by default ```` ```bash ````) is
  one action; the next user message answers it with
  ``<returncode>N</returncode>`` and ``<output>...</output>`` (or the
  ``<output_head>`` / ``<output_tail>`` of a long output).
* ``"mini-swe-agent-1.1"`` (v2.x): an assistant message's parsed actions are
  in ``extra.actions`` (``{"command"}``; with ``tool_call_id`` in tool mode,
  where the answer is the ``role: "tool"`` message with that id), answers
  carry ``extra.returncode`` / ``raw_output`` / ``timestamp``, and the run ends
  with a ``role: "exit"`` message.

A file may be gzip-compressed (``.traj.json.gz``). In memory: a list of such
objects. Every file (or object) gives exactly one
:class:`~agentab.formats.Item`: a trace record, or a rejection naming the
entry at fault (``messages[7].content``).

Run-level fields
----------------
Looked up under these names (dotted paths walk into ``info``), each
overridable with ``load_traces(..., fields={...})``:

============ =================================== ==================================================
agentab      default                             when absent
============ =================================== ==================================================
run_id       ``run_id``                          the file path as given (in memory: ``<name>:<n>``)
task_id      ``instance_id``                     the file name without ``.traj.json``
seed         ``seed``                            0, with ``metadata.seed_assumed: true``
arm          ``arm``                             the arm given to ``load_traces``
model        ``info.config.model.model_name``    not set
harness      ``harness``                         ``"mini-swe-agent"``
outcome      ``outcome``                         **left out**: see below
cost_usd     ``info.model_stats.instance_cost``  unknown; 0 with API calls made is unknown too
latency_s    ``latency_s``                       unknown (the file records no run time)
messages     ``messages``                        a rejection
============ =================================== ==================================================

**Outcome.** A trajectory holds the agent's own ``exit_status`` and
``submission`` (its patch), never whether the patch passes the tests: that is
in SWE-bench's evaluation report (``report.json``, ``resolved``). The record
is therefore given without ``outcome``, named in ``Item.missing``: the loader
joins it from the report (``outcomes=``) or the run is rejected with that
reason; or map it with ``fields={"outcome": ...}`` to a key the file was
given. A task id neither the file nor its name gives is left to the loader
the same way.
``metadata`` keeps ``exit_status``, ``has_patch`` (a non-empty ``submission``),
``api_calls``, ``mini_version``, ``trajectory_format``, ``agent_type``,
``model_type``, ``format_errors`` (model responses without exactly one
action) and the raw ``instance_cost``.

Steps
-----
Each action is a step: tool ``"bash"``, args ``{"command": <the command>}``.
Its observation is ``{"status", "returncode", "content": <the output text>}``:
status ``"ok"`` for return code 0, ``"error"`` otherwise (with ``"error":
"returncode N"``); a timed-out command (the agent's ``timeout_template``
reply, or v2's ``exception_info``) is an error with no return code. The
submitting command (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``) is
answered by the submission: ``{"content": <submission>, "submission":
true}``, with status ``"ok"`` in v2 (which submits only on return code 0)
and no status in v1 (which did not check it). An action never answered keeps
observation ``null``. A reply to an action that is none of these (no
``<returncode>``) is a rejection naming it, not a guess. Assistant messages
without exactly one action (v1 format errors) and the replies to them are not
steps. Each step's ``metadata`` has ``message`` (the assistant message's index).

Tokens and cost
---------------
Each model call's ``extra.response.usage`` gives ``prompt_tokens`` /
``completion_tokens`` (or ``input_tokens`` / ``output_tokens``), and its cost
is ``extra.cost``, else the provider's ``usage.cost`` (OpenRouter). They go
to the step the call made, or (a call that made no step: a format error) to
the next step, or the last one: ``tokens_in`` / ``tokens_out``, ``cost_usd``,
``tokens_cached`` (``prompt_tokens_details.cached_tokens``) and
``tokens_reasoning`` (``completion_tokens_details.reasoning_tokens``; when
above the completion tokens they are not a part of them, as Gemini through
LiteLLM reports them: left out, summed in ``metadata.tokens_reasoning_apart``).
A count is left out (unknown, never 0) when any call given to the step does
not report it; a cost of 0 is unknown (mini-SWE-agent writes 0 when it could
not price a call). The run's token totals are the sums over every model call
(a run without steps too). The actions of one v2 tool-mode response share a
``parallel`` group (the message's index). A count that is not an integer >= 0
is a rejection naming it.
Timestamps (``extra.timestamp``, epoch seconds, v2) give ``started_at`` and
``ended_at``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats._fast_path import Slow, prepared, untouched, whole_first
from agentab.formats._missing import absent
from agentab.formats.files import BOM, JSON_SPACE, read_trace_bytes
from agentab.formats.mini_swe_agent._fast import as_dicts, trajectory, walk
from agentab.formats.mini_swe_agent._steps import Run, describe, walk_steps

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "sniff"]

#: Default run-level mapping: agentab's name -> the key (or dotted path) in the trajectory.
FIELDS: dict[str, str] = {
    "run_id": "run_id", "task_id": "instance_id", "seed": "seed", "arm": "arm",
    "model": "info.config.model.model_name", "harness": "harness", "outcome": "outcome",
    "cost_usd": "info.model_stats.instance_cost", "latency_s": "latency_s", "messages": "messages",
}


_SUFFIXES = (".traj.json.gz", ".traj.json", ".json.gz", ".json")


# --------------------------------------------------------------------------- #
# Run-level fields
# --------------------------------------------------------------------------- #
def _task_from_name(where: str) -> str | None:
    name = Path(where).name
    for suffix in _SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: len(name) - len(suffix)]
            break
    return name or None


def _value(obj: dict[str, Any], fields: FieldMap, key: str) -> tuple[str, Any]:
    name = fields.get(key) or FIELDS[key]
    value = lookup(obj, name)
    return name, (None if value is MISSING else value)


def _identity(obj: dict[str, Any], fields: FieldMap, where: str, line: int, named: bool,
              missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """run_id, task_id, seed and outcome, checked; a task or outcome the file lacks goes to ``missing``."""
    out: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for key in ("run_id", "task_id"):
        name, value = _value(obj, fields, key)
        if value is None:
            if key == "run_id":
                value = where if named else f"{where}:{line}"
            else:
                value = _task_from_name(where) if named else None
                if value is None:
                    absent(missing, key, name, f"no task_id: the trajectory has no {name!r} (and no file name to use)")
                    continue
        elif not ((isinstance(value, str) and value) or (type(value) is int)):
            raise Reject(name, f"{key} must be non-empty text or an integer, got {describe(value)}")
        out[key] = value
    name, seed = _value(obj, fields, "seed")
    if seed is None:
        seed, meta["seed_assumed"] = 0, True
    elif type(seed) is not int:
        raise Reject(name, f"seed must be an integer, got {describe(seed)}")
    out["seed"] = seed
    name, outcome = _value(obj, fields, "outcome")
    if outcome is None:
        absent(missing, "outcome", name, f"no outcome: the trajectory has no {name!r}; a mini-SWE-agent trajectory "
                                         "records the agent's exit status and patch, not whether the patch passes "
                                         "the tests (SWE-bench's evaluation report holds that)")
    elif not isinstance(outcome, (bool, int, float)):
        raise Reject(name, f"outcome must be true/false or a number, got {describe(outcome)}")
    else:
        out["outcome"] = outcome
    if meta:
        out["metadata"] = meta
    return out


def _run_fields(obj: dict[str, Any], fields: FieldMap, out: dict[str, Any]) -> None:
    """arm, model, harness, cost_usd, latency_s and the metadata kept from ``info``."""
    info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
    meta = out.setdefault("metadata", {})
    for key in ("arm", "model", "harness"):
        name, value = _value(obj, fields, key)
        if value is None and key == "harness":
            value = "mini-swe-agent"
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise Reject(name, f"{key} must be non-empty text, got {describe(value)}")
        if key == "arm":
            out["arm"] = value
        else:
            meta[key] = value
    calls = lookup(info, "model_stats.api_calls")
    for key in ("cost_usd", "latency_s"):
        name, value = _value(obj, fields, key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise Reject(name, f"{key} must be a number >= 0, got {describe(value)}")
        if key == "cost_usd" and value == 0 and name == FIELDS["cost_usd"]:
            meta["instance_cost"] = value  # 0 is what mini-SWE-agent writes when it could not price the calls
            if calls != 0:
                continue
        out[key] = value
    for key, path in (("exit_status", "exit_status"), ("api_calls", "model_stats.api_calls"),
                      ("mini_version", "mini_version"), ("agent_type", "config.agent_type"),
                      ("model_type", "config.model_type")):
        value = lookup(info, path)
        if value is not MISSING and value is not None and isinstance(value, (str, int, float)):
            meta[key] = value
    if isinstance(info.get("submission"), str):
        meta["has_patch"] = bool(info["submission"])
    if isinstance(obj.get("trajectory_format"), str):
        meta["trajectory_format"] = obj["trajectory_format"]


def _convert(obj: Any, line: int, where: str, fields: FieldMap, named: bool) -> Item:
    if not isinstance(obj, dict):
        return Item(line, reason=f"expected a mini-swe-agent trajectory object, got {describe(obj)}")
    try:
        name, messages = _value(obj, fields, "messages")
        if not isinstance(messages, list):
            raise Reject(name, f"expected the trajectory's message list, got {describe(messages)}")
        info = obj.get("info")
        if info is not None and not isinstance(info, dict):
            raise Reject("info", f"expected the trajectory's info object, got {describe(info)}")
        missing: dict[str, tuple[str | None, str]] = {}
        out = _identity(obj, fields, where, line, named, missing)
        _run_fields(obj, fields, out)
        steps, totals, format_errors = walk_steps(messages, Run(info or {}, messages))
        out["steps"] = steps
        meta = out["metadata"]
        meta["format_errors"] = format_errors
        if "reasoning_apart" in totals:
            meta["tokens_reasoning_apart"] = totals.pop("reasoning_apart")
        out.update(totals)
        return Item(line, record=out, missing=missing or None)
    except Reject as problem:
        return Item(line, field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read")


def _fast_item(obj: dict[str, Any], line: int, where: str, fields: FieldMap) -> Item:
    """The plain case (:mod:`._fast`) in columns; :class:`~agentab.formats._fast_path.Slow` otherwise."""
    messages, info = obj.get("messages"), obj.get("info")
    if type(messages) is not list or (info is not None and type(info) is not dict):
        raise Slow
    missing: dict[str, tuple[str | None, str]] = {}
    out = _identity(obj, fields, where, line, True, missing)  # what it lacks stays None for the loader to fill
    _run_fields(obj, fields, out)
    steps, totals, format_errors = walk(messages, Run(info or {}, messages))
    meta = out["metadata"]
    meta["format_errors"] = format_errors
    if "reasoning_apart" in totals:
        meta["tokens_reasoning_apart"] = totals.pop("reasoning_apart")
    return Item(line, record=prepared(out, steps, totals), missing=missing or None)


def _plain(body: bytes, line: int, where: str, fields: FieldMap) -> Item | None:
    """The file's item read the fast way when it decodes without the unread keys, else None."""
    if fields["messages"] != "messages" or not untouched(fields, ("messages",), "messages"):
        return None
    obj = trajectory(body)
    if obj is None:
        return None
    try:
        return _fast_item(obj, line, where, fields)
    except (Slow, Reject, RecursionError):
        return whole_first(_convert(as_dicts(obj), line, where, fields, True),
                           lambda: _convert(msgspec.json.decode(body), line, where, fields, True))


# --------------------------------------------------------------------------- #
# Reading and detection
# --------------------------------------------------------------------------- #
def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The one run of a trajectory file (``.traj.json``, or gzip-compressed)."""
    plan = {**FIELDS, **(fields or {})}
    data = read_trace_bytes(Path(path)).removeprefix(BOM)
    body = data.lstrip(JSON_SPACE)
    line = data.count(b"\n", 0, len(data) - len(body)) + 1
    item = _plain(body, line, str(path), plan)
    if item is not None:
        yield item
        return
    try:
        obj = msgspec.json.decode(body)
    except msgspec.DecodeError as err:
        yield Item(line, reason=f"malformed JSON: {err}; the whole file was left out")
        return
    except RecursionError:
        yield Item(line, reason="JSON nested too deeply to read; the whole file was left out")
        return
    yield _convert(obj, line, str(path), plan, True)


def read_objects(objects: Sequence[Any], name: str, fields: FieldMap | None = None) -> Iterator[Item]:
    """One run per trajectory object (the parsed content of a ``.traj.json`` file)."""
    plan = {**FIELDS, **(fields or {})}
    for position, obj in enumerate(objects, start=1):
        yield _convert(obj, position, name, plan, False)


_FORMAT_SIGN = re.compile(rb'"trajectory_format"\s*:\s*"mini-swe-agent')
_VERSION_SIGN = re.compile(rb'"mini_version"\s*:')
_STATS_SIGN = re.compile(rb'"model_stats"\s*:\s*\{')
_V1_START = re.compile(rb'\{\s*"info"\s*:\s*\{\s*"exit_status"\s*:\s*"[^"\\]*"\s*,\s*"submission"\s*:')


def sniff(head: bytes, name: str = "") -> bool:
    """A mini-SWE-agent trajectory: a JSON object with ``"trajectory_format": "mini-swe-agent..."``, or
    ``info.mini_version`` beside ``model_stats``, or one opening as v1 writes it, ``{"info": {"exit_status":
    "...", "submission": ...`` (v1 writes ``trajectory_format`` last, and a long patch can push ``mini_version``
    past the head)."""
    body = head.removeprefix(BOM).lstrip(JSON_SPACE)
    if body[:1] != b"{":
        return False
    return bool(_FORMAT_SIGN.search(head) or (_VERSION_SIGN.search(head) and _STATS_SIGN.search(head))
                or _V1_START.match(body))


FORMAT = Format(
    name="mini-swe-agent",
    summary="mini-SWE-agent trajectory files (.traj.json, v1 text mode and v2 text/tool mode), one run per file",
    example='{"info": {"exit_status": "Submitted", "submission": "diff ...", "model_stats": {"instance_cost": 0.02, '
    '"api_calls": 2}, "mini_version": "1.15.0"}, "messages": [{"role": "system", "content": "..."}, {"role": '
    '"user", "content": "..."}, {"role": "assistant", "content": "THOUGHT: ...\\n\\n```bash\\nls\\n```"}, '
    '{"role": "user", "content": "<returncode>0</returncode>\\n<output>\\nREADME.md\\n</output>"}], '
    '"trajectory_format": "mini-swe-agent-1", "instance_id": "owner__repo-1", "outcome": true}',  # outcome: added
    # by the user or from SWE-bench's report (the agent's own file has none; without it the run is rejected)
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
)
