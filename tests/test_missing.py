"""A number that cannot be computed is missing (NaN / pandas NA / None), never 0: in the score table, the
runs table, the summaries, every rendering (``n/a``) and JSON (``null``). Each test fails on the old
behaviour, which wrote 0 (or False) for what was not known."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab import Call, TrajectorySpec, score, score_run
from agentab._display import MISSING, Items, Table, Title, is_missing, json_ready, number, render_html, render_text
from agentab.errors import SpecWarning
from agentab.traces.summary import format_summary, summarize, summarize_scores

TAU = Path(__file__).parent / "data" / "tau"
TAU2 = TAU / "tau2_grok_policy_ab.jsonl.gz"
TAU_BENCH = TAU / "tau_bench_gpt4o_airline.jsonl.gz"
TAU2_FIELDS = {"run_id": "sim_id", "seed": "trial", "outcome": "reward", "arm": "policy_variant"}
TAU_FIELDS = {"task_id": "task_id", "seed": "trial", "outcome": "reward"}

#: Checks a spec must ask for: without it, their columns are missing in every run.
SPEC_CHECKS = ("cap_hit", "required_missing", "forbidden_calls", "forbidden_side_effects", "over_budget",
               "tool_recall_required", "reference_match", "unexpected_side_effects", "missing_changes")


def _raw(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def record(run_id: str, calls: list[tuple[str, str | None]], **fields: Any) -> dict[str, Any]:
    """A record whose steps are ``(tool, status)`` pairs (status None: no observation)."""
    steps = [{"index": i, "tool": tool, "args": {"i": i},
              **({"observation": {"status": status}} if status else {})} for i, (tool, status) in enumerate(calls)]
    return {"run_id": run_id, "task_id": "t1", "seed": 0, "outcome": True, "steps": steps, **fields}


# --------------------------------------------------------------------------- #
# Scoring: a check the spec does not ask for is missing, not "passed"
# --------------------------------------------------------------------------- #
def test_trajectory_checks_without_a_spec_are_missing_in_the_score_table():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=6, n_seeds=2)
    table = score(traces)
    for column in SPEC_CHECKS:
        assert table[column].isna().all(), column  # was 0 / False for cap_hit, required_missing, forbidden_*
    # what the trace alone tells is still computed
    for column in ("loop", "repeats", "n_steps", "n_errors", "non_terminated", "rubric", "error_cascade"):
        assert table[column].notna().all(), column


def test_the_same_checks_with_a_spec_are_computed():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=6, n_seeds=2)
    spec = TrajectorySpec(required=("run_tests",), max_repeats=2, forbidden=("rm_*", "*.env"))
    table = score(traces, spec)
    for column in ("cap_hit", "required_missing", "forbidden_calls", "forbidden_side_effects"):
        assert table[column].notna().all(), column


def test_score_run_says_none_for_checks_not_asked_for():
    calls = [Call("a", {}, "ok"), Call("a", {}, "ok"), Call("b", {}, "ok")]
    bare = score_run(calls, outcome=True).metrics
    for name in ("cap_hit", "required_missing", "forbidden_calls", "over_budget"):
        assert bare[name] is None, name
    asked = score_run(calls, outcome=True, required=["b"], forbidden=["z"], max_repeats=1).metrics
    assert (asked["cap_hit"], asked["required_missing"], asked["forbidden_calls"]) == (True, 0, 0)
    assert json.dumps(score_run(calls, outcome=True).to_dict(), allow_nan=False)  # None is JSON null


def test_non_terminated_is_missing_only_when_no_part_of_it_can_be_checked():
    runs = [record("silent", [("a", None), ("b", None)]),  # no status, no cap: cannot be told
            record("answered", [("a", "ok"), ("b", "ok")]),  # every call answered: it terminated
            record("cut", [("a", "ok"), ("b", None)]),  # the last call never answered
            record("empty", [])]
    table = score(agentab.load_traces(runs))
    assert pd.isna(table.loc[0, "non_terminated"])
    assert list(table.loc[1:, "non_terminated"]) == [False, True, False]
    capped = score(agentab.load_traces(runs), TrajectorySpec(step_cap=2))
    assert list(capped["non_terminated"]) == [True, True, True, False]


def test_errors_are_missing_where_no_step_records_a_status():
    runs = [record("silent", [("a", None), ("b", None)]), record("ok", [("a", "ok"), ("b", "error")])]
    table = score(agentab.load_traces(runs))
    assert pd.isna(table.loc[0, "n_errors"]) and pd.isna(table.loc[0, "error_cascade"])  # were 0 and False
    assert table.loc[1, "n_errors"] == 1 and bool(table.loc[1, "error_cascade"])
    assert pd.isna(table.loc[0, "accidental_recovery"])  # right result, no loop, errors unknown (was False)
    assert bool(table.loc[1, "accidental_recovery"])
    # a loop is enough to tell, errors or not
    looping = record("loop", [("a", None), ("a", None)])
    looping["steps"][1]["args"] = looping["steps"][0]["args"]
    assert bool(score(agentab.load_traces([looping])).loc[0, "accidental_recovery"])
    assert score_run([Call("a"), Call("b")], outcome=True).metrics["accidental_recovery"] is None


def test_an_unknown_outcome_leaves_the_rubric_and_accidental_recovery_missing():
    verdict = score_run([Call("a", {}, "ok")], outcome=None)
    assert verdict.metrics["rubric"] is None and verdict.metrics["accidental_recovery"] is None
    assert score_run([], outcome=None).metrics["rubric"] == 0  # no valid call: level 0 whatever the outcome


def test_compare_leaves_out_metrics_no_run_could_compute_and_says_so():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=8, n_seeds=2)
    result = agentab.compare(score(traces), baseline="baseline", n_resamples=999)
    assert "cap_hit" not in set(result.table["metric"])  # never a "0.0% -> 0.0%" row
    assert any("cap_hit" in note for note in result.notes)
    with pytest.raises(agentab.errors.CompareError, match="cap_hit"):
        agentab.compare(score(traces), baseline="baseline", metrics=["outcome", "cap_hit"], n_resamples=999)


# --------------------------------------------------------------------------- #
# Tokens a trace does not record
# --------------------------------------------------------------------------- #
def test_a_run_without_steps_has_unknown_tokens_unless_recorded():
    base = {"task_id": "t", "seed": 0, "outcome": True, "steps": []}
    runs = agentab.load_traces([
        {**base, "run_id": "unknown"},
        {**base, "run_id": "recorded-zero", "metadata": {"tokens_in": 0, "tokens_out": 0}},
        {**base, "run_id": "recorded", "metadata": {"tokens_in": 812, "tokens_out": 44}},
        {**base, "run_id": "not-a-count", "metadata": {"tokens_in": "812", "tokens_out": -1}},
    ]).runs
    assert pd.isna(runs.loc[0, "tokens"])  # was 0
    assert runs.loc[1, "tokens"] == 0  # recorded as 0 stays 0
    assert (runs.loc[2, "tokens_in"], runs.loc[2, "tokens_out"], runs.loc[2, "tokens"]) == (812, 44, 856)
    assert pd.isna(runs.loc[3, "tokens"])


def test_recorded_zero_and_absent_step_counts_differ():
    steps = [{"index": 0, "tool": "a", "args": {}, "tokens_in": 0, "tokens_out": 0}]
    zero = agentab.load_traces([{"run_id": "z", "task_id": "t", "seed": 0, "outcome": True, "steps": steps}])
    absent = agentab.load_traces([{"run_id": "u", "task_id": "t", "seed": 0, "outcome": True,
                                   "steps": [{"index": 0, "tool": "a", "args": {}}]}])
    assert zero.runs.loc[0, "tokens"] == 0 and pd.isna(absent.runs.loc[0, "tokens"])


def test_tau_bench_records_no_tokens_so_every_run_reads_unknown():
    traces = agentab.load_traces(TAU_BENCH, format="openai", fields=TAU_FIELDS)
    runs = traces.runs
    assert (runs["n_steps"] == 0).sum() == 10  # the runs without a tool call read tokens = 0 before
    assert runs["tokens"].isna().all()
    table = summarize(traces)
    assert np.isnan(table.loc["(no arm)", "tokens_p50"]) and np.isnan(table.loc["(no arm)", "tokens_p95"])
    text = format_summary(table)
    assert [line.split()[-1] for line in text.splitlines() if line.startswith("tokens p")] == [MISSING, MISSING]


def test_tau2_runs_without_a_tool_call_keep_their_tokens():
    raw = {r["sim_id"]: r for r in _raw(TAU2)}
    traces = agentab.load_traces(TAU2, format="openai", fields=TAU2_FIELDS)
    runs = traces.runs.set_index(traces.runs["run_id"].astype(str))
    stepless = runs[runs["n_steps"] == 0]
    assert len(stepless) == 6
    for run_id, row in stepless.iterrows():
        messages = raw[run_id]["messages"]
        expected = sum(m["usage"]["prompt_tokens"] + m["usage"]["completion_tokens"]
                       for m in messages if m["role"] == "assistant" and m["usage"])
        assert row["tokens"] == expected > 0  # was 0


def test_parallel_calls_of_one_response_have_no_counts_of_their_own_and_the_run_total_is_kept():
    raw = {r["sim_id"]: r for r in _raw(TAU2)}
    traces = agentab.load_traces(TAU2, format="openai", fields=TAU2_FIELDS)
    steps = traces.steps
    sibling = np.array(["tokens_with_step" in json.loads(text) for text in steps["metadata"]], dtype=bool)
    # each sibling: a call of a response with more than one call, after that response's first call
    n_siblings = sum(len(m["tool_calls"]) - 1 for r in raw.values() for m in r["messages"]
                     if m["role"] == "assistant" and m.get("tool_calls") and m["usage"])
    assert sibling.sum() == n_siblings > 0
    # their own share is unknown (was 0); a final answer's tokens are in the run's totals, on no step
    assert steps.loc[sibling, "tokens_in"].isna().all() and steps.loc[sibling, "tokens_out"].isna().all()
    assert steps.loc[~sibling, "tokens_in"].notna().all()
    runs = traces.runs
    assert runs["tokens"].notna().all()  # every run's total is still known
    for run_id, row in runs.set_index(runs["run_id"].astype(str)).iterrows():
        expected = sum(m["usage"]["prompt_tokens"] + m["usage"]["completion_tokens"]
                       for m in raw[run_id]["messages"] if m["role"] == "assistant" and m["usage"])
        assert row["tokens"] == expected


def test_a_sibling_marker_pointing_at_an_unknown_count_leaves_the_total_unknown():
    steps = [{"index": 0, "tool": "a", "args": {}},
             {"index": 1, "tool": "b", "args": {}, "metadata": {"tokens_with_step": 0}}]
    runs = agentab.load_traces([{"run_id": "r", "task_id": "t", "seed": 0, "outcome": True, "steps": steps}]).runs
    assert pd.isna(runs.loc[0, "tokens"])
    steps[0].update(tokens_in=10, tokens_out=2)
    runs = agentab.load_traces([{"run_id": "r", "task_id": "t", "seed": 0, "outcome": True, "steps": steps}]).runs
    assert runs.loc[0, "tokens"] == 12


def test_the_example_records_its_stepless_runs_tokens_as_zero():
    # the simulated agent of a stepless run made no model call (cost 0): its tokens are recorded, as 0
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=60, n_seeds=5)
    runs = traces.runs
    stepless = runs[runs["n_steps"] == 0]
    assert len(stepless) > 0 and (stepless["tokens"] == 0).all() and (stepless["cost_usd"] == 0).all()
    assert runs["tokens"].notna().all()


# --------------------------------------------------------------------------- #
# Summaries and rendering
# --------------------------------------------------------------------------- #
def test_summary_error_rates_are_missing_when_no_step_records_a_status():
    traces = agentab.load_traces([record("r1", [("a", None), ("b", None)]), record("r2", [("a", None)])])
    table = summarize(traces)
    assert np.isnan(table.loc["(no arm)", "step_error_rate"]) and np.isnan(table.loc["(no arm)", "runs_with_error"])
    lines = {line.rsplit(None, 1)[0]: line.rsplit(None, 1)[1] for line in format_summary(table).splitlines()[1:]}
    assert lines["step error rate"] == lines["runs with an error"] == MISSING
    assert lines["tokens p50"] == lines["cost p50"] == MISSING
    assert traces.runs["n_errors"].isna().all()  # the runs table says so too (was 0)
    assert np.isnan(summarize(traces.runs).loc["(no arm)", "step_error_rate"])


def test_summary_of_scores_without_a_spec_shows_n_a_for_the_loop_cap():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=6, n_seeds=2)
    table = summarize_scores(score(traces))
    assert table["cap_hit"].isna().all()
    line = next(line for line in format_summary(table).splitlines() if line.startswith("loop cap hit"))
    assert line.split()[-2:] == [MISSING, MISSING]  # was 0.0% 0.0%


def test_display_shows_missing_numbers_as_n_a_in_text_and_html():
    frame = pd.DataFrame({"rate": [0.5, np.nan], "count": pd.array([3, None], dtype="Int64"),
                          "flag": pd.array([True, None], dtype="boolean"), "label": ["x", None]})
    blocks = [Title("t"), Table(frame), Items([f"p {number(float('nan'), '{:.3g}')}"])]
    text, page = render_text(blocks), render_html(blocks)
    assert "<NA>" not in text and "NaN" not in text and "nan" not in text
    assert text.splitlines()[3].split() == [MISSING] * 4
    assert "&lt;NA&gt;" not in page and "NaN" not in page and page.count(f"<td>{MISSING}</td>") == 4
    assert "p n/a" in text
    assert frame["count"].isna().sum() == 1  # the result's own frame is not changed


def test_missing_values_helpers():
    assert [is_missing(v) for v in (None, np.nan, pd.NA, pd.NaT, np.float32("nan"), 0, False, "")] == \
        [True] * 5 + [False] * 3
    assert number(0, "{:.1%}") == "0.0%" and number(np.nan, "{:.1%}") == MISSING
    out = json_ready({"a": np.float64("nan"), "b": (np.int64(3), pd.NA), "c": float("inf"), "d": {"e": None}})
    assert out == {"a": None, "b": [3, None], "c": None, "d": {"e": None}}
    assert json.dumps(out, allow_nan=False)


def test_verdict_html_lists_only_known_metrics():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecWarning)
        page = score_run([Call("a", {}, "ok")], outcome=True)._repr_html_()
    assert "cap_hit" not in page and "n_errors" in page


def test_unknown_counts_survive_a_round_trip_through_json_lines_and_parquet(tmp_path):
    traces = agentab.load_traces(TAU2, format="openai", fields=TAU2_FIELDS)
    for path in (traces.to_jsonl(tmp_path / "t.jsonl"), traces.to_parquet(tmp_path / "store")):
        again = agentab.read_traces(path) if path.suffix != ".jsonl" else agentab.load_traces(path)
        assert list(again.runs["tokens"]) == list(traces.runs["tokens"])
        assert again.steps["tokens_in"].isna().sum() == traces.steps["tokens_in"].isna().sum() > 0


def test_score_run_refuses_a_record_without_its_steps():
    # a record whose steps are missing is not a run of 0 steps
    with pytest.raises(ValueError, match="needs `steps`"):
        score_run({"run_id": "r", "task_id": "t", "seed": 0, "outcome": True})
    with pytest.raises(TypeError, match=r"steps\[0\]"):
        score_run({"steps": [{"args": {}}], "outcome": True})
    assert score_run({"steps": [], "outcome": True}).metrics["n_steps"] == 0


def test_a_diagnosis_without_a_spec_is_strict_json_with_null_for_what_it_cannot_compute():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=20, n_seeds=3)
    diagnosis = agentab.diagnose(score(traces))
    out = diagnosis.to_dict()
    assert json.dumps(out, allow_nan=False)  # raised on NaN before
    rows = [row for finding in out["findings"] for row in finding["evidence"]]
    assert any(row.get("cap_hit", 0) is None for row in rows)
    page = diagnosis._repr_html_()
    assert "NaN" not in page and "&lt;NA&gt;" not in page and f">{MISSING}<" in page


def test_plan_on_a_check_without_its_spec_says_why_it_has_no_values():
    runs = agentab.score(agentab.datasets.example_experiment(seed=1, n_tasks=10, n_seeds=2))
    with pytest.raises(agentab.PowerError, match="no values .*spec"):
        agentab.power.plan(runs[runs["arm"] == "baseline"], "cap_hit", 0.1)
