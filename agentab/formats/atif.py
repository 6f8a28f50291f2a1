"""Harbor's Agent Trajectory Interchange Format (format ``"atif"``): ``trajectory.json``, one run per file.

ATIF (github.com/laude-institute/harbor, ``docs/rfcs/0001-trajectory-format.md``; the pydantic models in
``src/harbor/models/trajectories/``) is one JSON object per agent run: ``schema_version`` (``"ATIF-v1.0"``
to ``"ATIF-v1.8"``; any other is rejected by name), ``session_id``, ``trajectory_id`` (v1.7), ``agent``
(``name``, ``version``, ``model_name``), ``steps[]`` (``step_id``, ``timestamp``, ``source``: ``system`` /
``user`` / ``agent``, ``message``, ``tool_calls[]`` of ``{tool_call_id, function_name, arguments}``,
``observation.results[]`` of ``{source_call_id, content, subagent_trajectory_ref}``, ``metrics``
``{prompt_tokens, completion_tokens, cached_tokens, cost_usd}``, ``is_copied_context`` (v1.5),
``llm_call_count`` (v1.7)), ``final_metrics``, ``continued_trajectory_ref`` and ``subagent_trajectories``
(v1.7). Harbor writes it to ``<trial>/agent/trajectory.json`` and the trial's verdict to
``<trial>/result.json`` (a ``TrialResult``: ``task_name``, ``trial_name``, ``verifier_result.rewards``,
``agent_execution``, ``exception_info``).

Mapping to the trace record
---------------------------
=========== ========================================================= ===================================
record      from                                                      notes
=========== ========================================================= ===================================
run_id      ``result.json`` ``trial_name``, else the trial folder      folder: ``<task>__<7 characters>``
            name, else ``session_id``, else ``trajectory_id``          (Harbor's trial names)
task_id     ``result.json`` ``task_name``, else the trial folder name  neither: rejected
            less its ``__xxxxxxx`` suffix
seed        none recorded: a number derived from the run id            ``metadata.seed_derived``; or
                                                                       ``fields={"seed": ...}``
outcome     ``result.json`` ``verifier_result.rewards.reward`` (the    no result.json, no verifier result,
            only reward when there is one of another name)             several rewards: rejected
model       ``agent.model_name``                                       metadata.model
harness     ``agent.name``                                             ``agent.version`` in metadata
cost_usd    ``final_metrics.total_cost_usd`` of the last segment,      includes sub-agents, as ATIF says;
            else the sum of every model call's ``cost_usd``            missing when either is unknown
latency_s   ``result.json`` ``agent_execution`` finished - started     missing without result.json
steps       each ``tool_calls`` entry of an ``agent`` step             observation: its results
=========== ========================================================= ===================================

A ``fields`` entry is a dotted path into the trajectory (``"extra.arm"``, ``"agent.version"``) or, prefixed
``result.``, into ``result.json`` (``"result.verifier_result.rewards.pass"``, ``"result.config.job_id"``); a
path that is not there rejects the run.

Steps
    Every tool call of a ``source: "agent"`` step, in order (``tool`` = ``function_name``, ``args`` =
    ``arguments``). Its observation is ``{"content": ...}`` (and ``extra``) from the results whose
    ``source_call_id`` is its id (several: a list of contents). Results without a ``source_call_id``
    (Terminus-2 writes the terminal output so) belong to the step's actions as a whole: they are the
    observation of its last call, and the step's other unanswered calls get ``{"output_at_step": j}``.
    ATIF has no error flag, so ``status`` is left out and the run's error count is unknown, not 0.
    ``started_at`` is the step's ``timestamp``. Step ``metadata`` keeps ``tool_call_id`` and
    ``step_id`` (and, for the first call of a step, its ``cached_tokens`` and ``cost_usd``).
Tokens
    Per model call (an ``agent`` step, unless ``llm_call_count`` is 0): ``prompt_tokens`` (cached
    included, as ATIF defines it) -> ``tokens_in``, ``completion_tokens`` -> ``tokens_out``, at the first
    call of the step (the others: ``metadata.tokens_with_step``). A model call without tool calls, and
    every sub-agent trajectory a result refers to (``subagent_trajectory_ref``: embedded by
    ``trajectory_id`` or a file beside this one by ``trajectory_path``), is added to the next tool call,
    or to the last one when none follows. A call without ``metrics`` (or a sub-agent file that is not
    there) leaves those tokens unknown, never 0. A run without tool calls keeps its totals in
    ``metadata.tokens_in`` / ``tokens_out``. ``metadata.tokens_cached`` sums ``cached_tokens`` when every
    call has it.
Segments
    Steps marked ``is_copied_context`` were copied from an earlier trajectory and are skipped. A
    trajectory with ``continued_trajectory_ref`` goes on in that file (beside it): its steps are this
    run's too; a continuation that is not there rejects the run. Files Harbor writes beside a trajectory
    as parts of it (``trajectory.cont-N.json``, Terminus-2's ``trajectory.summarization-N-*.json``
    sub-agents) and its bookkeeping files (``result.json``, ``config.json``, ``lock.json``) give no run of
    their own when a folder is read.
Rejected
    A file that is not JSON or not an ATIF object, an unknown ``schema_version``, no steps, a step
    ``source`` other than the three, a tool call without an id or name or with non-object arguments,
    two calls with one id in a step, a result naming a call its step does not have, a bad timestamp,
    and a run whose agent steps have observations but no tool call at all (actions written in the
    message text, e.g. OpenHands without function calling: they would read as 0 steps). When the
    run has tool calls, such steps are listed in ``metadata.observations_without_tool_call``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from agentab.formats._base import MISSING, FieldMap, Format, Item, Reject, lookup
from agentab.formats.files import open_trace_file
from agentab.formats.record import TOKENS_WITH_STEP

__all__ = ["FORMAT", "VERSIONS", "DEFAULTS"]

#: The schema versions the ATIF specification defines (Harbor's ``Trajectory.schema_version``).
VERSIONS = ("ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6",
            "ATIF-v1.7", "ATIF-v1.8")

#: Default run-level fields (descriptions of the rules above; a user's entry replaces the rule by a path).
DEFAULTS = {
    "run_id": "result.trial_name", "task_id": "result.task_name", "seed": "(derived from the run id)",
    "outcome": "result.verifier_result.rewards.reward", "model": "agent.model_name", "harness": "agent.name",
    "cost_usd": "final_metrics.total_cost_usd", "latency_s": "result.agent_execution",
}

_SIGNATURE = re.compile(rb'"schema_version"\s*:\s*"ATIF-v')
_TRIAL_DIR = re.compile(r"^(?P<task>.+)__[A-Za-z0-9]{7}$")
_PART_FILE = re.compile(r"\.(cont-\d+|summarization-\d+-[^./]+)\.json(\.gz)?$", re.IGNORECASE)
_BOOKKEEPING = frozenset({"result.json", "config.json", "lock.json"})
_SOURCES = ("system", "user", "agent")
_MAX_SEGMENTS = 1000


# --------------------------------------------------------------------------- #
# Detection and files
# --------------------------------------------------------------------------- #
def _sniff(head: bytes, name: str) -> bool:
    """A JSON object whose ``schema_version`` is ``"ATIF-v..."`` (Harbor writes it as the first key)."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return (text.startswith(b"{") and _SIGNATURE.search(text) is not None and b'"steps"' in text
            and b'"agent"' in text)


def _read_file(path: Path, fields: FieldMap) -> Iterator[Item]:
    """The run of one ``trajectory.json`` (none for a part of another trajectory or Harbor's bookkeeping)."""
    if _PART_FILE.search(path.name):
        return
    doc, problem = _load(path)
    if problem is not None:
        yield Item(line=problem[0], reason=f"malformed JSON: {problem[1]}")
        return
    if not _is_atif(doc):
        if path.name.lower() in _BOOKKEEPING:
            return
        yield Item(line=1, field="schema_version",
                   reason="not an ATIF trajectory: expected a JSON object with a `schema_version` \"ATIF-v1.x\"")
        return
    yield _item(doc, path, fields, 1)


def _read_objects(objects: Sequence[Any], name: str, fields: FieldMap) -> Iterator[Item]:
    """In-memory trajectories (``Trajectory.to_json_dict()``): no result.json, so the outcome needs ``fields``."""
    for position, obj in enumerate(objects, start=1):
        if not _is_atif(obj):
            yield Item(line=position, field="schema_version",
                       reason="not an ATIF trajectory: expected an object with a `schema_version` \"ATIF-v1.x\"")
            continue
        yield _item(dict(obj), None, fields, position)


def _item(doc: dict[str, Any], path: Path | None, fields: FieldMap, line: int) -> Item:
    try:
        return Item(line=line, record=_convert(doc, path, fields))
    except Reject as err:
        return Item(line=line, field=err.field, reason=err.reason)


def _is_atif(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "schema_version" in doc


def _load(path: Path) -> tuple[Any, tuple[int, str] | None]:
    """A JSON file's value, or (None, (line, message))."""
    with open_trace_file(path) as fh:
        data = fh.read()
    try:
        return msgspec.json.decode(data), None
    except msgspec.DecodeError:
        pass
    try:
        return json.loads(data), None
    except json.JSONDecodeError as err:
        return None, (err.lineno, f"{err.msg} (column {err.colno})")
    except (ValueError, RecursionError) as err:
        return None, (1, str(err).split(";")[0] or "nested too deeply")


def _beside(folder: Path | None, ref: Any) -> Path | None:
    """A file named by a trajectory (relative, inside ``folder``), or None when it may not be followed."""
    if folder is None or not isinstance(ref, str) or not ref or "\\" in ref:
        return None
    parts = PurePosixPath(ref).parts
    if PurePosixPath(ref).is_absolute() or ".." in parts or ":" in ref:
        return None  # an absolute path, a parent folder, or a URL (s3://...) is not read
    return folder.joinpath(*parts)


# --------------------------------------------------------------------------- #
# One trajectory -> one record
# --------------------------------------------------------------------------- #
def _convert(doc: dict[str, Any], path: Path | None, fields: FieldMap) -> dict[str, Any]:
    _check_version(doc, "")
    segments = _segments(doc, path)
    walk = _Walk(doc, path)
    for label, segment in segments:
        walk.segment(segment, label)
    steps = walk.finish()
    if walk.untooled and not steps:
        first = walk.untooled[0]
        raise Reject(f"{first}.observation", "an agent step with an observation but no tool_calls, and no tool call "
                     "in the whole run: actions written in the message text, which this reader cannot turn into "
                     f"steps ({len(walk.untooled)} such steps)")
    result, trial_dir, step_name = _trial_result(path)
    record = _run_fields(doc, segments[-1][1], path, result, trial_dir, step_name, fields)
    record["steps"] = steps
    meta = record["metadata"]
    if walk.untooled:
        meta["observations_without_tool_call"] = walk.untooled
    if not steps and walk.pending_known() and walk.n_calls:
        meta["tokens_in"], meta["tokens_out"] = walk.pending_in, walk.pending_out
    if walk.cached is not None and walk.n_calls:
        meta["tokens_cached"] = walk.cached
    if walk.subagents:
        meta["subagents"] = walk.subagents
    if len(segments) > 1:
        meta["continuations"] = [label for label, _ in segments[1:]]
    if "cost_usd" not in record and walk.cost is not None and walk.n_calls:
        record["cost_usd"] = walk.cost
    return record


def _check_version(doc: Mapping[str, Any], where: str) -> None:
    version = doc.get("schema_version")
    if version not in VERSIONS:
        raise Reject(f"{where}schema_version", f"unknown ATIF schema_version {version!r}: this reader knows "
                     f"{VERSIONS[0]} to {VERSIONS[-1]}")
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise Reject(f"{where}steps", "an ATIF trajectory needs a non-empty `steps` list")


def _segments(doc: dict[str, Any], path: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """The trajectory and the files it continues in (``continued_trajectory_ref``), in order."""
    out: list[tuple[str, dict[str, Any]]] = [("", doc)]
    seen = {path.name} if path is not None else set()
    current = doc
    while current.get("continued_trajectory_ref") is not None:
        ref = current["continued_trajectory_ref"]
        where = f"{out[-1][0]}continued_trajectory_ref"
        target = _beside(path.parent if path is not None else None, ref)
        if target is None or not target.is_file():
            raise Reject(where, f"the run continues in {ref!r}, which is not a file beside this trajectory: "
                         "a partial run")
        if target.name in seen or len(out) > _MAX_SEGMENTS:
            raise Reject(where, f"the continuation {ref!r} loops back to a file already read")
        seen.add(target.name)
        nxt, problem = _load(target)
        if problem is not None:
            raise Reject(where, f"the continuation {ref!r} is not JSON (line {problem[0]}: {problem[1]})")
        if not isinstance(nxt, dict):
            raise Reject(where, f"the continuation {ref!r} is not an ATIF object")
        label = f"{target.name}:"
        _check_version(nxt, label)
        out.append((label, nxt))
        current = nxt
    return out


class _Walk:
    """The steps of a run, built segment by segment; model calls without tools carried to the next call."""

    def __init__(self, doc: dict[str, Any], path: Path | None) -> None:
        self.doc, self.path = doc, path
        self.steps: list[dict[str, Any]] = []
        self.pending_in: int | None = 0
        self.pending_out: int | None = 0
        self.pending_extra: dict[str, Any] = {}
        self.cached: int | None = 0
        self.cost: float | None = 0.0
        self.untooled: list[str] = []
        self.subagents: list[dict[str, Any]] = []
        self.visited: set[str] = set()
        self.n_calls = 0  # model calls seen: with none, the totals are unknown rather than 0

    def pending_known(self) -> bool:
        return self.pending_in is not None and self.pending_out is not None

    def segment(self, segment: dict[str, Any], label: str) -> None:
        for i, step in enumerate(segment["steps"]):
            where = f"{label}steps[{i}]"
            if not isinstance(step, dict):
                raise Reject(where, f"a step must be an object, got {type(step).__name__}")
            if step.get("is_copied_context") is True:
                continue
            source = step.get("source")
            if source not in _SOURCES:
                raise Reject(f"{where}.source", f"expected one of {', '.join(_SOURCES)}, got {source!r}")
            stamp = _timestamp(step.get("timestamp"), f"{where}.timestamp")
            calls = _calls(step.get("tool_calls"), where) if source == "agent" else []
            if source == "agent" and step.get("llm_call_count") != 0:
                self.model_call(step.get("metrics"), f"{where}.metrics")
            results = _results(step.get("observation"), where)
            for result in results:
                self.subagent_refs(result, where)
            own = [r for r in results if r.get("source_call_id") is not None]
            loose = [r for r in results if r.get("source_call_id") is None and "content" in r]
            if source == "agent" and not calls and loose:
                self.untooled.append(where)
            if calls:
                self.add_calls(calls, own, loose, step, stamp, where)

    def model_call(self, metrics: Any, where: str) -> None:
        """Carry one model call's counts (unknown without ``metrics``) to the next tool call."""
        self.n_calls += 1
        metrics = metrics if isinstance(metrics, dict) else {}
        tin, tout = _count(metrics, "prompt_tokens", where), _count(metrics, "completion_tokens", where)
        cached, cost = _count(metrics, "cached_tokens", where), metrics.get("cost_usd")
        self.pending_in = None if tin is None or self.pending_in is None else self.pending_in + tin
        self.pending_out = None if tout is None or self.pending_out is None else self.pending_out + tout
        self.cached = None if cached is None or self.cached is None else self.cached + cached
        ok = isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0
        self.cost = None if not ok or self.cost is None else self.cost + cost
        for key, value in (("cached_tokens", cached), ("cost_usd", cost if ok else None)):
            if value is not None:
                self.pending_extra[key] = self.pending_extra.get(key, 0) + value

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
                self.model_call(None, where)  # its tokens are unknown, not 0
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
        target = _beside(self.path.parent if self.path is not None else None, tpath)
        if target is not None and target.is_file():
            sub, problem = _load(target)
            if problem is None and isinstance(sub, dict) and sub.get("schema_version") in VERSIONS:
                return sub, str(tpath)
        return None, str(tpath if tpath is not None else tid)

    def add_calls(self, calls: list[dict[str, Any]], own: list[dict[str, Any]], loose: list[dict[str, Any]],
                  step: dict[str, Any], stamp: Any, where: str) -> None:
        first = len(self.steps)
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
                out["tokens_in"], out["tokens_out"] = self.pending_in, self.pending_out
                meta.update(self.pending_extra)
            elif self.pending_known():
                meta[TOKENS_WITH_STEP] = first
            self.steps.append(out)
        self.pending_in, self.pending_out, self.pending_extra = 0, 0, {}

    def finish(self) -> list[dict[str, Any]]:
        """The steps, with the model calls after the last tool call added to it."""
        if self.steps and (self.pending_in != 0 or self.pending_out != 0 or self.pending_extra):
            target = next(s for s in reversed(self.steps) if TOKENS_WITH_STEP not in s["metadata"])
            for key, pending in (("tokens_in", self.pending_in), ("tokens_out", self.pending_out)):
                mine = target.get(key)
                target[key] = None if mine is None or pending is None else mine + pending
            if target.get("tokens_in") is None or target.get("tokens_out") is None:
                for step in self.steps:  # the step its group's counts were at is unknown now
                    if step["metadata"].get(TOKENS_WITH_STEP) == target["index"]:
                        del step["metadata"][TOKENS_WITH_STEP]
            self.pending_in, self.pending_out, self.pending_extra = 0, 0, {}
        for step in self.steps:
            for key in ("tokens_in", "tokens_out"):
                if step.get(key) is None:
                    step.pop(key, None)
        return self.steps


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


def _count(metrics: Mapping[str, Any], key: str, where: str) -> int | None:
    value = metrics.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Reject(f"{where}.{key}", f"a token count must be a whole number >= 0, got {value!r}")
    return value


def _timestamp(value: Any, where: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Reject(where, f"expected ISO-8601 text, got {value!r}")
    return value


# --------------------------------------------------------------------------- #
# Run-level fields: the trajectory and Harbor's result.json
# --------------------------------------------------------------------------- #
def _trial_result(path: Path | None) -> tuple[dict[str, Any] | None, Path | None, str | None]:
    """The Harbor trial result beside a trajectory (``<trial>/agent/trajectory.json`` -> ``<trial>/result.json``;
    multi-step: ``<trial>/steps/<name>/agent/``), its trial folder and step name."""
    if path is None:
        return None, None, None
    folder, step_name = path.parent, None
    if folder.name == "agent":
        folder = folder.parent
        if folder.parent.name == "steps":
            folder, step_name = folder.parent.parent, folder.name
    target = folder / "result.json"
    if not target.is_file():
        return None, folder, step_name
    doc, problem = _load(target)
    if problem is not None or not isinstance(doc, dict):
        why = f"line {problem[0]}: {problem[1]}" if problem is not None else "not a JSON object"
        raise Reject("result.json", f"the trial's result.json cannot be read ({why})")
    return doc, folder, step_name


def _run_fields(doc: dict[str, Any], last: dict[str, Any], path: Path | None, result: dict[str, Any] | None,
                trial_dir: Path | None, step_name: str | None, fields: FieldMap) -> dict[str, Any]:
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    trial = trial_dir.name if trial_dir is not None and _TRIAL_DIR.match(trial_dir.name) else None
    given = {key: value for key, value in fields.items() if DEFAULTS.get(key) != value}
    found = {key: _given(doc, result, value) for key, value in given.items()}
    run_id = found.get("run_id", _text((result or {}).get("trial_name")) or trial or _text(doc.get("session_id"))
                       or _text(doc.get("trajectory_id")) or (str(path) if path is not None else None))
    if run_id is None:
        raise Reject("session_id", "no run id: give fields={'run_id': ...}")
    if step_name is not None and "run_id" not in found:
        run_id = f"{run_id}:{step_name}"
    task_id = found.get("task_id", _text((result or {}).get("task_name")) or (trial and _TRIAL_DIR.match(trial)["task"]))
    if task_id is None:
        raise Reject("task_id", "no task: no Harbor result.json (task_name) beside the trajectory, and its folder is "
                     "not a Harbor trial folder (<task>__<7 characters>); give fields={'task_id': ...}")
    meta: dict[str, Any] = {"schema_version": doc["schema_version"]}
    record: dict[str, Any] = {"run_id": run_id, "task_id": task_id, "metadata": meta}
    if "seed" in found:
        record["seed"] = found["seed"]
    else:
        record["seed"] = int.from_bytes(hashlib.sha256(str(run_id).encode()).digest()[:6], "big")
        meta["seed_derived"] = True
    record["outcome"] = found["outcome"] if "outcome" in found else _reward(result, step_name)
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


def _given(doc: dict[str, Any], result: dict[str, Any] | None, path: str) -> Any:
    """The value at a user's ``fields`` path: in the trajectory, or (``result.``) in result.json."""
    if path.startswith("result."):
        value = MISSING if result is None else lookup(result, path[len("result."):])
    else:
        value = lookup(doc, path)
    if value is MISSING:
        raise Reject(path, f"`{path}` is not in this {'result.json' if path.startswith('result.') else 'trajectory'}")
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _reward(result: dict[str, Any] | None, step_name: str | None) -> Any:
    """The outcome: the trial's (or step's) ``verifier_result.rewards`` ``reward``, or its only reward."""
    if result is None:
        raise Reject("outcome", "no outcome: no Harbor result.json beside the trajectory (its verifier's reward is "
                     "the outcome); give fields={'outcome': ...} for one the trajectory holds")
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
        raise Reject(where, f"no verifier rewards, so no outcome{why}")
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


FORMAT = Format(
    name="atif",
    summary="Harbor's Agent Trajectory Interchange Format (ATIF-v1.0 .. v1.8): one trajectory.json per run, "
            "the outcome from the trial's result.json",
    example='{"schema_version": "ATIF-v1.5", "session_id": "s1", "agent": {"name": "terminus-2", "version": "2.0.0", '
            '"model_name": "openai/gpt-4o"}, "steps": [{"step_id": 1, "source": "agent", "message": "", '
            '"tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}}], '
            '"observation": {"results": [{"source_call_id": "c1", "content": "a.txt"}]}, '
            '"metrics": {"prompt_tokens": 520, "completion_tokens": 80}}]}',
    fields=DEFAULTS,
    sniff=_sniff,
    read_file=_read_file,
    read_objects=_read_objects,
)
