"""Scoring one run: every check, match mode, metric and rubric level, on hand-built trajectories."""

from __future__ import annotations

import pytest
from conftest import make_record

import agentab
from agentab import Call, TrajectorySpec, score_run
from agentab.scoring.trajectory import rubric_level

LUCKY = [
    Call("search_docs", {"q": "failing test"}),
    Call("search_docs", {"q": "failing test"}),
    Call("read_file", {"path": "src/mian.py"}),
    Call("read_file", {"path": "src/mian.py"}),
    Call("run_tests", {}),
    Call("list_dir", {"path": "src"}),
    Call("edit_file", {"path": "src/main.py"}),
    Call("run_tests", {}),
]


def ok(tool, **args):
    return Call(tool, args, "ok")


def err(tool, **args):
    return Call(tool, args, "error")


# --------------------------------------------------------------------------- #
# The seed's worked example and its caveat
# --------------------------------------------------------------------------- #
def test_the_seed_example_gives_exactly_its_three_reasons():
    verdict = score_run(LUCKY, required=["list_dir", "edit_file"], step_budget=5, final_state_correct=True)
    assert not verdict.passed
    assert verdict.reasons == [
        "repeated identical call: search_docs({'q': 'failing test'})",
        "repeated identical call: read_file({'path': 'src/mian.py'})",
        "took 8 steps against a budget of 5",
    ]
    m = verdict.metrics
    assert m["repeats"] == 2 and m["cycles"] == 0 and m["loop"] and m["over_budget"]
    assert m["right_result"] and m["accidental_recovery"] and m["rubric"] == 2


def test_a_repeat_that_is_not_back_to_back_is_legitimate():
    # re-running the tests after a fix repeats an earlier call: not a loop
    run = [ok("run_tests"), ok("edit_file", path="a.py"), ok("run_tests")]
    verdict = score_run(run, outcome=True)
    assert verdict.passed and verdict.metrics["repeats"] == 0 and verdict.metrics["cycles"] == 0
    assert verdict.metrics["rubric"] == 3


def test_the_same_record_as_a_trace_record_and_through_traces():
    steps = [{"index": i, "tool": c.tool, "args": dict(c.args), "observation": {"status": "ok"}}
             for i, c in enumerate(LUCKY)]
    record = make_record("lucky", steps=steps, outcome=True)
    by_record = score_run(record, required=["list_dir", "edit_file"], step_budget=5)
    traces = agentab.load_traces([record])
    by_traces = score_run(traces, required=["list_dir", "edit_file"], step_budget=5)
    by_steps = score_run(traces.steps, required=["list_dir", "edit_file"], step_budget=5, outcome=True)
    assert by_record.reasons == by_traces.reasons == by_steps.reasons
    assert len(by_record.reasons) == 3


# --------------------------------------------------------------------------- #
# Loops, cycles, the loop cap
# --------------------------------------------------------------------------- #
def test_cycles_fail_like_repeats():
    run = [ok("search", q="a"), ok("read", path="x"), ok("search", q="a"), ok("read", path="x"), ok("edit")]
    verdict = score_run(run, outcome=True)
    assert verdict.reasons == ["repeated cycle: search({'q': 'a'}) -> read({'path': 'x'})"]
    assert verdict.metrics["cycles"] == 1 and verdict.metrics["repeats"] == 0 and verdict.metrics["loop"]
    assert verdict.metrics["rubric"] == 2


def test_cycle_of_three_and_no_double_counting():
    a, b, c = ok("a"), ok("b"), ok("c")
    assert score_run([a, b, c, a, b, c], outcome=True).metrics["cycles"] == 1
    assert score_run([a, b, a, b, a, b], outcome=True).metrics["cycles"] == 1  # one cycle, then a tail
    assert score_run([a, b, c, a, b, d := ok("d")], outcome=True).metrics["cycles"] == 0
    assert d.tool == "d"


def test_loop_cap_hit_is_logged_as_a_failure():
    run = [ok("search", q="x")] * 4
    verdict = score_run(run, outcome=False, max_repeats=3)
    assert "loop cap hit: search({'q': 'x'}) repeated 3 times back to back" in verdict.reasons
    assert verdict.metrics["cap_hit"] and verdict.metrics["longest_streak"] == 4 and verdict.metrics["repeats"] == 3
    assert not score_run(run[:3], outcome=False, max_repeats=3).metrics["cap_hit"]


def test_different_arguments_are_not_a_loop():
    assert score_run([ok("read", path="a"), ok("read", path="b")], outcome=True).passed


# --------------------------------------------------------------------------- #
# Match modes
# --------------------------------------------------------------------------- #
BACKUP_THEN_MIGRATE = [Call("backup_db"), Call("migrate", {"version": 7})]


def test_exact_needs_the_same_calls_in_the_same_order():
    good = [ok("backup_db"), ok("migrate", version=7)]
    assert score_run(good, reference=BACKUP_THEN_MIGRATE, match="exact", outcome=True).passed
    swapped = list(reversed(good))
    verdict = score_run(swapped, reference=BACKUP_THEN_MIGRATE, match="exact", outcome=True)
    assert verdict.reasons == ["not the reference order: step 0 should be backup_db({}), got migrate({'version': 7})"]
    assert verdict.metrics["reference_match"] is False
    extra = [*good, ok("vacuum")]
    verdict = score_run(extra, reference=BACKUP_THEN_MIGRATE, match="exact", outcome=True)
    assert verdict.reasons == ["not the reference order: step 2 should be the end of the run, got vacuum({})"]


def test_any_order_needs_the_same_multiset():
    reference = [Call("get_schema"), Call("get_rows", {"table": "users"})]
    run = [ok("get_rows", table="users"), ok("get_schema")]
    assert score_run(run, reference=reference, match="any_order", outcome=True).passed
    verdict = score_run([ok("get_schema"), *run], reference=reference, match="any_order", outcome=True)
    assert verdict.reasons == ["call outside the reference: get_schema({})"]
    verdict = score_run(run[:1], reference=reference, match="any_order", outcome=True)
    assert verdict.reasons == ["never called: get_schema"]


def test_superset_tolerates_extras_and_names_missing_calls():
    reference = [Call("list_dir"), Call("edit_file", {"path": "src/main.py"})]
    run = [ok("search"), ok("list_dir", path="src"), ok("edit_file", path="src/main.py", text="x"), ok("run_tests")]
    verdict = score_run(run, reference=reference, outcome=True)
    assert verdict.passed
    assert verdict.metrics["tool_recall"] == 1.0 and verdict.metrics["tool_precision"] == 0.5
    assert verdict.metrics["arg_accuracy"] == 1.0
    wrong_args = [ok("list_dir"), ok("edit_file", path="src/mian.py")]
    verdict = score_run(wrong_args, reference=reference, outcome=True)
    assert verdict.reasons == ["wrong arguments: no edit_file call matches edit_file({'path': 'src/main.py'})"]
    assert verdict.metrics["tool_recall"] == 1.0 and verdict.metrics["arg_accuracy"] == 0.5


def test_subset_forbids_improvising():
    reference = [Call("read_file"), Call("summarise")]
    assert score_run([ok("read_file", path="a")], reference=reference, match="subset", outcome=True).passed
    verdict = score_run([ok("read_file"), ok("delete_file")], reference=reference, match="subset", outcome=True)
    assert verdict.reasons == ["call outside the reference: delete_file({})"]
    verdict = score_run([ok("read_file"), ok("read_file")], reference=reference, match="subset", outcome=True)
    assert verdict.reasons == ["call outside the reference: read_file({})", "repeated identical call: read_file({})"]


def test_matching_is_optimal_not_first_fit():
    # first fit gives read_file(a) to the argument-free reference call and leaves read_file({'path': 'a'}) unmatched
    reference = [Call("read_file"), Call("read_file", {"path": "a"})]
    run = [ok("read_file", path="a"), ok("read_file", path="b")]
    verdict = score_run(run, reference=reference, match="any_order", outcome=True)
    assert verdict.passed and verdict.metrics["arg_accuracy"] == 1.0


@pytest.mark.parametrize(("rule", "passes"), [
    ("subset", True), ("exact", False), ("ignore", True),
    (lambda actual, ref: actual["path"].lower() == ref["path"].lower(), True),
])
def test_argument_rules(rule, passes):
    reference = [Call("read_file", {"path": "SRC/A.py"} if callable(rule) else {"path": "src/a.py"})]
    run = [ok("read_file", path="src/a.py", encoding="utf-8")]
    assert score_run(run, reference=reference, args=rule, outcome=True).passed is passes


def test_per_tool_argument_rules():
    reference = [Call("read_file", {"path": "a"}), Call("search", {"q": "x"})]
    run = [ok("read_file", path="a", limit=10), ok("search", q="y")]
    spec = TrajectorySpec(reference=tuple(reference), args={"search": "ignore", "*": "exact"})
    verdict = score_run(run, spec=spec, outcome=True)
    assert verdict.reasons == ["wrong arguments: no read_file call matches read_file({'path': 'a'})"]


# --------------------------------------------------------------------------- #
# Required tools, budget, non-termination
# --------------------------------------------------------------------------- #
def test_required_tools_and_selection_recall():
    verdict = score_run([ok("search"), ok("read")], required=["read", "edit", "test"], outcome=False)
    assert verdict.reasons == ["never called: edit, test", "final state is wrong"]
    assert verdict.metrics["required_missing"] == 2 and verdict.metrics["tool_recall_required"] == pytest.approx(1 / 3)
    assert verdict.metrics["tool_precision"] is None  # only defined against a reference


def test_step_cap_and_unanswered_last_call_are_non_termination():
    verdict = score_run([ok("t", i=i) for i in range(30)], step_cap=30, outcome=False)
    assert "did not terminate: reached the step cap of 30" in verdict.reasons
    assert verdict.metrics["non_terminated"]
    unanswered = [ok("a"), Call("b", {}, None)]
    assert score_run(unanswered, outcome=False).metrics["non_terminated"]
    assert not score_run([ok("a"), ok("b")], outcome=False).metrics["non_terminated"]


# --------------------------------------------------------------------------- #
# Failure shapes and the vector score
# --------------------------------------------------------------------------- #
def test_accidental_recovery_and_error_cascade():
    recovered = [err("read", path="mian.py"), ok("read", path="main.py"), ok("edit")]
    m = score_run(recovered, outcome=True).metrics
    assert m["accidental_recovery"] and not m["error_cascade"] and m["n_errors"] == 1 and m["rubric"] == 2
    cascade = [ok("search"), err("read", path="x"), ok("edit"), ok("submit")]
    m = score_run(cascade, outcome=False).metrics
    assert m["error_cascade"] and not m["accidental_recovery"] and m["steps_at_failure"] == 4


def test_premature_completion_needs_the_agents_claim():
    steps = [{"index": 0, "tool": "read_file", "args": {}, "observation": {"status": "ok"}}]
    claimed = make_record(steps=steps, outcome=False, metadata={"claimed_success": True},
                          terminal_state={"files_created": [], "files_modified": [], "files_deleted": [],
                                          "external_calls": []})
    m = score_run(claimed).metrics
    assert m["premature"] and m["claimed_success"] and m["outcome"] is False  # the claim never becomes the outcome
    no_claim = make_record(steps=steps, outcome=False, metadata={"model": "m"})
    assert score_run(no_claim).metrics["premature"] is None
    nothing_changed = make_record(steps=steps, outcome=True, metadata={"claimed_success": True},
                                  terminal_state={"files_created": [], "files_modified": []})
    assert not score_run(nothing_changed).metrics["premature"]  # the external check says right: believe it


def test_side_effects_against_expected_state_and_forbidden():
    record = make_record(terminal_state={
        "files_created": ["out/summary.md", "scratch.txt"],
        "files_modified": ["src/a.py", "src/a.py"],
        "files_deleted": ["prod.db"],
        "external_calls": ["https://api.example.org/v1"],
    })
    spec = TrajectorySpec(expected_state={"files_created": ["out/summary.md"], "files_modified": ["src/a.py", "src/b.py"]},
                          forbidden=("*.db", "delete_*"))
    verdict = score_run(record, spec=spec)
    assert verdict.reasons == [
        "unexpected side effect (files created): scratch.txt",
        "files modified more than once: src/a.py",
        "intended change missing (files modified): src/b.py",
        "forbidden side effect (files deleted): prod.db",
    ]
    m = verdict.metrics
    assert (m["unexpected_side_effects"], m["missing_changes"], m["duplicate_changes"], m["forbidden_side_effects"]) \
        == (1, 1, 1, 1)
    verdict = score_run([ok("read"), ok("delete_file", path="x")], forbidden=["delete_*"], outcome=True)
    assert verdict.reasons == ["forbidden call: delete_file({'path': 'x'})"] and verdict.metrics["forbidden_calls"] == 1


def test_cost_and_brittleness_are_carried():
    m = score_run(make_record(retries=2, backtracks=1)).metrics
    assert (m["retries"], m["backtracks"], m["n_steps"]) == (2, 1, 2)


# --------------------------------------------------------------------------- #
# The rubric
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("calls", "outcome", "budget", "level"), [
    ([], False, None, 0),                                    # gave up at once
    ([err("read"), err("read", x=1)], False, None, 0),       # no valid tool call
    ([ok("search"), ok("read")], False, None, 1),            # gathered information, no right result
    ([ok("read"), ok("edit")], False, None, 1),              # acted, wrong result
    ([err("read"), ok("read", p=1), ok("edit")], True, None, 2),   # right after an error
    ([ok("read"), ok("read"), ok("edit")], True, None, 2),   # right after a loop
    ([ok("a"), ok("b"), ok("c")], True, 2, 2),               # right, but over budget
    ([ok("read"), ok("edit"), ok("test")], True, 3, 3),      # clean
])
def test_rubric_levels(calls, outcome, budget, level):
    assert score_run(calls, outcome=outcome, step_budget=budget).metrics["rubric"] == level


def test_rubric_counts_corrections_and_numeric_outcomes():
    assert score_run(make_record(retries=1, backtracks=0)).metrics["rubric"] == 2
    assert score_run(make_record(retries=0, backtracks=0)).metrics["rubric"] == 3
    assert score_run([ok("a")], outcome=0.9).metrics["rubric"] == 1
    assert score_run([ok("a")], outcome=0.9, success_at=0.8).metrics["rubric"] == 3


def test_rubric_level_table():
    for right in (True, False):
        for valid in (0, 3):
            for wasted in (0, 1):
                for corrections in (0, 1):
                    for passed in (True, False):
                        level = rubric_level(right_result=right, valid_calls=valid, wasted=wasted,
                                             corrections=corrections, checks_passed=passed)
                        if valid == 0:
                            assert level == 0
                        elif not right:
                            assert level == 1
                        else:
                            assert level == (3 if (wasted, corrections, passed) == (0, 0, True) else 2)


# --------------------------------------------------------------------------- #
# Bad specs and inputs
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"match": "fuzzy", "reference": ["a"]}, ValueError, r"`match` == 'fuzzy', must be one of exact, any_order"),
    ({"match": "exact"}, ValueError, r"`match` == 'exact' needs a non-empty `reference`"),
    ({"step_budget": -3}, ValueError, r"`step_budget` == -3, must be a positive integer"),
    ({"max_repeats": 0}, ValueError, r"`max_repeats` == 0"),
    ({"args": "loose"}, ValueError, r"argument rule 'loose' is not one of subset, exact, ignore"),
    ({"required": "edit_file"}, TypeError, r"`required` must be a sequence of tool names, got the string"),
    ({"reference": [42]}, TypeError, r"reference\[0\]: expected a Call"),
    ({"expected_state": {"rows": []}}, ValueError, r"`expected_state` has unknown keys \['rows'\]"),
    ({"expected_state": {"files_modified": "a.py"}}, TypeError, r"`expected_state\['files_modified'\]` must be a list"),
    ({"reference": [], "match": "exact"}, ValueError, r"`match` == 'exact' needs a non-empty `reference`"),
    ({"success_at": "1"}, ValueError, r"`success_at` == '1', must be a finite number"),
    ({"success_at": float("nan")}, ValueError, r"`success_at` == nan, must be a finite number"),
    ({"forbidden": (3,)}, TypeError, r"`forbidden` items must be non-empty strings, got 3"),
    ({"required": (None,)}, TypeError, r"`required` items must be non-empty strings, got None"),
    ({"reference": [Call(7)]}, TypeError, r"reference\[0\]: the tool must be a non-empty name, got 7"),
])
def test_bad_specs_are_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        TrajectorySpec(**kwargs)
    with pytest.raises(error, match=match):
        score_run([ok("a")], outcome=True, **kwargs)


def test_bad_inputs():
    with pytest.raises(TypeError, match=r"give either `spec` or the spec keywords"):
        score_run([ok("a")], spec=TrajectorySpec(), step_budget=3)
    assert score_run([ok("a")], spec=TrajectorySpec(), required=[], outcome=True).passed  # empty = not given
    assert score_run([ok("a")], outcome=float("nan")).reasons == ["no external outcome"]
    with pytest.raises(ValueError, match=r"score_run scores one run; these traces hold 2"):
        score_run(agentab.load_traces([make_record("a"), make_record("b")]))
    with pytest.raises(TypeError, match=r"cannot score a int"):
        score_run(3)
    assert score_run([ok("a")]).reasons == ["no external outcome"]


def test_verdict_prints_like_the_seed():
    verdict = score_run(LUCKY, required=["list_dir", "edit_file"], step_budget=5, final_state_correct=True)
    assert str(verdict).splitlines()[0] == "FAIL" and str(verdict).count("  - ") == 3
    assert str(verdict) == "FAIL\n" + "\n".join(f"  - {r}" for r in verdict.reasons)
    assert str(score_run([ok("a")], outcome=True)) == "PASS"
    assert verdict.to_dict() == {"passed": False, "reasons": verdict.reasons, "metrics": verdict.metrics}
    fragment = score_run([ok("a")], required=("<i>",), outcome=True)._repr_html_()
    assert "metrics (" in fragment and "&lt;i&gt;" in fragment and "<i>" not in fragment


def test_a_failed_repeat_of_a_successful_call_is_not_an_uncorrected_error():
    # e.g. a loop guard blocks the identical repeat: nothing was lost
    blocked = [ok("read", path="a"), err("read", path="a"), ok("edit")]
    assert not score_run(blocked, outcome=True).metrics["error_cascade"]
    new_failure = [ok("read", path="a"), err("read", path="b"), ok("edit")]
    assert score_run(new_failure, outcome=True).metrics["error_cascade"]


def test_superset_without_a_budget_warns():
    with pytest.warns(agentab.SpecWarning, match=r"give it a `step_budget`, or you have licensed the forty-step run"):
        TrajectorySpec(reference=(Call("read_file"),))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TrajectorySpec(reference=(Call("read_file"),), step_budget=10)
        TrajectorySpec(required=("read_file",))


def test_time_limit_is_non_termination():
    record = make_record(latency_s=125.0, outcome=False)
    verdict = score_run(record, time_limit=120)
    assert "did not terminate: ran 125 s against a time limit of 120 s" in verdict.reasons
    assert verdict.metrics["non_terminated"]
    assert not score_run(make_record(latency_s=5.0), time_limit=120).metrics["non_terminated"]
    with pytest.raises(ValueError, match=r"`time_limit` == -1, must be a positive number of seconds"):
        TrajectorySpec(time_limit=-1)


def test_unanswered_last_call_and_uncorrected_errors_fail_the_run():
    verdict = score_run([ok("a"), Call("b", {}, None)], outcome=True)
    assert verdict.reasons == ["did not terminate: the last call was never answered"]
    assert verdict.metrics["rubric"] == 2
    recovered_by_luck = [err("read_file", path="src/mian.py"), ok("list_dir", path="src"),
                         ok("edit_file", path="src/main.py"), ok("run_tests")]
    verdict = score_run(recovered_by_luck, outcome=True)
    assert verdict.reasons == ["failed call never made good: read_file({'path': 'src/mian.py'})"]
    assert verdict.metrics["accidental_recovery"] and verdict.metrics["rubric"] == 2


def test_a_failed_call_does_not_satisfy_required():
    verdict = score_run([err("edit_file"), ok("run_tests")], required=["edit_file", "run_tests", "lint"], outcome=False)
    assert verdict.reasons[:2] == ["never called: lint", "only failed calls to: edit_file"]
    assert verdict.metrics["required_missing"] == 2


def test_clean_requires_every_check_to_pass():
    # the right result does not make a run clean when a check failed
    assert score_run([ok("t", i=i) for i in range(3)], step_cap=3, outcome=True).metrics["rubric"] == 2
    assert score_run([ok("rm", path="x")], forbidden=["rm"], outcome=True).metrics["rubric"] == 2
    assert score_run([], outcome=True).metrics["rubric"] == 0  # no valid call: no progress, whatever the outcome


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"reference": "search_docs"}, r"`reference` must be a sequence of calls, got 'search_docs'"),
    ({"reference": [("a", "x")]}, r"reference\[0\]: the arguments must be a mapping \(or None\), got 'x'"),
    ({"reference": [Call("a", ["x"])]}, r"reference\[0\]: the arguments must be a mapping"),
    ({"reference": [{"tool": 5}]}, r"reference\[0\]: the tool must be a non-empty name, got 5"),
])
def test_malformed_references_are_errors(kwargs, match):
    with pytest.raises(TypeError, match=match):
        TrajectorySpec(step_budget=5, **kwargs)


def test_argument_rules_for_unknown_tools_warn():
    with pytest.warns(agentab.SpecWarning, match=r"argument rules for tools that no reference call names.*raed"):
        TrajectorySpec(reference=(Call("read", {"path": "a"}),), args={"raed": "exact"}, step_budget=5)
