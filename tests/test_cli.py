"""The command line: every command runs, is documented, and fails cleanly on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import make_record, write_jsonl

from agentab.cli import EXIT_BAD_INPUT, build_parser, main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_is_documented(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    top = capsys.readouterr().out
    for name, sub in commands.items():
        assert name in top, name
        assert f"agentab {name}" in top, f"no example for {name}"
        assert sub.description, name
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"



def _commands_of(parser):
    return parser._subparsers._group_actions[0].choices


def test_every_command_and_every_flag_has_help():
    parser = build_parser()
    for action in parser._actions:
        if action.option_strings:  # the flags; the commands are checked one by one below
            assert action.help, f"agentab {action.option_strings} has no help"
    listed = {choice.dest: choice.help for choice in parser._subparsers._group_actions[0]._choices_actions}
    for name, sub in _commands_of(parser).items():
        assert listed.get(name), f"{name} has no help line in `agentab --help`"
        for action in sub._actions:
            assert action.help and action.help != "==SUPPRESS==", f"{name} {action.option_strings or action.dest}"


def test_the_commands_and_their_flags_are_frozen():
    """Renaming or removing a command or flag breaks users' scripts and CI jobs: this test must be edited to do so."""
    parser = build_parser()
    assert sorted(o for a in parser._actions for o in a.option_strings) == [
        "--debug", "--help", "--quiet", "--version", "-h", "-q"]
    flags = {name: sorted(o for a in sub._actions for o in a.option_strings)
             for name, sub in _commands_of(parser).items()}
    assert flags == {
        "demo": ["--debug", "--help", "--quiet", "--seed", "-h", "-q"],
        "example": ["--debug", "--help", "--out", "--seed", "--seeds", "--tasks", "-h"],
        "formats": ["--debug", "--help", "-h"],
        "summary": ["--arm-column", "--by", "--debug", "--engine", "--field", "--format", "--help", "--lenient",
                   "--outcomes", "--quiet", "--scheduler", "--where", "-h", "-q"],
        "score": ["--debug", "--engine", "--field", "--format", "--help", "--lenient", "--out", "--outcomes",
                 "--quiet", "--raw-csv", "--scheduler", "--spec", "--where", "-h", "-o", "-q"],
        "diagnose": ["--by", "--debug", "--engine", "--field", "--format", "--help", "--lenient", "--outcomes",
                    "--quiet", "--scheduler", "--spec", "--where", "-h", "-q"],
        "compare": ["--all-pairs", "--alpha", "--arm-column", "--baseline", "--by", "--candidates", "--cluster",
                   "--debug", "--engine", "--fail-on", "--field", "--format", "--guardrail", "--help", "--json",
                   "--lenient", "--metric", "--min-effect", "--n-resamples", "--names", "--outcomes", "--paired",
                   "--primary", "--quiet", "--report", "--scheduler", "--seed", "--spec", "--where", "-h", "-q"],
        "power": ["--alpha", "--alternative", "--arm-column", "--baseline", "--baseline-arm", "--column",
                  "--correlation", "--debug", "--discordant", "--effect", "--field", "--help", "--icc", "--mde",
                  "--method", "--metric", "--n", "--paired", "--power", "--quantile", "--seed", "--seeds",
                  "--where", "-h"],
        "plan": ["--alpha", "--alternative", "--arm-column", "--baseline-arm", "--cluster", "--cost-ratio",
                "--debug", "--design", "--effect", "--engine", "--field", "--format", "--help", "--heterogeneity",
                "--kind", "--lenient", "--max-tasks", "--metric", "--n-boot", "--outcomes", "--power", "--quantile",
                "--quiet", "--scheduler", "--seed", "--seeds", "--simulate", "--spec", "--where", "-h", "-q"],
        "run": ["--allow", "--arm", "--command", "--debug", "--help", "--keep", "--network", "--out", "--quiet",
                "--seeds", "--step-cap", "--tasks", "--time-limit", "--tools", "--workers", "-h", "-q"],
    }


def test_the_kinds_flags_take_are_the_vocabulary():
    from agentab._vocabulary import KINDS

    commands = _commands_of(build_parser())
    for name, dest in (("power", "metric"), ("plan", "kind")):
        action = next(a for a in commands[name]._actions if a.dest == dest)
        assert sorted(action.choices) == sorted(KINDS), name

def test_demo_prints_the_per_arm_summary(capsys):
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    for text in ("baseline", "candidate", "success rate", "steps p95", "tokens p50", "tokens p95", "step error rate"):
        assert text in out
    assert "600 runs" in out


def test_example_then_summary(tmp_path, capsys):
    code, out, _ = run(capsys, "example", "--out", str(tmp_path), "--tasks", "6", "--seeds", "2")
    assert code == 0
    assert (tmp_path / "baseline.jsonl").exists() and (tmp_path / "candidate.jsonl").exists()
    code, out, _ = run(capsys, "summary", str(tmp_path))
    assert code == 0
    assert "baseline" in out and "candidate" in out and "rejected" not in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record("a"), make_record("b", seed="x")])
    code, _out, err = run(capsys, "summary", str(path))
    assert code == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("agentab: error: ") and "runs.jsonl, line 2, field seed: expected int, got str" in err
    code, _, err = run(capsys, "summary", str(tmp_path / "missing.jsonl"))
    assert code == EXIT_BAD_INPUT and "missing.jsonl: no such file or directory" in err
    good = write_jsonl(tmp_path / "good.jsonl", [make_record("a")])
    code, _, err = run(capsys, "summary", str(good), "--by", "colour")
    assert code == EXIT_BAD_INPUT and "cannot group by 'colour'" in err


def test_terminal_escapes_are_stripped_from_the_output(tmp_path, capsys):
    missing = tmp_path / "runs\x1b[2J\x1b]0;title\x07\x9b31m.jsonl"
    code, out, err = run(capsys, "summary", str(missing))
    assert code == EXIT_BAD_INPUT and out == ""
    assert err == f"agentab: error: {tmp_path / 'runs31m.jsonl'}: no such file or directory\n"
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record("a"), make_record("b", task_id={"\x1b[31m": 1})])
    code, out, err = run(capsys, "summary", str(path), "--lenient")
    assert code == 0 and "1 of 2 records rejected" in out, err
    assert not any(c in out + err for c in "\x1b\x07\x9b")


def test_lenient_summary_lists_rejections(tmp_path, capsys):
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record("a"), make_record("b", seed="x")])
    code, out, _ = run(capsys, "summary", str(path), "--lenient")
    assert code == 0
    assert "1 of 2 records rejected" in out and "line 2, field seed" in out


def test_debug_shows_the_traceback(tmp_path):
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record(seed="x")])
    with pytest.raises(Exception, match="field seed"):
        main(["--debug", "summary", str(path)])


def test_python_dash_m_and_version():
    done = subprocess.run([sys.executable, "-m", "agentab", "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("agentab ")


def test_lenient_summary_when_everything_is_rejected(tmp_path, capsys):
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record("a", seed="x")])
    code, out, err = run(capsys, "summary", str(path), "--lenient")
    assert code == 0, err
    assert "(no runs)" in out and "1 of 1 records rejected" in out


def test_score_and_diagnose_commands(tmp_path, capsys):
    runs = tmp_path / "runs"
    run(capsys, "example", "--out", str(runs), "--tasks", "8", "--seeds", "2")
    spec = tmp_path / "spec.json"
    spec.write_text('{"required": ["edit_file", "run_tests"], "step_budget": 15, "max_repeats": 3, '
                    '"reference": [{"tool": "read_file"}, {"tool": "edit_file"}]}')
    code, out, err = run(capsys, "score", str(runs), "--spec", str(spec))
    assert code == 0, err
    assert "rubric 3 (clean)" in out and "runs with a loop" in out
    for suffix in ("csv", "parquet"):
        target = tmp_path / f"scores.{suffix}"
        code, out, _ = run(capsys, "score", str(runs), "--spec", str(spec), "-o", str(target))
        assert code == 0 and target.exists() and "32 runs scored" in out
    code, out, err = run(capsys, "diagnose", str(runs), "--spec", str(spec))
    assert code == 0, err
    assert out.startswith("- ") or out.strip() == "no findings"


def test_bad_spec_files_exit_2(tmp_path, capsys):
    traces = write_jsonl(tmp_path / "runs.jsonl", [make_record("a")])
    for text, message in [('{"match": "fuzzy", "reference": ["a"]}', "key \"match\" is 'fuzzy'"),
                          ('{"budget": 3}', "unknown spec key 'budget'; keys: required, reference"),
                          ("[1]", "expected a JSON object, got list"),
                          ("{oops", "line 1: malformed JSON")]:
        spec = tmp_path / "spec.json"
        spec.write_text(text)
        code, _, err = run(capsys, "score", str(traces), "--spec", str(spec))
        assert code == EXIT_BAD_INPUT and message in err and err.count("\n") == 1, err
    code, _, err = run(capsys, "score", str(traces), "-o", str(tmp_path / "x.txt"))
    assert code == EXIT_BAD_INPUT and "must end in .csv or .parquet" in err


# --------------------------------------------------------------------------- power and plan


def test_power_sample_size_power_curve_and_mde(capsys):
    code, out, err = run(capsys, "power", "--metric", "binary", "--baseline", "0.5", "--effect", "0.1")
    assert code == 0, err
    assert "388 runs per arm" in out  # statsmodels NormalIndPower: 387.2 per group, rounded up
    code, out, _ = run(capsys, "power", "--metric", "binary", "--baseline", "50%", "--effect", "10%", "--n", "100", "400")
    assert code == 0
    assert "runs_per_arm" in out and "0.296285" in out and "0.812641" in out
    code, out, _ = run(capsys, "power", "--metric", "continuous", "--mde", "--n", "64")
    assert code == 0 and "d = +0.499" in out  # 64 per arm detect d = 0.5 with power 0.801
    code, out, _ = run(capsys, "power", "--metric", "ordinal", "--baseline", "0.2,0.3,0.3,0.2", "--effect", "1.5",
                       "--seeds", "3", "--icc", "0.2")
    assert code == 0 and "design effect 1.40" in out


def test_power_alternative_takes_scipy_words_too(tmp_path, capsys):
    base = ["power", "--metric", "binary", "--baseline", "0.5", "--effect", "0.1"]
    for ours, scipys in (("larger", "greater"), ("smaller", "less")):
        effect = [] if ours == "larger" else ["--effect", "-0.1"]
        code, out, err = run(capsys, *base, *effect, "--alternative", ours)
        assert code == 0, err
        code, same, err = run(capsys, *base, *effect, "--alternative", scipys)
        assert code == 0 and same == out, err
    code, _, err = run(capsys, "example", "--out", str(tmp_path), "--tasks", "6", "--seeds", "2")
    code, out, err = run(capsys, "plan", str(tmp_path / "baseline.jsonl"), "--metric", "outcome", "--effect", "0.2",
                         "--alternative", "greater")
    assert code == 0 and "Recommended:" in out, err


def test_power_cost_from_a_sample_file(tmp_path, capsys):
    import numpy as np

    sample = tmp_path / "tokens.txt"
    sample.write_text("\n".join(str(v) for v in np.random.default_rng(0).lognormal(8, 1, 200)))
    code, out, err = run(capsys, "power", "--metric", "cost", "--baseline", str(sample), "--effect=-20%")
    assert code == 0, err
    assert "p95 needs" in out and "runs per arm" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["power", "--metric", "binary", "--baseline", "1.5", "--effect", "0.1"], "baseline"),
        (["power", "--metric", "binary", "--baseline", "0.5"], "--effect"),
        (["power", "--metric", "binary", "--baseline", "0.5", "--effect", "0"], "zero"),
        (["power", "--metric", "binary", "--baseline", "0.5", "--effect", "0.1", "--power", "1.2"], "power"),
        (["power", "--metric", "cost", "--baseline", "missing.txt", "--effect", "-0.2"], "missing.txt"),
        (["power", "--metric", "continuous", "--mde"], "--n"),
    ],
)
def test_power_bad_input_is_one_line(capsys, argv, needle):
    code, _out, err = run(capsys, *argv)
    assert code == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and err.startswith("agentab: error:") and needle in err


def test_plan_from_traces_and_from_a_scores_table(tmp_path, capsys):
    code, _, _ = run(capsys, "example", "--out", str(tmp_path), "--tasks", "12", "--seeds", "3")
    assert code == 0
    code, out, err = run(capsys, "plan", str(tmp_path / "baseline.jsonl"), "--metric", "rubric", "--effect", "1.5")
    assert code == 0, err
    assert "Plan for rubric (ordinal), paired design" in out and "Recommended:" in out and "ICC" in out
    code, _, err = run(capsys, "score", str(tmp_path), "-o", str(tmp_path / "scores.csv"))
    assert code == 0, err
    code, out, err = run(capsys, "plan", str(tmp_path / "scores.csv"), "--metric", "outcome", "--effect", "10%",
                         "--seeds", "3", "--design", "independent", "--simulate", "20", "--seed", "1")
    assert code == 0, err
    assert "independent design" in out and "simulated power" in out
    assert "seeds_per_task" in out and out.count("\n   ") <= 3  # one row: the seeds are fixed


def test_plan_bad_input(tmp_path, capsys):
    run(capsys, "example", "--out", str(tmp_path), "--tasks", "4", "--seeds", "2")
    code, _, err = run(capsys, "plan", str(tmp_path), "--metric", "nope", "--effect", "0.1")
    assert code == EXIT_BAD_INPUT and "--metric nope: no column 'nope'" in err and "(columns: run_id, task_id" in err
    code, _, err = run(capsys, "plan", str(tmp_path), "--metric", "outcome", "--effect", "0.1")
    assert code == EXIT_BAD_INPUT and "at least 5" in err  # 4 tasks cannot give an ICC
    code, _, err = run(capsys, "plan", str(tmp_path / "nothing.csv"), "--metric", "outcome", "--effect", "0.1")
    assert code == EXIT_BAD_INPUT and "nothing.csv" in err


def test_demo_ends_with_the_plan(capsys):
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    tail = out[out.index("Planning the next experiment"):]
    assert "Plan for outcome (binary), paired design: detect +5.0 points" in tail
    assert "Recommended:" in tail and "task-to-task variation of the effect measured" in tail


# --------------------------------------------------------------------------- compare

FAST = ("--n-resamples", "499")


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory):
    """The example experiment, small: runs/baseline.jsonl and runs/candidate.jsonl (12 tasks x 2 seeds)."""
    out = tmp_path_factory.mktemp("example") / "runs"
    assert main(["example", "--out", str(out), "--tasks", "12", "--seeds", "2"]) == 0
    return out


def _arm_records(prefix: str, successes: int, n_tasks: int = 20, arm: str | None = None) -> list[dict]:
    """Two seeds of n_tasks tasks; the first `successes` tasks succeed. No `arm` field unless given."""
    records = []
    for task in range(n_tasks):
        for seed in range(2):
            record = make_record(f"{prefix}-{task}-{seed}", task_id=f"t{task:02d}", seed=seed, outcome=task < successes)
            del record["arm"]
            if arm is not None:
                record["arm"] = arm
            records.append(record)
    return records


@pytest.fixture(scope="module")
def verdict_runs(tmp_path_factory):
    """Three arms with known verdicts against `low` (4 of 20 tasks succeed): `high` (16 of 20) ships, `low` vs
    `high` is don't ship, `same` (4 of 20 again) is inconclusive."""
    folder = tmp_path_factory.mktemp("verdicts")
    for name, successes in (("low", 4), ("high", 16), ("same", 4)):
        write_jsonl(folder / f"{name}.jsonl", _arm_records(name, successes))
    return folder


def test_compare_two_files_prints_the_decision(example_runs, capsys):
    code, out, err = run(capsys, "compare", str(example_runs / "baseline.jsonl"), str(example_runs / "candidate.jsonl"), *FAST)
    assert code == 0, err
    assert out.startswith("agentab comparison: candidate (sonnet-4 + react-v2) vs baseline (sonnet-4 + react-v1)")
    assert "VERDICT: inconclusive" in out and "499 resamples; seed 0" in out
    rows = [line.split()[0] for line in out.splitlines() if line.endswith("no evidence")]
    assert {"outcome", "rubric", "loop", "non_terminated"} <= set(rows) and "cap_hit" not in rows  # no max_repeats: n/a
    assert "arg_accuracy" not in out  # no reference in the (empty) spec: no values, left out of the default set
    assert err.startswith("agentab: note: not compared, no values in an arm") and "arg_accuracy" in err
    assert "cap_hit" in err and len(err.splitlines()) == 1


def test_compare_one_folder_takes_the_records_arms(example_runs, capsys):
    code, out, err = run(capsys, "compare", str(example_runs), *FAST)
    assert code == 0, err
    assert "candidate (sonnet-4 + react-v2) vs baseline" in out
    code, out, err = run(capsys, "compare", str(example_runs), "--names", "candidate", "baseline", *FAST)
    assert code == 0, err
    assert out.startswith("agentab comparison: baseline (sonnet-4 + react-v1) vs candidate")


@pytest.mark.parametrize(
    ("pair", "fail_on", "verdict", "expected"),
    [
        (("low", "high"), None, "ship", 0),
        (("low", "high"), "inconclusive", "ship", 0),
        (("high", "low"), None, "don't ship", 0),
        (("high", "low"), "dont-ship", "don't ship", 3),
        (("high", "low"), "inconclusive", "don't ship", 3),
        (("low", "same"), "dont-ship", "inconclusive", 0),
        (("low", "same"), "inconclusive", "inconclusive", 4),
    ],
)
def test_compare_exit_codes(verdict_runs, capsys, pair, fail_on, verdict, expected):
    argv = ["compare", *(str(verdict_runs / f"{name}.jsonl") for name in pair), *FAST]
    code, out, err = run(capsys, *argv, *(["--fail-on", fail_on] if fail_on else []))
    assert code == expected, err
    assert f"VERDICT: {verdict}\n" in out
    assert out.startswith(f"agentab comparison: {pair[1]} (sonnet-4 + react-v1) vs {pair[0]} (")


def test_exit_code_constants():
    from agentab import cli

    assert (cli.EXIT_OK, cli.EXIT_INTERNAL, cli.EXIT_BAD_INPUT, cli.EXIT_DONT_SHIP, cli.EXIT_INCONCLUSIVE) == (0, 1, 2, 3, 4)


def test_compare_json_schema_and_stability(example_runs, capsys):
    argv = ["compare", str(example_runs), "--json", *FAST, "--guardrail", "tokens:p95<=+10%"]
    code, first, err = run(capsys, *argv)
    assert code == 0, err

    def no_nan(text):
        raise AssertionError(f"{text} in the JSON")

    data = json.loads(first, parse_constant=no_nan)
    assert {"schema", "verdict", "reasons", "explanations", "baseline", "candidate", "arms", "design", "settings",
            "metrics", "guardrails", "notes"} <= set(data)
    assert data["schema"] == "agentab.comparison/1"
    assert data["verdict"] in ("ship", "don't ship", "inconclusive")
    assert (data["baseline"], data["candidate"]) == ("baseline", "candidate")
    assert all(isinstance(r, str) for r in data["reasons"] + data["explanations"] + data["notes"])
    assert data["settings"]["seed"] == 0 and data["settings"]["n_resamples"] == 499
    assert data["metrics"][0]["metric"] == "outcome" and data["metrics"][0]["role"] == "primary"
    for row in data["metrics"]:
        assert isinstance(row["metric"], str)
        assert row["p_value"] is None or isinstance(row["p_value"], float)
    assert [g["rule"] for g in data["guardrails"]] == ["tokens p95 <= +10%"]
    assert data["guardrails"][0]["status"] in ("holds", "breached", "unresolved")
    code, second, _ = run(capsys, *argv)
    assert code == 0 and second == first  # same seed, same bytes
    code, third, _ = run(capsys, *argv[:-1], "tokens: p95 <= +10%", "--seed", "7")
    assert code == 0 and json.loads(third)["settings"]["seed"] == 7


def test_compare_options_reach_compare(example_runs, capsys):
    argv = ["compare", str(example_runs), "--json", *FAST]
    code, out, err = run(capsys, *argv, "--metric", "outcome", "--metric", "tokens=cost", "--metric",
                         "latency_s=continuous:lower", "--alpha", "0.1", "--paired", "no", "--min-effect", "10%")
    assert code == 0, err
    data = json.loads(out)
    assert [r["metric"] for r in data["metrics"]] == [
        "outcome", "outcome pass^2", "tokens p50", "tokens p95", "tokens mean", "latency_s"]
    latency = next(r for r in data["metrics"] if r["metric"] == "latency_s")
    assert latency["kind"] == "continuous" and latency["direction"] == "lower"
    assert data["settings"]["alpha"] == 0.1 and data["settings"]["paired"] is False
    assert "minimum effect of interest" in data["reasons"][-1]
    code, out, err = run(capsys, *argv, "--primary", "tokens p50", "--metric", "tokens", "--cluster", "none")
    assert code == 0, err
    data = json.loads(out)
    assert data["primary"] == "tokens p50" and data["settings"]["cluster"] is None


def test_compare_same_file_names_use_their_folders(tmp_path, capsys):
    for folder, successes in (("v1", 4), ("v2", 16)):
        (tmp_path / folder).mkdir()
        write_jsonl(tmp_path / folder / "traces.jsonl", _arm_records(folder, successes))
    code, out, err = run(capsys, "compare", str(tmp_path / "v1" / "traces.jsonl"), str(tmp_path / "v2" / "traces.jsonl"), *FAST)
    assert code == 0, err
    assert out.startswith("agentab comparison: v2 (sonnet-4 + react-v1) vs v1 (")
    assert "named after their folders, 'v1' and 'v2'" in err
    code, out, err = run(capsys, "compare", str(tmp_path / "v1" / "traces.jsonl"), str(tmp_path / "v2" / "traces.jsonl"),
                         *FAST, "--names", "old", "new", "--quiet")
    assert code == 0 and out.startswith("agentab comparison: new (sonnet-4 + react-v1) vs old (") and err == ""


def test_compare_arm_column_and_metadata_key(tmp_path, capsys):
    records = []
    for arm, successes in (("a", 4), ("b", 16), ("c", 10)):
        for record in _arm_records(arm, successes):
            record["metadata"] = {**record["metadata"], "variant": f"v-{arm}"}
            records.append(record)
    path = write_jsonl(tmp_path / "all.jsonl", records)
    code, _, err = run(capsys, "compare", str(path), "--arm-column", "variant", *FAST)
    assert code == EXIT_BAD_INPUT and "has 3 arms (v-a, v-b, v-c); pick two with --names" in err
    code, out, err = run(capsys, "compare", str(path), "--arm-column", "variant", "--names", "v-a", "v-b", *FAST)
    assert code == 0, err
    assert out.startswith("agentab comparison: v-b (sonnet-4 + react-v1) vs v-a") and "VERDICT: ship" in out
    code, _, err = run(capsys, "compare", str(path), "--arm-column", "colour", *FAST)
    assert code == EXIT_BAD_INPUT and "'colour' is neither a runs column nor a metadata key" in err
    code, _, err = run(capsys, "compare", str(path), *FAST)  # one source: the records' arm field, absent here
    assert code == EXIT_BAD_INPUT and "no run has a value in column 'arm'" in err and "--arm-column" in err


def test_compare_scores_tables(example_runs, tmp_path, capsys):
    both = tmp_path / "scores.csv"
    assert run(capsys, "score", str(example_runs), "-o", str(both))[0] == 0
    code, out, err = run(capsys, "compare", str(both), *FAST)
    assert code == 0, err
    assert "candidate (sonnet-4 + react-v2) vs baseline" in out and "rubric" in out
    code, out, err = run(capsys, "compare", str(both), "--arm-column", "harness", *FAST)
    # Two arms, neither named baseline: never chosen by row order.
    assert code == EXIT_BAD_INPUT and "has two arms, react-v1 and react-v2, and neither is named baseline" in err
    assert "--names BASELINE CANDIDATE" in err and "never chosen by row order" in err
    code, out, err = run(capsys, "compare", str(both), "--arm-column", "harness", "--names", "react-v1", "react-v2",
                         *FAST)
    assert code == 0 and out.startswith("agentab comparison: react-v2")
    base, cand = tmp_path / "base.parquet", tmp_path / "cand.csv"
    run(capsys, "score", str(example_runs / "baseline.jsonl"), "-o", str(base))
    run(capsys, "score", str(example_runs / "candidate.jsonl"), "-o", str(cand))
    code, _, err = run(capsys, "compare", str(base), str(cand), *FAST)
    assert code == EXIT_BAD_INPUT and "arm column says 'baseline', but this arm is named 'base'" in err
    code, out, err = run(capsys, "compare", str(base), str(cand), "--names", "baseline", "candidate", *FAST)
    assert code == 0, err
    code, _, err = run(capsys, "compare", str(base), str(example_runs), *FAST)
    assert code == EXIT_BAD_INPUT and "not both" in err


def _bad_inputs(root, example_runs):
    base, cand = str(example_runs / "baseline.jsonl"), str(example_runs / "candidate.jsonl")
    broken = write_jsonl(root / "broken.jsonl", [*_arm_records("b", 1, n_tasks=1)[:1], '{"run_id": "b", "task_id"'])
    (root / "old").mkdir(exist_ok=True)
    renamed = root / "old" / "v1.jsonl"
    renamed.write_bytes((example_runs / "baseline.jsonl").read_bytes())
    return [
        (["compare", str(root / "missing.jsonl"), cand], "missing.jsonl: no such file or directory"),
        (["compare", str(broken), cand], "broken.jsonl, line 2"),
        (["compare", base, cand, "--metric", "nope"], "--metric 'nope': no such column in the scores (metrics: "),
        (["compare", base, cand, "--metric", "tokens=weird"], "unknown kind 'weird' (kinds: binary, ordinal"),
        (["compare", base, cand, "--metric", "tokens=cost:up"], "the direction must be higher or lower"),
        (["compare", base, cand, "--guardrail", "tokens p95 <= 10%"], "expected 'METRIC: STAT OP MARGIN'"),
        (["compare", base, cand, "--guardrail", "tokens: p95 < 10%"], "is not '<statistic> <op> <margin>'"),
        (["compare", base, cand, "--guardrail", "loop: p95 <= +10%"], "need a cost or count metric"),
        (["compare", base, cand, "--primary", "tokens"], "name a quantile, e.g. 'tokens p50'"),
        (["compare", base, cand, "--metric", "tokens=binary"], "'tokens' is compared as binary but has"),
        (["compare", base, base], "BASELINE and CANDIDATE are the same file"),
        (["compare", base, str(example_runs / "baseline.json")], "baseline.json: no such file or directory"),
        (["compare", base, cand, "--names", "x", "x"], "must differ"),
        (["compare", str(renamed), str(write_jsonl(root / "b.jsonl", _arm_records("b", 3, arm="baseline")))],
         "the records of both name the arm 'baseline'"),
        (["compare", base, cand, str(broken)], "give two sources, BASELINE CANDIDATE (got 3)"),
        (["compare", base, cand, "--report", str(root / "r.pdf")], "must end in .html or .md"),
        (["compare", base, cand, "--alpha", "1.5"], "--alpha must be in (0, 1), got 1.5"),
        (["compare", base, cand, "--n-resamples", "10"], "--n-resamples must be an integer >= 99"),
        (["compare", base, cand, "--spec", str(root / "nospec.json")], "nospec.json: no such file or directory"),
        (["compare", base, cand, "--min-effect", "big"], "--min-effect must be a number"),
        (["compare", base, cand, "--paired", "yes", "--cluster", "none"], "--paired yes needs a task column"),
        (["compare", base, cand, "--cluster", "suite"], "no cluster column 'suite'"),
        (["compare", str(example_runs), "--names", "baseline", "nope"], "--names: no arm 'nope' in column 'arm'"),
    ]


def test_compare_bad_input_is_one_line_and_exit_2(example_runs, tmp_path, capsys):
    for argv, needle in _bad_inputs(tmp_path, example_runs):
        code, out, err = run(capsys, argv[0], *FAST, *argv[1:])
        assert code == EXIT_BAD_INPUT, (argv, err)
        assert err.startswith("agentab: error: ") and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
        assert needle in err, (argv, err)
        assert out == "", argv


def test_compare_names_arms_after_the_records_when_they_carry_one_arm_each(example_runs, tmp_path, capsys):
    # The issue's "two folders of traces": folders named otherwise than the records' own arm field.
    for name, arm in (("old", "baseline"), ("new", "candidate")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "runs.jsonl").write_bytes((example_runs / f"{arm}.jsonl").read_bytes())
    code, out, err = run(capsys, "compare", str(tmp_path / "old"), str(tmp_path / "new"), "--json", *FAST)
    assert code == 0, err
    result = json.loads(out)
    assert (result["baseline"], result["candidate"]) == ("baseline", "candidate")
    assert "the file order decides: baseline 'baseline'" in err and "named as their records name them" in err
    # --names wins, with a note that the records' arms were replaced; the order is the sources' order.
    code, out, err = run(capsys, "compare", str(tmp_path / "new"), str(tmp_path / "old"), "--names", "v2", "v1", "--json", *FAST)
    assert code == 0, err
    result = json.loads(out)
    assert (result["baseline"], result["candidate"]) == ("v2", "v1")
    assert [a["runs"] for a in result["arms"]] == [len((example_runs / "candidate.jsonl").read_text().splitlines())] * 2
    assert "replaced by --names" in err


def test_compare_arm_fields_that_cannot_name_the_arms_say_what_to_do(example_runs, tmp_path, capsys):
    mixed = write_jsonl(tmp_path / "mixed.jsonl", _arm_records("m", 5, arm="a") + _arm_records("n", 5, arm="b"))
    plain = write_jsonl(tmp_path / "plain.jsonl", _arm_records("p", 5))
    half = write_jsonl(tmp_path / "half.jsonl", _arm_records("h", 5, arm="c") + _arm_records("k", 5))
    cases = [
        ([mixed, plain], "mixed.jsonl: its records name 2 arms (a, b)"),
        ([write_jsonl(tmp_path / "c.jsonl", _arm_records("c", 5, arm="c")), plain],
         "plain.jsonl: its records have no arm field, while the other source's records do"),
        ([half, plain], "half.jsonl: 40 of its records have no arm field and the others say 'c'"),
    ]
    for sources, needle in cases:
        code, _, err = run(capsys, "compare", *map(str, sources), *FAST)
        assert code == EXIT_BAD_INPUT and needle in err, err
        assert "--names BASELINE CANDIDATE" in err and "--arm-column arm" in err
    # Without arm fields, the arms are named after the files.
    other = write_jsonl(tmp_path / "other.jsonl", _arm_records("o", 15))
    code, out, err = run(capsys, "compare", str(plain), str(other), "--json", *FAST)
    assert code == 0, err
    assert (json.loads(out)["baseline"], json.loads(out)["candidate"]) == ("plain", "other")


def test_compare_lenient_lists_rejections_on_stderr(example_runs, tmp_path, capsys):
    records = _arm_records("x", 10)
    records[3] = {**records[3], "seed": "three"}
    path = write_jsonl(tmp_path / "x.jsonl", records)
    argv = ["compare", str(example_runs / "baseline.jsonl"), str(path), "--names", "baseline", "x", "--json", "--lenient", *FAST]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    json.loads(out)  # stdout stays JSON
    assert "1 of 64 records rejected:" in err and "x.jsonl, line 4, field seed" in err
    code, out, err = run(capsys, *argv, "--quiet")
    assert code == 0 and err.strip() == "1 of 64 records rejected"


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_before_or_after_the_command_shows_the_traceback(example_runs, where):
    argv = ["compare", str(example_runs), "--metric", "tokens=weird", *FAST]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    with pytest.raises(ValueError, match="unknown kind 'weird'"):
        main(argv)


def test_every_command_takes_debug_after_it(tmp_path):
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record(seed="x")])
    for command in ("summary", "score", "diagnose"):
        with pytest.raises(Exception, match="field seed"):
            main([command, str(path), "--debug"])
    with pytest.raises(Exception, match="field seed"):
        main(["plan", str(path), "--metric", "outcome", "--effect", "0.1", "--debug"])
    with pytest.raises(Exception, match="--effect is required"):
        main(["power", "--metric", "binary", "--baseline", "0.5", "--debug"])


def test_internal_error_exits_1(example_runs, capsys, monkeypatch):
    import agentab
    from agentab import cli

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(agentab, "compare", broken)
    code, _out, err = run(capsys, "compare", str(example_runs), *FAST)
    assert code == cli.EXIT_INTERNAL
    assert err == "agentab: internal error: RuntimeError: boom (run with --debug for details)\n"


BAR = "%|"  # tqdm's "  0%|####| 0/1"


def test_progress_bars_only_on_a_terminal_and_never_when_quiet(example_runs, capsys, monkeypatch):
    argv = ["compare", str(example_runs), "--json", *FAST]
    code, out, err = run(capsys, *argv)  # capsys: stderr is not a terminal
    assert code == 0 and BAR not in err and "\r" not in err and err.startswith("agentab: note: not compared")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = run(capsys, *argv)
    assert code == 0 and json.loads(out)["verdict"] == "inconclusive"  # stdout untouched by the bars
    assert BAR in err and "scoring 48 runs" in err and "comparing" in err and "loading" in err
    code, out, err = run(capsys, *argv, "--quiet")
    assert code == 0 and err == ""
    for command in (["summary", str(example_runs)], ["score", str(example_runs)], ["diagnose", str(example_runs)]):
        code, _, err = run(capsys, *command)
        assert code == 0 and "loading" in err and "\r" in err, command
        code, _, err = run(capsys, *command, "-q")
        assert code == 0 and err == "", command


def test_progress_bars_silent_in_a_pipe(example_runs):
    done = subprocess.run(
        [sys.executable, "-m", "agentab", "compare", str(example_runs), *FAST, "--fail-on", "inconclusive"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 4
    assert BAR not in done.stderr and "\r" not in done.stderr and "VERDICT: inconclusive" in done.stdout


@pytest.mark.slow
def test_compare_report(example_runs, tmp_path, capsys):
    import agentab

    if not hasattr(agentab, "report"):
        pytest.skip("agentab.report is not there yet")
    target = tmp_path / "out" / "report.html"
    code, out, err = run(capsys, "compare", str(example_runs), *FAST, "--report", str(target), "--fail-on", "dont-ship")
    assert code == 0, err
    text = target.read_text()
    assert "<html" in text and "Verdict: inconclusive" in text
    assert "VERDICT: inconclusive" in out and f"report written to {target}" in err


def test_documented_guardrails_parse(example_runs, capsys):
    rules = ["tokens: p95 <= +10%", "cost_usd:p50<=+5%", "loop: rate <= +0.02", "rubric: delta >= -0.05"]
    argv = ["compare", str(example_runs), "--json", *FAST]
    for rule in rules:
        argv += ["--guardrail", rule]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    checks = json.loads(out)["guardrails"]
    assert [g["rule"] for g in checks] == ["tokens p95 <= +10%", "cost_usd p50 <= +5%", "loop rate <= +0.02",
                                           "rubric delta >= -0.05"]


def test_quiet_before_the_command_and_the_rejected_count(tmp_path, capsys):
    path = write_jsonl(tmp_path / "runs.jsonl", [make_record("a"), make_record("b", seed="x")])
    for argv in (["-q", "summary", str(path), "--lenient"], ["summary", str(path), "--lenient", "--quiet"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and err == ""
        assert out.rstrip().endswith("1 of 2 records rejected") and "line 2" not in out
    code, out, _ = run(capsys, "-q", "power", "--metric", "continuous", "--mde", "--n", "64")
    assert code == 0 and "d = +0.499" in out


def test_formats_lists_every_format_with_an_example(capsys):
    from agentab import formats

    code, out, _ = run(capsys, "formats")
    assert code == 0
    for fmt in formats.available().values():
        assert f"{fmt.name}: {fmt.summary}" in out and f"  example: {fmt.example}" in out


@pytest.mark.parametrize("command", ["summary", "score", "diagnose"])
def test_format_and_field_on_commands_that_read_traces(example_runs, capsys, command):
    code, out, err = run(capsys, command, str(example_runs), "--format", "record")
    assert code == 0, err
    code, _, err = run(capsys, command, str(example_runs), "--format", "nope")
    assert code == 2 and err.strip() == "agentab: error: --format 'nope': must be 'auto' or one of " + ", ".join(
        __import__("agentab").formats.available())
    code, _, err = run(capsys, command, str(example_runs), "--field", "task")
    assert code == 2 and "--field 'task': expected NAME=KEY" in err
    code, _, err = run(capsys, command, str(example_runs), "--field", "tusk=x")
    assert code == 2 and "--field has 'tusk', not a run-level field" in err


def test_compare_and_plan_take_format(example_runs, capsys):
    code, _, err = run(capsys, "compare", str(example_runs / "baseline.jsonl"), str(example_runs / "candidate.jsonl"),
                       "--format", "record", *FAST)
    assert code == 0, err
    code, _, err = run(capsys, "plan", str(example_runs / "baseline.jsonl"), "--metric", "outcome", "--effect", "0.1",
                       "--format", "nope")
    assert code == 2 and "--format 'nope'" in err
