"""The command line: every command runs, is documented, and fails cleanly on bad input."""

from __future__ import annotations

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
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - introspect argparse
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    top = capsys.readouterr().out
    for name, sub in commands.items():
        assert name in top, name
        assert f"agentab {name}" in top, f"no example for {name}"
        assert sub.description, name
        for action in sub._actions:  # noqa: SLF001
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


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
    code, out, err = run(capsys, "summary", str(path))
    assert code == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("agentab: error: ") and "runs.jsonl, line 2, field seed: expected int, got str" in err
    code, _, err = run(capsys, "summary", str(tmp_path / "missing.jsonl"))
    assert code == EXIT_BAD_INPUT and "missing.jsonl: no such file or directory" in err
    good = write_jsonl(tmp_path / "good.jsonl", [make_record("a")])
    code, _, err = run(capsys, "summary", str(good), "--by", "colour")
    assert code == EXIT_BAD_INPUT and "cannot group by 'colour'" in err


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
    for text, message in [('{"match": "fuzzy", "reference": ["a"]}', "`match` == 'fuzzy'"),
                          ('{"budget": 3}', "unexpected keyword argument 'budget'"),
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
    code, out, err = run(capsys, *argv)
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
    assert code == EXIT_BAD_INPUT and "no metric column 'nope'" in err
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
