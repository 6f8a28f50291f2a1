"""The record's grown fields (issue 20, item 3): step kind, agent, parallel group, reasoning and cached
tokens, step cost; run agents, run-level token totals, user simulator cost. Schema, both decoding paths,
the tables, the round trips, scoring, and old records loading exactly as before."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import make_record

import agentab
from agentab import TraceError, load_traces, read_traces
from agentab.datasets import example_records, example_specs
from agentab.formats.decode import Prepared, PreparedSteps, RecordDecoder
from agentab.traces._tables import _frames

DATA = Path(__file__).parent / "data"

#: The columns the tables had before the record grew, and the new ones.
OLD_RUNS = ["run_id", "task_id", "seed", "arm", "model", "harness", "outcome", "n_steps", "n_errors", "tokens_in",
            "tokens_out", "tokens", "cost_usd", "latency_s", "retries", "backtracks", "files_created",
            "files_modified", "files_deleted", "external_calls", "terminal_state", "metadata", "source", "line"]
OLD_STEPS = ["run_id", "index", "tool", "args", "status", "error", "tokens_in", "tokens_out", "started_at", "ended_at",
             "observation", "metadata"]
NEW_RUNS = {"agents": "string", "n_handoffs": "Int64", "tokens_reasoning": "Int64", "tokens_cached": "Int64",
            "user_cost_usd": "float64"}
NEW_STEPS = {"kind": "category", "agent": "category", "parallel": "string", "tokens_reasoning": "Int64",
             "tokens_cached": "Int64", "cost_usd": "float64"}


def grown_record(run_id: str = "g1", **overrides: Any) -> dict[str, Any]:
    """A two-agent run: a lookup by the triage agent, a handoff, two parallel calls by the refund agent."""
    steps = [
        {"index": 0, "tool": "lookup_order", "args": {"id": 7}, "observation": {"status": "ok"}, "agent": "triage",
         "tokens_in": 900, "tokens_out": 60, "tokens_reasoning": 20, "tokens_cached": 512, "cost_usd": 0.002},
        {"index": 1, "kind": "handoff", "tool": "transfer_to_refund_agent", "args": {"to": "refund"},
         "observation": {"status": "ok"}, "agent": "triage", "tokens_in": 1000, "tokens_out": 12},
        {"index": 2, "tool": "refund", "args": {"id": 7}, "observation": {"status": "error", "error": "limit"},
         "agent": "refund", "parallel": "resp-3", "tokens_in": 1200, "tokens_out": 80, "tokens_reasoning": 0},
        {"index": 3, "tool": "notify", "args": {"id": 7}, "observation": {"status": "ok"}, "agent": "refund",
         "parallel": "resp-3", "metadata": {"tokens_with_step": 2}},
    ]
    record = {"run_id": run_id, "task_id": "refund-7", "seed": 0, "steps": steps, "outcome": True,
              "agents": ["triage", "refund"], "tokens_in": 4000, "tokens_out": 400, "tokens_reasoning": 90,
              "tokens_cached": 2048, "cost_usd": 0.03, "user_cost_usd": 0.004}
    record.update(copy.deepcopy(overrides))
    return record


def rejection(record: dict[str, Any]) -> tuple[str, str]:
    traces = load_traces([record], strict=False)
    assert len(traces.runs) == 0, "expected the record to be rejected"
    row = traces.rejected.iloc[0]
    return row["field"], row["reason"]


# --------------------------------------------------------------------------- #
# The schema
# --------------------------------------------------------------------------- #
def test_grown_record_lands_in_the_new_columns():
    traces = load_traces([grown_record()])
    run = traces.runs.iloc[0]
    assert json.loads(run["agents"]) == ["triage", "refund"]
    assert (run["n_steps"], run["n_handoffs"], run["n_errors"]) == (3, 1, 1)  # the handoff is not a tool call
    assert (run["tokens_in"], run["tokens_out"], run["tokens"]) == (4000, 400, 4400)  # the run's totals, not sums
    assert (run["tokens_reasoning"], run["tokens_cached"]) == (90, 2048)
    assert run["cost_usd"] == 0.03 and run["user_cost_usd"] == 0.004
    steps = traces.steps
    assert steps["kind"].tolist() == ["tool", "handoff", "tool", "tool"]
    assert list(steps["kind"].cat.categories) == ["tool", "handoff"]
    assert steps["agent"].astype(str).tolist() == ["triage", "triage", "refund", "refund"]
    assert steps["parallel"].tolist()[2:] == ["resp-3", "resp-3"] and pd.isna(steps["parallel"].iloc[0])
    assert steps["tokens_reasoning"].tolist()[:3] == [20, pd.NA, 0]
    assert steps["tokens_cached"].iloc[0] == 512 and steps["tokens_cached"].isna().sum() == 3
    assert steps["cost_usd"].iloc[0] == 0.002 and steps["cost_usd"].isna().sum() == 3


def test_new_column_dtypes_and_unknown_is_missing():
    traces = load_traces([make_record()])  # an old record: no new field
    runs, steps = traces.runs, traces.steps
    for name, dtype in NEW_RUNS.items():
        assert str(runs[name].dtype) == dtype, name
    for name, dtype in NEW_STEPS.items():
        assert str(steps[name].dtype) == dtype, name
    assert runs["n_handoffs"].tolist() == [0]  # counted: no step is a handoff
    for name in ("agents", "tokens_reasoning", "tokens_cached", "user_cost_usd"):
        assert runs[name].isna().all(), name  # unknown, never 0
    assert steps["kind"].tolist() == ["tool", "tool"]  # absent kind is a tool call
    for name in ("agent", "parallel", "tokens_reasoning", "tokens_cached", "cost_usd"):
        assert steps[name].isna().all(), name


def test_run_totals_fill_in_per_count_and_sums_stay_otherwise():
    record = grown_record()
    for name in ("tokens_out", "tokens_reasoning", "tokens_cached"):
        del record[name]
    run = load_traces([record]).runs.iloc[0]
    assert run["tokens_in"] == 4000  # given
    assert run["tokens_out"] == 60 + 12 + 80  # the steps' sum (step 3's call is counted at step 2)
    assert pd.isna(run["tokens_reasoning"])  # the handoff step's reasoning tokens are unknown
    assert pd.isna(run["tokens_cached"])
    stepless = load_traces([make_record(steps=[], tokens_in=50, tokens_out=5, tokens_cached=10)]).runs.iloc[0]
    counts = ("tokens_in", "tokens_out", "tokens", "tokens_cached")
    assert tuple(stepless[name] for name in counts) == (50, 5, 55, 10)


def test_a_handoff_only_run_has_no_tool_calls():
    record = grown_record(steps=[grown_record()["steps"][1] | {"index": 0}])
    run = load_traces([record]).runs.iloc[0]
    assert (run["n_steps"], run["n_handoffs"]) == (0, 1)


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda r: r["steps"][1].update(kind="model"), "steps[1].kind", "expected 'tool' or 'handoff', got \"model\""),
    (lambda r: r["steps"][0].update(agent=""), "steps[0].agent", "length >= 1"),
    (lambda r: r["steps"][0].update(agent=3), "steps[0].agent", "expected str"),
    (lambda r: r["steps"][2].update(parallel=True), "steps[2].parallel", "got bool"),
    (lambda r: r["steps"][2].update(parallel=1.5), "steps[2].parallel", "got float"),
    (lambda r: r["steps"][0].update(tokens_reasoning=-1), "steps[0].tokens_reasoning", ">= 0"),
    (lambda r: r["steps"][0].update(tokens_cached=1.5), "steps[0].tokens_cached", "expected int"),
    (lambda r: r["steps"][0].update(cost_usd=-0.1), "steps[0].cost_usd", ">= 0"),
    (lambda r: r["steps"][0].update(cost_usd="1"), "steps[0].cost_usd", "expected float"),
    (lambda r: r.update(agents="triage"), "agents", "expected array"),
    (lambda r: r.update(agents=["triage", ""]), "agents[1]", "length >= 1"),
    (lambda r: r.update(tokens_in=-5), "tokens_in", ">= 0"),
    (lambda r: r.update(tokens_cached=2**63), "tokens_cached", "<= 9223372036854775807"),
    (lambda r: r.update(user_cost_usd=-1), "user_cost_usd", ">= 0"),
    (lambda r: r.update(user_cost=1), "user_cost", "unknown field"),
])
def test_bad_new_values_are_rejections_naming_the_field(change, field, words):
    record = grown_record()
    change(record)
    found_field, reason = rejection(record)
    assert found_field == field and words in reason, (found_field, reason)
    with pytest.raises(TraceError, match="expected|>=|<=|unknown|length"):
        load_traces([record])


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda r: r["steps"][0].update(tokens_reasoning=61), "steps[0].tokens_reasoning",
     "tokens_reasoning 61 is more than tokens_out 60"),
    (lambda r: r["steps"][0].update(tokens_cached=901), "steps[0].tokens_cached", "tokens_cached 901 is more than"),
    (lambda r: r.update(tokens_reasoning=401), "tokens_reasoning", "the run's tokens_reasoning 401 is more than its"),
    (lambda r: r.update(tokens_cached=4001), "tokens_cached", "the run's tokens_cached 4001 is more than its"),
    (lambda r: r.update(tokens_in=3000), "tokens_in", "the run's tokens_in 3000 is less than the sum of its steps' "
                                                      "tokens_in, 3100"),
    (lambda r: r.update(tokens_out=100), "tokens_out", "is less than the sum of its steps' tokens_out, 152"),
    (lambda r: r.update(tokens_reasoning=10), "tokens_reasoning", "sum of its steps' tokens_reasoning, 20"),
    (lambda r: r.update(tokens_cached=100), "tokens_cached", "sum of its steps' tokens_cached, 512"),
    (lambda r: (r.pop("tokens_out"), r.update(tokens_reasoning=400)), "tokens_reasoning",
     "tokens_reasoning 400 is more than its tokens_out 152"),  # against the steps' sum
    (lambda r: r.update(agents=["triage", "triage"]), "agents[1]", "listed twice"),
    (lambda r: r.update(agents=["triage"]), "steps[2].agent", "'refund' is not one of the run's agents"),
])
def test_inconsistent_counts_are_rejections_saying_which(change, field, words):
    record = grown_record()
    change(record)
    found_field, reason = rejection(record)
    assert found_field == field and words in reason, (found_field, reason)


def test_parts_are_checked_only_where_both_are_known():
    record = grown_record()
    del record["steps"][0]["tokens_out"]  # its reasoning count has nothing to be checked against
    record["steps"][0]["tokens_reasoning"] = 10**6
    record.pop("tokens_reasoning")
    record.pop("tokens_out")
    run = load_traces([record]).runs.iloc[0]
    assert pd.isna(run["tokens_out"]) and pd.isna(run["tokens_reasoning"])  # step 0's tokens_out is unknown


# --------------------------------------------------------------------------- #
# The column path (Prepared) agrees with the record path
# --------------------------------------------------------------------------- #
def prepared_of(record: dict[str, Any], grown: bool = True) -> Prepared:
    steps = record["steps"]

    def column(name: str) -> list[Any]:
        return [step.get(name) for step in steps]

    extra = [column(name) for name in ("kind", "agent", "parallel", "tokens_reasoning", "tokens_cached",
                                       "cost_usd")] if grown else []
    columns = PreparedSteps(column("tool"), column("args"), column("observation"), column("tokens_in"),
                            column("tokens_out"), [None] * len(steps), [None] * len(steps), column("metadata"), *extra)
    totals = {name: record[name] for name in ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached")
              if name in record}
    run = Prepared(record["run_id"], record["task_id"], record["seed"], record.get("arm"), record["outcome"],
                   record.get("cost_usd"), record.get("latency_s"), record.get("metadata"), columns)
    if grown:
        run = run._replace(agents=record.get("agents"), totals=totals or None,
                           user_cost_usd=record.get("user_cost_usd"))
    return run


def decoded(add: Any) -> tuple[pd.DataFrame, pd.DataFrame, list[Any]]:
    decoder = RecordDecoder(strict=False)
    add(decoder)
    runs, steps, rejected = decoder.finish()
    frames = _frames(runs, steps, rejected)
    return frames[0], frames[1], rejected


def test_prepared_runs_give_the_same_tables_as_records():
    records = [grown_record("a"), grown_record("b", agents=None, steps=[]), make_record("c"),
               grown_record("d", tokens_in=None, tokens_reasoning=None)]
    for name in ("terminal_state", "retries", "backtracks"):  # a Prepared run has none of these
        records[2].pop(name)
    for record in records:
        for step in record["steps"]:
            step.pop("started_at", None), step.pop("ended_at", None)  # prepared steps hold times as nanoseconds
    via_records = decoded(lambda d: [d.add_parsed("s", k + 1, r) for k, r in enumerate(records)])
    via_columns = decoded(lambda d: d.add_prepared([("s", k + 1, prepared_of(r)) for k, r in enumerate(records)]))
    assert via_records[0].equals(via_columns[0]) and via_records[1].equals(via_columns[1])
    assert not via_records[2] and not via_columns[2]


@pytest.mark.parametrize("chunk_size", [None, 50])
def test_prepared_runs_many_at_once_and_one_by_one_interleaved_with_records(chunk_size):
    # the decoder holds runs of add_prepared back (PENDING_RUNS at a time, across calls): none may be lost or
    # reordered, whether given 150 in one call, one per call (a reader of one run per file), or between records
    records = [grown_record(f"r{k}") if k % 3 else make_record(f"r{k}") for k in range(400)]
    for record in records:
        for name in ("terminal_state", "retries", "backtracks"):
            record.pop(name, None)
        for step in record["steps"]:
            step.pop("started_at", None), step.pop("ended_at", None)
    records[7]["run_id"] = "r3"  # a duplicate, found at the chunk's flush

    def by_columns(d: RecordDecoder) -> None:
        d.add_prepared([("s", k + 1, prepared_of(r)) for k, r in enumerate(records[:150])])
        for k in range(150, 300):
            d.add_prepared([("s", k + 1, prepared_of(records[k]))])
        d.add_parsed("s", 301, records[300])  # a record between runs in columns
        d.add_prepared([("s", k + 1, prepared_of(records[k])) for k in range(301, 400)])

    def decoded_by(add: Any) -> tuple[pd.DataFrame, pd.DataFrame, list[Any]]:
        decoder = RecordDecoder(strict=False, chunk_size=chunk_size)
        add(decoder)
        runs, steps, rejected = decoder.finish()
        return *_frames(runs, steps, rejected)[:2], rejected

    via_records = decoded_by(lambda d: [d.add_parsed("s", k + 1, r) for k, r in enumerate(records)])
    via_columns = decoded_by(by_columns)
    assert len(via_columns[0]) == 399 and via_columns[0]["run_id"].tolist() == via_records[0]["run_id"].tolist()
    assert via_records[0].equals(via_columns[0]) and via_records[1].equals(via_columns[1])
    assert [(r.line, r.field) for r in via_columns[2]] == [(r.line, r.field) for r in via_records[2]] == [(8, "run_id")]


def test_prepared_without_the_new_fields_loads_as_before():
    record = make_record()
    for name in ("terminal_state", "retries", "backtracks"):
        record.pop(name)
    for step in record["steps"]:
        step.pop("started_at"), step.pop("ended_at")
    old_shape = prepared_of(record, grown=False)  # a reader that knows nothing of the new fields
    assert old_shape.steps.kind is None and old_shape.agents is None and old_shape.totals is None
    runs, steps, _ = decoded(lambda d: d.add_prepared([("s", 1, old_shape)]))
    want_runs, want_steps, _ = decoded(lambda d: d.add_parsed("s", 1, record))
    assert runs.equals(want_runs) and steps.equals(want_steps)
    assert old_shape.to_record().keys() == prepared_of(record).to_record().keys()


def test_prepared_problems_are_rejections_too():
    bad_kind = prepared_of(grown_record())
    bad_kind = bad_kind._replace(steps=bad_kind.steps._replace(kind=["tool", "delegate", None, None]))
    bad_total = prepared_of(grown_record())._replace(totals={"tokens_in": 10})
    bad_part = prepared_of(grown_record())._replace(totals={"tokens_cached": 10**5})
    _, _, rejected = decoded(lambda d: d.add_prepared([("s", 1, bad_kind), ("s", 2, bad_total), ("s", 3, bad_part)]))
    assert [(r.field, r.reason.split(",")[0]) for r in rejected] == [
        ("steps[1].kind", "expected 'tool' or 'handoff'"),
        ("tokens_in", "the run's tokens_in 10 is less than the sum of its steps' tokens_in"),
        ("tokens_cached", "the run's tokens_cached 100000 is more than its tokens_in 3100"),  # the steps' sum
    ]


def test_prepared_to_record_keeps_the_new_fields():
    record = grown_record()
    back = prepared_of(record).to_record()
    assert back["agents"] == record["agents"] and back["user_cost_usd"] == record["user_cost_usd"]
    assert {k: back[k] for k in ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached")} == {
        k: record[k] for k in ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached")}
    for got, want in zip(back["steps"], record["steps"]):
        for name in ("kind", "agent", "parallel", "tokens_reasoning", "tokens_cached", "cost_usd"):
            assert got.get(name) == want.get(name), name
    assert load_traces([back]).runs.drop(columns=["source", "line"]).equals(
        load_traces([record]).runs.drop(columns=["source", "line"]))


# --------------------------------------------------------------------------- #
# Round trips
# --------------------------------------------------------------------------- #
def test_to_records_and_jsonl_keep_every_new_field(tmp_path):
    records = [grown_record("a"), grown_record("b", parallel=None, steps=[
        grown_record()["steps"][0] | {"parallel": 4}]), make_record("c")]
    records[1].pop("parallel")
    traces = load_traces(records)
    back = traces.to_records()
    assert back[0]["agents"] == ["triage", "refund"] and back[0]["user_cost_usd"] == 0.004
    assert back[0]["tokens_in"] == 4000 and back[0]["tokens_reasoning"] == 90
    assert back[0]["steps"][1]["kind"] == "handoff" and "kind" not in back[0]["steps"][0]
    assert back[1]["steps"][0]["parallel"] == "4"  # group ids are stored as text
    assert back[2] == load_traces([make_record("c")]).to_records()[0]
    assert not {"agents", "tokens_in", "user_cost_usd"} & back[2].keys()  # an old record stays as it was
    again = load_traces(traces.to_jsonl(tmp_path / "t.jsonl"))
    assert again.runs.drop(columns="source").equals(traces.runs.drop(columns="source"))
    assert again.steps.equals(traces.steps)


def test_totals_equal_to_the_step_sums_need_not_be_kept():
    record = grown_record(tokens_in=900 + 1000 + 1200)  # what the steps give anyway
    back = load_traces([record]).to_records()[0]
    assert "tokens_in" not in back and back["tokens_out"] == 400
    assert load_traces([back]).runs["tokens_in"].tolist() == [3100]


def test_parquet_round_trip_keeps_the_new_columns(tmp_path):
    traces = load_traces([grown_record("a"), make_record("b")])
    back = read_traces(traces.to_parquet(tmp_path / "store"))
    assert back.runs.equals(traces.runs) and back.steps.equals(traces.steps)


def test_a_store_written_before_the_new_columns_still_reads(tmp_path):
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=4, n_seeds=2)
    folder = traces.to_parquet(tmp_path / "store")
    for name, new in (("runs", NEW_RUNS), ("steps", NEW_STEPS)):
        path = folder / f"{name}.parquet"
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(list(new)), path)  # the store id in the schema metadata stays
    back = read_traces(folder)
    assert back.runs.equals(traces.runs) and back.steps.equals(traces.steps)
    assert agentab.score(back, spec=example_specs(0, n_tasks=4)).equals(
        agentab.score(traces, spec=example_specs(0, n_tasks=4)))


# --------------------------------------------------------------------------- #
# Old records load to exactly the tables they loaded to before the record grew
# --------------------------------------------------------------------------- #
def digest(frame: pd.DataFrame, columns: list[str]) -> str:
    text = frame[columns].to_json(orient="split", date_format="iso", date_unit="ns", index=False, double_precision=15,
                                  default_handler=str)
    dtypes = ",".join(f"{c}:{frame[c].dtype}" for c in columns)
    return hashlib.sha256((dtypes + text).encode()).hexdigest()[:20]


@pytest.mark.parametrize(("kwargs", "runs", "steps"), [
    # measured with agentab before the record grew (commit 6bea12a)
    ({"seed": 0}, "b893c6c1c3e655930e8e", "a067d983a9acb4ff8b2b"),
    ({"seed": 3, "n_tasks": 12, "n_seeds": 2}, "331412c0fe666f7a6a7e", "40bfdd6a625d1b330b43"),
])
def test_example_experiment_loads_as_before(kwargs, runs, steps):
    traces = agentab.datasets.example_experiment(**kwargs)
    assert list(traces.runs.columns[:6]) == OLD_RUNS[:6]
    assert digest(traces.runs, OLD_RUNS) == runs and digest(traces.steps, OLD_STEPS) == steps
    assert (traces.runs["n_handoffs"] == 0).all() and (traces.steps["kind"] == "tool").all()


def fixtures() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix not in (".md", ".py", ".csv"))


def test_every_fixture_survives_the_record_path(tmp_path):
    """Every committed fixture that loads (as its reader converts it) keeps every column, old and new, when
    written as agentab records and read back."""
    loaded = 0
    for k, path in enumerate(fixtures()):
        try:
            traces = load_traces(path, strict=False)
        except TraceError:
            continue
        if not len(traces.runs):
            continue
        loaded += 1
        again = load_traces(traces.to_jsonl(tmp_path / f"{k}.jsonl"))
        assert again.formats[0][1] == "record"
        assert again.runs.drop(columns=["source", "line"]).equals(traces.runs.drop(columns=["source", "line"])), path
        assert again.steps.equals(traces.steps), path
    assert loaded >= 5


# --------------------------------------------------------------------------- #
# Scoring ignores what it does not use
# --------------------------------------------------------------------------- #
def with_handoffs(records: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """The records with handoff steps inserted at random places (and agents named), every tool call kept."""
    rng = random.Random(seed)
    out = []
    for record in records:
        record = copy.deepcopy(record)
        steps = record["steps"]
        for _ in range(rng.randrange(3)):
            at = rng.randrange(len(steps) + 1)
            steps.insert(at, {"index": 0, "kind": "handoff", "tool": "transfer_to_fixer", "args": {"to": "fixer"},
                              "observation": {"status": rng.choice(["ok", "error"])}, "agent": "planner",
                              "tokens_in": 0, "tokens_out": 0})
        for k, step in enumerate(steps):
            step["index"] = k
            step.setdefault("agent", "fixer")
        record["agents"] = ["planner", "fixer"]
        out.append(record)
    return out


def test_handoff_steps_leave_every_score_unchanged():
    records = list(example_records(0, n_tasks=20, n_seeds=3))
    specs = example_specs(0, n_tasks=20)
    plain, handed = load_traces(records), load_traces(with_handoffs(records))
    assert handed.runs["n_handoffs"].sum() > 20 and len(handed.steps) > len(plain.steps)
    for name in ("n_steps", "n_errors", "tokens"):
        assert handed.runs[name].equals(plain.runs[name]), name
    assert agentab.score(handed, spec=specs).equals(agentab.score(plain, spec=specs))
    for record, grown in list(zip(records, with_handoffs(records)))[:12]:
        spec = specs[record["task_id"]]
        assert agentab.score_run(grown, spec=spec).to_dict() == agentab.score_run(record, spec=spec).to_dict()
    one = handed.steps[handed.steps["run_id"] == handed.runs["run_id"].iloc[0]]
    assert agentab.score_run(one).to_dict() == agentab.score_run(
        plain.steps[plain.steps["run_id"] == plain.runs["run_id"].iloc[0]]).to_dict()
    found, want = agentab.diagnose(agentab.score(handed, spec=specs), traces=handed), agentab.diagnose(
        agentab.score(plain, spec=specs), traces=plain)
    assert found.tables["tool_choice"].equals(want.tables["tool_choice"])


def test_summary_reads_the_run_totals():
    plain = load_traces([make_record("a"), make_record("b", seed=1)])
    grown = load_traces([make_record("a", tokens_in=5000), make_record("b", seed=1, tokens_in=5000)])
    assert plain.summary().loc[:, "tokens_p50"].iloc[0] == 801 + 800 + 40 + 41
    assert grown.summary().loc[:, "tokens_p50"].iloc[0] == 5000 + 40 + 41
    assert np.array_equal(grown.summary().drop(columns=["tokens_p50", "tokens_p95"]).to_numpy(dtype=object),
                          plain.summary().drop(columns=["tokens_p50", "tokens_p95"]).to_numpy(dtype=object))


def test_the_documented_examples_load_as_the_page_says():
    import re

    page = (Path(__file__).parent.parent / "docs" / "traces" / "record.md").read_text(encoding="utf-8")
    old, grown = (json.loads(block) for block in re.findall(r"```json\n(.*?)```", page, re.S))
    assert load_traces([old]).runs["n_handoffs"].tolist() == [0]
    traces = load_traces([grown])
    run = traces.runs.iloc[0]
    assert (run["n_steps"], run["n_handoffs"], run["tokens"], run["tokens_reasoning"]) == (3, 1, 8932, 160)
    assert traces.steps["kind"].tolist() == ["tool", "handoff", "tool", "tool"]
