"""Every output whole or not at all, and no output carries live markup, formulas or escapes from the data.

Kill tests fork this process (the data already made) and SIGKILL the child at random moments while it
rewrites an output; ``benchmarks/kill_writes.py`` does the same many times with fresh processes.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest

import agentab
from agentab import ReportError, plots
from agentab._write import atomic_file, atomic_folder, atomic_text, csv_safe
from agentab.cli import main

IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
EVIL_TASK = "![i](http://evil.invalid/x.png)"
EVIL_ARM = "[click](http://evil.invalid/) <img src=x onerror=alert(1)>"
MATH = "echo $PATH_$HOME"


def _experiment(arms: dict[str, str], task_prefix: str = "", tool_prefix: str = "", n_tasks: int = 6) -> agentab.Traces:
    records = agentab.datasets.example_experiment(seed=0, n_tasks=n_tasks, n_seeds=2).to_records()
    for record in records:
        record["arm"] = arms[record["arm"]]
        record["task_id"] = task_prefix + record["task_id"]
        for step in record["steps"]:
            step["tool"] = tool_prefix + step["tool"]
    return agentab.load_traces(records)


def _compare(traces: agentab.Traces, baseline: str, candidate: str) -> agentab.Comparison:
    return agentab.compare(agentab.score(traces), baseline=baseline, candidate=candidate,
                           metrics=["outcome", "tokens"], n_resamples=199, seed=0)


@pytest.fixture(scope="module")
def plain():
    traces = agentab.datasets.example_experiment(seed=0, n_tasks=6, n_seeds=2)
    return traces, agentab.compare(agentab.score(traces), metrics=["outcome", "tokens"], n_resamples=199, seed=0)


# --------------------------------------------------------------------------- #
# Safe text
# --------------------------------------------------------------------------- #
def test_markdown_user_text_forms_no_link_image_or_html(tmp_path):
    traces = _experiment({"baseline": "base", "candidate": EVIL_ARM}, task_prefix=EVIL_TASK + " ",
                         tool_prefix="[t](javascript:x) ")
    path = agentab.report(_compare(traces, "base", EVIL_ARM), tmp_path / "r.md", traces=traces)
    text = path.read_text(encoding="utf-8")
    images = IMAGE.findall(text)
    assert images and all(unquote(target).startswith("r_files/figure") for _, target in images)
    rest = IMAGE.sub("", text)  # the report's own figures left out, no ]( of user text stays unescaped
    assert not re.search(r"(?<!\\)\]\(", rest) and "http://" not in text
    assert not re.search(r"<(img|a|script)\b", text, re.I)
    assert not re.search(r"(?<!\\)\[click", text)  # every [ of user text is escaped
    assert "\\!\\[i\\]" in text or "!\\[i\\]" in text


def test_markdown_fence_cannot_be_closed_by_text():
    from agentab.reporting._markdown import _fence

    block = _fence("a\n```\n![x](http://e)")
    assert block.startswith("````\n") and block.endswith("\n````")


def test_math_text_names_and_huge_names_render(tmp_path):
    huge = "a" * 200_000
    traces = _experiment({"baseline": MATH, "candidate": huge}, tool_prefix="$x_$y ")
    result = _compare(traces, MATH, huge)
    start = time.perf_counter()
    path = agentab.report(result, tmp_path / "r.html", traces=traces)
    assert time.perf_counter() - start < 60
    assert "Verdict:" in path.read_text(encoding="utf-8")
    figure = plots.forest(result)
    texts = [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_parse_math"))]
    assert all(max(map(len, t.split("\n")), default=0) <= plots.MAX_LABEL for t in texts)
    assert any(t.endswith("\u2026") for t in texts)
    assert not any(t.get_parse_math() for t in figure.findobj(lambda a: hasattr(a, "get_parse_math")))


def test_csv_cells_cannot_start_formulas():
    frame = pd.DataFrame({"task_id": ["=HYPERLINK(\"http://e\",\"x\")", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "ok"],
                          "value": [-1.5, 1, 2, 3, 4, 5, 6]})
    frame["arm"] = pd.Categorical(["=cmd|' /C calc'!A0"] * 6 + ["b"])
    safe = csv_safe(frame)
    assert safe["task_id"].tolist()[:6] == ["'" + v for v in frame["task_id"][:6]] and safe["task_id"].iloc[6] == "ok"
    assert safe["value"].tolist() == frame["value"].tolist()
    assert safe["arm"].iloc[0].startswith("'=")
    assert frame["task_id"].iloc[0].startswith("=")  # the caller's frame is not changed


def test_cli_score_csv_neutralised_unless_raw(tmp_path, capsys):
    traces = _experiment({"baseline": "=1+1", "candidate": "b"}, task_prefix="=HYPERLINK(\"x\") ")
    source = tmp_path / "runs.jsonl"
    traces.to_jsonl(source)
    safe, raw = tmp_path / "safe.csv", tmp_path / "raw.csv"
    assert main(["score", str(source), "-o", str(safe), "-q"]) == 0
    assert main(["score", str(source), "-o", str(raw), "-q", "--raw-csv"]) == 0
    capsys.readouterr()
    cells = pd.read_csv(safe, dtype=str).to_numpy().ravel().tolist()
    assert not any(isinstance(c, str) and c[:1] in "=+@\t\r" for c in cells)
    assert pd.read_csv(safe)["task_id"].str.startswith("'=HYPERLINK").all()
    assert pd.read_csv(raw)["task_id"].str.startswith("=HYPERLINK").all()


def test_cli_prints_data_without_escapes(tmp_path, capsys):
    nasty = "arm\x1b]0;pwned\x07\x1b[31m"
    traces = _experiment({"baseline": nasty, "candidate": "b"}, task_prefix="t\x1b[2J")
    source = tmp_path / "runs.jsonl"
    traces.to_jsonl(source)
    assert main(["summary", str(source)]) == 0
    assert main(["score", str(source)]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err and "pwned" not in out + err


# --------------------------------------------------------------------------- #
# Figure folders
# --------------------------------------------------------------------------- #
@pytest.mark.slow
def test_md_and_markdown_have_their_own_folders_and_spare_user_files(plain, tmp_path):
    _, result = plain
    folder = tmp_path / "r_files"
    folder.mkdir()
    (folder / "figure01.png").write_bytes(b"mine")
    (folder / "notes.txt").write_text("mine")
    md = agentab.report(result, tmp_path / "r.md")
    other = agentab.report(result, tmp_path / "r.markdown")
    first = {unquote(t) for _, t in IMAGE.findall(md.read_text(encoding="utf-8"))}
    second = {unquote(t) for _, t in IMAGE.findall(other.read_text(encoding="utf-8"))}
    assert all(t.startswith("r_files/") for t in first) and all(t.startswith("r_markdown_files/") for t in second)
    agentab.report(result, tmp_path / "r.md")  # again: the earlier figures go, the user's files stay
    assert (folder / "figure01.png").read_bytes() == b"mine" and (folder / "notes.txt").read_text() == "mine"
    assert all((tmp_path / t).is_file() for t in second)
    assert not any((tmp_path / t).exists() for t in first)
    names = sorted(p.name for p in folder.iterdir() if p.name.startswith("figure") and "-" in p.name)
    assert len(names) == len(first)


def test_symlinked_figure_folder_is_refused(plain, tmp_path):
    _, result = plain
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "r_files").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ReportError, match="symlink"):
        agentab.report(result, tmp_path / "r.md")
    assert not list(elsewhere.iterdir()) and not (tmp_path / "r.md").exists()


def test_report_name_with_a_space_links_its_images(plain, tmp_path):
    _, result = plain
    path = agentab.report(result, tmp_path / "my report.md")
    targets = [t for _, t in IMAGE.findall(path.read_text(encoding="utf-8"))]
    assert targets and all(t.startswith("my%20report_files/") for t in targets)
    assert all((tmp_path / unquote(t)).is_file() for t in targets)


# --------------------------------------------------------------------------- #
# Atomic writes
# --------------------------------------------------------------------------- #
def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = atomic_text(tmp_path / "a.txt", "old")
    with pytest.raises(ZeroDivisionError):
        with atomic_file(path, "w") as handle:
            handle.write("new, half")
            1 / 0
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    with pytest.raises(ZeroDivisionError):
        with atomic_folder(tmp_path / "store") as temp:
            (temp / "x").write_text("x")
            1 / 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_to_parquet_replaces_a_store_and_keeps_a_foreign_folders_files(plain, tmp_path):
    traces, _ = plain
    small = agentab.datasets.example_experiment(seed=1, n_tasks=3, n_seeds=2)
    traces.to_parquet(tmp_path / "s")
    small.to_parquet(tmp_path / "s")
    assert len(agentab.read_traces(tmp_path / "s").runs) == len(small.runs)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    traces.to_parquet(mine)
    assert (mine / "keep.txt").read_text() == "mine" and len(agentab.read_traces(mine).runs) == len(traces.runs)


def test_read_traces_refuses_a_mixture_of_two_writes(plain, tmp_path):
    traces, _ = plain
    small = agentab.datasets.example_experiment(seed=1, n_tasks=3, n_seeds=2)
    traces.to_parquet(tmp_path / "a")
    small.to_parquet(tmp_path / "b")
    (tmp_path / "b" / "runs.parquet").replace(tmp_path / "a" / "runs.parquet")
    with pytest.raises(agentab.TraceError, match="another write"):
        agentab.read_traces(tmp_path / "a")


def _kill_trials(write, check, reset, kills: int = 3, seed: int = 0) -> set[str]:
    """Fork a child that calls ``write()`` in a loop; SIGKILL it at random moments; ``check()`` after each.

    The moments are spread over two writes, as long as one takes here.
    """
    rng = random.Random(seed)
    start = time.perf_counter()
    write()
    span = 2 * (time.perf_counter() - start)
    reset()  # the old output again
    assert check() == "old"
    seen = set()
    for _ in range(kills):
        pid = os.fork()
        if pid == 0:  # the child: rewrite until killed
            try:
                while True:
                    write()
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.0, span))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        seen.add(check())
    return seen


needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")


def _figures(path: Path, text: str) -> frozenset[bytes]:
    return frozenset((path.parent / unquote(t)).read_bytes() for _, t in IMAGE.findall(text))


@pytest.mark.slow  # kills real writer processes many times: run by `pytest -m slow` (CI)
@needs_fork
@pytest.mark.parametrize("kind", ["html", "md"])
def test_killed_report_is_old_or_new(plain, tmp_path, kind):
    traces, result = plain
    other = agentab.datasets.example_experiment(seed=3, n_tasks=8, n_seeds=2)
    newer = agentab.compare(agentab.score(other), metrics=["outcome", "tokens"], n_resamples=199, seed=0)
    path = tmp_path / f"my report.{kind}"
    expected = {}
    if kind == "md":  # the figures of each version, to tell a mixture from either
        for version, comparison in (("new", newer), ("old", result)):
            written = agentab.report(comparison, path, title=f"agentab {version}")
            expected[version] = _figures(path, written.read_text(encoding="utf-8"))
    agentab.report(result, path, title="agentab old")

    def check() -> str:
        text = path.read_text(encoding="utf-8")
        assert text.rstrip().endswith("</html>" if kind == "html" else "UTC.")
        found = [v for v in ("old", "new") if f"agentab {v}" in text]
        assert len(found) == 1
        if kind == "md":
            assert _figures(path, text) == expected[found[0]], "the text of one write with figures of another"
        return found[0]

    assert _kill_trials(lambda: agentab.report(newer, path, title="agentab new"), check,
                        lambda: agentab.report(result, path, title="agentab old")) <= {"old", "new"}


@needs_fork
@pytest.mark.parametrize("kind", ["parquet", "jsonl", "csv", "score-parquet"])
def test_killed_table_write_is_old_or_new(plain, tmp_path, kind, capsys):
    """Traces.to_parquet, Traces.to_jsonl, and `agentab score -o` (CSV, Parquet)."""
    traces, _ = plain
    big = agentab.datasets.example_experiment(seed=0, n_tasks=40, n_seeds=3)
    path = tmp_path / {"parquet": "store", "jsonl": "runs.jsonl", "csv": "s.csv", "score-parquet": "s.parquet"}[kind]
    sources = {}
    for name, data in (("old", traces), ("new", big)):
        sources[name] = data.to_jsonl(tmp_path / f"{name}.jsonl")

    def write(name: str) -> None:
        data = traces if name == "old" else big
        if kind == "parquet":
            data.to_parquet(path)
        elif kind == "jsonl":
            data.to_jsonl(path)
        else:
            main(["score", str(sources[name]), "-o", str(path), "-q"])

    def check() -> str:
        n = (len(agentab.read_traces(path).runs) if kind == "parquet" else len(agentab.load_traces(path).runs)
             if kind == "jsonl" else len(pd.read_csv(path)) if kind == "csv" else len(pd.read_parquet(path)))
        assert n in (len(traces.runs), len(big.runs)), n
        return "old" if n == len(traces.runs) else "new"

    write("old")
    assert _kill_trials(lambda: write("new"), check, lambda: write("old")) <= {"old", "new"}
    capsys.readouterr()


def test_to_parquet_through_a_symlinked_folder_writes_in_place(plain, tmp_path):
    traces, _ = plain
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    traces.to_parquet(tmp_path / "link")
    assert (tmp_path / "link").is_symlink() and (real / "runs.parquet").is_file()
    assert len(agentab.read_traces(tmp_path / "link").runs) == len(traces.runs)


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path):
    from agentab import _write

    dead = _dead_pid()
    left = tmp_path / f"{_write.TEMP_PREFIX}{_write._host()}-{dead}-abc.part"
    left.write_text("half a report")
    left_folder = tmp_path / f"{_write.TEMP_PREFIX}{_write._host()}-{dead}-store"
    left_folder.mkdir()
    elsewhere = tmp_path / f"{_write.TEMP_PREFIX}other_host-{dead}-abc.part"  # another machine's, on a shared disk
    elsewhere.write_text("not ours")
    alive = tmp_path / f"{_write.owned_prefix()}def.part"  # a writer still running (this process)
    alive.write_text("in use")
    _write.atomic_text(tmp_path / "out.txt", "new")
    assert not left.exists() and not left_folder.exists()
    assert elsewhere.exists() and alive.exists() and (tmp_path / "out.txt").read_text() == "new"


def test_a_parallel_load_removes_the_parts_folders_of_killed_loads(tmp_path, monkeypatch):
    import tempfile

    import agentab.traces._reader
    import agentab.traces._parallel as parallel
    from agentab import _write

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    stale = tmp_path / "tmp" / f"agentab-load-{_write._host()}-{_dead_pid()}-x"
    (stale / "part1").mkdir(parents=True)
    monkeypatch.setattr(agentab.traces._reader, "PARALLEL_MIN_BYTES", 0)
    records = list(agentab.datasets.example_records(0, n_tasks=4, n_seeds=2))
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    traces = agentab.load_traces(path, workers=2)
    assert len(traces.runs) == len(records)
    assert not stale.exists() and list((tmp_path / "tmp").iterdir()) == []
