"""SWE-agent's fast decoding (entries and history items without unread keys) gives exactly what decoding the
whole .traj gives, on the real fixtures and on edited copies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

import agentab
from agentab.formats import swe_agent

DATA = Path(__file__).parent / "data" / "swe_agent"
FILES = sorted(DATA.glob("*.traj"))


def frames(folder: Path) -> list[pd.DataFrame]:
    runs = sorted(p.as_posix() for p in folder.glob("*.traj"))
    outcomes = pd.DataFrame({"run_id": runs, "outcome": True})
    traces = agentab.load_traces(folder, format="swe-agent", strict=False, outcomes=outcomes)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def assert_same(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = frames(folder)
    with monkeypatch.context() as patch:
        patch.setattr(swe_agent, "_trimmed", lambda raw, fields: None)  # the fast path off
        slow = frames(folder)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)


def test_real_files_read_the_same_both_ways(tmp_path, monkeypatch):
    for path in FILES:
        (tmp_path / path.name).write_bytes(path.read_bytes())
        assert swe_agent._trimmed(path.read_bytes(), {}) is not None  # each takes the fast path
    assert_same(tmp_path, monkeypatch)


def test_edited_files_read_the_same_both_ways(tmp_path, monkeypatch):
    raw = json.loads(FILES[0].read_text())
    for edit in range(5):
        doc = copy.deepcopy(raw)
        if edit == 0:
            doc["extra_key"] = 1
        elif edit == 1:
            doc["trajectory"][0]["action"] = 5  # a rejection naming the entry
        elif edit == 2:
            doc["trajectory"].append("not an entry")
        elif edit == 3:
            doc["history"] = None
        else:
            doc["trajectory"][0]["execution_time"] = -1
        (tmp_path / f"edit{edit}.traj").write_text(json.dumps(doc))
    assert_same(tmp_path, monkeypatch)
