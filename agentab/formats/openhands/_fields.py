"""The run-level fields of an OpenHands output line: looked up by the field mapping, checked; the history's steps.

The rules are in :mod:`agentab.formats.openhands` ("Run-level fields").
"""

from __future__ import annotations

from typing import Any

from agentab.formats._base import MISSING, FieldMap, Reject, lookup
from agentab.formats._missing import absent
from agentab.formats.openhands._events import count as _count
from agentab.formats.openhands._events import describe as _describe
from agentab.formats.openhands._events import event_steps
from agentab.formats.openhands._sdk import is_sdk, sdk_steps

__all__ = ["FIELDS", "convert", "history_steps"]

#: Default run-level mapping: agentab's name -> the key (dotted path) in an output line.
FIELDS: dict[str, str] = {
    "run_id": "run_id", "task_id": "instance_id", "seed": "seed", "arm": "arm",
    "model": "metadata.llm_config.model", "harness": "metadata.agent_class",
    "outcome": "test_result.report.resolved", "cost_usd": "metrics.accumulated_cost",
    "latency_s": "latency_s", "messages": "history",
}
#: Tried when the default key is in use and absent (older or newer layouts).
_ELSE = {"outcome": "report.resolved", "model": "metadata.llm.model"}


def history_steps(history: list[Any], key: str = "history") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps of an event list (OpenHands' events, or its SDK's) and the counts for ``metadata``."""
    return sdk_steps(history, key) if is_sdk(history) else event_steps(history, key)


def _get(rec: dict[str, Any], fields: FieldMap, key: str) -> tuple[str, Any]:
    """(the input name, its value or MISSING); null is MISSING."""
    name = fields.get(key) or FIELDS[key]
    value = lookup(rec, name)
    if key in _ELSE and (value is MISSING or value is None) and name == FIELDS[key]:
        other = lookup(rec, _ELSE[key])
        if other is not MISSING and other is not None:
            return _ELSE[key], other
    return name, (MISSING if value is None else value)


def _identity(rec: dict[str, Any], fields: FieldMap, where: str, stream: bool, line: int,
              missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """run_id, task_id, seed and outcome, checked; the task and outcome the line lacks go to ``missing``."""
    out: dict[str, Any] = {}
    name, task = _get(rec, fields, "task_id")
    if task is MISSING:
        absent(missing, "task_id", name,
               f"no task_id: the line has no {name!r} (an OpenHands output line names its instance)")
    elif not ((isinstance(task, str) and task) or (isinstance(task, int) and not isinstance(task, bool))):
        raise Reject(name, f"task_id must be non-empty text or an integer, got {_describe(task)}")
    name, run = _get(rec, fields, "run_id")
    if run is not MISSING and not ((isinstance(run, str) and run) or (type(run) is int)):
        raise Reject(name, f"run_id must be non-empty text or an integer, got {_describe(run)}")
    if run is MISSING:
        run = where if stream else f"{where}:{line if task is MISSING else task}"
    out["run_id"] = run
    if task is not MISSING:
        out["task_id"] = task
    name, seed = _get(rec, fields, "seed")
    if seed is not MISSING and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise Reject(name, f"seed must be an integer, got {_describe(seed)}")
    out["seed"] = 0 if seed is MISSING else seed
    name, outcome = _get(rec, fields, "outcome")
    if outcome is MISSING:
        if stream:
            absent(missing, "outcome", None,
                   "no outcome: an OpenHands event stream records no verdict of an external check")
        else:
            absent(missing, "outcome", name, f"no outcome: the line has no {name!r}; OpenHands' inference output "
                                             "has none until the benchmark's evaluation (e.g. SWE-bench "
                                             "eval_infer) adds test_result.report")
    elif not isinstance(outcome, (bool, int, float)):
        raise Reject(name, f"outcome must be true/false or a number, got {_describe(outcome)}")
    else:
        out["outcome"] = outcome
    return out


def _cost(rec: dict[str, Any], fields: FieldMap, meta: dict[str, Any]) -> float | None:
    name, cost = _get(rec, fields, "cost_usd")
    if cost is MISSING:
        return None
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0:
        raise Reject(name, f"cost_usd must be a number >= 0, got {_describe(cost)}")
    if name != FIELDS["cost_usd"]:
        return cost
    meta["accumulated_cost"] = cost
    priced = lookup(rec, "metrics.costs")
    used = (meta.get("accumulated_prompt_tokens") or 0) + (meta.get("accumulated_completion_tokens") or 0)
    if cost == 0 and used > 0 and (not isinstance(priced, list) or not priced):
        return None  # LiteLLM priced no call: a sum of zeros, not a cost of zero
    return cost


def _run_meta(rec: dict[str, Any], fields: FieldMap, out: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("model", "harness", "arm"):
        name, value = _get(rec, fields, key)
        if value is MISSING:
            continue
        if not isinstance(value, str) or not value:
            raise Reject(name, f"{key} must be non-empty text, got {_describe(value)}")
        if key == "arm":
            out["arm"] = value
        else:
            meta[key] = value
    usage = lookup(rec, "metrics.accumulated_token_usage")
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            if _count(usage.get(key)) is not None:
                meta[f"accumulated_{key}"] = usage[key]
    error = rec.get("error")
    if isinstance(error, str) and error:
        meta["error"] = error
    cost = _cost(rec, fields, meta)
    if cost is not None:
        out["cost_usd"] = cost
    name, latency = _get(rec, fields, "latency_s")
    if latency is not MISSING:
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not latency >= 0:
            raise Reject(name, f"latency_s must be a number >= 0, got {_describe(latency)}")
        out["latency_s"] = latency
    return meta


def convert(rec: Any, where: str, fields: FieldMap, stream: bool = False, line: int = 1,
            missing: dict[str, tuple[str | None, str]] | None = None) -> dict[str, Any]:
    """One output line (or ``{"instance_id": ..., "history": events}`` of a stream) as a record; raises Reject.

    The task and outcome the line does not hold are left out, and named with ``(field, reason)`` in
    ``missing`` when given (:attr:`~agentab.formats._base.Item.missing`); a line without a task has the run id
    ``<where>:<line>``.
    """
    if not isinstance(rec, dict):
        raise Reject(None, f"expected an OpenHands output line (an object), got {_describe(rec)}")
    out = _identity(rec, fields, where, stream, line, {} if missing is None else missing)
    meta = _run_meta(rec, fields, out)
    key = fields.get("messages") or FIELDS["messages"]
    history = lookup(rec, key)
    if history is MISSING or history is None:
        raise Reject(key, f"no history: the line has no {key!r} event list")
    if not isinstance(history, list):
        raise Reject(key, f"expected the event list, got {_describe(history)}")
    steps, counts = history_steps(history, key)
    out["steps"] = steps
    meta.update(counts)
    _top_up(steps, meta)
    for name in ("tokens_in", "tokens_out"):  # a run without steps: its model calls' totals
        if name in meta:
            out[name] = meta.pop(name)
    out["metadata"] = meta
    return out


def _top_up(steps: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Make the run's tokens OpenHands' own totals (``metrics.accumulated_token_usage``) when the events count fewer.

    The difference (model calls whose events carry no usage: text-only replies, SDK events) goes on the last
    step (the first call of its response) and is noted in ``metadata.tokens_not_in_events``; the steps whose own
    counts are unknown are marked as counted there (``tokens_with_step``), so the run's total is known.
    """
    reported = (meta.get("accumulated_prompt_tokens"), meta.get("accumulated_completion_tokens"))
    if reported[0] is None or reported[1] is None:
        return
    if not steps:
        for name, total in zip(("tokens_in", "tokens_out"), reported):
            meta[name] = max(meta.get(name, 0), total)
        return
    keys = ("tokens_in", "tokens_out")
    counted = [sum(step.get(k) or 0 for step in steps) for k in keys]
    missing = [max(total - n, 0) for total, n in zip(reported, counted)]
    unknown = [s for s in steps if not any(k in s for k in keys) and "tokens_with_step" not in s["metadata"]]
    if not any(missing) and not unknown:
        return
    last = steps[-1]
    target = steps[last["metadata"].get("tokens_with_step", last["index"])]
    for k, extra in zip(keys, missing):
        target[k] = target.get(k, 0) + extra
    for step in unknown:
        if step is not target:
            step["metadata"]["tokens_with_step"] = target["index"]
    meta["tokens_not_in_events"] = {"tokens_in": missing[0], "tokens_out": missing[1]}
