"""Profiles: every system's score vector, each cell against a hand computation, the bootstrap by brute force,
the Pareto frontier by brute force, NA handling, and hostile names passed literally in the figures."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab import CompareError
from agentab.comparison.profiles import CELL_COLUMNS, MIN_TASKS, profile

TB = Path("/work/shared/data/terminal-bench/tb_core_0.1.1_trials.csv")
TB_METRICS = {"is_resolved": "binary", "agent_duration_sec": "cost", "n_tests_passed": "count"}
ORCHESTRATORS = ("20250902_orchestrator_claude-4-sonnet", "20250902_orchestrator_qwen-3-coder-480B",
                 "20250906_orchestrator_claude-4.1-opus")


@pytest.fixture(scope="module")
def terminal_bench() -> pd.DataFrame:
    if not TB.is_file():
        pytest.skip(f"{TB} is not on this machine")
    return pd.read_csv(TB)


@pytest.fixture(scope="module")
def tb_profile(terminal_bench):
    return profile(terminal_bench, arm="submission", outcome="is_resolved", metrics=TB_METRICS,
                   describe=("model", "agent"), n_resamples=400, seed=3)


def _resolved(trials: pd.DataFrame) -> pd.Series:
    """is_resolved as 1/0 with a blank unknown (never a failure)."""
    return trials["is_resolved"].map({True: 1.0, False: 0.0, "True": 1.0, "False": 0.0})


def _hand_rate(trials: pd.DataFrame, values: pd.Series) -> float:
    """Each task's mean over its known runs, averaged over the tasks with one (tasks weigh the same)."""
    per_task = values.groupby(trials["task_id"]).mean()
    return float(per_task.dropna().mean())


def _hand_quantile(trials: pd.DataFrame, values: pd.Series, q: float) -> float:
    """The smallest known value v at which the tasks' averaged share of runs <= v reaches q (brute force)."""
    known = values.notna().to_numpy()
    v, tasks = values.to_numpy(dtype=float)[known], trials["task_id"].to_numpy()[known]
    candidates = np.unique(v)
    shares = np.mean([(v[tasks == t][None, :] <= candidates[:, None]).mean(axis=1) for t in np.unique(tasks)], axis=0)
    assert (shares >= q - 1e-9).any()
    return float(candidates[np.argmax(shares >= q - 1e-9)])


# --------------------------------------------------------------------------- #
# Real data: Terminal-Bench, 13 submissions x 80 tasks x 5 runs
# --------------------------------------------------------------------------- #
def test_every_cell_matches_a_hand_computation(terminal_bench, tb_profile):
    est = tb_profile.estimates()
    assert len(tb_profile.systems) == 13
    assert list(tb_profile.columns) == ["is_resolved", "agent_duration_sec p50", "agent_duration_sec p95",
                                        "n_tests_passed p50", "n_tests_passed p95"]
    for system, trials in terminal_bench.groupby("submission"):
        assert est.loc[system, "is_resolved"] == pytest.approx(_hand_rate(trials, _resolved(trials)), abs=1e-12)
        for metric in ("agent_duration_sec", "n_tests_passed"):
            values = trials[metric].astype(float)
            for q in (0.5, 0.95):
                column = f"{metric} p{100 * q:g}"
                if values.notna().any():
                    assert est.loc[system, column] == _hand_quantile(trials, values, q), (system, column)
                else:
                    assert math.isnan(est.loc[system, column])
    tasks = tb_profile.estimates("n_tasks")
    assert (tasks["is_resolved"] <= 80).all() and (tasks["is_resolved"] >= 70).all()


def test_rates_weigh_tasks_as_summarize_does(terminal_bench, tb_profile):
    runs = terminal_bench.rename(columns={"submission": "arm"}).assign(
        outcome=_resolved(terminal_bench), harness=terminal_bench["agent"], n_steps=np.nan, n_errors=np.nan,
        tokens=np.nan, cost_usd=np.nan)
    summary = agentab.summarize(runs)
    est = tb_profile.estimates()["is_resolved"]
    for system in tb_profile.systems:
        assert est[system] == pytest.approx(summary.loc[system, "success_rate"], abs=1e-12)
    assert list(tb_profile.descriptions.columns) == ["model", "agent", "runs", "tasks"]


def test_intervals_contain_their_estimates_and_rows_are_ordered(tb_profile):
    cells = tb_profile.frame()
    assert list(cells.columns) == list(CELL_COLUMNS)
    with_interval = cells.dropna(subset=["ci_low", "ci_high"])
    assert len(with_interval) == 13 * 5 - 3 * 2  # Orchestrator records no agent time
    assert (with_interval["ci_low"] <= with_interval["estimate"]).all()
    assert (with_interval["estimate"] <= with_interval["ci_high"]).all()
    assert (with_interval["ci_low"] < with_interval["ci_high"]).any()
    outcome = tb_profile.estimates()["is_resolved"].to_numpy()
    assert (np.diff(outcome) <= 0).all()
    assert tb_profile.settings.joint and tb_profile.settings.seed == 3 and tb_profile.settings.n_resamples == 400


def test_a_metric_missing_for_an_arm_is_na_there(tb_profile):
    cells = tb_profile.frame().set_index(["system", "column"])
    for system in ORCHESTRATORS:
        row = cells.loc[(system, "agent_duration_sec p95")]
        assert math.isnan(row["estimate"]) and math.isnan(row["ci_low"]) and row["n_runs"] == 0
        assert row["note"] == "no known value"
    wide = tb_profile.table().set_index("system")
    assert wide.loc[ORCHESTRATORS[0], "agent_duration_sec p95"] == "n/a"
    assert wide.loc[ORCHESTRATORS[0], "agent"] == "Orchestrator"
    record = json.loads(json.dumps(tb_profile.to_dict(), allow_nan=False))
    missing = [c for c in record["cells"] if c["system"] == ORCHESTRATORS[0] and c["column"].startswith("agent_")]
    assert missing and all(c["estimate"] is None for c in missing)


def test_the_same_seed_gives_the_same_profile(terminal_bench, tb_profile):
    again = profile(terminal_bench, arm="submission", outcome="is_resolved", metrics=TB_METRICS,
                    describe=("model", "agent"), n_resamples=400, seed=tb_profile.settings.seed)
    pd.testing.assert_frame_equal(again.frame(), tb_profile.frame())
    other = profile(terminal_bench, arm="submission", outcome="is_resolved", metrics=TB_METRICS,
                    describe=("model", "agent"), n_resamples=400, seed=4)
    assert not np.allclose(other.frame()["ci_low"].fillna(-1), tb_profile.frame()["ci_low"].fillna(-1))
    pd.testing.assert_series_equal(other.frame()["estimate"], tb_profile.frame()["estimate"])


def test_the_frontier_by_brute_force(tb_profile):
    x, y = "agent_duration_sec p95", "is_resolved"
    est = tb_profile.estimates()[[x, y]].dropna()
    expected = set()
    for a in est.index:
        beaten = any(est.loc[b, x] <= est.loc[a, x] and est.loc[b, y] >= est.loc[a, y]
                     and (est.loc[b, x] < est.loc[a, x] or est.loc[b, y] > est.loc[a, y]) for b in est.index if b != a)
        if not beaten:
            expected.add(a)
    frontier = tb_profile.frontier(x)
    assert set(frontier) == expected and len(frontier) >= 1
    assert list(est.loc[frontier, x]) == sorted(est.loc[frontier, x])
    assert not set(frontier) & set(ORCHESTRATORS)  # unknown x: not on any frontier
    table = tb_profile.dominance(x)
    low, high = tb_profile.estimates("ci_low"), tb_profile.estimates("ci_high")
    for row in table.itertuples():
        for other in row.beaten_with_confidence_by:  # better on both, the intervals apart
            assert high.loc[other, x] < low.loc[row.system, x] and low.loc[other, y] > high.loc[row.system, y]
            assert other in row.beaten_by


def test_the_bootstrap_by_explicit_resampling(terminal_bench):
    """The weights shortcut against rebuilding every resample's runs: same tasks drawn, same replicates."""
    systems = ["20250711_openhands_claude-4-sonnet", "20250811_cursor-cli_claude-4-sonnet"]
    tasks = sorted(terminal_bench["task_id"].unique())[:20]
    data = terminal_bench[terminal_bench["submission"].isin(systems) & terminal_bench["task_id"].isin(tasks)]
    got = profile(data, arm="submission", outcome="is_resolved", metrics=TB_METRICS, n_resamples=150, seed=11)
    assert got.settings.joint
    rng = np.random.default_rng(np.random.SeedSequence(11))
    draws = rng.multinomial(20, np.full(20, 1 / 20), size=150)  # one draw for both arms: they share the tasks
    cells = got.frame().set_index(["system", "column"])
    for system in systems:
        trials = data[data["submission"] == system]
        reps: dict[str, list[float]] = {c: [] for c in got.columns}
        rows_of = [np.flatnonzero(trials["task_id"].to_numpy() == t) for t in tasks]
        for counts in draws:
            picked = np.repeat(np.arange(20), counts)  # each drawn task keeps all its runs, as a new task
            boot = trials.iloc[np.concatenate([rows_of[t] for t in picked])].assign(
                task_id=np.concatenate([[k] * len(rows_of[t]) for k, t in enumerate(picked)]))
            reps["is_resolved"].append(_hand_rate(boot, _resolved(boot)))
            for metric in ("agent_duration_sec", "n_tests_passed"):
                for q in (0.5, 0.95):
                    reps[f"{metric} p{100 * q:g}"].append(_hand_quantile(boot, boot[metric].astype(float), q))
        low, high = np.percentile(reps["is_resolved"], [2.5, 97.5])
        assert cells.loc[(system, "is_resolved"), "ci_low"] == pytest.approx(low, abs=1e-12)
        assert cells.loc[(system, "is_resolved"), "ci_high"] == pytest.approx(high, abs=1e-12)
        for column in got.columns[1:]:
            assert cells.loc[(system, column), "ci_low"] == np.percentile(reps[column], 2.5, method="lower")
            assert cells.loc[(system, column), "ci_high"] == np.percentile(reps[column], 97.5, method="higher")


def test_arms_with_different_tasks_are_resampled_separately(terminal_bench):
    tasks = sorted(terminal_bench["task_id"].unique())
    keep = (terminal_bench["submission"] != ORCHESTRATORS[0]) | terminal_bench["task_id"].isin(tasks[:3])
    got = profile(terminal_bench[keep], arm="submission", outcome="is_resolved", metrics={"is_resolved": "binary"},
                  n_resamples=99, seed=0)
    assert not got.settings.joint
    row = got.frame().set_index(["system", "column"]).loc[(ORCHESTRATORS[0], "is_resolved")]
    assert row["n_tasks"] == 3 < MIN_TASKS and math.isnan(row["ci_low"]) and not math.isnan(row["estimate"])
    assert "too few tasks" in row["note"]
    assert any(n.startswith(ORCHESTRATORS[0]) and "too few tasks" in n for n in got.notes)
    assert "[no interval]" in got.table().set_index("system").loc[ORCHESTRATORS[0], "is_resolved"]


# --------------------------------------------------------------------------- #
# Score tables: rubric shares, trajectory rates, costs
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=2)
    return agentab.score(traces, agentab.datasets.example_specs(n_tasks=12))


def test_a_score_table_profile(scores):
    got = profile(scores, n_resamples=199)
    assert got.columns[:5] == ("outcome", "rubric 0", "rubric 1", "rubric 2", "rubric 3")
    for column in ("loop", "cap_hit", "non_terminated", "tokens p50", "tokens p95", "cost_usd p95", "latency_s p95",
                   "n_steps p95"):
        assert column in got.columns
    assert "repeats p95" not in got.columns and any("score-table counts left out" in n for n in got.notes)
    est = got.estimates()
    shares = est[["rubric 0", "rubric 1", "rubric 2", "rubric 3"]].sum(axis=1)
    assert np.allclose(shares, 1.0)
    for system, runs in scores.groupby("arm", observed=True):
        for level in range(4):
            hand = _hand_rate(runs, (runs["rubric"].astype("Float64") == level).astype(float).where(runs["rubric"].notna()))
            assert est.loc[system, f"rubric {level}"] == pytest.approx(hand, abs=1e-12)
        loop = runs["loop"].astype("Float64").astype(float)
        assert est.loc[system, "loop"] == pytest.approx(_hand_rate(runs, loop), abs=1e-12)
        assert est.loc[system, "tokens p95"] == _hand_quantile(runs, runs["tokens"].astype(float), 0.95)
    assert list(got.descriptions.columns) == ["model", "harness", "runs", "tasks"]
    frame = got.to_frame()
    assert list(frame.columns) == list(CELL_COLUMNS) and len(frame) == len(got.systems) * len(got.columns)


def test_views_escape_and_never_show_zero_for_unknown(scores):
    data = scores.copy()
    data["arm"] = data["arm"].astype(str).map({"baseline": "<b>x</b> & $y$", "candidate": "candidate"})
    data.loc[data["arm"] == "candidate", "tokens"] = pd.NA
    got = profile(data, n_resamples=99)
    text, page = str(got), got._repr_html_()
    assert "<b>x</b> & $y$" in text and "&lt;b&gt;x&lt;/b&gt; &amp; $y$" in page and "<b>x</b>" not in page
    wide = got.table().set_index("system")
    assert wide.loc["candidate", "tokens p95"] == "n/a"
    assert math.isnan(got.estimates().loc["candidate", "tokens p95"])


def test_no_task_column_means_runs_are_their_own_tasks(scores):
    got = profile(scores.drop(columns=["task_id"]), metrics=["outcome"], n_resamples=99)
    assert got.settings.cluster is None and not got.settings.joint
    assert any("no task column" in n for n in got.notes)
    assert (got.estimates("n_tasks")["outcome"] == 24).all()


def test_refusals(scores):
    with pytest.raises(CompareError, match="no arm column"):
        profile(scores, arm="nope")
    with pytest.raises(CompareError, match="outcome column 'nope'"):
        profile(scores, outcome="nope")
    with pytest.raises(CompareError, match="outcome 'tokens' is cost"):
        profile(scores, outcome="tokens", metrics=["tokens"])
    with pytest.raises(CompareError, match="confidence_level"):
        profile(scores, level=1.5)
    with pytest.raises(CompareError, match="n_resamples"):
        profile(scores, n_resamples=0)
    hostile = scores.assign(tokens=scores["tokens"].astype(float))
    hostile.loc[0, "tokens"] = np.inf
    with pytest.raises(CompareError, match="'tokens' has 1 infinite"):
        profile(hostile, metrics=["outcome", "tokens"])
    hostile.loc[0, "tokens"] = 1e300
    with pytest.raises(CompareError, match="beyond"):
        profile(hostile, metrics=["outcome", "tokens"])
    left = profile(hostile, n_resamples=99)  # not named: left out, with a note
    assert "tokens p95" not in left.columns and any("'tokens' left out" in n for n in left.notes)
    got = profile(scores, metrics={"outcome": "binary", "latency_s": ("cost", "neither")}, n_resamples=99)
    with pytest.raises(CompareError, match="no direction"):
        got.frontier("latency_s p95")
    with pytest.raises(CompareError, match="not a column of the profile"):
        got.frontier("tokens p95")


# --------------------------------------------------------------------------- #
# Figures
# --------------------------------------------------------------------------- #
HOSTILE = "$\\alpha$ $PATH_$HOME ^{2} \\frac{1}{2}"


def _texts(figure) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in figure.findobj(Text)]


def test_figures_pass_hostile_names_literally(scores):
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from agentab.reporting._profile_figures import pareto_figure, profile_figure

    data = scores.copy()
    data["arm"] = data["arm"].astype(str).map({"baseline": HOSTILE, "candidate": "plain"})
    got = profile(data, metrics=["outcome", "tokens", "loop"], n_resamples=99)
    for figure in (profile_figure(got), pareto_figure(got, x="tokens p95")):
        assert isinstance(figure, Figure)
        assert all(not t.get_parse_math() for t in figure.findobj(Text))
        assert any(HOSTILE in text.replace("\n", " ") for text in _texts(figure))
        figure.savefig(io.BytesIO(), format="png")  # renders: no math-text parse error
    pareto = pareto_figure(got, x="tokens p95")
    named = next(t for t in _texts(pareto) if t.startswith("frontier (by point estimate):"))
    for system in got.frontier("tokens p95"):
        assert system in named


def test_profile_figure_rows_follow_the_profile(tb_profile):
    from agentab.reporting._profile_figures import profile_figure

    figure = profile_figure(tb_profile, columns=["is_resolved", "agent_duration_sec p95"])
    first = figure.axes[0]
    labels = [t.get_text().split("\n")[0] for t in first.get_yticklabels()]
    assert labels == list(tb_profile.systems)
    assert first.get_ylim()[0] > first.get_ylim()[1]  # the first system on top
    with pytest.raises(KeyError):
        profile_figure(tb_profile, columns=["nope"])


def test_a_log_cost_axis_shows_plain_numbers_not_math_text():
    from agentab.reporting.plots import pareto_figure

    rng = np.random.default_rng(0)
    rows = [{"task_id": f"t{t}", "arm": arm, "seed": s, "outcome": bool(rng.random() < 0.5),
             "tokens": int(10 ** (2 + 2 * (arm == "b")) * rng.random()) + 1}
            for t in range(20) for arm in "ab" for s in range(2)]
    figure = pareto_figure(profile(pd.DataFrame(rows), metrics={"outcome": "binary", "tokens": "cost"},
                                   n_resamples=99), x="tokens p95")
    figure.canvas.draw()
    axis = figure.axes[0]
    labels = [t.get_text() for t in axis.get_xticklabels()]
    assert axis.get_xscale() == "log" and labels and not any("$" in text for text in labels)
