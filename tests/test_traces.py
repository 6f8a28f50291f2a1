"""Loading trace records: every field, every input form, every bad-input case."""

from __future__ import annotations

import gzip
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import make_record, write_jsonl

import agentab
import agentab.formats.decode
from agentab import TraceError, TraceWarning, load_traces, read_traces


# --------------------------------------------------------------------------- #
# Every field lands in the right column with the right dtype
# --------------------------------------------------------------------------- #
def test_every_record_field_becomes_a_column():
    traces = load_traces([make_record()])
    run = traces.runs.iloc[0]
    assert run["run_id"] == "r1" and run["task_id"] == "t1" and run["seed"] == 0
    assert run["arm"] == "baseline" and run["model"] == "sonnet-4" and run["harness"] == "react-v1"
    assert run["outcome"] is True or run["outcome"] == True  # noqa: E712 (pandas boolean scalar)
    assert run["n_steps"] == 2 and run["n_errors"] == 0
    assert run["tokens_in"] == 801 + 800 - 0 and run["tokens_out"] == 40 + 41
    assert run["tokens"] == run["tokens_in"] + run["tokens_out"]
    assert run["cost_usd"] == pytest.approx(0.0123) and run["latency_s"] == pytest.approx(4.5)
    assert run["retries"] == 1 and run["backtracks"] == 0
    assert (run["files_created"], run["files_modified"], run["files_deleted"], run["external_calls"]) == (1, 1, 0, 1)
    state = json.loads(run["terminal_state"])
    assert state["rows_inserted"] == 3  # other keys are kept
    assert json.loads(run["metadata"])["temperature"] == 0.2
    assert run["source"] == "<records>" and run["line"] == 1

    steps = traces.steps
    assert list(steps["index"]) == [0, 1]
    assert list(steps["tool"]) == ["read_file", "write_file"]
    assert steps.loc[0, "args"] == '{"mode":"r","path":"src/f0.py"}'  # canonical: sorted keys, no spaces
    assert list(steps["status"]) == ["ok", "ok"]
    assert steps["error"].isna().all()
    assert list(steps["tokens_in"]) == [800, 801] and list(steps["tokens_out"]) == [40, 41]
    assert steps.loc[0, "started_at"] == pd.Timestamp("2026-11-02T09:00:00Z")
    assert steps.loc[1, "ended_at"] == pd.Timestamp("2026-11-02T09:00:03.5Z")
    assert json.loads(steps.loc[1, "observation"]) == {"status": "ok", "bytes": 200}


def test_dtypes_are_proper():
    traces = load_traces([make_record("a"), make_record("b", seed=1)])
    runs, steps = traces.runs, traces.steps
    for column in ("run_id", "task_id", "arm", "model", "harness", "source"):
        assert isinstance(runs[column].dtype, pd.CategoricalDtype), column
    for column in ("seed", "n_steps", "n_errors", "tokens_in", "tokens_out", "tokens", "retries", "backtracks",
                   "files_created", "files_modified", "files_deleted", "external_calls", "line"):
        assert runs[column].dtype == "Int64", column
    assert runs["outcome"].dtype == "boolean"
    assert runs["cost_usd"].dtype == np.float64 and runs["latency_s"].dtype == np.float64
    for column in ("run_id", "tool", "status"):
        assert isinstance(steps[column].dtype, pd.CategoricalDtype), column
    assert list(steps["status"].cat.categories) == ["ok", "error"]
    assert steps["run_id"].dtype == runs["run_id"].dtype  # same categories: joins and groupbys line up
    assert str(steps["started_at"].dtype) == "datetime64[ns, UTC]"
    for column in ("index", "tokens_in", "tokens_out"):
        assert steps[column].dtype == "Int64", column
    for column in ("args", "observation", "error"):
        assert isinstance(steps[column].dtype, pd.StringDtype), column


def test_equal_arguments_compare_equal_whatever_their_key_order():
    a = make_record("a", steps=[{"index": 0, "tool": "t", "args": {"b": {"y": 1, "x": [2, {"d": 1, "c": 0}]}, "a": 1}}])
    b = make_record("b", steps=[{"index": 0, "tool": "t", "args": {"a": 1, "b": {"x": [2, {"c": 0, "d": 1}], "y": 1}}}])
    args = load_traces([a, b]).steps["args"]
    assert args[0] == args[1] == '{"a":1,"b":{"x":[2,{"c":0,"d":1}],"y":1}}'


def test_errors_and_missing_values():
    rec = make_record(steps=[
        {"index": 0, "tool": "read_file", "args": {"path": "src/mian.py"},
         "observation": {"status": "error", "error": "FileNotFoundError: src/mian.py"}},
        {"index": 1, "tool": "http_get", "args": {}, "observation": {"status": "error", "error": {"code": 503}},
         "tokens_in": 5, "tokens_out": 1},
        {"index": 2, "tool": "run_tests", "args": {}, "observation": None},
    ])
    del rec["terminal_state"], rec["retries"], rec["cost_usd"], rec["metadata"]
    traces = load_traces([rec])
    run = traces.runs.iloc[0]
    assert run["n_errors"] == 2
    assert pd.isna(run["tokens_in"]) and pd.isna(run["tokens"])  # unknown, not zero
    assert pd.isna(run["retries"]) and pd.isna(run["files_created"]) and math.isnan(run["cost_usd"])
    assert pd.isna(run["model"]) and pd.isna(run["metadata"])
    steps = traces.steps
    assert list(steps["error"][:2]) == ["FileNotFoundError: src/mian.py", '{"code":503}']
    assert pd.isna(steps.loc[2, "status"]) and pd.isna(steps.loc[2, "observation"])


def test_numeric_outcomes_and_integer_ids():
    recs = [make_record(run_id=1, task_id=7, outcome=3), make_record(run_id=2, task_id=7, outcome=0.5)]
    runs = load_traces(recs).runs
    assert runs["outcome"].dtype == np.float64 and list(runs["outcome"]) == [3.0, 0.5]
    assert list(runs["run_id"]) == ["1", "2"] and list(runs["task_id"]) == ["7", "7"]


def test_mixed_bool_and_number_outcomes_warn():
    with pytest.warns(TraceWarning, match=r"outcome mixes true/false \(1 runs\) with numbers \(1 runs\)"):
        runs = load_traces([make_record("a", outcome=True), make_record("b", outcome=2)]).runs
    assert list(runs["outcome"]) == [1.0, 2.0]


def test_epoch_second_timestamps_and_offsets():
    steps = [
        {"index": 0, "tool": "t", "args": {}, "started_at": 1_793_610_000, "ended_at": 1_793_610_001.25},
        {"index": 1, "tool": "t", "args": {}, "started_at": "2026-11-02T10:00:00+01:00", "ended_at": "2026-11-02T09:00:01"},
    ]
    got = load_traces([make_record(steps=steps)]).steps
    assert got.loc[0, "started_at"] == pd.Timestamp(1_793_610_000, unit="s", tz="UTC")
    assert got.loc[0, "ended_at"] == pd.Timestamp(1_793_610_001.25, unit="s", tz="UTC")
    assert got.loc[1, "started_at"] == pd.Timestamp("2026-11-02T09:00:00Z")  # offset converted to UTC
    assert got.loc[1, "ended_at"] == pd.Timestamp("2026-11-02T09:00:01Z")  # no offset: read as UTC


def test_zero_step_runs():
    traces = load_traces([make_record("a", steps=[]), make_record("b", steps=[])])
    assert len(traces.steps) == 0 and list(traces.runs["n_steps"]) == [0, 0]
    assert traces.runs["tokens"].isna().all()  # no step recorded any: unknown, not 0


# --------------------------------------------------------------------------- #
# Input forms
# --------------------------------------------------------------------------- #
def _ids(traces):
    return list(traces.runs["run_id"])


def test_jsonl_json_gz_and_directory(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [make_record("a1"), make_record("a2")])
    (tmp_path / "b.json").write_text(json.dumps([make_record("b1"), make_record("b2")], indent=2))
    write_jsonl(tmp_path / "c.jsonl.gz", [make_record("c1")])
    (tmp_path / "d.json.gz").write_bytes(gzip.compress(json.dumps([make_record("d1")]).encode()))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "e.json").write_text(json.dumps(make_record("e1")))  # one record, not an array
    write_jsonl(tmp_path / "sub" / "f.ndjson", [make_record("f1")])
    (tmp_path / "notes.txt").write_text("not traces")

    assert _ids(load_traces(tmp_path / "a.jsonl")) == ["a1", "a2"]
    assert _ids(load_traces(str(tmp_path / "b.json"))) == ["b1", "b2"]
    assert _ids(load_traces(tmp_path / "c.jsonl.gz")) == ["c1"]
    assert _ids(load_traces(tmp_path / "d.json.gz")) == ["d1"]
    traces = load_traces(tmp_path)
    assert _ids(traces) == ["a1", "a2", "b1", "b2", "c1", "d1", "e1", "f1"]
    assert len(traces.sources) == 6 and traces.n_read == 8
    # line numbers point at each record, also inside a pretty-printed array
    b = load_traces(tmp_path / "b.json").runs
    text = (tmp_path / "b.json").read_text().splitlines()
    assert all(text[line - 1].strip() == "{" for line in b["line"])
    assert b["line"].iloc[1] > b["line"].iloc[0] > 1


def test_list_of_paths_records_and_mixed(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [make_record("a1")])
    b = write_jsonl(tmp_path / "b.jsonl", [make_record("b1")])
    assert _ids(load_traces([a, str(b)])) == ["a1", "b1"]
    assert _ids(load_traces((make_record("x"), make_record("y")))) == ["x", "y"]
    assert _ids(load_traces([a, make_record("x")])) == ["a1", "x"]


def test_arm_mapping_and_arm_argument(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", [make_record("a", arm=None) | {"arm": None}])
    cand = write_jsonl(tmp_path / "cand.jsonl", [{k: v for k, v in make_record("b").items() if k != "arm"}])
    traces = load_traces({"baseline": base, "candidate": cand})
    assert list(traces.runs["arm"]) == ["baseline", "candidate"] and traces.arms == ["baseline", "candidate"]
    assert list(load_traces(cand, arm="v2").runs["arm"]) == ["v2"]
    records = [make_record("a", arm="A"), make_record("b", arm="B")]
    assert list(load_traces({"A": records[:1], "B": records[1:]}).runs["arm"]) == ["A", "B"]


def test_parquet_round_trip(tmp_path):
    traces = load_traces([make_record("a"), make_record("b", outcome=False, steps=[]), make_record("c", cost_usd=None)])
    back = read_traces(traces.to_parquet(tmp_path / "out"))
    pd.testing.assert_frame_equal(back.runs, traces.runs)
    pd.testing.assert_frame_equal(back.steps, traces.steps)
    assert back.n_read == 3 and back.sources == ("<records>",)


def test_to_records_and_jsonl_round_trip(tmp_path):
    original = [make_record("a", outcome=1), make_record("b", outcome=2.5, steps=[])]
    traces = load_traces(original)
    again = load_traces(traces.to_jsonl(tmp_path / "x.jsonl"))
    pd.testing.assert_frame_equal(again.runs.drop(columns=["source"]), traces.runs.drop(columns=["source"]))
    pd.testing.assert_frame_equal(again.steps, traces.steps)


def test_many_chunks_give_the_same_tables(monkeypatch):
    records = [make_record(f"r{i}", task_id=f"t{i % 3}", seed=i, n_steps=i % 4) for i in range(25)]
    whole = load_traces(records)
    monkeypatch.setattr(agentab.formats.decode, "CHUNK_RECORDS", 4)
    chunked = load_traces(records)
    pd.testing.assert_frame_equal(chunked.runs, whole.runs)
    pd.testing.assert_frame_equal(chunked.steps, whole.steps)


# --------------------------------------------------------------------------- #
# Bad input: each case names the file, line and field
# --------------------------------------------------------------------------- #
def _bad(path, records, match, **kwargs):
    write_jsonl(path, records)
    with pytest.raises(TraceError, match=match):
        load_traces(path, **kwargs)


def _steps_with(**changes):
    step = {"index": 0, "tool": "t", "args": {}}
    step.update(changes)
    return [step]


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (['{"run_id": "r1", "task_id": '], r"x\.jsonl, line 1: malformed JSON: Expecting value \(column 28\)"),
        ([make_record("a"), "{not json}"], r"x\.jsonl, line 2: malformed JSON: Expecting property name"),
        (["[1, 2]"], r"line 1: expected a JSON object \(one run\), got list"),
        ([{k: v for k, v in make_record().items() if k != "run_id"}], r"line 1, field run_id: missing required field"),
        ([{k: v for k, v in make_record().items() if k != "outcome"}], r"line 1, field outcome: missing required field"),
        ([make_record(steps=[{"index": 0, "args": {}}])], r"field steps\[0\]\.tool: missing required field"),
        ([make_record(seed="seven")], r"field seed: expected int, got str"),
        ([make_record(outcome=None)], r"field outcome: expected bool \| float, got null"),
        ([make_record(steps=_steps_with(args=["a"]))], r"field steps\[0\]\.args: expected object, got array"),
        ([make_record(metadata={"model": 4})], r"field metadata\.model: expected text, got 4"),
        ([make_record(terminal_state={"files_created": "a.txt"})], r"field terminal_state\.files_created: expected a list, got str"),
        ([make_record(cost=0.1)], r"field cost: unknown field \(free-form data belongs in metadata\)"),
        ([make_record(steps=_steps_with(thought="hmm"))], r"field steps\[0\]\.thought: unknown field"),
        ([make_record(steps=_steps_with(tokens_in=-5))], r"line 1, field steps\[0\]\.tokens_in: expected int >= 0, got -5"),
        ([make_record(cost_usd=-0.01)], r"field cost_usd: expected float >= 0(\.0)?, got -0\.01"),
        (['{"run_id": "r", "task_id": "t", "seed": 0, "steps": [], "outcome": true, "cost_usd": NaN}'],
         r"field cost_usd: non-finite number \(NaN or Infinity\) is not allowed"),
        (['{"run_id": "r", "task_id": "t", "seed": 0, "steps": [], "outcome": true, "latency_s": Infinity}'],
         r"field latency_s: non-finite number"),
        (['{"run_id": "r", "task_id": "t", "seed": 0, "steps": [], "outcome": true, "latency_s": 1e400}'],
         r"field latency_s: number out of range"),
        ([make_record(steps=_steps_with(index=1))], r"field steps\[0\]\.index: expected 0 \(step indices must be 0\.\.0 in order\), got 1"),
        ([make_record(n_steps=3) | {"steps": [make_record(n_steps=3)["steps"][i] for i in (0, 2, 1)]}],
         r"field steps\[1\]\.index: expected 1 .*got 2"),
        ([make_record(steps=_steps_with(observation={"status": "failed"}))], r"field steps\[0\]\.observation\.status: expected 'ok' or 'error', got \"failed\""),
        ([make_record(steps=_steps_with(started_at="yesterday"))], r"field steps\[0\]\.started_at: not an ISO-8601 timestamp between 1677 and 2262: 'yesterday'"),
        ([make_record(steps=_steps_with(started_at=1_793_610_000_000))], r"field steps\[0\]\.started_at: epoch seconds out of range.*milliseconds"),
        ([make_record(steps=_steps_with(started_at="2026-11-02T09:00:05Z", ended_at="2026-11-02T09:00:01Z"))],
         r"field steps\[0\]\.ended_at: ended_at 2026-11-02T09:00:01.* is before started_at"),
        ([make_record("a"), make_record("b"), make_record("a")], r"line 3, field run_id: duplicate run_id 'a' \(first seen in .*x\.jsonl, line 1\)"),
    ],
)
def test_bad_records_are_named_by_file_line_and_field(tmp_path, lines, match):
    _bad(tmp_path / "x.jsonl", lines, match)


def test_malformed_json_array_names_the_line(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text('[\n  {"run_id": "a",\n   "task_id": }\n]\n')
    with pytest.raises(TraceError, match=r"runs\.json, line 3: malformed JSON: Expecting value"):
        load_traces(path)


def test_bad_element_of_json_array_names_its_line(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([make_record("a"), make_record("b", seed=-0.5)], indent=1))
    lines = path.read_text().splitlines()
    expected = [i for i, text in enumerate(lines, start=1) if text == " {"][1]
    with pytest.raises(TraceError, match=rf"runs\.json, line {expected}, field seed: expected int, got float"):
        load_traces(path)


def test_duplicate_run_id_across_files(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [make_record("x")])
    write_jsonl(tmp_path / "b.jsonl", [make_record("y"), make_record("x")])
    with pytest.raises(TraceError, match=r"b\.jsonl, line 2, field run_id: duplicate run_id 'x' \(first seen in .*a\.jsonl, line 1\)"):
        load_traces(tmp_path)


def test_in_memory_records_name_their_position():
    with pytest.raises(TraceError, match=r"<records>, record 2, field steps\[0\]\.tokens_out: expected int >= 0, got -1"):
        load_traces([make_record("a"), make_record("b", steps=_steps_with(tokens_out=-1))])
    with pytest.raises(TraceError, match=r"record 1, field cost_usd: non-finite number"):
        load_traces([make_record(cost_usd=float("nan"))])
    with pytest.raises(TraceError, match=r"record 1: record is not JSON-serialisable: object is not"):
        load_traces([make_record(metadata={"model": object()})])


def test_numpy_scalars_in_records_are_accepted():
    rec = make_record(seed=np.int64(3), cost_usd=np.float32(0.5), outcome=np.bool_(False))
    run = load_traces([rec]).runs.iloc[0]
    assert run["seed"] == 3 and run["cost_usd"] == 0.5 and not run["outcome"]


def test_arm_conflicts(tmp_path):
    path = write_jsonl(tmp_path / "cand.jsonl", [make_record("a", arm="baseline")])
    with pytest.raises(TraceError, match=r"cand\.jsonl, line 1, field arm: record says arm 'baseline', but this source was given as arm 'candidate'"):
        load_traces({"candidate": path})
    with pytest.raises(TraceError, match=r"given as arm 'v2'"):
        load_traces(path, arm="v2")


@pytest.mark.parametrize("make", [
    lambda p: write_jsonl(p / "empty.jsonl", []),
    lambda p: (p / "blank.jsonl").write_text("\n\n  \n") and p / "blank.jsonl",
    lambda p: (p / "e.json").write_text("[]") and p / "e.json",
])
def test_empty_input_is_an_error(tmp_path, make):
    path = make(tmp_path)
    with pytest.raises(TraceError, match=r"no trace records found in .*"):
        load_traces(path)


def test_empty_list_and_empty_directory(tmp_path):
    with pytest.raises(TraceError, match=r"no trace records found in an empty list"):
        load_traces([])
    with pytest.raises(TraceError, match=r"no \.jsonl.* files in this directory"):
        load_traces(tmp_path)


def test_bad_arguments_and_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl: no such file or directory"):
        load_traces(tmp_path / "nope.jsonl")
    (tmp_path / "x.csv").write_text("a,b")
    with pytest.raises(TraceError, match=r"x\.csv: unknown file type"):
        load_traces(tmp_path / "x.csv")
    with pytest.raises(TypeError, match=r"not both"):
        load_traces({"a": []}, arm="b")
    with pytest.raises(TypeError, match=r"looks like a single trace record"):
        load_traces(make_record())
    with pytest.raises(TypeError, match=r"`strict` must be True or False, got 'no'"):
        load_traces([make_record()], strict="no")
    with pytest.raises(TypeError, match=r"item 2 of the source list is a int"):
        load_traces([make_record(), 3])
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip at all")
    with pytest.raises(TraceError, match=r"bad\.jsonl\.gz: cannot read file"):
        load_traces(tmp_path / "bad.jsonl.gz")


def test_strict_reports_the_earliest_problem(tmp_path):
    # a timestamp problem (found when a chunk is converted) on line 1 comes before a type error on line 3
    _bad(tmp_path / "x.jsonl",
         [make_record("a", steps=_steps_with(started_at="soon")), make_record("b"), make_record("c", seed="x")],
         r"line 1, field steps\[0\]\.started_at")


# --------------------------------------------------------------------------- #
# strict=False: nothing is lost
# --------------------------------------------------------------------------- #
def test_lenient_loading_accounts_for_every_record(tmp_path, monkeypatch):
    monkeypatch.setattr(agentab.formats.decode, "CHUNK_RECORDS", 3)
    lines = [
        make_record("a"),
        "{broken",
        make_record("b", steps=_steps_with(tokens_in=-1)),
        make_record("a"),  # duplicate of line 1
        make_record("c", steps=_steps_with(ended_at="2000-01-01T00:00:00Z", started_at="2001-01-01T00:00:00Z")),
        make_record("d", n_steps=3),
        make_record("c"),  # not a duplicate: the first "c" was rejected
    ]
    write_jsonl(tmp_path / "x.jsonl", lines)
    traces = load_traces(tmp_path / "x.jsonl", strict=False)
    assert list(traces.runs["run_id"]) == ["a", "d", "c"]
    assert traces.n_read == 7 == len(traces.runs) + len(traces.rejected)
    rejected = traces.rejected
    assert list(rejected["line"]) == [2, 3, 4, 5]
    assert list(rejected["field"].fillna("-")) == ["-", "steps[0].tokens_in", "run_id", "steps[0].ended_at"]
    assert rejected["reason"].str.len().gt(10).all()
    assert list(rejected["run_id"].fillna("-")) == ["-", "b", "a", "c"]
    # the rejected records' steps are gone too
    assert set(traces.steps["run_id"]) == {"a", "d", "c"}
    assert len(traces.steps) == 2 + 3 + 2
    assert "4 rejected" in repr(traces)


def test_lenient_malformed_json_array_counts_the_file(tmp_path):
    (tmp_path / "a.json").write_text("[{]")
    write_jsonl(tmp_path / "b.jsonl", [make_record("b")])
    traces = load_traces(tmp_path, strict=False)
    assert traces.n_read == 2 and len(traces.runs) == 1
    assert "whole file was left out" in traces.rejected.loc[0, "reason"]


def test_lenient_all_rejected_gives_empty_tables_with_dtypes(tmp_path):
    traces = load_traces([make_record(seed="x")], strict=False)
    assert len(traces.runs) == 0 and len(traces.steps) == 0 and len(traces.rejected) == 1
    assert traces.runs["n_steps"].dtype == "Int64" and isinstance(traces.steps["tool"].dtype, pd.CategoricalDtype)


def test_no_warning_for_clean_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_traces([make_record("a"), make_record("b")])


def test_package_exports():
    for name in ("load_traces", "read_traces", "Traces", "TraceError", "datasets", "summarize"):
        assert hasattr(agentab, name)
    assert issubclass(TraceError, ValueError)


# --------------------------------------------------------------------------- #
# Edge cases found in review (each was once wrong)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("value", "match"), [
    ("2300-01-01T00:00:00Z", r"not an ISO-8601 timestamp between 1677 and 2262: '2300-01-01T00:00:00Z'"),
    ("1600-01-01T00:00:00Z", r"not an ISO-8601 timestamp between 1677 and 2262"),
    ("now", r"not an ISO-8601 timestamp between 1677 and 2262: 'now'"),
    ("today", r"not an ISO-8601 timestamp between 1677 and 2262: 'today'"),
    (9.5e9, r"epoch seconds out of range: 9500000000\.0"),
    (-9.5e9, r"epoch seconds out of range"),
])
def test_timestamps_out_of_range_are_rejected_not_wrapped(value, match):
    with pytest.raises(TraceError, match=rf"field steps\[0\]\.started_at: {match}"):
        load_traces([make_record(steps=_steps_with(started_at=value))])
    # also when the bad text sits among good ones (pandas parses the chunk then)
    steps = _steps_with(started_at="2026-01-01T00:00:00Z") + [{"index": 1, "tool": "t", "args": {}, "started_at": value}]
    with pytest.raises(TraceError, match=rf"field steps\[1\]\.started_at: {match}"):
        load_traces([make_record(steps=steps)])


def test_one_rejection_per_record_and_no_cap(tmp_path):
    two_bad = make_record("a", steps=_steps_with(started_at="x", ended_at="y"))
    backwards = [make_record(f"b{i}", steps=_steps_with(started_at="2026-01-01T00:00:05Z",
                                                        ended_at="2026-01-01T00:00:01Z")) for i in range(1200)]
    traces = load_traces([two_bad, *backwards, make_record("ok")], strict=False)
    assert list(traces.runs["run_id"]) == ["ok"]
    assert len(traces.rejected) == 1201 and traces.n_read == 1202


@pytest.mark.parametrize(("record", "match"), [
    (make_record(steps=_steps_with(observation={"status": ["ok"]})), r"field steps\[0\]\.observation\.status: expected 'ok' or 'error', got \[\"ok\"\]"),
    (make_record(steps=_steps_with(observation={"status": {}})), r"field steps\[0\]\.observation\.status"),
    (make_record(seed=2**63), r"field seed: expected int <= 9223372036854775807"),
    (make_record(retries=2**63), r"field retries: expected int <= 9223372036854775807"),
    (make_record(steps=_steps_with(tokens_in=2**63)), r"field steps\[0\]\.tokens_in: expected int <= 9223372036854775807"),
    (make_record(n_steps=2) | {"steps": [{"index": i, "tool": "t", "args": {}, "tokens_in": 5 * 10**18} for i in range(2)]},
     r"field steps\[\*\]\.tokens_in: the run's total 10000000000000000000 does not fit in 64 bits"),
    (make_record(steps=_steps_with(tokens_in=5 * 10**18, tokens_out=5 * 10**18)),
     r"field steps\[\*\]\.tokens_out: the run's total of tokens_in and tokens_out does not fit in 64 bits"),
])
def test_values_a_column_cannot_hold_are_rejected(record, match):
    with pytest.raises(TraceError, match=match):
        load_traces([record])
    assert len(load_traces([record, make_record("z")], strict=False).rejected) == 1


def test_deep_nesting_is_a_trace_error(tmp_path):
    deep = "[" * 3000 + "]" * 3000
    line = '{"run_id": "r", "task_id": "t", "seed": 0, "outcome": true, "steps": [], "metadata": {"x": ' + deep + "}}"
    _bad(tmp_path / "x.jsonl", [line], r"line 1: .*(nested too deeply|recursion)")
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    record = make_record()
    record["metadata"] = {"x": nested}
    with pytest.raises(TraceError, match=r"record 1: record is not JSON-serialisable"):
        load_traces([record])


def test_corrupt_gzip_body_is_a_trace_error(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl.gz", [make_record(f"r{i}") for i in range(50)])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match=r"x\.jsonl\.gz: cannot read file"):
        load_traces(path)


def test_nan_inside_a_json_array_names_line_and_field(tmp_path):
    path = tmp_path / "runs.json"
    good = json.dumps(make_record("a"))
    bad = json.dumps(make_record("b", cost_usd=float("nan")))
    path.write_text(f"[\n{good},\n{bad}\n]\n")
    with pytest.raises(TraceError, match=r"runs\.json, line 3, field cost_usd: non-finite number"):
        load_traces(path)
    traces = load_traces(path, strict=False)
    assert list(traces.runs["run_id"]) == ["a"] and traces.n_read == 2


def test_json_array_line_numbers_with_identical_elements(tmp_path):
    path = tmp_path / "runs.json"
    rec = json.dumps(make_record("a"))
    path.write_text(f"[\n{rec},\n{rec},\n1\n]")
    traces = load_traces(path, strict=False)
    assert list(traces.runs["line"]) == [2]
    assert list(traces.rejected["line"]) == [3, 4]
    assert "first seen in" in traces.rejected.loc[0, "reason"] and "line 2)" in traces.rejected.loc[0, "reason"]


def test_single_object_json_syntax_error_line(tmp_path):
    path = tmp_path / "one.json"
    path.write_text('\n\n{"run_id": "a",\n "task_id": "t",\n "seed": ,\n "steps": []}\n')
    with pytest.raises(TraceError, match=r"one\.json, line 5: malformed JSON"):
        load_traces(path)
    path.write_text('\n\n' + json.dumps(make_record("a")))
    assert list(load_traces(path).runs["line"]) == [3]


def test_byte_order_mark_is_skipped(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"\xef\xbb\xbf" + json.dumps(make_record("a")).encode() + b"\n")
    b = tmp_path / "b.json"
    b.write_bytes(b"\xef\xbb\xbf" + json.dumps([make_record("b")]).encode())
    assert _ids(load_traces([a, b])) == ["a", "b"]


@pytest.mark.parametrize("chunk", [1, 2, 2048])
def test_a_rejected_run_does_not_shadow_a_valid_one(monkeypatch, chunk):
    monkeypatch.setattr(agentab.formats.decode, "CHUNK_RECORDS", chunk)
    records = [make_record("x", steps=_steps_with(started_at="soon")), make_record("y"), make_record("x")]
    traces = load_traces(records, strict=False)
    assert list(traces.runs["run_id"]) == ["y", "x"] and list(traces.rejected["line"]) == [1]


def test_empty_traces_round_trip_through_parquet(tmp_path):
    traces = load_traces([make_record(seed="x")], strict=False)
    back = read_traces(traces.to_parquet(tmp_path / "out"))
    for column in ("run_id", "task_id", "arm", "model", "harness", "source"):
        assert isinstance(back.runs[column].dtype, pd.CategoricalDtype), column
    assert isinstance(back.steps["tool"].dtype, pd.CategoricalDtype)
    assert back.n_read == 1 and len(back.rejected) == 1


def test_in_memory_records_of_each_arm_are_named_apart():
    with pytest.raises(TraceError, match=r"<candidate records>, record 1, field run_id: duplicate run_id 'a' "
                                         r"\(first seen in <baseline records>, record 1\)"):
        load_traces({"baseline": [make_record("a", arm=None)], "candidate": [make_record("a", arm=None)]})


def test_json_array_fallback_rejects_only_the_bad_elements(tmp_path):
    good_a, good_b = json.dumps(make_record("a")), json.dumps(make_record("b"))
    deep = json.dumps(make_record("d", metadata={"x": 0})).replace('"x": 0', '"x": ' + "[" * 1100 + "]" * 1100)
    path = tmp_path / "runs.json"
    path.write_text(f"[\n{good_a},\n{deep},\nNaN,\n,\n{good_b}\n]\n")
    traces = load_traces(path, strict=False)
    assert list(traces.runs["run_id"]) == ["a", "b"] and list(traces.runs["line"]) == [2, 6]
    assert list(traces.rejected["line"]) == [3, 4, 5] and traces.n_read == 5
    assert traces.rejected.loc[1, "reason"] == "expected a JSON object (one run), got float"
    assert traces.rejected.loc[2, "reason"].startswith("malformed JSON: Expecting value")


@pytest.mark.parametrize(("text", "match"), [
    ('[{"a": 1}', r"line 1: malformed JSON: the array is not closed; the whole file was left out"),
    ('[\n{"a": "x}\n]', r"line 2: malformed JSON: unterminated string"),
    ('[{"a": 1}]]', r"line 1: malformed JSON: extra data after the array"),
    ('[{"a": 1}]\n\nxyz', r"line 3: malformed JSON: extra data after the array"),
])
def test_broken_json_arrays_are_named(tmp_path, text, match):
    path = tmp_path / "runs.json"
    path.write_text(text)
    with pytest.raises(TraceError, match=rf"runs\.json, {match}"):
        load_traces(path)


def test_only_json_whitespace_counts_as_whitespace(tmp_path):
    a, b = json.dumps(make_record("a")), json.dumps(make_record("b"))
    array = tmp_path / "runs.json"
    array.write_text(f"[\u00a0{a},\u2028{b}\x0c]")
    traces = load_traces(array, strict=False)
    assert len(traces.runs) == 0 and traces.n_read == 2
    lines = tmp_path / "runs.jsonl"
    lines.write_bytes(a.encode() + b"\n\x0b\n \t\r\n" + b.encode() + b"\n")
    traces = load_traces(lines, strict=False)
    assert list(traces.runs["run_id"]) == ["a", "b"] and list(traces.rejected["line"]) == [2]


def test_started_at_is_reported_before_ended_at_of_the_same_step():
    with pytest.raises(TraceError, match=r"field steps\[0\]\.started_at"):
        load_traces([make_record(steps=_steps_with(started_at="x", ended_at="y"))])


@pytest.mark.parametrize("records", [
    [make_record("a", arm=None)],
    [make_record("a", seed="x"), make_record("b", steps=[], metadata=None)],
])
def test_parquet_round_trip_is_exact_for_empty_and_missing_categories(tmp_path, records):
    traces = load_traces(records, strict=False)
    back = read_traces(traces.to_parquet(tmp_path / "out"))
    assert back.runs.equals(traces.runs) and back.steps.equals(traces.steps)
    assert back.rejected.equals(traces.rejected)


def test_a_file_named_like_records_is_still_a_file(tmp_path):
    path = write_jsonl(tmp_path / "<odd>.jsonl", [make_record(seed="x")])
    with pytest.raises(TraceError, match=r"<odd>\.jsonl, line 1, field seed"):
        load_traces(path)
