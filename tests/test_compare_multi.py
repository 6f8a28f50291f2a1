"""Many arms: compare(candidate=[...] | "all"), the max-T adjustment across candidates, pairs, best, the CLI."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

import agentab
from agentab import CompareError, compare, stats
from agentab.cli import main
from agentab.comparison.multi import SCHEMA, MultiComparison

TB = Path("/work/shared/data/terminal-bench/tb_core_0.1.1_trials.csv")
B = 499


@pytest.fixture(scope="module")
def tb() -> pd.DataFrame:
    """The 13 Terminal-Bench submissions, 80 tasks x 5 runs, outcome = is_resolved (blanks missing)."""
    if not TB.exists():
        pytest.skip("the Terminal-Bench data is not on this machine")
    return agentab.load_results(TB, fields={"outcome": "is_resolved"})


def sweep(*, arms: int = 4, tasks: int = 24, seeds: int = 3, lifts: dict[str, float] | None = None,
          seed: int = 0) -> pd.DataFrame:
    """Runs of a baseline ("prod") and candidates "c1".."c{arms-1}" on the same tasks; task effects shared."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.5, tasks)
    rows = []
    for a in ["prod", *(f"c{i}" for i in range(1, arms))]:
        shift = (lifts or {}).get(a, 0.0)
        for t in range(tasks):
            p = 1 / (1 + np.exp(-(difficulty[t] + shift)))
            for s in range(seeds):
                rows.append({"arm": a, "task_id": f"t{t:03d}", "seed": s, "outcome": bool(rng.random() < p),
                             "tokens": float(rng.lognormal(8 - 0.2 * shift, 0.6))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- #
# The contract
# --------------------------------------------------------------------------- #
def test_candidates_map_to_two_arm_comparisons_with_the_adjustment_on_the_primary_row():
    data = sweep(arms=4, lifts={"c1": 1.5})
    multi = compare(data, baseline="prod", candidate=["c1", "c2", "c3"], metrics=["outcome", "tokens"], n_resamples=B)
    assert isinstance(multi, MultiComparison)
    assert list(multi.candidates) == ["c1", "c2", "c3"]
    for name, comp in multi.candidates.items():
        assert isinstance(comp, agentab.Comparison)
        alone = compare(data, baseline="prod", candidate=name, metrics=["outcome", "tokens"], n_resamples=B)
        # Everything but the primary row's adjusted p-value and assessment is the two-arm comparison's.
        left, right = comp.table.drop(columns=["p_adjusted", "assessment"]), alone.table.drop(columns=["p_adjusted", "assessment"])
        pd.testing.assert_frame_equal(left, right)
        pd.testing.assert_frame_equal(comp.table.iloc[1:], alone.table.iloc[1:])  # secondaries: Holm within candidate
        assert comp.table.loc[0, "p_adjusted"] >= alone.table.loc[0, "p_value"]
        assert comp.table.loc[0, "p_adjusted"] == multi.table.set_index("candidate").loc[name, "p_adjusted"]
    assert multi.candidates["c1"].decision.verdict == "ship"
    assert "adjusted across 3 candidates" in multi.candidates["c1"].decision.reasons[0]


def test_all_is_every_arm_but_the_baseline_and_a_one_element_list_is_the_two_arm_test():
    data = sweep(arms=4)
    multi = compare(data, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B)
    assert list(multi.candidates) == ["c1", "c2", "c3"]
    one = compare(data, baseline="prod", candidate=["c2"], metrics=["outcome"], n_resamples=B)
    alone = compare(data, baseline="prod", candidate="c2", metrics=["outcome"], n_resamples=B)
    pd.testing.assert_frame_equal(one.candidates["c2"].table, alone.table)  # one candidate: nothing to adjust
    assert one.candidates["c2"].verdict == alone.verdict


def test_a_string_candidate_is_todays_two_arm_comparison_even_when_an_arm_is_named_all():
    data = sweep(arms=2).replace({"arm": {"c1": "all"}})
    res = compare(data, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B)
    assert isinstance(res, agentab.Comparison) and res.candidate == "all"


def test_the_result_records_the_seed_and_reproduces():
    data = sweep(arms=3, tasks=40)
    first = compare(data, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B, seed=None)
    again = compare(data, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B, seed=first.settings.seed)
    pd.testing.assert_frame_equal(first.table, again.table)
    pd.testing.assert_frame_equal(first.pairs, again.pairs)
    assert all(c.settings.seed == first.settings.seed for c in first.candidates.values())


def test_display_json_and_frame():
    data = sweep(arms=3)
    multi = compare(data, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B)
    text = str(multi)
    for name in multi.candidates:
        assert sum(line.startswith(f"{name}: ") for line in text.splitlines()) == 1
    assert multi.best_statement in text and "<table" in multi._repr_html_()
    out = json.loads(json.dumps(multi.to_dict(), allow_nan=False))
    assert out["schema"] == SCHEMA == "agentab.comparison/2"
    assert set(out["verdicts"]) == {"c1", "c2"} and out["candidates"]["c1"]["schema"] == "agentab.comparison/1"
    assert out["settings"]["seed"] == 0 and out["settings"]["adjustment"] == "max-T step-down"
    assert list(multi.to_frame()["candidate"]) == ["c1", "c2"]
    assert "every pair of arms" in multi.text(pairs=True) and "every pair of arms" not in text


@pytest.mark.parametrize("kwargs, message", [
    ({"candidate": ["c1"]}, "named baseline"),
    ({"baseline": "prod", "candidate": ["nope"]}, "candidate arm 'nope' not in"),
    ({"baseline": "nope", "candidate": "all"}, "baseline arm 'nope' not in"),
    ({"baseline": "prod", "candidate": ["c1", "c1"]}, "more than once"),
    ({"baseline": "prod", "candidate": ["prod", "c1"]}, "also listed as a candidate"),
    ({"baseline": "prod", "candidate": []}, "no candidate"),
])
def test_bad_arms_are_one_line_errors(kwargs, message):
    with pytest.raises(CompareError, match=message):
        compare(sweep(arms=3), metrics=["outcome"], n_resamples=B, **kwargs)


# --------------------------------------------------------------------------- #
# The adjustment
# --------------------------------------------------------------------------- #
def _brute_force(diffs: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step-down and single-step max-|T| over every sign pattern, written out independently (no agentab code)."""
    h, n = diffs.shape
    u = 1.0 + 1e-6 * np.vstack([rankdata(s) for s in scores]) / n
    du = diffs * u

    def t_of(values: np.ndarray) -> np.ndarray:
        mean = values.mean(axis=-1)
        sd = values.std(axis=-1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mean / (sd / np.sqrt(n))
        return np.where((sd < 1e-12) & (np.abs(mean) < 1e-15), 0.0, t)

    observed = np.abs(t_of(du))
    flipped = np.abs(np.array([t_of(du * np.array(s)) for s in itertools.product((1.0, -1.0), repeat=n)]))
    tol = 1e-9 * np.maximum(1.0, observed)
    single = np.array([(flipped.max(axis=1) >= observed[j] - tol[j]).mean() for j in range(h)])
    order = np.argsort(-observed, kind="stable")
    step = np.empty(h)
    for j, hyp in enumerate(order):
        step[hyp] = (flipped[:, order[j:]].max(axis=1) >= observed[hyp] - tol[hyp]).mean()
    step[order] = np.maximum.accumulate(step[order])
    return step, single


def test_max_t_agrees_with_a_brute_force_max_t_over_the_same_sign_flips():
    rng = np.random.default_rng(3)
    diffs = rng.normal(0.3, 1, (4, 9)).round(2)
    diffs[1] -= 0.3
    scores = rng.random((4, 9))
    res = stats.max_t(diffs, scores, n_resamples=999)
    step, single = _brute_force(diffs, scores)
    assert res.exact and res.n_patterns == 2**9
    np.testing.assert_allclose(res.adjusted, step, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.single_step, single, rtol=0, atol=1e-12)
    assert (res.adjusted <= res.single_step + 1e-12).all() and (res.adjusted >= res.pvalue - 1e-12).all()


@pytest.mark.slow
def test_compare_on_eight_terminal_bench_tasks_is_the_brute_force_max_t(tb):
    arms_with_values = tb[tb["outcome"].notna()].groupby("task_id")["submission"].nunique()
    tasks = sorted(arms_with_values[arms_with_values == 13].index)[:8]  # a task mean in every arm
    data = tb[tb["task_id"].isin(tasks)]
    arms = sorted(data["submission"].unique())
    base, cands = arms[0], arms[1:6]
    multi = compare(data, arm="submission", baseline=base, candidate=cands, metrics=["outcome"], n_resamples=999)
    assert multi.settings.adjustment == "max-T step-down" and multi.settings.exact and multi.settings.n_patterns == 256
    means = data.groupby(["submission", "task_id"])["outcome"].mean().unstack()
    diffs = np.array([means.loc[c].to_numpy() - means.loc[base].to_numpy() for c in cands])
    scores = np.array([(means.loc[c].to_numpy() + means.loc[base].to_numpy()) / 2 for c in cands])
    step, _ = _brute_force(diffs, scores)
    got = np.array([multi.candidates[c].table.loc[0, "p_adjusted"] for c in cands])
    np.testing.assert_allclose(got, step, rtol=0, atol=1e-12)


@pytest.mark.slow  # validation: CI runs it with -m slow
def test_adjusted_never_below_the_two_arm_p_on_all_thirteen_terminal_bench_submissions(tb):
    base = "20250711_openhands_claude-4-sonnet"
    multi = compare(tb, arm="submission", baseline=base, candidate="all", metrics=["outcome"], n_resamples=B)
    assert len(multi.candidates) == 12 and multi.settings.adjustment == "max-T step-down"
    table = multi.table
    assert (table["p_adjusted"] >= table["p_value"]).all()
    for name, comp in list(multi.candidates.items())[:3]:  # the single-pair p-value is today's compare of that pair
        alone = compare(tb, arm="submission", baseline=base, candidate=name, metrics=["outcome"], n_resamples=B)
        assert comp.table.loc[0, "p_value"] == alone.table.loc[0, "p_value"]
        assert comp.table.loc[0, "p_adjusted"] >= alone.table.loc[0, "p_value"]
    pairs = multi.pairs
    assert len(pairs) == 13 * 12 // 2 and (pairs["p_adjusted"] >= pairs["p_value"] - 1e-12).all()


@pytest.mark.filterwarnings("ignore::agentab.errors.StatsWarning")  # few informative tasks: said, not the point here
def test_max_t_marginals_are_the_two_arm_tests_on_the_same_flips():
    rng = np.random.default_rng(1)
    for n, resamples in ((8, 999), (40, 999)):
        tasks = np.array([f"t{i:03d}" for i in range(n)])
        base = (rng.random(n) < 0.5).astype(float)
        cands = (rng.random((3, n)) < 0.5).astype(float)
        res = stats.max_t(cands - base, (cands + base) / 2, n_resamples=resamples, rng=np.random.default_rng(5))
        two = [stats.rate_difference(base, c, x_strata=tasks, y_strata=tasks, n_resamples=resamples,
                                     rng=np.random.default_rng(5)).pvalue for c in cands]
        np.testing.assert_allclose(res.pvalue, two, rtol=1e-12)
        assert (res.adjusted >= res.pvalue).all()


def test_holm_is_the_fallback_for_unpaired_arms():
    data = sweep(arms=3)
    data = data[(data["arm"] != "c1") | (data["task_id"] < "t012")]
    data = data[(data["arm"] == "c1") | (data["task_id"] >= "t012")]  # c1 ran other tasks than the others
    multi = compare(data, baseline="prod", candidate="all", metrics=["outcome", "tokens"], primary="tokens p50",
                    n_resamples=B)
    assert multi.settings.adjustment == "holm" and "Holm" in multi.adjustment and multi.pairs.empty
    from statsmodels.stats.multitest import multipletests

    expected = multipletests(multi.table["p_value"], method="holm")[1]
    np.testing.assert_allclose(multi.table["p_adjusted"], expected)
    assert multi.best is None and "no best-candidate statement" in multi.best_statement


def test_best_candidate_only_when_it_beats_every_other_arm():
    clear = sweep(arms=4, tasks=60, lifts={"c1": 0.2, "c2": 2.5, "c3": 0.0}, seed=1)
    multi = compare(clear, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B)
    assert multi.best == "c2" and "at most alpha = 0.05" in multi.best_statement
    tied = sweep(arms=4, tasks=60, lifts={"c1": 2.5, "c2": 2.5}, seed=1)
    multi = compare(tied, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B)
    assert multi.best is None and multi.best_statement.startswith("no single best candidate")


def test_the_max_t_runs_on_the_shared_tasks_when_missing_values_differ_by_arm():
    data = sweep(arms=3, tasks=30)
    data["outcome"] = data["outcome"].astype("boolean")
    data.loc[(data["arm"] == "c1") & (data["task_id"] == "t000"), "outcome"] = pd.NA
    multi = compare(data, baseline="prod", candidate="all", metrics=["outcome"], n_resamples=B)
    assert multi.settings.adjustment == "max-T step-down" and any("29 tasks every arm" in n for n in multi.notes)
    assert (multi.table["p_adjusted"] >= multi.table["p_value"]).all()


# --------------------------------------------------------------------------- #
# The command line
# --------------------------------------------------------------------------- #
def _table(tmp_path: Path, data: pd.DataFrame) -> Path:
    path = tmp_path / "sweep.csv"
    data.to_csv(path, index=False)
    return path


def test_cli_one_verdict_line_per_candidate_and_the_gate(tmp_path, capsys):
    path = _table(tmp_path, sweep(arms=4, tasks=30, lifts={"c1": -2.5}))
    argv = ["compare", str(path), "--arm-column", "arm", "--baseline", "prod", "--n-resamples", "199", "-q",
            "--metric", "outcome"]
    code = main([*argv, "--candidates", "c1", "c2"])
    out = capsys.readouterr().out
    assert code == 0
    assert [line.split(":")[0] for line in out.splitlines() if re.match(r"c\d: ", line)] == ["c1", "c2"]
    assert "DON'T SHIP" in next(line for line in out.splitlines() if line.startswith("c1:"))
    assert main([*argv, "--candidates", "c1", "c2", "--fail-on", "dont-ship"]) == 3
    assert main([*argv, "--candidates", "c2", "c3", "--fail-on", "inconclusive"]) == 4
    capsys.readouterr()
    assert main([*argv, "--all-pairs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "agentab.comparison/2" and set(out["verdicts"]) == {"c1", "c2", "c3"}
    assert len(out["pairs"]) == 6


@pytest.mark.slow
def test_cli_many_arm_errors(tmp_path, capsys):
    path = _table(tmp_path, sweep(arms=3, tasks=10))
    base = ["compare", str(path), "--arm-column", "arm", "-q"]
    assert main([*base, "--candidates", "c1"]) == 2
    assert "name it with --baseline" in capsys.readouterr().err
    assert main([*base, "--baseline", "nope"]) == 2
    assert "--baseline: no arm 'nope'" in capsys.readouterr().err
    assert main([*base, "--baseline", "prod", "--names", "prod", "c1"]) == 2
    assert main([*base, "--baseline", "prod", "--report", str(tmp_path / "r.html")]) in (0, 3, 4)  # many arms report
    assert (tmp_path / "r.html").is_file()
