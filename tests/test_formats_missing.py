"""Required run-level fields a file lacks (``Item.missing``): every non-OTel reader reads the run whole and names
the field, for the loader to fill from the file path or an outcomes table, or to reject with the reader's reason.

Each case is a real fixture (tests/data/<reader>/) or a minimal file without its outcome; the step count is
hand-counted from the raw file with plain json.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentab
from agentab import formats
from agentab.formats._base import Item
from agentab.formats._missing import absent, settle

DATA = Path(__file__).parent / "data"


def _jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# --------------------------------------------------------------------------- #
# One case per reader: (file lacking the outcome, hand-counted steps of its first run, words of the reason)
# --------------------------------------------------------------------------- #
def _openai(tmp: Path) -> tuple[Path, int, str]:
    run = _jsonl_gz(DATA / "tau" / "tau_bench_gpt4o_airline.jsonl.gz")[0]
    del run["reward"]  # tau-bench's outcome
    path = tmp / "runs.jsonl"
    path.write_text(json.dumps(run) + "\n")
    calls = sum(len(m.get("tool_calls") or ()) for m in run["traj"] if m.get("role") == "assistant")
    return path, calls, "no outcome"


def _anthropic(tmp: Path) -> tuple[Path, int, str]:
    run = {"task_id": "t1", "seed": 0, "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ls", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "cat", "input": {"p": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "y"}]}]}
    path = tmp / "runs.jsonl"
    path.write_text(json.dumps(run) + "\n")
    return path, 2, "no outcome"


def _inspect(tmp: Path) -> tuple[Path, int, str]:
    sample = {"id": 1, "epoch": 1, "input": "q", "target": "a", "scores": None,
              "messages": [{"role": "assistant", "content": "", "tool_calls": [
                  {"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}, "type": "function"}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "a.py", "function": "bash"}],
              "error": {"message": "RuntimeError: sandbox died", "traceback": ""}}
    log = {"version": 2, "status": "error", "eval": {"eval_id": "E", "task": "t", "model": "m", "task_id": "T"},
           "samples": [sample]}
    path = tmp / "log.json"
    path.write_text(json.dumps(log))
    return path, 1, "no scores"


def _openai_agents(tmp: Path) -> tuple[Path, int, str]:
    objs = [json.loads(line) for line in (DATA / "openai_agents" / "traces.jsonl").read_text().splitlines()
            if line.strip()]
    trace = next(o for o in objs if o["object"] == "trace" and "agentab.outcome" not in (o.get("metadata") or {}))
    keep = [o for o in objs if o.get("id") == trace["id"] or o.get("trace_id") == trace["id"]]
    path = tmp / "traces.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in keep))
    calls = sum(o["object"] == "trace.span" and o["span_data"]["type"] == "function" for o in keep)
    return path, calls, "no outcome"


def _tau2(tmp: Path) -> tuple[Path, int, str]:
    doc = json.loads((DATA / "tau2" / "airline_grok-3_3sims.json").read_text())
    doc["simulations"] = doc["simulations"][:1]
    doc["simulations"][0]["reward_info"] = None  # never evaluated
    path = tmp / "results.json"
    path.write_text(json.dumps(doc))
    calls = sum(len(m.get("tool_calls") or ()) for m in doc["simulations"][0]["messages"] if m["role"] == "assistant")
    return path, calls, "never evaluated"


def _mini_swe_agent(tmp: Path) -> tuple[Path, int, str]:
    source = DATA / "mini_swe_agent" / "v2_tool_scripted.traj.json"
    path = tmp / source.name
    shutil.copy(source, path)
    doc = json.loads(source.read_text())
    calls = sum(len((m.get("extra") or {}).get("actions") or ()) for m in doc["messages"] if m["role"] == "assistant")
    return path, calls, "SWE-bench's evaluation report"


def _swe_agent(tmp: Path) -> tuple[Path, int, str]:
    source = DATA / "swe_agent" / "marshmallow-code__marshmallow-1867.traj"
    path = tmp / source.name
    shutil.copy(source, path)
    doc = json.loads(source.read_text())
    return path, sum(1 for e in doc["trajectory"] if e["action"].strip()), "a .traj records no verdict"


def _openhands(tmp: Path) -> tuple[Path, int, str]:
    line = _jsonl_gz(DATA / "openhands" / "multi_swe_bench_output.jsonl.gz")[0]  # inference output: no report
    path = tmp / "output.jsonl"
    path.write_text(json.dumps(line) + "\n")
    calls = sum("action" in e and e["source"] == "agent" and e["action"] not in {"message", "finish", "system", "recall"}
                for e in line["history"])
    return path, calls, "eval_infer"


def _claude_code(tmp: Path) -> tuple[Path, int, str]:
    source = DATA / "claude_code" / "short.jsonl"
    path = tmp / source.name
    shutil.copy(source, path)
    ids = set()
    for text in source.read_text().splitlines():
        line = json.loads(text) if text.strip() else {}
        content = (line.get("message") or {}).get("content") if line.get("type") == "assistant" else None
        ids.update(b["id"] for b in content or () if isinstance(b, dict) and b.get("type") == "tool_use")
    return path, len(ids), "does not record"


def _atif(tmp: Path) -> tuple[Path, int, str]:
    source = DATA / "atif" / "hello-world__Timeou4"
    shutil.copytree(source, tmp / source.name)
    path = tmp / source.name / "agent" / "trajectory.json"  # no result.json beside it: no verifier reward
    doc = json.loads(path.read_text())
    return path, sum(len(s.get("tool_calls") or ()) for s in doc["steps"] if s["source"] == "agent"), "result.json"


CASES: dict[str, Callable[[Path], tuple[Path, int, str]]] = {
    "openai": _openai, "anthropic": _anthropic, "inspect": _inspect, "openai-agents": _openai_agents,
    "tau2": _tau2, "mini-swe-agent": _mini_swe_agent, "swe-agent": _swe_agent, "openhands": _openhands,
    "claude-code": _claude_code, "atif": _atif,
}


def read(name: str, path: Path) -> list[Item]:
    fmt = formats.get(name)
    return list(fmt.read_file(path, formats.resolve_fields(fmt.fields, None, formats.RUN_FIELDS)))


def test_every_reader_but_otel_and_our_record_has_a_case():
    assert set(CASES) == set(formats.available()) - {"record", "otel"}


@pytest.mark.parametrize("name", CASES)
def test_a_file_without_its_outcome_gives_the_whole_run_and_names_the_outcome(name, tmp_path):
    path, n_steps, words = CASES[name](tmp_path)
    assert n_steps > 0
    (item,) = read(name, path)
    assert item.record is not None and item.reason is None, item
    assert "outcome" in item.missing and words in item.missing["outcome"][1]
    record = item.record if isinstance(item.record, dict) else item.record.to_record()
    assert "outcome" not in record and not set(item.missing) & set(record)
    assert len(record["steps"]) == n_steps
    settled = settle(item)
    first = next(iter(item.missing.values()))
    assert settled.record is None and (settled.field, settled.reason) == first and settled.line == item.line


@pytest.mark.parametrize("name", CASES)
def test_the_record_with_the_outcome_filled_loads(name, tmp_path):
    """What the loader does when an outcomes table fills the field: the rest of the record is valid as read."""
    path, n_steps, _ = CASES[name](tmp_path)
    (item,) = read(name, path)
    record = item.record if isinstance(item.record, dict) else item.record.to_record()
    filled = {**record, **{key: {"run_id": "r", "task_id": "t", "seed": 0, "outcome": True}[key]
                           for key in item.missing}}
    runs = agentab.load_traces([filled]).runs
    assert runs.n_steps.tolist() == [n_steps] and runs.outcome.tolist() == [True]


@pytest.mark.parametrize("name", CASES)
def test_load_traces_rejects_a_file_without_its_outcome_with_the_readers_reason(name, tmp_path):
    path, _, words = CASES[name](tmp_path)
    (item,) = read(name, path)
    traces = agentab.load_traces(path, format=name, strict=False)
    assert len(traces.runs) == 0 and len(traces.rejected) == 1
    rejection = traces.rejected.iloc[0]
    field, reason = next(iter(item.missing.values()))
    assert rejection.field == field and rejection.reason.startswith(reason) and words in rejection.reason


def test_absent_keeps_the_first_reason_and_settle_keeps_the_source():
    missing: dict[str, tuple[str | None, str]] = {}
    absent(missing, "task_id", "instance_id", "no task")
    absent(missing, "outcome", None, "no verdict")
    absent(missing, "task_id", "other", "later")
    assert missing == {"task_id": ("instance_id", "no task"), "outcome": (None, "no verdict")}
    item = Item(4, record={"run_id": "r", "steps": []}, source="a.eval:samples/1.json", missing=missing)
    settled = settle(item)
    assert (settled.line, settled.field, settled.reason, settled.source) == (4, "instance_id", "no task",
                                                                             "a.eval:samples/1.json")
    assert settled.record is None and settled.missing is None
    whole = Item(1, record={"run_id": "r"})
    assert settle(whole) is whole and settle(Item(1, record={"run_id": "r"}, missing={})).record == {"run_id": "r"}
    rejected = Item(2, field="x", reason="bad")
    assert settle(rejected) is rejected
