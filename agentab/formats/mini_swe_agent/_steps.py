"""The steps of a mini-SWE-agent message list: actions, their observations, each model call's tokens and cost.

The rules are in :mod:`agentab.formats.mini_swe_agent` ("Steps", "Tokens and cost"). :func:`walk_steps` walks
the messages once; problems raise :class:`~agentab.formats._base.Reject` naming the message.
"""

from __future__ import annotations

import re
from typing import Any

from agentab.formats._base import Reject, describe, lookup, token_count

__all__ = ["Run", "describe", "walk_steps"]

_DEFAULT_ACTION = r"```bash\s*\n(.*?)\n```"
_DEFAULT_TIMEOUT = "The last command <command>"
_RETURNCODE = re.compile(r"\s*<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.DOTALL)
#: A v1 reply: the return code, then the output (what :func:`_output_text` finds first).
_V1_REPLY = re.compile(r"\s*<returncode>\s*(-?\d+)\s*</returncode>.*?<output>\n?(.*?)</output>", re.DOTALL)
_HEAD_TAIL = re.compile(r"<output_head>\n?(.*?)</output_head>.*<output_tail>\n?(.*?)</output_tail>", re.DOTALL)


# --------------------------------------------------------------------------- #
# Model calls: tokens and cost
# --------------------------------------------------------------------------- #
_count = token_count  # the count at obj[key]: an int >= 0, None when absent; a rejection otherwise


def _call(extra: Any) -> tuple[Any, ...]:
    """A model call's counts, in :data:`KEYS` order (None: not reported): tokens_in/out,
    tokens_reasoning/cached, cost_usd (a cost of 0 is unknown: what mini-SWE-agent writes when it cannot price)."""
    if type(extra) is dict:
        response = extra.get("response")
        usage = response.get("usage") if type(response) is dict else None
        cost, at = extra.get("cost"), "extra.cost"
    else:
        usage, cost, at = None, None, "extra.cost"
    where = "extra.response.usage"
    if usage is None:
        usage = {}
    elif type(usage) is not dict:
        raise Reject(where, f"expected a usage object, got {describe(usage)}")
    tin, tout = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not (type(tin) is int and tin >= 0):
        tin = _count(usage, "prompt_tokens", where)
        tin = _count(usage, "input_tokens", where) if tin is None else tin
    if not (type(tout) is int and tout >= 0):
        tout = _count(usage, "completion_tokens", where)
        tout = _count(usage, "output_tokens", where) if tout is None else tout
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    cached = _count(details, "cached_tokens", f"{where}.prompt_tokens_details") if details else None
    details = usage.get("completion_tokens_details") or usage.get("output_tokens_details")
    reasoning = _count(details, "reasoning_tokens", f"{where}.completion_tokens_details") if details else None
    if cost is None:
        cost, at = usage.get("cost"), f"{where}.cost"
    if cost is not None and (type(cost) is not float or not cost >= 0) and (
            isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0):
        raise Reject(at, f"expected a cost (number >= 0), got {describe(cost)}")
    return tin, tout, reasoning, cached, cost or None


def reasoning_apart(call: tuple[Any, ...]) -> tuple[tuple[Any, ...], int]:
    """The call with its reasoning tokens unknown when they are above its output tokens (then not a part of
    them, as Gemini through LiteLLM reports them), and those tokens (0 when a part)."""
    reasoning, tout = call[2], call[1]
    if reasoning is None or tout is None or reasoning <= tout:
        return call, 0
    return (call[0], tout, None, call[3], call[4]), reasoning


#: The counts of a model call, each a step field.
KEYS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached", "cost_usd")


class Calls:
    """Sums over model calls, in :data:`KEYS` order; a count is unknown (None) when any call lacks it."""

    __slots__ = ("n", "sums")

    def __init__(self) -> None:
        self.n = 0
        self.sums: tuple[Any, ...] = (0, 0, 0, 0, 0)

    def add(self, call: tuple[Any, ...]) -> None:
        self.n += 1
        if self.n == 1:
            self.sums = call
            return
        a, b, c, d, e = self.sums
        self.sums = (None if a is None or call[0] is None else a + call[0],
                     None if b is None or call[1] is None else b + call[1],
                     None if c is None or call[2] is None else c + call[2],
                     None if d is None or call[3] is None else d + call[3],
                     None if e is None or call[4] is None else e + call[4])

    def take(self) -> tuple[Any, ...]:
        """The sums (None: unknown), then start again."""
        sums = self.sums
        self.n, self.sums = 0, (0, 0, 0, 0, 0)
        return sums

    def totals(self) -> dict[str, Any]:
        """The known sums by name ({} without calls)."""
        return {} if not self.n else {key: value for key, value in zip(KEYS, self.sums) if value is not None}


class _Pending(Calls):
    """Model calls not yet given to a step."""

    __slots__ = ("given",)

    def __init__(self) -> None:
        super().__init__()
        self.given: set[int] = set()  # indexes of the steps given calls

    def give(self, step: dict[str, Any]) -> None:
        """Add the pending calls to ``step``: a count any of them lacks becomes unknown there too."""
        if not self.n:
            return
        first = step["index"] not in self.given
        self.given.add(step["index"])
        for key, value in zip(KEYS, self.take()):
            if value is not None and (first or key in step):
                step[key] = step.get(key, 0) + value
            else:
                step.pop(key, None)


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


class Run:
    """What the observation rules need to know about the run."""

    def __init__(self, info: dict[str, Any], messages: list[Any]) -> None:
        agent = lookup(info, "config.agent")
        agent = agent if isinstance(agent, dict) else {}
        regex = agent.get("action_regex")
        try:
            self.action = re.compile(regex if isinstance(regex, str) and regex else _DEFAULT_ACTION, re.DOTALL)
        except re.error as err:
            raise Reject("info.config.agent.action_regex", f"not a regular expression: {err}") from None
        if self.action.groups > 1:  # mini-swe-agent takes each match's one group (or the whole match) as the command
            raise Reject("info.config.agent.action_regex", f"a regular expression with {self.action.groups} groups: "
                         "mini-swe-agent reads the command from one group (or the whole match)")
        timeout = agent.get("timeout_template")
        prefix = timeout.split("{", 1)[0] if isinstance(timeout, str) else ""
        self.timeout = prefix if len(prefix) >= 8 else _DEFAULT_TIMEOUT
        self.submitted = info.get("exit_status") == "Submitted"
        self.submission = info.get("submission")
        self.last = len(messages) - 1


def _reply(msg: dict[str, Any], i: int, run: Run) -> dict[str, Any]:
    """The observation of a user or tool message answering an action."""
    content = msg.get("content")
    extra = msg.get("extra")
    if extra is None and type(content) is str:  # v1: the text only
        found = _V1_REPLY.match(content)
        if found:
            return _with_code(int(found.group(1)), found.group(2))
    if type(extra) is not dict:
        extra = {}
    code = extra.get("returncode")
    text = extra["raw_output"] if isinstance(extra.get("raw_output"), str) else None
    if type(code) is int:
        obs = _with_code(code, text if text is not None else _output_text(content or ""))
        if extra.get("exception_info"):
            obs["status"], obs["error"] = "error", extra["exception_info"]
        return obs
    if not isinstance(content, str):
        raise Reject(f"messages[{i}].content", f"expected the text of a command's output, got {describe(content)}")
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
def _actions(msg: dict[str, Any], run: Run, i: int) -> list[dict[str, Any]]:
    """The actions of an assistant message: ``extra.actions`` (v2), else the bash blocks of its text (v1)."""
    extra = msg.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if actions is not None:
        if not isinstance(actions, list):
            raise Reject(f"messages[{i}].extra.actions", f"expected a list of actions, got {describe(actions)}")
        for j, action in enumerate(actions):
            if not (isinstance(action, dict) and isinstance(action.get("command"), str)):
                raise Reject(f"messages[{i}].extra.actions[{j}]",
                             f"expected an action {{'command': text}}, got {describe(action)}")
        return actions
    content = msg.get("content")
    if content is None:
        return []
    if not isinstance(content, str):
        raise Reject(f"messages[{i}].content", f"expected the model's text, got {describe(content)}")
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


def _answer(step: dict[str, Any], msg: dict[str, Any], i: int, run: Run) -> None:
    step["observation"] = _reply(msg, i, run)
    extra = msg.get("extra")
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        step["ended_at"] = stamp


class _Walk:
    """The steps of one message list, built message by message."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.steps: list[dict[str, Any]] = []
        self.pending = _Pending()
        self.calls = Calls()  # every model call: the run's totals
        self.reasoning_apart = 0  # reasoning tokens reported apart from (above) the output tokens
        self.waiting: list[dict[str, Any]] = []  # text-mode actions awaiting their reply, in order
        self.by_id: dict[str, dict[str, Any]] = {}  # tool-mode actions awaiting their reply
        self.format_errors = 0

    def assistant(self, msg: dict[str, Any], i: int) -> None:
        extra = msg.get("extra")
        try:
            call, apart = reasoning_apart(_call(extra))
        except Reject as problem:
            raise Reject(f"messages[{i}].{problem.field}", problem.reason) from None
        self.reasoning_apart += apart
        self.pending.add(call)
        self.calls.add(call)
        actions = _actions(msg, self.run, i)
        if not actions:
            self.format_errors += 1
            return
        stamp = extra.get("timestamp") if isinstance(extra, dict) else None
        first: dict[str, Any] | None = None
        for action in actions:
            step = _new_step(self.steps, action, i, stamp)
            if len(actions) > 1:  # the actions of one model response: one group, by its message
                step["parallel"] = i
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
                call, apart = reasoning_apart(_call(extra))
            except Reject as problem:
                raise Reject(f"messages[{i}].{problem.field}", problem.reason) from None
            self.reasoning_apart += apart
            self.pending.add(call)
            self.calls.add(call)
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


def walk_steps(messages: list[Any], run: Run) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """(steps, the run's token totals over all its model calls ({} without calls; ``reasoning_apart``: reasoning
    tokens reported above the output tokens, not a part of them), format errors)."""
    walk = _Walk(run)
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise Reject(f"messages[{i}]", f"expected a message object, got {describe(msg)}")
        role = msg.get("role")
        if role == "assistant":
            walk.assistant(msg, i)
        elif role in ("user", "tool"):
            if i >= 2 or role == "tool":  # messages 0 and 1 are the system prompt and the task
                walk.reply(msg, i)
        elif role == "exit":
            walk.exit(msg)
        elif role != "system":
            raise Reject(f"messages[{i}].role", f"unknown message role {describe(role)}")
    if walk.steps:
        walk.pending.give(walk.steps[-1])
    totals = walk.calls.totals()
    totals.pop("cost_usd", None)  # the run's cost is info.model_stats.instance_cost
    if walk.reasoning_apart:
        totals["reasoning_apart"] = walk.reasoning_apart
    return walk.steps, totals, walk.format_errors
