"""Decoding a large JSONL file over several processes gives exactly the serial result."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import make_record, write_jsonl

import agentab.traces._parallel
import agentab.traces._plan
import agentab.traces._reader
from agentab import TraceError, load_traces


@pytest.fixture
def split_small_files(monkeypatch):
    """Make every file 'large' and split it evenly, so tests stay small."""
    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)  # the workers read every part but the first


def _lines(n, bad=()):
    lines = []
    for i in range(n):
        rec = make_record(f"r{i}", task_id=f"t{i % 7}", seed=i, n_steps=i % 5)
        lines.append(bad[i] if i in bad else rec)
    return lines


def _assert_same(a, b):
    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.rejected, b.rejected)
    assert a.n_read == b.n_read


def test_plan_parts_cut_at_line_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)  # the workers read every part but the first
    path = write_jsonl(tmp_path / "x.jsonl", _lines(50))
    data = path.read_bytes()
    parts = agentab.traces._plan.plan_parts(path, 3)
    assert len(parts) == 3 and parts[0][0] == 0 and parts[-1][1] == len(data)
    for (start, end, _), (next_start, _, _) in zip(parts, parts[1:]):
        assert end == next_start and data[start - 1:start] in (b"", b"\n")
    for start, _, first_line in parts:
        assert data.count(b"\n", 0, start) + 1 == first_line


def test_parallel_equals_serial(tmp_path, split_small_files, monkeypatch):
    merged = []
    read_part = agentab.traces._parallel._read_part
    monkeypatch.setattr(agentab.traces._parallel, "_read_part", lambda out: merged.append(out) or read_part(out))
    path = write_jsonl(tmp_path / "x.jsonl", _lines(60))
    _assert_same(load_traces(path, workers=3), load_traces(path, workers=1))
    parts = agentab.traces._plan.plan_parts(path, 3 * agentab.traces._plan.CHUNKS_PER_PROCESS)
    assert len(merged) == len(parts) - 1 == 17  # the workers really decoded every part but the first


def test_parallel_lenient_accounting_and_cross_part_duplicates(tmp_path, split_small_files):
    bad = {5: "{oops", 33: make_record("r2"), 47: make_record("r47", seed="x"), 58: make_record("r1")}
    path = write_jsonl(tmp_path / "x.jsonl", _lines(60, bad))
    serial = load_traces(path, workers=1, strict=False)
    parallel = load_traces(path, workers=3, strict=False)
    _assert_same(parallel, serial)
    assert list(parallel.rejected["line"]) == [6, 34, 48, 59]
    assert parallel.n_read == 60 == len(parallel.runs) + len(parallel.rejected)


def test_parallel_strict_raises_the_earliest_problem(tmp_path, split_small_files):
    # a duplicate in the last part of a run id from the first part comes before a type error after it
    bad = {50: make_record("r3"), 55: make_record("r55", seed="x")}
    path = write_jsonl(tmp_path / "x.jsonl", _lines(60, bad))
    with pytest.raises(TraceError, match=r"line 51, field run_id: duplicate run_id 'r3' \(first seen in .*x\.jsonl, line 4\)"):
        load_traces(path, workers=3)


def test_a_failed_worker_costs_only_time(tmp_path, split_small_files, monkeypatch):
    def cannot_start(*args, **kwargs):
        raise OSError("no processes here")

    monkeypatch.setattr(agentab.traces._parallel, "_launch", cannot_start)
    path = write_jsonl(tmp_path / "x.jsonl", _lines(40, {30: "{oops"}))
    with pytest.warns(RuntimeWarning, match=r"worker process failed \(could not start: no processes here\)"):
        parallel = load_traces(path, workers=2, strict=False)
    _assert_same(parallel, load_traces(path, workers=1, strict=False))


def test_a_crashed_worker_costs_only_time(tmp_path, split_small_files, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setattr(agentab.traces._parallel, "_launch", lambda *a: subprocess.Popen(
        [sys.executable, "-c", "raise SystemExit(3)"]))
    path = write_jsonl(tmp_path / "x.jsonl", _lines(40))
    with pytest.warns(RuntimeWarning, match=r"worker process failed \(exit code 3\)"):
        parallel = load_traces(path, workers=2)
    _assert_same(parallel, load_traces(path, workers=1))


def test_workers_argument_is_checked():
    with pytest.raises(TypeError, match=r"`workers` must be a positive integer or None, got 0"):
        load_traces([make_record()], workers=0)


@pytest.mark.slow
def test_duplicate_messages_and_shadowing_match_serial(tmp_path, split_small_files):
    # "r3" first at line 4; again at lines 40 and 55 (both in later parts); a rejected "r50" is followed by a valid one
    bad = {39: make_record("r3"), 54: make_record("r3"),
           49: make_record("r50", steps=[{"index": 0, "tool": "t", "args": {}, "started_at": "soon"}]),
           57: make_record("r50")}
    path = write_jsonl(tmp_path / "x.jsonl", _lines(60, bad))
    for workers in (2, 3, 5):
        _assert_same(load_traces(path, workers=workers, strict=False), load_traces(path, workers=1, strict=False))
    rejected = load_traces(path, workers=3, strict=False).rejected
    assert rejected["reason"].str.contains(r"first seen in .*x\.jsonl, line 4\)").sum() == 2


def test_empty_file_on_the_parallel_path(tmp_path, split_small_files):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(TraceError, match=r"no trace records found"):
        load_traces(path, workers=2)


def test_a_worker_starts_without_pandas_or_the_package_init(tmp_path):
    # a worker's start-up is paid on every parallel read: it imports the loader's modules only
    import subprocess
    import sys

    path = write_jsonl(tmp_path / "x.jsonl", _lines(5))
    out = tmp_path / "part"
    out.mkdir()
    code = agentab.traces._parallel._BOOTSTRAP + (
        "; _worker(sys.argv[1:]); print(sorted(name for name in sys.modules if name.split('.')[0] in "
        "('pandas', 'scipy', 'statsmodels', 'matplotlib') or name.split('.')[:2] in "
        "(['agentab', 'comparison'], ['agentab', 'scoring'], ['agentab', 'stats'])))")
    package = agentab.traces._parallel.PACKAGE_FOLDER
    (tmp_path / "claims").mkdir()
    parts = [[0, 0, 1, 0], [0, path.stat().st_size, 1, 0]]  # the first part is the parent's
    done = subprocess.run([sys.executable, "-c", code, package, str(path), "", str(out), "record", "{}",
                           str(tmp_path / "claims"), json.dumps(parts)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert agentab.traces._parallel._read_part(out / "part1")[0].n_read == 5
