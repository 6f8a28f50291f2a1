"""SWE-agent's plain case, fast: a ``.traj``'s steps built straight into columns
(:class:`~agentab.formats.decode.PreparedSteps`) in one pass over the history and the trajectory.

The rules are :mod:`agentab.formats.swe_agent`'s ("Steps", "Observation", "Times"), which its own walk
(``_steps``) applies entry by entry into step dicts. Whatever is not the plain case (a value of another type, a
function call whose arguments are not a JSON object msgspec reads, anything its walk would reject) raises
:class:`~agentab.formats._fast_path.Slow`, and the reader reads the document its usual way, which gives the
rejection or the unusual value exactly as before.

The observation rules (:data:`TIMEOUT`, :data:`NOT_RUN`, :data:`CANCELLED`) live here, for both walks.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from agentab.formats._fast_path import Slow
from agentab.formats.decode import PreparedSteps

__all__ = ["CANCELLED", "NOT_RUN", "TIMEOUT", "as_dicts", "trimmed", "walk"]

#: The text SWE-agent's ``command_cancelled_timeout_template`` gives a command its timeout cancelled.
TIMEOUT = re.compile(r"The command '.*' was cancelled because it took more than \S+ seconds", re.DOTALL)
#: The error of a step a timeout cancelled.
CANCELLED = "cancelled: the command took longer than SWE-agent's timeout"
#: The error of a step SWE-agent did not run (0 seconds, no output).
NOT_RUN = "not run: SWE-agent re-asked the model (a blocked command or a bash syntax error)"

_decode = msgspec.json.decode
_UNSET = msgspec.UNSET


class _Entry(msgspec.Struct, gc=False):
    """A trajectory entry's keys the reader reads (``UNSET``: absent; ``response``, ``state``, ``query``... are
    not decoded)."""

    action: Any = _UNSET
    observation: Any = _UNSET
    execution_time: Any = _UNSET


class _HistoryItem(msgspec.Struct, gc=False):
    """A history item's keys the reader reads (``content``, ``thought``... are not decoded)."""

    role: Any = _UNSET
    is_demo: Any = _UNSET
    action: Any = _UNSET
    tool_calls: Any = _UNSET


class _Traj(msgspec.Struct, forbid_unknown_fields=True):
    """A .traj with SWE-agent's keys (and a top-level seed and outcome, which the docs have users add): a file
    with any other key is decoded whole."""

    trajectory: list[_Entry]
    history: list[_HistoryItem] | None = None
    info: Any = _UNSET
    replay_config: Any = _UNSET
    environment: Any = _UNSET
    attempts: Any = _UNSET
    seed: Any = _UNSET
    outcome: Any = _UNSET


_TRAJ = msgspec.json.Decoder(_Traj)


def trimmed(raw: bytes) -> dict[str, Any] | None:
    """The document's keys (entries and history items as structs, cheaper to build than dicts) without the parts
    the reader never reads, or None (decode it whole)."""
    try:
        doc = _TRAJ.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return {key: value for key, value in zip(_Traj.__struct_fields__, msgspec.structs.astuple(doc))
            if value is not _UNSET and (key != "history" or value is not None)}


def as_dicts(doc: dict[str, Any]) -> dict[str, Any]:
    """A :func:`trimmed` document with its entries and history items as dicts holding the keys the file has, as the
    reader's own walk reads them."""
    out = {**doc, "trajectory": msgspec.to_builtins(doc["trajectory"])}
    if "history" in doc:
        out["history"] = msgspec.to_builtins(doc["history"])
    return out


def _calls(history: list[_HistoryItem] | None) -> list[tuple[str, Any]]:
    """(action, tool_calls) of each assistant history item that took an action, demonstrations skipped."""
    calls: list[tuple[str, Any]] = []
    if history is None:
        return calls
    if type(history) is not list:
        raise Slow
    for item in history:
        if item.role == "assistant" and (item.is_demo is _UNSET or not item.is_demo):
            action = item.action
            if type(action) is str:
                tool_calls = item.tool_calls
                if tool_calls is _UNSET:
                    tool_calls = None
                elif tool_calls is not None and type(tool_calls) is not list:
                    raise Slow
                calls.append((action, tool_calls))
    return calls


def walk(trajectory: list[_Entry], history: list[_HistoryItem] | None) -> tuple[PreparedSteps, dict[str, Any], int]:
    """(steps in columns, run metadata about them, the number of steps) of a trajectory and its history, by the
    rules of :mod:`agentab.formats.swe_agent`; :class:`Slow` for anything but the plain case."""
    # kept whole: one pass with each case inline is what makes it fast
    calls = _calls(history)
    tools: list[str] = []
    args: list[dict[str, Any]] = []
    observations: list[dict[str, Any] | None] = []
    metadata: list[dict[str, Any] | None] = []
    total: float | None = 0.0
    without_action = j = 0
    n_calls = len(calls)
    for entry in trajectory:
        action = entry.action
        if type(action) is not str:
            raise Slow
        observation = entry.observation
        if observation is _UNSET or observation is None:
            observation = ""
        elif type(observation) is not str:
            raise Slow
        seconds = entry.execution_time
        if seconds is _UNSET:
            seconds = None
        elif seconds is not None and (type(seconds) is not float or not seconds >= 0):
            if type(seconds) is not int or seconds < 0:
                raise Slow
            seconds = float(seconds)
        tool_calls = None
        if j < n_calls and calls[j][0] == action:  # paired in order (see swe_agent._steps)
            tool_calls = calls[j][1]
            j += 1
        if not action.strip():
            without_action += 1
            continue
        if tool_calls:  # the entry's (first) function call: its name and parsed arguments
            call = tool_calls[0]
            function = call.get("function") if type(call) is dict else None
            if type(function) is not dict:
                raise Slow
            tool = function.get("name")
            if type(tool) is not str or not tool:
                raise Slow
            arguments = function.get("arguments", {})
            if type(arguments) is str:
                try:
                    arguments = _decode(arguments)
                except msgspec.DecodeError:
                    raise Slow from None  # blank, NaN, beyond 64 bits or not JSON: the usual walk's rules
                if arguments is None:
                    arguments = {}
            elif arguments is None:
                arguments = {}
            if type(arguments) is not dict:
                raise Slow
            call_id = call.get("id")
            meta: dict[str, Any] = {"action": action, "tool_call_id": call_id} if type(call_id) is str else \
                {"action": action}
            if len(tool_calls) > 1:
                meta["tool_calls"] = len(tool_calls)
        else:
            tool, arguments, meta = action.split(None, 1)[0], {"command": action}, {}
        if "was cancelled because it took more than" in observation and TIMEOUT.match(observation.lstrip()):
            obs = {"content": observation, "status": "error", "error": CANCELLED}
        elif seconds == 0 and not observation and action.strip() != "exit":
            obs = {"content": observation, "status": "error", "error": NOT_RUN}
        else:
            obs = {"content": observation}
        if seconds is None:
            total = None
        else:
            meta["execution_time_s"] = seconds
            if total is not None:
                total += seconds
        tools.append(tool)
        args.append(arguments)
        observations.append(obs)
        metadata.append(meta or None)
    n = len(tools)
    run_meta: dict[str, Any] = {"entries": len(trajectory), "entries_without_action": without_action}
    if n and total is not None:
        run_meta["execution_time_s"] = total
    nothing: list[Any] = [None] * n
    return PreparedSteps(tools, args, observations, nothing, nothing, nothing, nothing, metadata), run_meta, n
