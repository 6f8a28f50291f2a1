"""Labels that mean what they say: one assessment rule, shown the same in the text, HTML, Markdown and JSON;
columns that hold what their headers say; the Holm family named."""

from __future__ import annotations

import html
import itertools
import json
import re

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab.comparison.decide import ASSESSMENT_RULE, ASSESSMENTS, assess

METRICS = ["outcome", "rubric", "tokens", "n_steps", "cap_hit", "arg_accuracy"]


@pytest.fixture(scope="module")
def example():
    """The README's comparison: n_steps p95 has a Holm p of about 0.02 and an interval that reaches 0."""
    traces = agentab.datasets.example_experiment(seed=0)
    scores = agentab.score(traces, agentab.datasets.example_specs())
    result = agentab.compare(scores, metrics=METRICS, guardrails={"tokens": "p95 <= +10%"}, n_resamples=1999, seed=0)
    return scores, result


# --------------------------------------------------------------------------- #
# The rule
# --------------------------------------------------------------------------- #
def test_the_rule_on_its_own_cases():
    alpha = 0.05
    # significant with the interval on the good side: better (worse for the other direction)
    assert assess("secondary", 0.001, 0.01, -4.0, -6.0, -1.0, "lower", alpha) == "better"
    assert assess("secondary", 0.001, 0.01, -4.0, -6.0, -1.0, "higher", alpha) == "worse"
    assert assess("secondary", 0.001, 0.01, -4.0, -6.0, -1.0, "neither", alpha) == "changed"
    # the README's n_steps p95: Holm p 0.021, interval [-6, +0]: the test and the interval disagree
    assert assess("secondary", 0.003, 0.021, -4.0, -6.0, 0.0, "lower", alpha) == "borderline"
    # a single-point interval says nothing
    assert assess("secondary", 0.001, 0.01, 2.0, 2.0, 2.0, "higher", alpha) == "borderline"
    # the primary row is judged on its own p-value, a secondary on its Holm-adjusted one
    assert assess("primary", 0.01, np.nan, 0.1, 0.02, 0.2, "higher", alpha) == "better"
    assert assess("secondary", 0.01, 0.06, 0.1, 0.02, 0.2, "higher", alpha) == "no evidence"
    assert assess("secondary", np.nan, np.nan, 0.1, 0.02, 0.2, "higher", alpha) == "no evidence"
    assert assess("descriptive", np.nan, np.nan, 0.1, np.nan, np.nan, "higher", alpha) == "descriptive"


def test_a_significant_row_never_reads_no_evidence():
    """Over a grid of p-values, intervals and directions: 'no evidence' if and only if the p-value that counts is
    not below alpha; better/worse only with the interval wholly on that side."""
    values = (-2.0, -0.5, 0.0, 0.5, 2.0)
    for p, effect, low, high, direction, role in itertools.product(
            (0.001, 0.049, 0.05, 0.3), values, values, values, ("higher", "lower", "neither"), ("primary", "secondary")):
        if low > high:
            continue
        label = assess(role, p, p, effect, low, high, direction, 0.05)
        assert label in ASSESSMENTS
        assert (label == "no evidence") == (p >= 0.05)
        if label in ("better", "worse", "changed"):
            assert low < high and (low > 0 and effect > 0 or high < 0 and effect < 0)
            if direction != "neither":
                assert (label == "better") == ((effect > 0) == (direction == "higher"))


# --------------------------------------------------------------------------- #
# One label everywhere
# --------------------------------------------------------------------------- #
def test_every_row_follows_the_rule(example):
    _, result = example
    alpha = result.settings.alpha
    for _, r in result.table.iterrows():
        expected = assess(r["role"], r["p_value"], r["p_adjusted"], r["effect"], r["ci_low"], r["ci_high"],
                          r["direction"], alpha)
        assert r["assessment"] == expected, r["metric"]
        p = r["p_value"] if r["role"] == "primary" else r["p_adjusted"]
        if np.isfinite(p) and p < alpha:
            assert r["assessment"] != "no evidence", r["metric"]
    table = result.table.set_index("metric")
    assert table.loc["n_steps p95", "p_adjusted"] < alpha
    assert table.loc["n_steps p95", "assessment"] == "borderline"


def _html_rows(text: str) -> dict[str, str]:
    """metric -> assessment of the comparison table in an HTML page (the table with an assessment header)."""
    tables = re.findall(r"<table.*?</table>", text, re.S)
    table = next(t for t in tables if ">assessment<" in t)
    header = [html.unescape(c).strip() for c in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", table, re.S)]
    out = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
        cells = [html.unescape(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells:
            names = header[len(header) - len(cells):]  # an index column has a header cell and no td
            out[cells[names.index("metric")]] = cells[names.index("assessment")]
    return out


@pytest.mark.slow  # long: CI runs it with -m slow
def test_text_html_markdown_json_and_report_show_the_same_labels(example, tmp_path):
    _, result = example
    expected = dict(zip(result.table["metric"], result.table["assessment"]))
    # JSON
    out = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert {m["metric"]: m["assessment"] for m in out["metrics"]} == expected
    assert out["assessment_rule"] == ASSESSMENT_RULE
    # text: each table line ends with its label
    text = str(result)
    for metric, label in expected.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(f"{metric} ") and "[" in line
                    or line.strip().startswith(f"{metric} ") and line.rstrip().endswith("descriptive"))
        assert line.rstrip().endswith(label), (metric, line)
    assert ASSESSMENT_RULE in text
    # Jupyter's HTML, the HTML report and the Markdown report
    assert _html_rows(result._repr_html_()) == expected
    report = agentab.report(result, tmp_path / "r.html")
    page = report.read_text(encoding="utf-8")
    assert _html_rows(page) == expected
    assert html.escape(ASSESSMENT_RULE[1:]) in page
    markdown = agentab.report(result, tmp_path / "r.md").read_text(encoding="utf-8")
    table = next(b for b in markdown.split("\n\n") if b.startswith("| metric | statistic |"))
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    shown = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip().replace("\\_", "_").replace("\\^", "^") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        shown[cells[header.index("metric")]] = cells[header.index("assessment")]
    assert shown == expected
    # the forest plot writes the same label beside each row
    figure = agentab.plots.forest(result)
    labels = [t.get_text().split("\n")[-1] for ax in figure.axes for t in ax.texts]
    assert labels == list(expected.values())


def test_explanations_name_only_better_worse_or_changed_rows(example):
    _, result = example
    named = {e.split(":")[0].split(" (")[0] for e in result.decision.explanations}
    table = result.table.set_index("metric")
    for metric in named:
        assert table.loc[metric, "assessment"] in ("better", "worse", "changed")
    assert "n_steps p95" not in named  # borderline: not an explanation


# --------------------------------------------------------------------------- #
# Columns that hold what their headers say
# --------------------------------------------------------------------------- #
def test_cliffs_delta_row_has_no_per_arm_values_and_the_mean_level_its_own_row(example):
    scores, result = example
    table = result.table.set_index("metric")
    delta = table.loc["rubric"]
    assert delta["statistic"] == "Cliff's delta" and -1 <= delta["effect"] <= 1
    assert np.isnan(delta["baseline"]) and np.isnan(delta["candidate"])
    level = table.loc["rubric mean level"]
    assert level["statistic"] == "mean level" and level["role"] == "descriptive"
    assert level["assessment"] == "descriptive" and np.isnan(level["p_value"])
    means = scores.groupby(["arm", "task_id"], observed=True)["rubric"].mean().groupby("arm", observed=True).mean()
    assert level["baseline"] == pytest.approx(means["baseline"]) and level["candidate"] == pytest.approx(means["candidate"])
    assert level["effect"] == pytest.approx(means["candidate"] - means["baseline"])
    shown = result.summary_table().set_index("metric")
    assert shown.loc["rubric", "baseline"] == "-" and shown.loc["rubric", "candidate"] == "-"
    assert shown.loc["rubric mean level", "baseline"] == f"{means['baseline']:.4g}"
    assert result.metric("rubric mean level").estimates.baseline == pytest.approx(means["baseline"])
    assert "rubric mean level" not in result.holm_family


def test_an_ordinal_primary_reads_its_mean_levels_from_their_row(example):
    scores, _ = example
    result = agentab.compare(scores, metrics=["rubric"], primary="rubric", n_resamples=199, seed=0)
    reason = result.decision.reasons[0]
    level = result.table.set_index("metric").loc["rubric mean level"]
    assert "(Cliff's delta)" in reason and f"mean level {level['baseline']:.4g} -> {level['candidate']:.4g}" in reason
    assert "baseline -" not in reason


# --------------------------------------------------------------------------- #
# The Holm family
# --------------------------------------------------------------------------- #
def test_the_holm_family_is_named_in_the_result_the_text_json_and_report(example, tmp_path):
    _, result = example
    table = result.table
    family = table[(table["role"] == "secondary") & table["p_value"].notna()]["metric"].tolist()
    assert list(result.holm_family) == family
    from statsmodels.stats.multitest import multipletests

    adjusted = multipletests(table.set_index("metric").loc[family, "p_value"], method="holm")[1]
    np.testing.assert_allclose(table.set_index("metric").loc[family, "p_adjusted"], adjusted)
    assert result.to_dict()["holm_family"] == family
    note = result.family_note()
    assert f"Holm family ({len(family)} rows" in note and ", ".join(family) in note
    assert "changes with the metrics compared" in note
    assert note in str(result)
    page = agentab.report(result, tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.escape(note) in page


def test_a_smaller_family_changes_a_secondary_adjusted_p_and_says_so(example):
    scores, result = example
    fewer = agentab.compare(scores, metrics=["outcome", "n_steps"], n_resamples=1999, seed=0)
    assert set(fewer.holm_family) < set(result.holm_family)
    big = result.table.set_index("metric").loc["n_steps p95"]
    small = fewer.table.set_index("metric").loc["n_steps p95"]
    assert small["p_value"] == big["p_value"]  # each metric's own stream: the raw p-value is the same
    assert small["p_adjusted"] < big["p_adjusted"]
    assert fewer.family_note() != result.family_note()


def test_constant_metrics_are_left_out_of_the_family():
    data = pd.DataFrame({"arm": np.repeat(["baseline", "candidate"], 40),
                         "task_id": np.tile(np.repeat([f"t{i}" for i in range(10)], 4), 2),
                         "outcome": np.tile([True, False], 40), "flag": False,
                         "steps": np.random.default_rng(0).poisson(5, 80)})
    result = agentab.compare(data, metrics={"outcome": "binary", "flag": "binary", "steps": "count"},
                             n_resamples=199, seed=0)
    assert "flag" not in result.holm_family and "steps p50" in result.holm_family
