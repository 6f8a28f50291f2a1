"""tau2-bench results (format "tau2"): real results documents and the shared simulations-per-line data.

The fixtures (tests/data/tau2/README.md) are cut from real tau2-bench runs; every expected value here is
counted from the raw JSON with plain ``json``, never with the reader.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agentab
from agentab.formats._missing import settle
from agentab.formats.decode import Prepared
from agentab.formats.tau2 import FIELDS, FORMAT, sniff

DATA = Path(__file__).parent / "data"
TAU2 = DATA / "tau2"
TELECOM = TAU2 / "telecom_grok-3_2sims.json"
AIRLINE = TAU2 / "airline_grok-3_3sims.json"
SHARED = TAU2 / "shared_block1_3lines.jsonl"
DOCUMENTS = (TELECOM, AIRLINE)


def read(path: Path, **fields: str) -> list[agentab.formats.Item]:
    return list(FORMAT.read_file(path, {**FIELDS, **fields}))


def record(item: agentab.formats.Item) -> dict[str, Any]:
    """The item's trace record as a dict: a run the reader built in columns gives its ``to_record()``, without the
    fields it lacks (``Item.missing``)."""
    rec = item.record
    if isinstance(rec, Prepared):
        rec = {key: value for key, value in rec.to_record().items() if key not in (item.missing or {})}
    return rec


def load(items: list[agentab.formats.Item]) -> agentab.Traces:
    """Decode the records with the record decoder, as load_traces does for a registered format."""
    assert all(item.record is not None for item in items), [(i.field, i.reason) for i in items if i.record is None]
    return agentab.load_traces([record(item) for item in items])


def objects(objs: list[Any], **fields: str) -> list[agentab.formats.Item]:
    return list(FORMAT.read_objects(objs, "<test>", {**FIELDS, **fields}))


def hand_counts(sim: dict[str, Any]) -> dict[str, Any]:
    """What a simulation holds, counted from its raw messages."""
    calls = [c for m in sim["messages"] if m["role"] == "assistant" for c in (m.get("tool_calls") or [])
             if c["requestor"] == "assistant"]
    user_calls = [c for m in sim["messages"] for c in (m.get("tool_calls") or []) if c["requestor"] == "user"]
    user_ids = {c["id"] for c in user_calls}
    answer_id = "id" if all("id" in m for m in sim["messages"] if m["role"] == "tool") else "tool_call_id"
    errors = sum(1 for m in sim["messages"] if m["role"] == "tool" and m["error"] and m[answer_id] not in user_ids)
    tokens = [m["usage"]["prompt_tokens"] + m["usage"]["completion_tokens"]
              for m in sim["messages"] if m["role"] == "assistant" and m.get("usage")]
    user_tokens = sum(m["usage"]["prompt_tokens"] + m["usage"]["completion_tokens"]
                      for m in sim["messages"] if m["role"] == "user" and m.get("usage"))
    return {"tools": [c["name"] for c in calls], "user_calls": len(user_calls), "errors": errors,
            "tokens": sum(tokens), "user_tokens": user_tokens}


# --------------------------------------------------------------------------- #
# Real results documents: one run per simulation, hand-counted
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_real_results_document_matches_the_raw_file(path):
    doc = json.loads(path.read_text())
    traces = load(read(path))
    assert len(traces.runs) == len(doc["simulations"]) and len(traces.rejected) == 0
    runs = traces.runs.set_index("run_id")
    agent = doc["info"]["agent_info"]
    for sim in doc["simulations"]:
        row = runs.loc[sim["id"]]
        counted = hand_counts(sim)
        reward = sim["reward_info"]["reward"]
        assert reward in (0.0, 1.0)
        assert (row.task_id, row.seed, row.outcome) == (sim["task_id"], sim["trial"], bool(reward))
        assert row.cost_usd == sim["agent_cost"] and row.latency_s == sim["duration"]
        assert (row.model, row.harness) == (agent["llm"], agent["implementation"])
        assert row.n_steps == len(counted["tools"]) and row.n_errors == counted["errors"]
        assert row.tokens == counted["tokens"] > 0
        steps = traces.steps[traces.steps["run_id"] == sim["id"]]
        assert steps["tool"].tolist() == counted["tools"]
        meta = json.loads(row.metadata)
        assert row.user_cost_usd == sim["user_cost"] and "user_cost" not in meta  # kept apart, never added
        assert meta["reward"] == reward
        # the run's totals: every assistant message's usage, those without a call included
        agent_usage = [m["usage"] for m in sim["messages"] if m["role"] == "assistant" and m.get("usage")]
        assert row.tokens_in == sum(u["prompt_tokens"] for u in agent_usage)
        assert row.tokens_out == sum(u["completion_tokens"] for u in agent_usage)
        assert meta["user_tool_calls"] == counted["user_calls"]
        assert meta.get("user_tokens_in", 0) + meta.get("user_tokens_out", 0) == counted["user_tokens"]
        assert meta["simulation_seed"] == sim["seed"] and meta["termination_reason"] == sim["termination_reason"]
        assert meta["user_model"] == doc["info"]["user_info"]["llm"]
        assert meta["domain"] == doc["info"]["environment_info"]["domain_name"]


def test_telecom_user_simulator_tool_calls_are_not_agent_steps():
    doc = json.loads(TELECOM.read_text())
    traces = load(read(TELECOM))
    user_tools = {c["name"] for s in doc["simulations"] for m in s["messages"] for c in (m.get("tool_calls") or [])
                  if c["requestor"] == "user"}
    assert user_tools and user_tools.isdisjoint(set(traces.steps["tool"]))
    total_user = sum(hand_counts(s)["user_calls"] for s in doc["simulations"])
    assert total_user == 7
    assert sum(json.loads(m)["user_tool_calls"] for m in traces.runs["metadata"]) == total_user


def test_airline_tool_error_is_the_steps_error():
    doc = json.loads(AIRLINE.read_text())
    errored = [(s["id"], m) for s in doc["simulations"] for m in s["messages"] if m["role"] == "tool" and m["error"]]
    assert len(errored) == 1
    run_id, message = errored[0]
    steps = load(read(AIRLINE)).steps
    step = steps[(steps["run_id"] == run_id) & (steps["status"] == "error")]
    assert len(step) == 1
    assert step.iloc[0]["error"] == message["content"]
    assert json.loads(step.iloc[0]["metadata"])["call_id"] == message["id"]


def test_per_message_cost_is_on_the_first_step_of_its_message():
    doc = json.loads(AIRLINE.read_text())
    steps = load(read(AIRLINE)).steps
    for sim in doc["simulations"]:
        mine = steps[steps["run_id"] == sim["id"]]
        firsts = {}
        for meta, cost in zip(mine["metadata"], mine["cost_usd"]):
            firsts.setdefault(json.loads(meta)["message"], cost)  # a message's first step has its cost
        assert firsts and all(cost == sim["messages"][i]["cost"] for i, cost in firsts.items())
        # calls of one message share a parallel id (the message's index), single calls have none
        for i, group in mine.groupby("parallel", observed=True):
            assert len(group) == len(sim["messages"][int(i)]["tool_calls"]) >= 2


def test_shared_jsonl_simulations_one_per_line():
    raw = [json.loads(line) for line in SHARED.read_text().splitlines() if line.strip()]
    traces = load(read(SHARED, arm="policy_variant"))
    assert len(traces.runs) == len(raw) == 3
    runs = traces.runs.set_index("run_id")
    for r in raw:
        row = runs.loc[r["sim_id"]]
        counted = hand_counts(r)
        assert (row.task_id, row.seed, row.arm, row.model) == (r["task_id"], r["trial"], r["policy_variant"],
                                                              r["agent_model"])
        assert row.outcome == bool(r["reward"]) and row.cost_usd == r["agent_cost"]
        assert row.latency_s == r["duration_sec"]
        assert row.n_steps == len(counted["tools"]) == r["n_tool_calls"] and row.n_errors == counted["errors"]
        assert row.tokens == counted["tokens"] > 0
        meta = json.loads(row.metadata)
        assert row.user_cost_usd == r["user_cost"] and meta["policy_variant"] == r["policy_variant"]


def test_arm_from_the_documents_info():
    traces = load(read(AIRLINE, arm="info.agent_info.llm"))
    assert set(traces.runs["arm"]) == {json.loads(AIRLINE.read_text())["info"]["agent_info"]["llm"]}


# --------------------------------------------------------------------------- #
# Detection
# --------------------------------------------------------------------------- #
def _head(path: Path) -> bytes:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return fh.read(65536)


def test_sniff_claims_tau2_files_only():
    for path in (*DOCUMENTS, SHARED, DATA / "tau" / "tau2_grok_policy_ab.jsonl.gz"):
        assert sniff(_head(path), path.name), path
    assert not sniff(_head(DATA / "tau" / "tau_bench_gpt4o_airline.jsonl.gz"), "x.jsonl")  # tau-bench: openai's
    for name, fmt in agentab.formats.available().items():
        assert name == "tau2" or not sniff(fmt.example.encode(), "x.jsonl"), name
    assert sniff(FORMAT.example.encode(), "x.json")
    for fmt in agentab.formats.available().values():
        if fmt.name not in ("openai", "record", "tau2"):
            assert not fmt.sniff(FORMAT.example.encode(), "x.json"), fmt.name


def test_a_results_document_is_recognised_before_its_simulations():
    """tau2 writes ``tasks`` before ``simulations``: the first 64 KiB may hold only ``info`` and tasks."""
    head = TELECOM.read_bytes()[:30000]
    assert b'"simulations"' not in head and sniff(head, TELECOM.name)


# --------------------------------------------------------------------------- #
# Unknown stays missing; rewards; bad input is a rejection naming the field
# --------------------------------------------------------------------------- #
def _document() -> dict[str, Any]:
    return json.loads(AIRLINE.read_text())


def test_unknown_tokens_and_cost_stay_missing():
    doc = _document()
    sim = doc["simulations"][0]
    for m in sim["messages"]:
        m["usage"] = None
    sim["agent_cost"] = None
    runs = load(objects([doc])).runs.set_index("run_id")
    row = runs.loc[sim["id"]]
    assert row.n_steps > 0
    assert pd.isna(row.tokens) and pd.isna(row.cost_usd)  # unknown, never 0


def test_a_reward_that_is_not_0_or_1_stays_a_number():
    doc = _document()
    for sim, reward in zip(doc["simulations"], (0.5, 0.25, 1.0)):
        sim["reward_info"]["reward"] = reward
    items = objects([doc])
    assert [record(item)["outcome"] for item in items] == [0.5, 0.25, True]
    assert [record(item)["metadata"]["reward"] for item in items] == [0.5, 0.25, 1.0]


@pytest.mark.parametrize("edit, key, field, words", [
    (lambda s: s.update(reward_info=None), "outcome", "reward_info", "never evaluated"),
    (lambda s: s["reward_info"].pop("reward"), "outcome", "reward_info.reward", "no outcome"),
    (lambda s: s.update(trial=None), "seed", "trial", "no seed"),
    (lambda s: s.pop("task_id"), "task_id", "task_id", "no task_id"),
])
def test_absent_run_fields_are_left_to_the_loader(edit, key, field, words):
    doc = _document()
    sim = doc["simulations"][0]
    n_calls = sum(len(m.get("tool_calls") or ()) for m in sim["messages"] if m.get("role") == "assistant")
    edit(sim)
    item = objects([doc])[0]
    assert list(item.missing) == [key] and key not in record(item)
    assert len(record(item)["steps"]) == n_calls > 0
    settled = settle(item)
    assert settled.record is None and settled.field == field and words in settled.reason


@pytest.mark.parametrize("edit, field, words", [
    (lambda s: s["reward_info"].update(reward=float("nan")), "reward_info.reward", "finite number"),
    (lambda s: s["reward_info"].update(reward=10**400), "reward_info.reward", "finite number"),
    (lambda s: s.update(trial="0"), "trial", "integer"),
    (lambda s: s["messages"][1].update(role="narrator"), "messages[1].role", "role"),
    (lambda s: s["messages"].append({"role": "tool", "id": "call_nowhere", "content": "x", "error": False}),
     None, "no earlier tool call has id 'call_nowhere'"),
])
def test_bad_simulations_are_rejections_naming_the_field(edit, field, words):
    doc = _document()
    sim = doc["simulations"][0]
    edit(sim)
    items = objects([doc])
    assert len(items) == len(doc["simulations"])
    bad = items[0]
    assert bad.record is None and words in bad.reason
    if field is None:
        assert bad.field == f"messages[{len(sim['messages']) - 1}].id"
    else:
        assert bad.field == field
    assert all(item.record is not None for item in items[1:])


def test_a_document_without_simulations_and_malformed_files(tmp_path):
    doc = _document()
    doc.pop("simulations")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    [item] = read(path)
    assert item.record is None and item.field == "simulations"
    path.write_text('{"timestamp": "t", "info": {}, "tasks": [], "simulations": 3}')
    [item] = read(path)
    assert item.record is None and item.field == "simulations"
    path.write_text("not json at all")
    [item] = read(path)
    assert item.record is None and "not a tau2-bench results file" in item.reason


def test_multi_tool_message_answers_each_call():
    doc = _document()
    sim = copy.deepcopy(doc["simulations"][0])
    calls = [{"id": f"c{k}", "name": "get_user_details", "arguments": {"user_id": "u"}, "requestor": "assistant"}
             for k in range(2)]
    sim["messages"] = [
        {"role": "assistant", "content": "", "tool_calls": calls, "usage": {"prompt_tokens": 10,
                                                                          "completion_tokens": 2}},
        {"role": "tool", "tool_messages": [
            {"role": "tool", "id": "c0", "content": "{}", "requestor": "assistant", "error": False},
            {"role": "tool", "id": "c1", "content": "Error: no user", "requestor": "assistant", "error": True}]},
    ]
    [item] = objects([sim])
    steps = record(item)["steps"]
    assert [s["observation"]["status"] for s in steps] == ["ok", "error"]
    assert steps[0]["tokens_in"] == 10 and "tokens_in" not in steps[1]
    assert steps[1]["metadata"]["tokens_with_step"] == 0


def test_a_json_file_with_one_simulation(tmp_path):
    sim = _document()["simulations"][1]
    path = tmp_path / "sim.json"
    path.write_text(json.dumps(sim))
    [item] = read(path)
    assert record(item)["run_id"] == sim["id"] and record(item)["outcome"] is bool(sim["reward_info"]["reward"])
    assert sniff(path.read_bytes(), path.name)


def test_scores_and_summary_work_on_the_runs():
    traces = load(read(TELECOM) + read(AIRLINE))
    scores = agentab.score(traces)
    assert len(scores) == 5
    assert sorted(scores["outcome"].astype(bool)) == sorted(
        bool(s["reward_info"]["reward"]) for p in DOCUMENTS for s in json.loads(p.read_text())["simulations"])
