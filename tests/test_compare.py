"""agentab.compare and agentab.decide: routing, designs, multiplicity, guardrails, decision."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

import agentab
from agentab import CompareError, compare
from agentab.comparison import TABLE_COLUMNS
from agentab.comparison.decide import parse_guardrails

B = 999  # resamples: enough for decisions that are clear-cut in these data


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    traces = agentab.datasets.example_experiment(seed=0)
    return agentab.score(traces, agentab.datasets.example_specs())


def synthetic(
    *,
    n_tasks: int = 30,
    seeds: int = 4,
    base_rate: float = 0.5,
    lift: float = 0.0,
    cost_factor: float = 1.0,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per run: task difficulty shared by both arms (paired), long-tailed tokens."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.5, n_tasks)
    rows = []
    for arm, shift, factor in (("baseline", 0.0, 1.0), ("candidate", lift, cost_factor)):
        for t in range(n_tasks):
            p = 1 / (1 + np.exp(-(np.log(base_rate / (1 - base_rate)) + difficulty[t] + shift)))
            for s in range(seeds):
                rows.append(
                    {
                        "run_id": f"{arm}-{t}-{s}",
                        "task_id": f"t{t:03d}",
                        "arm": arm,
                        "outcome": bool(rng.random() < p),
                        "rubric": int(rng.integers(0, 4)),
                        "tokens": float(rng.lognormal(8, 1) * factor),
                        "score": float(rng.normal(0, 1)),
                    }
                )
    return pd.DataFrame(rows)


KINDS = {"outcome": "binary", "rubric": "ordinal", "tokens": "cost", "score": "continuous"}


# --------------------------------------------------------------------------- #
# The example experiment
# --------------------------------------------------------------------------- #
def test_example_decision_is_ship_with_reasons(scores):
    result = compare(
        scores,
        metrics=["outcome", "rubric", "tokens", "cap_hit"],
        guardrails={"tokens": "p95 <= +10%"},
        n_resamples=1999,
        seed=0,
    )
    assert result.decision.verdict == "ship"
    assert result.decision.reasons[0].startswith("primary metric improved: outcome")
    assert "holds" in result.decision.reasons[1]
    assert result.design["kind"] == "paired" and result.design["seeds"] == "5"
    table = result.table
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert table.iloc[0]["metric"] == "outcome" and table.iloc[0]["role"] == "primary"
    # The example's candidate has a loop guard: cap hits fall, and that is an explanation, not a reason.
    assert any(e.startswith("cap_hit") for e in result.decision.explanations)
    # rows per kind
    assert set(table["metric"]) >= {"outcome", "outcome pass^5", "rubric", "tokens p50", "tokens p95", "tokens mean"}
    assert table.set_index("metric").loc["rubric", "statistic"] == "Cliff's delta"
    assert table.set_index("metric").loc["tokens mean", "assessment"] == "descriptive"
    assert "top 5% of runs carry" in table.set_index("metric").loc["tokens mean", "warnings"]
    assert set(result.levels["metric"]) == {"rubric"}
    assert result.levels.groupby("metric")[["baseline", "candidate"]].sum().round(9).eq(1).all().all()
    text = str(result)
    assert "VERDICT: ship" in text and "paired by task (60 tasks)" in text
    assert "Verdict: ship" in result._repr_html_()


def test_default_metrics_are_what_score_recorded(scores):
    result = compare(scores, n_resamples=199, seed=1)
    recorded = agentab.metric_kinds(scores)
    compared = set(result.metrics.index)
    assert compared <= set(recorded.index)
    # metrics without values in an arm are left out with a note, the rest compared
    left_out = set(recorded.index) - compared
    for name in left_out:
        assert any(name in note for note in result.notes)
    assert (result.metrics["source"] == "score").all()


# --------------------------------------------------------------------------- #
# Routing, direction, multiplicity
# --------------------------------------------------------------------------- #
def test_routing_by_kind_and_method_named():
    data = synthetic()
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    t = result.table.set_index("metric")
    assert t.loc["outcome", "method"].startswith("difference in success rate; studentized permutation test (task-level t")
    assert "sign flips of whole tasks" in t.loc["outcome", "method"] and "test inversion" in t.loc["outcome", "method"]
    assert t.loc["rubric", "method"].startswith("Cliff's delta")
    assert "percentile bootstrap" in t.loc["tokens p95", "method"] and "BCa is unreliable" in t.loc["tokens p95", "method"]
    assert t.loc["score", "method"].startswith("difference in means")
    assert t.loc["outcome pass^4", "statistic"] == "pass^4"
    np.testing.assert_allclose(t.loc["tokens p95", "ratio"], t.loc["tokens p95", "candidate"] / t.loc["tokens p95", "baseline"])
    assert isinstance(result.metric("tokens p95"), agentab.stats.QuantileResult)
    assert result.metric("outcome").pvalue == t.loc["outcome", "p_value"]
    with pytest.raises(KeyError, match="no metric 'nope'"):
        result.metric("nope")


def test_holm_adjustment_matches_statsmodels():
    result = compare(synthetic(lift=1.0), metrics=KINDS, n_resamples=B, seed=0)
    t = result.table
    family = t[(t["role"] == "secondary") & t["p_value"].notna()]
    expected = multipletests(family["p_value"], method="holm")[1]
    np.testing.assert_allclose(family["p_adjusted"], expected)
    primary = t[t["role"] == "primary"].iloc[0]
    assert primary["p_adjusted"] == primary["p_value"]


def test_cost_increase_is_never_an_improvement():
    data = synthetic(n_tasks=40, cost_factor=3.0, seed=3)
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    t = result.table.set_index("metric")
    assert t.loc["tokens p50", "effect"] > 0 and t.loc["tokens p50", "ratio"] > 2
    assert t.loc["tokens p50", "assessment"] == "worse"
    assert t.loc["tokens p50", "direction"] == "lower"
    # declaring the opposite direction flips the assessment: it is the direction, not the sign, that decides
    flipped = compare(data, metrics={**KINDS, "tokens": ("cost", "higher")}, n_resamples=B, seed=0)
    assert flipped.table.set_index("metric").loc["tokens p50", "assessment"] == "better"


def test_inferred_kinds_have_no_direction_and_say_so():
    data = synthetic().rename(columns={"outcome": "solved", "tokens": "spend"})[["task_id", "arm", "solved", "spend", "score"]]
    data["steps"] = np.arange(len(data)) % 7
    with pytest.raises(CompareError, match="primary metric 'solved' has no direction"):
        compare(data, primary="solved", n_resamples=B, seed=0)
    result = compare(data, metrics={"solved": "binary", "steps": None, "spend": None}, primary="solved", n_resamples=B, seed=0)
    kinds = result.metrics
    assert kinds.loc["solved", "direction"] == "higher" and kinds.loc["solved", "source"] == "declared"
    assert kinds.loc["steps", "kind"] == "count" and kinds.loc["steps", "source"] == "inferred"
    assert kinds.loc["spend", "kind"] == "continuous" and kinds.loc["spend", "direction"] == "neither"
    assert any("inferred" in n for n in result.notes)
    assert set(result.table.loc[result.table["direction"] == "neither", "assessment"]) <= {"changed", "no evidence", "descriptive"}
    # names that agentab.score records keep their registered kind even without the table's attrs
    known = compare(synthetic(), metrics=["outcome", "tokens"], n_resamples=B, seed=0)
    assert known.metrics.loc["tokens", "kind"] == "cost" and known.metrics.loc["tokens", "direction"] == "lower"


# --------------------------------------------------------------------------- #
# Designs
# --------------------------------------------------------------------------- #
def test_pairs_by_task_not_by_row_order():
    data = synthetic(lift=0.8)
    one = compare(data, metrics=KINDS, n_resamples=B, seed=5)
    cand = data[data["arm"] == "candidate"].sample(frac=1.0, random_state=1)
    shuffled = pd.concat([data[data["arm"] == "baseline"], cand], ignore_index=True)
    two = compare(shuffled, metrics=KINDS, n_resamples=B, seed=5)
    cols = ["effect", "ci_low", "ci_high", "p_value"]
    pd.testing.assert_frame_equal(one.table[cols], two.table[cols])


def test_designs_detected_and_overridable():
    data = synthetic(lift=0.5)
    assert compare(data, metrics=KINDS, n_resamples=B, seed=0).design["kind"] == "paired"
    assert compare(data, metrics=KINDS, paired=False, n_resamples=B, seed=0).design["kind"] == "clustered"
    none = compare(data, metrics=KINDS, cluster=None, n_resamples=B, seed=0)
    assert none.design["kind"] == "independent"
    assert "outcome pass^4" not in set(none.table["metric"])  # pass^k needs tasks
    no_column = compare(data.drop(columns="task_id"), metrics=KINDS, n_resamples=B, seed=0)
    assert no_column.design["kind"] == "independent"
    assert no_column.design.warning.startswith("runs treated as independent: the data has no task column 'task_id'")
    assert not any("task column" in n for n in no_column.notes)  # said first, not among the notes at the end
    assert str(no_column).splitlines()[2] == f"WARNING: {no_column.design.warning}"
    assert no_column.to_dict()["design"]["warning"] == no_column.design.warning
    assert none.design.warning == ""  # cluster=None is the caller's own choice
    with pytest.raises(CompareError, match="no cluster column 'task'"):
        compare(data, metrics=KINDS, cluster="task", n_resamples=B, seed=0)
    with pytest.raises(CompareError, match="never paired by row order"):
        compare(data, metrics=KINDS, cluster=None, paired=True, n_resamples=B, seed=0)


def test_ignoring_tasks_overstates_certainty():
    # Strong task effects and 5 seeds: the runs-as-independent analysis is far more confident.
    data = synthetic(n_tasks=20, seeds=5, lift=0.4, seed=11)
    data = data[~data["task_id"].isin(["t000", "t001"]) | (data["arm"] == "baseline")]
    paired = compare(data, metrics={"outcome": "binary"}, paired=False, n_resamples=B, seed=0).table.iloc[0]
    naive = compare(data, metrics={"outcome": "binary"}, cluster=None, n_resamples=B, seed=0).table.iloc[0]
    assert (naive["ci_high"] - naive["ci_low"]) < 0.8 * (paired["ci_high"] - paired["ci_low"])


def test_tasks_in_one_arm_are_dropped_and_counted():
    data = synthetic(n_tasks=30)
    data = data[~((data["arm"] == "candidate") & data["task_id"].isin(["t000", "t001", "t002"]))]
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    assert result.design["dropped_tasks"] == (3, 0)
    assert result.design["dropped_runs"] == (12, 0)
    assert "dropped from the paired comparison: 3 baseline (12 runs)" in result.table.iloc[0]["warnings"]
    assert result.table.iloc[0]["tasks"] == 27


def test_unequal_seeds_give_task_averaged_rate():
    data = synthetic(n_tasks=12, seeds=4, seed=2)
    data = data.drop(index=data.index[(data["arm"] == "candidate") & data["run_id"].str.endswith(("-2", "-3"))][:10])
    result = compare(data, metrics={"outcome": "binary"}, n_resamples=B, seed=0)
    per_task = data.groupby(["arm", "task_id"])["outcome"].mean().groupby("arm").mean()
    row = result.table.iloc[0]
    assert row["baseline"] == pytest.approx(per_task["baseline"])
    assert row["candidate"] == pytest.approx(per_task["candidate"])
    assert result.design["seeds"] == "2-4"


def test_reproducible_and_metric_streams_independent():
    data = synthetic(lift=0.5)
    one = compare(data, metrics=KINDS, n_resamples=B, seed=42)
    two = compare(data, metrics=KINDS, n_resamples=B, seed=42)
    pd.testing.assert_frame_equal(one.table, two.table)
    fewer = compare(data, metrics={"outcome": "binary", "score": "continuous"}, n_resamples=B, seed=42)
    for name in ("outcome", "score"):
        a = one.table.set_index("metric").loc[name, ["effect", "ci_low", "ci_high", "p_value"]]
        b = fewer.table.set_index("metric").loc[name, ["effect", "ci_low", "ci_high", "p_value"]]
        pd.testing.assert_series_equal(a, b)
    other = compare(data, metrics=KINDS, n_resamples=B, seed=43)
    assert not one.table["p_value"].equals(other.table["p_value"])


# --------------------------------------------------------------------------- #
# Guardrails and the decision
# --------------------------------------------------------------------------- #
def test_guardrail_grammar():
    kinds = {"tokens": "cost", "loop": "binary", "rubric": "ordinal", "acc": "continuous"}
    rails = parse_guardrails(
        {"tokens": ["p95 <= +10%", "p50<=0%"], "loop": "rate <= +0.02", "rubric": "delta >= -0.1", "acc": "mean >= -0.05"},
        kinds,
    )
    assert [str(r) for r in rails] == [
        "tokens p95 <= +10%", "tokens p50 <= +0%", "loop rate <= +0.02", "rubric delta >= -0.1", "acc mean >= -0.05",
    ]  # fmt: skip
    assert rails[0].bound == pytest.approx(1.1) and rails[0].quantile == 0.95 and rails[0].row == "tokens p95"
    assert parse_guardrails(["tokens: p99.5 <= +25%"], kinds)[0].quantile == pytest.approx(0.995)
    bad = [
        ({"tokens": "p95 < 10%"}, "is not '<statistic> <op> <margin>'"),
        ({"loop": "p95 <= +10%"}, "quantile guardrails \\(p95\\) need a cost or count metric"),
        ({"loop": "rate <= +10%"}, "relative margins \\(%\\) apply to quantiles only"),
        ({"tokens": "rate <= 0.1"}, "'rate' applies to binary metrics"),
        ({"nope": "p95 <= +10%"}, "no such metric column"),
        ({"tokens": "p95 <= -150%"}, "above -100%"),
        (["tokens p95 <= 10%"], "must read 'metric: statistic op margin'"),
    ]
    for rails, message in bad:
        with pytest.raises(CompareError, match=message):
            parse_guardrails(rails, kinds)


def test_guardrail_breached_means_dont_ship():
    data = synthetic(n_tasks=40, lift=1.5, cost_factor=3.0, seed=4)
    result = compare(data, metrics=KINDS, guardrails={"tokens": "p50 <= +10%"}, n_resamples=B, seed=0)
    t = result.table.set_index("metric")
    assert t.loc["outcome", "assessment"] == "better"
    assert result.decision.guardrails[0].status == "breached"
    assert result.verdict == "don't ship"


def test_unresolved_guardrail_blocks_ship():
    data = synthetic(n_tasks=40, lift=1.5, cost_factor=1.05, seed=4)
    result = compare(data, metrics=KINDS, guardrails={"tokens": "p95 <= +1%"}, n_resamples=B, seed=0)
    assert result.table.iloc[0]["assessment"] == "better"
    assert result.decision.guardrails[0].status == "unresolved"
    assert result.verdict == "inconclusive"
    assert any("guardrail is unresolved" in r for r in result.decision.reasons)


def test_significant_regression_is_dont_ship():
    data = synthetic(n_tasks=40, lift=-1.5, seed=6)
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    assert result.verdict == "don't ship"
    assert result.decision.reasons[0].startswith("primary metric is significantly worse")


def test_no_difference_is_inconclusive():
    data = synthetic(n_tasks=30, lift=0.0, seed=8)
    result = compare(data, metrics=KINDS, guardrails={"tokens": "p95 <= +50%"}, n_resamples=B, seed=0)
    assert result.verdict == "inconclusive"
    assert "no significant difference" in result.decision.reasons[0]


def test_quantile_primary():
    data = synthetic(n_tasks=40, cost_factor=0.5, seed=9)
    result = compare(data, metrics=KINDS, primary="tokens p50", n_resamples=B, seed=0)
    assert result.table.iloc[0]["metric"] == "tokens p50"
    assert result.verdict == "ship"
    with pytest.raises(CompareError, match="name a quantile, e.g. 'tokens p50'"):
        compare(data, metrics=KINDS, primary="tokens", n_resamples=B, seed=0)


# --------------------------------------------------------------------------- #
# Bad input and edge cases
# --------------------------------------------------------------------------- #
def test_bad_input_messages():
    data = synthetic(n_tasks=6, seeds=2)
    cases = [
        (dict(arm="variant"), "no arm column 'variant'"),
        (dict(baseline="control"), "baseline arm 'control' not in column 'arm'"),
        (dict(baseline="baseline", candidate="baseline"), "the same arm"),
        (dict(metrics={"outcome": "boolean"}), "unknown kind 'boolean'"),
        (dict(metrics={"outcome": ("binary", "up")}), "unknown direction 'up'"),
        (dict(metrics={"missing": "binary"}), "metric 'missing' is not a column"),
        (dict(metrics=KINDS, primary="nope"), "primary metric 'nope' is not a column"),
        (dict(alpha=1.5), r"`alpha` must be in \(0, 1\), got 1.5"),
        (dict(n_resamples=10), "`n_resamples` must be an integer >= 99, got 10"),
        (dict(paired="yes"), "`paired` must be 'auto', True or False, got 'yes'"),
    ]
    for kwargs, message in cases:
        with pytest.raises(CompareError, match=message):
            compare(data, **{"metrics": KINDS, **kwargs})
    three = pd.concat([data, data.assign(arm="other")])
    with pytest.raises(CompareError, match="3 arms .* say which are baseline= and candidate="):
        compare(three, metrics=KINDS)
    ok = compare(three, metrics=KINDS, baseline="baseline", candidate="other", n_resamples=B, seed=0)
    assert any("runs of other arms left out" in n for n in ok.notes)
    with pytest.raises(CompareError, match="a comparison needs two"):
        compare(data[data["arm"] == "baseline"], metrics=KINDS)
    with pytest.raises(CompareError, match="must be a DataFrame"):
        compare(data.to_dict("records"))


def test_missing_values_are_excluded_and_counted():
    data = synthetic(n_tasks=20, seeds=3)
    data.loc[data.index[:5], "score"] = np.nan
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    row = result.table.set_index("metric").loc["score"]
    assert "missing values excluded: 5 baseline, 0 candidate" in row["warnings"]
    assert row["n_baseline"] == len(data[data["arm"] == "baseline"]) - 5
    data["score"] = np.where(data["arm"] == "candidate", np.nan, data["score"])
    with pytest.raises(CompareError, match="metric 'score' has no values in arm 'candidate'"):
        compare(data, metrics=KINDS, n_resamples=B, seed=0)


def test_tiny_and_tied_data_do_not_crash():
    one_each = pd.DataFrame({"arm": ["baseline", "candidate"], "outcome": [True, False], "tokens": [10.0, 12.0]})
    result = compare(one_each, metrics={"outcome": "binary", "tokens": "cost"}, n_resamples=B, seed=0)
    assert result.verdict == "inconclusive"
    assert "smallest attainable p-value" in result.table.iloc[0]["warnings"]
    tied = synthetic(n_tasks=10, seeds=2).assign(outcome=True)
    result = compare(tied, metrics={"outcome": "binary"}, n_resamples=B, seed=0)
    row = result.table.iloc[0]
    assert row["p_value"] == 1.0 and row["ci_low"] == row["ci_high"] == 0.0
    assert "every unit has the same value in both arms" in row["warnings"]
    assert result.verdict == "inconclusive"


# --------------------------------------------------------------------------- #
# Inputs people actually have
# --------------------------------------------------------------------------- #
def test_every_numeric_column_is_compared_when_metrics_are_omitted():
    data = synthetic(n_tasks=20, seeds=3, seed=12).drop(columns=["rubric", "score", "run_id"])
    data["latency_ms"] = np.where(data["arm"] == "candidate", 3.0, 1.0) * 1000 * (1 + np.arange(len(data)) % 5)
    data["quality"] = np.linspace(0, 1, len(data))
    result = compare(data, n_resamples=B, seed=0)
    kinds = result.metrics
    # `outcome` and `tokens` are names agentab.score records: their kinds and directions are known
    assert kinds.loc["outcome", "source"] == "score" and kinds.loc["tokens", "kind"] == "cost"
    # the others are inferred, without a direction, and the result says so
    assert kinds.loc["latency_ms", "source"] == "inferred" and kinds.loc["latency_ms", "direction"] == "neither"
    assert kinds.loc["quality", "kind"] == "continuous"
    assert any("latency_ms=count" in n for n in result.notes)
    assert result.table.set_index("metric").loc["latency_ms p50", "assessment"] == "changed"


def test_natural_pandas_types():
    data = synthetic(n_tasks=20, seeds=3, seed=13)
    labels = pd.Categorical.from_codes(data["rubric"], ["poor", "fair", "good", "great"], ordered=True)
    as_codes = compare(data, metrics={"outcome": "binary", "rubric": "ordinal"}, n_resamples=B, seed=0)
    as_labels = compare(data.assign(rubric=labels), metrics={"outcome": "binary", "rubric": "ordinal"}, n_resamples=B, seed=0)
    cols = ["effect", "ci_low", "ci_high", "p_value"]
    pd.testing.assert_frame_equal(as_codes.table[cols], as_labels.table[cols])
    assert list(as_labels.levels["level"]) == ["poor", "fair", "good", "great"]
    unordered = data.assign(rubric=pd.Categorical(labels, ordered=False))
    with pytest.raises(CompareError, match="unordered categories"):
        compare(unordered, metrics={"outcome": "binary", "rubric": "ordinal"}, n_resamples=B, seed=0)
    # booleans read from JSON/CSV: object dtype with None
    objects = data.assign(outcome=pd.Series([bool(v) if i % 7 else None for i, v in enumerate(data["outcome"])], dtype=object))
    result = compare(objects, metrics={"outcome": "binary"}, n_resamples=B, seed=0)
    assert "missing values excluded" in result.table.iloc[0]["warnings"]
    bad = data.assign(outcome=data["outcome"].astype(object).where(data.index != 3, "yes"))
    with pytest.raises(CompareError, match="1 non-numeric value\\(s\\), e.g. 'yes'"):
        compare(bad, metrics={"outcome": "binary"}, n_resamples=B, seed=0)
    # a column whose name ends like a quantile is still a column
    spaced = data.rename(columns={"outcome": "task passed"})
    assert compare(spaced, metrics={"task passed": "binary"}, primary="task passed", n_resamples=B, seed=0).table.iloc[0]["metric"] == "task passed"


def test_seed_may_be_a_generator():
    data = synthetic(n_tasks=10, seeds=2)
    one = compare(data, metrics=KINDS, n_resamples=B, seed=np.random.default_rng(5))
    two = compare(data, metrics=KINDS, n_resamples=B, seed=np.random.default_rng(5))
    pd.testing.assert_frame_equal(one.table, two.table)
    with pytest.raises(CompareError, match="`seed` must be None, a non-negative integer"):
        compare(data, metrics=KINDS, n_resamples=B, seed="zero")


def test_rows_as_results_and_primaries():
    data = synthetic(n_tasks=30, seeds=3, seed=14)
    result = compare(data, metrics=KINDS, guardrails={"tokens": "p95.0 <= +50%", "score": "mean >= -0.5"}, n_resamples=B, seed=0)
    p95 = result.metric("tokens p95")
    row = result.table.set_index("metric").loc["tokens p95"]
    assert isinstance(p95.statistic, float) and p95.statistic == row["effect"] and p95.q == 0.95
    assert p95.ratio_interval.low == row["ratio_low"]
    assert isinstance(result.metric("tokens").statistic, np.ndarray)
    assert [str(c.guardrail) for c in result.decision.guardrails] == ["tokens p95 <= +50%", "score mean >= -0.5"]
    cost_mean = compare(data, metrics=KINDS, guardrails={"tokens": "mean <= +100"}, n_resamples=B, seed=0)
    assert cost_mean.decision.guardrails[0].guardrail.row == "tokens mean"
    with pytest.raises(CompareError, match="the mean of a cost or count metric is descriptive only"):
        compare(data, metrics=KINDS, primary="tokens mean", n_resamples=B, seed=0)
    with pytest.raises(CompareError, match="quantiles apply to cost and count metrics"):
        compare(data, metrics=KINDS, primary="score p50", n_resamples=B, seed=0)


def test_constant_metrics_leave_the_holm_family():
    data = synthetic(n_tasks=20, seeds=3, seed=15).assign(forbidden=0)
    with_constant = compare(data, metrics={**KINDS, "forbidden": "count"}, n_resamples=B, seed=0)
    without = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    a = with_constant.table.set_index("metric")
    b = without.table.set_index("metric")
    pd.testing.assert_series_equal(a.loc[b.index, "p_adjusted"], b["p_adjusted"])
    assert a.loc["forbidden p50", "p_value"] == 1.0
    assert "left out of the Holm family" in a.loc["forbidden p50", "warnings"]


def test_pass_k_for_binary_metrics_without_a_failure_direction():
    data = synthetic(n_tasks=12, seeds=3, seed=16)
    result = compare(data, metrics={"outcome": ("binary", "neither"), "rubric": "ordinal"}, primary="rubric", n_resamples=B, seed=0)
    assert "outcome pass^3" in set(result.table["metric"])
    failure = compare(data, metrics={"outcome": ("binary", "lower"), "rubric": "ordinal"}, primary="rubric", n_resamples=B, seed=0)
    assert "outcome pass^3" not in set(failure.table["metric"])


def test_relative_guardrail_on_a_zero_baseline_says_why():
    data = synthetic(n_tasks=30, seeds=3, seed=17)
    data["errors"] = np.where(data["arm"] == "candidate", 1 + np.arange(len(data)) % 3, 0)
    result = compare(data, metrics={**KINDS, "errors": "count"}, guardrails={"errors": "p50 <= +10%"}, n_resamples=B, seed=0)
    check = result.decision.guardrails[0]
    assert check.status == "breached" and np.isinf(check.estimate)
    assert "an absolute margin suits this metric better" in str(check)
    assert result.verdict == "don't ship"


def test_display_shows_levels_warnings_and_notes():
    data = synthetic(n_tasks=12, seeds=2, seed=18).drop(columns="task_id")
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    html = result._repr_html_()
    assert "rubric level shares" in html and "no task column" in html
    text = str(result)
    assert "rubric level shares: 0:" in text and "WARNING: runs treated as independent" in text
    assert "agentab comparison: candidate vs baseline" in text  # no model/harness columns: just the arm names


# --------------------------------------------------------------------------- #
# Inconclusive verdicts say how many tasks and seeds would settle them
# --------------------------------------------------------------------------- #
def test_inconclusive_verdict_says_how_many_tasks_and_seeds_would_settle_it():
    data = synthetic(n_tasks=20, seeds=3, lift=0.3, seed=4)
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    assert result.verdict == "inconclusive"
    advice = result.decision.reasons[-1]
    assert advice.startswith("a new experiment of about") and "would detect the observed effect" in advice
    assert "80% power" in advice and "inflates false positives" in advice  # no peeking
    observed = result.table.iloc[0]["effect"]
    expected = agentab.power.plan(data, "outcome", float(observed), kind="binary", seeds_per_task=3)
    assert f"about {expected.tasks:,} tasks x 3 seed(s) (the same tasks in both arms)" in advice
    # a minimum effect of interest replaces the observed one
    smaller = compare(data, metrics=KINDS, n_resamples=B, seed=0, min_effect=0.05).decision.reasons[-1]
    assert "would detect the minimum effect of interest (+5.0 points" in smaller
    planned = agentab.power.plan(data, "outcome", 0.05, kind="binary", seeds_per_task=3)
    assert f"about {planned.tasks:,} tasks" in smaller
    # other primaries are converted to plan's scale: an odds ratio for ordinal, a relative change for quantiles
    for primary, words in (("rubric", "odds ratio"), ("tokens p50", "on the p50")):
        reasons = compare(data, metrics=KINDS, primary=primary, n_resamples=B, seed=0).decision.reasons
        assert any(words in r and "80% power" in r for r in reasons), reasons


@pytest.mark.parametrize("bad", ["x", 0, float("nan"), True])
def test_min_effect_is_checked(bad):
    with pytest.raises(CompareError, match="min_effect"):
        compare(synthetic(n_tasks=6, seeds=2), metrics=KINDS, n_resamples=99, seed=0, min_effect=bad)


def test_no_sample_size_advice_when_the_primary_is_already_significant():
    data = synthetic(n_tasks=40, seeds=4, lift=1.5, cost_factor=1.0, seed=1)
    result = compare(data, metrics=KINDS, guardrails={"tokens": "p95 <= +1%"}, n_resamples=B, seed=0)
    assert result.verdict == "inconclusive"  # the primary improved; the tight guardrail is unresolved
    assert result.table.iloc[0]["p_value"] < 0.05
    assert not any("80% power" in r for r in result.decision.reasons)


def test_a_kind_the_values_cannot_have_is_a_compare_error():
    frame = pd.DataFrame({
        "arm": ["baseline", "candidate"] * 10,
        "task_id": [f"t{i // 2}" for i in range(20)],
        "outcome": [True, False] * 10,
        "tokens": list(range(20)),
        "delta": [-1.0, 1.0] * 10,
    })
    with pytest.raises(CompareError, match=r"metric 'tokens' is compared as binary but has 18 value\(s\) other than 0/1"):
        agentab.compare(frame, metrics={"outcome": "binary", "tokens": "binary"}, n_resamples=99, seed=0)
    with pytest.raises(CompareError, match=r"metric 'delta' is compared as cost but has 10 negative value\(s\)"):
        agentab.compare(frame, metrics={"outcome": "binary", "delta": "cost"}, n_resamples=99, seed=0)


@pytest.mark.slow  # long: CI runs it with -m slow
def test_reproducible_by_default_and_from_the_recorded_seed():
    data = synthetic(n_tasks=12, seeds=3, lift=0.5, cost_factor=1.5, seed=11)
    first = compare(data, metrics=KINDS, n_resamples=B)
    again = compare(data, metrics=KINDS, n_resamples=B)
    pd.testing.assert_frame_equal(first.table, again.table)
    assert first.settings.seed == 0 and first.to_dict()["settings"]["seed"] == 0
    fresh = compare(data, metrics=KINDS, n_resamples=B, seed=None)
    recorded = fresh.settings.seed
    assert isinstance(recorded, int) and fresh.to_dict()["settings"]["seed"] == recorded
    replay = compare(data, metrics=KINDS, n_resamples=B, seed=recorded)
    pd.testing.assert_frame_equal(fresh.table, replay.table)
    drawn = compare(data, metrics=KINDS, n_resamples=B, seed=np.random.default_rng(3))
    pd.testing.assert_frame_equal(drawn.table, compare(data, metrics=KINDS, n_resamples=B, seed=drawn.settings.seed).table)
    # a different seed moves the Monte Carlo intervals: the check above is not vacuous
    other = compare(data, metrics=KINDS, n_resamples=B, seed=recorded + 1)
    assert not other.table["ci_low"].equals(fresh.table["ci_low"])


def test_settings_and_design_are_typed_and_read_as_mappings():
    result = compare(synthetic(n_tasks=8, seeds=2), metrics=KINDS, n_resamples=B, seed=4)
    assert result.settings.alpha == result.settings["alpha"] == 0.05
    assert dict(result.settings) == result.to_dict()["settings"]
    assert result.design.kind == result.design["kind"] == "paired"
    assert set(dict(result.design)) == {"kind", "label", "seeds", "dropped_tasks", "dropped_runs", "warning"}
    with pytest.raises(KeyError):
        result.settings["nope"]


# --------------------------------------------------------------------------- #
# No silent defaults: the baseline never from row order; what was left out, named
# --------------------------------------------------------------------------- #
def test_the_baseline_is_never_taken_from_row_order():
    data = synthetic(n_tasks=10, seeds=2, lift=0.5)
    data["arm"] = data["arm"].map({"baseline": "v1", "candidate": "v2"})
    for frame in (data, data.iloc[::-1]):
        with pytest.raises(CompareError, match=r"two arms, 'v1' and 'v2', and neither is named 'baseline' or "
                                               r"'candidate': say which is the baseline, e.g. baseline='v1'"):
            compare(frame, metrics=KINDS, n_resamples=B, seed=0)
    one = compare(data, metrics=KINDS, baseline="v1", n_resamples=B, seed=0)
    two = compare(data.iloc[::-1], metrics=KINDS, candidate="v2", n_resamples=B, seed=0)
    assert (one.baseline, one.candidate) == (two.baseline, two.candidate) == ("v1", "v2")
    pd.testing.assert_frame_equal(one.table[["effect", "p_value"]], two.table[["effect", "p_value"]])
    assert not any("first in the data" in n for n in one.notes)


def test_an_arm_named_candidate_makes_the_other_the_baseline_in_any_row_order():
    data = synthetic(n_tasks=10, seeds=2, lift=0.5)
    data["arm"] = data["arm"].map({"baseline": "control", "candidate": "Candidate"})
    one = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    two = compare(data.iloc[::-1], metrics=KINDS, n_resamples=B, seed=0)
    assert (one.baseline, one.candidate) == (two.baseline, two.candidate) == ("control", "Candidate")
    pd.testing.assert_frame_equal(one.table[["effect", "p_value"]], two.table[["effect", "p_value"]])
    data["arm"] = data["arm"].map({"control": "baseline", "Candidate": "Baseline"})  # two arms claim the role
    with pytest.raises(CompareError, match="neither is named 'baseline' or 'candidate'"):
        compare(data, metrics=KINDS, n_resamples=B, seed=0)


def test_dropped_runs_and_tasks_are_counted_and_named(tmp_path):
    data = synthetic(n_tasks=20, seeds=2, lift=0.5)
    data["outcome"] = data["outcome"].astype(float)
    data.loc[(data["arm"] == "baseline") & (data["task_id"] == "t003"), "outcome"] = np.nan  # every outcome missing
    data.loc[(data["arm"] == "candidate") & (data["task_id"] == "t011"), "outcome"] = [np.nan, 1.0]  # one of two
    data = data[~((data["arm"] == "candidate") & (data["task_id"] == "t007"))]  # a task the candidate never ran
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    assert result.design.label == "paired by task (18 tasks)"
    drops = {(d.reason, d.arm, d.metrics): d for d in result.dropped}
    missing = drops[("missing value", "baseline", ("outcome",))]
    assert (missing.runs, missing.tasks, missing.ids) == (2, 1, ("t003",))
    partial = drops[("missing value", "candidate", ("outcome",))]
    assert (partial.runs, partial.tasks, partial.ids) == (1, 0, ("t011",))
    alone = drops[("task in one arm only", "baseline", ())]  # every metric
    assert (alone.runs, alone.tasks, alone.ids) == (2, 1, ("t007",))
    orphan = drops[("task in one arm only", "candidate", ("outcome",))]  # t003's candidate runs have no partner
    assert (orphan.runs, orphan.tasks, orphan.ids) == (2, 1, ("t003",))
    assert len(result.dropped) == 4
    # in the first lines of the text, in the JSON and in the report
    head = str(result).split("VERDICT")[0]
    for d in result.dropped:
        assert f"left out: {d}" in head
    assert str(alone) == ("every metric: 1 task run by baseline only, left out of the paired comparison (2 runs of "
                          "baseline): t007")
    assert str(missing) == "outcome: 2 runs of baseline left out (missing value); 1 task with no value at all in baseline: t003"
    out = result.to_dict()["dropped"]
    assert {"reason": "missing value", "arm": "baseline", "runs": 2, "tasks": 1, "ids": ["t003"],
            "metrics": ["outcome"], "n_ids": 1} in out
    page = agentab.report(result, tmp_path / "r.html").read_text(encoding="utf-8")
    markdown = agentab.report(result, tmp_path / "r.md").read_text(encoding="utf-8")
    for d in result.dropped:
        assert html.escape(str(d)) in page
        assert f"- {d}" in markdown


def test_dropped_runs_without_tasks_are_named_by_run_id_first_few():
    data = synthetic(n_tasks=20, seeds=2, lift=0.5).drop(columns="task_id")
    data["score"] = data["score"].where(~data["run_id"].str.startswith("candidate-1"), np.nan)  # 11 tasks' runs
    result = compare(data, metrics=KINDS, n_resamples=B, seed=0)
    (drop,) = result.dropped
    assert (drop.reason, drop.arm, drop.metrics, drop.tasks) == ("missing value", "candidate", ("score",), 0)
    assert drop.runs == drop.n_ids == 22 and len(drop.ids) == 5
    assert str(drop).endswith("and 17 more")
    assert result.design.warning and str(result).splitlines()[2].startswith("WARNING: runs treated as independent")
