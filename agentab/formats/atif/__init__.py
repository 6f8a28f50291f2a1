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
task_id     ``result.json`` ``task_name``, else the trial folder name  none: ``Item.missing``
            less its ``__xxxxxxx`` suffix, else ``extra.task_id``
seed        none recorded: a number derived from the run id            ``metadata.seed_derived``; or
                                                                       ``fields={"seed": ...}``
outcome     ``result.json`` ``verifier_result.rewards.reward`` (the    no result.json, no verifier result:
            only reward when there is one of another name); without    ``Item.missing``; several rewards:
                                                                       rejected
            result.json, the trajectory's own ``extra.reward``
model       ``agent.model_name``                                       metadata.model
harness     ``agent.name``                                             ``agent.version`` in metadata
cost_usd    ``final_metrics.total_cost_usd`` of the last segment,      includes sub-agents, as ATIF says;
            else the sum of every model call's ``cost_usd``            missing when either is unknown
latency_s   ``result.json`` ``agent_execution`` finished - started     missing without result.json
steps       each ``tool_calls`` entry of an ``agent`` step             observation: its results
=========== ========================================================= ===================================

A ``fields`` entry is a dotted path into the trajectory (``"extra.arm"``, ``"agent.version"``) or, prefixed
``result.``, into ``result.json`` (``"result.verifier_result.rewards.pass"``, ``"result.config.job_id"``); a
path that is not there rejects the run. A required field (run_id, task_id, seed, outcome) the files do not hold
(by the rules, or at the path given) is named in ``Item.missing`` with the reason instead: the loader fills it
from the file path or an outcomes table (``fields={"path": ...}``, ``outcomes=``), or rejects the run with
that reason.

Steps
    Every tool call of a ``source: "agent"`` step, in order (``tool`` = ``function_name``, ``args`` =
    ``arguments``). Its observation is ``{"content": ...}`` (and ``extra``) from the results whose
    ``source_call_id`` is its id (several: a list of contents). Results without a ``source_call_id``
    (Terminus-2 writes the terminal output so) belong to the step's actions as a whole: they are the
    observation of its last call, and the step's other unanswered calls get ``{"output_at_step": j}``.
    ATIF has no error flag, so ``status`` is left out and the run's error count is unknown, not 0.
    ``started_at`` is the step's ``timestamp``. Step ``metadata`` keeps ``tool_call_id`` and
    ``step_id``; the calls of a step with several share its ``step_id`` as their ``parallel`` group.
Tokens
    Per model call (an ``agent`` step, unless ``llm_call_count`` is 0): ``prompt_tokens`` (cached
    included, as ATIF defines it) -> ``tokens_in``, ``completion_tokens`` -> ``tokens_out``, at the first
    call of the step (the others: ``metadata.tokens_with_step``). A model call without tool calls, and
    every sub-agent trajectory a result refers to (``subagent_trajectory_ref``: embedded by
    ``trajectory_id`` or a file beside this one by ``trajectory_path``), is added to the next tool call,
    or to the last one when none follows. A call without ``metrics`` (or a sub-agent file that is not
    there) leaves those tokens unknown, never 0. ``cached_tokens`` and ``cost_usd`` go to the same step's
    ``tokens_cached`` / ``cost_usd``. The run's ``tokens_in`` / ``tokens_out`` / ``tokens_cached`` are the
    sums over every model call (a run without tool calls too), each when every call has it.
Segments
    Steps marked ``is_copied_context`` were copied from an earlier trajectory and are skipped. A
    trajectory with ``continued_trajectory_ref`` goes on in that file (beside it): its steps are this
    run's too; a continuation that is not there rejects the run. Files Harbor writes beside a trajectory
    as parts of it (``trajectory.cont-N.json``, Terminus-2's ``trajectory.summarization-N-*.json``
    sub-agents), when their ``trajectory.json`` is there, and its bookkeeping files (``result.json``,
    ``config.json``, ``lock.json``) give no run of their own when a folder is read (with ``format="atif"`` the
    loader does not open them: :attr:`~agentab.formats.Format.companions`); a trial's
    ``result.json`` without ``agent/trajectory.json`` is a rejection (the agent wrote no trajectory).
Rejected
    A file that is not JSON or not an ATIF object, an unknown ``schema_version``, no steps, a step
    ``source`` other than the three, a tool call without an id or name or with non-object arguments,
    two calls with one id in a step, a result naming a call its step does not have, a bad timestamp,
    and a run whose agent steps have observations but no tool call at all (actions written in the
    message text, e.g. OpenHands without function calling: they would read as 0 steps). When the
    run has tool calls, such steps are listed in ``metadata.observations_without_tool_call``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from agentab.formats._base import FieldMap, Format, Item, Reject
from agentab.formats._fast_path import Slow
from agentab.formats.atif._fast import item as fast_item
from agentab.formats.atif._run import DEFAULTS, run_fields, trial_result
from agentab.formats.atif._steps import VERSIONS, Walk, beside, load
from agentab.formats.files import decode_json, read_trace_bytes

__all__ = ["DEFAULTS", "FORMAT", "VERSIONS"]

_SIGNATURE = re.compile(rb'"schema_version"\s*:\s*"ATIF-v')
_PART_FILE = re.compile(r"\.(cont-\d+|summarization-\d+-[^./]+)\.json(\.gz)?$", re.IGNORECASE)
_BOOKKEEPING = frozenset({"result.json", "config.json", "lock.json"})
_MAX_SEGMENTS = 1000


# --------------------------------------------------------------------------- #
# Detection and files
# --------------------------------------------------------------------------- #
def _sniff(head: bytes, name: str) -> bool:
    """A JSON object whose ``schema_version`` is ``"ATIF-v..."`` (Harbor writes it as the first key), with
    ``steps`` and ``agent``; or Harbor's trial ``result.json`` (``task_name``, ``trial_name``, ``task_checksum``),
    read with the trajectory beside it."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    if _SIGNATURE.search(text) is not None:
        return b'"steps"' in text and b'"agent"' in text
    return all(key in text for key in (b'"task_name"', b'"trial_name"', b'"task_checksum"'))


def _read_file(path: Path, fields: FieldMap) -> Iterator[Item]:
    """The run of one ``trajectory.json`` (none for a part of another trajectory or Harbor's bookkeeping)."""
    name = path.name
    if name == "trajectory.json":
        raw = read_trace_bytes(path)
    else:
        part = _PART_FILE.search(name) if "-" in name else None  # (a part's name has one)
        if part is not None and os.path.isfile(os.path.join(os.path.dirname(path), f"{name[:part.start()]}.json")):
            return  # read with the trajectory it is part of (``trajectory.cont-1.json`` -> ``trajectory.json``)
        raw = read_trace_bytes(path)
        if name.lower() in _BOOKKEEPING and _quiet(raw) and _has_trajectory(path.parent):
            return  # a trial's bookkeeping beside its trajectory: no run of its own (as below, without parsing it)
    try:
        fast = fast_item(raw, path, fields)  # the plain case in columns (._fast)
    except (Slow, Reject, RecursionError):
        fast = None  # anything else is read the usual way, which gives any rejection
    if fast is not None:
        yield fast
        return
    doc, problem = decode_json(raw)
    if problem is not None:
        yield Item(line=problem[0], reason=f"malformed JSON: {problem[1]}")
        return
    if not _is_atif(doc):
        if _is_trial_result(doc) and not _has_trajectory(path.parent):
            yield Item(line=1, field="agent/trajectory.json",
                       reason="a Harbor trial result without agent/trajectory.json: the agent wrote no ATIF trajectory, "
                              "so this trial cannot be read")
            return
        if path.name.lower() in _BOOKKEEPING:
            return
        yield Item(line=1, field="schema_version",
                   reason="not an ATIF trajectory: expected a JSON object with a `schema_version` \"ATIF-v1.x\"")
        return
    yield _item(doc, path, fields, 1)


def _companions(paths: list[str]) -> list[str]:
    """The files of a folder listing to read: not a trial's bookkeeping beside its trajectory, nor a part of a
    trajectory listed beside it (:func:`_read_file` gives neither a run: each is read with its trajectory)."""
    found = set(paths)
    trials = set()  # the folders holding a trial's trajectory: <trial>/agent/, or <trial>/steps/<name>/agent/
    for path in paths:
        if path.endswith("trajectory.json") and os.path.basename(path) == "trajectory.json":
            agent = os.path.dirname(path)
            if os.path.basename(agent) == "agent":
                trial = os.path.dirname(agent)
                trials.add(trial)
                steps = os.path.dirname(trial)
                if os.path.basename(steps) == "steps":
                    trials.add(os.path.dirname(steps))
    keep = []
    for path in paths:
        folder, name = os.path.split(path)
        if name.lower() in _BOOKKEEPING and folder in trials:
            continue
        part = _PART_FILE.search(name) if "-" in name else None  # (a part's name has one)
        if part is not None and os.path.join(folder, f"{name[:part.start()]}.json") in found:
            continue
        keep.append(path)
    return keep


def _read_objects(objects: Sequence[Any], name: str, fields: FieldMap) -> Iterator[Item]:
    """In-memory trajectories (``Trajectory.to_json_dict()``): no result.json, so the outcome needs ``fields``."""
    for position, obj in enumerate(objects, start=1):
        if not _is_atif(obj):
            yield Item(line=position, field="schema_version",
                       reason="not an ATIF trajectory: expected an object with a `schema_version` \"ATIF-v1.x\"")
            continue
        yield _item(dict(obj), None, fields, position)


def _item(doc: dict[str, Any], path: Path | None, fields: FieldMap, line: int) -> Item:
    missing: dict[str, tuple[str | None, str]] = {}
    try:
        return Item(line=line, record=_convert(doc, path, fields, missing), missing=missing or None)
    except Reject as err:
        return Item(line=line, field=err.field, reason=err.reason)


def _is_trial_result(doc: Any) -> bool:
    """Harbor's ``TrialResult`` (a trial's result.json)."""
    return isinstance(doc, Mapping) and {"task_name", "trial_name", "task_checksum"} <= doc.keys()


class _Nothing(msgspec.Struct):
    """A JSON object whose members are all skipped: decoding into it only checks the JSON."""


_check_object = msgspec.json.Decoder(_Nothing).decode


def _quiet(raw: bytes) -> bool:
    """Whether ``raw`` is a JSON object that is surely no ATIF trajectory (it names no ``schema_version``), so a
    bookkeeping file beside a trajectory can be passed over unread: it gives no run and no rejection."""
    if b"schema_version" in raw or b"\\u" in raw:  # an escaped key could spell it
        return False
    try:
        _check_object(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False  # not JSON msgspec reads (or not an object): read as below, which says what is wrong
    return True


def _has_trajectory(trial: Path) -> bool:
    if os.path.isfile(os.path.join(trial, "agent", "trajectory.json")):
        return True
    steps = trial / "steps"
    return steps.is_dir() and any((step / "agent" / "trajectory.json").is_file() for step in steps.iterdir())


def _is_atif(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "schema_version" in doc


# --------------------------------------------------------------------------- #
# One trajectory -> one record
# --------------------------------------------------------------------------- #
def _convert(doc: dict[str, Any], path: Path | None, fields: FieldMap,
             missing: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    _check_version(doc, "")
    segments = _segments(doc, path)
    walk = Walk(doc, path)
    for label, segment in segments:
        walk.segment(segment, label)
    steps = walk.finish()
    if walk.untooled and not steps:
        first = walk.untooled[0]
        raise Reject(f"{first}.observation", "an agent step with an observation but no tool_calls, and no tool call "
                     "in the whole run: actions written in the message text, which this reader cannot turn into "
                     f"steps ({len(walk.untooled)} such steps)")
    result, trial_dir, step_name = trial_result(path)
    record = run_fields(doc, segments[-1][1], path, result, trial_dir, step_name, fields, missing)
    record["steps"] = steps
    meta = record["metadata"]
    if walk.untooled:
        meta["observations_without_tool_call"] = walk.untooled
    totals = walk.run_totals()
    cost = totals.pop("cost_usd", None)
    record.update(totals)
    if walk.subagents:
        meta["subagents"] = walk.subagents
    if len(segments) > 1:
        meta["continuations"] = [label for label, _ in segments[1:]]
    if "cost_usd" not in record and cost is not None:
        record["cost_usd"] = cost
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
        target = beside(path.parent if path is not None else None, ref)
        if target is None or not target.is_file():
            raise Reject(where, f"the run continues in {ref!r}, which is not a file beside this trajectory: "
                         "a partial run")
        if target.name in seen or len(out) > _MAX_SEGMENTS:
            raise Reject(where, f"the continuation {ref!r} loops back to a file already read")
        seen.add(target.name)
        nxt, problem = load(target)
        if problem is not None:
            raise Reject(where, f"the continuation {ref!r} is not JSON (line {problem[0]}: {problem[1]})")
        if not isinstance(nxt, dict):
            raise Reject(where, f"the continuation {ref!r} is not an ATIF object")
        label = f"{target.name}:"
        _check_version(nxt, label)
        out.append((label, nxt))
        current = nxt
    return out


FORMAT = Format(
    name="atif",
    summary="Harbor's Agent Trajectory Interchange Format (ATIF-v1.0 .. v1.8): one trajectory.json per run, "
            "the outcome from the trial's result.json",
    example='{"schema_version": "ATIF-v1.5", "session_id": "s1", "agent": {"name": "terminus-2", "version": "2.0.0", '
            '"model_name": "openai/gpt-4o"}, "steps": [{"step_id": 1, "source": "agent", "message": "", '
            '"tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}}], '
            '"observation": {"results": [{"source_call_id": "c1", "content": "a.txt"}]}, '
            '"metrics": {"prompt_tokens": 520, "completion_tokens": 80}}], "extra": {"task_id": "t1", "reward": 1.0}}',
    fields=DEFAULTS,
    sniff=_sniff,
    read_file=_read_file,
    read_objects=_read_objects,
    companions=_companions,
)
