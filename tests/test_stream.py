"""load_traces(engine="stream"): the same traces, rejections and scores as a load in memory, batch by batch."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
from conftest import make_record, write_jsonl

import agentab
import agentab.traces._stream
from agentab import TraceError, TrajectorySpec, load_traces, score
from agentab.errors import SpecWarning, TraceWarning
from agentab.traces._stream import line_blocks

DATA = Path(__file__).parent / "data"
SPEC = TrajectorySpec(required=("edit_file", "run_tests"), step_budget=15)


@pytest.fixture(scope="module")
def example_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "runs.jsonl"
    agentab.datasets.example_experiment(seed=0, n_tasks=6, n_seeds=2).to_jsonl(path)
    return path


def _same_scores(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs
    for column in a.columns:
        if isinstance(a[column].dtype, pd.CategoricalDtype):
            assert list(a[column].cat.categories) == list(b[column].cat.categories), column


def _same_load(memory, stream) -> None:
    pd.testing.assert_frame_equal(memory.rejected, stream.rejected)
    assert (memory.n_read, memory.sources, memory.formats) == (stream.n_read, stream.sources, stream.formats)
    assert len(memory) == len(stream) and memory.arms == stream.arms
    pd.testing.assert_series_equal(memory.task_ids(), stream.task_ids())


def test_line_blocks_are_whole_lines_with_their_numbers(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [make_record(f"r{i}", n_steps=i % 4) for i in range(40)])
    data = path.read_bytes()
    blocks = line_blocks(path, 3000)
    assert len(blocks) > 3 and blocks[0][0] == 0 and blocks[-1][1] == len(data)
    for (start, end, line), (next_start, _, _) in zip(blocks, blocks[1:]):
        assert end == next_start and data[next_start - 1:next_start] == b"\n"
    assert all(data.count(b"\n", 0, start) + 1 == line for start, _, line in blocks)


def test_stream_scores_equal_the_in_memory_scores(example_file):
    memory = load_traces(example_file)
    stream = load_traces(example_file, batch_size=10_000)  # batch_size alone: the stream engine
    assert stream.engine == "stream" and stream.n_batches > 5 and memory.engine == "memory"
    _same_load(memory, stream)
    assert sum(stream.map_batches(len)) == len(memory) and memory.map_batches(len) == [len(memory)]
    specs = agentab.datasets.example_specs(n_tasks=6)
    _same_scores(score(memory, specs), score(stream, specs))
    _same_scores(score(memory, SPEC), score(stream, SPEC))
    assert repr(stream).startswith(repr(memory)[:-1] + "; engine='stream', ")


def test_materialising_gives_the_in_memory_tables(example_file):
    memory = load_traces(example_file)
    stream = load_traces(example_file, engine="stream", batch_size=20_000)
    pd.testing.assert_frame_equal(memory.runs, stream.runs)
    pd.testing.assert_frame_equal(memory.steps, stream.steps)
    pd.testing.assert_series_equal(memory.metadata_values("model"), stream.metadata_values("model"))
    assert stream.in_memory() is stream.in_memory()  # loaded once


def test_compare_of_streamed_scores_is_identical(example_file):
    memory = score(load_traces(example_file), SPEC)
    stream = score(load_traces(example_file, engine="stream", batch_size=10_000), SPEC)
    a = agentab.compare(memory, metrics=["outcome", "tokens", "rubric"], n_resamples=199, seed=1)
    b = agentab.compare(stream, metrics=["outcome", "tokens", "rubric"], n_resamples=199, seed=1)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.decision == b.decision


def test_rejections_and_duplicates_across_batches(tmp_path):
    lines = [make_record(f"r{i}", task_id=f"t{i % 5}", seed=i, n_steps=i % 4) for i in range(60)]
    lines[7] = "{oops"
    lines[30] = make_record("r2")  # a duplicate of a run in an earlier batch
    lines[31] = make_record("r31", seed="x")
    lines[50] = make_record("r30")  # a duplicate of a rejected run's id is not one: r30 was accepted
    lines[55] = make_record("r40", steps=[{"index": 3, "tool": "x", "args": {}}])
    lines[58] = make_record("r58", n_steps=1)
    lines[59] = make_record("r58")  # a duplicate inside one batch
    path = write_jsonl(tmp_path / "x.jsonl", lines)
    memory = load_traces(path, strict=False)
    stream = load_traces(path, strict=False, batch_size=2_500)
    assert stream.n_batches > 10 and len(memory.rejected) >= 5
    _same_load(memory, stream)
    _same_scores(score(memory, TrajectorySpec(step_budget=2)), score(stream, TrajectorySpec(step_budget=2)))
    with pytest.raises(TraceError) as in_memory:
        load_traces(path)
    with pytest.raises(TraceError) as streamed:
        load_traces(path, batch_size=2_500)
    assert str(streamed.value) == str(in_memory.value)


def test_the_earliest_problem_of_a_strict_load_is_a_cross_batch_duplicate(tmp_path):
    lines = [make_record(f"r{i}", seed=i) for i in range(30)] + [make_record("r3")]
    path = write_jsonl(tmp_path / "x.jsonl", lines)
    with pytest.raises(TraceError, match=r"line 31, field run_id: duplicate run_id 'r3' \(first seen in .*x.jsonl, line 4\)") as streamed:
        load_traces(path, engine="stream", batch_size=2_000)
    with pytest.raises(TraceError) as in_memory:
        load_traces(path)
    assert str(streamed.value) == str(in_memory.value)


def test_outcomes_mixing_true_false_with_numbers_are_typed_as_one_load(tmp_path):
    lines = [make_record(f"r{i}", seed=i, outcome=True if i < 20 else 0.5) for i in range(24)]
    path = write_jsonl(tmp_path / "x.jsonl", lines)
    with pytest.warns(TraceWarning, match=r"20 runs\) with numbers \(4 runs"):
        memory = load_traces(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream = load_traces(path, batch_size=2_000)
        scores = score(stream)
    assert [str(w.message) for w in caught if w.category is TraceWarning] == [
        "outcome mixes true/false (20 runs) with numbers (4 runs); true/false are read as 1.0/0.0"]
    _same_scores(score(memory), scores)
    assert scores["outcome"].dtype == "float64" and scores.attrs["metrics"]["outcome"]["kind"] == "continuous"


def test_warnings_are_given_once_with_the_counts_of_all_runs(tmp_path):
    lines = [make_record(f"r{i}", task_id=f"t{i % 3}", seed=i, latency_s=None if i % 2 else 3.0,
                         metadata={"claimed_success": "yes" if i % 4 == 0 else True}) for i in range(24)]
    path = write_jsonl(tmp_path / "x.jsonl", lines)
    specs = {"t0": TrajectorySpec(required=("never_called",), time_limit=10), "t1": SPEC, "t9": SPEC}

    def warned(traces):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = score(traces, specs, default=TrajectorySpec())
        return table, [(w.category, str(w.message)) for w in caught]

    memory, memory_warnings = warned(load_traces(path))
    stream, stream_warnings = warned(load_traces(path, batch_size=2_000))
    _same_scores(memory, stream)
    assert len(memory_warnings) >= 4 and all(kind is SpecWarning for kind, _ in memory_warnings)
    assert stream_warnings == memory_warnings
    with pytest.raises(ValueError) as in_memory:
        score(load_traces(path), {"t0": SPEC})
    with pytest.raises(ValueError) as streamed:
        score(load_traces(path, batch_size=2_000), {"t0": SPEC})
    assert str(streamed.value) == str(in_memory.value)


def test_folders_file_by_file_with_every_kind_of_file(tmp_path, example_file):
    folder = tmp_path / "runs"
    (folder / "b").mkdir(parents=True)
    shutil.copy(example_file, folder / "a.jsonl")
    records = [make_record(f"x{i}", seed=i) for i in range(5)]
    (folder / "b" / "array.json").write_text(json.dumps(records))
    with gzip.open(folder / "b" / "more.jsonl.gz", "wt") as fh:
        fh.write("\n".join(json.dumps(make_record(f"g{i}", seed=i)) for i in range(5)) + "\n{bad\n")
    (folder / "empty.jsonl").write_text("")
    memory = load_traces({"baseline": folder}, strict=False)
    stream = load_traces({"baseline": folder}, strict=False, engine="stream", batch_size=30_000)
    _same_load(memory, stream)
    _same_scores(score(memory, SPEC), score(stream, SPEC))


def test_otel_blocks_hold_whole_traces(tmp_path, monkeypatch):
    lines = []  # the fixture's two traces (eight lines of spans), with an outcome
    for line in (DATA / "otel_families" / "openinference.jsonl").read_text().splitlines():
        batch = json.loads(line)
        batch["resourceSpans"][0]["resource"]["attributes"].append({"key": "eval.passed",
                                                                    "value": {"boolValue": True}})
        lines.append(json.dumps(batch))
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fields = {"task_id": r"span.name:^solve (?P<task_id>[\w-]+)", "seed": "resource:eval.seed",
              "outcome": "resource:eval.passed"}
    merged = []
    merge = agentab.traces._stream.merge_keyed
    monkeypatch.setattr(agentab.traces._stream, "merge_keyed", lambda *a: merged.append(merge(*a)) or merged[-1])
    memory = load_traces(path, fields=fields)
    stream = load_traces(path, fields=fields, batch_size=1_500)  # smaller than a trace: blocks are merged
    assert len(memory) == 2 and stream.n_batches == 2 and merged and merged[0][1] == [0, 1]
    _same_load(memory, stream)
    _same_scores(score(memory), score(stream))
    pd.testing.assert_frame_equal(memory.runs, stream.runs)


def test_what_the_stream_engine_refuses():
    with pytest.raises(TypeError, match="records given in memory are loaded in memory"):
        load_traces([make_record()], engine="stream")
    with pytest.raises(TypeError, match="`engine` == 'spark'"):
        load_traces("x.jsonl", engine="spark")
    with pytest.raises(TypeError, match="give it with engine='stream' or 'dask'"):
        load_traces("x.jsonl", engine="memory", batch_size=10)
    with pytest.raises(TypeError, match="`batch_size` must be a positive"):
        load_traces("x.jsonl", batch_size=0)
    with pytest.raises(TypeError, match="give it with engine='dask'"):
        load_traces("x.jsonl", engine="stream", scheduler="tcp://127.0.0.1:1")
    with pytest.raises(TypeError, match="`outcomes` is joined in memory"):
        load_traces("x.jsonl", engine="stream", outcomes="o.csv")


def test_an_empty_source_is_the_same_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(TraceError) as in_memory:
        load_traces(path)
    with pytest.raises(TraceError) as streamed:
        load_traces(path, engine="stream")
    assert str(streamed.value) == str(in_memory.value)


def test_the_command_line_engine_flags(tmp_path, capsys):
    from agentab.cli import EXIT_BAD_INPUT, main

    out = tmp_path / "example"
    assert main(["example", "--out", str(out), "--tasks", "6", "--seeds", "2"]) == 0
    spec = str(out / "spec.json")
    assert main(["score", str(out), "--spec", spec, "-o", str(tmp_path / "memory.csv"), "-q"]) == 0
    assert main(["score", str(out), "--spec", spec, "--engine", "stream", "-o", str(tmp_path / "stream.csv"),
                 "-q"]) == 0
    assert (tmp_path / "memory.csv").read_bytes() == (tmp_path / "stream.csv").read_bytes()
    capsys.readouterr()
    assert main(["score", str(out), "--scheduler", "tcp://127.0.0.1:1", "-q"]) == EXIT_BAD_INPUT
    assert "--scheduler names a Dask scheduler: give it with --engine dask" in capsys.readouterr().err
