"""A load of a few large files reads them in parts over several processes, and gives exactly the serial result."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import format_files, make_record, same_traces, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

import agentab
import agentab.traces._parallel
import agentab.traces._plan
import agentab.traces._reader
from agentab import TraceError, load_traces


@pytest.fixture
def pieces(monkeypatch):
    """Every load of two or more files is 'large' and every file may be read in parts, so tests stay small; this
    process claims no chunk after its first (the workers read every other). The chunks of the last parallel load,
    and the folders of those merged from workers, are recorded."""
    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_FILES_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._reader, "PIECE_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)
    seen = {"merged": [], "chunks": []}
    read_part = agentab.traces._parallel._read_part
    monkeypatch.setattr(agentab.traces._parallel, "_read_part",
                        lambda out: seen["merged"].append(out) or read_part(out))
    send = agentab.traces._parallel.FileWorkers.send
    monkeypatch.setattr(agentab.traces._parallel.FileWorkers, "send", lambda self, k, manifest: (
        seen.__setitem__("chunks", manifest["chunks"]) or send(self, k, manifest)))
    return seen


def _two_files(tmp_path, per_file=40, bad=None):
    """Two record files, one per arm; ``bad``: {(arm, line): text} replaces a line."""
    bad = bad or {}
    paths = {}
    for arm in ("a", "b"):
        lines = [bad.get((arm, i), make_record(f"{arm}-{i}", task_id=f"t{i % 9}", seed=i, n_steps=i % 4, arm=arm))
                 for i in range(per_file)]
        paths[arm] = write_jsonl(tmp_path / f"{arm}.jsonl", lines)
    return paths


@pytest.mark.parametrize("workers", [2, 3])
def test_record_files_read_in_parts_equal_serial(tmp_path, pieces, workers):
    source = _two_files(tmp_path)
    same_traces(load_traces(source, workers=workers), load_traces(source, workers=1))
    parts = [chunk for chunk in pieces["chunks"] if len(chunk) > 2]
    assert {chunk[0] for chunk in parts} == {0, 1} and len(parts) >= 6  # both files were cut in several parts
    assert len(pieces["merged"]) >= len(parts) - 1  # and the workers read them (all but this process's first)


def test_parts_lenient_rejections_and_duplicates(tmp_path, pieces):
    bad = {("a", 3): "{oops", ("a", 30): json.dumps(make_record("a-2", arm="a")),
           ("b", 12): json.dumps(make_record("a-5", arm="b")), ("b", 35): json.dumps(make_record("b-35", seed="x"))}
    source = _two_files(tmp_path, bad=bad)
    parallel = load_traces(source, workers=3, strict=False)
    same_traces(parallel, load_traces(source, workers=1, strict=False))
    assert list(parallel.rejected["line"]) == [4, 31, 13, 36]
    assert parallel.rejected["reason"].str.contains(r"first seen in .*a\.jsonl, line 6\)").sum() == 1


def test_parts_strict_raises_the_serial_error(tmp_path, pieces):
    bad = {("b", 12): json.dumps(make_record("a-5", arm="b")), ("b", 35): "{oops"}
    source = _two_files(tmp_path, bad=bad)
    with pytest.raises(TraceError) as serial:
        load_traces(source, workers=1)
    with pytest.raises(TraceError) as parallel:
        load_traces(source, workers=3)
    assert str(parallel.value) == str(serial.value) and "duplicate run_id 'a-5'" in str(serial.value)


@pytest.fixture
def agents_files(tmp_path):
    """OpenAI Agents SDK exports, one per arm, as the format benchmark writes them."""
    paths = format_files(tmp_path / "formats", seed=5, n_tasks=8, n_seeds=3)[0]["openai-agents"]
    return {p.stem.removeprefix("openai-agents-"): p for p in paths}


def test_a_converted_format_read_in_parts_equals_serial(agents_files, pieces):
    serial = load_traces(agents_files, format="openai-agents", workers=1)
    parallel = load_traces(agents_files, format="openai-agents", workers=3)
    same_traces(parallel, serial)
    assert len(serial.runs) == 48 and len([c for c in pieces["chunks"] if len(c) > 2]) >= 6
    assert len(pieces["merged"]) >= 5


def test_a_trace_cut_between_parts_reads_its_file_whole(agents_files, pieces):
    # the spans of each trace written after the next trace's line: every part boundary cuts a trace in two
    path = agents_files["baseline"]
    lines = path.read_text().splitlines(keepends=True)
    traces = [i for i, line in enumerate(lines) if '"object": "trace"' in line]
    groups = [lines[a:b] for a, b in zip(traces, [*traces[1:], len(lines)])]
    shuffled = [group[0] for group in groups[:2]] + groups[0][1:]
    for previous, group in zip(groups[1:], groups[2:]):
        shuffled += [group[0], *previous[1:]]
    shuffled += groups[-1][1:]
    path.write_text("".join(shuffled))
    serial = load_traces(agents_files, format="openai-agents", workers=1)
    parallel = load_traces(agents_files, format="openai-agents", workers=3)
    same_traces(parallel, serial)
    assert serial.runs["arm"].value_counts().to_dict() == {"baseline": 24, "candidate": 24}


def test_a_crashed_worker_leaves_its_parts_to_this_process(tmp_path, pieces, monkeypatch):
    monkeypatch.setattr(agentab.traces._parallel, "_start", lambda command, out, stdin=None: subprocess.Popen(
        [sys.executable, "-c", "raise SystemExit(9)"]))
    source = _two_files(tmp_path)
    with pytest.warns(RuntimeWarning, match=r"worker process failed \(exit code 9\); its files were read"):
        parallel = load_traces(source, workers=2)
    same_traces(parallel, load_traces(source, workers=1))


def test_progress_counts_a_file_read_in_parts_once(tmp_path, pieces):
    source = _two_files(tmp_path)
    seen = {w: [] for w in (1, 3)}
    for workers in seen:
        load_traces(source, workers=workers, progress=lambda path, done, total, w=workers: seen[w].append(
            (path, done, total)))
    assert seen[3] == seen[1] and [done for _, done, _ in seen[1]] == [1, 2]


def test_which_files_are_read_in_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(agentab.traces._reader, "PIECE_MIN_BYTES", 100)
    reader = agentab.traces._reader._Reader(agentab.formats.decode.RecordDecoder(), 2)
    lines = write_jsonl(tmp_path / "x.jsonl", [make_record("r1"), make_record("r2")])
    array = tmp_path / "x.json"
    array.write_text(json.dumps([make_record("r1"), make_record("r2")]))
    packed = write_jsonl(tmp_path / "x.jsonl.gz", [make_record("r1"), make_record("r2")])
    weight = agentab.traces._plan.file_weight
    assert reader.piece_format(lines, weight(lines)) == "record"
    assert reader.piece_format(lines, 99) is None  # too light
    assert reader.piece_format(array, weight(array)) is None  # a JSON array is not cut at lines
    assert reader.piece_format(packed, weight(packed)) is None  # compressed
    otel = tmp_path / "otel.jsonl"  # the OTel reader reads a file whole faster (in columns)
    otel.write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": []}]}) + "\n" * 2)
    assert agentab.traces._reader._Reader(agentab.formats.decode.RecordDecoder(), 2, format="otel").piece_format(
        otel, 10**6) is None
    assert reader.chosen == []  # looking at a file's format is not reading it


def test_plan_pieces_cover_the_files_in_order():
    plan, chunks = agentab.traces._plan.plan_pieces, agentab.traces._plan.plan_chunks
    assert plan([5, 5, 5], [False] * 3, 2) == [(i, j, ()) for i, j in chunks([5, 5, 5], 2)]
    assert plan([5, 5], [True, True], 1) == [(0, 2, ())]
    two = plan([60, 40], [True, True], 2)
    assert [(i, j) for i, j, _ in two] == [(0, 1), (1, 2)] and all(cuts for _, _, cuts in two)
    assert two[0][2][0] == pytest.approx(100 / 4 / 60)  # the first chunk: a quarter of the load, as plan_chunks


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), min_size=1, max_size=12), st.integers(1, 5))
def test_plan_pieces_property(files, processes):
    weights, divisible = [w for w, _ in files], [d for _, d in files]
    planned = agentab.traces._plan.plan_pieces(weights, divisible, processes)
    covered = [k for i, j, _ in planned for k in range(i, j)]
    assert covered == list(range(len(weights)))  # every file once, in order
    for i, j, cuts in planned:
        if cuts:  # a file cut in parts: one divisible file, cut strictly inside, in order
            assert j == i + 1 and divisible[i] and 0 < cuts[0] and cuts[-1] < 1
            assert all(a < b for a, b in zip(cuts, cuts[1:]))
