"""agentab.score: vectorised scoring must agree with score_run, run by run."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentab
from agentab import Call, TrajectorySpec, score_run
from agentab.scoring.score import METRICS, SpecWarning, metric_kinds, rubric_levels, score
from agentab.scoring.trajectory import MATCH_MODES, rubric_level


# --------------------------------------------------------------------------- #
# The oracle: score_run on every record
# --------------------------------------------------------------------------- #
def oracle(traces: agentab.Traces, spec_of: Any) -> list[agentab.Verdict]:
    """score_run (the per-run reference implementation) on each run's record."""
    return [score_run(record, spec=spec_of(record["task_id"])) for record in traces.to_records()]


def assert_agrees(table: pd.DataFrame, verdicts: list[agentab.Verdict]) -> None:
    """Every metric and the reasons of every run equal score_run's (None <-> missing)."""
    assert len(table) == len(verdicts)
    for i, verdict in enumerate(verdicts):
        row = table.iloc[i]
        assert row["reasons"] == "; ".join(verdict.reasons), (i, verdict.reasons, row["reasons"])
        for name, expected in verdict.metrics.items():
            got = row[name]
            if expected is None:
                assert pd.isna(got), (i, name, expected, got)
            else:
                assert not pd.isna(got) and got == expected, (i, name, expected, got)


def step(tool: str, args: dict | None = None, status: str | None = "ok") -> dict:
    return {"tool": tool, "args": args or {}, "status": status}


def record(run_id: str, steps: list[dict], *, task: str = "t1", outcome: Any = True, **fields: Any) -> dict:
    rec = {"run_id": run_id, "task_id": task, "seed": 0, "outcome": outcome,
           "steps": [{"index": i, "tool": s["tool"], "args": s["args"],
                      **({"observation": {"status": s["status"]}} if s["status"] else {})}
                     for i, s in enumerate(steps)]}
    rec.update(fields)
    return rec


def scored(records: list[dict], spec: Any = None, **kwargs: Any) -> tuple[pd.DataFrame, list[agentab.Verdict]]:
    traces = agentab.load_traces(records)
    table = score(traces, spec, **kwargs)
    if isinstance(spec, dict):
        verdicts = oracle(traces, lambda task: spec.get(task, kwargs.get("default")))
    else:
        verdicts = oracle(traces, lambda task: spec if spec is not None else TrajectorySpec())
    assert_agrees(table, verdicts)
    return table, verdicts


# --------------------------------------------------------------------------- #
# The seed example and hand-built traces, one metric at a time
# --------------------------------------------------------------------------- #
LUCKY = [step("search_docs", {"q": "failing test"}, None), step("search_docs", {"q": "failing test"}, None),
         step("read_file", {"path": "src/mian.py"}, None), step("read_file", {"path": "src/mian.py"}, None),
         step("run_tests", {}, None), step("list_dir", {"path": "src"}, None),
         step("edit_file", {"path": "src/main.py"}, None), step("run_tests", {}, None)]


def test_seed_example_gives_the_three_reasons():
    table, _ = scored([record("lucky", LUCKY)], TrajectorySpec(required=("list_dir", "edit_file"), step_budget=5))
    assert table.loc[0, "reasons"].split("; ") == [
        "repeated identical call: search_docs({'q': 'failing test'})",
        "repeated identical call: read_file({'path': 'src/mian.py'})",
        "took 8 steps against a budget of 5",
    ]
    assert table.loc[0, "rubric"] == 2 and not table.loc[0, "passed"]
    # no status anywhere, no step cap, no time limit: whether it terminated cannot be told
    assert pd.isna(table.loc[0, "non_terminated"])


def test_required_tools_with_repeats_in_the_spec():
    spec = TrajectorySpec(required=("edit_file", "run_tests", "edit_file", "lint"))
    with pytest.warns(SpecWarning, match="'lint' \\(required\\)"):
        table, _ = scored([record("r1", [step("run_tests")]), record("r2", [step("edit_file"), step("run_tests")])],
                      spec)
    assert table["required_missing"].tolist() == [3, 1]
    assert table["tool_recall_required"].tolist() == [0.25, 0.75]
    assert table.loc[0, "reasons"] == "never called: edit_file, edit_file, lint"


def test_back_to_back_repeats_streak_and_loop_cap():
    calls = [step("ls")] * 4 + [step("cat", {"p": "a"}), step("ls"), step("ls")]
    table, _ = scored([record("r1", calls)], TrajectorySpec(max_repeats=2))
    row = table.iloc[0]
    assert (row["repeats"], row["longest_streak"], row["cap_hit"], row["loop"]) == (4, 4, True, True)
    assert row["reasons"].split("; ")[:4] == ["repeated identical call: ls({})"] * 2 + [
        "loop cap hit: ls({}) repeated 2 times back to back", "repeated identical call: ls({})"]


@pytest.mark.parametrize("keys, cycles", [
    ("ABAB", 1), ("ABABAB", 1), ("ABABABAB", 2), ("AABAAB", 1), ("ABCABC", 1), ("ABCDABCD", 1),
    ("ABCDEABCDE", 0), ("ABABCDCD", 2), ("AAAA", 0), ("ABA", 0), ("CABABABXYXY", 2), ("ABBABB", 1),
])
def test_cycles_follow_the_left_to_right_scan(keys, cycles):
    table, _ = scored([record("r1", [step(k) for k in keys])])
    assert table.loc[0, "cycles"] == cycles


def test_cycle_reason_shows_the_block():
    table, _ = scored([record("r1", [step("a", {"x": 1}), step("b"), step("a", {"x": 1}), step("b")])])
    assert table.loc[0, "reasons"].startswith("repeated cycle: a({'x': 1}) -> b({})")


def test_budget_cap_and_unanswered_last_call():
    runs = [record("r1", [step("a"), step("b"), step("c")]),
            record("r2", [step("a"), step("b", status=None)]),       # last call never answered
            record("r3", [step("a", status=None)] * 2)]                 # no status at all: not unanswered
    table, _ = scored(runs, TrajectorySpec(step_budget=2, step_cap=3))
    assert table["over_budget"].tolist() == [True, False, False]
    assert table["non_terminated"].tolist() == [True, True, False]
    assert "did not terminate: reached the step cap of 3" in table.loc[0, "reasons"]
    no_budget, _ = scored(runs, TrajectorySpec())
    assert no_budget["over_budget"].isna().all()


def test_errors_and_uncorrected_errors():
    runs = [record("r1", [step("a", status="error"), step("a")]),           # corrected
            record("r2", [step("a"), step("a", status="error")]),           # a failed repeat of a success
            record("r3", [step("a", status="error"), step("b")], outcome=True),
            record("r4", [step("a", status="error")] * 2, outcome=False),
            record("r5", [step("a"), step("a", {"x": 1}, status="error")])]  # a new call that failed
    table, _ = scored(runs)
    assert table["n_errors"].tolist() == [1, 1, 1, 2, 1]
    assert table["error_cascade"].tolist() == [False, False, True, True, True]
    assert table["accidental_recovery"].tolist() == [True, True, True, False, True]
    assert table["rubric"].tolist() == [2, 2, 2, 0, 2]
    assert table["steps_at_failure"].tolist()[:3] == [pd.NA] * 3 and table.loc[3, "steps_at_failure"] == 2


@pytest.mark.filterwarnings("ignore:1 of 2 runs. the spec has an expected_state")
def test_side_effects_against_forbidden_and_expected_state():
    state = {"files_created": ["a.txt", "a.txt"], "files_modified": ["src/x.py", "secrets.env"],
             "files_deleted": [], "external_calls": [{"url": "https://x"}, "https://y", "https://y"]}
    spec = TrajectorySpec(forbidden=("rm", "*.env"), expected_state={"files_modified": ["src/x.py", "src/y.py"]})
    runs = [record("r1", [step("rm", {"path": "a"}), step("ls")], terminal_state=state),
            record("r2", [step("ls")])]                                     # no terminal state recorded
    table, _ = scored(runs, spec)
    row = table.iloc[0]
    assert (row["forbidden_calls"], row["forbidden_side_effects"], row["unexpected_side_effects"],
            row["missing_changes"], row["duplicate_changes"]) == (1, 1, 1, 1, 1)
    assert table.loc[1, ["forbidden_side_effects", "unexpected_side_effects", "missing_changes",
                         "duplicate_changes"]].isna().all()
    assert row["reasons"].split("; ")[0] == "forbidden call: rm({'path': 'a'})"


def test_premature_claims():
    meta = [{"claimed_success": True}, {"claimed_success": True}, {"claimed_success": False}, {}]
    empty = {"files_created": [], "files_modified": []}
    changed = {"files_modified": ["a.py"]}
    runs = [record("r1", [step("a")], outcome=False, metadata=meta[0], terminal_state=changed),
            record("r2", [step("a")], outcome=True, metadata=meta[1], terminal_state=empty),
            record("r3", [step("a")], outcome=False, metadata=meta[2]),
            record("r4", [step("a")], outcome=False, metadata=meta[3])]
    table, _ = scored(runs)
    # r2 changed nothing, but the external check says it is right: not premature
    assert table["premature"].tolist()[:3] == [True, False, False] and pd.isna(table.loc[3, "premature"])
    assert table["claimed_success"].tolist()[:3] == [True, True, False]


def test_numeric_outcomes_use_success_at():
    runs = [record(f"r{i}", [step("a")], outcome=x) for i, x in enumerate([0.0, 2.0, 2.5, 3.0])]
    table, _ = scored(runs, TrajectorySpec(success_at=2.5))
    assert table["right_result"].tolist() == [False, False, True, True]
    assert table["outcome"].dtype == np.float64
    assert table.attrs["metrics"]["outcome"] == {"kind": "continuous", "direction": "higher"}


REF = (Call("backup_db"), Call("migrate", {"version": 7}))


@pytest.mark.parametrize("match", MATCH_MODES)
def test_reference_modes(match):
    runs = [record("in-order", [step("backup_db"), step("migrate", {"version": 7})]),
            record("swapped", [step("migrate", {"version": 7}), step("backup_db")]),
            record("wrong-args", [step("backup_db"), step("migrate", {"version": 6})]),
            record("extra", [step("backup_db"), step("ls"), step("migrate", {"version": 7, "dry": False})]),
            record("short", [step("backup_db")]),
            record("empty", [])]
    table, _ = scored(runs, TrajectorySpec(reference=REF, match=match))
    expected = {"exact": [True, False, False, False, False, False],
                "any_order": [True, True, False, False, False, False],
                "superset": [True, True, False, True, False, False],
                "subset": [True, True, False, False, True, True]}[match]
    assert table["reference_match"].tolist() == expected
    assert table.loc[2, "arg_accuracy"] == 0.5 and table.loc[5, "tool_recall"] == 0.0
    assert pd.isna(table.loc[5, "tool_precision"]) and pd.isna(table.loc[5, "arg_accuracy"])


def test_exact_mode_reason_names_the_first_wrong_step():
    table, _ = scored([record("r1", [step("migrate", {"version": 7}), step("backup_db")])],
                      TrajectorySpec(reference=REF, match="exact"))
    assert table.loc[0, "reasons"] == ("not the reference order: step 0 should be backup_db({}), "
                                       "got migrate({'version': 7})")


def test_matching_needs_augmenting_paths_falls_back_per_run():
    # Greedy pairs the any-argument reference call with the first call and leaves
    # the stricter one without a partner; the maximum matching swaps them.
    spec = TrajectorySpec(reference=(Call("read", None), Call("read", {"p": "a"})), match="any_order")
    runs = [record("swap", [step("read", {"p": "a"}), step("read", {"p": "b"})]),
            record("easy", [step("read", {"p": "b"}), step("read", {"p": "a"})])]
    table, _ = scored(runs, spec)
    assert table["reference_match"].tolist() == [True, True]
    assert table.attrs["scoring"]["matching_fallback_runs"] == 1


def test_argument_rules_compare_as_python_values():
    # 1 == 1.0 == True for the "subset" rule, though the canonical texts differ
    spec = TrajectorySpec(reference=(Call("f", {"n": 1}),), match="superset")
    table, _ = scored([record("r1", [step("f", {"n": 1.0})]), record("r2", [step("f", {"n": True})]),
                       record("r3", [step("f", {"n": "1"})])], spec)
    assert table["reference_match"].tolist() == [True, True, False]


def test_rubric_levels_match_rubric_level_on_every_combination():
    combos = list(itertools.product([False, True], [0, 1, 3], [0, 1, 2], [0, 1, 2], [False, True]))
    right, valid, wasted, corrections, within = map(np.array, zip(*combos))
    fast = rubric_levels(right, valid, wasted, corrections, within)
    slow = [rubric_level(right_result=r, valid_calls=v, wasted=w, corrections=c, checks_passed=b)
            for r, v, w, c, b in combos]
    assert fast.tolist() == slow


# --------------------------------------------------------------------------- #
# The table: columns, dtypes, attrs
# --------------------------------------------------------------------------- #
def test_columns_dtypes_and_attrs():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=3, n_seeds=2)
    table = score(traces, TrajectorySpec(required=("edit_file",), reference=(Call("read_file"),), step_budget=9))
    names = list(score_run([], outcome=True).metrics)
    assert list(table.columns) == ["run_id", "task_id", "seed", "arm", "model", "harness",
                                   "tokens", "cost_usd", "latency_s", *names, "reasons"]
    assert set(METRICS) == {"tokens", "cost_usd", "latency_s", *names}
    for name, (kind, direction) in METRICS.items():
        expected = {"binary": "boolean", "count": "Int64", "ordinal": "Int64", "continuous": "float64",
                    "cost": "Int64" if name == "tokens" else "float64"}[kind]
        assert str(table[name].dtype) == expected, name
        assert table.attrs["metrics"][name] == {"kind": kind, "direction": direction}
    assert str(table["reasons"].dtype) == "string" and table["run_id"].dtype == traces.runs["run_id"].dtype
    kinds = metric_kinds(table)
    assert list(kinds.index) == [c for c in table.columns if c in METRICS]
    assert kinds.loc["rubric"].tolist() == ["ordinal", "higher"]
    assert metric_kinds(table[["run_id", "n_steps"]].merge(table[["run_id"]])).index.tolist() == ["n_steps"]
    assert table["passed"].tolist() == table["reasons"].eq("").tolist()


def test_metric_words_come_from_the_vocabulary():
    from agentab._checks import check_direction, check_kind
    from agentab._vocabulary import DIRECTIONS, KINDS
    from agentab.scoring import metrics

    assert metrics.KINDS is KINDS and metrics.DIRECTIONS is DIRECTIONS
    for kind, direction in METRICS.values():
        assert check_kind(kind) == kind and check_direction(direction) == direction


def test_scoring_imports_no_statistics():
    import ast
    from pathlib import Path

    for path in Path(agentab.scoring.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n == "agentab.stats" or n.startswith("agentab.stats.") for n in names), path.name


def test_empty_traces():
    traces = agentab.load_traces([{"run_id": "x", "task_id": "t", "seed": 0, "steps": "no"}], strict=False)
    with pytest.warns(SpecWarning, match="'a' \\(required\\)"):
        table = score(traces, TrajectorySpec(required=("a",)))
    assert len(table) == 0 and "rubric" in table.columns


# --------------------------------------------------------------------------- #
# Spec forms and bad specs
# --------------------------------------------------------------------------- #
TWO_TASKS = [record("r1", [step("a"), step("a")], task="t1"), record("r2", [step("b")], task="t2"),
             record("r3", [step("b")], task="3")]


def test_mapping_dataframe_and_default_give_the_same_scores():
    specs = {"t1": TrajectorySpec(max_repeats=1), "t2": TrajectorySpec(required=("a",), step_budget=1),
             3: {"step_cap": 1}}
    by_mapping, _ = scored(TWO_TASKS, {"t1": specs["t1"], "t2": specs["t2"], "3": TrajectorySpec(step_cap=1)})
    assert score(agentab.load_traces(TWO_TASKS), specs).equals(by_mapping)
    frame = pd.DataFrame({"task_id": ["t1", "t2", 3], "max_repeats": [1, np.nan, np.nan],
                          "required": [(), ("a",), ()], "step_budget": [np.nan, 1.0, np.nan],
                          "step_cap": [None, None, 1]})
    assert score(agentab.load_traces(TWO_TASKS), frame).equals(by_mapping)
    assert score(agentab.load_traces(TWO_TASKS), frame.set_index("task_id")).equals(by_mapping)
    with_default = score(agentab.load_traces(TWO_TASKS), {"t1": specs["t1"], "t2": specs["t2"]},
                         default=TrajectorySpec(step_cap=1))
    assert with_default.equals(by_mapping)


def test_tasks_without_a_spec_are_an_error():
    with pytest.raises(ValueError, match=r"no spec for 2 of 3 tasks \(2 runs\), e\.g\. 't2', '3'.*default="):
        score(agentab.load_traces(TWO_TASKS), {"t1": TrajectorySpec()})


def test_specs_for_absent_tasks_warn_with_a_count():
    specs = {"t1": TrajectorySpec(), "t2": TrajectorySpec(), "3": TrajectorySpec(), "t9": TrajectorySpec(),
             "t8": TrajectorySpec()}
    with pytest.warns(SpecWarning, match=r"2 of 5 specs are for tasks absent from the traces \('t9', 't8'\)"):
        score(agentab.load_traces(TWO_TASKS), specs)


def test_tools_never_called_warn_by_name():
    spec = TrajectorySpec(required=("a", "edit_fiel"), reference=(Call("serch"), Call("a")))
    with pytest.warns(SpecWarning, match=r"2 tool\(s\).*'edit_fiel' \(required\), 'serch' \(reference\).*typo"):
        score(agentab.load_traces(TWO_TASKS), spec)


@pytest.mark.parametrize("frame, error, message", [
    (pd.DataFrame({"task_id": ["t1"], "match": ["fuzzy"], "reference": [[Call("a")]]}), ValueError,
     r"spec for task 't1': `match` == 'fuzzy', must be one of exact"),
    (pd.DataFrame({"task_id": ["t1"], "step_budget": [-3]}), ValueError,
     r"spec for task 't1': `step_budget` == -3, must be a positive integer"),
    (pd.DataFrame({"task_id": ["t1"], "step_budget": [2.5]}), ValueError,
     r"spec for task 't1': `step_budget` == 2.5"),
    (pd.DataFrame({"task_id": ["t1"], "budget": [3]}), ValueError, r"unknown columns \['budget'\]"),
    (pd.DataFrame({"task_id": ["t1", "t1"], "step_cap": [3, 4]}), ValueError, r"more than one row.*'t1'"),
    (pd.DataFrame({"task_id": ["t1"], "required": ["edit_file"]}), TypeError,
     r"spec for task 't1': `required` must be a sequence of tool names, got the string 'edit_file'"),
])
def test_bad_spec_tables(frame, error, message):
    with pytest.raises(error, match=message):
        score(agentab.load_traces(TWO_TASKS), frame, default=TrajectorySpec())


def test_bad_spec_arguments():
    traces = agentab.load_traces(TWO_TASKS)
    with pytest.raises(TypeError, match=r"`spec` must be a TrajectorySpec.*got list"):
        score(traces, [TrajectorySpec()])
    with pytest.raises(TypeError, match=r"spec for task 't1' must be a TrajectorySpec or a dict.*got int: 5"):
        score(traces, {"t1": 5})
    with pytest.raises(ValueError, match=r"spec for task 't1': unknown fields \['budget'\]"):
        score(traces, {"t1": {"budget": 3}})
    with pytest.raises(ValueError, match=r"two specs for task '3' \(keys 3 and '3'\)"):
        score(traces, {3: TrajectorySpec(), "3": TrajectorySpec()})
    with pytest.raises(TypeError, match=r"`default` is for a mapping"):
        score(traces, TrajectorySpec(), default=TrajectorySpec())
    with pytest.raises(TypeError, match=r"`default` must be a TrajectorySpec or None, got dict"):
        score(traces, {}, default={"step_cap": 3})
    with pytest.raises(TypeError, match=r"`traces` must be an agentab.Traces.*got list"):
        score(TWO_TASKS, TrajectorySpec())


def test_odd_claims_warn_and_are_read_by_truth_value():
    runs = [record("r1", [step("a")], outcome=False, metadata={"claimed_success": "no"})]
    with pytest.warns(SpecWarning, match=r"claimed_success is not true/false in 1 runs \(e\.g\. 'no'\)"):
        table = score(agentab.load_traces(runs))
    (verdict,) = oracle(agentab.load_traces(runs), lambda task: TrajectorySpec())
    assert verdict.metrics["claimed_success"] is True and verdict.metrics["premature"] is True
    assert table.loc[0, "claimed_success"] and table.loc[0, "premature"]  # bool("no") is True


def test_tables_that_disagree_are_an_error():
    traces = agentab.load_traces(TWO_TASKS)
    broken = agentab.Traces(runs=traces.runs, steps=traces.steps.iloc[1:], rejected=traces.rejected,
                            n_read=traces.n_read)
    with pytest.raises(ValueError, match=r"holds 1 steps for run 'r1', but traces.runs says n_steps=2"):
        score(broken)


def test_unsorted_steps_are_sorted_by_run_and_index():
    traces = agentab.load_traces(TWO_TASKS + [record("r4", [step("x"), step("y"), step("x"), step("y")])])
    shuffled = agentab.Traces(runs=traces.runs, steps=traces.steps.iloc[::-1].reset_index(drop=True),
                              rejected=traces.rejected, n_read=traces.n_read)
    assert score(shuffled).equals(score(traces))


# --------------------------------------------------------------------------- #
# Property: score == score_run on random traces and specs
# --------------------------------------------------------------------------- #
TOOLS = ("a", "b", "c", "d")
ARGS = ({}, {"x": 1}, {"x": 2}, {"x": 1, "y": "z"}, {"x": 1.0}, {"x": True})
PATHS = ("src/a.py", "src/b.py", "notes.txt", "secrets.env")
STATE_LISTS = ("files_created", "files_modified", "files_deleted", "external_calls")


def _longer(actual: dict, reference: dict) -> bool:
    return len(actual) >= len(reference)


@st.composite
def random_steps(draw):
    n = draw(st.integers(0, 12))
    tools = draw(st.lists(st.sampled_from(TOOLS[:draw(st.integers(1, 4))]), min_size=n, max_size=n))
    args = draw(st.lists(st.sampled_from(ARGS[:draw(st.integers(1, len(ARGS)))]), min_size=n, max_size=n))
    status = draw(st.lists(st.sampled_from(["ok", "ok", "error", None]), min_size=n, max_size=n))
    return [step(t, a, s) for t, a, s in zip(tools, args, status)]


@st.composite
def terminal_states(draw):
    if draw(st.booleans()):
        return None
    state = {}
    for key in STATE_LISTS:
        if draw(st.booleans()):
            items = st.sampled_from(PATHS) if key != "external_calls" else st.sampled_from(
                ["https://x", {"url": "https://x"}, "https://y"])
            state[key] = draw(st.lists(items, max_size=3))
    return state


@st.composite
def random_traces(draw):
    numeric = draw(st.booleans())
    outcome = st.sampled_from([0.0, 1.0, 2.0, 3.0]) if numeric else st.booleans()
    records = []
    for i in range(draw(st.integers(1, 8))):
        rec = record(f"r{i}", draw(random_steps()), task=draw(st.sampled_from(["t1", "t2", "t3"])),
                     outcome=draw(outcome), terminal_state=draw(terminal_states()),
                     retries=draw(st.none() | st.integers(0, 2)), backtracks=draw(st.none() | st.integers(0, 2)),
                     latency_s=draw(st.none() | st.sampled_from([0.5, 5.0, 60.0])),
                     metadata=draw(st.sampled_from([None, {}, {"claimed_success": True},
                                                    {"claimed_success": False}, {"claimed_success": None}])))
        records.append({k: v for k, v in rec.items() if v is not None or k == "outcome"})
    return records


@st.composite
def random_specs(draw):
    reference = draw(st.none() | st.lists(st.builds(Call, st.sampled_from(TOOLS + ("zz",)),
                                                    st.none() | st.sampled_from(ARGS)), max_size=4))
    match = draw(st.sampled_from(MATCH_MODES)) if reference else "superset"
    rule = draw(st.sampled_from(["subset", "exact", "ignore", _longer, {"a": "exact", "*": "subset"},
                                 {"b": "ignore"}]))
    expected = None
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(STATE_LISTS), unique=True, max_size=3))
        expected = {k: draw(st.lists(st.sampled_from(PATHS + ("https://x",)), max_size=2)) for k in keys}
    return TrajectorySpec(
        required=tuple(draw(st.lists(st.sampled_from(TOOLS + ("zz",)), max_size=3))),
        reference=None if reference is None else tuple(reference), match=match, args=rule,
        step_budget=draw(st.none() | st.integers(1, 10)), step_cap=draw(st.none() | st.integers(1, 12)),
        max_repeats=draw(st.none() | st.integers(1, 3)), time_limit=draw(st.none() | st.sampled_from([5.0, 30])),
        forbidden=tuple(draw(st.lists(st.sampled_from(["c", "d*", "*.txt", "src/*", "https://y"]), max_size=2))),
        expected_state=expected, success_at=draw(st.sampled_from([0.5, 1.0, 2.5])),
    )


@pytest.mark.slow  # 250 random experiments: run by `pytest -m slow` (CI)
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=random_traces(), specs=st.lists(random_specs(), min_size=3, max_size=3), per_task=st.booleans())
def test_score_equals_score_run_on_random_traces(records, specs, per_task):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecWarning)
        traces = agentab.load_traces(records)
        if per_task:
            by_task = dict(zip(["t1", "t2", "t3"], specs))
            table = score(traces, by_task)
            verdicts = oracle(traces, by_task.get)
        else:
            table = score(traces, specs[0])
            verdicts = oracle(traces, lambda task: specs[0])
    assert_agrees(table, verdicts)


@st.composite
def matching_cases(draw):
    """Few tools, several reference calls per tool, arguments that fit some calls: matchings must be searched."""
    tools = ("a", "b")
    calls = st.builds(step, st.sampled_from(tools), st.sampled_from(ARGS[:4]), st.just("ok"))
    records = [record(f"r{i}", draw(st.lists(calls, max_size=7))) for i in range(draw(st.integers(1, 6)))]
    reference = draw(st.lists(st.builds(Call, st.sampled_from(tools), st.none() | st.sampled_from(ARGS[:4])),
                              min_size=1, max_size=5))
    spec = TrajectorySpec(reference=tuple(reference), match=draw(st.sampled_from(MATCH_MODES)),
                          args=draw(st.sampled_from(["subset", "exact", {"a": "exact", "*": "subset"}])))
    return records, spec


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=matching_cases())
@pytest.mark.slow  # validation: CI runs it with -m slow
def test_reference_matching_equals_score_run(case):
    records, spec = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecWarning)
        traces = agentab.load_traces(records)
        table = score(traces, spec)
    assert_agrees(table, oracle(traces, lambda task: spec))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(st.lists(st.sampled_from(["a", "b", "c"]), max_size=24), min_size=1, max_size=6),
       max_repeats=st.none() | st.integers(1, 3))
def test_loops_equal_score_run_on_long_repetitive_runs(keys, max_repeats):
    traces = agentab.load_traces([record(f"r{i}", [step(k[0], {"x": 1} if k == "c" else {}) for k in run])
                                  for i, run in enumerate(keys)])
    spec = TrajectorySpec(max_repeats=max_repeats)
    assert_agrees(score(traces, spec), oracle(traces, lambda task: spec))




def test_checks_the_data_cannot_support_warn_with_counts():
    runs = [record("r1", [step("a")], latency_s=3.0, terminal_state={"files_modified": []}),
            record("r2", [step("a")])]
    traces = agentab.load_traces(runs)
    with pytest.warns(SpecWarning, match=r"1 of 2 runs: the spec has an expected_state but the run recorded no "
                                         r"terminal_state"):
        score(traces, TrajectorySpec(expected_state={"files_modified": ["a.py"]}))
    with pytest.warns(SpecWarning, match=r"1 of 2 runs: the spec has a time_limit but the run recorded no latency_s"):
        score(traces, TrajectorySpec(time_limit=10))
    with pytest.warns(SpecWarning, match=r"2 of 2 runs: the spec sets success_at, which applies to numeric outcomes"):
        score(traces, TrajectorySpec(success_at=0.5))


def test_numeric_outcomes_of_only_0_and_1_stay_binary():
    def kinds(outcomes):
        records = [{"run_id": f"r{i}", "task_id": "t", "seed": i, "outcome": o, "steps": []} for i, o in enumerate(outcomes)]
        return agentab.metric_kinds(agentab.score(agentab.load_traces(records))).loc["outcome", "kind"]

    assert kinds([0.0, 1.0, 1.0]) == "binary"  # a 0/1 reward, as tau-bench records it
    assert kinds([0.0, 0.5, 1.0]) == "continuous"
    assert kinds([True, False]) == "binary"
