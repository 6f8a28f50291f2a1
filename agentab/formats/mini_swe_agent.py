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
is therefore given without ``outcome``, and the decoder rejects it ("missing
required field") until the outcome is joined from the report or mapped with
``fields={"outcome": ...}`` to a key the file was given.
``metadata`` keeps ``exit_status``, ``submitted`` (a non-empty submission),
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
the next step, or the last one: ``tokens_in`` / ``tokens_out``, and in the
step's ``metadata`` ``cost_usd``, ``tokens_cached``
(``prompt_tokens_details.cached_tokens``) and ``tokens_reasoning``
(``completion_tokens_details.reasoning_tokens``). A count is left out
(unknown, never 0) when any call given to the step does not report it; a
cost of 0 is unknown (mini-SWE-agent writes 0 when it could not price a
call). A run without steps keeps its totals in ``metadata.tokens_in`` /
``tokens_out``. A count that is not an integer >= 0 is a rejection naming it.
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
from agentab.formats.files import BOM, JSON_SPACE, open_trace_file

__all__ = ["FIELDS", "FORMAT", "read_file", "read_objects", "sniff"]

#: Default run-level mapping: agentab's name -> the key (or dotted path) in the trajectory.
FIELDS: dict[str, str] = {
    "run_id": "run_id", "task_id": "instance_id", "seed": "seed", "arm": "arm",
    "model": "info.config.model.model_name", "harness": "harness", "outcome": "outcome",
    "cost_usd": "info.model_stats.instance_cost", "latency_s": "latency_s", "messages": "messages",
}

_DEFAULT_ACTION = r"```bash\s*\n(.*?)\n```"
_DEFAULT_TIMEOUT = "The last command <command>"
_RETURNCODE = re.compile(r"\s*<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)
_HEAD_TAIL = re.compile(r"<output_head>\n?(.*?)</output_head>.*<output_tail>\n?(.*?)</output_tail>", re.S)
_SUFFIXES = (".traj.json.gz", ".traj.json", ".json.gz", ".json")


def _describe(value: Any) -> str:
    text = msgspec.json.encode(value).decode() if not isinstance(value, str) else repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


# --------------------------------------------------------------------------- #
# Model calls: tokens and cost
# --------------------------------------------------------------------------- #
def _count(obj: Any, key: str, where: str) -> Any:
    """The count at ``obj[key]``: an int >= 0, None when absent; a rejection otherwise."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None or (type(value) is int and value >= 0):
        return value
    raise Reject(f"{where}.{key}", f"expected a token count (integer >= 0), got {_describe(value)}")


def _call(extra: Any) -> dict[str, Any]:
    """A model call's counts (None: not reported): tokens_in/out, tokens_cached/reasoning, cost_usd."""
    response = extra.get("response") if isinstance(extra, dict) else None
    usage = response.get("usage") if isinstance(response, dict) else None
    where = "extra.response.usage"
    if usage is not None and not isinstance(usage, dict):
        raise Reject(where, f"expected a usage object, got {_describe(usage)}")
    usage = usage or {}
    tin = _count(usage, "prompt_tokens", where)
    tout = _count(usage, "completion_tokens", where)
    tin = _count(usage, "input_tokens", where) if tin is None else tin
    tout = _count(usage, "output_tokens", where) if tout is None else tout
    cached = _count(usage.get("prompt_tokens_details") or usage.get("input_tokens_details"), "cached_tokens",
                    f"{where}.prompt_tokens_details")
    reasoning = _count(usage.get("completion_tokens_details") or usage.get("output_tokens_details"),
                       "reasoning_tokens", f"{where}.completion_tokens_details")
    cost = extra.get("cost") if isinstance(extra, dict) else None
    cost = usage.get("cost") if cost is None else cost
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0):
        raise Reject("extra.cost", f"expected a cost (number >= 0), got {_describe(cost)}")
    return {"tokens_in": tin, "tokens_out": tout, "tokens_cached": cached, "tokens_reasoning": reasoning,
            "cost_usd": cost or None}


_KEYS = ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning", "cost_usd")


class _Pending:
    """Model calls not yet given to a step; a count is unknown when any call lacks it."""

    __slots__ = ("calls", "given")

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.given: set[int] = set()  # indexes of the steps given calls

    def add(self, call: dict[str, Any]) -> None:
        self.calls.append(call)

    def totals(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in _KEYS:
            values = [call[key] for call in self.calls]
            if values and None not in values:
                out[key] = sum(values)
        self.calls = []
        return out

    def give(self, step: dict[str, Any]) -> None:
        """Add the pending calls to ``step``: a count any of them lacks becomes unknown there too."""
        if not self.calls:
            return
        first = step["index"] not in self.given
        self.given.add(step["index"])
        totals = self.totals()
        for key in _KEYS:
            holder = step if key in ("tokens_in", "tokens_out") else step["metadata"]
            if key in totals and (first or key in holder):
                holder[key] = holder.get(key, 0) + totals[key]
            else:
                holder.pop(key, None)


# --------------------------------------------------------------------------- #
# Observations
# --------------------------------------------------------------------------- #
def _output_text(content: str) -> str:
    found = _OUTPUT.search(content)
    if found:
        return found.group(1)
    found = _HEAD_TAIL.search(content)
    if found:
        return f"{found.group(1)}\n...\n{found.group(2)}"
    return _RETURNCODE.sub("", content, count=1).strip("\n")


def _with_code(code: int, text: Any) -> dict[str, Any]:
    obs: dict[str, Any] = {"status": "ok" if code == 0 else "error", "returncode": code, "content": text}
    if code != 0:
        obs["error"] = f"returncode {code}"
    return obs


class _Run:
    """What the observation rules need to know about the run."""

    def __init__(self, info: dict[str, Any], messages: list[Any]) -> None:
        agent = lookup(info, "config.agent")
        agent = agent if isinstance(agent, dict) else {}
        regex = agent.get("action_regex")
        self.action = re.compile(regex if isinstance(regex, str) and regex else _DEFAULT_ACTION, re.S)
        timeout = agent.get("timeout_template")
        prefix = timeout.split("{", 1)[0] if isinstance(timeout, str) else ""
        self.timeout = prefix if len(prefix) >= 8 else _DEFAULT_TIMEOUT
        self.submitted = info.get("exit_status") == "Submitted"
        self.submission = info.get("submission")
        self.last = len(messages) - 1


def _reply(msg: dict[str, Any], i: int, run: _Run) -> dict[str, Any]:
    """The observation of a user or tool message answering an action."""
    content = msg.get("content")
    extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
    code = extra.get("returncode")
    text = extra["raw_output"] if isinstance(extra.get("raw_output"), str) else None
    if type(code) is int:
        obs = _with_code(code, text if text is not None else _output_text(content or ""))
        if extra.get("exception_info"):
            obs["status"], obs["error"] = "error", extra["exception_info"]
        return obs
    if not isinstance(content, str):
        raise Reject(f"messages[{i}].content", f"expected the text of a command's output, got {_describe(content)}")
    found = _RETURNCODE.match(content)
    if found:
        return _with_code(int(found.group(1)), _output_text(content))
    if content.startswith(run.timeout):
        return {"status": "error", "content": _output_text(content), "error": "timeout"}
    if run.submitted and (i == run.last or content == run.submission):
        return {"content": content, "submission": True}
    raise Reject(f"messages[{i}].content", "a reply to a bash action without <returncode>, a timeout or the "
                 f"submission: not a mini-swe-agent observation ({content[:60]!r})")


# --------------------------------------------------------------------------- #
# Steps
# --------------------------------------------------------------------------- #
def _actions(msg: dict[str, Any], run: _Run, i: int) -> list[dict[str, Any]]:
    """The actions of an assistant message: ``extra.actions`` (v2), else the bash blocks of its text (v1)."""
    extra = msg.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if actions is not None:
        if not isinstance(actions, list):
            raise Reject(f"messages[{i}].extra.actions", f"expected a list of actions, got {_describe(actions)}")
        for j, action in enumerate(actions):
            if not (isinstance(action, dict) and isinstance(action.get("command"), str)):
                raise Reject(f"messages[{i}].extra.actions[{j}]",
                             f"expected an action {{'command': text}}, got {_describe(action)}")
        return actions
    content = msg.get("content")
    if content is None:
        return []
    if not isinstance(content, str):
        raise Reject(f"messages[{i}].content", f"expected the model's text, got {_describe(content)}")
    found = [a.strip() for a in run.action.findall(content)]
    return [{"command": found[0]}] if len(found) == 1 else []


def _new_step(steps: list[dict[str, Any]], action: dict[str, Any], i: int, stamp: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"index": len(steps), "tool": "bash", "args": {"command": action["command"]},
                            "observation": None, "metadata": {"message": i}}
    if "tool_call_id" in action:
        step["metadata"]["call_id"] = action["tool_call_id"]
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        step["started_at"] = stamp
    steps.append(step)
    return step


def _answer(step: dict[str, Any], msg: dict[str, Any], i: int, run: _Run) -> None:
    step["observation"] = _reply(msg, i, run)
    extra = msg.get("extra")
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        step["ended_at"] = stamp


class _Walk:
    """The steps of one message list, built message by message."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.steps: list[dict[str, Any]] = []
        self.pending = _Pending()
        self.waiting: list[dict[str, Any]] = []  # text-mode actions awaiting their reply, in order
        self.by_id: dict[str, dict[str, Any]] = {}  # tool-mode actions awaiting their reply
        self.format_errors = 0

    def assistant(self, msg: dict[str, Any], i: int) -> None:
        extra = msg.get("extra")
        try:
            self.pending.add(_call(extra))
        except Reject as problem:
            raise Reject(f"messages[{i}].{problem.field}", problem.reason) from None
        actions = _actions(msg, self.run, i)
        if not actions:
            self.format_errors += 1
            return
        stamp = extra.get("timestamp") if isinstance(extra, dict) else None
        first: dict[str, Any] | None = None
        for action in actions:
            step = _new_step(self.steps, action, i, stamp)
            if first is None:
                self.pending.give(step)
                first = step
            elif "tokens_in" in first or "tokens_out" in first:
                step["metadata"]["tokens_with_step"] = first["index"]
            call_id = action.get("tool_call_id")
            if isinstance(call_id, str):
                self.by_id[call_id] = step
            else:
                self.waiting.append(step)

    def reply(self, msg: dict[str, Any], i: int) -> None:
        extra = msg.get("extra")
        if isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError" and "response" in extra:
            try:  # v2 keeps a format error's model call on the error message
                self.pending.add(_call(extra))
            except Reject as problem:
                raise Reject(f"messages[{i}].{problem.field}", problem.reason) from None
            self.format_errors += 1
            return
        if msg.get("role") == "tool":
            call_id = msg.get("tool_call_id")
            step = self.by_id.pop(call_id, None) if isinstance(call_id, str) else None
            if step is None:
                raise Reject(f"messages[{i}].tool_call_id", f"no earlier action has tool call id {call_id!r}")
            _answer(step, msg, i, self.run)
        elif self.waiting:
            _answer(self.waiting.pop(0), msg, i, self.run)

    def exit(self, msg: dict[str, Any]) -> None:
        """v2's last message: a submission answers the submitting action."""
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        open_steps = self.waiting + list(self.by_id.values())
        if extra.get("exit_status") == "Submitted" and len(open_steps) == 1:
            open_steps[0]["observation"] = {"status": "ok", "content": extra.get("submission", msg.get("content")),
                                            "submission": True}
        self.waiting, self.by_id = [], {}


def _steps(messages: list[Any], run: _Run) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """(steps, the totals of a run without steps, format errors)."""
    walk = _Walk(run)
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise Reject(f"messages[{i}]", f"expected a message object, got {_describe(msg)}")
        role = msg.get("role")
        if role == "assistant":
            walk.assistant(msg, i)
        elif role in ("user", "tool"):
            if i >= 2 or role == "tool":  # messages 0 and 1 are the system prompt and the task
                walk.reply(msg, i)
        elif role == "exit":
            walk.exit(msg)
        elif role != "system":
            raise Reject(f"messages[{i}].role", f"unknown message role {_describe(role)}")
    rest: dict[str, Any] = {}
    if walk.steps:
        walk.pending.give(walk.steps[-1])
    else:
        rest = walk.pending.totals()
    return walk.steps, rest, walk.format_errors


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


def _identity(obj: dict[str, Any], fields: FieldMap, where: str, line: int, named: bool) -> dict[str, Any]:
    """run_id, task_id, seed (and outcome when the mapping finds one), checked."""
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
                    raise Reject(name, f"no task_id: the trajectory has no {name!r} (and no file name to use)")
        elif not ((isinstance(value, str) and value) or (type(value) is int)):
            raise Reject(name, f"{key} must be non-empty text or an integer, got {_describe(value)}")
        out[key] = value
    name, seed = _value(obj, fields, "seed")
    if seed is None:
        seed, meta["seed_assumed"] = 0, True
    elif type(seed) is not int:
        raise Reject(name, f"seed must be an integer, got {_describe(seed)}")
    out["seed"] = seed
    name, outcome = _value(obj, fields, "outcome")
    if outcome is not None:
        if not isinstance(outcome, (bool, int, float)):
            raise Reject(name, f"outcome must be true/false or a number, got {_describe(outcome)}")
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
            raise Reject(name, f"{key} must be non-empty text, got {_describe(value)}")
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
            raise Reject(name, f"{key} must be a number >= 0, got {_describe(value)}")
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
        meta["submitted"] = bool(info["submission"])
    if isinstance(obj.get("trajectory_format"), str):
        meta["trajectory_format"] = obj["trajectory_format"]


def _convert(obj: Any, line: int, where: str, fields: FieldMap, named: bool) -> Item:
    if not isinstance(obj, dict):
        return Item(line, reason=f"expected a mini-swe-agent trajectory object, got {_describe(obj)}")
    try:
        name, messages = _value(obj, fields, "messages")
        if not isinstance(messages, list):
            raise Reject(name, f"expected the trajectory's message list, got {_describe(messages)}")
        info = obj.get("info")
        if info is not None and not isinstance(info, dict):
            raise Reject("info", f"expected the trajectory's info object, got {_describe(info)}")
        out = _identity(obj, fields, where, line, named)
        _run_fields(obj, fields, out)
        steps, totals, format_errors = _steps(messages, _Run(info or {}, messages))
        out["steps"] = steps
        meta = out["metadata"]
        meta["format_errors"] = format_errors
        for key in ("tokens_in", "tokens_out"):
            if key in totals:
                meta[key] = totals[key]
        return Item(line, record=out)
    except Reject as problem:
        return Item(line, field=problem.field, reason=problem.reason)
    except RecursionError:
        return Item(line, reason="JSON nested too deeply to read")


# --------------------------------------------------------------------------- #
# Reading and detection
# --------------------------------------------------------------------------- #
def read_file(path: Path, fields: FieldMap | None = None) -> Iterator[Item]:
    """The one run of a trajectory file (``.traj.json``, or gzip-compressed)."""
    plan = {**FIELDS, **(fields or {})}
    with open_trace_file(Path(path)) as fh:
        data = fh.read().removeprefix(BOM)
    body = data.lstrip(JSON_SPACE)
    line = data.count(b"\n", 0, len(data) - len(body)) + 1
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
    '"trajectory_format": "mini-swe-agent-1", "instance_id": "owner__repo-1"}',
    fields=FIELDS,
    sniff=sniff,
    read_file=read_file,
    read_objects=read_objects,
)
