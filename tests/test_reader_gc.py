"""The loader pauses the cyclic garbage collector over batches of files, and always turns it back on."""

from __future__ import annotations

import gc
import json

import pytest

import agentab
from agentab.errors import TraceError
from agentab.traces import _reader


def _write_runs(folder, n, bad_at=None):
    for i in range(n):
        record = {"run_id": f"r{i}", "task_id": f"t{i % 3}", "arm": "a", "seed": i, "outcome": True, "steps": []}
        text = "{not json" if i == bad_at else json.dumps(record)
        (folder / f"run{i:03d}.jsonl").write_text(text + "\n")


@pytest.mark.parametrize("batch", [1, 2, 256])
def test_collector_back_on_and_runs_the_same_at_any_batch(tmp_path, monkeypatch, batch):
    _write_runs(tmp_path, 7)
    monkeypatch.setattr(_reader, "GC_FILES", batch)
    traces = agentab.load_traces(tmp_path, workers=1)
    assert gc.isenabled()
    assert list(traces.runs["run_id"]) == [f"r{i}" for i in range(7)]


def test_collector_back_on_after_a_strict_load_raises(tmp_path, monkeypatch):
    _write_runs(tmp_path, 5, bad_at=3)
    monkeypatch.setattr(_reader, "GC_FILES", 2)
    with pytest.raises(TraceError) as raised:
        agentab.load_traces(tmp_path, workers=1)
    assert "run003" in str(raised.value)
    assert gc.isenabled()  # while the error (and its traceback) is still held


def test_collector_left_off_when_it_was_off(tmp_path):
    _write_runs(tmp_path, 3)
    gc.disable()
    try:
        agentab.load_traces(tmp_path, workers=1)
        assert not gc.isenabled()
    finally:
        gc.enable()
