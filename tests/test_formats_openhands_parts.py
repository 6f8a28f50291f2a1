"""OpenHands ``output.jsonl`` read in parts over several processes gives exactly what one read gives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

import agentab.traces._parallel
import agentab.traces._reader
from agentab import TraceError, load_traces
from agentab.formats import openhands

DATA = Path(__file__).parent / "data" / "openhands"


@pytest.fixture
def split_small_files(monkeypatch):
    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)  # the workers read every part but the first


def _same(a, b):
    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.rejected, b.rejected)
    assert a.n_read == b.n_read


def _output(tmp_path, extra=()):
    """The real fixtures' lines (both files, uncompressed), each line four times with its own instance id, plus
    ``extra`` lines at given positions."""
    lines = []
    for name in ("multi_swe_bench_output.jsonl.gz", "sdk_openagentsafety_output.jsonl.gz"):
        lines += [line for line in gzip.decompress((DATA / name).read_bytes()).splitlines() if line.strip()]
    out = []
    for copy in range(4):
        for raw in lines:
            rec = json.loads(raw)
            rec["instance_id"] = f"{rec['instance_id']}-{copy}"
            rec.setdefault("test_result", {}).setdefault("report", {}).setdefault("resolved", copy % 2 == 0)
            out.append(json.dumps(rec))
    for position, text in extra:
        out.insert(position, text)
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def test_splits_only_json_lines(tmp_path):
    assert openhands.splits(_output(tmp_path))
    assert not openhands.splits(DATA / "basic_gui_mode.json")  # an event stream


@pytest.mark.parametrize("workers", [2, 3])
def test_parts_equal_one_read(tmp_path, split_small_files, workers, monkeypatch):
    merged = []
    read_part = agentab.traces._parallel._read_part
    monkeypatch.setattr(agentab.traces._parallel, "_read_part", lambda out: merged.append(out) or read_part(out))
    path = _output(tmp_path)
    parallel = load_traces(path, format="openhands", workers=workers)
    _same(parallel, load_traces(path, format="openhands", workers=1))
    assert len(parallel.runs) > 4 and len(merged) >= workers - 1  # the workers really read parts


def test_rejections_and_duplicates_across_parts(tmp_path, split_small_files):
    path = _output(tmp_path, extra=[(1, "{oops"), (3, "[1, 2]")])
    first = json.loads(path.read_text().splitlines()[0])
    with path.open("a") as fh:  # the first run again at the end: a duplicate in the last part
        fh.write(json.dumps(first) + "\n")
    serial = load_traces(path, format="openhands", workers=1, strict=False)
    parallel = load_traces(path, format="openhands", workers=3, strict=False)
    _same(parallel, serial)
    assert len(serial.rejected) >= 3
    with pytest.raises(TraceError) as one:
        load_traces(path, format="openhands", workers=1)
    with pytest.raises(TraceError) as parts:
        load_traces(path, format="openhands", workers=3)
    assert str(parts.value) == str(one.value)


def test_read_part_numbers_lines_from_the_part(tmp_path):
    path = _output(tmp_path)
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    line = data.count(b"\n", 0, cut) + 1
    head = openhands.read_part(path, 0, cut, 1)
    tail = openhands.read_part(path, cut, len(data), line)
    whole = list(openhands.read_file(path))
    assert [i.line for i in head.items + tail.items] == [i.line for i in whole]
    assert head.keys == tail.keys == frozenset()
