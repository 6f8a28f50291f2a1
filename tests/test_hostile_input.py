"""Hostile input: bounded decompression, refused non-files, unreadable folders, and lenient loading that keeps
every good record when one record is corrupt (issue 16, items 1 and 2). The slow bombs are in
``benchmarks/bench_bombs.py``; everything here runs in a second or two."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentab import formats, load_traces
from agentab.errors import TraceError
from agentab.formats import files
from agentab.traces import _load


def _record(i: int) -> str:
    return json.dumps({"run_id": f"r{i}", "task_id": f"t{i % 2}", "seed": i, "outcome": i % 3 == 0,
                       "steps": [{"index": 0, "tool": "ls", "args": {"path": f"p{i}"},
                                  "observation": {"status": "ok"}, "tokens_in": 10 + i, "tokens_out": 2}]})


def _openai(i: int) -> str:
    return formats.get("openai").example.replace('"r1"', f'"r{i}"').replace('"t1"', f'"t{i % 2}"')


def _otel(i: int) -> str:
    return (formats.get("otel").example.replace("5b8efff798038103d269b633813fc60c", f"{i + 1:032x}")
            .replace('"fix-test"', f'"t{i % 2}"'))


LINES = {"record": _record, "openai": _openai, "otel": _otel}
N = 5


def _columns(traces):
    return traces.runs[["run_id", "task_id", "seed", "outcome", "n_steps", "tokens"]].astype(str).values.tolist()


# --------------------------------------------------------------------------- #
# 1. Bounded decompression
# --------------------------------------------------------------------------- #
@pytest.fixture
def small_limits(monkeypatch):
    """Limits small enough to trip with a few megabytes (the defaults: 4 GiB and 200 times)."""
    monkeypatch.setattr(files, "MAX_INFLATED_BYTES", 3 * 2**20)
    monkeypatch.setattr(files, "RATIO_FREE_BYTES", 2**16)


def _gzip_bomb(path: Path, head: str, padding: int = 4 * 2**20) -> None:
    with gzip.open(path, "wb") as fh:
        fh.write(head.encode() + b"\n")
        fh.write(b" " * padding)
        fh.write(b"\n" + _record(99).encode() + b"\n")


def test_defaults_are_documented():
    assert files.MAX_INFLATED_BYTES == 4 * 2**30 and files.MAX_INFLATION_RATIO == 200
    assert "MAX_INFLATED_BYTES" in files.__doc__ and "MAX_INFLATION_RATIO" in files.__doc__


@pytest.mark.parametrize("kind", ["lines", "array", "openai", "otel", "inspect"])
def test_a_gzip_bomb_is_a_typed_error_naming_file_and_limit(tmp_path, kind):
    name = {"lines": "a.jsonl.gz", "openai": "a.jsonl.gz", "otel": "a.jsonl.gz"}.get(kind, "a.json.gz")
    head = {"lines": _record(1), "array": "[" + _record(1) + ",", "openai": _openai(1), "otel": _otel(1),
            "inspect": formats.get("inspect").example[:-2] + ","}[kind]
    path = tmp_path / name
    _gzip_bomb(path, head)
    with pytest.raises(TraceError, match=r"a\.js.*inflates to more than 200 times its compressed size .*MAX_INFLATION_RATIO"):
        load_traces(path)


def test_the_inflated_size_cap_and_overriding_it(tmp_path, small_limits, monkeypatch):
    path = tmp_path / "big.jsonl.gz"
    _gzip_bomb(path, _record(1))
    monkeypatch.setattr(files, "MAX_INFLATION_RATIO", 10**9)
    with pytest.raises(TraceError, match=r"big\.jsonl\.gz: inflates to more than 3,145,728 bytes .*MAX_INFLATED_BYTES"):
        load_traces(path)
    monkeypatch.setattr(files, "MAX_INFLATED_BYTES", 2**30)  # overridden: the file loads
    assert list(load_traces(path).runs["run_id"]) == ["r1", "r99"]


def test_lenient_a_bomb_is_one_counted_rejection_and_the_rest_loads(tmp_path):
    _gzip_bomb(tmp_path / "a.jsonl.gz", _record(1))
    (tmp_path / "b.jsonl").write_text(_record(2) + "\n")
    traces = load_traces(tmp_path, strict=False)
    assert sorted(traces.runs["run_id"]) == ["r1", "r2"]
    assert len(traces.runs) + len(traces.rejected) == traces.n_read == 3
    row = traces.rejected.iloc[0]
    assert row["source"].endswith("a.jsonl.gz") and row["line"] == 2
    assert "MAX_INFLATION_RATIO" in row["reason"] and "rest of the file was left out" in row["reason"]


def _eval_log(path: Path, samples: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> None:
    header = {"version": 2, "status": "success", "eval": {"eval_id": "e1", "task": "t", "model": "m"}}
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.writestr("header.json", json.dumps(header))
        for name, data in samples.items():
            archive.writestr(f"samples/{name}", data)


def _sample(i: int) -> bytes:
    return json.dumps({"id": i, "epoch": 1, "messages": [], "scores": {"match": {"value": "C"}}}).encode()


def test_an_eval_member_bomb_is_a_rejection_of_that_member(tmp_path):
    path = tmp_path / "log.eval"
    _eval_log(path, {"1_epoch_1.json": _sample(1), "2_epoch_1.json": b" " * (4 * 2**20) + _sample(2),
                     "3_epoch_1.json": _sample(3)})
    traces = load_traces(path, strict=False)
    assert list(traces.runs["task_id"]) == ["1", "3"] and traces.n_read == 3
    assert traces.rejected.loc[0, "source"] == f"{path}:samples/2_epoch_1.json"
    assert "MAX_INFLATION_RATIO" in traces.rejected.loc[0, "reason"]
    with pytest.raises(TraceError, match=r"log\.eval:samples/2_epoch_1\.json.*MAX_INFLATION_RATIO"):
        load_traces(path)


def _flag(path: Path, member: str, *, encrypted: bool = False, method: int | None = None) -> None:
    """Rewrite a member's local and central headers: the encryption flag, or the compression method."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    offsets = [info.header_offset]
    central = data.find(b"PK\x01\x02")
    while central != -1:
        name_length = int.from_bytes(data[central + 28:central + 30], "little")
        if bytes(data[central + 46:central + 46 + name_length]) == member.encode():
            offsets.append(central + 2)  # the central header has "version made by" first: shift by 2
        central = data.find(b"PK\x01\x02", central + 4)
    for offset in offsets:
        if encrypted:
            data[offset + 6] |= 1
        if method is not None:
            data[offset + 8:offset + 10] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("change", [{"encrypted": True}, {"method": 99}])
def test_an_encrypted_or_unsupported_member_is_a_rejection(tmp_path, change):
    path = tmp_path / "log.eval"
    _eval_log(path, {f"{i}_epoch_1.json": _sample(i) for i in (1, 2, 3)})
    _flag(path, "samples/2_epoch_1.json", **change)
    traces = load_traces(path, strict=False)
    assert list(traces.runs["task_id"]) == ["1", "3"] and traces.n_read == 3
    assert traces.rejected.loc[0, "reason"].startswith("cannot read this archive member")
    with pytest.raises(TraceError, match=r"log\.eval:samples/2_epoch_1\.json, line 1: cannot read this archive member"):
        load_traces(path)


# --------------------------------------------------------------------------- #
# Non-regular files and unreadable folders
# --------------------------------------------------------------------------- #
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_by_name_and_never_opened(tmp_path):
    (tmp_path / "a.jsonl").write_text(_record(1) + "\n")
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it would block for ever: a hang fails the test by timeout
    with pytest.raises(TraceError, match=r"pipe\.jsonl: not a regular file \(a FIFO, socket or device\): refused"):
        load_traces(tmp_path / "pipe.jsonl", strict=False)
    with pytest.raises(TraceError, match=r"pipe\.jsonl: not a regular file"):
        load_traces(tmp_path)
    traces = load_traces(tmp_path, strict=False)
    assert list(traces.runs["run_id"]) == ["r1"] and traces.n_read == 2
    assert traces.rejected.loc[0, "source"].endswith("pipe.jsonl")


def test_a_device_is_refused_by_name(tmp_path):
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null")
    (tmp_path / "null.jsonl").symlink_to("/dev/null")
    with pytest.raises(TraceError, match=r"null\.jsonl: not a regular file"):
        load_traces(tmp_path / "null.jsonl")


def _locked_tree(tmp_path: Path) -> Path:
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.jsonl").write_text(_record(1) + "\n")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "b.jsonl").write_text(_record(2) + "\n")
    return tmp_path / "locked"


def _check_locked(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"locked: cannot read this folder: Permission denied"):
        load_traces(tmp_path)
    traces = load_traces(tmp_path, strict=False)
    assert list(traces.runs["run_id"]) == ["r1"] and traces.n_read == 2
    assert traces.rejected.loc[0, "source"].endswith("locked")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads a mode-000 folder anyway")
def test_a_mode_000_folder_is_an_error_or_a_counted_rejection(tmp_path):
    locked = _locked_tree(tmp_path)
    locked.chmod(0)
    try:
        _check_locked(tmp_path)
    finally:
        locked.chmod(0o755)


def test_an_unreadable_folder_as_scandir_reports_it(tmp_path, monkeypatch):
    """The same path without permissions that bind (root): os.scandir raises as it does for a mode-000 folder."""
    locked = _locked_tree(tmp_path)
    real = os.scandir

    def scandir(path):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(_load.os, "scandir", scandir)
    _check_locked(tmp_path)


# --------------------------------------------------------------------------- #
# 2. Lenient means lenient: one bad record is one rejection
# --------------------------------------------------------------------------- #
BAD_RECORDS = {
    "lone surrogate in run_id": '{"run_id": "\\ud800", "task_id": "t", "seed": 9, "outcome": true, "steps": []}',
    "5,000-digit integer": '{"run_id": "x", "task_id": "t", "seed": ' + "9" * 5000 + ', "outcome": true, "steps": []}',
    "nested 20,000 deep": ('{"run_id": "x", "task_id": "t", "seed": 1, "outcome": true, "steps": [], "metadata": {"a": '
                           + "[" * 20000 + "]" * 20000 + "}}"),
}


@pytest.mark.parametrize("bad", BAD_RECORDS.values(), ids=BAD_RECORDS)
@pytest.mark.parametrize("layout", ["lines", "array"])
def test_one_bad_record_is_one_rejection(tmp_path, bad, layout):
    good = [_record(i) for i in range(4)]
    path = tmp_path / ("a.jsonl" if layout == "lines" else "a.json")
    body = good[:2] + [bad] + good[2:]
    path.write_text("\n".join(body) + "\n" if layout == "lines" else "[\n" + ",\n".join(body) + "\n]\n")
    traces = load_traces(path, strict=False)
    assert list(traces.runs["run_id"]) == ["r0", "r1", "r2", "r3"] and traces.n_read == 5
    assert traces.rejected.loc[0, "line"] == (3 if layout == "lines" else 4)
    with pytest.raises(TraceError, match=r"a\.jsonl?, line \d: "):
        load_traces(path)


def test_a_rejected_run_id_with_a_lone_surrogate_is_shown_escaped(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(_record(1) + '\n{"run_id": "\\ud800", "task_id": 5, "seed": "x", "steps": []}\n')
    rejected = load_traces(path, strict=False).rejected
    assert rejected.loc[0, "line"] == 2 and rejected.loc[0, "run_id"] == "\\ud800"
    rejected.to_string().encode("utf-8")  # every text in the table is UTF-8 text


def test_an_inspect_sample_with_a_lone_surrogate_or_huge_integer_is_one_rejection(tmp_path):
    bad = {"a": b'{"id": 2, "epoch": 1, "x": NaN, "messages": [], "metadata": {"k": "\\ud800"}}',
           "b": b'{"id": 2, "epoch": 1, "x": NaN, "seed": ' + b"9" * 5000 + b"}"}
    for key, data in bad.items():
        path = tmp_path / f"{key}.eval"
        _eval_log(path, {"1_epoch_1.json": _sample(1), "2_epoch_1.json": data, "3_epoch_1.json": _sample(3)})
        traces = load_traces(path, strict=False)
        assert list(traces.runs["task_id"]) == ["1", "3"] and traces.n_read == 3
        with pytest.raises(TraceError, match=r"\.eval:samples/2_epoch_1\.json, line 1: malformed JSON"):
            load_traces(path)


@pytest.mark.parametrize("bad", ['{"run_id": "x", "steps": [}', '{"run_id": "x", "steps": ]]}',
                                 '{"run_id": "x, "steps": []}'])
def test_a_json_array_with_one_unbalanced_element_keeps_the_others(tmp_path, bad):
    good = [_record(i) for i in range(3)]
    for text in ("[" + ",".join(good[:1] + [bad] + good[1:]) + "]",
                 "[\n" + ",\n".join(good[:1] + [bad] + good[1:]) + "\n]\n"):
        path = tmp_path / "a.json"
        path.write_text(text)
        traces = load_traces(path, strict=False)
        assert list(traces.runs["run_id"]) == ["r0", "r1", "r2"] and traces.n_read == 4
        assert traces.rejected.loc[0, "reason"].startswith("malformed JSON")
        with pytest.raises(TraceError, match=r"a\.json, line [13]: malformed JSON"):
            load_traces(path)


# --------------------------------------------------------------------------- #
# Property: one random corruption of one record, in three formats
# --------------------------------------------------------------------------- #
def _corrupt(line: str, how: str, where: float, junk: bytes) -> bytes:
    data = line.encode()
    at = int(where * len(data))
    if how == "truncate":
        return data[:at]
    if how == "delete":
        return data[:at] + data[at + 1 + len(junk):]
    if how == "insert":
        return data[:at] + junk + data[at:]
    if how == "replace":
        return data[:at] + junk + data[at + len(junk):]
    quote = data.find(b'"', at)  # a value put where a string starts
    value = {"surrogate": b'"\\ud800', "huge": b"9" * 5000 + b',"', "deep": b"[" * 20000 + b"]" * 20000 + b',"'}[how]
    return data if quote < 0 else data[:quote] + value + data[quote + 1:]


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@example(fmt="otel", which=0, how="insert", where=0.875, junk=b"\x80")  # not UTF-8 in a span's tool name: Arrow
@given(fmt=st.sampled_from(sorted(LINES)), which=st.integers(0, N - 1),
       how=st.sampled_from(["truncate", "delete", "insert", "replace", "surrogate", "huge", "deep"]),
       where=st.floats(0, 1, exclude_max=True),
       junk=st.binary(min_size=1, max_size=6).filter(lambda b: b"\n" not in b and b"\r" not in b))
@pytest.mark.slow
def test_one_corrupt_record_never_costs_another(tmp_path, fmt, which, how, where, junk):
    lines = [LINES[fmt](i) for i in range(N)]
    path = tmp_path / f"{fmt}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    clean = _columns(load_traces(path, format=fmt))
    data = b"\n".join(_corrupt(line, how, where, junk) if k == which else line.encode()
                      for k, line in enumerate(lines)) + b"\n"
    path.write_bytes(data)
    traces = load_traces(path, format=fmt, strict=False)
    assert len(traces.runs) + len(traces.rejected) == traces.n_read
    if fmt != "otel":  # one line, one record (an OpenTelemetry trace may lose one span and keep its run)
        assert traces.n_read == (N if data.split(b"\n")[which].strip(b" \t\r\n") else N - 1)
    loaded = _columns(traces)
    others = [row for k, row in enumerate(clean) if k != which]
    assert all(row in loaded for row in others), (others, loaded)
    try:
        load_traces(path, format=fmt)
    except TraceError:
        pass


def test_a_lone_surrogate_in_an_atif_trajectory_or_swe_agent_arguments_is_one_rejection(tmp_path):
    # one JSON decoder for whole documents (formats.files.decode_json): these two readers used to raise
    # UnicodeEncodeError from deep inside on the escape "\ud800"
    data = Path(__file__).parent / "data"
    shutil.copytree(data / "atif" / "hello-world__Linear2", tmp_path / "hello-world__Linear2")
    trajectory = tmp_path / "hello-world__Linear2" / "agent" / "trajectory.json"
    trajectory.write_text(trajectory.read_text().replace('"session_id": "', '"session_id": "\\ud800', 1))
    traces = load_traces(tmp_path, format="atif", strict=False)
    assert traces.runs.empty and "lone surrogate" in traces.rejected.loc[0, "reason"]
    raw = json.loads((data / "swe_agent" / "marshmallow-code__marshmallow-1867.traj").read_text())
    call = next(c for h in raw["history"] for c in (h.get("tool_calls") or []))
    call["function"]["arguments"] = '{"x": "\\ud800"}'
    (tmp_path / "run.traj").write_text(json.dumps(raw))
    traces = load_traces(tmp_path / "run.traj", strict=False)
    assert traces.runs.empty and traces.rejected.loc[0, "reason"].startswith("arguments are not JSON")


def _object_lines_by_hand(body: bytes, first: int) -> tuple[list[int], bool]:
    """The definition of ``files.object_lines``, line by line."""
    kept = [(number, raw.strip(b" \t\r\n")) for number, raw in enumerate(body.split(b"\n"), start=first)]
    kept = [(number, text) for number, text in kept if text]
    return [n for n, _ in kept], all(text.startswith(b"{") and text.endswith(b"}") for _, text in kept)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"{", b"}", b"{}", b'{"a": 1}', b" ", b"\t", b"\r", b"\n", b"\r\n", b"x", b"[1]",
                                 b'"s"', b"\n\n", b",", b":"]), max_size=30),
       st.integers(1, 5))
@example([b'{"a":', b"\n", b'1} {"b": 2}', b"\n", b'{"c": 3}'], 1)
def test_object_lines_matches_its_definition(pieces: list[bytes], first: int) -> None:
    """The look in C that spares the walk gives what the walk over the lines gives, whatever the bytes."""
    body = b"".join(pieces)
    assert files.object_lines(body, body.split(b"\n"), first) == _object_lines_by_hand(body, first)
    assert files.object_lines(body, None, first) == _object_lines_by_hand(body, first)  # its lines split only if needed


def test_a_file_is_read_whole_however_the_system_hands_out_its_bytes(tmp_path, monkeypatch):
    """read_trace_bytes reads a file by its descriptor, in one read when the file is as large as it was when
    looked at; a read handing out fewer bytes, a file that grew or shrank since, an empty one: still whole."""
    body = os.urandom(3 * 2**20 + 17)
    path = tmp_path / "t.jsonl"
    path.write_bytes(body)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with gzip.open(tmp_path / "t.jsonl.gz", "wb") as fh:
        fh.write(body)
    assert files.read_trace_bytes(path) == body and files.read_trace_bytes(tmp_path / "empty.jsonl") == b""
    assert files.read_trace_bytes(tmp_path / "t.jsonl.gz") == body
    read, fstat = os.read, os.fstat
    monkeypatch.setattr(os, "read", lambda fd, n: read(fd, min(n, 4099)))  # short reads
    assert files.read_trace_bytes(path) == body
    monkeypatch.setattr(os, "read", read)
    for change in (-1000, 1000):  # the size looked at is not the size read: it grew, or shrank
        monkeypatch.setattr(os, "fstat", lambda fd, change=change: os.stat_result(
            (*fstat(fd)[:6], fstat(fd).st_size + change, *fstat(fd)[7:])))
        assert files.read_trace_bytes(path) == body
