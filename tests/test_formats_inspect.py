"""Inspect AI eval logs (format "inspect"): .json logs and .eval zip archives, written here in Inspect's layout.

The fixtures follow inspect_ai's log models (src/inspect_ai/log/_log.py: EvalLog, EvalSpec, EvalPlan,
EvalSample; model/_chat_message.py; tool/_tool_call.py; event/_model.py, _tool.py, _span.py) and its
.eval archive layout (log/_recorders/eval.py: header.json, samples/{id}_epoch_{epoch}.json,
summaries.json, reductions.json, _journal/start.json).
"""

from __future__ import annotations

import copy
import gzip
import inspect
import json
import math
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

import agentab
import agentab.formats
from agentab import TraceError, TraceWarning, load_traces
from agentab.formats._missing import settle
from agentab.formats.inspect_ai import FORMAT

WIRED = "format" in inspect.signature(agentab.load_traces).parameters


# --------------------------------------------------------------------------- #
# Fixtures in Inspect's layout
# --------------------------------------------------------------------------- #
def call(call_id: str, function: str, **arguments: Any) -> dict:
    return {"id": call_id, "function": function, "arguments": arguments, "type": "function"}


def assistant(*calls: dict, content: str = "") -> dict:
    message = {"role": "assistant", "content": content, "source": "generate", "model": "gpt-4o-2024-08-06"}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool(call_id: str, content: Any, function: str = "bash", error: dict | None = None) -> dict:
    message = {"role": "tool", "content": content, "tool_call_id": call_id, "function": function}
    if error is not None:
        message["error"] = error
    return message


def usage(inp: int, out: int, cache_read: int | None = None) -> dict:
    u = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out + (cache_read or 0)}
    if cache_read is not None:
        u["input_tokens_cache_read"] = cache_read
    return u


def sample(sample_id: Any = 1, epoch: int = 1, messages: list | None = None, value: Any = "C",
           scorer: str = "match", **extra: Any) -> dict:
    if messages is None:
        messages = [
            {"role": "user", "content": "List the files.", "source": "input"},
            assistant(call("c1", "bash", cmd="ls")),
            tool("c1", "a.txt\nb.txt\n"),
            assistant(content="a.txt and b.txt"),
        ]
    out = {
        "id": sample_id, "epoch": epoch, "input": "List the files.", "target": "a.txt",
        "messages": messages,
        "output": {"model": "gpt-4o", "choices": []},
        "scores": {scorer: {"value": value, "answer": "a.txt", "explanation": "matched"}},
        "metadata": {"difficulty": "easy", "arm": "v2"},
        "store": {},
        "events": [],
        "model_usage": {"openai/gpt-4o": usage(100, 20)},
        "total_time": 3.5, "working_time": 3.1,
        "uuid": f"uuid-{sample_id}-{epoch}",
        "attachments": {},
    }
    out.update(extra)
    return out


def eval_log(samples: list[dict] | None, solver: str | None = None, **spec: Any) -> dict:
    log = {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_set_id": None, "eval_id": "EvalA", "run_id": "RunA", "created": "2026-01-05T10:00:00+00:00",
            "task": "list_files", "task_id": "TaskA", "task_version": 0,
            "solver": solver, "solver_args": None,
            "dataset": {"name": "files", "samples": 2, "sample_ids": [1, 2], "shuffled": False},
            "model": "openai/gpt-4o", "model_generate_config": {}, "model_args": {},
            "config": {"epochs": 2}, "packages": {"inspect_ai": "0.3.130"},
            **spec,
        },
        "plan": {"name": "plan", "steps": [{"solver": "system_message", "params": {}},
                                           {"solver": "use_tools", "params": {}},
                                           {"solver": "generate", "params": {}}],
                 "config": {}},
        "results": {"total_samples": 2, "completed_samples": 2,
                    "scores": [{"name": "match", "scorer": "match", "params": {},
                                "metrics": {"accuracy": {"name": "accuracy", "value": 0.5, "params": {}}}}]},
        "stats": {"started_at": "2026-01-05T10:00:00+00:00", "completed_at": "2026-01-05T10:01:00+00:00",
                  "model_usage": {"openai/gpt-4o": usage(400, 80)}},
    }
    if samples is not None:
        log["samples"] = samples
    return log


def write_json(path: Path, log: dict) -> Path:
    path.write_text(json.dumps(log, indent=2))  # Inspect writes indented JSON
    return path


def write_eval(path: Path, log: dict, members: dict[str, Any] | None = None, header: bool = True) -> Path:
    """A .eval archive as Inspect's EvalRecorder leaves it: journal, samples, summaries, reductions, header."""
    start = {"version": log["version"], "eval": log["eval"], "plan": log["plan"]}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_journal/start.json", json.dumps(start))
        for s in log.get("samples") or []:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        for name, data in (members or {}).items():
            zf.writestr(name, data if isinstance(data, (str, bytes)) else json.dumps(data))
        zf.writestr("_journal/summaries/1.json", json.dumps([{"id": s["id"], "epoch": s["epoch"]}
                                                             for s in log.get("samples") or []]))
        zf.writestr("summaries.json", "[]")
        zf.writestr("reductions.json", "[]")
        if header:
            zf.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
    return path


def read(path: Path, **fields: str) -> list:
    return list(FORMAT.read_file(path, {**FORMAT.fields, **fields}))


def records(path: Path, **fields: str) -> list[dict]:
    items = read(path, **fields)
    bad = [i for i in items if i.record is None]
    assert not bad, bad
    return [i.record for i in items]


def one(log_sample: dict, tmp_path: Path, solver: str | None = None, **fields: str) -> dict:
    [rec] = records(write_json(tmp_path / "log.json", eval_log([log_sample], solver=solver)), **fields)
    return rec


def rejection(log_sample: dict, tmp_path: Path, **fields: str):
    [item] = read(write_json(tmp_path / "log.json", eval_log([log_sample])), **fields)
    assert item.record is None, item.record
    return item


def lacking(log_sample: dict, tmp_path: Path, **fields: str):
    """The sample's item, which has its record but lacks a required field; and its settled rejection."""
    [item] = read(write_json(tmp_path / "log.json", eval_log([log_sample])), **fields)
    assert item.record is not None and item.missing, item
    assert not set(item.missing) & set(item.record)
    settled = settle(item)
    assert settled.record is None and settled.source == item.source
    return item, settled


# --------------------------------------------------------------------------- #
# Steps, arguments, observations
# --------------------------------------------------------------------------- #
def test_tool_calls_become_steps_with_their_observations(tmp_path):
    messages = [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": "Fix the bug.", "source": "input"},
        assistant(call("c1", "bash", cmd="cat a.py"), call("c2", "python", code="print(1)")),  # parallel calls
        tool("c2", "1\n", function="python"),  # answered out of order
        tool("c1", [{"type": "text", "text": "x = 1"}]),
        assistant(call("c3", "text_editor", command="str_replace", path="a.py", old_str="1", new_str="2")),
        tool("c3", "ok", function="text_editor"),
        assistant(content="Done."),
    ]
    rec = one(sample(messages=messages), tmp_path)
    assert [s["index"] for s in rec["steps"]] == [0, 1, 2]
    assert [s["tool"] for s in rec["steps"]] == ["bash", "python", "text_editor"]
    assert rec["steps"][0]["args"] == {"cmd": "cat a.py"}
    assert rec["steps"][2]["args"] == {"command": "str_replace", "path": "a.py", "old_str": "1", "new_str": "2"}
    assert rec["steps"][0]["observation"] == {"status": "ok", "content": [{"type": "text", "text": "x = 1"}]}
    assert rec["steps"][1]["observation"] == {"status": "ok", "content": "1\n"}
    # the sample's model_usage is counted at the first step: the others have no counts of their own
    assert rec["steps"][1]["metadata"] == {"tool_call_id": "c2", "tokens_with_step": 0}

    traces = load_traces([rec])
    steps = traces.steps
    assert list(steps["tool"]) == ["bash", "python", "text_editor"]
    assert steps.loc[0, "args"] == '{"cmd":"cat a.py"}'
    assert list(steps["status"]) == ["ok", "ok", "ok"]


def test_a_tool_message_with_an_error_fails_the_step(tmp_path):
    messages = [assistant(call("c1", "bash", cmd="sleep 999")),
                tool("c1", "", error={"type": "timeout", "message": "Command timed out after 180 seconds"}),
                assistant(call("c2", "bash", cmd="ls")), tool("c2", "a.txt")]
    rec = one(sample(messages=messages), tmp_path)
    assert rec["steps"][0]["observation"] == {"status": "error", "content": "",
                                              "error": "Command timed out after 180 seconds",
                                              "error_type": "timeout"}
    traces = load_traces([rec])
    assert list(traces.steps["status"]) == ["error", "ok"]
    assert traces.steps.loc[0, "error"] == "Command timed out after 180 seconds"
    assert traces.runs.loc[0, "n_errors"] == 1


def test_legacy_tool_error_text_fails_the_step(tmp_path):
    message = tool("c1", "")
    message["tool_error"] = "boom"
    rec = one(sample(messages=[assistant(call("c1", "bash", cmd="x")), message]), tmp_path)
    assert rec["steps"][0]["observation"]["status"] == "error"
    assert rec["steps"][0]["observation"]["error"] == "boom"


def test_a_call_never_answered_is_kept_with_no_observation(tmp_path):
    messages = [assistant(call("c1", "bash", cmd="ls")), tool("c1", "a"),
                assistant(call("c2", "bash", cmd="rm -rf /tmp/x"))]  # the sample hit its limit here
    rec = one(sample(messages=messages, limit={"type": "message", "limit": 3}), tmp_path)
    assert len(rec["steps"]) == 2 and "observation" not in rec["steps"][1]
    assert rec["metadata"]["limit"] == "message"
    traces = load_traces([rec])
    assert traces.runs.loc[0, "n_steps"] == 2
    assert traces.steps.loc[1, "observation"] is None or pd_isna(traces.steps.loc[1, "observation"])


def pd_isna(value: Any) -> bool:
    import pandas as pd
    return bool(pd.isna(value))


def test_input_messages_are_not_steps_and_empty_arguments_are_an_empty_object(tmp_path):
    prefilled = assistant(call("p1", "bash", cmd="pwd"))
    prefilled["source"] = "input"
    answer = tool("p1", "/root")
    answer["source"] = "input"
    no_args = call("c1", "submit")
    no_args["arguments"] = None
    text_args = call("c2", "bash")
    text_args["arguments"] = '{"cmd": "ls"}'
    rec = one(sample(messages=[prefilled, answer, assistant(no_args, text_args), tool("c1", "ok"),
                               tool("c2", "a")]), tmp_path)
    assert [(s["tool"], s["args"]) for s in rec["steps"]] == [("submit", {}), ("bash", {"cmd": "ls"})]


def test_step_times_come_from_tool_events(tmp_path):
    events = [
        {"event": "tool", "type": "function", "id": "c1", "function": "bash", "arguments": {"cmd": "ls"},
         "result": "a", "timestamp": "2026-01-05T10:00:01.5+00:00", "completed": "2026-01-05T10:00:02.25+00:00"},
    ]
    rec = one(sample(events=events), tmp_path)
    assert rec["steps"][0]["started_at"] == "2026-01-05T10:00:01.5+00:00"
    steps = load_traces([rec]).steps
    assert (steps.loc[0, "ended_at"] - steps.loc[0, "started_at"]).total_seconds() == 0.75


# --------------------------------------------------------------------------- #
# Ids, epochs, model and harness
# --------------------------------------------------------------------------- #
def test_samples_and_epochs_become_tasks_and_seeds(tmp_path):
    samples = [sample(i, e, value="C" if e == 1 else "I") for e in (2, 1) for i in (2, 1, "x-3")]
    path = write_eval(tmp_path / "log.eval", eval_log(samples, solver="react"))
    items = read(path)
    assert [i.source for i in items] == [f"{path}:samples/{n}.json" for n in
                                         ("1_epoch_1", "2_epoch_1", "x-3_epoch_1", "1_epoch_2", "2_epoch_2",
                                          "x-3_epoch_2")]
    recs = [i.record for i in items]
    assert [(r["task_id"], r["seed"]) for r in recs] == [(1, 1), (2, 1), ("x-3", 1), (1, 2), (2, 2), ("x-3", 2)]
    assert recs[0]["run_id"] == "EvalA:1:1" and recs[-1]["run_id"] == "EvalA:x-3:2"
    traces = load_traces(recs, arm="candidate")
    assert len(traces.runs) == 6 and traces.runs["run_id"].is_unique
    assert set(traces.runs["task_id"]) == {"1", "2", "x-3"} and set(traces.runs["seed"]) == {1, 2}
    assert set(traces.runs["model"]) == {"openai/gpt-4o"} and set(traces.runs["harness"]) == {"react"}


def test_run_id_falls_back_for_logs_without_eval_id(tmp_path):
    log = eval_log([sample()])
    del log["eval"]["eval_id"]
    [rec] = records(write_json(tmp_path / "old.json", log))
    assert rec["run_id"] == "TaskA:1:1"
    log["eval"]["task_id"] = ""
    [rec] = records(write_json(tmp_path / "older.json", log))
    assert rec["run_id"] == "RunA:1:1"


def test_harness_is_the_solver_or_the_plan(tmp_path):
    assert one(sample(), tmp_path, solver="basic_agent")["metadata"]["harness"] == "basic_agent"
    rec = one(sample(), tmp_path)
    assert rec["metadata"]["harness"] == "system_message > use_tools > generate"
    assert rec["metadata"]["model"] == "openai/gpt-4o"
    assert rec["metadata"]["task"] == "list_files" and rec["metadata"]["sample_uuid"] == "uuid-1-1"


def test_fields_map_run_level_fields_to_sample_or_log_paths(tmp_path):
    log = eval_log([sample(1), sample(2)], solver="react", metadata={"variant": "prompt-v2"})
    path = write_json(tmp_path / "log.json", log)
    recs = records(path, arm="eval.model", task_id="metadata.difficulty", run_id="uuid", harness="eval.metadata.variant")
    assert [r["arm"] for r in recs] == ["openai/gpt-4o"] * 2
    assert [r["task_id"] for r in recs] == ["easy", "easy"] and [r["run_id"] for r in recs] == ["uuid-1-1", "uuid-2-1"]
    assert recs[0]["metadata"]["harness"] == "prompt-v2"
    recs = records(path, arm="metadata.arm", run_id="eval.task:id:epoch")
    assert recs[0]["arm"] == "v2" and recs[0]["run_id"] == "list_files:1:1"
    [bad, _] = read(path, arm="metadata.nope")
    assert bad.field == "metadata.nope" and "sample 1 epoch 1" in bad.reason and "arm" in bad.reason


def test_cost_and_latency(tmp_path):
    u = usage(100, 20)
    u["total_cost"] = 0.25
    v = usage(10, 2)
    v["total_cost"] = 0.5
    rec = one(sample(model_usage={"openai/gpt-4o": u, "openai/gpt-4o-mini": v}), tmp_path)
    assert rec["cost_usd"] == 0.75 and rec["latency_s"] == 3.5
    assert "cost_usd" not in one(sample(), tmp_path)  # no total_cost recorded: unknown


# --------------------------------------------------------------------------- #
# Scores -> outcome
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("value", "outcome"), [
    ("C", True), ("I", False), ("N", False), ("P", 0.5), (1, 1.0), (0, 0.0), (0.25, 0.25), (3, 3.0),
    (True, True), (False, False), ("yes", True), ("False", False), ("0.75", 0.75),
])
def test_score_values_convert_to_outcomes(tmp_path, value, outcome):
    rec = one(sample(value=value), tmp_path)
    assert rec["outcome"] == outcome and type(rec["outcome"]) is type(outcome)
    assert rec["metadata"]["score"] == value and rec["metadata"]["scorer"] == "match"


def test_a_nan_score_is_unscored_so_the_outcome_is_absent(tmp_path):
    item, settled = lacking(sample(7, 2, value=float("nan")), tmp_path)
    assert list(item.missing) == ["outcome"] and len(item.record["steps"]) == 1
    assert "scorer" not in item.record["metadata"]
    assert settled.field == "scores.match.value"
    assert settled.reason.startswith("sample 7 epoch 2: scorer 'match'") and "NaN (unscored)" in settled.reason


@pytest.mark.parametrize(("value", "words"), [
    (float("inf"), "inf"), ("maybe", "'maybe' is not C/I/P/N"),
    ([1, 0], "cannot be read"), ({"acc": 1, "f1": 0.5}, "match.<key>"), (None, "cannot be read"),
])
def test_unreadable_score_values_are_rejected(tmp_path, value, words):
    item = rejection(sample(7, 2, value=value), tmp_path)
    assert item.field == "scores.match.value"
    assert item.reason.startswith("sample 7 epoch 2: scorer 'match'") and words in item.reason


def test_partial_credit_mixes_bools_and_numbers_with_a_warning(tmp_path):
    path = write_json(tmp_path / "log.json", eval_log([sample(1, value="C"), sample(2, value="P")]))
    with pytest.warns(TraceWarning):
        traces = load_traces(records(path))
    assert list(traces.runs["outcome"]) == [1.0, 0.5]


def test_the_scorer_is_chosen_with_fields(tmp_path):
    s = sample()
    s["scores"] = {"match": {"value": "I"}, "includes": {"value": "C"},
                   "grader": {"value": {"correct": True, "rubric": 2}}}
    assert one(s, tmp_path)["outcome"] is False  # the first scorer by default
    assert one(s, tmp_path, outcome="includes")["outcome"] is True
    assert one(s, tmp_path, outcome="scores.includes")["metadata"]["scorer"] == "includes"
    assert one(s, tmp_path, outcome="scores[1]")["outcome"] is True
    assert one(s, tmp_path, outcome="grader.rubric")["outcome"] == 2.0
    assert one(s, tmp_path, outcome="grader.correct")["outcome"] is True
    assert one(s, tmp_path)["metadata"]["scores"] == {"match": "I", "includes": "C",
                                                      "grader": {"correct": True, "rubric": 2}}
    bad = rejection(s, tmp_path, outcome="accuracy")
    assert bad.field == "scores" and "match, includes, grader" in bad.reason
    assert "scorer 'grader'" in rejection(s, tmp_path, outcome="grader").reason


def test_a_sample_without_scores_lacks_its_outcome_with_its_error(tmp_path):
    s = sample(4, 1, scores=None, error={"message": "RuntimeError: sandbox died\nTraceback...", "traceback": "..."})
    item, settled = lacking(s, tmp_path)
    assert list(item.missing) == ["outcome"] and item.record["seed"] == 1
    assert settled.field == "scores"
    assert "sample 4 epoch 1: no scores" in settled.reason and "sandbox died" in settled.reason


def test_legacy_single_score_takes_the_results_scorer_name(tmp_path):
    s = sample()
    del s["scores"]
    s["score"] = {"value": "C"}
    rec = one(s, tmp_path)
    assert rec["outcome"] is True and rec["metadata"]["scorer"] == "match"


# --------------------------------------------------------------------------- #
# Attachments
# --------------------------------------------------------------------------- #
def test_attachment_references_are_resolved(tmp_path):
    long_script = "import os\n" * 200
    long_output = "line\n" * 500
    messages = [
        assistant(call("c1", "python", code="attachment://aaa", files=["attachment://bbb", "plain"])),
        tool("c1", [{"type": "text", "text": "attachment://ccc"}], function="python"),
        assistant(call("c2", "bash", cmd="attachment://missing")),
        tool("c2", "tc://ddd", error={"type": "unknown", "message": "attachment://eee"}),
    ]
    s = sample(messages=messages, attachments={"aaa": long_script, "bbb": "data.csv", "ccc": long_output,
                                               "ddd": "legacy", "eee": "exit code 1"})
    rec = one(s, tmp_path)
    assert rec["steps"][0]["args"] == {"code": long_script, "files": ["data.csv", "plain"]}
    assert rec["steps"][0]["observation"]["content"] == [{"type": "text", "text": long_output}]
    assert rec["steps"][1]["args"] == {"cmd": "attachment://missing"}  # unknown hash: kept, as Inspect does
    assert rec["steps"][1]["observation"]["content"] == "legacy"  # tc:// (logs before attachment://)
    assert rec["steps"][1]["observation"]["error"] == "exit code 1"
    load_traces([rec])


def test_attachments_of_a_legacy_transcript_are_resolved(tmp_path):
    s = sample(messages=[assistant(call("c1", "bash", cmd="attachment://h")), tool("c1", "ok")])
    del s["attachments"], s["events"]
    s["transcript"] = {"events": [], "content": {"h": "ls -la"}}
    assert one(s, tmp_path)["steps"][0]["args"] == {"cmd": "ls -la"}


# --------------------------------------------------------------------------- #
# Tokens
# --------------------------------------------------------------------------- #
def model_event(out_usage: dict | None, *call_ids: str, span_id: str = "s-gen") -> dict:
    message = assistant(*(call(i, "bash") for i in call_ids))
    return {"event": "model", "span_id": span_id, "model": "openai/gpt-4o", "input": [], "tools": [],
            "tool_choice": "auto", "config": {}, "timestamp": "2026-01-05T10:00:00+00:00",
            "output": {"model": "gpt-4o", "choices": [{"message": message, "stop_reason": "tool_calls"}],
                       "usage": out_usage}}


def agent_run() -> tuple[list[dict], list[dict]]:
    messages = [
        assistant(call("c1", "bash", cmd="ls"), call("c2", "bash", cmd="pwd")),
        tool("c1", "a"), tool("c2", "/"),
        assistant(content="Let me think."),  # a call that requested no tool
        assistant(call("c3", "bash", cmd="cat a")), tool("c3", "x"),
        assistant(content="The answer is x."),
    ]
    events = [
        {"event": "span_begin", "id": "s-solvers", "type": "solvers", "name": "solvers"},
        {"event": "span_begin", "id": "s-gen", "parent_id": "s-solvers", "type": "solver", "name": "generate"},
        model_event(usage(100, 10, cache_read=50), "c1", "c2"),
        model_event(usage(200, 20)),
        model_event(usage(300, 30), "c3"),
        model_event(usage(400, 40)),
        {"event": "span_end", "id": "s-gen"},
        {"event": "span_begin", "id": "s-scorers", "type": "scorers", "name": "scorers"},
        {"event": "span_begin", "id": "s-judge", "parent_id": "s-scorers", "type": "scorer", "name": "judge"},
        model_event(usage(5000, 500), span_id="s-judge"),  # a model-graded scorer: not the agent's tokens
        {"event": "score", "score": {"value": "C"}},
    ]
    return messages, events


def test_tokens_per_model_call_from_events(tmp_path):
    messages, events = agent_run()
    rec = one(sample(messages=messages, events=events,
                     model_usage={"openai/gpt-4o": usage(6000, 600, cache_read=50)}), tmp_path)
    steps = rec["steps"]
    # call 1 (cached prompt tokens counted): step 0; its parallel call: unknown, counted at step 0; calls 2 and 3:
    # step 2; call 4: last step
    assert [(s.get("tokens_in"), s.get("tokens_out")) for s in steps] == [(150, 10), (None, None),
                                                                          (200 + 300 + 400, 20 + 30 + 40)]
    assert steps[1]["metadata"]["tokens_with_step"] == 0
    runs = load_traces([rec]).runs
    assert runs.loc[0, "tokens_in"] == 1050 and runs.loc[0, "tokens_out"] == 100  # the judge's 5000 are not counted
    # cached tokens: call 1 reports 50; calls 2-4 report none, so step 2's and the run's are unknown, not 0
    assert steps[0]["tokens_cached"] == 50 and "tokens_cached" not in steps[2] and "tokens_cached" not in rec
    assert steps[0]["parallel"] == steps[1]["parallel"] and "parallel" not in steps[2]  # one model call, two tools
    assert (rec["tokens_in"], rec["tokens_out"]) == (1050, 100)  # the run's totals: every agent call
    for event in events:
        if event["event"] == "model":
            event["output"]["usage"].update(input_tokens_cache_read=event["output"]["usage"].get(
                "input_tokens_cache_read", 0), reasoning_tokens=2)
    rec = one(sample(messages=messages, events=events), tmp_path)
    assert [s.get("tokens_cached") for s in rec["steps"]] == [50, None, 0]
    assert [s.get("tokens_reasoning") for s in rec["steps"]] == [2, None, 6]
    assert (rec["tokens_cached"], rec["tokens_reasoning"]) == (50, 8)


def test_tokens_from_old_step_events_skip_scorer_steps(tmp_path):
    messages, _ = agent_run()
    events = [{"event": "step", "action": "begin", "type": "solver", "name": "generate"},
              model_event(usage(100, 10), "c1", "c2", span_id=None), model_event(usage(300, 30), "c3", span_id=None),
              {"event": "step", "action": "end", "type": "solver", "name": "generate"},
              {"event": "step", "action": "begin", "type": "scorer", "name": "judge"},
              model_event(usage(999, 99), span_id=None),
              {"event": "step", "action": "end", "type": "scorer", "name": "judge"}]
    rec = one(sample(messages=messages, events=events), tmp_path)
    assert sum(s.get("tokens_in", 0) for s in rec["steps"]) == 400
    assert sum(s.get("tokens_out", 0) for s in rec["steps"]) == 40
    assert load_traces([rec]).runs.loc[0, "tokens"] == 440


def test_tokens_without_events_put_the_sample_usage_on_the_first_step(tmp_path):
    messages, events = agent_run()
    events[3]["output"]["usage"] = None  # one call without usage: events cannot say, model_usage does
    mu = {"openai/gpt-4o": usage(1000, 100, cache_read=200), "openai/gpt-4o-mini": {"input_tokens": 7,
                                                                                     "output_tokens": 3}}
    rec = one(sample(messages=messages, events=events, model_usage=mu), tmp_path)
    assert [(s.get("tokens_in"), s.get("tokens_out")) for s in rec["steps"]] == [(1207, 103), (None, None),
                                                                                 (None, None)]
    assert [s["metadata"].get("tokens_with_step") for s in rec["steps"]] == [None, 0, 0]
    assert rec["metadata"]["model_usage"] == mu
    runs = load_traces([rec]).runs
    assert (runs.loc[0, "tokens_in"], runs.loc[0, "tokens_out"], runs.loc[0, "tokens"]) == (1207, 103, 1310)


def test_no_usage_leaves_tokens_unknown(tmp_path):
    rec = one(sample(model_usage={}), tmp_path)
    assert "tokens_in" not in rec["steps"][0]
    assert pd_isna(load_traces([rec]).runs.loc[0, "tokens"])


def test_openai_style_usage_where_input_includes_cache_reads(tmp_path):
    # Inspect before 2026 (OpenAI): input_tokens included cached tokens, total = input + output
    mu = {"openai/gpt-4o-mini": {"input_tokens": 15235, "output_tokens": 281, "total_tokens": 15516,
                                 "input_tokens_cache_read": 9088, "reasoning_tokens": 0}}
    rec = one(sample(model_usage=mu), tmp_path)
    assert (rec["steps"][0]["tokens_in"], rec["steps"][0]["tokens_out"]) == (15235, 281)


# --------------------------------------------------------------------------- #
# Files: .json, .json.gz, .eval, in-progress .eval, in-memory logs
# --------------------------------------------------------------------------- #
def test_json_and_eval_logs_give_the_same_records(tmp_path):
    log = eval_log([sample(1), sample(2, value="I"), sample(1, 2)])
    from_json = records(write_json(tmp_path / "log.json", log))
    from_eval = records(write_eval(tmp_path / "log.eval", log))
    key = lambda r: (r["seed"], r["task_id"])
    assert sorted(from_json, key=key) == sorted(from_eval, key=key)
    gz = tmp_path / "log.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(log).encode()))
    assert records(gz) == from_json


def test_an_unfinished_eval_archive_reads_its_journal_header(tmp_path):
    path = write_eval(tmp_path / "running.eval", eval_log([sample(1), sample(2)], status="started"), header=False)
    recs = records(path)
    assert len(recs) == 2 and recs[0]["metadata"]["model"] == "openai/gpt-4o"


def test_a_relogged_sample_is_read_once(tmp_path):
    log = eval_log([sample(1, value="I")])
    path = write_eval(tmp_path / "log.eval", log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr("samples/1_epoch_1.json", json.dumps(sample(1, value="C")))
    [rec] = records(path)
    assert rec["outcome"] is True


def test_in_memory_eval_logs(tmp_path):
    logs = [eval_log([sample(1), sample(2)]), eval_log([sample(3)], eval_id="EvalB")]
    items = list(FORMAT.read_objects(logs, "<records>", FORMAT.fields))
    assert [i.line for i in items] == [1, 2, 3]
    assert [i.record["run_id"] for i in items] == ["EvalA:1:1", "EvalA:2:1", "EvalB:3:1"]
    [bad] = list(FORMAT.read_objects([{"samples": []}], "<records>", FORMAT.fields))
    assert bad.field == "eval" and "not an Inspect eval log" in bad.reason


def test_header_only_log_has_no_records(tmp_path):
    assert read(write_json(tmp_path / "log.json", eval_log(None))) == []


# --------------------------------------------------------------------------- #
# Bad input
# --------------------------------------------------------------------------- #
def test_a_tool_result_without_its_call_is_rejected(tmp_path):
    messages = [assistant(call("c1", "bash", cmd="ls")), tool("c1", "a"), tool("c9", "b")]
    item = rejection(sample(3, 1, messages=messages), tmp_path)
    assert item.field == "messages[2].tool_call_id"
    assert item.reason == "sample 3 epoch 1: tool result for call 'c9' has no matching tool call before it"
    twice = rejection(sample(messages=[assistant(call("c1", "bash")), tool("c1", "a"), tool("c1", "a")]), tmp_path)
    assert "already answered" in twice.reason


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda s: s["messages"][1]["tool_calls"][0].update(function=""), "messages[1].tool_calls[0].function",
     "no function name"),
    (lambda s: s["messages"][1]["tool_calls"][0].update(arguments=[1]), "messages[1].tool_calls[0].arguments",
     "must be an object"),
    (lambda s: s["messages"][1]["tool_calls"][0].update(arguments="{oops"), "messages[1].tool_calls[0].arguments",
     "not JSON"),
    (lambda s: s.update(messages="hello"), "messages", "expected a list"),
    (lambda s: s["messages"].append(7), "messages[4]", "must be an object"),
    (lambda s: s.update(epoch="one"), "epoch", "must be an integer"),
    (lambda s: s.update(id=None), "id", "text or an integer"),
    (lambda s: s["model_usage"]["openai/gpt-4o"].update(output_tokens="many"),
     "model_usage.openai/gpt-4o.output_tokens", "must be a number"),
])
def test_malformed_samples_are_rejected_naming_the_field(tmp_path, change, field, words):
    s = sample(5, 1)
    change(s)
    item = rejection(s, tmp_path)
    assert item.field == field and words in item.reason


def test_a_sample_member_that_is_not_json_is_rejected_by_name(tmp_path):
    log = eval_log([sample(1), sample(2)])
    path = write_eval(tmp_path / "log.eval", log, members={"samples/3_epoch_1.json": "{not json"})
    items = read(path)
    assert [i.record is not None for i in items] == [True, True, False]
    assert items[2].source == f"{path}:samples/3_epoch_1.json" and "malformed JSON" in items[2].reason


def test_a_zip_without_header_rejects_each_sample(tmp_path):
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("samples/1_epoch_1.json", json.dumps(sample(1)))
        zf.writestr("samples/2_epoch_1.json", json.dumps(sample(2)))
    items = read(path)
    assert [i.source for i in items] == [f"{path}:samples/1_epoch_1.json", f"{path}:samples/2_epoch_1.json"]
    assert all(i.field == "header.json" and "no header.json" in i.reason for i in items)
    empty = tmp_path / "empty.eval"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("readme.txt", "hi")
    [item] = read(empty)
    assert item.source is None and item.field == "header.json"
    bad_header = write_eval(tmp_path / "bad.eval", eval_log([sample()]), header=False,
                            members={"header.json": "{truncated"})
    [item] = read(bad_header)
    assert item.field == "header.json" and "not JSON" in item.reason


def test_a_file_that_is_not_a_zip_or_json_log(tmp_path):
    broken = tmp_path / "log.eval"
    broken.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(TraceError, match="not a readable Inspect .eval archive"):
        read(broken)
    bad_json = tmp_path / "log.json"
    bad_json.write_text('{"version": 2, "eval": {"task": "t"},\n "samples": [')
    [item] = read(bad_json)
    assert item.line == 2 and "malformed JSON" in item.reason
    not_log = tmp_path / "other.json"
    not_log.write_text('[{"run_id": "r"}]')
    [item] = read(not_log)
    assert item.field == "eval"


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
def test_sniff(tmp_path):
    log = eval_log([sample()])
    archive = write_eval(tmp_path / "log.eval", log).read_bytes()[:65536]
    assert FORMAT.sniff(archive, "log.eval")
    assert FORMAT.sniff(archive, "renamed.zip")  # Inspect's member names show in the zip header
    assert not FORMAT.sniff(b"PK\x03\x04\x14\x00" + b"\0" * 30 + b"word/document.xml", "report.docx")
    text = json.dumps(log, indent=2).encode()
    assert FORMAT.sniff(text[:65536], "log.json") and FORMAT.sniff(json.dumps(log).encode()[:200], "x")
    header_only = json.dumps({k: v for k, v in log.items() if k != "samples"}).encode()
    assert FORMAT.sniff(header_only, "log.json")
    record = json.dumps({"run_id": "r", "task_id": "t", "seed": 0, "steps": [], "outcome": True}).encode()
    otel = b'{"resourceSpans": [{"resource": {}, "scopeSpans": []}]}'
    chat = json.dumps({"run_id": "r", "messages": [{"role": "user", "content": "eval: {x}"}]}).encode()
    assert not any(FORMAT.sniff(head, "runs.json") for head in (record, otel, chat, b"", b"[]"))


# --------------------------------------------------------------------------- #
# Through agentab.load_traces (the format registry)
# --------------------------------------------------------------------------- #
@pytest.fixture
def registered():
    """The inspect format as agentab.formats registers it (a missing reader fails, never skips)."""
    assert WIRED, "agentab.load_traces takes no `format`"
    assert agentab.formats.available()["inspect"] is FORMAT
    assert agentab.formats.get("inspect") is FORMAT


def mixed_log() -> dict:
    good = sample(1, messages=agent_run()[0], events=agent_run()[1])
    unscored = sample(2, value=float("nan"))
    orphan = sample(3, messages=[assistant(call("c1", "bash")), tool("c1", "a"), tool("zz", "b")])
    return eval_log([good, unscored, orphan, sample(1, 2, value="P")])


def test_load_traces_reads_inspect_logs(tmp_path, registered):
    log = eval_log([sample(1), sample(2, value="I"), sample(1, 2), sample(2, 2)], solver="react")
    path = write_eval(tmp_path / "log.eval", log)
    traces = load_traces(path, format="inspect", arm="baseline")
    assert len(traces.runs) == 4 and set(traces.runs["arm"]) == {"baseline"}
    assert set(traces.runs["harness"]) == {"react"}
    assert traces.runs["source"].str.startswith(f"{path}:samples/").all()
    other = eval_log(log["samples"], solver="react", eval_id="EvalB")
    auto = load_traces({"a": write_json(tmp_path / "a.json", other), "b": path})
    assert dict(auto.formats) == {str(tmp_path / "a.json"): "inspect", str(path): "inspect"}
    assert len(auto.runs) == 8 and auto.n_read == 8
    by_model = load_traces(tmp_path / "a.json", fields={"arm": "eval.model"})
    assert set(by_model.runs["arm"]) == {"openai/gpt-4o"}
    folder = load_traces(tmp_path, fields={"run_id": "eval.task:eval.eval_id:id:epoch"}, arm="x")
    assert len(folder.runs) == 8


def test_load_traces_counts_rejections(tmp_path, registered):
    path = write_eval(tmp_path / "mixed.eval", mixed_log())
    with pytest.warns(TraceWarning):  # C and P: booleans mixed with a number
        traces = load_traces(path, strict=False)
    assert len(traces.runs) + len(traces.rejected) == traces.n_read == 4
    assert len(traces.runs) == 2
    rejected = traces.rejected.set_index("field")
    assert rejected.loc["scores.match.value", "source"] == f"{path}:samples/2_epoch_1.json"
    assert "sample 3 epoch 1" in rejected.loc["messages[2].tool_call_id", "reason"]
    with pytest.raises(TraceError) as err:
        load_traces(path)
    message = str(err.value)
    assert f"{path}:samples/2_epoch_1.json" in message and "scores.match.value" in message
    assert "sample 2 epoch 1" in message and "NaN" in message


def test_load_traces_rejects_a_bad_archive_in_both_modes(tmp_path, registered):
    path = tmp_path / "broken.eval"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    for strict in (True, False):
        with pytest.raises(TraceError, match="broken.eval"):
            load_traces(path, format="inspect", strict=strict)


def test_every_converted_record_is_valid(tmp_path):
    """Every fixture above, converted, passes the record decoder."""
    log = mixed_log()
    log["samples"] = [s for s in log["samples"] if s["id"] == 1]
    recs = records(write_json(tmp_path / "log.json", log)) + records(
        write_eval(tmp_path / "log.eval", eval_log([copy.deepcopy(sample(9))], eval_id="EvalB")))
    with pytest.warns(TraceWarning):
        traces = load_traces(recs)
    assert len(traces.runs) == 3 and not math.isnan(traces.runs["tokens_in"].astype(float).sum())


def test_no_solver_and_no_plan_leaves_the_harness_out(tmp_path):
    log = eval_log([sample()])
    del log["plan"]
    [rec] = records(write_json(tmp_path / "log.json", log))
    assert "harness" not in rec["metadata"] and rec["metadata"]["model"] == "openai/gpt-4o"


def test_load_traces_reads_eval_logs_in_memory(tmp_path, registered):
    logs = [eval_log([sample(1), sample(2, value="I")]), eval_log([sample(1)], eval_id="EvalB")]
    traces = load_traces(logs, arm="baseline")
    assert list(traces.runs["run_id"]) == ["EvalA:1:1", "EvalA:2:1", "EvalB:1:1"]
    assert list(traces.runs["outcome"]) == [True, False, True]
    assert dict(traces.formats) == {"<baseline records>": "inspect"}


def test_a_sample_without_tool_calls_keeps_its_usage_as_the_runs_tokens(tmp_path):
    # an answer without tools: no step holds the tokens, so they are the run's (not 0, as they used to be)
    messages = [{"role": "user", "content": "2 + 2?", "source": "input"}, assistant(content="4")]
    mu = {"openai/gpt-4o": usage(120, 8, cache_read=30)}
    rec = one(sample(messages=messages, model_usage=mu), tmp_path)
    assert rec["steps"] == [] and (rec["tokens_in"], rec["tokens_out"], rec["tokens_cached"]) == (150, 8, 30)
    assert "tokens_reasoning" not in rec  # not reported: unknown
    runs = load_traces([rec]).runs
    assert (runs.loc[0, "tokens_in"], runs.loc[0, "tokens_out"], runs.loc[0, "tokens"]) == (150, 8, 158)


def test_a_sample_without_tool_calls_or_usage_has_unknown_tokens(tmp_path):
    messages = [{"role": "user", "content": "2 + 2?", "source": "input"}, assistant(content="4")]
    rec = one(sample(messages=messages, model_usage=None), tmp_path)
    assert "tokens_in" not in rec["metadata"]
    runs = load_traces([rec]).runs
    assert runs[["tokens_in", "tokens_out", "tokens"]].isna().all(axis=None)


def test_mapped_identity_fields_the_sample_lacks_are_absent_not_rejected(tmp_path):
    item, settled = lacking(sample(3, 1), tmp_path, task_id="metadata.instance", seed="metadata.trial")
    task = "sample 3 epoch 1: task_id: no `metadata.instance` in the sample or the log"
    seed = "sample 3 epoch 1: seed: no `metadata.trial` in the sample or the log"
    assert item.missing == {"task_id": ("metadata.instance", task), "seed": ("metadata.trial", seed)}
    assert item.record["outcome"] is True and settled.field == "metadata.instance"
    # a seed that is there but not an integer is still a rejection
    bad = sample(3, 1)
    bad["metadata"] = {"trial": "2"}
    assert "must be an integer" in rejection(bad, tmp_path, seed="metadata.trial").reason


def test_a_scorer_named_among_others_is_a_rejection_but_with_no_scores_absent(tmp_path):
    assert "its scorers: match" in rejection(sample(), tmp_path, outcome="judge").reason
    _, settled = lacking(sample(scores=None), tmp_path, outcome="judge")
    assert settled.field == "scores" and "it has no scores" in settled.reason
