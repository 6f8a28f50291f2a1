"""Hostile archives and compressed files (issue 20, item 6): every reader's ``.gz`` input and Inspect ``.eval``
archives are inflated with a cap (per file, per member, and per archive), member names are never paths and
are shown escaped, and a corrupt member is one counted rejection while the rest loads.

Every hostile file is built in ``tmp_path`` at test time; the limits are lowered (monkeypatched module
constants) so a few hundred kilobytes trip them. Two tests (a corrupt .gz with strict=False, a Parquet bomb) cover gaps once in files
outside the readers: the loader and the results tables.
"""

from __future__ import annotations

import builtins
import gzip
import io
import json
import os
import random
import warnings
import zipfile
from pathlib import Path

import pytest

from agentab import formats, load_traces
from agentab.errors import TraceError
from agentab.formats import files

HEADER = {"version": 2, "status": "success", "eval": {"eval_id": "e1", "task": "t", "model": "m"}}


def _sample(i: int, pad: int = 0) -> bytes:
    doc = {"id": i, "epoch": 1, "messages": [], "scores": {"match": {"value": "C"}}}
    return json.dumps(doc).encode() + b" " * pad


def _eval(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """An .eval archive: header.json, then the members in order (names as given: duplicates allowed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        with zipfile.ZipFile(path, "w", compression) as archive:
            archive.writestr("header.json", json.dumps(HEADER))
            for name, data in members.items():
                archive.writestr(name, data)
    return path


def _samples(n: int, pad: int = 0) -> dict[str, bytes]:
    return {f"samples/{i}_epoch_1.json": _sample(i, pad) for i in range(1, n + 1)}


#: Where a field is in a local file header; the central directory header has it 2 bytes later.
_LOCAL = {"flag": (6, 2), "method": (8, 2), "crc": (14, 4), "compress_size": (18, 4), "file_size": (22, 4)}


def _poke(path: Path, member: str, field: str, value: int) -> None:
    """Rewrite one field of a member's local and central headers."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(member).header_offset
    at, size = _LOCAL[field]
    offsets = [local + at]
    central = data.find(b"PK\x01\x02")
    while central != -1:
        length = int.from_bytes(data[central + 28:central + 30], "little")
        if bytes(data[central + 46:central + 46 + length]) == member.encode():
            offsets.append(central + at + 2)
        central = data.find(b"PK\x01\x02", central + 4)
    for offset in offsets:
        data[offset:offset + size] = value.to_bytes(size, "little")
    path.write_bytes(bytes(data))


def _data_span(path: Path, member: str) -> tuple[int, int]:
    """Where a member's compressed bytes are in the archive: (start, length)."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    local = info.header_offset
    name_length = int.from_bytes(data[local + 26:local + 28], "little")
    extra_length = int.from_bytes(data[local + 28:local + 30], "little")
    return local + 30 + name_length + extra_length, info.compress_size


def _lenient(path: Path, **kwargs):
    traces = load_traces(path, strict=False, **kwargs)
    assert len(traces.runs) + len(traces.rejected) == traces.n_read
    return traces


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text and text.isprintable(), text
    return text


@pytest.fixture
def small_limits(monkeypatch):
    """Limits a few hundred kilobytes trip (the defaults: 4 GiB, 200 times, the first MiB free)."""
    monkeypatch.setattr(files, "RATIO_FREE_BYTES", 2**16)
    monkeypatch.setattr(files, "MAX_INFLATED_BYTES", 2**19)


# --------------------------------------------------------------------------- #
# Bounded inflation: every reader's .gz, an .eval member, an .eval archive as a whole
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", [n for n in formats.available() if formats.get(n).example])
def test_every_readers_gzip_bomb_is_a_typed_error_or_one_rejection(tmp_path, small_limits, name):
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(formats.get(name).example.encode() + b"\n" + b" " * 2**18 + b"\n")
    with pytest.raises(files.InflateLimit, match=r"bomb\.jsonl\.gz: inflates to more than 200 times .*MAX_INFLATION_RATIO"):
        load_traces(path, format=name)
    traces = _lenient(path, format=name)
    assert traces.n_read == 1 and "MAX_INFLATION_RATIO" in traces.rejected.loc[0, "reason"]


def test_the_size_cap_holds_whatever_the_ratio(tmp_path, small_limits, monkeypatch):
    monkeypatch.setattr(files, "MAX_INFLATION_RATIO", 10**9)
    path = _eval(tmp_path / "log.eval", {**_samples(2), "samples/9_epoch_1.json": _sample(9, pad=2**20)})
    with pytest.raises(TraceError, match=r"log\.eval:samples/9_epoch_1\.json, line 1: .*inflates? to more than 524,288 bytes .*MAX_INFLATED_BYTES"):
        load_traces(path)
    assert sorted(_lenient(path).runs["task_id"]) == ["1", "2"]


def test_many_small_members_share_one_budget_for_the_archive(tmp_path, small_limits, monkeypatch):
    """Each member inflates to less than the ratio-free first bytes; together, to 50 times the archive."""
    monkeypatch.setattr(files, "MAX_INFLATION_RATIO", 50)
    monkeypatch.setattr(files, "MAX_INFLATED_BYTES", 2**30)
    path = _eval(tmp_path / "log.eval", _samples(60, pad=2**16 - 200))
    cap = 50 * path.stat().st_size
    assert 60 * 2**16 > 2 * cap and all(i.file_size < files.RATIO_FREE_BYTES
                                        for i in zipfile.ZipFile(path).infolist())
    traces = _lenient(path)
    assert traces.n_read == 60 and 0 < len(traces.runs) <= cap // (2**16 - 200) + 1
    reasons = set(traces.rejected["reason"])
    assert len(reasons) == 1 and "the archive's members together inflate to more than 50 times" in reasons.pop()
    with pytest.raises(TraceError, match=r"log\.eval:samples/\d+_epoch_1\.json, line 1: the archive.s members together"):
        load_traces(path)


def test_the_budget_counts_what_a_member_inflated_before_it_stopped():
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a", b" " * 5000)
    budget = files.Budget(10)
    budget.left = 4000
    with zipfile.ZipFile(data) as archive:
        with pytest.raises(files.InflateLimit, match="x.eval:a: the archive's members together"):
            files.read_member(archive, "a", "x.eval:a", budget)  # declared 5,000 > 4,000: stopped unread
        budget.left = 10**6
        assert files.read_member(archive, "a", "x.eval:a", budget) == b" " * 5000
    assert budget.left == 10**6 - 5000


# --------------------------------------------------------------------------- #
# Declared sizes that lie
# --------------------------------------------------------------------------- #
def test_a_member_longer_than_it_declares_is_read_no_further_and_rejected(tmp_path):
    path = _eval(tmp_path / "log.eval", {**_samples(2), "samples/3_epoch_1.json": _sample(3, pad=10**5)})
    _poke(path, "samples/3_epoch_1.json", "file_size", 100)
    traces = _lenient(path)
    assert sorted(traces.runs["task_id"]) == ["1", "2"]
    assert traces.rejected.loc[0, "reason"].startswith("cannot read this archive member: Bad CRC-32")


def test_a_member_declaring_a_bomb_is_refused_before_inflating(tmp_path, small_limits, monkeypatch):
    path = _eval(tmp_path / "log.eval", _samples(3))
    _poke(path, "samples/2_epoch_1.json", "file_size", 2**31)
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **k: opened.append(
        getattr(name, "filename", name)) or real_open(self, name, *a, **k))
    traces = _lenient(path)
    assert sorted(traces.runs["task_id"]) == ["1", "3"] and "samples/2_epoch_1.json" not in opened
    assert "inflates to more than" in traces.rejected.loc[0, "reason"]


# --------------------------------------------------------------------------- #
# Member names are names, never paths; shown escaped
# --------------------------------------------------------------------------- #
EVIL = ["../../etc/x_epoch_1.json", "/abs/path_epoch_1.json", "samples/../../x_epoch_1.json",
        "samples/../../../tmp/evil_epoch_1.json", "samples//abs_epoch_1.json",
        "samples/\x1b[2J\x1b]0;pwned\x07c\nd\u202e_epoch_1.json", "samples/C:\\win_epoch_1.json"]


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_member_names_are_never_opened_as_paths(tmp_path, monkeypatch):
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    path = _eval(work / "log.eval", {name: _sample(i) for i, name in enumerate(EVIL, start=1)})
    monkeypatch.chdir(work)
    before = _tree(tmp_path)
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open
    monkeypatch.setattr(builtins, "open", lambda file, *a, **k: opened.append(str(file)) or real_open(file, *a, **k))
    monkeypatch.setattr(os, "open", lambda file, *a, **k: opened.append(str(file)) or real_os_open(file, *a, **k))
    monkeypatch.setattr(zipfile.ZipFile, "extract", lambda *a, **k: pytest.fail("extracted"))
    traces = _lenient(path)
    monkeypatch.undo()
    assert set(opened) <= {str(path), "log.eval"} and _tree(tmp_path) == before
    samples = [n for n in EVIL if n.startswith("samples/")]
    assert traces.n_read == len(samples) == len(traces.runs)  # read as samples by name, nothing else
    assert all(str(source).isprintable() for source in traces.runs["source"])


def test_a_rejected_member_with_terminal_escapes_in_its_name_is_shown_escaped(tmp_path):
    name = "samples/\x1b[2J\x1b]0;pwned\x07c\nd\u202e_epoch_1.json"
    path = _eval(tmp_path / "log.eval", {**_samples(2), name: b"{not json"})
    traces = _lenient(path)
    [source] = traces.rejected["source"]
    assert source == f"{path}:samples/\\x1b[2J\\x1b]0;pwned\\x07c\\nd\\u202e_epoch_1.json"
    with pytest.raises(TraceError) as err:
        load_traces(path)
    assert _one_line(err).startswith(f"{path}:samples/\\x1b[2J")


def test_a_corrupt_member_with_an_escape_in_its_name_quotes_it_escaped(tmp_path):
    name = "samples/\x1b[31mred\n_epoch_1.json"
    path = _eval(tmp_path / "log.eval", {**_samples(1), name: _sample(5, pad=1000)})
    _poke(path, name, "crc", 0)
    traces = _lenient(path)
    reason = traces.rejected.loc[0, "reason"]
    assert reason.startswith("cannot read this archive member: Bad CRC-32") and reason.isprintable()
    with pytest.raises(TraceError) as err:
        load_traces(path)
    _one_line(err)


def test_a_member_name_with_a_nul_byte_is_one_rejection_not_dropped_unseen(tmp_path):
    path = _eval(tmp_path / "log.eval", {**_samples(2), "samples/1X9_epoch_1.json": _sample(7)})
    data = path.read_bytes()
    assert data.count(b"samples/1X9_epoch_1.json") == 2  # the local and the central header
    path.write_bytes(data.replace(b"samples/1X9_epoch_1.json", b"samples/1\x009_epoch_1.json"))
    traces = _lenient(path)
    assert sorted(traces.runs["task_id"]) == ["1", "2"] and traces.n_read == 3
    row = traces.rejected.iloc[0]
    assert row["source"] == f"{path}:samples/1\\x009_epoch_1.json" and "NUL" in row["reason"]
    with pytest.raises(TraceError) as err:
        load_traces(path)
    assert "NUL" in _one_line(err)


def test_a_duplicated_member_name_is_read_once_its_last_copy(tmp_path):
    path = tmp_path / "log.eval"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("header.json", json.dumps(HEADER))
            archive.writestr("samples/1_epoch_1.json", b"{corrupt")
            archive.writestr("samples/1_epoch_1.json", _sample(1))
            archive.writestr("header.json", b"{not the header read")  # the last copy of header.json is not JSON
    traces = _lenient(path)
    assert traces.n_read == 1 and "header.json is not JSON" in traces.rejected.loc[0, "reason"]


@pytest.mark.parametrize("ref", ["../../etc/passwd", "/etc/passwd", "a\x00b.json", "\x1b[2Jx\n.json",
                                 "s3://bucket/x.json", "C:\\x.json", "sub/../../x.json"])
def test_a_file_named_inside_an_atif_trajectory_is_never_followed_out_of_its_folder(tmp_path, ref):
    """The one reader that follows names written inside a file (ATIF's ``continued_trajectory_ref``)."""
    trial = tmp_path / "trial"
    trial.mkdir()
    (tmp_path / "x.json").write_text(formats.get("atif").example)  # what "../x.json" would reach
    doc = dict(json.loads(formats.get("atif").example), continued_trajectory_ref=ref)
    (trial / "trajectory.json").write_text(json.dumps(doc))
    traces = _lenient(trial / "trajectory.json", format="atif")
    [reason] = traces.rejected["reason"]
    assert reason == f"the run continues in {ref!r}, which is not a file beside this trajectory: a partial run"
    assert reason.isprintable()


# --------------------------------------------------------------------------- #
# Corrupt members: one rejection each, the rest loads
# --------------------------------------------------------------------------- #
def _corrupt_data(path: Path, member: str) -> None:
    start, length = _data_span(path, member)
    data = bytearray(path.read_bytes())
    for k in range(start + length // 3, start + length // 3 + 8):
        data[k] ^= 0x5A
    path.write_bytes(bytes(data))


CORRUPTIONS = {
    "bad CRC": (zipfile.ZIP_DEFLATED, lambda p, m: _poke(p, m, "crc", 0xDEADBEEF)),
    "bad deflate data": (zipfile.ZIP_DEFLATED, _corrupt_data),
    "bad bzip2 data": (zipfile.ZIP_BZIP2, _corrupt_data),
    "bad lzma data": (zipfile.ZIP_LZMA, _corrupt_data),
    "encrypted": (zipfile.ZIP_DEFLATED, lambda p, m: _poke(p, m, "flag", 1)),
    "unknown method": (zipfile.ZIP_DEFLATED, lambda p, m: _poke(p, m, "method", 99)),
    "truncated data": (zipfile.ZIP_DEFLATED, lambda p, m: _poke(p, m, "compress_size", 20)),
}


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_corrupt_member_is_one_rejection_and_every_other_sample_loads(tmp_path, how):
    compression, corrupt = CORRUPTIONS[how]
    path = _eval(tmp_path / "log.eval", _samples(5, pad=3000), compression)
    corrupt(path, "samples/3_epoch_1.json")
    traces = _lenient(path)
    assert sorted(traces.runs["task_id"]) == ["1", "2", "4", "5"] and traces.n_read == 5
    row = traces.rejected.iloc[0]
    assert row["source"] == f"{path}:samples/3_epoch_1.json"
    with pytest.raises(TraceError) as err:
        load_traces(path)
    assert _one_line(err).startswith(f"{path}:samples/3_epoch_1.json, line 1: ")


def test_a_corrupt_header_rejects_each_sample(tmp_path):
    path = _eval(tmp_path / "log.eval", _samples(3, pad=3000))
    _poke(path, "header.json", "crc", 0)
    traces = _lenient(path)
    assert traces.n_read == 3 and len(traces.rejected) == 3
    assert traces.rejected["reason"].str.startswith("cannot read header.json: Bad CRC-32").all()


@pytest.mark.parametrize("how", ["utf-8 flag on a name that is not", "unsupported zip version", "cut short",
                                 "not a zip"])
def test_an_archive_that_cannot_be_opened_is_a_typed_one_line_error(tmp_path, how):
    path = _eval(tmp_path / "log.eval", _samples(2))
    data = bytearray(path.read_bytes())
    central = data.find(b"PK\x01\x02")
    if how.startswith("utf-8"):
        while central != -1:
            data[central + 9] |= 0x08  # general purpose flag bit 11: the name is UTF-8
            central = data.find(b"PK\x01\x02", central + 4)
        data = data.replace(b"samples/1_epoch_1.json", b"samples/\xff_epoch_1.json")
    elif how == "unsupported zip version":
        data[central + 6] = 99  # "version needed to extract": 9.9
    elif how == "cut short":
        data = data[:len(data) // 2]
    else:
        data = b"PK\x03\x04" + b"\x00" * 200
    path.write_bytes(bytes(data))
    for strict in (True, False):
        with pytest.raises(TraceError, match=r"log\.eval: not a readable Inspect \.eval archive") as err:
            load_traces(path, strict=strict)
        _one_line(err)


def test_a_random_corruption_of_an_archive_is_a_trace_error_or_counted(tmp_path):
    """Seeded: 150 archives with a few random bytes changed never raise anything but a TraceError."""
    rng = random.Random(20)
    clean = {c: _eval(tmp_path / f"clean{c}.eval", _samples(3, pad=500), c).read_bytes()
             for c in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)}
    path = tmp_path / "log.eval"
    outcomes = set()
    for _ in range(150):
        data = bytearray(rng.choice(list(clean.values())))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        try:
            traces = _lenient(path, format="inspect")
        except TraceError as err:
            assert str(err).isprintable()
            outcomes.add("error")
        else:
            outcomes.add(len(traces.rejected) > 0)
    assert outcomes == {"error", True, False}


def test_thousands_of_tiny_members_load_each_once(tmp_path):
    members = {**_samples(3000), **{f"_journal/summaries/{i}.json": b"[]" for i in range(2000)}}
    path = _eval(tmp_path / "log.eval", members, zipfile.ZIP_STORED)
    traces = _lenient(path)
    assert traces.n_read == len(traces.runs) == 3000 and traces.runs["task_id"].is_unique


# --------------------------------------------------------------------------- #
# Corrupt gzip files
# --------------------------------------------------------------------------- #
def _record(i: int) -> bytes:
    return json.dumps({"run_id": f"r{i}", "task_id": "t", "seed": i, "outcome": True, "steps": []}).encode()


def _gz(path: Path, n: int = 50) -> bytes:
    data = gzip.compress(b"".join(_record(i) + b"\n" for i in range(n)))
    path.write_bytes(data)
    return data


def _broken_gz(tmp_path: Path, how: str) -> Path:
    path = tmp_path / "runs.jsonl.gz"
    data = bytearray(_gz(path))
    if how == "truncated":
        data = data[:len(data) * 2 // 3]
    elif how == "not gzip":
        data = bytearray(b"".join(_record(i) + b"\n" for i in range(3)))
    elif how == "bad CRC":
        data[-8] ^= 0xFF
    else:  # bad deflate data
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how", ["truncated", "not gzip", "bad CRC", "bad deflate data"])
def test_a_broken_gzip_is_a_typed_one_line_error_naming_the_file(tmp_path, how):
    path = _broken_gz(tmp_path, how)
    with pytest.raises(TraceError, match=r"runs\.jsonl\.gz: cannot read file: ") as err:
        load_traces(path)
    _one_line(err)


@pytest.mark.parametrize("how", ["truncated", "not gzip"])
def test_lenient_a_broken_gzip_is_one_rejection_and_the_other_files_load(tmp_path, how):
    _broken_gz(tmp_path, how)
    (tmp_path / "more.jsonl").write_bytes(_record(99) + b"\n")
    traces = _lenient(tmp_path)
    assert "r99" in set(traces.runs["run_id"]) and len(traces.rejected) == 1
    assert traces.rejected.loc[0, "source"].endswith("runs.jsonl.gz")
    assert "cannot read file" in traces.rejected.loc[0, "reason"]


# --------------------------------------------------------------------------- #
# Results tables: Parquet pages are compressed too
# --------------------------------------------------------------------------- #
def test_a_parquet_bomb_is_refused_by_its_declared_size(tmp_path, small_limits):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from agentab import load_results

    path = tmp_path / "runs.parquet"
    table = pa.table({"run_id": ["r1", "r2"], "task_id": ["t", "t"], "outcome": [True, False],
                      "note": [" " * 2**20, " " * 2**20]})
    pq.write_table(table, path, compression="zstd", use_dictionary=False)
    assert path.stat().st_size < 2**14
    with pytest.raises(TraceError, match=r"runs\.parquet: .*inflates to more than"):
        load_results(path)
