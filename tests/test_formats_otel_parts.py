"""A large OTel JSON Lines file read in parts by several processes, the column reader in each part.

:func:`agentab.formats.otel.read_part` reads a byte range of whole lines in columns (:mod:`._columns`) when
that reader reads it; :func:`agentab.formats.otel.read_whole` declines a file whose lines hold whole traces,
so that the loader splits it. These tests check that the parts give exactly what the whole file gives: items
at every cut, tables at two and three processes, rejections and a strict load's error, and that a trace cut
at a part edge is read whole.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agentab
from agentab.formats import otel
from agentab.formats.decode import Prepared
from agentab.formats.otel import _columns

_T0 = 1_767_225_600_000_000_000


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _run(n: int, n_tools: int = 3, **extra: Any) -> list[dict[str, Any]]:
    """The spans of run ``n`` (its own trace): an agent span, and a model call and a tool call per step."""
    trace = f"{n + 1:032x}"
    root = f"{(n + 1) << 16:016x}"
    t = _T0 + n * 10**9
    attrs = {"gen_ai.operation.name": "invoke_agent", "agentab.task_id": f"task-{n % 4}", "agentab.seed": n,
             "agentab.arm": "a" if n % 2 else "b", "agentab.outcome": n % 3 == 0, **extra}
    spans = [{"traceId": trace, "spanId": root, "name": "invoke_agent coder", "startTimeUnixNano": str(t),
              "endTimeUnixNano": str(t + 900_000_000), "attributes": [_attr(k, v) for k, v in attrs.items()],
              "status": {}}]
    for k in range(n_tools):
        start = t + 1000 + k * 10**6
        spans.append({"traceId": trace, "spanId": f"{((n + 1) << 16) + 2 * k + 1:016x}", "parentSpanId": root,
                      "name": "chat m", "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 400_000),
                      "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.usage.input_tokens", 10 + k),
                                     _attr("gen_ai.usage.output_tokens", 2 + n % 5)], "status": {}})
        failed = (n + k) % 4 == 0
        spans.append({"traceId": trace, "spanId": f"{((n + 1) << 16) + 2 * k + 2:016x}", "parentSpanId": root,
                      "name": "execute_tool ls", "startTimeUnixNano": str(start + 500_000),
                      "endTimeUnixNano": str(start + 900_000),
                      "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "ls"),
                                     _attr("gen_ai.tool.call.arguments", json.dumps({"path": f"src/{n}/{k}"})),
                                     _attr("gen_ai.tool.call.result", json.dumps({"files": k}))],
                      "status": {"code": 2, "message": "boom"} if failed else {}})
    return spans


def _batch(spans: list[dict[str, Any]], service: str = "svc") -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", service)]},
                                          "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]})


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _whole_trace_lines(n_lines: int, per_line: int = 2, first: int = 0) -> list[str]:
    return [_batch([s for r in range(first + i * per_line, first + (i + 1) * per_line) for s in _run(r, 1 + r % 4)])
            for i in range(n_lines)]


def _items(items: list[Any]) -> list[Any]:
    return [(item.line, item.field, item.reason,
             item.record.to_record() if isinstance(item.record, Prepared) else item.record, item.missing)
            for item in items]


def _line_starts(path: Path) -> list[int]:
    data = path.read_bytes()
    starts, at = [], 0
    for line in data.splitlines(keepends=True):
        starts.append(at)
        at += len(line)
    return starts


@pytest.fixture
def column_reads(monkeypatch):
    """Every call of the column reader in this process: True where it read its lines, False where it declined."""
    calls: list[bool] = []
    read = _columns.read

    def spy(*args, **kwargs):
        part = read(*args, **kwargs)
        calls.append(part is not None)
        return part

    monkeypatch.setattr(_columns, "read", spy)
    return calls


# --------------------------------------------------------------------------- #
# read_part: a byte range of whole lines, in columns
# --------------------------------------------------------------------------- #
def test_parts_at_every_cut_give_the_whole_file_s_items(tmp_path, column_reads):
    path = _write(tmp_path / "t.jsonl", _whole_trace_lines(6))
    size = path.stat().st_size
    whole = otel.read_part(path, 0, size, 1)
    assert column_reads == [True] and len(whole.items) == 12
    starts = _line_starts(path)
    for k, cut in enumerate(starts[1:], start=1):
        head, tail = otel.read_part(path, 0, cut, 1), otel.read_part(path, cut, size, k + 1)
        assert _items(head.items) + _items(tail.items) == _items(whole.items), k
        assert head.keys.isdisjoint(tail.keys) and head.keys | tail.keys == whole.keys
    for a, b in [(1, 3), (2, 5), (1, 5)]:  # three parts
        parts = [otel.read_part(path, lo, hi, line + 1)
                 for lo, hi, line in [(0, starts[a], 0), (starts[a], starts[b], a), (starts[b], size, b)]]
        assert [item for p in parts for item in _items(p.items)] == _items(whole.items)
    assert all(column_reads)  # every part read in columns
    assert _items(whole.items) == _items(otel.read_file(path, None))


def test_a_trace_cut_at_a_part_edge_shares_its_key(tmp_path, column_reads):
    runs = [_run(r) for r in range(4)]
    lines = [_batch(runs[0][:3]), _batch(runs[1] + runs[0][3:]), _batch(runs[2] + runs[3])]
    path = _write(tmp_path / "t.jsonl", lines)
    starts, size = _line_starts(path), path.stat().st_size
    head, tail = otel.read_part(path, 0, starts[1], 1), otel.read_part(path, starts[1], size, 2)
    assert f"trace:{1:032x}" in head.keys & tail.keys  # the loader reads the file whole
    assert len(otel.read_part(path, 0, size, 1).items) == 4


# --------------------------------------------------------------------------- #
# read_whole: declines a file of whole traces per line (the loader splits it), reads one whose traces cross
# --------------------------------------------------------------------------- #
def test_whole_traces_per_line_are_left_to_the_parts(tmp_path):
    path = _write(tmp_path / "t.jsonl", _whole_trace_lines(6))
    assert not otel._traces_cross_lines(path)
    assert otel.read_whole(path, None) is None


def test_traces_across_lines_are_read_whole(tmp_path, monkeypatch):
    spans = [s for r in range(40) for s in _run(r)]
    random.Random(3).shuffle(spans)  # exported by time, as a collector's batches are: traces cross lines
    path = _write(tmp_path / "t.jsonl", [_batch(spans[i:i + 25]) for i in range(0, len(spans), 25)])
    assert otel._traces_cross_lines(path)
    monkeypatch.setattr(otel, "_WINDOW", 64)  # a window holding no whole id: nothing seen crosses
    assert not otel._traces_cross_lines(path)
    monkeypatch.undo()
    whole = otel.read_whole(path, None)
    assert whole is not None and _items(whole.items) == _items(otel.read_file(path, None))


def test_one_line_has_no_boundary_to_look_at(tmp_path):
    path = _write(tmp_path / "t.jsonl", [_batch([s for r in range(3) for s in _run(r)])])
    assert not otel._traces_cross_lines(path)
    path.write_bytes(b"")
    assert not otel._traces_cross_lines(path)


# --------------------------------------------------------------------------- #
# The loader: parts in several processes against one read
# --------------------------------------------------------------------------- #
@pytest.fixture
def split(monkeypatch):
    """Every file 'large', cut evenly; what each parallel read returned (True: its parts were merged)."""
    import agentab.traces._parallel
    import agentab.traces._reader

    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)  # the workers read every part but the first
    calls: list[bool] = []
    read_parallel = agentab.traces._reader.read_parallel
    monkeypatch.setattr(agentab.traces._reader, "read_parallel",
                        lambda *a, **k: calls.append(read_parallel(*a, **k)) or calls[-1])
    return calls


def _assert_same(a: agentab.Traces, b: agentab.Traces) -> None:
    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.rejected, b.rejected)
    assert a.n_read == b.n_read


def test_parts_in_columns_equal_one_read(tmp_path, split, column_reads):
    path = _write(tmp_path / "t.jsonl", _whole_trace_lines(12, per_line=3))
    serial = agentab.load_traces(path, format="otel", workers=1)
    assert column_reads == [True]
    for workers in (2, 3):
        column_reads.clear()
        _assert_same(agentab.load_traces(path, format="otel", workers=workers), serial)
        assert column_reads == [True]  # this process's part (the workers' are read by the same code)
    assert split == [True, True] and len(serial.runs) == 36


def test_a_trace_cut_at_the_part_edge_is_read_whole(tmp_path, split, monkeypatch):
    lines = _whole_trace_lines(8)
    middle = _run(100)
    lines[3] = _batch(json.loads(lines[3])["resourceSpans"][0]["scopeSpans"][0]["spans"] + middle[:4])
    lines[4] = _batch(middle[4:] + json.loads(lines[4])["resourceSpans"][0]["scopeSpans"][0]["spans"])
    path = _write(tmp_path / "t.jsonl", lines)
    serial = agentab.load_traces(path, format="otel", workers=1)
    assert len(serial.runs) == 17
    monkeypatch.setattr(otel, "_traces_cross_lines", lambda path: False)  # a wrong guess: the parts are tried
    _assert_same(agentab.load_traces(path, format="otel", workers=2), serial)
    assert split == [False]  # they shared the trace: discarded, the file read whole
    monkeypatch.undo()
    assert otel._traces_cross_lines(path)


def test_rejections_and_a_strict_load_s_error_as_one_read(tmp_path, split, column_reads):
    lines = _whole_trace_lines(10)
    orphan = [{"traceId": "ab" * 16, "spanId": "cd" * 8, "parentSpanId": "ef" * 8, "name": "execute_tool ls",
               "startTimeUnixNano": str(_T0), "endTimeUnixNano": str(_T0 + 5),
               "attributes": [_attr("gen_ai.operation.name", "execute_tool")]}]
    bad_seed = _run(200, **{"agentab.seed": "three"})
    lines[1:1] = ["{not json", _batch(orphan)]
    lines.append(_batch(bad_seed))
    path = _write(tmp_path / "t.jsonl", lines)
    serial = agentab.load_traces(path, format="otel", workers=1, strict=False)
    assert list(serial.rejected["line"]) == [2, 3, 13] and len(serial.runs) == 20
    for workers in (2, 3):
        column_reads.clear()
        _assert_same(agentab.load_traces(path, format="otel", workers=workers, strict=False), serial)
        assert len(column_reads) == 1  # this process read its one part (the bad lines' parts, read by workers)
    assert split == [True, True]
    with pytest.raises(agentab.TraceError) as one:
        agentab.load_traces(path, format="otel", workers=1)
    with pytest.raises(agentab.TraceError) as parts:
        agentab.load_traces(path, format="otel", workers=2)
    assert str(parts.value) == str(one.value) and "line 2" in str(one.value)
