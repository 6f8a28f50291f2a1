"""ATIF steps -> trace-record steps: tool calls, their observations, and model calls' tokens (see
:mod:`agentab.formats.atif` for the rules); and the JSON files a trajectory refers to."""

from __future__ import annotations

import math
from pathlib import Path, PurePosixPath
from typing import Any

from agentab.formats._base import Reject, token_count
from agentab.formats.files import decode_json, read_trace_bytes
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["VERSIONS", "Walk", "beside", "load"]

#: The schema versions the ATIF specification defines (Harbor's ``Trajectory.schema_version``).
VERSIONS = ("ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6",
            "ATIF-v1.7", "ATIF-v1.8")

_SOURCES = ("system", "user", "agent")
#: A step's ``metrics`` read, and the step fields they go to.
_METRICS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")
_COUNTS = ("tokens_in", "tokens_out", "tokens_cached", "cost_usd")


def load(path: Path) -> tuple[Any, tuple[int, str] | None]:
    """A JSON file's value, or (None, (line, message))."""
    return decode_json(read_trace_bytes(path))


def beside(folder: Path | None, ref: Any) -> Path | None:
    """A file named by a trajectory (relative, inside ``folder``), or None when it may not be followed."""
    if folder is None or not isinstance(ref, str) or not ref or "\\" in ref:
        return None
    parts = PurePosixPath(ref).parts
    if PurePosixPath(ref).is_absolute() or ".." in parts or ":" in ref:
        return None  # an absolute path, a parent folder, or a URL (s3://...) is not read
    return folder.joinpath(*parts)


class Walk:
    """The steps of a run, built segment by segment; model calls without tools carried to the next call."""

    def __init__(self, doc: dict[str, Any], path: Path | None) -> None:
        self.doc, self.path = doc, path
        self.steps: list[dict[str, Any]] = []
        self.pending: list[Any] = [0, 0, 0, 0]  # model calls not yet at a tool call, in _COUNTS order
        self.totals: list[Any] = [0, 0, 0, 0]  # every model call: the run's totals (None: unknown)
        self.untooled: list[str] = []
        self.subagents: list[dict[str, Any]] = []
        self.visited: set[str] = set()
        self.n_calls = 0  # model calls seen: with none, the totals are unknown rather than 0

    def pending_known(self) -> bool:
        return self.pending[0] is not None and self.pending[1] is not None

    def segment(self, segment: dict[str, Any], label: str) -> None:
        for i, step in enumerate(segment["steps"]):
            if type(step) is not dict:
                raise Reject(f"{label}steps[{i}]", f"a step must be an object, got {type(step).__name__}")
            get = step.get
            if get("is_copied_context") is True:
                continue
            source = get("source")
            if source not in _SOURCES:
                raise Reject(f"{label}steps[{i}].source", f"expected one of {', '.join(_SOURCES)}, got {source!r}")
            stamp = get("timestamp")
            if stamp is not None and type(stamp) is not str:
                raise Reject(f"{label}steps[{i}].timestamp", f"expected ISO-8601 text, got {stamp!r}")
            agent = source == "agent"
            calls = None
            if agent:
                calls = get("tool_calls")
                if calls is not None and (type(calls) is not list or len(calls) != 1 or not _plain_call(calls[0])):
                    calls = _calls(calls, f"{label}steps[{i}]")  # checked one by one, the problem named
                if get("llm_call_count") != 0:
                    self.model_call(get("metrics"), label, i)
            observation = get("observation")
            if observation is None and not calls:
                continue
            own, loose = self.results(observation, label, i)
            if agent and not calls and loose:
                self.untooled.append(f"{label}steps[{i}]")
            if calls:
                self.add_calls(calls, own, loose, step, stamp, label, i)

    def results(self, observation: Any, label: str, i: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """A step's results answering a call (``source_call_id``) and those answering none (with ``content``)."""
        own: list[dict[str, Any]] = []
        loose: list[dict[str, Any]] = []
        if observation is None:
            return own, loose
        results = observation.get("results") if type(observation) is dict else None
        if type(results) is list and len(results) == 1 and type(results[0]) is dict:  # the common case
            result = results[0]
            if "subagent_trajectory_ref" in result:
                self.subagent_refs(result, f"{label}steps[{i}]")
            if result.get("source_call_id") is not None:
                own.append(result)
            elif "content" in result:
                loose.append(result)
            return own, loose
        if type(results) is not list or not all(type(result) is dict for result in results):
            results = _results(observation, f"{label}steps[{i}]")  # raises, unless the objects are dict subclasses
        for result in results:
            if "subagent_trajectory_ref" in result:
                self.subagent_refs(result, f"{label}steps[{i}]")
            if result.get("source_call_id") is not None:
                own.append(result)
            elif "content" in result:
                loose.append(result)
        return own, loose

    def model_call(self, metrics: Any, label: str, i: int | None = None) -> None:
        """Carry one model call's counts (unknown without ``metrics``) to the next tool call; ``label`` with step
        ``i`` (or ``label`` alone when ``i`` is None) names its ``metrics`` in a rejection."""
        self.n_calls += 1
        if type(metrics) is not dict:
            metrics = {}
        tin, tout = metrics.get("prompt_tokens"), metrics.get("completion_tokens")
        cached, cost = metrics.get("cached_tokens"), metrics.get("cost_usd")
        if not (type(tin) is int and tin >= 0 and type(tout) is int and tout >= 0
                and (cached is None or type(cached) is int and cached >= 0)):
            where = label if i is None else f"{label}steps[{i}].metrics"
            tin, tout = _count(metrics, "prompt_tokens", where), _count(metrics, "completion_tokens", where)
            cached = _count(metrics, "cached_tokens", where)
        if cost is not None and not (type(cost) is float and cost >= 0 and cost != math.inf):
            ok = isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0
            cost = cost if ok else None
        for counts in (self.pending, self.totals):
            a, b, c, d = counts
            counts[0] = None if a is None or tin is None else a + tin
            counts[1] = None if b is None or tout is None else b + tout
            counts[2] = None if c is None or cached is None else c + cached
            counts[3] = None if d is None or cost is None else d + cost

    def subagent_refs(self, result: dict[str, Any], where: str) -> None:
        """Count each sub-agent trajectory a result refers to as model calls made here."""
        refs = result.get("subagent_trajectory_ref")
        if refs is None:
            return
        if not isinstance(refs, list):
            raise Reject(f"{where}.observation.subagent_trajectory_ref", "expected a list of references")
        for ref in refs:
            sub, name = self.resolve(ref)
            self.subagents.append({"ref": name, "found": sub is not None})
            if name in self.visited:
                continue  # one sub-agent referred to twice is counted once
            self.visited.add(name)
            if sub is None:
                self.model_call(None, where)  # its tokens are unknown, not 0 (no metrics: no rejection to name)
                continue
            for step in sub.get("steps") or []:
                if (isinstance(step, dict) and step.get("source") == "agent" and step.get("is_copied_context") is not True
                        and step.get("llm_call_count") != 0):
                    self.model_call(step.get("metrics"), f"{where}.observation.subagent_trajectory_ref")

    def resolve(self, ref: Any) -> tuple[dict[str, Any] | None, str]:
        """A sub-agent trajectory: embedded (``trajectory_id``) or a file beside this one (``trajectory_path``)."""
        if not isinstance(ref, dict):
            return None, repr(ref)
        tid, tpath = ref.get("trajectory_id"), ref.get("trajectory_path")
        for sub in self.doc.get("subagent_trajectories") or []:
            if tid is not None and isinstance(sub, dict) and sub.get("trajectory_id") == tid:
                return sub, str(tid)
        target = beside(self.path.parent if self.path is not None else None, tpath)
        if target is not None and target.is_file():
            sub, problem = load(target)
            if problem is None and isinstance(sub, dict) and sub.get("schema_version") in VERSIONS:
                return sub, str(tpath)
        return None, str(tpath if tpath is not None else tid)

    def add_calls(self, calls: list[dict[str, Any]], own: list[dict[str, Any]], loose: list[dict[str, Any]],
                  step: dict[str, Any], stamp: Any, label: str, i: int) -> None:
        first = len(self.steps)
        if len(calls) == 1 and len(own) <= 1:  # one call (the common case): answered by its one result, if any
            call = calls[0]
            call_id = call["tool_call_id"]
            if own and own[0]["source_call_id"] != call_id:
                raise Reject(f"{label}steps[{i}].observation.results[0].source_call_id",
                             f"{own[0]['source_call_id']!r} names no tool call of this step")
            out = {"index": first, "tool": call["function_name"], "args": call["arguments"],
                   "observation": _observation(own or loose) if own or loose else None,
                   "metadata": {"tool_call_id": call_id, "step_id": step.get("step_id")}}
            if stamp is not None:
                out["started_at"] = stamp
            pending = self.pending
            if pending[0] is not None:
                out["tokens_in"] = pending[0]
            if pending[1] is not None:
                out["tokens_out"] = pending[1]
            if pending[2] is not None:
                out["tokens_cached"] = pending[2]
            if pending[3] is not None:
                out["cost_usd"] = pending[3]
            self.steps.append(out)
            self.pending = [0, 0, 0, 0]
            return
        where = f"{label}steps[{i}]"
        by_id: dict[str, list[dict[str, Any]]] = {}
        ids = {call["tool_call_id"] for call in calls}
        for k, result in enumerate(own):
            call_id = result["source_call_id"]
            if call_id not in ids:
                raise Reject(f"{where}.observation.results[{k}].source_call_id",
                             f"{call_id!r} names no tool call of this step")
            by_id.setdefault(call_id, []).append(result)
        last = first + len(calls) - 1
        for j, call in enumerate(calls):
            answers = by_id.get(call["tool_call_id"])
            if answers is None and loose and j == len(calls) - 1:
                answers = loose
            meta: dict[str, Any] = {"tool_call_id": call["tool_call_id"], "step_id": step.get("step_id")}
            out = {"index": first + j, "tool": call["function_name"], "args": call["arguments"],
                   "observation": _observation(answers) if answers else
                   ({"output_at_step": last} if loose else None), "metadata": meta}
            if stamp is not None:
                out["started_at"] = stamp
            if j == 0:
                for key, value in zip(_COUNTS, self.pending):
                    if value is not None:
                        out[key] = value
            elif self.pending_known():
                meta[TOKENS_WITH_STEP] = first
            if len(calls) > 1:  # the calls of one model response
                out["parallel"] = f"{where}" if step.get("step_id") is None else step["step_id"]
            self.steps.append(out)
        self.pending = [0, 0, 0, 0]

    def finish(self) -> list[dict[str, Any]]:
        """The steps, with the model calls after the last tool call added to it."""
        if self.steps and self.pending != [0, 0, 0, 0]:
            target = next(s for s in reversed(self.steps) if TOKENS_WITH_STEP not in s["metadata"])
            for key, pending in zip(_COUNTS, self.pending):
                mine = target.get(key)
                if mine is None or pending is None:
                    target.pop(key, None)
                else:
                    target[key] = mine + pending
            if target.get("tokens_in") is None or target.get("tokens_out") is None:
                for step in self.steps:  # the step its group's counts were at is unknown now
                    if step["metadata"].get(TOKENS_WITH_STEP) == target["index"]:
                        del step["metadata"][TOKENS_WITH_STEP]
            self.pending = [0, 0, 0, 0]
        return self.steps

    def run_totals(self) -> dict[str, Any]:
        """The run's known totals over every model call (tokens, and ``cost_usd``); {} without calls."""
        if not self.n_calls:
            return {}
        return {key: value for key, value in zip(_COUNTS, self.totals) if value is not None}


def _plain_call(call: Any) -> bool:
    """Whether a tool call is one :func:`_calls` takes as it is (an id, a name, an arguments object)."""
    if type(call) is not dict:
        return False
    call_id, name = call.get("tool_call_id"), call.get("function_name")
    return (type(call_id) is str and call_id != "" and type(name) is str and name != ""
            and type(call.get("arguments")) is dict)


def _calls(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Reject(f"{where}.tool_calls", f"expected a list of tool calls, got {type(value).__name__}")
    seen: set[str] = set()
    for k, call in enumerate(value):
        at = f"{where}.tool_calls[{k}]"
        if not isinstance(call, dict):
            raise Reject(at, f"a tool call must be an object, got {type(call).__name__}")
        call_id, name, args = call.get("tool_call_id"), call.get("function_name"), call.get("arguments")
        if not isinstance(call_id, str) or not call_id:
            raise Reject(f"{at}.tool_call_id", f"a tool call needs a non-empty text id, got {call_id!r}")
        if call_id in seen:
            raise Reject(f"{at}.tool_call_id", f"two tool calls of one step share the id {call_id!r}")
        seen.add(call_id)
        if not isinstance(name, str) or not name:
            raise Reject(f"{at}.function_name", f"a tool call needs a function name, got {name!r}")
        if not isinstance(args, dict):
            raise Reject(f"{at}.arguments", f"arguments must be an object, got {type(args).__name__}")
    return value


def _results(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    results = value.get("results") if isinstance(value, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise Reject(f"{where}.observation", "an observation must be an object with a `results` list of objects")
    return results


def _observation(results: list[dict[str, Any]]) -> dict[str, Any]:
    contents = [r.get("content") for r in results]
    out: dict[str, Any] = {"content": contents[0] if len(contents) == 1 else contents}
    extras = [r["extra"] for r in results if isinstance(r.get("extra"), dict)]
    if extras:
        out["extra"] = extras[0] if len(extras) == 1 else extras
    return out


_count = token_count  # the count at metrics[key]: an int >= 0, None when absent; a rejection otherwise
