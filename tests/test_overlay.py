"""Run identity from file paths (``fields={"path": ...}``) and verdicts from a results table (``outcomes=``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import agentab
from agentab.errors import TraceError
from agentab.formats import Item
from agentab.traces._outcomes import read_outcomes
from agentab.traces._overlay import Overlay, PathTemplate

# --------------------------------------------------------------------------- path templates


@pytest.mark.parametrize("template, path, anchored, expected", [
    ("{task_id}/{seed}/*", "t1/3/trajectory.json", True, {"task_id": "t1", "seed": 3}),
    ("{task_id}/{seed}/*", "t1/3/sub/trajectory.json", True, None),  # * stays within one part
    ("**/{task_id}/{seed}/*", "a/b/t1/3/x.json", True, {"task_id": "t1", "seed": 3}),
    ("**/{task_id}/{seed}/*", "t1/3/x.json", True, {"task_id": "t1", "seed": 3}),  # ** is zero folders too
    ("{task_id}/{seed}/*", "runs/t1/3/x.json", False, {"task_id": "t1", "seed": 3}),  # a file: its path's end
    ("{task_id}/{seed}/*", "runs/t1/3/x.json", True, None),
    ("{arm}/{task_id}__*/agent/trajectory.json", "base/hello__Ab12/agent/trajectory.json", True,
     {"arm": "base", "task_id": "hello"}),
    ("{task_id}.traj", "django__django-1.traj", True, {"task_id": "django__django-1"}),
    ("{task_id}/{task_id}.json", "a/a.json", True, {"task_id": "a"}),  # a name twice must agree
    ("{task_id}/{task_id}.json", "a/b.json", True, None),
    ("run-?/{model}/*.jsonl", "run-1/gpt/x.jsonl", True, {"model": "gpt"}),
    ("run-?/{model}/*.jsonl", "run-12/gpt/x.jsonl", True, None),
    ("{task_id}.[x].json", "t.[x].json", True, {"task_id": "t"}),  # regex characters are literal
])
def test_path_template_captures_like_a_glob(template, path, anchored, expected):
    assert PathTemplate.compile(template).values(path, anchored=anchored) == expected


@pytest.mark.parametrize("template, words", [
    ("{task}/*", "not a field a path can give"),
    ("*/*.json", "captures no field"),
    ("{task_id/*", "unbalanced"),
    ("task_id}/*", "unbalanced"),
    ("", "path template"),
    ("{outcome}/*", "not a field"),
])
def test_bad_path_templates_are_one_line_errors(template, words):
    with pytest.raises(ValueError, match=words):
        PathTemplate.compile(template)


def test_a_seed_from_the_path_must_be_a_whole_number():
    template = PathTemplate.compile("{task_id}/{seed}/*")
    with pytest.raises(ValueError, match="not a whole number"):
        template.values("t1/first/x.json", anchored=True)


# --------------------------------------------------------------------------- loading with them

def _run(run_id="r1", task_id="t1", seed=0, outcome=True, **extra):
    record = {"run_id": run_id, "task_id": task_id, "seed": seed, "messages": [
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "ls", "arguments": "{}"}}],
         "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}], **extra}
    if outcome is not None:
        record["outcome"] = outcome
    return record


def _write(path: Path, *records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_path_fields_replace_the_readers_in_a_folder(tmp_path):
    _write(tmp_path / "fix-a" / "2" / "run.jsonl", _run("x1", task_id="ignored", seed=9))
    _write(tmp_path / "fix-b" / "0" / "run.jsonl", _run("x2", task_id="ignored", seed=9))
    traces = agentab.load_traces(tmp_path, fields={"path": "{task_id}/{seed}/*"})
    assert traces.runs.set_index("run_id")[["task_id", "seed"]].astype(object).to_dict("index") == {
        "x1": {"task_id": "fix-a", "seed": 2}, "x2": {"task_id": "fix-b", "seed": 0}}


def test_path_model_and_harness_go_to_the_runs_columns(tmp_path):
    _write(tmp_path / "gpt-5" / "react" / "run.jsonl", _run())
    traces = agentab.load_traces(tmp_path, fields={"path": "{model}/{harness}/*"})
    assert traces.runs.loc[0, ["model", "harness"]].tolist() == ["gpt-5", "react"]


def test_a_path_that_does_not_match_is_a_rejection_naming_it(tmp_path):
    _write(tmp_path / "t1" / "0" / "run.jsonl", _run("a"))
    _write(tmp_path / "stray.jsonl", _run("b"))
    with pytest.raises(TraceError, match="does not match fields\\['path'\\]"):
        agentab.load_traces(tmp_path, fields={"path": "{task_id}/{seed}/*"})
    traces = agentab.load_traces(tmp_path, fields={"path": "{task_id}/{seed}/*"}, strict=False)
    assert traces.runs.run_id.tolist() == ["a"]
    assert traces.rejected.field.tolist() == ["path"] and "'stray.jsonl'" in traces.rejected.reason[0]
    assert len(traces.runs) + len(traces.rejected) == traces.n_read


def test_a_file_given_directly_matches_at_its_end(tmp_path):
    path = _write(tmp_path / "suite" / "t7" / "4" / "run.jsonl", _run())
    traces = agentab.load_traces(path, fields={"path": "{task_id}/{seed}/*"})
    assert traces.runs.loc[0, "task_id"] == "t7" and traces.runs.loc[0, "seed"] == 4


def test_a_text_seed_in_the_path_rejects_the_run(tmp_path):
    _write(tmp_path / "t1" / "first" / "run.jsonl", _run())
    traces = agentab.load_traces(tmp_path, fields={"path": "{task_id}/{seed}/*"}, strict=False)
    assert traces.runs.empty and "not a whole number" in traces.rejected.reason[0]


def test_a_path_arm_conflicting_with_the_given_arm_is_an_error(tmp_path):
    _write(tmp_path / "candidate" / "run.jsonl", _run())
    with pytest.raises(TraceError, match="arm"):
        agentab.load_traces(tmp_path, fields={"path": "{arm}/*"}, arm="baseline")
    assert agentab.load_traces(tmp_path, fields={"path": "{arm}/*"}).arms == ["candidate"]


def test_own_record_refuses_path_and_outcomes(tmp_path):
    record = {"run_id": "r", "task_id": "t", "seed": 0, "outcome": True, "steps": []}
    path = _write(tmp_path / "t" / "runs.jsonl", record)
    with pytest.raises(TraceError, match="converted formats only"):
        agentab.load_traces(path, fields={"path": "{task_id}/*"})
    with pytest.raises(TypeError, match="own record"):
        agentab.load_traces(path, format="record", outcomes=pd.DataFrame({"run_id": ["r"], "outcome": [True]}))


# --------------------------------------------------------------------------- outcomes tables

def test_outcomes_by_task_and_seed_replace_the_files_and_keep_it(tmp_path):
    path = _write(tmp_path / "runs.jsonl", _run("a", "t1", 0, outcome=False), _run("b", "t1", 1, outcome=True),
                  _run("c", "t2", 0, outcome=True))
    table = pd.DataFrame({"task_id": ["t1", "t1", "t9"], "seed": [0, 1, 0], "outcome": [True, True, False]})
    traces = agentab.load_traces(path, outcomes=table)
    runs = traces.runs.set_index("run_id")
    assert runs.outcome.to_dict() == {"a": True, "b": True, "c": True}  # c: no row, keeps its file's
    assert json.loads(runs.loc["a", "metadata"])["outcome_in_file"] is False
    meta_b = runs.loc["b", "metadata"]
    assert pd.isna(meta_b) or "outcome_in_file" not in json.loads(meta_b)  # the same verdict: nothing kept
    assert traces.unmatched_outcomes.to_dict("records") == [{"row": 3, "task_id": "t9", "seed": 0,
                                                             "outcome": False}]


def test_outcomes_by_run_id_from_a_csv(tmp_path):
    path = _write(tmp_path / "runs.jsonl", _run("a"), _run("b", seed=1))
    (tmp_path / "verdicts.csv").write_text("run_id,outcome\na,0.5\nb,1.0\n")
    traces = agentab.load_traces(path, outcomes=tmp_path / "verdicts.csv")
    assert traces.runs.outcome.tolist() == [0.5, 1.0] and traces.unmatched_outcomes.empty


def test_a_blank_outcome_rejects_the_run_it_matches(tmp_path):
    path = _write(tmp_path / "runs.jsonl", _run("a"), _run("b", seed=1))
    (tmp_path / "verdicts.csv").write_text("run_id,outcome\na,true\nb,\n")
    with pytest.warns(agentab.errors.TraceWarning, match="blank"):
        traces = agentab.load_traces(path, outcomes=tmp_path / "verdicts.csv", strict=False)
    assert traces.runs.run_id.tolist() == ["a"]
    assert "blank outcome" in traces.rejected.reason[0] and traces.rejected.field[0] == "outcome"


def test_a_seedless_table_matches_by_task_and_refuses_a_task_with_two_runs(tmp_path):
    path = _write(tmp_path / "runs.jsonl", _run("a", "t1", 0), _run("b", "t2", 0))
    traces = agentab.load_traces(path, outcomes=pd.DataFrame({"instance_id": ["t1", "t2"],
                                                              "outcome": [False, True]}))
    assert traces.runs.outcome.tolist() == [False, True]
    path = _write(tmp_path / "two.jsonl", _run("a", "t1", 0), _run("b", "t1", 1))
    with pytest.raises(TraceError, match="no seed column, and task 't1' has more than one run"):
        agentab.load_traces(path, outcomes=pd.DataFrame({"task_id": ["t1"], "outcome": [True]}), strict=False)


def test_swebench_run_report(tmp_path):
    # the lists of SWE-bench's harness report (make_run_report, schema_version 2)
    report = {"total_instances": 5, "submitted_instances": 5, "completed_instances": 3, "resolved_instances": 1,
              "unresolved_instances": 1, "empty_patch_instances": 1, "error_instances": 1,
              "completed_ids": ["a", "b", "c"], "incomplete_ids": [], "empty_patch_ids": ["c"],
              "submitted_ids": ["a", "b", "c", "d"], "resolved_ids": ["a"], "unresolved_ids": ["b"],
              "error_ids": ["d"], "schema_version": 2}
    (tmp_path / "report.json").write_text(json.dumps(report))
    path = _write(tmp_path / "runs.jsonl", *(_run(f"r-{t}", t, 0, outcome=None) for t in "abcde"))
    traces = agentab.load_traces(path, outcomes=tmp_path / "report.json", format="openai", strict=False)
    assert traces.runs.set_index("task_id").outcome.to_dict() == {"a": True, "b": False, "c": False}
    reasons = traces.rejected.set_index("run_id").reason  # the rejections name their runs
    assert "error_ids" in reasons["r-d"] and "no verdict" in reasons["r-d"]
    assert "no row of the outcomes table" in reasons["r-e"] and "task_id 'e'" in reasons["r-e"]


def test_swebench_per_instance_report(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({
        "django__django-11099": {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
                                 "resolved": True, "tests_status": {}}}))
    table = read_outcomes(tmp_path / "report.json")
    assert table.by == ("task_id",) and table.lookup({"task_id": "django__django-11099"}).value is True


@pytest.mark.parametrize("frame, words", [
    (pd.DataFrame({"task_id": ["a"], "resolved": [True]}), "no `outcome` column"),
    (pd.DataFrame({"name": ["a"], "outcome": [True]}), "needs a `run_id` column"),
    (pd.DataFrame({"run_id": ["a", "a"], "outcome": [True, False]}), "two rows give run_id 'a'"),
    (pd.DataFrame({"task_id": ["a"], "seed": [0.5], "outcome": [True]}), "whole number"),
    (pd.DataFrame({"task_id": ["a"], "seed": [None], "outcome": [True]}), "blank `seed`"),
    (pd.DataFrame({"run_id": ["a"], "outcome": ["pass"]}), "must be true/false or a number"),
])
def test_bad_outcomes_tables_are_one_line_errors(frame, words):
    with pytest.raises(TraceError, match=words):
        read_outcomes(frame)


def test_a_swebench_report_listing_an_instance_twice_is_an_error(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({"resolved_ids": ["a"], "unresolved_ids": ["a"]}))
    with pytest.raises(TraceError, match="which is its verdict"):
        read_outcomes(tmp_path / "report.json")


def test_a_run_missing_its_outcome_says_both_why_and_what_was_looked_up():
    item = Item(3, record={"run_id": "r", "task_id": "t", "seed": 0, "steps": []},
                missing={"outcome": ("outcome", "no outcome: the file records no verdict")})
    overlay = Overlay(None, read_outcomes(pd.DataFrame({"task_id": ["u"], "seed": [0], "outcome": [True]})))
    (out,) = overlay.apply([item], None, None)
    assert out.record is None and out.field == "outcome"
    assert out.reason.startswith("no outcome: the file records no verdict; and no row of the outcomes table")
    (out,) = Overlay().apply([item], None, None)  # nothing to fill it: the reader's own rejection
    assert (out.field, out.reason) == ("outcome", "no outcome: the file records no verdict")
    filled = Item(3, record=dict(item.record), missing=item.missing)
    (out,) = Overlay(None, read_outcomes(pd.DataFrame({"task_id": ["t"], "seed": [0], "outcome": [1.0]}))).apply(
        [filled], None, None)
    assert out.record["outcome"] == 1.0 and out.missing is None


# ------------------------------------------------------------- real reports (tests/data/swebench_reports)

MINI = Path(__file__).parent / "data" / "mini_swe_agent"
REPORTS = Path(__file__).parent / "data" / "swebench_reports"
TRAJECTORIES = sorted(MINI.glob("*__*.traj.json"))


def test_the_real_sb_cli_report_reads_as_its_lists_say():
    raw = json.loads((REPORTS / "sb-cli-report.json").read_text())
    table = read_outcomes(REPORTS / "sb-cli-report.json")
    assert table.by == ("task_id",) and len(table.frame) == len(raw["resolved_ids"]) + len(raw["unresolved_ids"])
    assert int(table.frame.outcome.sum()) == raw["resolved_instances"] == 371


def test_a_folder_of_real_per_instance_reports_names_each_by_its_folder():
    table = read_outcomes(REPORTS / "logs")
    assert dict(zip(table.frame.task_id, table.frame.outcome)) == {"django__django-12143": True,
                                                                  "django__django-16255": True}


def test_real_trajectories_take_their_verdicts_from_the_real_reports():
    traces = agentab.load_traces(TRAJECTORIES, outcomes=REPORTS / "sb-cli-report.json")
    assert traces.runs.outcome.tolist() == [True, True, True]  # all three are in resolved_ids
    assert len(traces.unmatched_outcomes) == 500 - 3
    traces = agentab.load_traces(TRAJECTORIES, outcomes=REPORTS / "logs", strict=False)
    assert sorted(traces.runs.task_id) == ["django__django-12143", "django__django-16255"]
    (reason,) = traces.rejected.reason  # matplotlib's report is not in the folder
    assert "no row of the outcomes table" in reason and "matplotlib__matplotlib-25287" in reason


# ------------------------------------------------ framework OTel as exported (tests/data/otel_families)

@pytest.mark.parametrize("family", ["openinference", "openllmetry"])
def test_framework_spans_load_with_one_fields_mapping_and_an_outcomes_table(family):
    # the real instrumentation names the task only in the run span's name ("solve weather-paris", OpenLLMetry
    # adds ".workflow") and the seed in a resource attribute; the verdicts are in a table of their own
    path = Path(__file__).parent / "data" / "otel_families" / f"{family}.jsonl"
    table = pd.DataFrame({"task_id": ["weather-oslo", "weather-paris", "weather-rome"], "seed": [1, 1, 1],
                          "outcome": [True, False, True]})
    traces = agentab.load_traces(path, fields={"task_id": r"span.name:^solve ([\w-]+)", "seed": "resource:eval.seed"},
                                 outcomes=table)
    runs = traces.runs.set_index("task_id")
    assert runs.outcome.to_dict() == {"weather-paris": False, "weather-oslo": True}
    assert runs.seed.tolist() == [1, 1] and traces.unmatched_outcomes.task_id.tolist() == ["weather-rome"]
    assert runs.loc["weather-paris", "n_errors"] == 1  # the Atlantis lookup


def test_a_run_without_the_key_is_never_looked_up_as_the_text_none():
    table = read_outcomes(pd.DataFrame({"run_id": ["None", "r"], "outcome": [True, False]}))
    found = table.lookup({"run_id": None, "task_id": "t", "seed": 0})
    assert not found.matched and "has no run_id" in found.no_match
