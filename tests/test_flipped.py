"""Comparison.flipped_tasks: the per-task result of the primary metric, ranked by a per-task exact test."""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact

import agentab
from agentab import CompareError
from agentab.comparison._flipped import FLIPPED_COLUMNS, MAX_EXACT

TB = Path("/work/shared/data/terminal-bench/tb_core_0.1.1_trials.csv")
BASE, CAND = "20250711_openhands_claude-4-sonnet", "20250811_cursor-cli_claude-4-sonnet"


def _compare(data: pd.DataFrame, **kwargs) -> agentab.Comparison:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        return agentab.compare(data, n_resamples=99, seed=0, **kwargs)


# --------------------------------------------------------------------------- #
# Real data: Terminal-Bench, 80 tasks x 5 runs, against a hand computation
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def terminal_bench():
    if not TB.is_file():
        pytest.skip(f"{TB} is not on this machine")
    return pd.read_csv(TB)


@pytest.fixture(scope="module")
def tb_comparison(terminal_bench):
    return _compare(terminal_bench, arm="submission", baseline=BASE, candidate=CAND,
                    metrics={"is_resolved": "binary"}, primary="is_resolved")


def _by_hand(trials: pd.DataFrame) -> pd.DataFrame:
    """Per task and arm: successes and known runs (a blank is_resolved is unknown, not a failure), Fisher's p."""
    known = trials[trials["is_resolved"].notna()].copy()
    known["ok"] = known["is_resolved"].map({True: 1, False: 0, "True": 1, "False": 0}).astype(int)
    counts = known.groupby(["task_id", "submission"])["ok"].agg(["sum", "count"]).unstack("submission")
    counts = counts.dropna()  # a task with no known run in an arm is left out
    rows = []
    for task, r in counts.iterrows():
        kb, nb, kc, nc = (int(r[("sum", BASE)]), int(r[("count", BASE)]), int(r[("sum", CAND)]), int(r[("count", CAND)]))
        p = fisher_exact([[kc, nc - kc], [kb, nb - kb]])[1]
        rows.append((task, kb / nb, kc / nc, kc / nc - kb / nb, p, nb, nc))
    return pd.DataFrame(rows, columns=["task_id", "baseline", "candidate", "effect", "p_value", "n_b", "n_c"])


def test_terminal_bench_top_tasks_match_fisher_by_hand(terminal_bench, tb_comparison):
    flipped = tb_comparison.flipped_tasks(n=5)
    assert list(flipped.columns[:6]) == list(FLIPPED_COLUMNS)
    hand = _by_hand(terminal_bench[terminal_bench["submission"].isin([BASE, CAND])])
    hand["abs"] = hand["effect"].abs().round(12)
    for direction, sign in (("regressed", -1), ("improved", 1)):
        mine = flipped[flipped["direction"] == direction].reset_index(drop=True)
        expected = hand[np.sign(hand["effect"]) == sign].sort_values(["p_value", "abs", "task_id"],
                                                                      ascending=[True, False, True]).head(5)
        assert mine["task_id"].tolist() == expected["task_id"].tolist()
        for col in ("baseline", "candidate", "effect", "p_value"):
            np.testing.assert_allclose(mine[col], expected[col], rtol=1e-12, err_msg=col)
        assert mine["n_baseline"].tolist() == expected["n_b"].tolist()
        assert mine["n_candidate"].tolist() == expected["n_c"].tolist()
    # The strongest regression: 5/5 -> 0/5, Fisher's p = 2 / C(10, 5) = 1/126.
    top = flipped.iloc[0]
    assert (top["direction"], top["successes_baseline"], top["successes_candidate"]) == ("regressed", 5, 0)
    assert top["p_value"] == pytest.approx(2 / 252)
    assert flipped.attrs["tasks_compared"] == len(hand)
    assert flipped.attrs["regressed"] == int((hand["effect"] < 0).sum())
    assert flipped.attrs["improved"] == int((hand["effect"] > 0).sum())


def test_terminal_bench_unknown_outcomes_are_left_out_and_tasks_in_one_arm_counted(terminal_bench, tb_comparison):
    flipped = tb_comparison.flipped_tasks(n=100)
    # Two tasks have no known outcome in the candidate: they are counted, never listed.
    assert flipped.attrs["one_arm_tasks"] == 2
    assert set(flipped.attrs["one_arm_ids"]) == {"jupyter-notebook-server", "swe-bench-astropy-1"}
    assert not set(flipped["task_id"]) & set(flipped.attrs["one_arm_ids"])
    row = flipped.set_index("task_id").loc["get-bitcoin-nodes"]  # 4 of the baseline's 5 runs have no outcome
    assert (row["n_baseline"], row["missing_baseline"]) == (1, 4)
    assert row["values_baseline"].count(None) == 4
    assert len(row["runs_baseline"]) == 5 and all(r.startswith("failure_mode: ") for r in row["reasons_baseline"])
    # Every listed task moved; the BH column is an adjustment, never below the raw p-value.
    assert (flipped["effect"] != 0).all()
    assert (flipped["p_adjusted"] >= flipped["p_value"] - 1e-15).all()


def test_same_data_same_table(tb_comparison):
    a, b = tb_comparison.flipped_tasks(), tb_comparison.flipped_tasks()
    pd.testing.assert_frame_equal(a, b)
    assert len(a) <= 20


# --------------------------------------------------------------------------- #
# Synthetic data: properties
# --------------------------------------------------------------------------- #
def _frame(cells: list[tuple[str, str, float | None]]) -> pd.DataFrame:
    rows = [{"run_id": f"{arm}-{task}-{i}", "task_id": task, "arm": arm, "outcome": value}
            for i, (task, arm, value) in enumerate(cells)]
    data = pd.DataFrame(rows)
    data["outcome"] = data["outcome"].astype("boolean")
    return data


@st.composite
def experiments(draw):
    """Binary outcomes of 3-8 shared tasks with 1-4 runs per arm (some unknown), and tasks run by one arm only."""
    cells = []
    for t in range(draw(st.integers(3, 8))):
        rate = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
        for arm in ("baseline", "candidate"):
            for _ in range(draw(st.integers(1, 4))):
                value = draw(st.sampled_from([True, False, None]) if draw(st.booleans()) else st.just(rate > 0.5))
                cells.append((f"t{t}", arm, value))
    lonely = [f"only-{k}" for k in range(draw(st.integers(0, 2)))]
    for k, task in enumerate(lonely):
        cells += [(task, "baseline" if k % 2 == 0 else "candidate", True)] * 2
    return _frame(cells), lonely


def _flipped_or_skip(data: pd.DataFrame, **kwargs) -> pd.DataFrame:
    try:
        result = _compare(data, metrics=["outcome"], **kwargs)
    except CompareError:
        assume(False)
    return result.flipped_tasks(n=1000)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(experiments())
def test_swapping_arms_swaps_regressed_and_improved(experiment):
    data, _ = experiment
    ab = _flipped_or_skip(data, baseline="baseline", candidate="candidate", paired=False)
    ba = _flipped_or_skip(data, baseline="candidate", candidate="baseline", paired=False)
    swap = {"regressed": "improved", "improved": "regressed"}
    left = ab.set_index("task_id").sort_index()
    right = ba.set_index("task_id").sort_index()
    assert left.index.tolist() == right.index.tolist()
    assert left["direction"].map(swap).tolist() == right["direction"].tolist()
    np.testing.assert_allclose(left["effect"], -right["effect"], atol=1e-12)
    np.testing.assert_allclose(left["p_value"], right["p_value"], rtol=1e-12)
    np.testing.assert_allclose(left["baseline"], right["candidate"], rtol=1e-12)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(experiments(), st.sampled_from(["auto", False]))
def test_tasks_in_one_arm_are_never_listed_and_unknowns_never_read_as_zero(experiment, paired):
    data, lonely = experiment
    flipped = _flipped_or_skip(data, baseline="baseline", paired=paired)
    assert not set(flipped["task_id"]) & set(lonely)
    assert flipped.attrs["one_arm_tasks"] >= len(lonely)
    for _, row in flipped.iterrows():
        for arm in ("baseline", "candidate"):
            runs = data[(data["task_id"] == row["task_id"]) & (data["arm"] == arm)]["outcome"]
            known = runs.dropna().astype(int)
            assert row[f"n_{arm}"] == len(known) and row[f"missing_{arm}"] == runs.isna().sum()
            assert row[arm] == pytest.approx(known.mean())  # a mean over the known runs: NA is not a failure
            assert row[f"successes_{arm}"] == known.sum()
            assert list(row[f"values_{arm}"]) == [None if pd.isna(v) else bool(v) for v in runs]
        expected = fisher_exact([[row["successes_candidate"], row["n_candidate"] - row["successes_candidate"]],
                                 [row["successes_baseline"], row["n_baseline"] - row["successes_baseline"]]])[1]
        assert row["p_value"] == pytest.approx(expected)
    assert (flipped["direction"] == np.where(flipped["effect"] > 0, "improved", "regressed")).all()


def test_unknown_values_are_not_zero_in_a_designed_case():
    # Baseline: 2 successes and 3 unknown runs; candidate: 2 failures. As zeros the baseline would read 2/5.
    data = _frame([("t0", "baseline", True)] * 2 + [("t0", "baseline", None)] * 3 + [("t0", "candidate", False)] * 2
                  + [("t1", "baseline", True), ("t1", "candidate", True)] * 2)
    flipped = _flipped_or_skip(data, baseline="baseline")
    row = flipped.set_index("task_id").loc["t0"]
    assert (row["baseline"], row["n_baseline"], row["missing_baseline"]) == (1.0, 2, 3)
    assert row["p_value"] == pytest.approx(fisher_exact([[0, 2], [2, 0]])[1])
    assert "t1" not in flipped["task_id"].tolist()  # did not move
    assert flipped.attrs["unchanged"] == 1


def test_one_run_per_arm_gives_p_one():
    data = _frame([(f"t{i}", "baseline", i % 2 == 0) for i in range(6)] + [(f"t{i}", "candidate", i % 2 == 1)
                                                                          for i in range(6)])
    flipped = _flipped_or_skip(data, baseline="baseline")
    assert len(flipped) == 6 and (flipped["p_value"] == 1).all()


def test_n_most_regressed_then_n_most_improved():
    cells = []
    for t in range(6):  # t0..t2 regress (by 1, 2, 3 runs of 3), t3..t5 improve
        down = t < 3
        k = (t % 3) + 1
        cells += [(f"t{t}", "baseline", (i < k) if down else False) for i in range(3)]
        cells += [(f"t{t}", "candidate", False if down else (i < k)) for i in range(3)]
    flipped = _flipped_or_skip(_frame(cells), baseline="baseline")
    assert flipped["direction"].tolist() == ["regressed"] * 3 + ["improved"] * 3
    assert flipped["task_id"].tolist() == ["t2", "t1", "t0", "t5", "t4", "t3"]  # most evidence first
    two = _compare(_frame(cells), metrics=["outcome"], baseline="baseline").flipped_tasks(n=2)
    assert two["task_id"].tolist() == ["t2", "t1", "t5", "t4"]
    with pytest.raises(CompareError, match="`n` must be a whole number >= 1"):
        _compare(_frame(cells), metrics=["outcome"], baseline="baseline").flipped_tasks(n=0)


# --------------------------------------------------------------------------- #
# Other kinds: the permutation test, the direction of a lower-is-better metric
# --------------------------------------------------------------------------- #
def _continuous(base: dict[str, list[float]], cand: dict[str, list[float]], column: str = "latency") -> pd.DataFrame:
    rows = [{"run_id": f"{arm}-{t}-{i}", "task_id": t, "arm": arm, column: v}
            for arm, values in (("baseline", base), ("candidate", cand)) for t, vs in values.items()
            for i, v in enumerate(vs)]
    return pd.DataFrame(rows)


def _exact_p(base: list[float], cand: list[float], stat) -> float:
    pooled = np.array(base + cand)
    observed = abs(stat(np.array(cand)) - stat(np.array(base)))
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(base)):
        mask = np.zeros(len(pooled), bool)
        mask[list(chosen)] = True
        total += 1
        hits += abs(stat(pooled[~mask]) - stat(pooled[mask])) >= observed - 1e-9
    return hits / total


def test_continuous_lower_is_better_permutation_by_hand():
    base = {"a": [1.0, 2.0, 1.5], "b": [5.0, 5.5, 6.0, 5.2], "c": [3.0, 3.0]}
    cand = {"a": [4.0, 4.5, 5.0, 3.9], "b": [2.0, 2.5, 1.0], "c": [3.0, 3.0]}
    data = _continuous(base, cand)
    result = _compare(data, metrics={"latency": ("continuous", "lower")}, primary="latency", baseline="baseline")
    flipped = result.flipped_tasks().set_index("task_id")
    assert flipped.loc["a", "direction"] == "regressed"  # latency rose: worse
    assert flipped.loc["b", "direction"] == "improved"
    assert "c" not in flipped.index
    for task in ("a", "b"):
        assert flipped.loc[task, "effect"] == pytest.approx(np.mean(cand[task]) - np.mean(base[task]))
        assert flipped.loc[task, "p_value"] == pytest.approx(_exact_p(base[task], cand[task], np.mean))
    assert flipped["statistic"].eq("mean").all() and flipped["successes_baseline"].isna().all()


def test_cost_quantile_and_monte_carlo_path_are_reproducible():
    rng = np.random.default_rng(1)
    base = {"a": list(rng.lognormal(8, 0.3, 4)), "big": list(rng.lognormal(8, 0.3, 13))}
    cand = {"a": list(rng.lognormal(9, 0.3, 4)), "big": list(rng.lognormal(9, 0.3, 13))}
    assert math.comb(26, 13) > MAX_EXACT  # the random path
    data = _continuous(base, cand, "tokens")
    result = _compare(data, metrics={"tokens": "cost"}, primary="tokens p50", baseline="baseline")
    flipped = result.flipped_tasks().set_index("task_id")
    assert flipped["statistic"].eq("p50").all()
    median = lambda x: float(np.sort(x)[int(np.ceil(len(x) * 0.5)) - 1])  # inverse ECDF
    assert flipped.loc["a", "effect"] == pytest.approx(median(cand["a"]) - median(base["a"]))
    assert flipped.loc["a", "p_value"] == pytest.approx(_exact_p(base["a"], cand["a"], median))
    assert flipped.loc["a", "direction"] == "regressed"  # more tokens
    p_big = flipped.loc["big", "p_value"]  # C(26, 13) splits: random ones, (1 + hits) / (1 + 9999)
    assert 1 / 10_000 <= p_big < 0.01
    again = result.flipped_tasks().set_index("task_id")
    assert again.loc["big", "p_value"] == p_big


def test_ordinal_primary_uses_the_mean_level():
    scores = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=3))
    result = _compare(scores, metrics=["rubric"], primary="rubric")
    flipped = result.flipped_tasks()
    assert flipped["statistic"].eq("mean level").all() and len(flipped)
    row = flipped.iloc[0]
    runs = scores[scores["task_id"] == row["task_id"]]
    assert row["baseline"] == pytest.approx(runs.loc[runs["arm"] == "baseline", "rubric"].mean())
    assert row["runs_baseline"] == tuple(runs.loc[runs["arm"] == "baseline", "run_id"])
    # score's reasons and failure shapes travel with the runs
    reasons = runs.loc[runs["arm"] == "baseline", "reasons"].fillna("").tolist()
    assert all(r in shown for r, shown in zip(reasons, row["reasons_baseline"]))


def test_no_task_column_is_a_typed_error():
    scores = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=6, n_seeds=2))
    result = _compare(scores, metrics=["outcome"], cluster=None)
    with pytest.raises(CompareError, match="needs a task column"):
        result.flipped_tasks()


def test_an_ordered_categorical_primary_reads_as_its_levels_as_compare_reads_it():
    runs = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=3))
    words = runs.assign(rubric=pd.Categorical(runs["rubric"].map({0: "none", 1: "weak", 2: "good", 3: "best"}),
                                              categories=["none", "weak", "good", "best"], ordered=True))
    kwargs = dict(metrics={"rubric": "ordinal"}, primary="rubric", n_resamples=199)
    as_numbers = agentab.compare(runs, **kwargs).flipped_tasks(n=5)
    as_levels = agentab.compare(words, **kwargs).flipped_tasks(n=5)
    assert as_levels.attrs["tasks_compared"] == as_numbers.attrs["tasks_compared"] > 0
    assert as_levels[["task_id", "effect", "p_value"]].equals(as_numbers[["task_id", "effect", "p_value"]])
