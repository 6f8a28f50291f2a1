"""The report of many arms and of slices: agentab.report(MultiComparison | SlicedComparison, path) and the CLI."""

from __future__ import annotations

import base64
import html
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab.cli import main
from agentab.errors import ReportError

TB = Path("/work/shared/data/terminal-bench/tb_core_0.1.1_trials.csv")
B = 199
PNG = b"\x89PNG\r\n\x1a\n"


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def tb() -> pd.DataFrame:
    """The Terminal-Bench trials (80 tasks x 5 runs per submission), outcome = is_resolved."""
    if not TB.is_file():
        pytest.skip(f"{TB} is not on this machine")
    data = _quiet(agentab.load_results, TB, fields={"outcome": "is_resolved"})
    data["variant"] = data["task_id"].str.extract(r"\.(easy|hard)$")[0].fillna("base")
    return data


#: Four submissions that all record agent time (the Orchestrator ones do not): the baseline first.
ARMS = ("20250711_openhands_claude-4-sonnet", "20250811_cursor-cli_claude-4-sonnet",
        "20250825_swe-agent-mini_claude-4-sonnet", "20250829_goose_claude-4-opus")
METRICS = {"outcome": "binary", "agent_duration_sec": ("cost", "lower")}


@pytest.fixture(scope="module")
def many(tb):
    return _quiet(agentab.compare, tb, arm="submission", baseline=ARMS[0], candidate=list(ARMS[1:]), metrics=METRICS,
                  n_resamples=B, seed=0)


@pytest.fixture(scope="module")
def many_html(many, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("many") / "sweep.html"
    assert _quiet(agentab.report, many, path) == path
    return path.read_text(encoding="utf-8")


def _images(text: str) -> list[tuple[str, bytes]]:
    return [(html.unescape(alt), base64.b64decode(data))
            for alt, data in re.findall(r"<img alt='([^']*)' src='data:image/png;base64,([^']+)'>", text)]


def test_many_html_decision_first_with_every_verdict_and_the_adjustment(many, many_html):
    assert many_html.startswith("<!DOCTYPE html>")
    decision = many_html.index("<h2>Decision</h2>")
    for line in many.verdict_lines():
        assert html.escape(line) in many_html
    for name, comparison in many.candidates.items():
        summary = html.escape(f"{name} vs {ARMS[0]}: {comparison.verdict}")
        assert f"<details><summary>{summary}</summary>" in many_html
        assert many_html.index(summary) > decision
    assert html.escape(many.best_statement) in many_html
    assert html.escape(many.adjustment) in many_html
    assert decision < many_html.index("<h2>Summary</h2>") < many_html.index("<h2>Profile of every system</h2>")
    # Every candidate's verdict in the summary table too.
    assert many_html.count("don&#x27;t ship") + many_html.count("inconclusive") + many_html.count(">ship<") >= 3


def test_many_html_has_the_profile_and_pareto_figures_and_each_candidates_sections(many, many_html):
    images = _images(many_html)
    alts = [alt for alt, _ in images]
    assert alts[:2] == ["Profile of every system", "Pareto view of outcome against agent_duration_sec p95"]
    assert all(data.startswith(PNG) for _, data in images)
    assert alts.count("Forest plot of every metric's effect") == len(many.candidates)
    assert many_html.count("<h2>Which tasks flipped</h2>") == len(many.candidates)
    # Each candidate's cost quantiles (the profile has every system's p50 and p95: no distribution figure) and
    # its trajectory section (a results table has no steps: it says so, once per candidate).
    assert alts.count("Quantile shift of agent_duration_sec") == len(many.candidates)
    assert "Distribution of agent_duration_sec by arm" not in alts
    assert many_html.count("<h2>Cost and other long-tailed metrics</h2>") == len(many.candidates)
    assert many_html.count("<h2>Trajectory</h2>") == len(many.candidates)
    assert many_html.count("No diagnosis: the runs have no &#x27;n_steps&#x27; column") == len(many.candidates)
    assert "<script" not in many_html.lower() and "http://" not in many_html and "https://" not in many_html


@pytest.mark.slow  # validation: CI runs it with -m slow
def test_many_markdown_has_the_same_structure_with_figures_beside_it(many, tmp_path):
    path = _quiet(agentab.report, many, tmp_path / "sweep.md")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# agentab: 3 candidates vs")
    assert text.index("## Decision") < text.index("## Summary") < text.index("## Profile of every system")
    links = re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", text)
    assert any(alt.startswith("Pareto view") for alt, _ in links)
    for _, link in links:
        assert (tmp_path / link).read_bytes().startswith(PNG)
    for name in many.candidates:
        assert f"**{name.replace('_', chr(92) + '_')} vs" in text
    assert "<details>" not in text


def _sweep(names: list[str], tasks: int = 12, seeds: int = 2, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"arm": a, "task_id": f"t{t:02d}", "seed": s, "outcome": bool(rng.random() < 0.3 + 0.1 * i),
             "cost_usd": float(rng.lognormal(0, 0.5))}
            for i, a in enumerate(names) for t in range(tasks) for s in range(seeds)]
    return pd.DataFrame(rows)


HOSTILE = ["prod", "<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "a&b\"'"]


@pytest.fixture(scope="module")
def hostile():
    return _quiet(agentab.compare, _sweep(HOSTILE), baseline="prod", candidate="all", metrics=["outcome", "cost_usd"],
                  n_resamples=B)


@pytest.mark.slow  # long: CI runs it with -m slow
def test_hostile_arm_names_are_escaped(hostile, tmp_path):
    text = _quiet(agentab.report, hostile, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script" not in text.lower() and "<img src=x" not in text and "onerror=alert(2)>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert html.escape("<img src=x onerror=alert(2)>") in text
    markdown = _quiet(agentab.report, hostile, tmp_path / "r.md").read_text(encoding="utf-8")
    assert "<script" not in markdown.lower() and "<img" not in markdown


@pytest.mark.slow
def test_the_write_is_atomic_and_goes_through_the_shared_writer(hostile, tmp_path, monkeypatch):
    import sys

    import agentab._write
    from agentab.reporting import plots

    writer = sys.modules["agentab.reporting.report"]  # the one writer of every report (report._write)

    path = tmp_path / "r.html"
    path.write_text("the earlier report", encoding="utf-8")
    calls = []
    real = agentab._write.atomic_text
    monkeypatch.setattr(writer, "atomic_text", lambda p, text: (calls.append(Path(p)), real(p, text))[1])

    def broken(*args, **kwargs):
        raise RuntimeError("killed while drawing")

    with monkeypatch.context() as m:
        m.setattr(plots, "forest", broken)
        with pytest.raises(RuntimeError, match="killed while drawing"):
            _quiet(agentab.report, hostile, path)
    assert path.read_text(encoding="utf-8") == "the earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    assert calls == []
    _quiet(agentab.report, hostile, path)
    assert calls == [path] and path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_checks_of_the_two_arm_report_apply(hostile, tmp_path):
    with pytest.raises(ReportError, match="say format"):
        agentab.report(hostile, tmp_path / "r.txt")
    with pytest.raises(ReportError, match="no such folder"):
        agentab.report(hostile, tmp_path / "nope" / "r.html")
    with pytest.raises(ReportError, match="needs a Comparison"):
        agentab.report("not a comparison", tmp_path / "r.html")


def test_sliced_report_is_the_overall_report_and_the_slices_table(tb, tmp_path):
    sliced = _quiet(agentab.compare, tb, arm="submission", baseline=ARMS[0], candidate=ARMS[1], metrics=METRICS,
                    by="variant", n_resamples=B, seed=0)
    text = _quiet(agentab.report, sliced, tmp_path / "s.html").read_text(encoding="utf-8")
    assert f"Verdict: {html.escape(sliced.overall.verdict)}" in text
    assert text.index("<h2>Effects</h2>") < text.index("<h2>Slices</h2>")
    table = text[text.index("<h2>Slices</h2>"):]
    for column in ("slice", "n_tasks", "baseline", "candidate", "effect", "95% CI", "p_value", "p_adjusted", "note"):
        assert f"<th>{column}</th>" in table
    # Each slice with enough tasks: its effect and its interval, formatted as the comparison table's.
    rows = sliced.slices.set_index("slice")
    for label in ("base", "hard"):
        r = rows.loc[label]
        assert np.isfinite(r["effect"]) and r["ci_low"] <= r["effect"] <= r["ci_high"]
        cells = (f"<td>{label}</td>\n      <td>{r['n_tasks']}</td>\n      <td>{r['baseline']:.1%}</td>\n      "
                 f"<td>{r['candidate']:.1%}</td>\n      <td>{r['effect']:+.1%}</td>\n      "
                 f"<td>[{r['ci_low']:+.1%}, {r['ci_high']:+.1%}]</td>\n      <td>{r['p_value']:.3g}</td>")
        assert cells in table, label
    assert f"p = {sliced.interaction_pvalue:.3g}; Cochran" in table
    # The small slice gets no number and says so: in its row, in a warning above the table, in the notes.
    assert np.isnan(rows.loc["easy", "effect"])
    assert "<td>easy</td>\n      <td>4</td>\n      <td>-</td>" in table
    assert "<td>no estimate: 4 tasks, fewer than 5</td>" in table
    warning = "<p class='warning'>Warning: 1 of 3 slices has no estimate (too small to say, or not compared): easy"
    assert table.index(warning) < table.index("<table")
    assert "easy: 4 tasks: fewer than 5" in table
    markdown = _quiet(agentab.report, sliced, tmp_path / "s.md").read_text(encoding="utf-8")
    assert "| easy | 4 | - | - | - | - | - | - | - | no estimate: 4 tasks, fewer than 5 |" in markdown
    assert "**Warning: 1 of 3 slices has no estimate" in markdown


def test_cli_baseline_and_candidates_write_the_many_arm_report(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    _sweep(["prod", "c1", "c2", "c3"]).to_csv(path, index=False)
    out = tmp_path / "out" / "r.html"
    argv = ["compare", str(path), "--arm-column", "arm", "--baseline", "prod", "--n-resamples", "199",
            "--metric", "outcome", "--metric", "cost_usd"]
    assert _quiet(main, [*argv, "--candidates", "c1", "c2", "--report", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"report written to {out}" in err
    text = out.read_text(encoding="utf-8")
    assert "<summary>c1 vs prod:" in text and "<summary>c2 vs prod:" in text and "c3 vs prod" not in text
    assert "Pareto view of outcome against cost_usd p95" in text


def test_cli_by_writes_the_sliced_report(tmp_path, capsys):
    data = _sweep(["prod", "new"], tasks=20)
    data["kind"] = np.where(data["task_id"] < "t10", "easy", "hard")
    path = tmp_path / "runs.csv"
    data.to_csv(path, index=False)
    out = tmp_path / "s.md"
    argv = ["compare", str(path), "--arm-column", "arm", "--names", "prod", "new", "--n-resamples", "199", "-q",
            "--metric", "outcome", "--by", "kind", "--report", str(out)]
    assert _quiet(main, argv) in (0, 3)
    text = out.read_text(encoding="utf-8")
    assert "## Slices" in text and "| easy |" in text and "| hard |" in text


# --------------------------------------------------------------------------- #
# Each candidate's section: the two-arm report's sections, from the traces
# --------------------------------------------------------------------------- #
N_TASKS, N_SEEDS = 10, 3


def _example_sweep_records() -> list[dict]:
    """The example experiment's two arms, and a third: the candidate arm of another seed's experiment."""
    from agentab.datasets import example_records

    records = list(example_records(0, n_tasks=N_TASKS, n_seeds=N_SEEDS))
    for r in example_records(1, n_tasks=N_TASKS, n_seeds=N_SEEDS):
        if r["arm"] == "candidate":
            records.append({**r, "arm": "candidate 2", "run_id": f"c2-{r['run_id']}"})
    return records


@pytest.fixture(scope="module")
def sweep_traces():
    return agentab.load_traces(_example_sweep_records())


@pytest.fixture(scope="module")
def sweep(sweep_traces):
    scores = agentab.score(sweep_traces, agentab.datasets.example_specs(n_tasks=N_TASKS))
    return _quiet(agentab.compare, scores, baseline="baseline", candidate="all", metrics=["outcome", "rubric", "tokens"],
                  n_resamples=B, seed=0)


@pytest.fixture(scope="module")
def sweep_html(sweep, sweep_traces, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("sweep") / "sweep.html"
    return _quiet(agentab.report, sweep, path, traces=sweep_traces).read_text(encoding="utf-8")


def _candidate_part(text: str, result, name: str) -> str:
    """The HTML of one candidate's collapsed section (up to the next candidate's, or the footer)."""
    starts = {n: text.index(f"<details><summary>{html.escape(f'{n} vs {result.baseline}: {c.verdict}')}</summary>")
              for n, c in result.candidates.items()}
    start = starts[name]
    later = [s for s in starts.values() if s > start]
    return text[start:min(later) if later else text.index("<footer>")]


def _headings(text: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r"<h[23]>([^<]*)</h[23]>", text)]


@pytest.mark.slow
def test_each_candidate_has_the_two_arm_reports_sections(sweep, sweep_traces, sweep_html, tmp_path):
    assert list(sweep.candidates) == ["candidate", "candidate 2"]
    for name, comparison in sweep.candidates.items():
        part = _candidate_part(sweep_html, sweep, name)
        two_arm = _quiet(agentab.report, comparison, tmp_path / f"{name}.html", traces=sweep_traces).read_text("utf-8")
        assert _headings(part) == _headings(two_arm)  # the same sections, in the same order, from the same builders
        assert _headings(part)[:3] == ["Arms and design", "Effects", "Ordinal levels"]
        for heading in ("Cost and other long-tailed metrics", "Trajectory", "Per task", "Which tasks flipped"):
            assert heading in _headings(part), heading
        alts = [alt for alt, _ in _images(part)]
        # The cost quantiles and the trajectory figures; the distributions are left to the candidate's own report.
        for alt in ("Quantile shift of tokens", "Success rate by step-count bucket", "Failure shapes by arm",
                    "Tool choice by arm", "Per-task outcome, baseline against candidate"):
            assert alts.count(alt) == 1, alt
        assert "Distribution of tokens by arm" not in alts and "Distribution of tokens by arm" in two_arm
        assert f"Verdict: {html.escape(comparison.verdict)}" in part
        findings = agentab.diagnose(comparison.data, by="arm", traces=sweep_traces).findings
        assert f"<h3>Findings ({len(findings)})</h3>" in part
        for finding in findings:
            assert f"<summary>{html.escape(finding.title)}</summary>" in part


def test_each_candidates_flipped_tasks_open_onto_their_runs_trajectories(sweep, sweep_traces, sweep_html):
    from agentab.reporting._many import FLIPPED_PER_CANDIDATE

    for name, comparison in sweep.candidates.items():
        section = _candidate_part(sweep_html, sweep, name).split("<h2>Which tasks flipped</h2>", 1)[1]
        section = section.split("<h2>", 1)[0]
        flipped, shown = comparison.flipped_tasks(n=FLIPPED_PER_CANDIDATE), 0
        assert 0 < len(flipped) <= 2 * FLIPPED_PER_CANDIDATE
        assert section.count("<summary>regressed: ") + section.count("<summary>improved: ") == len(flipped)
        for _, row in flipped.iterrows():
            summary = f"<summary>{row['direction']}: {html.escape(str(row['task_id']))} ("
            assert section.count(summary) == 1, summary
            task = section.split(summary, 1)[1]
            for run in (*row["runs_baseline"], *row["runs_candidate"]):
                body = task.split(f"<summary>run {html.escape(run)}: outcome ", 1)[1].split("</details>", 1)[0]
                steps = sweep_traces.steps[sweep_traces.steps["run_id"] == run]
                shown += len(steps)
                if not len(steps):
                    assert "No steps of this run in the traces given." in body, run
                assert body.count("<tr>") == len(steps), run  # the run's every step
                for tool in steps["tool"]:
                    assert f"<td>{html.escape(str(tool))}</td>" in body
        assert shown > 0


@pytest.mark.slow  # validation: CI runs it with -m slow
def test_each_candidate_in_markdown_has_the_cost_and_trajectory_sections(sweep, sweep_traces, tmp_path):
    text = _quiet(agentab.report, sweep, tmp_path / "sweep.md", traces=sweep_traces).read_text(encoding="utf-8")
    for heading in ("## Cost and other long-tailed metrics", "## Trajectory", "## Which tasks flipped"):
        assert text.count(f"\n{heading}\n") == len(sweep.candidates), heading
    assert text.count("![Quantile shift of tokens]") == len(sweep.candidates)
    assert text.count("![Tool choice by arm]") == len(sweep.candidates)


@pytest.mark.slow
def test_hostile_names_task_ids_and_arguments_are_escaped_in_every_candidates_sections(record, tmp_path):
    arms = ["prod", "<script>alert(1)</script>", "<img src=x onerror=alert(2)>"]
    task = "<script>alert('task')</script>"
    records = []
    for i, arm in enumerate(arms):
        for t in (task, "plain", "other"):
            for seed in range(3):
                r = record(run_id=f"{i}-{t[:3]}-{seed}<b>", task_id=t, seed=seed, arm=arm, outcome=(i == 0) == (t == task),
                           cost_usd=0.01 * (1 + seed + 2 * i))
                r["steps"][0]["args"] = {"cmd": "<script>alert(3)</script>", "path": "</td><iframe src=x>"}
                r["steps"][1]["tool"] = "<svg onload=alert(4)>"
                records.append(r)
    traces = agentab.load_traces(records)
    scores = agentab.score(traces)
    result = _quiet(agentab.compare, scores, baseline="prod", candidate="all", metrics=["outcome", "cost_usd"],
                    n_resamples=99)
    text = _quiet(agentab.report, result, tmp_path / "r.html", traces=traces).read_text(encoding="utf-8")
    lowered = text.lower()
    for raw in ("<script", "<img src=x", "<iframe", "<svg", "<b>"):
        assert raw not in lowered, raw
    for name in arms[1:]:
        part = _candidate_part(text, result, name)
        assert "<h2>Cost and other long-tailed metrics</h2>" in part and "<h2>Trajectory</h2>" in part
        assert html.escape(name) in part.split("<h2>Trajectory</h2>", 1)[1]  # named in the flipped tasks' runs
        flipped = part.split("<h2>Which tasks flipped</h2>", 1)[1]
        assert html.escape(task) in flipped and html.escape("<svg onload=alert(4)>") in flipped
        assert html.escape("</td><iframe src=x>", quote=False) in flipped
    markdown = _quiet(agentab.report, result, tmp_path / "r.md", traces=traces).read_text(encoding="utf-8")
    assert "<script" not in markdown.lower() and "<img" not in markdown and "<svg" not in markdown
