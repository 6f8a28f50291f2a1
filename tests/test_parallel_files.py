"""Reading the files of a load over several processes, whole files each, gives exactly the serial result."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import format_files, make_record, same_traces, write_jsonl

import agentab
import agentab.traces._parallel
import agentab.traces._plan
import agentab.traces._reader
from agentab import TraceError, load_traces


@pytest.fixture
def files_in_parallel(monkeypatch):
    """Every load of two or more files is 'large', so tests stay small, and this process claims no chunk after its
    first (the workers read every other: small files are read before a worker starts); count the workers' chunks."""
    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_FILES_MIN_BYTES", 0)
    monkeypatch.setattr(agentab.traces._parallel, "claim", lambda claims, k: False)
    merged = []
    read_part = agentab.traces._parallel._read_part
    monkeypatch.setattr(agentab.traces._parallel, "_read_part", lambda out: merged.append(out) or read_part(out))
    return merged


def _folder(tmp_path, n_files=6, per_file=4, bad=None):
    """Record files in two arm folders; ``bad``: {(file, line): text} replaces a line."""
    bad = bad or {}
    for arm in ("a", "b"):
        for f in range(n_files):
            lines = [bad.get((arm, f, i), make_record(f"{arm}{f}-{i}", task_id=f"t{i}", seed=f, n_steps=i % 3, arm=arm))
                     for i in range(per_file)]
            (tmp_path / arm).mkdir(exist_ok=True)
            write_jsonl(tmp_path / arm / f"runs{f:02d}.jsonl", lines)
    return {"a": tmp_path / "a", "b": tmp_path / "b"}


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_files_in_parallel_equal_serial(tmp_path, files_in_parallel, workers):
    source = _folder(tmp_path)
    same_traces(load_traces(source, workers=workers), load_traces(source, workers=1))
    chunks = agentab.traces._plan.plan_chunks([1] * 12, workers)
    assert len(files_in_parallel) == len(chunks) - 1 >= 7  # the workers really read every chunk but the first


def test_chunks_claimed_by_whichever_process_is_free_equal_serial(tmp_path, monkeypatch):
    # no claim forced: this process and the workers race for the chunks (tiny files: this process mostly wins)
    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_FILES_MIN_BYTES", 0)
    source = _folder(tmp_path, n_files=20)
    for workers in (2, 3):
        same_traces(load_traces(source, workers=workers), load_traces(source, workers=1))


def test_claim_gives_each_chunk_to_one_process(tmp_path):
    claim = agentab.traces._parallel.claim
    assert [claim(str(tmp_path), k) for k in (1, 2, 1, 2, 3)] == [True, True, False, False, True]


def test_plan_chunks_shrink_and_cover_the_files_in_order():
    plan, shrinking = agentab.traces._plan.plan_chunks, agentab.traces._plan.shrinking
    per = agentab.traces._plan.CHUNKS_PER_PROCESS
    for processes in (2, 3, 4):
        cuts = shrinking(1.0, processes)
        sizes = [b - a for a, b in zip([0.0, *cuts], [*cuts, 1.0])]
        assert sizes[0] == 1 / (2 * processes)  # half a process's share first: it starts before the others
        assert all(a >= b for a, b in zip(sizes, sizes[1:]))  # never growing
        assert min(sizes[:-1]) >= 1 / (4 * processes * per) - 1e-12 and sizes[-1] <= 1.5 / (4 * processes * per)
        chunks = plan([1] * 1000, processes)
        assert chunks[0] == (0, round(500 / processes)) and chunks[-1][1] == 1000 and len(chunks) == len(cuts) + 1
        assert all(g[1] == h[0] and g[0] < g[1] for g, h in zip(chunks, chunks[1:]))
    assert plan([5, 5], 8) == [(0, 1), (1, 2)] and plan([5], 2) == [(0, 1)] and plan([3, 4], 1) == [(0, 2)]
    assert plan([0, 0, 0], 2) == [(0, 3)]
    big = plan([100, 1, 1, 1], 2)  # a file heavier than its share is a chunk alone
    assert big[0] == (0, 1) and big[-1][1] == 4


def test_cuts_keep_order_and_fall_nearest_their_targets():
    cut = agentab.traces._plan._cut

    def plan(weights, n):  # n groups of about equal weight
        return cut(weights, [sum(weights) * k / n for k in range(1, min(n, len(weights)))])

    assert plan([10] * 10, 2) == [(0, 5), (5, 10)]
    assert plan([10] * 9, 3) == [(0, 3), (3, 6), (6, 9)]
    assert plan([100, 1, 1, 1], 2) == [(0, 1), (1, 4)]
    assert plan([5, 5], 8) == [(0, 1), (1, 2)]
    assert plan([5], 2) == [(0, 1)]
    for weights in ([3, 1, 4, 1, 5, 9, 2, 6], [0, 0, 7], [1] * 50):
        for workers in (2, 3, 4):
            groups = plan(weights, workers)
            assert groups[0][0] == 0 and groups[-1][1] == len(weights) and len(groups) <= workers
            assert all(a < b for a, b in groups) and all(g[1] == h[0] for g, h in zip(groups, groups[1:]))


def test_lenient_rejections_and_duplicates_across_groups(tmp_path, files_in_parallel):
    bad = {("a", 4, 1): "{oops", ("b", 3, 2): json.dumps(make_record("a0-1", arm="b")),  # a duplicate of the first file's run
           ("b", 5, 0): json.dumps(make_record("b5-0", seed="x", arm="b"))}
    source = _folder(tmp_path, bad=bad)
    parallel = load_traces(source, workers=3, strict=False)
    same_traces(parallel, load_traces(source, workers=1, strict=False))
    assert len(parallel.rejected) == 3
    assert parallel.rejected["reason"].str.contains(r"first seen in .*runs00\.jsonl, line 2\)").sum() == 1


def test_strict_raises_the_serial_error(tmp_path, files_in_parallel):
    # a type error in a late file, and a duplicate before it (in an earlier worker's group): the duplicate is raised
    bad = {("b", 1, 0): json.dumps(make_record("a1-2", arm="b")),
           ("b", 5, 3): json.dumps(make_record("b5-3", seed="x", arm="b"))}
    source = _folder(tmp_path, bad=bad)
    with pytest.raises(TraceError) as serial:
        load_traces(source, workers=1)
    with pytest.raises(TraceError) as parallel:
        load_traces(source, workers=4)
    assert str(parallel.value) == str(serial.value) and "duplicate run_id 'a1-2'" in str(serial.value)


def test_a_file_no_format_reads_raises_as_serial_without_a_warning(tmp_path, files_in_parallel):
    source = _folder(tmp_path)
    (tmp_path / "b" / "runs04.jsonl").write_text("not json at all, and no format\n")
    with pytest.raises(TraceError) as serial:
        load_traces(source, workers=1, strict=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the worker did not fail: the loader raised, in its turn
        with pytest.raises(TraceError) as parallel:
            load_traces(source, workers=3, strict=False)
    assert str(parallel.value) == str(serial.value)


def test_a_crashed_files_worker_costs_only_time(tmp_path, files_in_parallel, monkeypatch):
    monkeypatch.setattr(agentab.traces._parallel, "_start", lambda command, out, stdin=None: subprocess.Popen(
        [sys.executable, "-c", "raise SystemExit(9)"]))
    source = _folder(tmp_path)
    with pytest.warns(RuntimeWarning, match=r"worker process failed \(exit code 9\); its files were read"):
        parallel = load_traces(source, workers=2)
    same_traces(parallel, load_traces(source, workers=1))


def test_a_files_worker_dying_after_claiming_chunks_costs_only_time(tmp_path, files_in_parallel, monkeypatch):
    """A worker that claims chunks and exits before writing them: this process does not wait for parts that will
    never come (it sees the worker gone) and reads them itself, in their turn."""
    dies = ("import json, os, sys\n"
            "manifest = json.loads(open(sys.stdin.read()).read())\n"
            "for k in range(1, len(manifest['chunks'])):\n"
            "    os.close(os.open(os.path.join(manifest['claims'], str(k)), os.O_CREAT | os.O_WRONLY, 0o600))\n"
            "raise SystemExit(7)\n")
    monkeypatch.setattr(agentab.traces._parallel, "_start", lambda command, out, stdin=None: subprocess.Popen(
        [sys.executable, "-c", dies], stdin=stdin, stderr=subprocess.DEVNULL))
    source = _folder(tmp_path)
    with pytest.warns(RuntimeWarning, match=r"worker process failed \(exit code 7\); its files were read"):
        parallel = load_traces(source, workers=2)
    same_traces(parallel, load_traces(source, workers=1))
    assert files_in_parallel == []  # no part merged: none was written


def test_progress_is_reported_for_every_file_in_order(tmp_path, files_in_parallel):
    source = _folder(tmp_path)
    seen = {w: [] for w in (1, 3)}
    for workers in seen:
        load_traces(source, workers=workers, progress=lambda path, done, total, w=workers: seen[w].append(
            (path, done, total)))
    assert seen[3] == seen[1] and len(seen[1]) == 12 and seen[1][-1][1:] == (12, 12)


def test_records_in_memory_keep_their_place_among_files(tmp_path, files_in_parallel):
    files = _folder(tmp_path)
    source = [files["a"], make_record("mem1", arm="a"), files["b"], make_record("mem2", arm="b")]
    same_traces(load_traces(source, workers=3), load_traces(source, workers=1))


@pytest.fixture
def harbor_trials(tmp_path):
    """Harbor trial folders (ATIF trajectory + result.json), two arms, as the format benchmark writes them."""
    paths, writers = format_files(tmp_path / "formats", seed=3, n_tasks=6, n_seeds=2)
    return {p.name: p for p in paths["atif"]}, dict(writers.ATIF_FIELDS)


def test_converted_formats_with_a_path_template(harbor_trials, files_in_parallel):
    source, fields = harbor_trials
    fields["path"] = "{task_id}__*/**"  # the workers apply the path template
    serial = load_traces(source, format="atif", fields=fields, workers=1)
    parallel = load_traces(source, format="atif", fields=fields, workers=3)
    same_traces(parallel, serial)
    assert len(files_in_parallel) >= 2 and len(serial.runs) == 24


def test_an_outcomes_table_is_joined_in_this_process(harbor_trials, files_in_parallel):
    source, fields = harbor_trials
    runs = load_traces(source, format="atif", fields=fields, workers=1).runs
    files_in_parallel.clear()
    outcomes = runs[["run_id"]].assign(outcome=[i % 3 == 0 for i in range(len(runs))])
    serial = load_traces(source, format="atif", fields=fields, outcomes=outcomes, workers=1)
    parallel = load_traces(source, format="atif", fields=fields, outcomes=outcomes, workers=3)
    same_traces(parallel, serial)
    assert files_in_parallel == [] and parallel.runs["outcome"].tolist() == outcomes["outcome"].tolist()


def test_a_files_worker_starts_without_pandas(tmp_path):
    # its start-up is paid on every parallel load: it imports the loader's reader, not the tables or statistics
    out = tmp_path / "files1"
    out.mkdir()
    path = write_jsonl(tmp_path / "x.jsonl", [make_record("r1"), make_record("r2")])
    (tmp_path / "claims").mkdir()
    manifest = {"format": "auto", "fields": None, "template": None, "strict": False, "first_ordinal": 0,
                "claims": str(tmp_path / "claims"), "chunks": [[0, 0], [0, 1]], "files": [[str(path), "a", None]]}
    code = agentab.traces._parallel._PACKAGES + (
        "from agentab.traces._reader import files_worker; code = files_worker(sys.argv[1:]); print(code, sorted(name for name in sys.modules if name.split('.')[0] in "
        "('pandas', 'scipy', 'statsmodels', 'matplotlib') or name.split('.')[:2] in "
        "(['agentab', 'comparison'], ['agentab', 'scoring'], ['agentab', 'stats'])))")
    (out / "manifest.json").write_text(json.dumps(manifest))  # as FileWorkers.send gives it: its path on stdin
    done = subprocess.run([sys.executable, "-c", code, agentab.traces._parallel.PACKAGE_FOLDER, str(out), "auto"],
                          input=str(out / "manifest.json"), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0 []"
    part = agentab.traces._parallel._read_part(out / "chunk1")[0]  # chunk 0 is the parent's
    assert part.n_read == 2 and json.loads((out / "chunk1" / "meta.json").read_text())["chosen"] == [[str(path), "record"]]
    assert part.next_ordinal == (1 << 40) + 2


def test_a_worker_given_no_manifest_exits_unused(tmp_path):
    # workers start while the source is listed; a load that needs fewer than were started closes the others' input
    workers = agentab.traces._parallel.FileWorkers(2, "swe-agent")
    procs = [proc for proc, _ in workers.slots]
    folder = Path(workers._tmp.name)
    for proc in procs:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    workers.close()
    assert not folder.exists() and [p.returncode for p in procs] == [0, 0]


def test_workers_started_while_listing_are_stopped_when_the_load_fails(tmp_path, files_in_parallel, monkeypatch):
    started = []
    original = agentab.traces._parallel.FileWorkers.__init__
    monkeypatch.setattr(agentab.traces._parallel.FileWorkers, "__init__",
                        lambda self, *args: original(self, *args) or started.append(self))
    source = _folder(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_traces({**source, "c": tmp_path / "missing"}, workers=3)
    assert len(started) == 1 and all(proc.poll() is not None for proc, _ in started[0].slots)
    assert not Path(started[0]._tmp.name).exists()


def test_a_corrupt_gzip_file_raises_as_serial_under_strict(tmp_path, files_in_parallel):
    # a chunk read apart has a lenient decoder, but the loader's strictness is the load's: the same error is raised
    source = _folder(tmp_path)
    (tmp_path / "b" / "runs03.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    with pytest.raises(TraceError) as serial:
        load_traces(source, workers=1)
    with pytest.raises(TraceError) as parallel:
        load_traces(source, workers=3)
    assert str(parallel.value) == str(serial.value)
    lenient = load_traces(source, workers=3, strict=False)
    same_traces(lenient, load_traces(source, workers=1, strict=False))
    assert "the rest of the file was left out" in lenient.rejected["reason"].iloc[0]
