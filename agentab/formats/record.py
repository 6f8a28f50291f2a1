"""The agentab trace record: one JSON object per agent run.

A run is one attempt by one agent (a model plus its harness) at one task with
one seed. The record keeps what is needed to audit the run's intent (tool
calls with their full arguments), its consequence (observations, the terminal
state of every system it touched) and its cost (tokens, dollars, time), plus
the verdict of an *external* check of the outcome.

Fields
------
Required fields are marked (req). A field given as ``null`` is the same as a
field left out, except where it says otherwise. Unknown fields are an error,
not silently ignored (a typo such as ``"cost"`` for ``"cost_usd"`` would
otherwise vanish): free-form data belongs in ``metadata``.

``run_id`` (req)
    Unique id of the run across everything loaded together (text, or an
    integer, which is stored as text).
``task_id`` (req)
    The task the run attempted (text or integer, stored as text). Runs of one
    task are correlated; the task is the unit of replication.
``seed`` (req)
    Integer seed (or trial number) of the run within its task. Every
    integer field must fit in 64 bits.
``arm``
    The arm (e.g. ``"baseline"``/``"candidate"``). Can also be given to
    :func:`agentab.load_traces` for a whole source.
``steps`` (req)
    List of tool calls in order; may be empty. Each step has:

    ``index`` (req)
        Position of the step, ``0 .. n-1`` in order.
    ``tool`` (req)
        Name of the tool called (non-empty text).
    ``args`` (req)
        JSON object with the call's full arguments (``{}`` for none).
        Stored as canonical JSON text (sorted keys, no whitespace), so equal
        arguments compare equal as strings. Note ``1`` and ``1.0`` are
        different JSON texts.
    ``observation``
        JSON object returned by the tool, kept whole (canonical JSON text),
        including error payloads. Its ``status`` is ``"ok"`` or ``"error"``
        when given; its ``error`` (text, or any JSON value, stored as
        JSON text) is surfaced as the step's ``error``. ``null`` or absent
        means the call was never answered.
    ``tokens_in``, ``tokens_out``
        Non-negative integer token counts of the model call that produced the
        step. Absent means unknown (not zero), and then the run's ``tokens``
        are unknown too, unless the step's ``metadata`` has
        ``tokens_with_step: j`` (:data:`TOKENS_WITH_STEP`): its model call's
        tokens are counted at another step ``j`` (e.g. parallel tool calls of
        one model response, counted at the first), whose counts are known, so
        the step's own share is unknown but the run's total is known.
    ``started_at``, ``ended_at``
        ISO-8601 text (with ``Z`` or an offset; text without an offset is read
        as UTC) or epoch seconds (a number below 1e10: milliseconds are
        rejected rather than guessed). ``ended_at`` may not precede
        ``started_at``.
    ``metadata``
        Free JSON object, kept as JSON text.
    ``kind``
        ``"tool"`` (a tool call; the default when absent) or ``"handoff"``
        (control passed from one agent to another: ``tool`` names the handoff
        as the trace names it, ``args`` may hold ``{"to": "<target agent>"}``,
        ``agent`` is the agent handing off). Handoffs are not tool calls: the
        run's ``n_steps`` and every tool-call measure of scoring leave them out.
    ``agent``
        The agent or sub-agent that made the step (non-empty text).
    ``parallel``
        A group id (text or integer): steps sharing it were issued together
        (one model response) and ran concurrently.
    ``tokens_reasoning``, ``tokens_cached``
        Whole numbers >= 0: the reasoning tokens (a part of ``tokens_out``)
        and the prompt tokens read from a cache (a part of ``tokens_in``) of
        the step's model call; neither may exceed the count it is a part of.
    ``cost_usd``
        Number >= 0: the cost of the model call that produced the step (or
        the tool's own cost).
``terminal_state``
    Object describing the systems the run touched at its end:
    ``files_created``, ``files_modified``, ``files_deleted`` (lists of
    paths), ``external_calls`` (list of anything: URLs, request objects).
    Any other keys are kept in the stored JSON. Absent means unknown, and
    the counts are then missing rather than zero.
``retries``, ``backtracks``
    Non-negative integers: retries after an error, and times the agent undid
    or redid its own work. Absent means unknown.
``outcome`` (req)
    The verdict of an external check (a test suite, a database query, a
    diff against a known-good result), never the agent's own claim: ``true``
    / ``false``, or a number (e.g. a 0-3 rubric level or a partial score).
    ``null`` is not allowed: a run without an external verdict cannot be
    compared.
``cost_usd``, ``latency_s``
    Non-negative numbers; absent means unknown.
``metadata``
    Free JSON object. ``model`` and ``harness`` (text) are surfaced as
    columns, because an agent's score belongs to the model plus its harness.
    A run without steps has no step to hold its tokens: its ``tokens_in`` /
    ``tokens_out`` (whole numbers >= 0, as the readers keep them) are the
    run's; without them its tokens are unknown, not 0.
``agents``
    List of text: the agents of the run, in order of first appearance
    (distinct; every step's ``agent`` must be one of them).
``tokens_in``, ``tokens_out``, ``tokens_reasoning``, ``tokens_cached``
    Whole numbers >= 0: the run's totals over *all* its model calls,
    including calls that called no tool. When given, they are the run's
    totals (at least the sum of its steps' known counts); when absent, the
    totals are the sums over the steps. ``tokens_reasoning`` may not exceed
    ``tokens_out``, nor ``tokens_cached`` ``tokens_in``.
``user_cost_usd``
    Number >= 0: the cost of the user simulator (tau-bench, tau2), apart
    from ``cost_usd`` (the agent's).

Examples
--------
A minimal valid record:

>>> import msgspec
>>> rec = {"run_id": "r1", "task_id": "fix-test", "seed": 0, "steps": [
...     {"index": 0, "tool": "read_file", "args": {"path": "src/main.py"},
...      "observation": {"status": "ok", "bytes": 4096},
...      "tokens_in": 812, "tokens_out": 44}],
...     "outcome": True, "metadata": {"model": "m", "harness": "h"}}
>>> run = msgspec.json.decode(msgspec.json.encode(rec), type=Record)
>>> run.steps[0].tool, run.outcome
('read_file', True)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

__all__ = ["Record", "Step", "REQUIRED_FIELDS", "TERMINAL_LISTS", "TOKENS_WITH_STEP", "INT64_MAX", "STEP_KINDS",
           "TOKEN_PARTS"]

#: Largest integer a column can hold (int64).
INT64_MAX = 2**63 - 1
_Int = Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)]
_NonNegInt = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
_NonNegFloat = Annotated[float, msgspec.Meta(ge=0)]
_Text = Annotated[str, msgspec.Meta(min_length=1)]
_Id = Union[_Text, int]  # integer ids are stored as text, so any size is fine
_Time = Union[str, float, None]
_Object = dict[str, Any]

#: The record fields that must be present.
REQUIRED_FIELDS = ("run_id", "task_id", "seed", "steps", "outcome")

#: Step metadata key: the step's model call is counted at this other step (see ``tokens_in`` above).
TOKENS_WITH_STEP = "tokens_with_step"

#: The kinds of step: a tool call (the default) and a handoff between agents.
STEP_KINDS = ("tool", "handoff")

#: Token counts that are a part of another: (part, whole).
TOKEN_PARTS = (("tokens_reasoning", "tokens_out"), ("tokens_cached", "tokens_in"))

#: Keys of ``terminal_state`` that hold lists and are counted per run.
TERMINAL_LISTS = ("files_created", "files_modified", "files_deleted", "external_calls")


class Step(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One tool call of a run (see the module docstring for each field)."""

    index: _Int
    tool: _Text
    args: _Object
    observation: Union[_Object, None] = None
    tokens_in: Union[_NonNegInt, None] = None
    tokens_out: Union[_NonNegInt, None] = None
    started_at: _Time = None
    ended_at: _Time = None
    metadata: Union[_Object, None] = None
    kind: Union[Literal["tool", "handoff"], None] = None
    agent: Union[_Text, None] = None
    parallel: Union[_Text, _Int, None] = None
    tokens_reasoning: Union[_NonNegInt, None] = None
    tokens_cached: Union[_NonNegInt, None] = None
    cost_usd: Union[_NonNegFloat, None] = None


class Record(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One agent run (see the module docstring for each field)."""

    run_id: _Id
    task_id: _Id
    seed: _Int
    arm: Union[_Text, None] = None
    steps: list[Step]
    terminal_state: Union[_Object, None] = None
    retries: Union[_NonNegInt, None] = None
    backtracks: Union[_NonNegInt, None] = None
    outcome: Union[bool, float]
    cost_usd: Union[_NonNegFloat, None] = None
    latency_s: Union[_NonNegFloat, None] = None
    metadata: Union[_Object, None] = None
    agents: Union[list[_Text], None] = None
    tokens_in: Union[_NonNegInt, None] = None
    tokens_out: Union[_NonNegInt, None] = None
    tokens_reasoning: Union[_NonNegInt, None] = None
    tokens_cached: Union[_NonNegInt, None] = None
    user_cost_usd: Union[_NonNegFloat, None] = None
