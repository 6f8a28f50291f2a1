"""mini-SWE-agent's fast path (v1 text-mode trajectories decoded without unread keys, built in columns) gives
exactly what the reader's usual path gives, on the real fixtures and on edited copies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

import agentab
from agentab.formats import mini_swe_agent
from agentab.formats.decode import Prepared

DATA = Path(__file__).parent / "data" / "mini_swe_agent"
FILES = sorted(DATA.glob("*.traj.json"))
V1 = DATA / "django__django-12143.traj.json"


def frames(folder: Path) -> list[pd.DataFrame]:
    tasks = sorted(p.name.removesuffix(".traj.json") for p in folder.glob("*.traj.json"))
    outcomes = pd.DataFrame({"task_id": tasks, "seed": 0, "outcome": True})
    traces = agentab.load_traces(folder, format="mini-swe-agent", strict=False, outcomes=outcomes)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def assert_same(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = frames(folder)
    with monkeypatch.context() as patch:
        patch.setattr(mini_swe_agent, "trajectory", lambda body: None)  # the fast path off
        slow = frames(folder)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)


def test_real_files_read_the_same_both_ways(tmp_path, monkeypatch):
    for path in FILES:
        (tmp_path / path.name).write_bytes(path.read_bytes())  # the outcome from a table: dicts
        (tmp_path / f"with-outcome-{path.name}").write_text(json.dumps({**json.loads(path.read_text()), "outcome": 1}))
    assert_same(tmp_path, monkeypatch)


def test_the_real_v1_file_takes_the_fast_path(tmp_path):
    path = tmp_path / V1.name
    path.write_text(json.dumps({**json.loads(V1.read_text()), "outcome": True}))  # as the docs have users add
    (item,) = mini_swe_agent.read_file(path, mini_swe_agent.FIELDS)
    assert type(item.record) is Prepared and item.missing is None
    (without,) = mini_swe_agent.read_file(V1, mini_swe_agent.FIELDS)  # the outcome left to the loader: None
    assert type(without.record) is Prepared and without.record.outcome is None
    assert list(without.missing) == ["outcome"]


def test_edited_trajectories_read_the_same_both_ways(tmp_path, monkeypatch):
    raw = json.loads(V1.read_text())
    assistant = next(k for k, m in enumerate(raw["messages"]) if m["role"] == "assistant")
    for edit in range(8):
        traj = {**copy.deepcopy(raw), "outcome": True}
        m = traj["messages"]
        if edit == 0:
            traj["extra_key"] = 1  # a key beyond mini-SWE-agent's
        elif edit == 1:
            m[assistant]["extra"]["response"]["usage"]["prompt_tokens"] = -1  # a rejection
        elif edit == 2:
            m[assistant]["extra"]["cost"] = 0  # unknown, not 0
        elif edit == 3:
            m[assistant]["content"] = "no action here"  # a format error
        elif edit == 4:
            m[assistant + 1]["content"] = "neither an output nor a timeout"
        elif edit == 5:
            m[assistant]["extra"]["response"]["usage"]["completion_tokens_details"] = {"reasoning_tokens": 10**9}
        elif edit == 6:
            m[assistant]["role"] = "bogus"
        else:
            traj["seed"] = 2**63  # beyond 64 bits
        (tmp_path / f"edit{edit}.traj.json").write_text(json.dumps(traj))
    assert_same(tmp_path, monkeypatch)
