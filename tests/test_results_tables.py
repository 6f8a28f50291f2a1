"""Per-run results tables (agentab.load_results and every CLI command), on real excerpts in tests/data/results/."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from conftest import make_record, write_jsonl

import agentab
from agentab.cli import EXIT_BAD_INPUT, main
from agentab.errors import TraceError, TraceWarning
from agentab.traces import column_hint, is_results_table

DATA = Path(__file__).parent / "data" / "results"
TB = DATA / "terminal_bench_trials.csv"
SWE = DATA / "swebench_verified_per_instance.csv"
METR = DATA / "metr_runs.jsonl"
SONNET, OPUS, GPT5 = "20250923_droid_claude-4-sonnet", "20250923_droid_claude-4-1-opus", "20250924_droid_gpt-5"
FAST = ("--n-resamples", "499")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def quiet_load(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return agentab.load_results(*args, **kwargs)


# --------------------------------------------------------------------------- the reader
def test_terminal_bench_true_false_with_blanks_is_binary_and_its_blanks_are_counted():
    raw = pd.read_csv(TB)
    assert raw["is_resolved"].dtype == object  # pandas alone: True/False/blank is text
    with pytest.warns(TraceWarning, match=r"kept as missing \(never 0 or False\): outcome 20"):
        table = agentab.load_results(TB, fields={"outcome": "is_resolved"})
    assert isinstance(table["outcome"].dtype, pd.BooleanDtype) and isinstance(table["is_resolved"].dtype, pd.BooleanDtype)
    assert int(table["outcome"].isna().sum()) == 20 and table.attrs["missing"] == {"outcome": 20}
    assert int(table["outcome"].sum()) == int((raw["is_resolved"] == True).sum())  # noqa: E712 (the raw text)
    assert len(table) == len(raw) == 300


def test_swebench_and_metr_are_tables_and_traces_are_not(tmp_path):
    assert is_results_table(TB) and is_results_table(SWE) and is_results_table(METR)
    trace = write_jsonl(tmp_path / "trace.jsonl", [make_record("r1")])
    assert not is_results_table(trace) and not is_results_table(tmp_path)
    swe = quiet_load(SWE, fields={"task_id": "instance_id", "outcome": "resolved"})
    assert isinstance(swe["outcome"].dtype, pd.BooleanDtype) and swe["task_id"].nunique() == 40
    assert "instance_id" in swe.columns  # a mapped column is copied: the original stays for --where
    metr = quiet_load(METR)
    assert len(metr) == 143 and metr["score_binarized"].dtype.kind == "i"  # 0/1 without blanks stays numeric


@pytest.mark.parametrize("values", [
    [True, False, None], ["true", "false", None], ["True", "False", ""], [1.0, 0.0, float("nan")],
])
def test_the_obvious_binary_spellings(values):
    table = quiet_load(pd.DataFrame({"x": values, "y": [1, 2, 3]}))
    assert isinstance(table["x"].dtype, pd.BooleanDtype)
    assert table["x"].tolist()[:2] == [True, False] and table["x"].isna().tolist() == [False, False, True]


def test_text_or_counts_are_not_read_as_binary():
    table = quiet_load(pd.DataFrame({"id": ["0", "1", "1"], "n": [0, 1, 2], "flag01": [0, 1, 1], "t": ["a", "b", None]}))
    assert table["id"].dtype != "boolean" and table["n"].dtype.kind == "i" and table["flag01"].dtype.kind == "i"
    assert not isinstance(table["t"].dtype, pd.BooleanDtype)


def test_where_is_applied_in_order_and_recorded():
    table = quiet_load(TB, where=["agent == 'Droid'", f"submission != '{GPT5}'", "n_tests > 1"])
    kept = table.attrs["where"]
    assert [before for _, before, _ in kept] == [300, 300, 200] and kept[-1][2] == len(table) < 200
    assert set(table["submission"]) == {SONNET, OPUS}


@pytest.mark.parametrize(("where", "words"), [
    ("agnet == 'Droid'", "name 'agnet' is not defined"),
    ("agent ==", "where 'agent =='"),
    ("n_tests + 1", "not a condition"),
    ("agent == 'nobody'", "no rows left (of 300)"),
])
def test_a_bad_where_is_one_typed_line_naming_it_and_the_columns(where, words):
    with pytest.raises(TraceError) as info:
        quiet_load(TB, where=where)
    message = str(info.value)
    assert words in message and "\n" not in message and str(TB) in message
    if "no rows" not in words and "not a condition" not in words:
        assert "(columns: submission, agent, model" in message


def test_fields_naming_a_missing_column_lists_the_columns():
    with pytest.raises(TraceError, match=r"field outcome: no column 'resolved' \(columns: submission, agent"):
        quiet_load(TB, fields={"outcome": "resolved"})


def test_outcome_candidates_in_the_hint():
    table = quiet_load(SWE)
    assert column_hint(table, "outcome", cli=True).startswith(
        "no column 'outcome'; candidates: resolved (binary); map one with --field outcome=COL (columns: ")
    metr = quiet_load(METR)
    assert "candidates: score (numeric), score_binarized (numeric);" in column_hint(metr, "outcome")
    assert 'fields={"outcome": COL}' in column_hint(metr, "outcome")


def test_flat_jsonl_strict_and_lenient(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text('{"task_id": "a", "score": 1}\n{"task_id": "b", "score": {"x": 1}}\nnot json\n'
                    '{"task_id": "c", "score": 0}\n')
    with pytest.raises(TraceError, match=r"runs.jsonl, line 2, field score: a results table's records are flat"):
        agentab.load_results(path)
    with pytest.warns(TraceWarning, match="2 bad lines skipped"):
        table = agentab.load_results(path, strict=False)
    assert table["task_id"].tolist() == ["a", "c"]


def test_a_dataframe_is_copied_not_changed():
    frame = pd.DataFrame({"task": ["a", "b"], "ok": ["True", "False"]})
    table = agentab.load_results(frame, fields={"task_id": "task"})
    assert frame["ok"].dtype != "boolean" and list(frame.columns) == ["task", "ok"]
    assert table["ok"].tolist() == [True, False] and table["task_id"].tolist() == ["a", "b"]


# --------------------------------------------------------------------------- the command line
def test_terminal_bench_compare_plan_and_report_with_mapping_flags_only(tmp_path, capsys):
    flags = ("--arm-column", "submission", "--field", "outcome=is_resolved", "--where", "agent == 'Droid'")
    code, out, err = run(capsys, "compare", TB, *flags, "--names", SONNET, OPUS, "--report", tmp_path / "tb.html", *FAST)
    assert code == 0, err
    assert "design: paired by task (19 tasks)" in out and "outcome" in out  # one task has no outcome in an arm
    assert "--where \"agent == 'Droid'\": 300 of 300 rows kept" in err and "outcome 20" in err
    assert (tmp_path / "tb.html").stat().st_size > 10_000
    code, out, err = run(capsys, "plan", TB, *flags, "--where", f"submission != '{GPT5}'", "--baseline-arm", SONNET,
                         "--metric", "outcome", "--effect", "0.1")
    assert code == 0, err
    assert "Plan for outcome (binary), paired design" in out and "Pilot: 19 tasks, 95 runs" in out


def test_swebench_and_metr_compare_and_plan(tmp_path, capsys):
    swe = ("--arm-column", "submission_folder", "--field", "task_id=instance_id", "--field", "outcome=resolved")
    code, out, err = run(capsys, "compare", SWE, *swe, "--names", "20250807_mini-v1.7.0_gpt-5-mini",
                         "20250807_mini-v1.7.0_gpt-5", "--report", tmp_path / "swe.md", *FAST)
    assert code == 0, err
    assert "paired by task (40 tasks)" in out and "cost_usd" in out and (tmp_path / "swe.md").exists()
    metr = ("--arm-column", "alias", "--field", "outcome=score_binarized")
    code, out, err = run(capsys, "compare", METR, *metr, "--names", "GPT-4o", "Claude 3.5 Sonnet (New)", *FAST)
    assert code == 0, err
    assert "paired by task (12 tasks)" in out
    code, out, err = run(capsys, "plan", METR, *metr, "--baseline-arm", "GPT-4o", "--metric", "outcome",
                         "--kind", "binary", "--effect", "0.1")
    assert code == 0, err
    assert "Pilot: 12 tasks" in out


def test_two_arms_and_no_names_is_an_error_naming_both(capsys):
    code, _, err = run(capsys, "compare", TB, "--arm-column", "submission", "--field", "outcome=is_resolved",
                       "--where", f"submission != '{GPT5}'", *FAST)
    assert code == EXIT_BAD_INPUT
    assert f"two arms, {SONNET} and {OPUS}, and neither is named baseline" in err or \
        f"two arms, {OPUS} and {SONNET}, and neither is named baseline" in err
    assert "--names BASELINE CANDIDATE" in err
    code, _, err = run(capsys, "compare", TB, "--arm-column", "submission", "--field", "outcome=is_resolved", *FAST)
    assert code == EXIT_BAD_INPUT and "has 3 arms" in err and SONNET in err and GPT5 in err
    code, _, err = run(capsys, "plan", TB, "--arm-column", "submission", "--field", "outcome=is_resolved",
                       "--metric", "outcome", "--effect", "0.1")
    assert code == EXIT_BAD_INPUT and "has 3 arms" in err and "--baseline-arm NAME" in err
    code, _, err = run(capsys, "plan", TB, "--arm-column", "submission", "--field", "outcome=is_resolved",
                       "--where", f"submission != '{GPT5}'", "--metric", "outcome", "--effect", "0.1")
    assert code == EXIT_BAD_INPUT and "neither is named baseline" in err and "--baseline-arm NAME" in err


def test_a_missing_outcome_offers_the_candidates_and_the_flag(capsys):
    code, _, err = run(capsys, "compare", TB, "--arm-column", "submission", "--names", SONNET, OPUS, *FAST)
    assert code == EXIT_BAD_INPUT and err.strip().splitlines()[-1].startswith("agentab: error: ")
    assert "--primary outcome: no column 'outcome'; candidates: is_resolved (binary); map one with --field " \
        "outcome=COL (columns: submission, agent" in err
    code, _, err = run(capsys, "summary", SWE, "--arm-column", "submission_folder")
    assert code == EXIT_BAD_INPUT and "no column 'task_id'" in err and "--field task_id=COL" in err


def test_bad_where_and_field_on_the_command_line_name_the_flags(capsys):
    code, _, err = run(capsys, "compare", TB, "--arm-column", "submission", "--where", "agnet == 'Droid'", *FAST)
    assert code == EXIT_BAD_INPUT and "--where \"agnet == 'Droid'\": name 'agnet' is not defined" in err
    assert "(columns: submission, agent" in err and "agentab: error: " in err.strip().splitlines()[-1]
    code, _, err = run(capsys, "compare", TB, "--arm-column", "submission", "--field", "outcome=resolved", *FAST)
    assert code == EXIT_BAD_INPUT and "--field outcome=resolved: no column 'resolved' (columns: submission" in err


def test_summary_score_diagnose_and_power_take_tables(tmp_path, capsys):
    code, out, err = run(capsys, "summary", SWE, "--arm-column", "submission_folder", "--field", "task_id=instance_id",
                         "--field", "outcome=resolved")
    assert code == 0, err
    assert "20250807_mini-v1.7.0_gpt-5" in out and "55.0%" in out
    code, out, err = run(capsys, "score", TB, "--where", "agent == 'Droid'")
    assert code == 0 and "a results table of 300 runs, passed through" in out and "is_resolved: binary, 20 missing" in out
    code, out, err = run(capsys, "score", TB, "-o", tmp_path / "tb.csv", "--where", f"submission == '{GPT5}'")
    assert code == 0 and len(pd.read_csv(tmp_path / "tb.csv")) == 100
    spec = tmp_path / "spec.json"
    spec.write_text("{}")
    for command in ("score", "diagnose"):
        code, _, err = run(capsys, command, TB, "--spec", spec)
        assert code == EXIT_BAD_INPUT and "a trajectory score needs each run's steps" in err, command
    code, out, err = run(capsys, "power", "--metric", "cost", "--baseline", SWE, "--column", "cost_usd",
                         "--arm-column", "submission_folder", "--baseline-arm", "20250807_mini-v1.7.0_gpt-5",
                         "--where", "cost_usd > 0", "--effect=-20%")
    assert code == 0, err
    assert "arm 20250807_mini-v1.7.0_gpt-5 of" in out and "(40 runs" in out


def test_records_whose_arm_contradicts_their_position_are_an_error(tmp_path, capsys):
    base = write_jsonl(tmp_path / "a.jsonl", [make_record(f"a{i}", task_id=f"t{i}", arm="candidate") for i in range(3)])
    cand = write_jsonl(tmp_path / "b.jsonl", [make_record(f"b{i}", task_id=f"t{i}", arm="baseline") for i in range(3)])
    code, _, err = run(capsys, "compare", base, cand, *FAST)
    assert code == EXIT_BAD_INPUT
    assert "a.jsonl is in the BASELINE position but its records say arm 'candidate'" in err
    assert "swap the files" in err and "--names BASELINE CANDIDATE" in err


def test_spec_file_errors_name_its_keys_not_python_keywords(tmp_path, capsys):
    trace = write_jsonl(tmp_path / "t.jsonl", [make_record("r1")])
    for text, words in (('{"budget": 3}', "unknown spec key 'budget'; keys: required, reference"),
                        ('{"tasks": {"t1": {"foo": 1}}}', "task t1: unknown spec key 'foo'"),
                        ('{"match": "nope", "reference": [{"tool": "a"}]}', 'key "match" is \'nope\', must be one of')):
        (tmp_path / "spec.json").write_text(text)
        code, _, err = run(capsys, "score", trace, "--spec", tmp_path / "spec.json")
        assert code == EXIT_BAD_INPUT and words in err, err
        assert "__init__" not in err and "keyword" not in err and "`" not in err


@pytest.mark.parametrize(("argv", "words"), [
    (("power", "--metric", "binary", "--effect", "0.05"), "give --baseline, the baseline success rate"),
    (("power", "--metric", "continuous", "--effect", "0.3", "--baseline", "0.5"), "--baseline is not used"),
    (("power", "--metric", "binary", "--effect", "0.05", "--baseline", "0.5", "--paired"), "--paired for binary: give --discordant"),
])
def test_power_errors_name_flags(argv, words, capsys):
    code, _, err = run(capsys, *argv)
    assert code == EXIT_BAD_INPUT and words in err and "=," not in err and "design=" not in err


def test_plan_errors_name_flags(tmp_path, capsys):
    assert main(["example", "--out", str(tmp_path), "--tasks", "6", "--seeds", "2"]) == 0
    code, _, err = run(capsys, "plan", tmp_path, "--metric", "outcome", "--effect", "0.05", "--heterogeneity", "20")
    assert code == EXIT_BAD_INPUT and "--heterogeneity must be a ratio" in err and "`" not in err
    code, _, err = run(capsys, "plan", tmp_path, "--metric", "outcome", "--effect", "0.05", "--baseline-arm", "nope")
    assert code == EXIT_BAD_INPUT and "--baseline-arm 'nope' not in column 'arm' (arms: baseline, candidate)" in err


def test_example_spec_json_reproduces_the_demo_comparison(tmp_path, capsys):
    code, out, _ = run(capsys, "example", "--out", tmp_path, "--tasks", "10", "--seeds", "2", "--seed", "3")
    assert code == 0 and (tmp_path / "spec.json").exists() and "spec:" in out
    code, out, err = run(capsys, "compare", tmp_path / "baseline.jsonl", tmp_path / "candidate.jsonl",
                         "--spec", tmp_path / "spec.json", "--json", "--seed", "3", *FAST)
    assert code == 0, err
    from_files = json.loads(out)["metrics"]
    traces = agentab.datasets.example_experiment(seed=3, n_tasks=10, n_seeds=2)
    scores = agentab.score(traces, agentab.datasets.example_specs(seed=3, n_tasks=10))
    metrics = [row["metric"].split(" ")[0] for row in from_files]
    assert {"cap_hit", "loop", "arg_accuracy", "rubric"} <= set(metrics)  # the trajectory findings are there
    direct = agentab.compare(scores, metrics=list(dict.fromkeys(metrics)), n_resamples=499, seed=3).to_dict()["metrics"]
    assert [(r["metric"], r["effect"], r["p_value"]) for r in from_files] == \
        [(r["metric"], r["effect"], r["p_value"]) for r in direct]
    # And the folder with its spec.json still reads as traces.
    code, out, err = run(capsys, "summary", tmp_path)
    assert code == 0, err


def test_where_filters_the_scores_of_traces_too(tmp_path, capsys):
    assert main(["example", "--out", str(tmp_path), "--tasks", "8", "--seeds", "2"]) == 0
    code, out, err = run(capsys, "compare", tmp_path / "baseline.jsonl", tmp_path / "candidate.jsonl",
                         "--where", "task_id not in ['t000', 't001']", *FAST)
    assert code == 0, err
    assert "paired by task (6 tasks)" in out and "--where \"task_id not in ['t000', 't001']\": 24 of 32 runs kept" in err
    code, out, err = run(capsys, "summary", tmp_path, "--where", "seed == 0")
    assert code == 0 and "16 of 32 runs kept" in err
    code, _, err = run(capsys, "diagnose", tmp_path, "--where", "seed == 0")
    assert code == EXIT_BAD_INPUT and "--where filters results tables and scores" in err


def test_the_example_spec_file_reads_back_as_the_same_specs(tmp_path):
    from agentab.cli._inputs import read_spec, write_spec

    specs = agentab.datasets.example_specs(seed=1, n_tasks=5)
    assert read_spec(write_spec(tmp_path / "spec.json", specs)) == specs


def test_load_traces_sends_a_results_table_to_load_results():
    """METR's runs file is flat records: load_traces names the reader that takes it, instead of
    rejecting its first field as an unknown trace field."""
    with pytest.raises(TraceError, match="results table .*agentab.load_results") as info:
        agentab.load_traces(METR)
    assert str(METR) in str(info.value) and "unknown field" not in str(info.value)


def test_a_folder_written_by_agentab_example_loads_without_its_spec(tmp_path):
    """`agentab example` writes spec.json beside the traces; loading the folder skips it."""
    folder = tmp_path / "runs"
    folder.mkdir()
    write_jsonl(folder / "baseline.jsonl", [make_record(run_id="r1", task_id="t1", seed=0, arm="baseline")])
    (folder / "spec.json").write_text(json.dumps({"required": ["search"]}))
    traces = agentab.load_traces(folder)
    assert len(traces.runs) == 1 and traces.rejected.empty


def test_plan_reads_a_results_table_with_fields_and_where_and_never_picks_the_baseline_by_row_order():
    """Python's plan takes the same mapping as the CLI; with three arms and no baseline named it stops."""
    arms = sorted(pd.read_csv(TB)["submission"].unique())
    with pytest.warns(TraceWarning, match="kept as missing"):
        p = agentab.power.plan(TB, "outcome", 0.1, kind="binary", fields={"outcome": "is_resolved"}, arm="submission",
                               baseline=arms[1], where=f"submission in {arms[:2]!r}")
    assert p.tasks > 20 and not any("ignored" in n for n in p.notes)  # the filter left the two arms only
    with pytest.warns(TraceWarning), pytest.raises(agentab.PowerError, match="none is named 'baseline'") as info:
        agentab.power.plan(TB, "outcome", 0.1, kind="binary", fields={"outcome": "is_resolved"}, arm="submission")
    assert all(a in str(info.value) for a in arms)


def test_compare_reads_a_results_table_with_fields_and_names_outcome_candidates_when_unmapped():
    """Python's compare takes a results table's path and the CLI's mapping; unmapped, the error offers `resolved`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        arms = sorted(pd.read_csv(SWE)["submission_folder"].unique())
        result = agentab.compare(SWE, arm="submission_folder", baseline=arms[0], n_resamples=199,
                                 fields={"task_id": "instance_id", "outcome": "resolved"})
        assert result.design.kind == "paired" and result.baseline == arms[0]
        with pytest.raises(agentab.CompareError, match="primary metric 'outcome' is not a column.*resolved") as info:
            agentab.compare(SWE, arm="submission_folder", baseline=arms[0], n_resamples=199)
    assert 'fields={"outcome"' in str(info.value)


def test_an_arm_named_candidate_fixes_the_roles_on_the_command_line_as_in_python(tmp_path, capsys):
    """Two arms, 'candidate' and 'prod': prod is the baseline whatever the row order, as agentab.compare decides."""
    rows = [{"task_id": f"t{t}", "arm": arm, "outcome": (t + (arm == "candidate")) % 3 == 0}
            for t in range(12) for arm in ("candidate", "prod")]
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    code, out, err = run(capsys, "compare", str(path), "--arm-column", "arm", *FAST)
    assert code == 0, err
    assert out.startswith("agentab comparison: candidate") and "vs prod" in out.splitlines()[0]
