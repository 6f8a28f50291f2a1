"""OpenHands' fast path (plain output lines decoded without unread event keys, built in columns) gives exactly
what the reader's usual path gives, on the real fixtures and on edited copies."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

import agentab
from agentab.formats import openhands
from agentab.formats.decode import Prepared

DATA = Path(__file__).parent / "data" / "openhands"
OUTPUT = DATA / "multi_swe_bench_output.jsonl.gz"


def frames(path: Path, tasks: list[str]) -> list[pd.DataFrame]:
    outcomes = pd.DataFrame({"task_id": tasks, "seed": 0, "outcome": True}) if tasks else None
    traces = agentab.load_traces(path, format="openhands", strict=False, outcomes=outcomes)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def assert_same(path: Path, tasks: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = frames(path, tasks)
    with monkeypatch.context() as patch:
        patch.setattr(openhands, "line", lambda raw: None)  # the fast path off
        slow = frames(path, tasks)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)


def lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json*")), ids=lambda p: p.name)
def test_real_files_read_the_same_both_ways(path, monkeypatch):
    tasks = sorted({line["instance_id"] for line in lines(path)}) if path.suffix == ".gz" else []
    assert_same(path, tasks, monkeypatch)


def test_the_real_output_takes_the_fast_path(tmp_path):
    path = tmp_path / "output.jsonl"  # as SWE-bench's evaluation leaves it: with the report
    path.write_text("".join(json.dumps({**line, "test_result": {**line["test_result"], "report": {"resolved": True}}})
                            + "\n" for line in lines(OUTPUT)))
    items = list(openhands.read_file(path, openhands.FIELDS))
    assert len(items) == 3 and all(type(item.record) is Prepared for item in items)
    assert all(isinstance(item.record, dict) for item in openhands.read_file(OUTPUT, openhands.FIELDS))


def test_edited_lines_read_the_same_both_ways(tmp_path, monkeypatch):
    first = lines(OUTPUT)[0]
    history = first["history"]
    action = next(k for k, e in enumerate(history) if e.get("tool_call_metadata") and "action" in e)
    answer = next(k for k, e in enumerate(history) if e.get("cause") == history[action]["id"])
    edited = []
    for edit in range(8):
        line = copy.deepcopy(first)
        line["test_result"]["report"] = {"resolved": edit % 2 == 0}
        h = line["history"]
        line["instance_id"] = f"edit-{edit}"
        if edit == 0:
            line["extra_key"] = 1
        elif edit == 1:
            h[action]["action"] = "no_such_action"
            del h[action]["tool_call_metadata"]
        elif edit == 2:
            h.append(copy.deepcopy(h[answer]))  # a second observation of one action: a rejection
        elif edit == 3:
            h[answer]["extras"] = {"metadata": {"exit_code": 2}}
        elif edit == 4:
            line["metrics"]["accumulated_token_usage"] = {"prompt_tokens": 10**7, "completion_tokens": 10**6}
        elif edit == 5:
            line["history"] = [e for e in h if "action" not in e or e["action"] in ("system", "message")]
        elif edit == 6:
            h[action]["timestamp"] = "2025-05-01T10:00:00+02:00"
        else:
            h[action]["args"] = "not an object"
        edited.append(line)
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in edited))
    assert_same(path, [line["instance_id"] for line in edited], monkeypatch)
