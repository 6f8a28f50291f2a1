"""Writers of the benchmark's trace files: the example experiment's records in every format agentab reads.

Each writer copies the structure of the format's real fixture under ``tests/data/<name>/``; used by
``benchmarks/bench_formats.py``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import agentab


def _messages_openai(rec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": f"task {rec['task_id']}"}]
    for step in rec["steps"]:
        call_id = f"call_{step['index']}"
        out.append({
            "role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": step["tool"], "arguments": json.dumps(step["args"])}}],
            "usage": {"prompt_tokens": step.get("tokens_in", 0), "completion_tokens": step.get("tokens_out", 0)},
        })
        obs = step.get("observation")
        if obs is not None:
            error = obs.get("status") == "error"
            out.append({"role": "tool", "tool_call_id": call_id,
                        "content": json.dumps(obs), **({"error": str(obs.get("error", "error"))} if error else {})})
    return out


def _messages_anthropic(rec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": f"task {rec['task_id']}"}]
    for step in rec["steps"]:
        call_id = f"toolu_{step['index']}"
        out.append({
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": step["tool"], "input": step["args"]}],
            "usage": {"input_tokens": step.get("tokens_in", 0), "output_tokens": step.get("tokens_out", 0)},
        })
        obs = step.get("observation")
        if obs is not None:
            out.append({"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": call_id, "content": json.dumps(obs),
                "is_error": obs.get("status") == "error"}]})
    return out


def _run_fields(rec: dict[str, Any]) -> dict[str, Any]:
    """The run-level fields (the example keeps model and harness in its metadata)."""
    out = {k: rec[k] for k in ("run_id", "task_id", "seed", "arm", "outcome") if k in rec}
    return {**out, "model": rec["metadata"]["model"], "harness": rec["metadata"]["harness"]}


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _otel_spans(rec: dict[str, Any], n: int) -> list[dict[str, Any]]:
    rec = {**rec, **_run_fields(rec)}
    trace_id = f"{n + 1:032x}"
    root = f"{(n + 1) << 20:016x}"
    t = 1_700_000_000_000_000_000 + n * 1_000_000_000
    spans = [{
        "traceId": trace_id, "spanId": root, "name": f"invoke_agent {rec['harness']}", "kind": 1,
        "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 900_000_000),
        "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("agentab.task_id", rec["task_id"]),
                       _attr("agentab.seed", rec["seed"]), _attr("agentab.arm", rec["arm"]),
                       _attr("agentab.outcome", bool(rec["outcome"])), _attr("gen_ai.conversation.id", rec["run_id"]),
                       _attr("gen_ai.request.model", rec["model"]), _attr("gen_ai.agent.name", rec["harness"])],
        "status": {},
    }]
    for step in rec["steps"]:
        k = step["index"]
        start = t + 1_000 + k * 1_000_000
        spans.append({
            "traceId": trace_id, "spanId": f"{((n + 1) << 20) + 2 * k + 1:016x}", "parentSpanId": root,
            "name": f"chat {rec['model']}", "kind": 3, "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 400_000),
            "attributes": [_attr("gen_ai.operation.name", "chat"),
                           _attr("gen_ai.usage.input_tokens", step.get("tokens_in", 0)),
                           _attr("gen_ai.usage.output_tokens", step.get("tokens_out", 0))],
            "status": {},
        })
        obs = step.get("observation")
        tool = {
            "traceId": trace_id, "spanId": f"{((n + 1) << 20) + 2 * k + 2:016x}", "parentSpanId": root,
            "name": f"execute_tool {step['tool']}", "kind": 1, "startTimeUnixNano": str(start + 500_000),
            "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", step["tool"]),
                           _attr("gen_ai.tool.call.arguments", json.dumps(step["args"]))],
            "status": {"code": 2, "message": str(obs.get("error", "error"))} if obs and obs.get("status") == "error" else {},
        }
        if obs is not None:
            tool["endTimeUnixNano"] = str(start + 900_000)
            tool["attributes"].append(_attr("gen_ai.tool.call.result", json.dumps(obs)))
        spans.append(tool)
    return spans


def _inspect_sample(rec: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"task {rec['task_id']}"}]
    for step in rec["steps"]:
        call_id = f"call_{step['index']}"
        messages.append({"role": "assistant", "content": "",
                         "tool_calls": [{"id": call_id, "function": step["tool"], "arguments": step["args"],
                                         "type": "function"}]})
        obs = step.get("observation")
        if obs is not None:
            error = {"type": "unknown", "message": str(obs.get("error", "error"))} if obs.get("status") == "error" else None
            messages.append({"role": "tool", "tool_call_id": call_id, "function": step["tool"],
                             "content": json.dumps(obs), "error": error})
    tokens_in = sum(s.get("tokens_in", 0) for s in rec["steps"])
    tokens_out = sum(s.get("tokens_out", 0) for s in rec["steps"])
    return {
        "id": rec["task_id"], "epoch": rec["seed"] + 1, "input": f"task {rec['task_id']}", "target": "",
        "messages": messages, "scores": {"check": {"value": "C" if rec["outcome"] else "I"}},
        "model_usage": {rec["model"]: {"input_tokens": tokens_in, "output_tokens": tokens_out,
                                       "total_tokens": tokens_in + tokens_out}},
        "metadata": {},
    }


def _tau2_simulation(rec: dict[str, Any], n: int) -> dict[str, Any]:
    """One tau2 ``SimulationRun`` (the shape of tests/data/tau2/airline_grok-3_3sims.json)."""
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, "turn_idx": 0,
         "timestamp": "2026-11-02T09:00:00.000000", "cost": 0.0, "usage": None, "raw_data": None},
        {"role": "user", "content": f"task {rec['task_id']}", "tool_calls": None, "turn_idx": 1,
         "timestamp": "2026-11-02T09:00:00.500000", "cost": 0.0027,
         "usage": {"completion_tokens": 71, "prompt_tokens": 549}, "raw_data": None}]
    for step in rec["steps"]:
        call_id = f"call_{n:06d}{step['index']:03d}"
        usage = {"completion_tokens": step.get("tokens_out", 0), "prompt_tokens": step.get("tokens_in", 0)}
        messages.append({
            "role": "assistant", "content": "", "turn_idx": len(messages), "timestamp": step["started_at"],
            "tool_calls": [{"id": call_id, "name": step["tool"], "arguments": step["args"], "requestor": "assistant"}],
            "cost": 0.015, "usage": usage,
            "raw_data": {"finish_reason": "tool_calls", "index": 0, "message": {
                "content": "", "role": "assistant", "function_call": None,
                "tool_calls": [{"function": {"arguments": json.dumps(step["args"]), "name": step["tool"]},
                                "id": call_id, "type": "function"}]}, "provider_specific_fields": {}}})
        obs = step.get("observation")
        if obs is not None:
            error = obs.get("status") == "error"
            messages.append({"id": call_id, "role": "tool", "content": str(obs.get("error")) if error else json.dumps(obs),
                             "requestor": "assistant", "error": error, "turn_idx": len(messages),
                             "timestamp": step["ended_at"]})
    reward = 1.0 if rec["outcome"] else 0.0
    return {
        "id": f"{n:08x}-0000-4000-8000-{n:012x}", "task_id": rec["task_id"], "timestamp": "2026-11-02T09:01:00",
        "start_time": "2026-11-02T09:00:00", "end_time": "2026-11-02T09:01:00", "duration": 60.0,
        "termination_reason": "user_stop", "agent_cost": 0.028, "user_cost": 0.0047,
        "reward_info": {"reward": reward, "db_check": {"db_match": bool(rec["outcome"]), "db_reward": reward},
                        "env_assertions": [], "action_checks": [], "nl_assertions": None,
                        "communicate_checks": [], "reward_basis": ["DB"], "reward_breakdown": {"DB": reward},
                        "info": {"env": None, "nl": None, "communicate": None, "action": None}},
        "messages": messages, "trial": rec["seed"], "seed": 1000 + n}


def _tau2_results(records: list[dict[str, Any]], offset: int) -> dict[str, Any]:
    """A tau2 ``Results`` document: ``{timestamp, info, tasks, simulations}``."""
    agent = {"implementation": records[0]["metadata"]["harness"], "llm": records[0]["metadata"]["model"],
             "llm_args": {"temperature": 0.0}}
    info = {"git_commit": "0" * 40, "num_trials": 5, "max_steps": 200, "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "xai/grok-3", "llm_args": {"temperature": 0.0}},
            "agent_info": agent, "environment_info": {"domain_name": "bench", "tool_defs": None}, "seed": 300}
    return {"timestamp": "2026-11-02T09:00:00", "info": info, "tasks": [],
            "simulations": [_tau2_simulation(rec, offset + n) for n, rec in enumerate(records)]}


def _openhands_line(rec: dict[str, Any], n: int) -> dict[str, Any]:
    """One OpenHands ``output.jsonl`` line (the shape of tests/data/openhands/multi_swe_bench_output.jsonl.gz)."""
    rec = {**rec, **_run_fields(rec)}
    history: list[dict[str, Any]] = [
        {"id": 0, "timestamp": "2026-11-02T09:00:00", "source": "agent", "message": "You are OpenHands agent.",
         "action": "system", "args": {"content": "You are OpenHands agent.", "tools": None}},
        {"id": 1, "timestamp": "2026-11-02T09:00:00", "source": "user", "message": f"task {rec['task_id']}",
         "action": "message", "args": {"content": f"task {rec['task_id']}", "image_urls": None, "wait_for_response": False}}]
    prompt = completion = 0
    for step in rec["steps"]:
        event_id = len(history)
        prompt, completion = prompt + step.get("tokens_in", 0), completion + step.get("tokens_out", 0)
        usage = {"completion_tokens": step.get("tokens_out", 0), "prompt_tokens": step.get("tokens_in", 0),
                 "total_tokens": step.get("tokens_in", 0) + step.get("tokens_out", 0),
                 "completion_tokens_details": None, "prompt_tokens_details": None}
        metadata = {"function_name": step["tool"], "tool_call_id": f"toolu_{step['index']:02d}",
                    "model_response": {"id": f"gen-{n}-{step['index']}", "created": 1746001974, "model": rec["model"],
                                       "object": "chat.completion", "choices": [], "usage": usage},
                    "total_calls_in_response": 1}
        history.append({"id": event_id, "timestamp": step["started_at"], "source": "agent",
                        "message": f"Running {step['tool']}", "action": "run", "tool_call_metadata": metadata,
                        "llm_metrics": {"accumulated_cost": 0.0, "accumulated_token_usage": {
                            "model": rec["model"], "prompt_tokens": prompt, "completion_tokens": completion,
                            "cache_read_tokens": 0, "cache_write_tokens": 0, "response_id": ""},
                            "costs": [], "response_latencies": [], "token_usages": []},
                        "args": step["args"]})
        obs = step.get("observation")
        if obs is not None:
            error = obs.get("status") == "error"
            history.append({"id": event_id + 1, "timestamp": step["ended_at"], "source": "agent",
                            "message": f"Command executed with exit code {1 if error else 0}.", "cause": event_id,
                            "observation": "run", "tool_call_metadata": metadata,
                            "content": str(obs.get("error")) if error else json.dumps(obs),
                            "extras": {"command": step["tool"], "metadata": {"exit_code": 1 if error else 0, "pid": -1},
                                       "hidden": False}, "success": not error})
    return {"instance_id": rec["task_id"], "run_id": rec["run_id"], "seed": rec["seed"], "arm": rec["arm"],
            "test_result": {"git_patch": "", "report": {"resolved": bool(rec["outcome"])}},
            "instruction": f"task {rec['task_id']}",
            "metadata": {"agent_class": rec["harness"], "llm_config": {"model": rec["model"]}, "max_iterations": 100},
            "metrics": {"accumulated_cost": 0.5, "accumulated_token_usage": {
                "model": "default", "prompt_tokens": prompt, "completion_tokens": completion, "cache_read_tokens": 0,
                "cache_write_tokens": 0, "response_id": ""}, "costs": [{"model": rec["model"], "cost": 0.5}],
                "response_latencies": [], "token_usages": []},
            "error": None, "history": history}


def _mini_swe_agent_traj(rec: dict[str, Any]) -> dict[str, Any]:
    """A mini-SWE-agent v1 text-mode ``.traj.json`` (as tests/data/mini_swe_agent/django__django-12143.traj.json)."""
    rec = {**rec, **_run_fields(rec)}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact multiple times with a computer "
                                      "shell to solve programming tasks."},
        {"role": "user", "content": f"<pr_description>\ntask {rec['task_id']}\n</pr_description>"}]
    for step in rec["steps"]:
        text = f"THOUGHT: next.\n\n```bash\n{step['tool']} '{json.dumps(step['args'])}'\n```"
        usage = {"completion_tokens": step.get("tokens_out", 0), "prompt_tokens": step.get("tokens_in", 0),
                 "total_tokens": step.get("tokens_in", 0) + step.get("tokens_out", 0)}
        messages.append({"role": "assistant", "content": text, "extra": {"response": {
            "id": f"{rec['run_id']}-{step['index']}", "choices": [{"finish_reason": "STOP", "index": 0, "message": {
                "content": text, "role": "assistant", "function_call": None, "tool_calls": None}}],
            "created": 1746001974, "model": rec["model"], "object": "chat.completion", "usage": usage}, "cost": 0.01}})
        obs = step.get("observation")
        if obs is not None:
            code = 1 if obs.get("status") == "error" else 0
            out = str(obs.get("error")) if code else json.dumps(obs)
            messages.append({"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{out}\n</output>"})
    return {"run_id": rec["run_id"], "instance_id": rec["task_id"], "seed": rec["seed"], "arm": rec["arm"],
            "outcome": bool(rec["outcome"]), "trajectory_format": "mini-swe-agent-1",
            "info": {"exit_status": "Submitted", "submission": "diff --git a/x b/x\n",
                     "model_stats": {"instance_cost": 0.01 * len(rec["steps"]), "api_calls": len(rec["steps"])},
                     "mini_version": "1.9.0", "config": {"model": {"model_name": rec["model"]}}},
            "messages": messages}


#: The mapping the swe-agent docs page has users give for what a .traj does not record.
SWE_AGENT_FIELDS = {"seed": "seed", "outcome": "outcome"}


def _swe_agent_traj(rec: dict[str, Any]) -> dict[str, Any]:
    """A SWE-agent 1.x ``.traj`` with function calling (the shape of tests/data/swe_agent/*.traj)."""
    rec = {**rec, **_run_fields(rec)}
    trajectory: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = [
        {"message_type": "system_prompt", "role": "system", "content": "SETTING: autonomous programmer", "agent": "main"},
        {"message_type": "observation", "role": "user", "content": f"task {rec['task_id']}", "agent": "main"}]
    for step in rec["steps"]:
        call_id = f"call_{step['index']:03d}"
        action = f"{step['tool']} '{json.dumps(step['args'])}'"
        obs = step.get("observation")
        text = "" if obs is None else str(obs.get("error")) if obs.get("status") == "error" else json.dumps(obs)
        trajectory.append({"action": action, "observation": text, "response": "next.", "thought": "next.",
                           "execution_time": 0.25, "state": {"open_file": "n/a", "working_dir": "/testbed"},
                           "query": [], "extra_info": {}})
        history.append({"message_type": "action", "role": "assistant", "content": "next.", "thought": "next.",
                        "action": action, "agent": "main", "tool_calls": [{
                            "id": call_id, "type": "function",
                            "function": {"name": step["tool"], "arguments": json.dumps(step["args"])}}]})
        history.append({"message_type": "observation", "role": "tool", "content": text, "agent": "main",
                        "tool_call_ids": [call_id]})
    tokens_in = sum(s.get("tokens_in", 0) for s in rec["steps"])
    tokens_out = sum(s.get("tokens_out", 0) for s in rec["steps"])
    return {"environment": "main", "trajectory": trajectory, "history": history,
            "info": {"submission": "diff --git a/x b/x\n", "exit_status": "submitted", "swe_agent_version": "1.0.1",
                     "model_stats": {"instance_cost": 0.5, "tokens_sent": tokens_in, "tokens_received": tokens_out,
                                     "api_calls": len(rec["steps"])}},
            "replay_config": {"problem_statement": {"id": rec["task_id"], "type": "text"},
                              "agent": {"name": "main", "model": {"name": rec["model"]}}},
            "seed": rec["seed"], "outcome": bool(rec["outcome"])}


def _claude_code_session(rec: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """A Claude Code session JSONL (as tests/data/claude_code/tool_heavy.jsonl), an ``agentab`` object on line 1."""
    rec = {**rec, **_run_fields(rec)}
    session = f"{n:08x}-0000-4000-8000-{n:012x}"
    common = {"isSidechain": False, "userType": "external", "cwd": "/home/user/project", "sessionId": session,
              "version": "2.1.38", "gitBranch": "main"}
    lines: list[dict[str, Any]] = [
        {"parentUuid": None, **common, "type": "user", "message": {"role": "user", "content": f"task {rec['task_id']}"},
         "uuid": f"{session}-u", "timestamp": "2026-11-02T09:00:00.000Z", "permissionMode": "bypassPermissions",
         "agentab": {"task_id": rec["task_id"], "seed": rec["seed"], "outcome": bool(rec["outcome"])}}]
    for step in rec["steps"]:
        k = step["index"]
        call_id = f"toolu_{n:08d}{k:04d}"
        lines.append({"parentUuid": lines[-1]["uuid"], **common, "message": {
            "model": rec["model"], "id": f"msg_{n:08d}{k:04d}", "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": step["tool"], "input": step["args"],
                         "caller": {"type": "direct"}}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": step.get("tokens_in", 0), "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": step.get("tokens_out", 0),
                      "service_tier": "standard"}},
            "requestId": f"req_{n:08d}{k:04d}", "type": "assistant", "uuid": f"{session}-a{k}",
            "timestamp": step["started_at"]})
        obs = step.get("observation")
        if obs is not None:
            error = obs.get("status") == "error"
            lines.append({"parentUuid": lines[-1]["uuid"], **common, "type": "user", "message": {
                "role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result",
                                             "content": str(obs.get("error")) if error else json.dumps(obs),
                                             "is_error": error}]},
                "uuid": f"{session}-r{k}", "timestamp": step["ended_at"],
                "toolUseResult": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
                "sourceToolAssistantUUID": f"{session}-a{k}"})
    return lines


#: ATIF records no seed: the docs page's mapping to a key the harness adds (``extra.seed``).
ATIF_FIELDS = {"seed": "extra.seed"}


def _atif_trial(rec: dict[str, Any], trial: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Harbor's ``agent/trajectory.json`` (ATIF-v1.5, function calling) and the trial's ``result.json``."""
    rec = {**rec, **_run_fields(rec)}
    steps: list[dict[str, Any]] = [{"step_id": 1, "timestamp": "2026-11-02T09:00:00Z", "source": "user",
                                    "message": f"task {rec['task_id']}"}]
    for step in rec["steps"]:
        call_id = f"call_{step['index']:03d}"
        obs = step.get("observation")
        entry: dict[str, Any] = {
            "step_id": len(steps) + 1, "timestamp": step["started_at"], "source": "agent", "model_name": rec["model"],
            "message": "next.", "tool_calls": [{"tool_call_id": call_id, "function_name": step["tool"],
                                                "arguments": step["args"]}],
            "metrics": {"prompt_tokens": step.get("tokens_in", 0), "completion_tokens": step.get("tokens_out", 0),
                        "cached_tokens": 0, "cost_usd": 0.002}}
        if obs is not None:
            text = str(obs.get("error")) if obs.get("status") == "error" else json.dumps(obs)
            entry["observation"] = {"results": [{"source_call_id": call_id, "content": text}]}
        steps.append(entry)
    tokens_in = sum(s.get("tokens_in", 0) for s in rec["steps"])
    tokens_out = sum(s.get("tokens_out", 0) for s in rec["steps"])
    trajectory = {"schema_version": "ATIF-v1.5", "session_id": rec["run_id"],
                  "agent": {"name": rec["harness"], "version": "2.0.0", "model_name": rec["model"]},
                  "steps": steps, "extra": {"seed": rec["seed"]},
                  "final_metrics": {"total_prompt_tokens": tokens_in, "total_completion_tokens": tokens_out,
                                    "total_cached_tokens": 0, "total_cost_usd": 0.002 * len(rec["steps"])}}
    result = {"id": rec["run_id"], "task_name": rec["task_id"], "trial_name": trial, "task_checksum": "0" * 64,
              "agent_info": {"name": rec["harness"], "version": "2.0.0"},
              "verifier_result": {"rewards": {"reward": 1.0 if rec["outcome"] else 0.0}},
              "agent_execution": {"started_at": "2026-11-02T09:00:00Z", "finished_at": "2026-11-02T09:01:00Z"},
              "exception_info": None}
    return trajectory, result


def _openai_agents_trace(rec: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """An OpenAI Agents SDK trace export of one run (the shape of tests/data/openai_agents/traces.jsonl): the
    ``trace`` object (task, seed and outcome in its metadata, as text), an ``agent`` span, and per tool call a
    ``generation`` span with its usage and a ``function`` span with the call."""
    trace_id = f"trace_{n:032x}"
    agent_id = f"span_{n:018x}a00000"
    meta = {"agentab.task_id": str(rec["task_id"]), "agentab.seed": str(rec["seed"]),
            "agentab.outcome": "true" if rec["outcome"] else "false"}
    out: list[dict[str, Any]] = [{"object": "trace", "id": trace_id, "workflow_name": "bench", "group_id": rec["arm"],
                                  "metadata": meta}]
    clock = 1_700_000_000 + n * 100

    def time_of(k: int) -> str:
        return f"2026-12-01T00:{(clock + k) // 60 % 60:02d}:{(clock + k) % 60:02d}.000000+00:00"

    out.append({"object": "trace.span", "id": agent_id, "trace_id": trace_id, "parent_id": None,
                "started_at": time_of(0), "ended_at": time_of(2 * len(rec["steps"]) + 1),
                "span_data": {"type": "agent", "name": rec["metadata"]["harness"],
                              "handoffs": [], "tools": sorted({s["tool"] for s in rec["steps"]}), "output_type": "str"},
                "error": None})
    for step in rec["steps"]:
        k = step["index"]
        usage = {"requests": 1, "input_tokens": step.get("tokens_in", 0), "output_tokens": step.get("tokens_out", 0),
                 "total_tokens": step.get("tokens_in", 0) + step.get("tokens_out", 0),
                 "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
        out.append({"object": "trace.span", "id": f"span_{n:018x}g{k:05d}", "trace_id": trace_id,
                    "parent_id": agent_id, "started_at": time_of(2 * k), "ended_at": time_of(2 * k),
                    "span_data": {"type": "generation", "input": None, "output": None,
                                  "model": rec["metadata"]["model"], "model_config": None, "usage": usage},
                    "error": None})
        obs = step.get("observation")
        error = None
        if obs is not None and obs.get("status") == "error":
            error = {"message": "Error running tool (non-fatal)",
                     "data": {"tool_name": step["tool"], "error": str(obs.get("error"))}}
        out.append({"object": "trace.span", "id": f"span_{n:018x}f{k:05d}", "trace_id": trace_id,
                    "parent_id": agent_id, "started_at": time_of(2 * k + 1), "ended_at": time_of(2 * k + 1),
                    "span_data": {"type": "function", "name": step["tool"], "input": json.dumps(step["args"]),
                                  "output": None if obs is None else json.dumps(obs), "mcp_data": None},
                    "error": error})
    return out


def write_all(records: list[dict[str, Any]], folder: Path) -> dict[str, list[Path]]:
    """The records in every format; the paths of each format's files."""
    paths: dict[str, list[Path]] = {}
    traces = agentab.load_traces(records)
    paths["record"] = [traces.to_jsonl(folder / "runs.jsonl")]
    for name, convert in (("openai", _messages_openai), ("anthropic", _messages_anthropic)):
        path = folder / f"{name}.jsonl"
        with path.open("w") as fh:
            for rec in records:
                fh.write(json.dumps({**_run_fields(rec), "messages": convert(rec)}) + "\n")
        paths[name] = [path]
    path = folder / "otel.jsonl"
    with path.open("w") as fh:
        for start in range(0, len(records), 100):
            spans = [s for n, rec in enumerate(records[start:start + 100], start=start) for s in _otel_spans(rec, n)]
            batch = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "bench")]},
                                        "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}
            fh.write(json.dumps(batch) + "\n")
    paths["otel"] = [path]
    spans = folder / "otel-spans.jsonl"  # a byte-order mark: the column reader leaves the file to the span reader
    spans.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    paths["otel-spans"] = [spans]
    paths["inspect"] = []
    for arm in sorted({rec["arm"] for rec in records}):
        path = folder / f"{arm}.eval"
        arm_records = [{**rec, **_run_fields(rec)} for rec in records if rec["arm"] == arm]
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            header = {"version": 2, "status": "success",
                      "eval": {"run_id": f"bench-{arm}", "eval_id": f"bench-{arm}", "task": "bench",
                               "task_id": "bench", "model": arm_records[0]["model"], "solver": arm_records[0]["harness"],
                               "created": "2026-11-30T00:00:00+00:00"},
                      "plan": {"name": "plan", "steps": [{"solver": arm_records[0]["harness"], "params": {}}]},
                      "results": {"scores": [{"name": "check", "scorer": "check", "metrics": {}}]}}
            zf.writestr("header.json", json.dumps(header))
            for rec in arm_records:
                zf.writestr(f"samples/{rec['task_id']}_epoch_{rec['seed'] + 1}.json", json.dumps(_inspect_sample(rec)))
        paths["inspect"].append(path)
    return {**paths, **_write_agent_formats(records, folder)}


def _write_agent_formats(records: list[dict[str, Any]], folder: Path) -> dict[str, list[Path]]:
    """The records in the agent harnesses' formats (one file per arm, one line per run, or one file per run)."""
    paths: dict[str, list[Path]] = {}
    paths["tau2"] = []
    for arm in sorted({rec["arm"] for rec in records}):  # one results file per arm, as `tau2 run` writes them
        path = folder / f"tau2-{arm}.json"
        arm_records = [rec for rec in records if rec["arm"] == arm]
        path.write_text(json.dumps(_tau2_results(arm_records, len(paths["tau2"]) * len(records)), indent=2))
        paths["tau2"].append(path)
    path = folder / "openhands-output.jsonl"
    with path.open("w") as fh:
        for n, rec in enumerate(records):
            fh.write(json.dumps(_openhands_line(rec, n)) + "\n")
    paths["openhands"] = [path]
    trajs = folder / "mini-swe-agent"  # one file per run, loaded as a folder
    trajs.mkdir()
    for rec in records:
        (trajs / f"{rec['run_id']}.traj.json").write_text(json.dumps(_mini_swe_agent_traj(rec), indent=2))
    paths["mini-swe-agent"] = [trajs]
    paths["swe-agent"] = []
    for arm in sorted({rec["arm"] for rec in records}):  # <output_dir>/<instance>/<instance>.traj, one folder per arm
        root = folder / "swe-agent" / arm
        for rec in records:
            if rec["arm"] == arm:
                (root / rec["run_id"]).mkdir(parents=True)
                (root / rec["run_id"] / f"{rec['run_id']}.traj").write_text(json.dumps(_swe_agent_traj(rec), indent=2))
        paths["swe-agent"].append(root)
    paths["claude-code"] = []
    for arm in sorted({rec["arm"] for rec in records}):  # ~/.claude/projects/<project>/<session-id>.jsonl
        root = folder / "claude-code" / arm
        root.mkdir(parents=True)
        for n, rec in enumerate(records):
            if rec["arm"] == arm:
                lines = _claude_code_session(rec, n)
                (root / f"{lines[0]['sessionId']}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        paths["claude-code"].append(root)
    paths["openai-agents"] = []
    for arm in sorted({rec["arm"] for rec in records}):  # the SDK's JSON Lines export, one file per arm
        path = folder / f"openai-agents-{arm}.jsonl"
        with path.open("w") as fh:
            for n, rec in enumerate(records):
                if rec["arm"] == arm:
                    fh.write("".join(json.dumps(x) + "\n" for x in _openai_agents_trace(rec, n)))
        paths["openai-agents"].append(path)
    paths["atif"] = []
    for arm in sorted({rec["arm"] for rec in records}):  # <job>/<task>__<7 characters>/{result.json, agent/}
        root = folder / "atif" / arm
        for n, rec in enumerate(records):
            if rec["arm"] == arm:
                trial = f"{rec['task_id']}__{arm[0]}{n:06d}"
                trajectory, result = _atif_trial(rec, trial)
                (root / trial / "agent").mkdir(parents=True)
                (root / trial / "agent" / "trajectory.json").write_text(json.dumps(trajectory, indent=2))
                (root / trial / "result.json").write_text(json.dumps(result, indent=2))
        paths["atif"].append(root)
    return paths
