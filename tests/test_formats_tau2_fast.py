"""tau2's fast path (plain simulations decoded without unread keys, built in columns) gives exactly what the
reader's usual path gives: the same runs, steps and rejections, on the real fixtures and on edited copies that
leave the plain case in every way the fast path checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

import agentab
from agentab.formats import _fast_path, tau2
from agentab.formats.decode import Prepared

TAU2 = Path(__file__).parent / "data" / "tau2"
AIRLINE = TAU2 / "airline_grok-3_3sims.json"


def frames(source: Path) -> list[pd.DataFrame]:
    traces = agentab.load_traces(source, format="tau2", strict=False)
    return [t.reset_index(drop=True) for t in (traces.runs, traces.steps, traces.rejected)]


def usual(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the fast path off: every simulation read the reader's usual way."""
    monkeypatch.setattr(_fast_path, "tau2_document", lambda body: None)
    monkeypatch.setattr(_fast_path, "tau2_simulation", lambda raw: None)


def assert_same(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = frames(source)
    with monkeypatch.context() as patch:
        usual(patch)
        slow = frames(source)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("path", sorted(TAU2.glob("*.json*")), ids=lambda p: p.name)
def test_real_files_read_the_same_both_ways(path, monkeypatch):
    assert_same(path, monkeypatch)


def test_the_real_simulations_take_the_fast_path():
    items = list(tau2.read_file(AIRLINE, tau2.FIELDS))
    assert items and all(type(item.record) is Prepared for item in items)


def _edited(sim: dict) -> list[dict]:
    """Copies of a simulation, each out of the plain case one way."""
    messages = sim["messages"]
    tool = next(k for k, m in enumerate(messages) if m["role"] == "tool")
    call = next(k for k, m in enumerate(messages) if m.get("tool_calls"))
    out = []
    for edit in range(9):
        s = copy.deepcopy(sim)
        m = s["messages"]
        if edit == 0:
            s["extra_key"] = "kept in metadata"  # a key beyond tau2's own
        elif edit == 1:
            m[tool]["id"] = "no-such-call"  # an answer to no call: a rejection
        elif edit == 2:
            m[call]["role"] = "bogus"
        elif edit == 3:
            m[call]["timestamp"] = "2025-10-05T07:52:53Z"  # a time with an offset
        elif edit == 4:
            m[call]["timestamp"] = "not a time"
        elif edit == 5:
            m[call]["usage"] = {"prompt_tokens": 2**63, "completion_tokens": 1}  # beyond 64 bits
        elif edit == 6:
            m[call]["tool_calls"][0]["arguments"] = '{"a": 1}'  # arguments as JSON text
        elif edit == 7:
            m[tool]["error"] = True
        else:
            s["reward_info"] = None  # never evaluated: the outcome is missing
        out.append(s)
    return out


def test_edited_simulations_read_the_same_both_ways(tmp_path, monkeypatch):
    doc = json.loads(AIRLINE.read_text())
    doc["simulations"] = [e for sim in doc["simulations"] for e in _edited(sim)]
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    assert_same(path, monkeypatch)
    lines = tmp_path / "edited.jsonl"
    lines.write_text("".join(json.dumps(sim) + "\n" for sim in doc["simulations"]) + "not json\n")
    assert_same(lines, monkeypatch)
