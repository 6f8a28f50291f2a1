"""compare_slices: each slice's row is agentab.compare on the slice, Holm across slices, the interaction test."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab import CompareError
from agentab.comparison.slices import MIN_SLICE_TASKS, NO_SLICE, SLICE_COLUMNS, compare_slices
from agentab.stats.interaction import slice_interaction

TB = Path("/work/shared/data/terminal-bench/tb_core_0.1.1_trials.csv")
BASE, CAND = "20250711_openhands_claude-4-sonnet", "20250811_cursor-cli_claude-4-sonnet"
KW = dict(arm="submission", baseline=BASE, candidate=CAND, metrics={"is_resolved": "binary"}, primary="is_resolved",
          n_resamples=199, seed=3)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def terminal_bench() -> pd.DataFrame:
    """The 13 Terminal-Bench submissions, with two task properties (the data has no task category column):

    - ``suite``: the size of the task's test suite (the most ``n_tests`` any of its trials parsed; a trial
      whose parser failed counts fewer), 1 / 2-3 / 4+ tests: 22, 32 and 26 tasks;
    - ``variant``: the ``.easy`` / ``.hard`` suffix of the task id, else "base" (4 easy tasks: a small slice).
    """
    if not TB.is_file():
        pytest.skip(f"{TB} is not on this machine")
    data = pd.read_csv(TB)
    size = data.groupby("task_id")["n_tests"].transform("max")
    data["suite"] = np.select([size == 1, size <= 3], ["1 test", "2-3 tests"], "4+ tests")
    data["variant"] = data["task_id"].str.extract(r"\.(easy|hard)$")[0].fillna("base")
    return data


@pytest.fixture(scope="module")
def by_suite(terminal_bench):
    return _quiet(compare_slices, terminal_bench, "suite", **KW)


def test_columns_and_every_slice_row_is_compare_on_that_slice(terminal_bench, by_suite):
    table = by_suite.slices
    assert tuple(table.columns[:7]) == SLICE_COLUMNS
    assert table["slice"].tolist() == ["1 test", "2-3 tests", "4+ tests"]
    for row in table.itertuples():
        alone = _quiet(agentab.compare, terminal_bench[terminal_bench["suite"] == row.slice], **KW)
        primary = alone.table.iloc[0]
        for column in ("effect", "ci_low", "ci_high", "p_value"):
            assert getattr(row, column) == primary[column], (row.slice, column)
        assert row.n_tasks == primary["tasks"]
        assert by_suite.comparisons[row.slice].table.equals(alone.table)
    assert by_suite.overall.table.equals(_quiet(agentab.compare, terminal_bench, **KW).table)
    assert table["n_tasks"].sum() == by_suite.overall.table.iloc[0]["tasks"]


def test_holm_across_slices(by_suite):
    from statsmodels.stats.multitest import multipletests

    table = by_suite.slices
    assert (table["p_adjusted"] >= table["p_value"]).all()
    assert np.allclose(table["p_adjusted"], multipletests(table["p_value"], method="holm")[1])


def test_interaction_pvalue_in_unit_interval_and_reproducible(terminal_bench, by_suite):
    p = by_suite.interaction_pvalue
    assert 0 < p <= 1
    assert by_suite.settings.seed == 3
    again = _quiet(compare_slices, terminal_bench, "suite", **KW)
    assert again.interaction_pvalue == p
    assert again.slices.equals(by_suite.slices)
    # the interaction's slice effects are the slices' own effects (task-averaged rate differences)
    assert np.allclose(by_suite.interaction.effects, by_suite.slices["effect"])
    other = _quiet(compare_slices, terminal_bench, "suite", **{**KW, "seed": 4})
    assert other.interaction_pvalue != p or other.slices["p_value"].tolist() != by_suite.slices["p_value"].tolist()


def test_small_slice_flagged_not_numbered(terminal_bench):
    result = _quiet(compare_slices, terminal_bench, "variant", **KW)
    easy = result.slices.set_index("slice").loc["easy"]
    assert easy["n_tasks"] == 4 < MIN_SLICE_TASKS
    assert all(pd.isna(easy[c]) for c in ("effect", "ci_low", "ci_high", "p_value", "p_adjusted"))
    assert "fewer than 5" in easy["note"]
    assert "easy" not in result.comparisons
    compared = result.slices[result.slices["p_value"].notna()]
    assert set(compared["slice"]) == {"base", "hard"}
    assert len(result.interaction.effects) == 2  # the small slice is left out of the interaction test
    assert "easy: 4 tasks: fewer than 5" in str(result)
    # a lower minimum compares it
    lower = _quiet(compare_slices, terminal_bench, "variant", min_tasks=4, **KW)
    assert pd.notna(lower.slices.set_index("slice").loc["easy", "effect"])


def test_task_in_two_slices_raises_naming_it(terminal_bench):
    # n_tests is a property of the trial (a parser failure counts fewer tests): 15 tasks span two values
    with pytest.raises(CompareError, match=r"task 'build-initramfs-qemu' is in 2 slices of 'n_tests'.*13 more"):
        _quiet(compare_slices, terminal_bench, "n_tests", **KW)


def test_unknown_by_and_k_arms_refused(terminal_bench):
    with pytest.raises(CompareError, match="neither a column"):
        _quiet(compare_slices, terminal_bench, "category", **KW)
    with pytest.raises(CompareError, match="`by` must be"):
        _quiet(compare_slices, terminal_bench, "", **KW)


def _example(n_tasks: int = 24) -> pd.DataFrame:
    return agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=n_tasks, n_seeds=2))


@pytest.mark.slow
def test_metadata_key_of_a_runs_table_and_of_traces():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=20, n_seeds=2)
    runs = traces.runs.copy()
    kind = {t: ("edit" if int(t[1:]) % 2 else "search") for t in runs["task_id"]}
    runs["metadata"] = [json.dumps({"task_type": kind[t]}) for t in runs["task_id"]]
    result = _quiet(compare_slices, runs, "task_type", metrics=["outcome"], n_resamples=99)
    assert result.slices["slice"].tolist() == ["edit", "search"]
    traced = agentab.Traces(runs, traces.steps, traces.rejected, traces.n_read)
    scores = agentab.score(traced, agentab.datasets.example_specs(n_tasks=20))
    via = _quiet(compare_slices, scores, "task_type", traces=traced, metrics=["outcome"], n_resamples=99)
    assert via.slices["slice"].tolist() == ["edit", "search"]
    assert via.slices["n_tasks"].tolist() == [10, 10]


def test_missing_slice_values_form_their_own_slice_and_display():
    scores = _example()
    scores["group"] = np.where(scores["task_id"].str[1:].astype(int) < 12, "a", None)
    result = _quiet(compare_slices, scores, "group", metrics=["outcome"], n_resamples=99)
    assert result.slices["slice"].tolist() == ["a", NO_SLICE]
    assert any("no 'group'" in n for n in result.notes)
    out = result.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["schema"] == "agentab.slices/1" and len(out["slices"]) == 2
    assert "<table" in result._repr_html_()
    assert result.to_frame().equals(result.slices)


def test_a_cost_primary_has_its_interaction_test_and_slices():
    scores = _example()
    scores["half"] = np.where(scores["task_id"].str[1:].astype(int) < 12, "first", "second")
    result = _quiet(compare_slices, scores, "half", metrics=["outcome", "tokens"], primary="tokens p50", n_resamples=99)
    assert 0 < result.interaction_pvalue <= 1 and not any("no interaction test" in n for n in result.notes)
    assert np.allclose(result.interaction.effects, result.slices["effect"])
    assert result.slices["effect"].notna().all()


# --------------------------------------------------------------------------- #
# The array-level test
# --------------------------------------------------------------------------- #
def test_interaction_keeps_a_common_effect_and_finds_a_planted_one():
    rng = np.random.default_rng(5)
    labels = np.repeat([0, 1, 2], 30)
    common = rng.normal(2.0, 1.0, 90)  # a large effect shared by every slice: no interaction
    res = slice_interaction((common,), (labels,), paired=True, n_resamples=999, rng=np.random.default_rng(0))
    assert res.pvalue > 0.05 and res.df == 2
    planted = common + np.repeat([0.0, 0.0, 1.5], 30)
    res = slice_interaction((planted,), (labels,), paired=True, n_resamples=999, rng=np.random.default_rng(0))
    assert res.pvalue < 0.01 and res.wald_pvalue < 0.01


def test_interaction_does_not_depend_on_the_batch_size(monkeypatch):
    import agentab.stats.interaction as module

    rng = np.random.default_rng(1)
    x, y = rng.normal(0, 1, 40), rng.normal(0.5, 1, 40)
    labels = np.tile([0, 1], 20)
    first = slice_interaction((x, y), (labels, labels), paired=False, n_resamples=500, rng=np.random.default_rng(2))
    monkeypatch.setattr(module, "BATCH_VALUES", 97)
    second = slice_interaction((x, y), (labels, labels), paired=False, n_resamples=500, rng=np.random.default_rng(2))
    assert first == second


def test_interaction_constant_slice_gets_a_finite_weight():
    d = np.r_[np.zeros(10), np.random.default_rng(0).normal(0.3, 0.2, 10)]
    res = slice_interaction((d,), (np.repeat([0, 1], 10),), paired=True, n_resamples=199, rng=np.random.default_rng(0))
    assert np.isfinite(res.statistic) and 0 < res.pvalue <= 1
    assert math.isnan(res.wald_pvalue)  # the naive test has no variance for the constant slice
    flat = slice_interaction((np.zeros(20),), (np.repeat([0, 1], 10),), paired=True, n_resamples=99,
                             rng=np.random.default_rng(0))
    assert math.isnan(flat.pvalue) and "no unit varies" in flat.note


@pytest.mark.slow
def test_slice_whose_tasks_lack_values_in_an_arm_counts_as_small(terminal_bench):
    # suite size 4: 5 tasks run by both arms, one of them with no known outcome in one arm, so compare pairs 4
    data = terminal_bench.assign(suite_n=terminal_bench.groupby("task_id")["n_tests"].transform("max"))
    result = _quiet(compare_slices, data, "suite_n", **KW)
    four = result.slices.set_index("slice").loc[4]
    assert four["n_tasks"] == 4 and pd.isna(four["effect"]) and "with a value in both arms" in four["note"]
    assert 4 not in result.comparisons
    assert sorted(result.comparisons) == [1, 2, 3, 5, 6]
    assert result.interaction.n_units == (22, 16, 16, 6, 6)


def _sliced_table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    rows = [{"task_id": f"t{t}", "suite": "easy" if t < 12 else "hard", "arm": arm, "seed": s,
             "outcome": bool(rng.random() < (0.8 if t < 12 else 0.3) + (0.1 if arm == "b" else 0.0))}
            for t in range(24) for arm in ("a", "b") for s in range(3)]
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_compare_by_and_the_cli_by_give_the_same_slices(tmp_path, capsys):
    from agentab.cli import main

    path = _sliced_table(tmp_path)
    api = _quiet(agentab.compare, str(path), arm="arm", baseline="a", candidate="b", by="suite", n_resamples=999)
    assert isinstance(api, agentab.SlicedComparison) and list(api.slices.columns[:7]) == list(SLICE_COLUMNS)
    code = main(["compare", str(path), "--arm-column", "arm", "--names", "a", "b", "--by", "suite", "--json",
                 "--n-resamples", "999", "-q"])
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "agentab.slices/1" and code in (0, 3, 4)
    assert out["interaction"]["pvalue"] == pytest.approx(api.interaction_pvalue)  # the same seed, the same numbers
    with pytest.raises(CompareError, match="one candidate"):
        agentab.compare(str(path), arm="arm", baseline="a", candidate=["b"], by="suite")


def test_a_sliced_comparison_lists_the_flipped_tasks_with_their_slice(tmp_path):
    path = _sliced_table(tmp_path)
    result = _quiet(agentab.compare, str(path), arm="arm", baseline="a", candidate="b", by="suite", n_resamples=999)
    flipped = result.flipped_tasks(n=5)
    assert list(flipped.columns[:6]) == ["task_id", "baseline", "candidate", "effect", "p_value", "direction"]
    table = pd.read_csv(path)
    suite_of = dict(zip(table.task_id, table.suite))
    assert len(flipped) and all(suite_of[t] == s for t, s in zip(flipped.task_id, flipped["slice"]))
