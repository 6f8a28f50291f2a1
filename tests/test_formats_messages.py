"""The "openai" and "anthropic" trace formats (agentab.formats.messages), and the real tau fixtures end to end."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agentab
from agentab import formats
from agentab.comparison.decide import VERDICTS
from agentab.formats import Item
from agentab.formats._missing import settle
from agentab.formats.messages import (
    ANTHROPIC,
    FIELDS,
    OPENAI,
    sniff_anthropic,
    sniff_openai,
)

TAU = Path(__file__).parent / "data" / "tau"
TAU2 = TAU / "tau2_grok_policy_ab.jsonl.gz"
TAU_BENCH = TAU / "tau_bench_gpt4o_airline.jsonl.gz"
#: The tau2 A/B's run-level keys, as agentab names them.
TAU2_FIELDS = {"run_id": "sim_id", "seed": "trial", "outcome": "reward", "arm": "policy_variant",
               "model": "agent_model", "cost_usd": "agent_cost", "latency_s": "duration_sec"}


def items_of(fmt, objects: list[Any], **fields: str) -> list[Item]:
    return list(fmt.read_objects(objects, "<test>", {**FIELDS, **fields}))


def convert(fmt, obj: Any, **fields: str) -> dict[str, Any]:
    (item,) = items_of(fmt, [obj], **fields)
    assert item.record is not None, (item.field, item.reason)
    return item.record


def rejection(fmt, obj: Any, **fields: str) -> Item:
    (item,) = items_of(fmt, [obj], **fields)
    assert item.record is None and item.reason, item
    return item


def load(items: list[Item]) -> agentab.Traces:
    """Validate converted records as agentab's record (the decoder every format ends in)."""
    assert all(item.record is not None for item in items), [(i.field, i.reason) for i in items if i.record is None]
    return agentab.load_traces([item.record for item in items])


def run(messages: list[Any], **top: Any) -> dict[str, Any]:
    return {"run_id": "r1", "task_id": "t1", "seed": 0, "outcome": True, "messages": messages, **top}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def answer(call_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


# --------------------------------------------------------------------------- #
# openai
# --------------------------------------------------------------------------- #
OPENAI_RUN = run([
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the rounding bug."},
    {"role": "assistant", "content": "Let me look.", "usage": {"prompt_tokens": 100, "completion_tokens": 5},
     "timestamp": "2026-11-02T09:00:00Z"},
    {"role": "assistant", "content": None, "timestamp": "2026-11-02T09:00:01Z",
     "usage": {"prompt_tokens": 200, "completion_tokens": 30},
     "tool_calls": [call("c1", "read_file", '{"path": "src/invoice.py"}'), call("c2", "ls", "{}")]},
    answer("c1", "def total(x): return round(x)", timestamp="2026-11-02T09:00:02Z"),
    answer("c2", "src/\ntests/", timestamp="2026-11-02T09:00:03Z"),
    {"role": "assistant", "usage": {"prompt_tokens": 400, "completion_tokens": 50},
     "tool_calls": [call("c3", "edit_file", '{"path": "src/invoice.py", "old": "round(x)", "new": "round(x, 2)"}')]},
    answer("c3", "Error: file is read-only"),
    {"role": "assistant", "content": "Done.", "usage": {"prompt_tokens": 500, "completion_tokens": 7}},
], arm="candidate", model="gpt-4o", harness="react-v2", cost_usd=0.01, latency_s=3.5)


def test_openai_steps_args_observations_tokens_and_times():
    rec = convert(OPENAI, OPENAI_RUN)
    steps = rec["steps"]
    assert [s["tool"] for s in steps] == ["read_file", "ls", "edit_file"]
    assert [s["index"] for s in steps] == [0, 1, 2]
    assert steps[0]["args"] == {"path": "src/invoice.py"} and steps[1]["args"] == {}
    assert steps[0]["observation"] == {"status": "ok", "content": "def total(x): return round(x)"}
    assert steps[2]["observation"] == {"status": "error", "content": "Error: file is read-only",
                                       "error": "Error: file is read-only"}
    # a message's tokens go to its first call; messages without calls (text) only to the run's totals
    assert (steps[0]["tokens_in"], steps[0]["tokens_out"]) == (200, 30)
    assert steps[0]["parallel"] == steps[1]["parallel"] and "parallel" not in steps[2]
    # the second call of one response: its own share unknown, the response counted at step 0
    assert "tokens_in" not in steps[1] and "tokens_out" not in steps[1]
    assert steps[1]["metadata"]["tokens_with_step"] == 0
    assert (steps[2]["tokens_in"], steps[2]["tokens_out"]) == (400, 50)
    assert (rec["tokens_in"], rec["tokens_out"]) == (1200, 92)  # every assistant message, counted by hand
    assert steps[0]["started_at"] == steps[1]["started_at"] == "2026-11-02T09:00:01Z"
    assert steps[1]["ended_at"] == "2026-11-02T09:00:03Z" and "ended_at" not in steps[2]
    assert steps[0]["metadata"] == {"message": 3, "call_id": "c1"}
    assert rec["arm"] == "candidate" and rec["metadata"] == {"model": "gpt-4o", "harness": "react-v2"}
    assert rec["cost_usd"] == 0.01 and rec["latency_s"] == 3.5

    traces = load(items_of(OPENAI, [OPENAI_RUN]))
    row = traces.runs.iloc[0]
    assert (row.n_steps, row.n_errors, row.tokens_in, row.tokens_out) == (3, 1, 1200, 92)  # every assistant message once
    assert (row.model, row.harness, row.arm) == ("gpt-4o", "react-v2", "candidate")
    assert traces.steps.started_at.iloc[0] == pd.Timestamp("2026-11-02T09:00:01Z")
    assert traces.steps.error.iloc[2] == "Error: file is read-only"


def test_openai_flattened_calls_of_tau_bench():
    rec = convert(OPENAI, run([
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "a", "name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}]},
        answer("a", '{"name": "Mia"}', name="get_user_details"),
        {"role": "assistant", "tool_calls": [{"id": "b", "name": "think", "arguments": '{"thought": "ok"}'}]},
    ]))
    assert [(s["tool"], s["args"]) for s in rec["steps"]] == [
        ("get_user_details", {"user_id": "mia_li_3668"}), ("think", {"thought": "ok"})]
    assert rec["steps"][0]["observation"]["status"] == "ok"
    assert "tokens_in" not in rec["steps"][0]  # no usage anywhere: unknown, not zero


ERROR_CASES = [
    # (tool message fields, status, error payload)
    ({"content": "Error: flight not found"}, "error", "Error: flight not found"),
    ({"content": "error: bad input"}, "error", "error: bad input"),
    ({"content": "  ERROR : disk full"}, "error", "  ERROR : disk full"),
    ({"content": [{"type": "text", "text": "Error: no seats"}]}, "error", "Error: no seats"),
    ({"content": [{"type": "text", "text": "bad"}], "is_error": True}, "error", "bad"),  # payload: the text
    ({"content": [{"type": "image"}], "is_error": True}, "error", [{"type": "image"}]),
    ({"content": '{"error": "timeout", "code": 504}'}, "error", "timeout"),
    ({"content": '{"error": true}'}, "error", {"error": True}),
    ({"content": "Transfer successful"}, "ok", None),
    ({"content": "Error executing tool"}, "ok", None),  # no colon: not an error (the rule errs towards ok)
    ({"content": "0 errors found: all good"}, "ok", None),
    ({"content": '{"error": null, "result": 3}'}, "ok", None),
    ({"content": '{"result": {"error": "nested"}}'}, "ok", None),  # only a top-level "error"
    ({"content": '{"error": "unterminated'}, "ok", None),
    ({"content": ""}, "ok", None),
    ({"content": "fine", "error": True}, "error", "fine"),  # tau2's flag
    ({"content": None, "error": True}, "error", None),
    ({"content": "Error: looks bad", "error": False}, "ok", None),  # an explicit flag decides alone
    ({"content": "boom", "error": "Traceback: ..."}, "error", "Traceback: ..."),
    ({"content": "boom", "error": ""}, "ok", None),
    ({"content": "x", "is_error": True}, "error", "x"),
    ({"content": "Error: x", "is_error": False}, "ok", None),
    ({"content": "x", "status": "error"}, "error", "x"),
    ({"content": "Error: x", "status": "success"}, "ok", None),
]


@pytest.mark.parametrize(("message", "status", "payload"), ERROR_CASES)
def test_openai_error_rule(message, status, payload):
    rec = convert(OPENAI, run([{"role": "assistant", "tool_calls": [call("c1", "t", "{}")]},
                               {"role": "tool", "tool_call_id": "c1", **message}]))
    observation = rec["steps"][0]["observation"]
    assert observation["status"] == status
    assert observation["content"] == message["content"]
    if status == "error":
        assert observation["error"] == payload
    else:
        assert "error" not in observation


def test_unanswered_call_is_a_kept_step_with_null_observation():
    obj = run([{"role": "assistant", "tool_calls": [call("c1", "search", '{"q": "x"}'), call("c2", "ls", "{}")]},
               answer("c1", "found")])
    rec = convert(OPENAI, obj)
    assert len(rec["steps"]) == 2 and rec["steps"][1]["observation"] is None
    traces = load(items_of(OPENAI, [obj]))
    assert traces.runs.n_steps.iloc[0] == 2
    assert traces.steps.status.isna().tolist() == [False, True]


@pytest.mark.parametrize(("messages", "field", "words"), [
    ([answer("nope", "x")], "messages[0].tool_call_id", "no earlier tool call has id 'nope'"),
    ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id", "without the id"),
    ([{"role": "assistant", "tool_calls": [call("c1", "t", "{}")]}, answer("c1", "a"), answer("c1", "b")],
     "messages[2].tool_call_id", "already answered by messages[1]"),
    ([{"role": "assistant", "tool_calls": [call("c1", "t", "{}"), call("c1", "u", "{}")]}],
     "messages[0].tool_calls[1].id", "not answered yet"),
    ([{"role": "assistant", "tool_calls": [call("c1", "t", '{"a": 1')]}],
     "messages[0].tool_calls[0].function.arguments", "not valid JSON"),
    ([{"role": "assistant", "tool_calls": [call("c1", "t", "[1, 2]")]}],
     "messages[0].tool_calls[0].function.arguments", "must be a JSON object"),
    ([{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]}],
     "messages[0].tool_calls[0].function.name", "missing tool name"),
    ([{"role": "assistant", "tool_calls": [{"name": "t", "arguments": {}}]}],
     "messages[0].tool_calls[0].id", "missing tool call id"),
    ([{"role": "assistant", "tool_calls": "t"}], "messages[0].tool_calls", "expected a list"),
    ([{"role": "assistant", "tool_calls": [call("c", "t", "{}")], "usage": {"prompt_tokens": -5}}],
     "messages[0].usage.prompt_tokens", "integer >= 0"),
    ([{"role": "assistant", "content": "hi", "usage": {"completion_tokens": "12"}}],
     "messages[0].usage.completion_tokens", "integer >= 0"),
    ([{"role": "assistant", "content": "hi", "usage": {"completion_tokens": 12.0}}],
     "messages[0].usage.completion_tokens", "integer >= 0"),
    (["hello"], "messages[0]", "expected a message object"),
])
def test_openai_rejections_name_the_input_field(messages, field, words):
    item = rejection(OPENAI, run(messages))
    assert item.field == field and words in item.reason


def test_reused_call_id_after_its_answer_is_a_new_call():
    """tau-bench's logs reuse a call id once its call was answered."""
    rec = convert(OPENAI, run([
        {"role": "assistant", "tool_calls": [call("c1", "search_direct_flight", "{}")]}, answer("c1", "[]"),
        {"role": "assistant", "tool_calls": [call("c1", "search_onestop_flight", "{}")]}, answer("c1", "[[]]"),
    ]))
    assert [(s["tool"], s["observation"]["content"]) for s in rec["steps"]] == [
        ("search_direct_flight", "[]"), ("search_onestop_flight", "[[]]")]


def test_user_simulator_tool_calls_are_not_steps():
    """tau2-bench: the user simulator may call tools (role user); neither its calls nor their answers are steps."""
    rec = convert(OPENAI, run([
        {"role": "user", "content": "", "tool_calls": [{"id": "u1", "name": "toggle_airplane_mode", "arguments": {}}]},
        answer("u1", "done", requestor="user"),
        {"role": "assistant", "tool_calls": [call("a1", "check", "{}")]}, answer("a1", "ok"),
    ]))
    assert [s["tool"] for s in rec["steps"]] == ["check"]


def test_openai_token_names_unknown_usage_and_runs_without_steps():
    rec = convert(OPENAI, run([
        {"role": "assistant", "content": "Hi!"},  # a canned greeting: no usage, adds nothing
        {"role": "user", "content": "book", "usage": {"prompt_tokens": 999, "completion_tokens": 999}},  # user sim
        {"role": "assistant", "tool_calls": [call("c1", "t", "{}")], "usage": {"input_tokens": 10, "output_tokens": 2}},
        answer("c1", "x"),
        {"role": "assistant", "content": "bye"},
    ]))
    assert (rec["steps"][0]["tokens_in"], rec["steps"][0]["tokens_out"]) == (10, 2)

    partial = convert(OPENAI, run([
        {"role": "assistant", "tool_calls": [call("c1", "t", "{}")], "usage": {"prompt_tokens": 10}},
        {"role": "assistant", "tool_calls": [call("c2", "t", "{}"), call("c3", "t", "{}")]}]))
    assert partial["steps"][0]["tokens_in"] == 10 and "tokens_out" not in partial["steps"][0]
    assert "tokens_in" not in partial["steps"][1] and "tokens_in" not in partial["steps"][2]
    traces = load(items_of(OPENAI, [run([
        {"role": "assistant", "tool_calls": [call("c1", "t", "{}")], "usage": {"prompt_tokens": 10}},
        {"role": "assistant", "tool_calls": [call("c2", "t", "{}")]}])]))
    assert pd.isna(traces.runs.tokens_in.iloc[0])  # a step without usage: the run's total is unknown

    talk = convert(OPENAI, run([{"role": "assistant", "content": "hello",
                                 "usage": {"prompt_tokens": 40, "completion_tokens": 4}}]))
    assert talk["steps"] == [] and (talk["tokens_in"], talk["tokens_out"]) == (40, 4) and "metadata" not in talk
    cached = convert(OPENAI, run([{"role": "assistant", "content": "hello", "usage": {
        "prompt_tokens": 40, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 32},
        "completion_tokens_details": {"reasoning_tokens": 3}}}]))
    assert (cached["tokens_cached"], cached["tokens_reasoning"]) == (32, 3)
    assert "tokens_in" not in convert(OPENAI, run([{"role": "assistant", "content": "hi"}]))  # tau-bench: unknown


# --------------------------------------------------------------------------- #
# Run-level fields
# --------------------------------------------------------------------------- #
def test_field_mapping_with_dotted_paths_and_literal_keys():
    obj = {"id": "x-1", "info": {"task": {"name": "T9"}, "trial": 3}, "result": {"passed": False},
           "agent": {"model": "m1"}, "variant": "B", "info.task": "literal wins", "transcript": []}
    rec = convert(OPENAI, obj, run_id="id", task_id="info.task", seed="info.trial", outcome="result.passed",
                  model="agent.model", arm="variant", messages="transcript")
    assert (rec["run_id"], rec["task_id"], rec["seed"], rec["outcome"], rec["arm"]) == (
        "x-1", "literal wins", 3, False, "B")
    assert rec["metadata"] == {"model": "m1"}  # nested objects are not kept; the mapped keys not repeated

    nested = convert(OPENAI, {k: v for k, v in obj.items() if k != "info.task"}, task_id="info.task.name",
                     seed="info.trial", outcome="result.passed", messages="transcript")
    assert nested["task_id"] == "T9"


def test_tau_bench_names_are_the_fallbacks_and_run_id_is_synthesized(tmp_path):
    obj = {"task_id": 7, "trial": 2, "reward": 1.0, "traj": []}
    rec = convert(OPENAI, obj)
    assert (rec["task_id"], rec["seed"], rec["outcome"], rec["run_id"]) == (7, 2, 1.0, "<test>:1")
    path = tmp_path / "runs.jsonl"
    path.write_text("\n" + json.dumps(obj) + "\n")
    (item,) = OPENAI.read_file(path, FIELDS)
    assert item.line == 2 and item.record["run_id"] == f"{path}:2"
    # an explicit mapping has no fallback: the seed is absent, left to the loader
    (item,) = items_of(OPENAI, [obj], seed="seed_no")
    assert item.missing == {"seed": ("seed_no", "no seed: the run has no 'seed_no'")}
    assert settle(item).field == "seed_no" and "no seed" in settle(item).reason


@pytest.mark.parametrize(("obj", "fields", "key", "field", "words"), [
    ({"seed": 0, "outcome": True, "messages": []}, {}, "task_id", "task_id", "no task_id"),
    ({"task_id": "t", "outcome": True, "messages": []}, {}, "seed", "seed", "'seed' or 'trial'"),
    ({"task_id": "t", "seed": 0, "messages": []}, {}, "outcome", "outcome", "'outcome' or 'reward'"),
    ({"meta": {"task": None}, "seed": 0, "outcome": True, "messages": []}, {"task_id": "meta.task"}, "task_id",
     "meta.task", "no task_id"),
    ({"task_id": "t", "seed": 0, "outcome": None, "messages": []}, {}, "outcome", "outcome", "null"),
])
def test_absent_run_fields_are_left_to_the_loader(obj, fields, key, field, words):
    (item,) = items_of(OPENAI, [obj], **fields)
    assert item.record is not None and key not in item.record and item.record["steps"] == []
    assert list(item.missing) == [key] and item.missing[key][0] == field and words in item.missing[key][1]
    settled = settle(item)
    assert settled.record is None and settled.field == field and words in settled.reason


def test_every_absent_run_field_is_named_in_order():
    (item,) = items_of(OPENAI, [{"messages": []}])
    assert list(item.missing) == ["task_id", "seed", "outcome"] and settle(item).field == "task_id"


@pytest.mark.parametrize(("obj", "fields", "field", "words"), [
    ({"task_id": "t", "seed": 0, "outcome": True}, {}, "messages", "'messages' or 'traj'"),
    ({"seed": "3", "outcome": True, "messages": []}, {}, "seed", "must be an integer"),
    ({"task_id": "t", "seed": "3", "outcome": True, "messages": []}, {}, "seed", "must be an integer"),
    ({"task_id": "t", "seed": 2.0, "outcome": True, "messages": []}, {}, "seed", "must be an integer"),
    ({"task_id": "t", "seed": True, "outcome": True, "messages": []}, {}, "seed", "must be an integer"),
    ({"task_id": 1.5, "seed": 0, "outcome": True, "messages": []}, {}, "task_id", "text or an integer"),
    ({"task_id": "t", "seed": 0, "outcome": "yes", "messages": []}, {}, "outcome", "true/false or a number"),
    ({"task_id": "t", "seed": 0, "outcome": 1, "messages": [], "cost": -1}, {"cost_usd": "cost"}, "cost",
     "number >= 0"),
    ({"task_id": "t", "seed": 0, "outcome": 1, "messages": [], "who": 3}, {"model": "who"}, "who", "non-empty text"),
    ({"task_id": "t", "seed": 0, "outcome": 1, "messages": {"a": 1}}, {}, "messages", "list of messages"),
])
def test_missing_or_wrong_run_fields_after_mapping_are_rejections(obj, fields, field, words):
    item = rejection(OPENAI, obj, **fields)
    assert item.field == field and words in item.reason, item


def test_other_run_level_keys_kept_in_metadata_when_small():
    rec = convert(OPENAI, run([], user_cost=0.002, termination_reason="user_stop", db_match=False, note=None,
                              instruction="x" * 257, expected_actions=[{"name": "a"}], info={"k": 1},
                              metadata={"team": "infra", "tags": ["a"]}, model="m"))
    assert rec["metadata"] == {"user_cost": 0.002, "termination_reason": "user_stop", "db_match": False,
                               "note": None, "team": "infra", "tags": ["a"], "model": "m"}


def test_every_record_read_gives_one_item_from_files(tmp_path):
    good = run([{"role": "assistant", "tool_calls": [call("c", "t", "{}")]}])
    lines = [json.dumps(good), "", "[1, 2]", "{broken", json.dumps({**good, "run_id": "r2", "task_id": None})]
    path = tmp_path / "runs.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    items = list(OPENAI.read_file(path, FIELDS))
    assert [i.line for i in items] == [1, 3, 4, 5]
    assert [i.record is not None for i in items] == [True, False, False, True]
    assert "expected a run object" in items[1].reason and "malformed JSON" in items[2].reason
    assert list(items[3].missing) == ["task_id"] and settle(items[3]).field == "task_id"

    array = tmp_path / "runs.json"
    array.write_text(json.dumps([good, {**good, "run_id": "r2"}], indent=1))
    assert [(i.line, i.record["run_id"]) for i in OPENAI.read_file(array, FIELDS)] == [(1, "r1"), (2, "r2")]
    single = tmp_path / "one.json"
    single.write_text(json.dumps(good))
    assert len(list(OPENAI.read_file(single, FIELDS))) == 1
    broken = tmp_path / "broken.json"
    broken.write_text('[{"a": 1}, ')
    (item,) = OPENAI.read_file(broken, FIELDS)
    assert item.record is None and "whole file" in item.reason


# --------------------------------------------------------------------------- #
# anthropic
# --------------------------------------------------------------------------- #
def use(tool_id: str, name: str, tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def result(tool_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, **extra}


ANTHROPIC_RUN = run([
    {"role": "user", "content": "Fix the rounding bug."},
    {"role": "assistant", "timestamp": 1790000000.0,
     "content": [{"type": "thinking", "thinking": "..."}, {"type": "text", "text": "Reading."},
                 use("tu1", "read_file", {"path": "a.py"}), use("tu2", "grep", {"pattern": "round"})],
     "usage": {"input_tokens": 50, "output_tokens": 20, "cache_creation_input_tokens": 1000,
               "cache_read_input_tokens": 0}},
    {"role": "user", "timestamp": 1790000001.5,
     "content": [result("tu1", [{"type": "text", "text": "def f(): ..."}]), result("tu2", "no match", is_error=True)]},
    {"role": "assistant", "content": [use("tu3", "run_tests", {})],
     "usage": {"input_tokens": 30, "output_tokens": 10, "cache_read_input_tokens": 1000}},
    {"role": "user", "content": [result("tu3", "Error: 2 failed")]},
    {"role": "assistant", "content": [{"type": "text", "text": "Done."}], "usage": {"input_tokens": 5, "output_tokens": 3}},
], model="claude-sonnet-4")


def test_anthropic_steps_observations_and_cache_tokens():
    rec = convert(ANTHROPIC, ANTHROPIC_RUN)
    steps = rec["steps"]
    assert [(s["tool"], s["args"]) for s in steps] == [
        ("read_file", {"path": "a.py"}), ("grep", {"pattern": "round"}), ("run_tests", {})]
    assert steps[0]["observation"] == {"status": "ok", "content": [{"type": "text", "text": "def f(): ..."}]}
    assert steps[1]["observation"] == {"status": "error", "content": "no match", "error": "no match"}
    assert steps[2]["observation"]["status"] == "error"  # no is_error flag: the content rule
    # cache tokens are input tokens: added to tokens_in, and kept in the step's metadata
    assert (steps[0]["tokens_in"], steps[0]["tokens_out"]) == (1050, 20)
    assert steps[0]["metadata"] == {"message": 1, "call_id": "tu1", "cache_creation_input_tokens": 1000,
                                    "cache_read_input_tokens": 0}
    assert "tokens_in" not in steps[1] and steps[1]["metadata"]["tokens_with_step"] == 0
    assert (steps[2]["tokens_in"], steps[2]["tokens_out"]) == (1030, 10)  # its message; the final text: the run's
    assert steps[2]["metadata"]["cache_read_input_tokens"] == 1000 and steps[2]["tokens_cached"] == 1000
    assert (rec["tokens_in"], rec["tokens_out"], rec["tokens_cached"]) == (2085, 33, 1000)
    assert (steps[0]["started_at"], steps[1]["ended_at"]) == (1790000000.0, 1790000001.5)

    traces = load(items_of(ANTHROPIC, [ANTHROPIC_RUN]))
    row = traces.runs.iloc[0]
    assert (row.n_steps, row.n_errors, row.tokens_in, row.tokens_out, row.tokens) == (3, 2, 2085, 33, 2118)
    assert row.model == "claude-sonnet-4"


def test_anthropic_unanswered_server_tools_and_run_without_steps():
    rec = convert(ANTHROPIC, run([
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "s1",
             "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
            use("tu1", "ls", None)]}]))
    assert rec["steps"][0]["observation"]["status"] == "error"
    assert rec["steps"][0]["observation"]["error"]["error_code"] == "max_uses_exceeded"
    assert rec["steps"][1]["args"] == {} and rec["steps"][1]["observation"] is None

    talk = convert(ANTHROPIC, run([{"role": "assistant", "content": "Hi", "usage": {
        "input_tokens": 7, "output_tokens": 2, "cache_read_input_tokens": 100}}]))
    assert (talk["tokens_in"], talk["tokens_out"], talk["tokens_cached"]) == (107, 2, 100) and "metadata" not in talk


@pytest.mark.parametrize(("messages", "field", "words"), [
    ([{"role": "user", "content": [result("zz", "x")]}], "messages[0].content[0].tool_use_id", "no earlier tool call"),
    ([{"role": "assistant", "content": [use("a", "t", "[1]")]}], "messages[0].content[0].input", "JSON object"),
    ([{"role": "assistant", "content": [use("a", "", {})]}], "messages[0].content[0].name", "tool name"),
    ([{"role": "assistant", "content": [use("a", "t", {})], "usage": {"cache_read_input_tokens": -1}}],
     "messages[0].usage.cache_read_input_tokens", "integer >= 0"),
    ([{"role": "assistant", "content": ["text"]}], "messages[0].content[0]", "content block object"),
])
def test_anthropic_rejections_name_the_input_field(messages, field, words):
    item = rejection(ANTHROPIC, run(messages))
    assert item.field == field and words in item.reason


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
def _head(obj: Any, lines: int = 3) -> bytes:
    return ("\n".join(json.dumps(obj) for _ in range(lines)) + "\n").encode()


def _gz_head(path: Path) -> bytes:
    with gzip.open(path, "rb") as fh:
        return fh.read(65536)


RECORD = {"run_id": "r1", "task_id": "t", "seed": 0, "outcome": True,
          "steps": [{"index": 0, "tool": "t", "args": {}, "observation": {"status": "ok"}}]}
OTEL = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [
    {"name": "chat", "attributes": [{"key": "gen_ai.prompt", "value": {"stringValue": '{"role": "user"}'}}]}]}]}]}
INSPECT = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},
           "samples": [{"id": 1, "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": "f"}]},
                                              {"role": "tool", "tool_call_id": "c"}]}]}


@pytest.mark.parametrize(("head", "is_openai", "is_anthropic"), [
    (_head(OPENAI_RUN), True, False),
    (_head(ANTHROPIC_RUN), False, True),
    (_head(OPENAI_RUN)[:300], True, False),  # cut mid-record
    (_head(ANTHROPIC_RUN)[:400], False, True),
    (_head({"task_id": 0, "trial": 0, "reward": 1.0, "traj": [{"role": "system", "content": "x"}]}), True, False),
    (_head(run([{"role": "user", "content": "hi"}])), True, False),  # a message list, no tool call yet
    (json.dumps([OPENAI_RUN], indent=2).encode(), True, False),
    (_head(RECORD), False, False),
    (_head({**RECORD, "steps": [{"index": 0, "tool": "t", "args": {}, "observation": {
        "status": "ok", "role": "x", "tool_calls": []}}]}), False, False),
    (_head(OTEL), False, False),
    (json.dumps(INSPECT).encode(), False, False),
    (b"PK\x03\x04" + b'"role": "assistant", "tool_calls": []', False, False),
    (b"", False, False),
    (b"not json", False, False),
])
def test_sniff(head, is_openai, is_anthropic):
    assert OPENAI.sniff(head, "runs.jsonl") is is_openai
    assert ANTHROPIC.sniff(head, "runs.jsonl") is is_anthropic


@pytest.mark.parametrize("fmt", [OPENAI, ANTHROPIC])
def test_each_format_example_is_one_valid_run_of_its_format(fmt):
    example = json.loads(fmt.example)
    assert fmt.sniff(fmt.example.encode(), "runs.jsonl")
    assert not (OPENAI if fmt is ANTHROPIC else ANTHROPIC).sniff(fmt.example.encode(), "runs.jsonl")
    traces = load(items_of(fmt, [example]))
    assert traces.runs.n_steps.iloc[0] == 1 and traces.runs.tokens.iloc[0] == 856
    assert traces.steps.status.iloc[0] == "ok"


def test_sniff_real_fixtures():
    for path in (TAU2, TAU_BENCH):
        head = _gz_head(path)
        assert sniff_openai(head, path.name) and not sniff_anthropic(head, path.name)


def test_registry_detects_the_formats(tmp_path):
    assert "openai" in formats.available() and "anthropic" in formats.available()
    assert formats.get("openai") is OPENAI and formats.get("anthropic") is ANTHROPIC
    assert formats.detect(_gz_head(TAU2), TAU2.name) == "tau2"  # its own reader claims it first (tests/test_formats_tau2.py)
    assert formats.detect(_head(ANTHROPIC_RUN)) == "anthropic"
    assert formats.detect(_head(RECORD)) == "record"


# --------------------------------------------------------------------------- #
# Through load_traces (the format registry)
# --------------------------------------------------------------------------- #
def test_load_traces_strict_and_lenient(tmp_path):
    bad = run([answer("ghost", "x")], run_id="r2")
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(OPENAI_RUN) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(agentab.TraceError, match=r"line 2.*messages\[0\]\.tool_call_id"):
        agentab.load_traces(path, format="openai")
    traces = agentab.load_traces(path, format="openai", strict=False)
    assert len(traces.runs) == 1 and traces.n_read == 2
    assert traces.rejected.field.tolist() == ["messages[0].tool_call_id"]
    auto = agentab.load_traces(path, strict=False)
    assert len(auto.runs) == 1 and ("openai" in str(auto.formats))
    lenient = agentab.load_traces([OPENAI_RUN, copy.deepcopy(bad)], format="openai", strict=False)
    assert len(lenient.runs) + len(lenient.rejected) == lenient.n_read == 2
    anthropic = agentab.load_traces([ANTHROPIC_RUN], format="anthropic")
    assert anthropic.runs.tokens.iloc[0] == 2118


# --------------------------------------------------------------------------- #
# Real data: tau2-bench policy A/B and tau-bench
# --------------------------------------------------------------------------- #
def _raw(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _tau2_traces() -> tuple[agentab.Traces, int]:
    """The tau2 fixture loaded as openai, through load_traces (the format registry)."""
    traces = agentab.load_traces(TAU2, format="openai", fields=TAU2_FIELDS)
    return traces, traces.n_read


@pytest.mark.parametrize("model", ["xai/grok-3-mini", "xai/grok-4"])
def test_tau2_policy_ab_end_to_end(model):
    raw = _raw(TAU2)
    traces, n_read = _tau2_traces()
    assert n_read == len(raw) == len(traces.runs) + len(traces.rejected) == 64
    assert len(traces.rejected) == 0
    runs = traces.runs.set_index("run_id")
    for r in raw:
        row = runs.loc[r["sim_id"]]
        assert (row.task_id, row.seed, row.arm, row.model) == (r["task_id"], r["trial"], r["policy_variant"],
                                                              r["agent_model"])
        assert row.outcome == r["reward"] and row.cost_usd == r["agent_cost"] and row.latency_s == r["duration_sec"]
        assert row.n_steps == r["n_tool_calls"]
        assert row.n_errors == sum(1 for m in r["messages"] if m["role"] == "tool" and m["error"])
        tokens = sum(m["usage"]["prompt_tokens"] + m["usage"]["completion_tokens"]
                     for m in r["messages"] if m["role"] == "assistant" and m["usage"])
        assert row.tokens == tokens  # with steps or without (the run's totals), never 0
        if not row.n_steps:
            assert row.tokens_in + row.tokens_out == tokens > 0

    scores = agentab.score(traces)
    mine = scores[scores["model"] == model]
    result = agentab.compare(mine, baseline="original_policy", candidate="tighter_policy", n_resamples=999, seed=0)
    row = result.table.set_index("metric").loc["outcome"]
    assert row.design == "paired by task (4 tasks)"
    assert (row.n_baseline, row.n_candidate, row.tasks) == (16, 16, 4)
    assert result.decision.verdict in VERDICTS
    for arm, column in (("original_policy", "baseline"), ("tighter_policy", "candidate")):
        rewards = [r["reward"] for r in raw if r["agent_model"] == model and r["policy_variant"] == arm]
        assert len(rewards) == 16 and row[column] == pytest.approx(sum(rewards) / 16)
    # the same tasks and trial seeds in both arms
    arms = mine.groupby("arm", observed=True).apply(lambda g: sorted(zip(g.task_id, g.seed)), include_groups=False)
    assert arms["original_policy"] == arms["tighter_policy"]


def test_tau_bench_steps_match_the_recorded_tool_calls():
    raw = _raw(TAU_BENCH)
    items = list(OPENAI.read_file(TAU_BENCH, FIELDS))  # tau-bench's names are the defaults' fallbacks
    traces = load(items)
    assert len(traces.runs) == len(raw) == 40
    for r, (_, row) in zip(raw, traces.runs.iterrows()):
        assert (row.task_id, row.seed, row.outcome) == (str(r["task_id"]), r["trial"], r["reward"])
        assert row.n_steps == r["n_tool_calls"]
        assert row.n_errors == sum(1 for m in r["traj"] if m["role"] == "tool" and m["content"].startswith("Error:"))
        assert pd.isna(row.tokens)  # no usage recorded: unknown, not zero (also in the runs without a tool call)
        assert "tokens_in" not in json.loads(row.metadata)
    assert traces.runs.run_id.astype(str).str.startswith(str(TAU_BENCH)).all()
    assert traces.runs.outcome.mean() == pytest.approx(sum(r["reward"] for r in raw) / 40)
