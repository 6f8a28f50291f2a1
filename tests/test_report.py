"""agentab.report, agentab.plots and the displays: the report renders, is self-contained, and says the right things."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import warnings
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox
from PIL import Image

import agentab
from agentab import CompareError, ReportError, plots
from agentab.comparison import TABLE_COLUMNS
from agentab.comparison.decide import Decision
from agentab.scoring.diagnose import Diagnosis, Finding

N_TASKS, N_SEEDS = 16, 3
BLUE, ORANGE = "#0072B2", "#E69F00"
METRICS = ["outcome", "rubric", "tokens"]
GUARD = {"tokens": "p95 <= +10%"}


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
class Page(HTMLParser):
    """Every tag with its attributes, the headings, the title and the visible text of an HTML page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.headings: list[tuple[str, str]] = []
        self.title = ""
        self.text: list[str] = []
        self._open: str | None = None
        self._buffer: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag in ("h1", "h2", "h3", "title"):
            self._open, self._buffer = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            text = "".join(self._buffer).strip()
            if tag == "title":
                self.title = text
            else:
                self.headings.append((tag, text))
            self._open = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open is not None:
            self._buffer.append(data)

    def all(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.tags if name == tag]

    def heading_texts(self) -> list[str]:
        return [text for _, text in self.headings]

    def images(self, alt: str | None = None) -> list[dict[str, str]]:
        return [a for a in self.all("img") if alt is None or a.get("alt") == alt]


def _decode_png(data: bytes) -> tuple[int, int]:
    """Open and verify a PNG; its size."""
    image = Image.open(BytesIO(data))
    assert image.format == "PNG"
    size = image.size
    image.verify()
    assert size[0] > 0 and size[1] > 0
    return size


def _write(comparison, path: Path, **kwargs) -> tuple[str, Page]:
    out = agentab.report(comparison, path, **kwargs)
    assert out == path and path.is_file()
    text = path.read_text(encoding="utf-8")
    return text, Page(text)


# --------------------------------------------------------------------------- #
# Data, built once per module
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def traces():
    return agentab.datasets.example_experiment(seed=0, n_tasks=N_TASKS, n_seeds=N_SEEDS)


@pytest.fixture(scope="module")
def specs():
    return agentab.datasets.example_specs(n_tasks=N_TASKS)


@pytest.fixture(scope="module")
def scores(traces, specs):
    return agentab.score(traces, specs)


@pytest.fixture(scope="module")
def small(scores):
    """Inconclusive, with the plan of the next experiment; binary, ordinal and cost metrics and a guardrail."""
    result = agentab.compare(scores, metrics=METRICS, guardrails=GUARD, n_resamples=299, seed=0)
    assert result.verdict == "inconclusive" and result.plan is not None
    return result


@pytest.fixture(scope="module")
def full_scores():
    traces = agentab.datasets.example_experiment(seed=0)
    return agentab.score(traces, agentab.datasets.example_specs())


@pytest.fixture(scope="module")
def ship(full_scores):
    result = agentab.compare(full_scores, metrics=METRICS, guardrails=GUARD, n_resamples=999, seed=0)
    assert result.verdict == "ship"
    return result


@pytest.fixture(scope="module")
def diagnosis(small, traces):
    return agentab.diagnose(small.data, traces=traces)


@pytest.fixture(scope="module")
def html_report(small, traces, tmp_path_factory):
    """The small comparison's HTML report with traces; rcParams must be the same after it."""
    before = dict(matplotlib.rcParams)
    path = tmp_path_factory.mktemp("html") / "report.html"
    text, page = _write(small, path, traces=traces)
    assert dict(matplotlib.rcParams) == before
    return path, text, page


@pytest.fixture(scope="module")
def html_no_traces(small, tmp_path_factory):
    path = tmp_path_factory.mktemp("html_nt") / "report.htm"
    return (path, *_write(small, path))


@pytest.fixture(scope="module")
def markdown_report(small, traces, tmp_path_factory):
    path = tmp_path_factory.mktemp("md") / "report.md"
    out = agentab.report(small, path, traces=traces)
    assert out == path
    return path, path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- #
# 1. The HTML report
# --------------------------------------------------------------------------- #
def test_html_images_are_embedded_pngs(html_report):
    _, _, page = html_report
    images = page.images()
    assert len(images) >= 8
    for img in images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,"), src[:60]
        _decode_png(base64.b64decode(src.split(",", 1)[1], validate=True))
        assert img.get("alt"), "every image has alternative text"


def test_html_verdict_reasons_and_title(small, html_report):
    _, text, page = html_report
    assert page.title == "agentab: candidate vs baseline"
    assert ("h1", "agentab: candidate vs baseline") in page.headings
    assert f"Verdict: {small.verdict}" in text
    assert "class='verdict v-inconclusive'" in text
    visible = "".join(page.text)
    assert small.decision.reasons
    for reason in small.decision.reasons:
        assert html.escape(reason) in text
        assert reason in visible
    # The guardrail and the advice about the next experiment are among the reasons.
    assert any(r.startswith("guardrail tokens p95 <= +10%") for r in small.decision.reasons)
    assert "Made by agentab" in visible


def test_html_is_self_contained(html_report):
    _, text, page = html_report
    names = {tag for tag, _ in page.tags}
    assert not names & {"script", "link", "iframe", "object", "embed", "base"}, names
    for tag, attrs in page.tags:
        for key in ("src", "href", "srcset", "action", "data"):
            value = attrs.get(key)
            if value is None:
                continue
            assert value.startswith("data:image/png;base64,"), f"<{tag} {key}={value[:80]!r}>"
    lowered = text.lower()
    assert "url(" not in lowered and "@import" not in lowered
    assert not re.search(r"""=\s*['"]?(https?:|file:|/)""", text), "no attribute points outside the file"


def test_html_sections_of_an_inconclusive_verdict(small, html_report):
    _, text, page = html_report
    headings = page.heading_texts()
    for expected in ("Arms and design", "Effects", "Ordinal levels", "Cost and other long-tailed metrics", "Trajectory",
                     "Per task", "The next experiment"):
        assert expected in headings, (expected, headings)
    assert headings.index("Effects") < headings.index("Per task") < headings.index("The next experiment")
    assert "tokens" in headings  # the cost metric's own sub-heading
    alts = [img["alt"] for img in page.images()]
    assert alts[0] == "Forest plot of every metric's effect"
    for alt in ("Level shares of rubric by arm", "Distribution of tokens by arm", "Quantile shift of tokens",
                "Success rate by step-count bucket", "Failure shapes by arm", "Tool choice by arm",
                "Per-task outcome, baseline against candidate", "Power curve of the next experiment"):
        assert alts.count(alt) == 1, (alt, alts)
    # The plan is written out under its power curve.
    assert html.escape(str(small.plan).splitlines()[0]) in text


def test_tool_choice_image_only_with_traces(html_report, html_no_traces):
    assert len(html_report[2].images("Tool choice by arm")) == 1
    path, text, page = html_no_traces
    assert path.suffix == ".htm"
    assert len(page.images("Tool choice by arm")) == 0
    assert "pass the traces" in text
    assert len(page.images()) == len(html_report[2].images()) - 1


@pytest.fixture(scope="module")
def ship_report(ship, tmp_path_factory):
    path = tmp_path_factory.mktemp("ship") / "ship.html"
    return _write(ship, path)


def test_html_ship_verdict_has_no_next_experiment(ship, ship_report):
    text, page = ship_report
    assert ship.plan is None
    assert "Verdict: ship" in text and "class='verdict v-ship'" in text
    headings = page.heading_texts()
    assert "The next experiment" not in headings and "Per task" in headings
    assert not page.images("Power curve of the next experiment")
    for reason in ship.decision.reasons:
        assert html.escape(reason) in text
    for explanation in ship.decision.explanations:
        assert html.escape(explanation) in text


# --------------------------------------------------------------------------- #
# 2. Markdown
# --------------------------------------------------------------------------- #
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _markdown_images(path: Path, text: str) -> list[tuple[str, Path]]:
    return [(alt, path.parent / target) for alt, target in IMAGE.findall(text)]


def test_markdown_images_exist_and_decode(markdown_report, html_report):
    path, text = markdown_report
    folder = path.parent / "report_files"
    assert folder.is_dir()
    images = _markdown_images(path, text)
    assert images
    for alt, image in images:
        assert image.is_file(), image
        assert image.parent == folder
        _decode_png(image.read_bytes())
    assert len(images) == len(html_report[2].images())
    assert [alt for alt, _ in images] == [html.unescape(img["alt"]) for img in html_report[2].images()]
    assert sorted(p.name for p in folder.iterdir()) == sorted(image.name for _, image in images)


def test_markdown_verdict_headings_and_no_html(small, markdown_report):
    _, text = markdown_report
    assert f"**Verdict: {small.verdict}**" in text
    for reason in small.decision.reasons:  # shown literally: & < * _ escaped
        literal = reason.replace("&", "&amp;").replace("<", "&lt;").replace("*", "\\*").replace("_", "\\_")
        assert f"- {literal}" in text
    for heading in ("Effects", "Ordinal levels", "Cost and other long-tailed metrics", "Trajectory", "Per task",
                    "The next experiment"):
        assert f"\n## {heading}\n" in text
    assert text.startswith("# agentab: candidate vs baseline\n")
    assert not re.search(r"<(img|table|div|details|script)\b", text)


def _cells(line: str) -> int:
    """Cells of a pipe-table line (escaped pipes are inside cells)."""
    return len(re.split(r"(?<!\\)\|", line)) - 2


def test_markdown_tables_are_pipe_tables(markdown_report):
    _, text = markdown_report
    blocks = [b for b in text.split("\n\n") if b.startswith("|")]
    assert len(blocks) >= 3  # arms, the comparison table, the per-task table
    for block in blocks:
        lines = block.split("\n")
        assert len(lines) >= 3, block
        assert re.fullmatch(r"\|(---\|)+", lines[1]), lines[1]
        width = _cells(lines[0])
        assert lines[1].count("|") - 1 == width
        for line in lines:
            assert line.startswith("| ") or line == lines[1]
            assert line.endswith("|")
            assert _cells(line) == width, line
    assert any(b.startswith("| arm | role |") for b in blocks)
    assert any(b.startswith("| metric | statistic |") for b in blocks)
    assert any(b.startswith("| task\\_id | runs baseline |") for b in blocks)


def test_markdown_format_with_another_suffix_and_no_tasks(scores, tmp_path):
    """format="markdown" with a .txt name; a comparison with cluster=None has no per-task section."""
    result = agentab.compare(scores, metrics=["outcome", "tokens"], cluster=None, n_resamples=199, seed=0)
    path = tmp_path / "notes.txt"
    assert agentab.report(result, path, format="markdown") == path
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# agentab: candidate vs baseline\n")
    assert f"**Verdict: {result.verdict}**" in text
    images = _markdown_images(path, text)
    assert images and all(p.parent == tmp_path / "notes_files" and p.is_file() for _, p in images)
    assert "<html" not in text
    assert "\n## Effects\n" in text and "\n## Trajectory\n" in text
    assert "## Per task" not in text
    assert "Per-task outcome" not in text


def test_markdown_images_folder_taken_by_a_file(small, tmp_path):
    (tmp_path / "r_files").write_text("not a folder")
    with pytest.raises(ReportError, match="r_files"):
        agentab.report(small, tmp_path / "r.md")


# --------------------------------------------------------------------------- #
# 3. Headless Chromium
# --------------------------------------------------------------------------- #
PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var bad = images.filter(function (img) { return !(img.complete && img.naturalWidth > 0); });
  document.body.setAttribute("data-images", String(images.length));
  document.body.setAttribute("data-bad", String(bad.length));
});
</script>"""


def _browser() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "no chromium or chromium-browser on PATH: the report is not checked in a browser"
        if os.environ.get("AGENTAB_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (AGENTAB_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    return found


def _chromium(page: Path, profile: Path, window: tuple[int, int] = (1280, 1000)) -> tuple[str, list[str]]:
    """Open a page in headless Chromium with a window of ``window`` pixels: the DOM after load, and the console
    lines it logged."""
    command = [
        _browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--window-size={window[0]},{window[1]}", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
        "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def _render(page: Path, profile: Path) -> tuple[dict[str, str], list[str]]:
    """Open a page in headless Chromium: the <body> attributes after load, and the console lines it logged."""
    dom, console = _chromium(page, profile)
    body = Page(dom).all("body")
    assert len(body) == 1, dom[:500]
    return body[0], console


def _probed(source: Path, target: Path) -> Path:
    text = source.read_text(encoding="utf-8")
    assert text.count("</body>") == 1
    target.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return target


def test_browser_helper_catches_broken_images_and_console_errors(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><head><title>x</title></head><body>"
                    "<img alt='broken' src='data:image/png;base64,AAAA'>"
                    "<script>console.error('boom')</script></body></html>", encoding="utf-8")
    body, console = _render(_probed(page, tmp_path / "broken_probed.html"), tmp_path / "profile")
    assert body.get("data-images") == "1"
    assert body.get("data-bad") == "1"
    assert any("boom" in line for line in console), console


def test_report_loads_in_a_browser(html_report, tmp_path):
    path, _, page = html_report
    body, console = _render(_probed(path, tmp_path / "probed.html"), tmp_path / "profile")
    assert body.get("data-bad") == "0"
    assert body.get("data-images") == str(len(page.images()))
    assert console == []


def test_unprobed_report_logs_nothing_in_a_browser(html_report, tmp_path):
    body, console = _render(html_report[0], tmp_path / "profile")
    assert "data-images" not in body
    assert console == []


# --------------------------------------------------------------------------- #
# 4. Plots
# --------------------------------------------------------------------------- #
def _hex(colour) -> str:
    return matplotlib.colors.to_hex(colour, keep_alpha=False).upper()


def _series(ax) -> list:
    """Lines with a legend label (matplotlib names the unlabelled ones '_child...')."""
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def _assert_labelled(ax) -> None:
    assert ax.get_xlabel().strip() and ax.get_ylabel().strip() and ax.get_title().strip()


def _assert_arm_bars(ax) -> None:
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["baseline", "candidate"]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in bars] == ["baseline", "candidate"]
    for container, colour in zip(bars, (BLUE, ORANGE)):
        assert len(container.patches) > 0
        assert {_hex(p.get_facecolor()) for p in container.patches} == {colour}


@pytest.fixture(scope="module")
def figures(small, diagnosis, scores):
    """Every figure function on the small comparison; pyplot imported here only to check its figure list."""
    import matplotlib.pyplot as plt

    before, open_figures = dict(matplotlib.rcParams), plt.get_fignums()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        made = {
            "forest": plots.forest(small),
            "level_shares": plots.level_shares(small, "rubric"),
            "ecdf": plots.ecdf(small, "tokens"),
            "quantile_shift": plots.quantile_shift(small, "tokens"),
            "step_buckets": plots.step_buckets(diagnosis, baseline="baseline", candidate="candidate"),
            "failure_rates": plots.failure_rates(diagnosis, baseline="baseline", candidate="candidate"),
            "tool_choice": plots.tool_choice(diagnosis, baseline="baseline", candidate="candidate"),
            "task_outcomes": plots.task_outcomes(agentab.task_profile(small), baseline="baseline",
                                                 candidate="candidate"),
            "power_curve": plots.power_curve(small.plan),
            "profile_figure": plots.profile_figure(agentab.profile(scores, n_resamples=199)),
            "pareto_figure": plots.pareto_figure(agentab.profile(scores, n_resamples=199), x="tokens p95"),
        }
    assert dict(matplotlib.rcParams) == before, "plotting changed matplotlib.rcParams"
    assert plt.get_fignums() == open_figures, "plotting created pyplot figures"
    return made


def test_figures_are_figures_with_labelled_axes(figures):
    assert set(figures) == set(plots.__all__) - {"PALETTE"}
    for name, fig in figures.items():
        assert isinstance(fig, Figure), name
        axes = fig.axes
        assert axes, name
        if name == "forest":
            assert axes[-1].get_xlabel().strip() and axes[0].get_title().strip()
            assert all(ax.get_ylabel().strip() for ax in axes)
        elif name == "profile_figure":  # one panel per column of the profile, each titled
            assert len(axes) > 1 and all(ax.get_title().strip() for ax in axes if ax.get_visible())
        else:
            assert len(axes) == 1, name
            _assert_labelled(axes[0])
        png = BytesIO()
        fig.savefig(png, format="png")
        _decode_png(png.getvalue())


def test_forest_one_row_per_statistic_primary_first(small, figures):
    axes = figures["forest"].axes
    table = small.table
    assert len(axes) == len(table)
    assert table.iloc[0]["role"] == "primary"
    for ax, metric in zip(axes, table["metric"]):
        assert " ".join(ax.get_ylabel().split()).startswith(f"{metric} (")  # wrapped when long
    assert axes[0].yaxis.label.get_fontweight() == "bold"
    assert all(ax.yaxis.label.get_fontweight() == "normal" for ax in axes[1:])
    markers = [[line.get_marker() for line in ax.get_lines() if line.get_marker() not in (None, "None", "")] for ax in axes]
    assert markers[0] == ["D"] and all(m == ["o"] for m in markers[1:])  # the primary's estimate is a diamond
    assert "candidate minus baseline" in axes[0].get_title()


def test_ecdf_one_step_line_per_arm_with_table_quantiles(small, figures):
    ax = figures["ecdf"].axes[0]
    steps = _series(ax)
    assert len(steps) == 2
    assert steps[0].get_label().startswith("baseline") and steps[1].get_label().startswith("candidate")
    assert [_hex(s.get_color()) for s in steps] == [BLUE, ORANGE]
    assert [s.get_drawstyle() for s in steps] == ["steps-post"] * 2
    n = small.arms["runs"]
    assert steps[0].get_label() == f"baseline ({n['baseline']} runs)"
    # The p50 and p95 markers sit on the comparison table's quantiles.
    table = small.table.set_index("metric")
    for marker, row in (("o", "tokens p50"), ("^", "tokens p95")):
        for arm, colour in (("baseline", BLUE), ("candidate", ORANGE)):
            found = [line for line in ax.get_lines() if line.get_marker() == marker and _hex(line.get_color()) == colour]
            assert len(found) == 1
            assert found[0].get_xdata()[0] == pytest.approx(table.loc[row, arm])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [s.get_label() for s in steps]


def test_level_shares_one_bar_per_arm_summing_to_one(figures):
    ax = figures["level_shares"].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["baseline", "candidate"]
    rows: dict[int, float] = {}
    for patch in ax.patches:
        y = round(patch.get_y() + patch.get_height() / 2)
        rows[y] = rows.get(y, 0.0) + patch.get_width()
    assert sorted(rows) == [0, 1]
    assert rows[0] == pytest.approx(1.0) and rows[1] == pytest.approx(1.0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0", "1", "2", "3"]


@pytest.mark.parametrize("name", ["step_buckets", "failure_rates", "tool_choice"])
def test_grouped_bars_one_series_per_arm_in_arm_colours(figures, name):
    _assert_arm_bars(figures[name].axes[0])


def test_quantile_shift_has_the_deciles_and_p95(small, figures):
    ax = figures["quantile_shift"].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"p{10 * k}" for k in range(1, 10)] + ["p95"]
    joined = [line for line in ax.get_lines() if len(line.get_xdata()) == 10]
    assert len(joined) == 1
    xs, ys = joined[0].get_data()
    assert np.allclose(xs, [*(np.arange(1, 10) / 10), 0.95])
    assert "% change" in ax.get_ylabel()
    # The median's and the p95's shifts are the table's ratios (same quantile definition), as % changes.
    rows = small.table.set_index("metric")
    assert ys[9] == pytest.approx(100 * (rows.loc["tokens p95", "ratio"] - 1))
    assert ys[4] == pytest.approx(100 * (rows.loc["tokens p50", "ratio"] - 1))


def test_task_outcomes_points(small, figures):
    ax = figures["task_outcomes"].axes[0]
    profile = agentab.task_profile(small)
    (points,) = ax.collections
    offsets = np.asarray(points.get_offsets())
    pairs = set(zip(profile["outcome baseline"].astype(float), profile["outcome candidate"].astype(float)))
    assert {tuple(p) for p in offsets} == pairs
    tasks = (np.asarray(points.get_sizes()) - 25) / 35
    assert tasks.sum() == pytest.approx(len(profile))
    assert ax.get_title() == f"Per task: {len(profile)} tasks (area: tasks)"


def test_power_curve_one_line_per_seeds_and_the_target(small, figures):
    plan = small.plan
    ax = figures["power_curve"].axes[0]
    seeds = sorted({1, plan.seeds_per_task, 2 * plan.seeds_per_task})
    assert [line.get_label() for line in _series(ax)] == [f"{m} seed(s) per task" for m in seeds]
    horizontal = [line for line in ax.get_lines() if len(set(np.asarray(line.get_ydata(), float))) == 1]
    assert any(np.asarray(line.get_ydata(), float)[0] == pytest.approx(plan.target) for line in horizontal)
    for line in _series(ax):
        assert np.all(np.diff(np.asarray(line.get_ydata(), float)) >= -1e-9), "power grows with tasks"
    assert ax.get_ylim() == (0.0, 1.0)


# --------------------------------------------------------------------------- #
# 5. task_profile
# --------------------------------------------------------------------------- #
def _manual_profile(comparison) -> pd.DataFrame:
    data = comparison.data.assign(task=comparison.data["task_id"].astype(str), group=comparison.data["arm"].astype(str))
    parts = []
    for arm in (comparison.baseline, comparison.candidate):
        groups = data[data["group"] == arm].groupby("task")
        outcome = groups["outcome"].apply(lambda s: s.astype(float).mean())
        parts.append(pd.DataFrame({
            f"runs {arm}": groups.size(),
            f"outcome {arm}": outcome,
            f"seeds {arm}": groups["outcome"].apply(lambda s: f"{int(s.astype(float).sum())}/{int(s.notna().sum())}"),
            f"path valid {arm}": groups["reference_match"].apply(lambda s: s.astype(float).mean()),
            f"side effects {arm}": groups.apply(
                lambda f: float(f[["forbidden_side_effects", "unexpected_side_effects"]].astype("Float64").sum(axis=1, min_count=1).sum()), include_groups=False),
            f"cost {arm}": groups["cost_usd"].median(),
        }))
    manual = pd.concat(parts, axis=1)
    manual["change"] = manual[f"outcome {comparison.candidate}"] - manual[f"outcome {comparison.baseline}"]
    return manual


def test_task_profile_matches_a_manual_groupby(small):
    profile = agentab.task_profile(small)
    columns = [f"{what} {arm}" for arm in ("baseline", "candidate")
               for what in ("runs", "outcome", "seeds", "path valid", "side effects", "cost")] + ["change"]
    assert list(profile.columns) == columns
    assert profile.index.name == "task_id"
    assert sorted(profile.index) == sorted(small.data["task_id"].astype(str).unique())
    manual = _manual_profile(small).loc[profile.index]
    for column in columns:
        if column.startswith("seeds"):
            assert profile[column].tolist() == manual[column].tolist(), column
        else:
            assert np.allclose(profile[column].astype(float), manual[column].astype(float), equal_nan=True), column
    assert all(s == f"{v * N_SEEDS:.0f}/{N_SEEDS}" for s, v in zip(profile["seeds baseline"],
                                                                          profile["outcome baseline"]))
    change = profile["change"].astype(float).to_numpy()
    assert np.all(np.diff(change) >= 0), "regressions first"


def test_task_profile_task_run_by_one_arm(scores):
    one_armed = scores[~((scores["arm"] == "candidate") & (scores["task_id"] == "t003"))]
    # Paired: the task is left out of the analysis, so out of the data, the figures and the profile.
    result = agentab.compare(one_armed, metrics=["outcome"], n_resamples=99, seed=0)
    assert result.design["kind"] == "paired" and "t003" not in agentab.task_profile(result).index
    assert "t003" not in set(result.data["task_id"])
    # Independent tasks: the task counts, and goes last with no change.
    result = agentab.compare(one_armed, metrics=["outcome"], paired=False, n_resamples=99, seed=0)
    profile = agentab.task_profile(result)
    assert profile.index[-1] == "t003"
    assert pd.isna(profile.loc["t003", "change"]) and pd.isna(profile.loc["t003", "outcome candidate"])
    assert profile.loc["t003", "runs baseline"] == N_SEEDS


def test_task_profile_errors(scores, small):
    no_tasks = agentab.compare(scores, metrics=["outcome"], cluster=None, n_resamples=99, seed=0)
    with pytest.raises(ReportError, match="cluster=None"):
        agentab.task_profile(no_tasks)
    with pytest.raises(ReportError, match="'no_such_column'"):
        agentab.task_profile(small, "no_such_column")
    ordinal = agentab.task_profile(small, "rubric")
    assert ordinal["seeds baseline"].str.contains(" to ").all()


# --------------------------------------------------------------------------- #
# 6. Errors
# --------------------------------------------------------------------------- #
def test_report_errors_name_the_argument(small, tmp_path):
    with pytest.raises(ReportError, match="Comparison.*got DataFrame"):
        agentab.report(small.data, tmp_path / "r.html")
    with pytest.raises(ReportError, match="Comparison.*got str"):
        agentab.report("comparison", tmp_path / "r.html")
    unknown = tmp_path / "r.pdf"
    with pytest.raises(ReportError, match=re.escape(str(unknown)) + ".*format="):
        agentab.report(small, unknown)
    with pytest.raises(ReportError, match=r"`format` == 'pdf'"):
        agentab.report(small, tmp_path / "r.html", format="pdf")
    folder = tmp_path / "out.html"
    folder.mkdir()
    with pytest.raises(ReportError, match=re.escape(str(folder)) + " is a folder"):
        agentab.report(small, folder)
    missing = tmp_path / "nope" / "r.html"
    with pytest.raises(ReportError, match=re.escape(str(missing.parent)) + ": no such folder"):
        agentab.report(small, missing)
    with pytest.raises(ReportError, match="`traces` must be agentab Traces, got DataFrame"):
        agentab.report(small, tmp_path / "r.html", traces=small.data)
    with pytest.raises(ReportError, match="`diagnosis` must come from agentab.diagnose, got dict"):
        agentab.report(small, tmp_path / "r.html", diagnosis={})
    assert list(tmp_path.iterdir()) == [folder], "nothing written on error"


# --------------------------------------------------------------------------- #
# 7. Reports of other comparisons
# --------------------------------------------------------------------------- #
BASE, CAND = "<b>old & slow</b>", "new 'fast' <i>"


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A table without agentab.score's columns; arm names full of HTML."""
    rng = np.random.default_rng(0)
    rows = [{"arm": arm, "task_id": f"t{t:02d}", "outcome": bool(rng.random() < 0.5),
             "tokens": float(rng.lognormal(8, 1))}
            for arm in (BASE, CAND) for t in range(12) for _ in range(2)]
    result = agentab.compare(pd.DataFrame(rows), baseline=BASE, candidate=CAND, n_resamples=199, seed=0)
    path = tmp_path_factory.mktemp("plain") / "plain.html"
    return result, *_write(result, path)


def test_plain_table_report_has_no_diagnosis(plain):
    _, text, page = plain
    assert "No diagnosis" in text
    assert not page.images("Success rate by step-count bucket")
    assert not page.images("Failure shapes by arm")
    assert "Effects" in page.heading_texts() and "Per task" in page.heading_texts()


def test_report_escapes_arm_names(plain):
    result, text, page = plain
    for name in (BASE, CAND):
        assert name not in text
        assert html.escape(name) in text
    assert page.title == f"agentab: {CAND} vs {BASE}"
    assert not {tag for tag, _ in page.tags} & {"b", "i", "script"}
    assert result.verdict in text


def test_dont_ship_report(full_scores, tmp_path):
    result = agentab.compare(full_scores, baseline="candidate", candidate="baseline", metrics=METRICS,
                             guardrails=GUARD, n_resamples=499, seed=0)
    assert result.verdict == "don't ship" and result.plan is None
    text, page = _write(result, tmp_path / "r.html")
    assert "Verdict: don&#x27;t ship" in text and "class='verdict v-dont'" in text
    assert "Verdict: don't ship" in "".join(page.text)
    assert page.title == "agentab: baseline vs candidate"
    assert "The next experiment" not in page.heading_texts()
    for reason in result.decision.reasons:
        assert html.escape(reason) in text


# --------------------------------------------------------------------------- #
# 8. to_dict
# --------------------------------------------------------------------------- #
KEYS = {"schema", "verdict", "reasons", "explanations", "baseline", "candidate", "primary", "arms", "design",
        "settings", "metrics", "levels", "guardrails", "notes"}


def test_to_dict_is_strict_json(small, scores):
    out = small.to_dict()
    assert KEYS <= set(out)
    assert out["schema"] == "agentab.comparison/1"
    assert out["verdict"] == small.verdict and out["reasons"] == list(small.decision.reasons)
    assert (out["baseline"], out["candidate"], out["primary"]) == ("baseline", "candidate", "outcome")
    assert json.loads(json.dumps(out, allow_nan=False)) == out
    assert [row["metric"] for row in out["metrics"]] == small.table["metric"].tolist()
    for row, (_, expected) in zip(out["metrics"], small.table.iterrows()):
        assert set(row) == set(TABLE_COLUMNS)
        for column in TABLE_COLUMNS:
            value = expected[column]
            if pd.isna(value):
                assert row[column] is None, (row["metric"], column)
            elif isinstance(value, (float, np.floating)):
                assert row[column] == pytest.approx(float(value))
    mean = next(row for row in out["metrics"] if row["metric"] == "tokens mean")
    assert mean["p_value"] is None and mean["ci_low"] is None  # descriptive row: NaN in the table
    assert [a["arm"] for a in out["arms"]] == ["baseline", "candidate"]
    assert out["guardrails"][0]["rule"] == "tokens p95 <= +10%"
    assert {row["metric"] for row in out["levels"]} == {"rubric"}
    again = agentab.compare(scores, metrics=METRICS, guardrails=GUARD, n_resamples=299, seed=0)
    assert again.to_dict() == out


# --------------------------------------------------------------------------- #
# 9. Notebook displays
# --------------------------------------------------------------------------- #
NASTY = "p < 0.05 & <script>x</script>"


def _escaped(fragment: str, shown: str) -> None:
    assert isinstance(fragment, str)
    assert html.escape(shown) in fragment
    assert "<script>" not in fragment


def test_repr_html_of_comparison_and_decision(small):
    fragment = small._repr_html_()
    assert isinstance(fragment, str) and fragment.startswith("<div>")
    assert f"Verdict: {small.verdict}" in fragment
    for reason in small.decision.reasons:
        _escaped(fragment, reason)
    decision = Decision("don't ship", (NASTY,), ("tokens: worse & costly <really>",), ())
    fragment = decision._repr_html_()
    _escaped(fragment, NASTY)
    _escaped(fragment, "tokens: worse & costly <really>")
    assert "Verdict: don&#x27;t ship" in fragment


def test_repr_html_of_diagnosis_and_finding(diagnosis):
    assert "No findings: no failure shape passed its threshold." in Diagnosis(findings=[], tables={})._repr_html_()
    assert diagnosis.findings
    fragment = diagnosis._repr_html_()
    assert f"{len(diagnosis.findings)} finding(s)" in fragment
    for finding in diagnosis.findings:
        assert html.escape(finding.title) in fragment
    finding = Finding(NASTY, "read <this> & that", pd.DataFrame({"runs": [3]}, index=["<arm>"]))
    fragment = finding._repr_html_()
    _escaped(fragment, NASTY)
    _escaped(fragment, "read <this> & that")
    assert "&lt;arm&gt;" in fragment and "<arm>" not in fragment
    both = Diagnosis(findings=[finding])._repr_html_()
    _escaped(both, NASTY)


def test_repr_html_of_verdict_and_plan(small, scores):
    verdict = agentab.score_run(["read_file"], required=("<x>&y",), outcome=True)
    assert not verdict.passed
    fragment = verdict._repr_html_()
    assert "FAIL" in fragment
    for reason in verdict.reasons:
        _escaped(fragment, reason)
    assert "&lt;x&gt;&amp;y" in fragment
    plan = agentab.power.plan(scores[scores["arm"] == "baseline"], "outcome", 0.2)
    for p in (plan, small.plan):
        fragment = p._repr_html_()
        assert isinstance(fragment, str)
        assert html.escape(str(p).splitlines()[0]) in fragment


# --------------------------------------------------------------------------- #
# 10. Progress callbacks
# --------------------------------------------------------------------------- #
def test_compare_progress_once_per_metric(scores):
    calls = []
    result = agentab.compare(scores, metrics=METRICS, n_resamples=99, seed=0,
                             progress=lambda *args: calls.append(args))
    names = list(result.metrics.index)
    assert [c[0] for c in calls] == names
    assert [c[1] for c in calls] == list(range(1, len(names) + 1))
    assert {c[2] for c in calls} == {len(names)}
    with pytest.raises(CompareError, match="progress"):
        agentab.compare(scores, metrics=["outcome"], n_resamples=99, seed=0, progress="yes")


def test_load_traces_progress_once_per_file(tmp_path):
    paths = agentab.datasets.write_example(tmp_path, n_tasks=3, n_seeds=2)
    calls = []
    traces = agentab.load_traces(tmp_path, progress=lambda *args: calls.append(args))
    assert len(traces.runs) == 12
    files = sorted(str(p) for p in paths.values())
    assert calls == [(files[0], 1, 2), (files[1], 2, 2)]
    with pytest.raises(TypeError, match="progress"):
        agentab.load_traces(tmp_path, progress=3)


# --------------------------------------------------------------------------- #
# 11. diagnose(scores, traces=)
# --------------------------------------------------------------------------- #
def test_diagnose_scores_with_traces_matches_traces(scores, traces, specs):
    from_scores = agentab.diagnose(scores, traces=traces).tables["tool_choice"]
    from_traces = agentab.diagnose(traces, spec=specs).tables["tool_choice"]
    pd.testing.assert_frame_equal(from_scores, from_traces)
    assert list(from_scores.columns) == ["baseline", "candidate"]
    assert np.allclose(from_scores.sum(), 1.0)


def test_diagnose_one_arm_of_the_scores_with_all_traces(scores, traces):
    one = scores[scores["arm"] == "candidate"]
    table = agentab.diagnose(one, traces=traces).tables["tool_choice"]
    assert list(table.columns) == ["candidate"]
    steps = traces.steps.merge(traces.runs[["run_id", "arm"]], on="run_id")
    expected = steps.loc[steps["arm"].astype(str) == "candidate", "tool"].astype(str).value_counts(normalize=True)
    assert np.allclose(table["candidate"].sort_index(), expected.sort_index())
    with pytest.raises(TypeError, match="traces"):
        agentab.diagnose(one, traces=one)


def test_tool_choice_columns_are_named_by_the_grouping(scores, traces):
    table = agentab.diagnose(scores, traces=traces).tables["tool_choice"]
    assert table.columns.name == "arm"


# --------------------------------------------------------------------------- #
# Review fixes: step order, direction, simultaneous shift intervals, many levels, many tasks
# --------------------------------------------------------------------------- #
def test_step_bucket_figure_is_in_step_order(figures, diagnosis):
    ax = figures["step_buckets"].axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == list(pd.unique(diagnosis.tables["steps"].index.get_level_values("steps")))
    assert labels[:3] == ["0-4", "5-9", "10-14"]


def _colour_counts(ax) -> dict[str, int]:
    colours = [_hex(c).lower() for c in ax.collections[0].get_facecolors()]
    return {c: colours.count(c) for c in set(colours)}


def test_task_view_follows_the_metric_direction(scores):
    # loop: lower is better. A task with more loops in the candidate regressed.
    result = agentab.compare(scores, metrics=["outcome", "loop"], primary="loop", n_resamples=99, seed=0)
    profile = agentab.task_profile(result)
    assert profile["change"].iloc[0] == profile["change"].max() > 0  # the largest rise first: a regression
    fig = agentab.plots.task_outcomes(profile, baseline="baseline", candidate="candidate", metric="loop",
                                      direction="lower")
    x, y = profile["loop baseline"].to_numpy(), profile["loop candidate"].to_numpy()
    points = pd.DataFrame({"x": x, "y": y}).value_counts().reset_index()
    counts = _colour_counts(fig.axes[0])
    assert counts.get("#d55e00", 0) == int((points["y"] > points["x"]).sum())  # rises: worse
    assert counts.get("#009e73", 0) == int((points["y"] < points["x"]).sum())  # falls: better


def test_quantile_shift_intervals_are_simultaneous(small, figures):
    ax = figures["quantile_shift"].axes[0]
    assert "Bonferroni over 10 quantiles" in ax.get_title()
    # The p95 interval (as % change) contains the table's own (pointwise) interval for tokens p95.
    row = small.table.set_index("metric").loc["tokens p95"]
    segments = [line for line in ax.get_lines() if len(line.get_xdata()) == 2 and np.allclose(line.get_xdata(), 0.95)]
    low, high = sorted(segments[0].get_ydata())
    assert low <= 100 * (row["ratio_low"] - 1) + 1e-9 and high >= 100 * (row["ratio_high"] - 1) - 1e-9


def test_many_ordinal_levels_get_distinct_ordered_colours():
    from matplotlib.colors import to_hex

    for n in range(1, 10):
        colours = [to_hex(c) for c in agentab.plots.level_colours(n)]
        assert len(set(colours)) == n
    assert agentab.plots.level_colours(2) == ["#D55E00", "#0072B2"]  # worst vermillion, best blue


def test_per_task_table_of_many_tasks_shows_both_ends(tmp_path):
    rng = np.random.default_rng(0)
    n_tasks = 70
    frame = pd.DataFrame({
        "arm": np.repeat(["baseline", "candidate"], n_tasks * 2),
        "task_id": np.tile(np.repeat([f"t{i:02d}" for i in range(n_tasks)], 2), 2),
        "outcome": rng.random(n_tasks * 4) < 0.5,
    })
    result = agentab.compare(frame, metrics=["outcome"], n_resamples=99, seed=0)
    text = agentab.report(result, tmp_path / "many.md").read_text()
    assert "The 30 largest regressions and the 30 largest improvements of 70 tasks" in text
    table = text.split("The 30 largest regressions")[1].split("\n\n")[1]
    assert len(table.splitlines()) == 2 + 60


def test_to_dict_carries_the_plan_of_an_inconclusive_verdict(small, ship):
    out = small.to_dict()
    assert out["plan"]["tasks"] == small.plan.tasks and out["plan"]["seeds_per_task"] == small.plan.seeds_per_task
    assert ship.to_dict()["plan"] is None
    json.dumps(out, allow_nan=False)


# --------------------------------------------------------------------------- #
# 5. Layout: long metric and arm names, many metrics (boxes measured, in matplotlib and in Chromium)
# --------------------------------------------------------------------------- #
LONG_BASE = "baseline agent: claude-sonnet-4 with the react-v1 harness, a 200k context window"
LONG_CAND = "candidate agent: claude-sonnet-4 with the react-v2 harness, a 200k context window"


def _long(name: str) -> str:
    return f"{name} measured over every step of the trajectory of the run (agentab layout test)"


@pytest.fixture(scope="module")
def wide(scores):
    """20+ metrics with 60+ character names and long arm names: the report's layout under stress."""
    rng = np.random.default_rng(3)
    data = scores.copy()
    data["arm"] = data["arm"].astype(str).map({"baseline": LONG_BASE, "candidate": LONG_CAND})
    metrics: dict[str, object] = {"outcome": "binary", "rubric": "ordinal", _long("tokens"): "cost"}
    data[_long("tokens")] = data["tokens"]
    for i in range(8):
        data[_long(f"binary check {i}")] = rng.random(len(data)) < 0.3 + 0.05 * i
        metrics[_long(f"binary check {i}")] = "binary"
    for i in range(6):
        data[_long(f"step count {i}")] = rng.poisson(5 + 3 * i, len(data))
        metrics[_long(f"step count {i}")] = "count"
    for i in range(6):
        data[_long(f"score {i}")] = rng.normal(0.5, 0.2, len(data))
        metrics[_long(f"score {i}")] = "continuous"
    assert len(metrics) >= 20 and all(len(m) >= 60 for m in list(metrics)[2:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        return agentab.compare(data, metrics=metrics, baseline=LONG_BASE, guardrails={_long("tokens"): "p95 <= +10%"},
                               n_resamples=199, seed=0)


def _boxes(fig) -> list[tuple[str, object]]:
    """Every visible text of a drawn figure (titles, labels, tick labels, annotations, legends) and every data
    marker, as display-space boxes with a description."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    out = []
    legends = fig.findobj(lambda a: type(a).__name__ == "Legend")
    inside = {id(t) for legend in legends for t in (*legend.get_texts(), legend.get_title())}  # boxed by their legend
    for ax in fig.axes:  # tick labels beyond the axis limits exist but are not drawn
        for axis in (ax.xaxis, ax.yaxis):
            drawn = {id(t) for tick in axis._update_ticks() for t in (tick.label1, tick.label2)}
            inside |= {id(t) for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks())
                       for t in (tick.label1, tick.label2) if id(t) not in drawn}
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip() and id(text) not in inside:
            box = text.get_window_extent(renderer)
            if box.width > 0 and box.height > 0:
                out.append((f"text {text.get_text()[:40]!r}", box))
    for legend in legends:
        out.append(("legend", legend.get_window_extent(renderer)))
    for line in fig.findobj(Line2D):
        if line.get_visible() and line.get_marker() not in (None, "None", "", " ") and line.axes is not None:
            half = line.get_markersize() * fig.dpi / 72 / 2
            for x, y in line.get_transform().transform(line.get_xydata()):
                if np.isfinite(x) and np.isfinite(y):
                    out.append((f"marker {line.get_marker()}", Bbox([[x - half, y - half], [x + half, y + half]])))
    return out


def _overlaps(fig) -> list[str]:
    """Pairs of boxes that overlap (an ECDF's p50/p95 label may touch a marker, nothing else may), and boxes
    beyond the figure's width."""
    boxes = _boxes(fig)
    width = fig.get_size_inches()[0] * fig.dpi
    problems = []
    for name, box in boxes:  # a taller figure is saved taller (bbox_inches="tight"); a wider one is shrunk to fit
        if box.x0 < -1 or box.x1 > width + 1:
            problems.append(f"{name} beyond the figure's width ({box.x0:.0f}..{box.x1:.0f} of {width:.0f} px)")
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if a.startswith("marker") and b.startswith("marker"):
                continue  # data markers may touch each other
            if a.startswith("marker") and b.startswith("text") or a.startswith("text") and b.startswith("marker"):
                if "'p50'" in a + b or "'p95'" in a + b:
                    continue  # an ECDF's quantile label sits beside its marker
            inter = Bbox.intersection(box_a, box_b)
            if inter is not None and inter.width > 1 and inter.height > 1:
                problems.append(f"{a} overlaps {b}")
    return problems


@pytest.fixture(scope="module")
def wide_figures(wide, traces):
    diagnosis = agentab.diagnose(wide.data, traces=traces, by="arm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        made = {
            "forest": plots.forest(wide),
            "level_shares": plots.level_shares(wide, "rubric"),
            "ecdf": plots.ecdf(wide, _long("tokens")),
            "quantile_shift": plots.quantile_shift(wide, _long("tokens")),
            "step_buckets": plots.step_buckets(diagnosis, baseline=LONG_BASE, candidate=LONG_CAND),
            "failure_rates": plots.failure_rates(diagnosis, baseline=LONG_BASE, candidate=LONG_CAND),
            "task_outcomes": plots.task_outcomes(agentab.task_profile(wide), baseline=LONG_BASE, candidate=LONG_CAND),
        }
        if wide.plan is not None:
            made["power_curve"] = plots.power_curve(wide.plan)
    return made


def test_boxes_catch_overlapping_labels():
    """The check can fail: a title written over a tick label, a label beyond the figure."""
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.set_title("a title")
    ax.text(0.5, 1.02, "written over the title", transform=ax.transAxes, ha="center")
    problems = _overlaps(fig)
    assert any("overlaps" in p for p in problems)
    ax.set_xlabel("an x label far wider than the figure, so that the saved image would have to be shrunk to fit")
    assert any("beyond the figure's width" in p for p in _overlaps(fig))


@pytest.mark.parametrize("name", ["forest", "level_shares", "ecdf", "quantile_shift", "step_buckets", "failure_rates",
                                  "task_outcomes", "power_curve"])
@pytest.mark.slow
def test_figures_with_long_names_have_no_overlapping_or_cut_labels(wide_figures, name):
    if name not in wide_figures:
        pytest.skip(f"no {name} figure for this comparison")
    assert _overlaps(wide_figures[name]) == []


#: Measures the laid-out page (every details opened): boxes of text and figures that overlap (neither inside the
#: other), boxes beyond the viewport, content wider than its box (cut off or spilling), images shown shrunk.
LAYOUT_PROBE = """<script>
window.addEventListener("load", function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var width = document.documentElement.clientWidth;
  var selector = "h1,h2,h3,p,li,th,td,img,pre,summary,footer,.verdict";
  var els = Array.prototype.slice.call(document.querySelectorAll(selector));
  var boxes = els.map(function (e) {
    var r = e.getBoundingClientRect();
    return {e: e, l: r.left + window.scrollX, r: r.right + window.scrollX, t: r.top + window.scrollY,
            b: r.bottom + window.scrollY};
  });
  function name(e) { return e.tagName + " " + (e.getAttribute("alt") || e.textContent).slice(0, 70); }
  var out = {width: width, page: document.documentElement.scrollWidth, measured: boxes.length, overlaps: [],
             beyond: [], spilling: [], shrunk: []};
  boxes.forEach(function (a, i) {
    if (a.r > width + 0.5 || a.l < -0.5) out.beyond.push(name(a.e) + " [" + Math.round(a.l) + ", " + Math.round(a.r) + "]");
    if (a.e.tagName !== "IMG" && a.e.scrollWidth > a.e.clientWidth + 1 && a.e.clientWidth > 0)
      out.spilling.push(name(a.e) + " (" + a.e.scrollWidth + " > " + a.e.clientWidth + " px)");
    if (a.e.tagName === "IMG" && a.e.naturalWidth > a.e.width + 1) out.shrunk.push(name(a.e));
    for (var j = i + 1; j < boxes.length; j++) {
      var b = boxes[j];
      if (a.e.contains(b.e) || b.e.contains(a.e)) continue;
      if (Math.min(a.r, b.r) - Math.max(a.l, b.l) > 0.5 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 0.5)
        out.overlaps.push(name(a.e) + " | " + name(b.e));
    }
  });
  var pre = document.createElement("pre");
  pre.id = "agentab-layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _layout(report: Path, tmp_path: Path, window: tuple[int, int]) -> dict:
    text = report.read_text(encoding="utf-8")
    probed = tmp_path / f"layout-{window[0]}.html"
    probed.write_text(text.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom, console = _chromium(probed, tmp_path / f"profile-{window[0]}", window)
    assert console == []
    found = re.search(r"<pre id=\"agentab-layout\">(.*?)</pre>", dom, re.S)
    assert found, dom[-500:]
    return json.loads(html.unescape(found.group(1)))


def test_layout_probe_catches_overlap_overflow_and_shrinking(tmp_path):
    page = tmp_path / "bad.html"
    wide_png = base64.b64encode(_png_of_width(2000)).decode("ascii")
    page.write_text(
        "<!DOCTYPE html><html><head><style>body{width:600px} .up{margin-top:-2em}</style></head><body>"
        "<p>first paragraph</p><p class='up'>second paragraph, drawn over the first</p>"
        "<table><tr><td>" + "x" * 300 + "</td></tr></table>"
        f"<img alt='too wide' style='max-width:100%' src='data:image/png;base64,{wide_png}'>"
        "</body></html>", encoding="utf-8")
    out = _layout(page, tmp_path, (800, 600))
    assert out["measured"] >= 4
    assert any("first paragraph" in o and "second paragraph" in o for o in out["overlaps"]), out
    assert any("xxxx" in b for b in out["beyond"]), out
    assert out["shrunk"] == ["IMG too wide"], out


def _png_of_width(width: int) -> bytes:
    buffer = BytesIO()
    Image.new("RGB", (width, 20), "white").save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def wide_report(wide, traces, tmp_path_factory):
    path = tmp_path_factory.mktemp("wide") / "wide.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agentab.StatsWarning)
        agentab.report(wide, path, traces=traces)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("window", [(1280, 1000), (760, 1000)])
def test_report_with_long_names_and_many_metrics_fits_the_page(wide_report, tmp_path, window):
    """No two text or figure boxes overlap, none reaches beyond the window, no content spills out of its box,
    and on a wide screen no figure is shown shrunk (its labels would be too small to read)."""
    out = _layout(wide_report, tmp_path, window)
    assert out["measured"] > 200  # every table opened: the per-task and comparison tables are measured
    assert out["overlaps"] == []
    assert out["beyond"] == []
    assert out["spilling"] == []
    assert out["page"] <= out["width"]
    if window[0] >= 1000:
        assert out["shrunk"] == []


@pytest.fixture(scope="module")
def wide_many_report(scores, traces, tmp_path_factory):
    """A many-arm report with long arm names: two candidates, each section opened onto its cost, trajectory and
    flipped tasks (the second candidate's runs are not in the traces: its runs say so)."""
    data = scores.copy()
    data["arm"] = data["arm"].astype(str).map({"baseline": LONG_BASE, "candidate": LONG_CAND})
    second = data[data["arm"] == LONG_CAND].assign(arm=LONG_CAND + " and a longer system prompt")
    second["run_id"] = "second-" + second["run_id"].astype(str)
    data = pd.concat([data, second], ignore_index=True)
    path = tmp_path_factory.mktemp("wide_many") / "wide_many.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = agentab.compare(data, baseline=LONG_BASE, candidate="all", metrics=METRICS, n_resamples=199, seed=0)
        agentab.report(result, path, traces=traces)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("window", [(1280, 1000), (760, 1000)])
def test_many_arm_report_with_every_candidates_sections_fits_the_page(wide_many_report, tmp_path, window):
    """The same layout checks on a many-arm report, every candidate's section opened."""
    text = wide_many_report.read_text(encoding="utf-8")
    assert text.count("<h2>Cost and other long-tailed metrics</h2>") == 2 and text.count("<h2>Trajectory</h2>") == 2
    assert text.count("<h2>Which tasks flipped</h2>") == 2
    out = _layout(wide_many_report, tmp_path, window)
    assert out["measured"] > 400
    assert out["overlaps"] == []
    assert out["beyond"] == []
    assert out["spilling"] == []
    assert out["page"] <= out["width"]
    if window[0] >= 1000:
        assert out["shrunk"] == []


@pytest.mark.slow
def test_independent_runs_for_want_of_a_task_column_are_announced_first(scores, tmp_path):
    result = agentab.compare(scores.drop(columns="task_id"), metrics=["outcome", "tokens"], n_resamples=199, seed=0)
    assert result.design.warning
    page = Page(agentab.report(result, tmp_path / "r.html").read_text(encoding="utf-8"))
    visible = [t.strip() for t in page.text if t.strip()]
    title = visible.index("agentab: candidate vs baseline", 1)  # the <title>, then the <h1>
    assert visible[title + 1] == f"Warning: {result.design.warning}."
    markdown = agentab.report(result, tmp_path / "r.md").read_text(encoding="utf-8")
    assert markdown.split("\n\n")[1].startswith("**Warning: runs treated as independent")
    with_tasks = agentab.report(agentab.compare(scores, metrics=["outcome"], n_resamples=199, seed=0), tmp_path / "t.md")
    assert "Warning:" not in with_tasks.read_text(encoding="utf-8")


def test_a_long_holm_family_is_listed_in_its_own_details(wide, wide_report):
    page = wide_report.read_text(encoding="utf-8")
    n = len(wide.holm_family)
    assert n > 8
    assert f"Holm family: {n} rows adjusted together" in page
    listed = page.split(f"<summary>The {n} rows of the Holm family</summary>")[1].split("</details>")[0]
    assert listed.count("<li>") == n


def test_a_primary_outcome_of_another_name_gets_its_diagnosis(scores, tmp_path):
    renamed = scores.rename(columns={"outcome": "resolved"})
    result = agentab.compare(renamed, metrics={"resolved": "binary", "tokens": "cost"}, primary="resolved",
                             n_resamples=199, seed=0)
    text = agentab.report(result, tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Trajectory" in text and "No diagnosis" not in text
    assert "Success rate by step-count bucket" in text
    assert "outcome" not in result.data  # the comparison's own runs are not changed


# --------------------------------------------------------------------------- #
# Which tasks flipped
# --------------------------------------------------------------------------- #
def _section(text: str) -> str:
    """The HTML of the "Which tasks flipped" section (up to the next h2)."""
    start = text.index("<h2>Which tasks flipped</h2>")
    end = text.find("<h2>", start + 1)
    return text[start:end if end > 0 else len(text)]


def test_flipped_section_opens_each_task_onto_its_runs_trajectories(small, traces, html_report):
    _, text, page = html_report
    headings = page.heading_texts()
    assert headings.index("Per task") < headings.index("Which tasks flipped") < headings.index("The next experiment")
    section = _section(text)
    flipped = small.flipped_tasks(n=10)
    assert len(flipped)
    assert "not adjusted for the number of tasks" in section
    for _, row in flipped.iterrows():
        summary = f"<summary>{html.escape(row['direction'])}: {html.escape(str(row['task_id']))} ("
        assert section.count(summary) == 1, summary
        task = section.split(summary, 1)[1]
        for run in (*row["runs_baseline"], *row["runs_candidate"]):
            assert f"<summary>run {html.escape(run)}: outcome " in task
    # A run's details hold its steps: every tool it called, with the arguments as the traces have them.
    run = flipped.iloc[0]["runs_baseline"][0]
    steps = traces.steps[traces.steps["run_id"] == run]
    body = section.split(f"<summary>run {html.escape(run)}: ", 1)[1].split("</details>", 1)[0]
    assert body.count("<tr>") == len(steps)  # one row per step (the header row has a style)
    for tool, args in zip(steps["tool"], steps["args"]):
        assert f"<td>{html.escape(str(tool))}</td>" in body
        assert html.escape(str(args), quote=False) in body


def test_flipped_section_without_traces_is_the_table_and_says_how(small, html_no_traces, markdown_report):
    _, text, _ = html_no_traces
    section = _section(text)
    assert "trajectories are not shown: pass the traces" in section
    assert section.count("<table") == 1 and "<th>arguments</th>" not in section
    _, markdown = markdown_report
    part = markdown.split("\n## Which tasks flipped\n", 1)[1].split("\n## ", 1)[0]
    assert "| task\\_id | direction | baseline | candidate | effect | p (per task) | p (BH) |" in part
    assert part.count("\n| t0") == len(small.flipped_tasks(n=10))  # one row per listed task (ids t000...)
    assert "in the HTML report" in part and "arguments" not in part


def test_flipped_section_escapes_hostile_task_ids_and_tool_arguments(record, tmp_path):
    hostile = "<script>alert('task')</script>"
    arguments = {"cmd": "<script>alert(1)</script>", "path": "</td></tr><img src=x onerror=alert(2)>"}
    records = []
    for arm, good in (("baseline", True), ("candidate", False)):
        for task in (hostile, "plain"):
            for seed in range(3):
                r = record(run_id=f"{arm}-{'h' if task == hostile else 'p'}-{seed}<b>", task_id=task, seed=seed,
                           arm=arm, outcome=good if task == hostile else seed == 0)
                r["steps"][0]["args"] = arguments
                r["steps"][0]["observation"] = {"out": "<iframe src='https://evil.example'></iframe>"}
                records.append(r)
    traces = agentab.load_traces(records)
    scores = agentab.score(traces)
    result = agentab.compare(scores, metrics=["outcome"], n_resamples=99, seed=0)
    flipped = result.flipped_tasks()
    assert flipped.iloc[0]["task_id"] == hostile and flipped.iloc[0]["direction"] == "regressed"
    text, page = _write(result, tmp_path / "r.html", traces=traces)
    lowered = text.lower()
    assert "<script" not in lowered and "<iframe" not in lowered and "<img src=x" not in lowered
    assert "<b>" not in text
    visible = "".join(page.text)
    assert hostile in visible
    assert "alert(1)" in visible and "onerror=alert(2)" in visible and "evil.example" in visible
    names = {tag for tag, _ in page.tags}
    assert not names & {"script", "iframe", "b"}
    markdown = agentab.report(result, tmp_path / "r.md", traces=traces).read_text(encoding="utf-8")
    assert "<script" not in markdown and "&lt;script>alert('task')&lt;/script>" in markdown
