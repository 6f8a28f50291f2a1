"""Experiment-level diagnostics find each failure shape, with its evidence, and nothing on clean runs."""

from __future__ import annotations

import pandas as pd
import pytest

import agentab
from agentab import TrajectorySpec, diagnose


def _record(run_id, arm, calls, outcome, task="t1", **extra):
    steps = [{"index": i, "tool": tool, "args": args, "observation": {"status": status}}
             for i, (tool, args, status) in enumerate(calls)]
    return {"run_id": run_id, "task_id": task, "seed": 0, "arm": arm, "steps": steps, "outcome": outcome, **extra}


CLEAN = [("read_file", {"path": "a.py"}, "ok"), ("edit_file", {"path": "a.py"}, "ok"), ("run_tests", {}, "ok")]


def _titles(found):
    return [f.title for f in found.findings]


def test_clean_runs_have_no_findings():
    traces = agentab.load_traces([_record(f"r{i}", "base", CLEAN, True) for i in range(20)])
    found = diagnose(traces, spec=TrajectorySpec(required=("edit_file",), step_budget=5))
    assert found.findings == [] and str(found) == "no findings"
    assert found.to_dict() == {"findings": []}
    assert found.tables["rates"].loc["base", "passed"] == 1.0


def test_loops_cap_hits_and_accidental_recovery():
    looping = [("search", {"q": "x"}, "ok")] * 4 + CLEAN
    records = [_record(f"l{i}", "base", looping, True) for i in range(5)]
    records += [_record(f"c{i}", "base", CLEAN, True) for i in range(5)]
    found = diagnose(agentab.load_traces(records), spec=TrajectorySpec(max_repeats=3))
    titles = _titles(found)
    assert "base: loops in 50% of runs, loop cap hit in 50%" in titles
    assert "base: 50% of successes came after failed or looping calls" in titles
    loop_finding = next(f for f in found.findings if f.title.startswith("base: loops"))
    assert "non-termination" in loop_finding.reading and loop_finding.evidence.loc["base", "runs"] == 10


def test_context_exhaustion_cliff():
    short = [_record(f"s{i}", "base", CLEAN, True) for i in range(12)]
    long_calls = [("read_file", {"path": f"f{k}.py"}, "ok") for k in range(22)]
    long = [_record(f"g{i}", "base", long_calls, i < 1) for i in range(12)]
    found = diagnose(agentab.load_traces(short + long))
    cliff = [f for f in found.findings if "success falls" in f.title]
    assert len(cliff) == 1 and cliff[0].title == "base: success falls from 100% to 8% at 20-29 steps"
    assert "context exhaustion" in cliff[0].reading


def test_step_buckets_are_in_step_order_whatever_order_the_runs_come_in():
    # Long runs first: a groupby in order of appearance would put 20-29 before 0-4 and call a backwards cliff.
    long_calls = [("read_file", {"path": f"f{k}.py"}, "ok") for k in range(22)]
    long = [_record(f"g{i}", "base", long_calls, i < 1) for i in range(12)]
    short = [_record(f"s{i}", "base", CLEAN, True) for i in range(12)]
    found = diagnose(agentab.load_traces(long + short))
    steps = found.tables["steps"].loc["base"]
    assert list(steps.index) == ["0-4", "5-9", "10-14", "15-19", "20-29", "30+"]
    assert steps["runs"].tolist() == [12, 0, 0, 0, 12, 0]
    cliff = [f.title for f in found.findings if "success falls" in f.title]
    assert cliff == ["base: success falls from 100% to 8% at 20-29 steps"]


def test_selection_versus_arguments():
    reference = (agentab.Call("read_file", {"path": "a.py"}), agentab.Call("edit_file", {"path": "a.py"}))
    wrong_args = [("read_file", {"path": "b.py"}, "ok"), ("edit_file", {"path": "b.py"}, "ok")]
    wrong_tool = [("search", {"q": "a"}, "ok"), ("write_file", {"path": "a.py"}, "ok")]
    spec = TrajectorySpec(reference=reference)
    found = diagnose(agentab.load_traces([_record(f"a{i}", "base", wrong_args, False) for i in range(10)]), spec=spec)
    assert "base: tool selection 100% but argument correctness 0%" in _titles(found)
    assert "schema" in found.findings[-1].reading
    with pytest.warns(agentab.SpecWarning, match=r"never appear in any run's steps"):
        found = diagnose(agentab.load_traces([_record(f"w{i}", "base", wrong_tool, False) for i in range(10)]),
                         spec=spec)
    assert "base: tool selection 0%" in _titles(found)


def test_tool_choice_shift_between_arms():
    records = [_record(f"a{i}", "A", CLEAN, True) for i in range(10)]
    records += [_record(f"b{i}", "B", [("search", {"q": "x"}, "ok"), *CLEAN[1:]], True) for i in range(10)]
    found = diagnose(agentab.load_traces(records))
    shift = [f for f in found.findings if f.title.startswith("tool choice differs")]
    assert len(shift) == 1 and "total variation 0.33" in shift[0].title
    assert set(found.tables["tool_choice"].columns) == {"A", "B"}


def test_diagnose_accepts_a_scores_table_and_checks_its_input():
    traces = agentab.load_traces([_record(f"r{i}", "base", CLEAN, True) for i in range(3)])
    scores = agentab.score(traces, TrajectorySpec())
    assert isinstance(diagnose(scores).tables["rates"], pd.DataFrame)
    with pytest.raises(TypeError, match=r"diagnose needs Traces or a table from agentab.score, got int"):
        diagnose(3)
    with pytest.raises(KeyError, match=r"cannot group by 'family'"):
        diagnose(scores, by="family")


def test_example_experiment_findings():
    traces = agentab.datasets.example_experiment(seed=0)
    found = diagnose(traces, spec=agentab.datasets.example_specs(0))
    titles = " | ".join(_titles(found))
    assert "baseline: loops in" in titles and "did not terminate" in titles


def test_group_by_a_metadata_key():
    records = [_record(f"q{i}", "base", CLEAN, True, metadata={"task_type": "query"}) for i in range(5)]
    records += [_record(f"f{i}", "base", [("search", {"q": "x"}, "ok"), *CLEAN[1:]], True,
                        metadata={"task_type": "fix"}) for i in range(5)]
    found = diagnose(agentab.load_traces(records), by="task_type")
    assert set(found.tables["tool_choice"].columns) == {"query", "fix"}
    assert list(found.tables["rates"].index) == ["query", "fix"]
    with pytest.raises(KeyError, match=r"neither a column of the scores nor a metadata key"):
        diagnose(agentab.load_traces(records), by="colour")


def test_premature_and_recovery_findings_use_the_right_denominators():
    records = [_record(f"c{i}", "a", CLEAN, True) for i in range(9)]
    records.append(_record("p", "a", CLEAN[:1], False, metadata={"claimed_success": True}))
    titles = _titles(diagnose(agentab.load_traces(records)))
    assert "a: 1 of 10 runs (10%) claimed success without it (100% of the 1 recorded claims)" in titles
    records = [_record(f"c{i}", "a", CLEAN, True) for i in range(3)]
    records.append(_record("r", "a", [("read_file", {"path": "x"}, "error"), *CLEAN], True))
    found = diagnose(agentab.load_traces(records))
    recovery = next(f for f in found.findings if "successes came after" in f.title)
    assert recovery.title == "a: 25% of successes came after failed or looping calls"
    assert recovery.evidence.loc["a", "share_of_successes"] == 0.25


def test_argument_finding_without_selection_does_not_crash():
    scores = pd.DataFrame({"run_id": ["r"], "arm": ["a"], "n_steps": [3], "right_result": [False],
                           "arg_accuracy": [0.5]})
    assert "a: tool selection unknown but argument correctness 50%" in _titles(diagnose(scores))


def test_findings_print_title_and_reading_and_show_their_evidence():
    finding = agentab.Finding("a <b> title", "read & act", pd.DataFrame({"runs": [3]}, index=["<arm>"]))
    assert str(finding) == "a <b> title\n    read & act"
    both = agentab.Diagnosis(findings=[finding, finding])
    assert str(both) == "- a <b> title\n    read & act\n- a <b> title\n    read & act"
    assert finding.to_dict() == {"title": "a <b> title", "reading": "read & act",
                                 "evidence": [{"index": "<arm>", "runs": 3}]}
    fragment = both._repr_html_()
    assert "2 finding(s)" in fragment and "a &lt;b&gt; title" in fragment and "&lt;arm&gt;" in fragment
    assert "<b> title" not in fragment and "<arm>" not in fragment
