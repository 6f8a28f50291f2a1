"""ATIF run-level fields: from the trajectory and Harbor's trial ``result.json`` (see :mod:`agentab.formats.atif`)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

from agentab.formats._base import MISSING, FieldMap, Reject, lookup
from agentab.formats._missing import absent
from agentab.formats.files import decode_json

__all__ = ["DEFAULTS", "run_fields", "trial_result"]

#: Default run-level fields (descriptions of the rules; a user's entry replaces the rule by a path).
DEFAULTS = {
    "run_id": "result.trial_name", "task_id": "result.task_name", "seed": "(derived from the run id)",
    "outcome": "result.verifier_result.rewards.reward", "model": "agent.model_name", "harness": "agent.name",
    "cost_usd": "final_metrics.total_cost_usd", "latency_s": "result.agent_execution",
}

_TRIAL_DIR = re.compile(r"^(?P<task>.+)__[A-Za-z0-9]{7}$")
#: The run-level fields a record needs: what the files do not hold is left to the loader (Item.missing).
_REQUIRED = ("run_id", "task_id", "seed", "outcome")


class _Absent(Reject):
    """A value that is not there (a path the files lack, no verifier reward): absent, not malformed."""


def trial_result(path: Path | None) -> tuple[dict[str, Any] | None, Path | None, str | None]:
    """The Harbor trial result beside a trajectory (``<trial>/agent/trajectory.json`` -> ``<trial>/result.json``;
    multi-step: ``<trial>/steps/<name>/agent/``), its trial folder and step name."""
    if path is None:
        return None, None, None
    folder, step_name = path.parent, None
    if folder.name == "agent":
        folder = folder.parent
        if folder.parent.name == "steps":
            folder, step_name = folder.parent.parent, folder.name
    target = os.path.join(folder, "result.json")  # os.path, not pathlib: this runs once a trial, and is its cost
    try:
        regular = stat.S_ISREG(os.stat(target).st_mode)
    except (OSError, ValueError):
        regular = Path(target).is_file()  # what cannot be looked at: pathlib's own rule (False, or raised)
    if not regular:
        return None, folder, step_name
    with open(target, "rb", buffering=0) as fh:
        doc, problem = decode_json(fh.read())
    if problem is not None or not isinstance(doc, dict):
        why = f"line {problem[0]}: {problem[1]}" if problem is not None else "not a JSON object"
        raise Reject("result.json", f"the trial's result.json cannot be read ({why})")
    return doc, folder, step_name


def run_fields(doc: dict[str, Any], last: dict[str, Any], path: Path | None, result: dict[str, Any] | None,
               trial_dir: Path | None, step_name: str | None, fields: FieldMap,
               missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The record without steps; the required fields (run_id, task_id, seed, outcome) neither the trajectory nor
    its result.json holds are left out and named in ``missing``."""
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    trial = trial_dir.name if trial_dir is not None and _TRIAL_DIR.match(trial_dir.name) else None
    given = {key: value for key, value in fields.items() if DEFAULTS.get(key) != value and key != "messages"}
    found: dict[str, Any] = {}
    for key, value in given.items():
        try:
            found[key] = _given(doc, result, value)
        except _Absent as lack:
            if key not in _REQUIRED:
                raise
            absent(missing, key, lack.field, lack.reason)
    record = _identity(doc, found, path, result, trial, step_name, missing)
    meta = record["metadata"]
    for key, value in (("model", found.get("model", agent.get("model_name"))),
                       ("harness", found.get("harness", agent.get("name"))),
                       ("agent_version", agent.get("version")), ("session_id", doc.get("session_id")),
                       ("trajectory_id", doc.get("trajectory_id")), ("final_metrics", last.get("final_metrics"))):
        if value is not None:
            meta[key] = value
    if "arm" in found:
        record["arm"] = found["arm"]
    cost = found.get("cost_usd", (last.get("final_metrics") or {}).get("total_cost_usd")
                     if isinstance(last.get("final_metrics"), dict) else None)
    if cost is not None:
        record["cost_usd"] = cost
    latency = found.get("latency_s", _latency(result))
    if latency is not None:
        record["latency_s"] = latency
    if result is not None:
        _result_metadata(result, meta)
    return record


def _identity(doc: dict[str, Any], found: dict[str, Any], path: Path | None, result: dict[str, Any] | None,
              trial: str | None, step_name: str | None, missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """run_id, task_id, seed and outcome (those found, by the rules, else named in ``missing``) and the metadata."""
    run_id = found.get("run_id", _text((result or {}).get("trial_name")) or trial or _text(doc.get("session_id"))
                       or _text(doc.get("trajectory_id")) or (str(path) if path is not None else None))
    if "run_id" in missing:  # a path the user gave that is not there: no fallback to the rules
        run_id = None
    elif run_id is None:
        absent(missing, "run_id", "session_id", "no run id: give fields={'run_id': ...}")
    if run_id is not None and step_name is not None and "run_id" not in found:
        run_id = f"{run_id}:{step_name}"
    extra = doc.get("extra") if isinstance(doc.get("extra"), dict) else {}
    task_id = found.get("task_id", _text((result or {}).get("task_name")) or (trial and _TRIAL_DIR.match(trial)["task"])
                        or _text(extra.get("task_id")))
    if "task_id" in missing:
        task_id = None
    elif task_id is None:
        absent(missing, "task_id", "task_id", "no task: no Harbor result.json (task_name) beside the trajectory, and "
               "its folder is not a Harbor trial folder (<task>__<7 characters>), and no `extra.task_id`; give "
               "fields={'task_id': ...}")
    record: dict[str, Any] = {key: value for key, value in (("run_id", run_id), ("task_id", task_id))
                              if value is not None}
    meta: dict[str, Any] = {"schema_version": doc["schema_version"]}
    record["metadata"] = meta
    if "seed" in found:
        record["seed"] = found["seed"]
    elif run_id is not None and "seed" not in missing:
        record["seed"] = int.from_bytes(hashlib.sha256(str(run_id).encode()).digest()[:6], "big")
        meta["seed_derived"] = True
    elif "seed" not in missing:
        absent(missing, "seed", "session_id", "no seed: none recorded, and no run id to derive one from")
    if "outcome" in found:
        record["outcome"] = found["outcome"]
    elif "outcome" in missing:
        pass
    elif result is None and "reward" in extra:  # a trajectory outside a Harbor trial: its own `extra.reward`
        record["outcome"] = extra["reward"]
        meta["outcome_from"] = "extra.reward"
    else:
        try:
            record["outcome"] = _reward(result, step_name)
        except _Absent as lack:
            absent(missing, "outcome", lack.field, lack.reason)
    return record


def _given(doc: dict[str, Any], result: dict[str, Any] | None, path: str) -> Any:
    """The value at a user's ``fields`` path: in the trajectory, or (``result.``) in result.json."""
    if path.startswith("result."):
        value = MISSING if result is None else lookup(result, path[len("result."):])
    else:
        value = lookup(doc, path)
    if value is MISSING:
        raise _Absent(path, f"`{path}` is not in this {'result.json' if path.startswith('result.') else 'trajectory'}")
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _reward(result: dict[str, Any] | None, step_name: str | None) -> Any:
    """The outcome: the trial's (or step's) ``verifier_result.rewards`` ``reward``, or its only reward."""
    if result is None:
        raise _Absent("outcome", "no outcome: no Harbor result.json beside the trajectory (its verifier's reward is "
                     "the outcome) and no `extra.reward`; give fields={'outcome': ...} for one the trajectory holds")
    holder, where = result, "result.json.verifier_result"
    if step_name is not None:
        holder = next((s for s in result.get("step_results") or [] if isinstance(s, dict)
                       and s.get("step_name") == step_name), {})
        where = f"result.json.step_results[{step_name}].verifier_result"
    verifier = holder.get("verifier_result")
    rewards = verifier.get("rewards") if isinstance(verifier, dict) else None
    if not isinstance(rewards, dict) or not rewards:
        error = result.get("exception_info")
        why = f" (the trial failed: {error.get('exception_type')}: {str(error.get('exception_message'))[:200]})" \
            if isinstance(error, dict) else ""
        raise _Absent(where, f"no verifier rewards, so no outcome{why}")
    if "reward" in rewards:
        key = "reward"
    elif len(rewards) == 1:
        key = next(iter(rewards))
    else:
        raise Reject(f"{where}.rewards", f"several rewards ({', '.join(map(str, rewards))}) and none called "
                     "`reward`: pick one with fields={'outcome': 'result.verifier_result.rewards.<name>'}")
    value = rewards[key]
    if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
        return value if isinstance(value, bool) else float(value)
    raise Reject(f"{where}.rewards.{key}", f"a reward must be a finite number, got {value!r}")


def _latency(result: dict[str, Any] | None) -> float | None:
    timing = (result or {}).get("agent_execution")
    if not isinstance(timing, dict):
        return None
    try:
        start = datetime.fromisoformat(str(timing["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(timing["finished_at"]).replace("Z", "+00:00"))
        seconds = (end - start).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def _result_metadata(result: dict[str, Any], meta: dict[str, Any]) -> None:
    verifier = result.get("verifier_result")
    if isinstance(verifier, dict) and isinstance(verifier.get("rewards"), dict):
        meta["rewards"] = verifier["rewards"]
    for key in ("trial_name", "task_name", "source"):
        if isinstance(result.get(key), str):
            meta[key] = result[key]
    error = result.get("exception_info")
    if isinstance(error, dict) and error.get("exception_type") is not None:
        meta["exception_type"] = error["exception_type"]
