"""Every command output shown in README.md and docs/, produced by running it: no number typed by hand.

A block in a Markdown file::

    <!-- output: NAME -->
    ...generated...
    <!-- /output -->

is replaced by the example ``NAME`` of :data:`EXAMPLES`: the commands (or Python code) and what they print,
run in a fresh folder where ``agentab example --out runs/`` has written the example experiment and
``docs/data/`` holds the results-table fixtures. Outputs are deterministic (every example fixes its seeds)
and stripped of timings and of the folder's path.

Usage (from the repository root)::

    python docs/_outputs.py --write    # regenerate every block in place
    python docs/_outputs.py --check    # exit 1, naming the stale blocks, when a block is not current
    python docs/_outputs.py --show NAME

``tests/test_docs.py`` runs the check.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the checkout's agentab, when run as a script
    sys.path.insert(0, str(ROOT))
BLOCK = re.compile(r"(?P<open><!-- output: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(?P<close><!-- /output -->)", re.S)
#: Timings vary from run to run: ", loaded in 0.24 s" and the like are removed.
_TIMING = re.compile(r",? (?:loaded |read |scored |took )?in \d+(?:\.\d+)? ?(?:s|ms|seconds)\b")


@dataclasses.dataclass(frozen=True)
class Example:
    """One example: shell commands (``agentab ...``, run in-process) or Python code, and how to show it.

    Parameters
    ----------
    kind : {"shell", "python"}
        Commands, one per line, or a Python program.
    source : str
        The commands or the code, exactly as shown.
    head : int, optional
        Show only the first ``head`` lines of the output (then ``...``).
    show_source : bool
        Show the commands or code above the output (default) or the output alone.
    """

    kind: str
    source: str
    head: int | None = None
    show_source: bool = True


TRACES = "runs/baseline.jsonl runs/candidate.jsonl"
TABLE = "docs/data/terminal-bench-trials.csv"

EXAMPLES: dict[str, Example] = {
    # README: the three recipes
    "readme-traces": Example("shell", f"agentab example --out runs/\nagentab compare {TRACES} --spec runs/spec.json"),
    "readme-table": Example("shell", f"agentab compare {TABLE} --arm-column model --where \"agent == 'Droid'\" "
                            "--names claude-4-sonnet gpt-5 --field outcome=is_resolved"),
    "readme-plan": Example("shell", "agentab plan runs/baseline.jsonl --metric outcome --effect 0.05\n"
                           "agentab power --metric binary --baseline 0.54 --effect 0.05 --seeds 5 --icc 0.3"),
    # docs/getting-started.md
    "demo": Example("shell", "agentab demo", head=40),
    "summary": Example("shell", f"agentab summary {TRACES}"),
    "formats": Example("shell", "agentab formats"),
    # docs/scoring.md
    "score-run": Example("python", '''\
from agentab import Call, score_run

lucky = [Call("search_docs", {"q": "failing test"}), Call("search_docs", {"q": "failing test"}),
         Call("read_file", {"path": "src/mian.py"}), Call("read_file", {"path": "src/mian.py"}),
         Call("run_tests", {}), Call("list_dir", {"path": "src"}),
         Call("edit_file", {"path": "src/main.py"}), Call("run_tests", {})]
verdict = score_run(lucky, required=["list_dir", "edit_file"], step_budget=5, final_state_correct=True)
print(verdict)
'''),
    "score-cli": Example("shell", f"agentab score {TRACES} --spec runs/spec.json"),
    "diagnose-cli": Example("shell", f"agentab diagnose {TRACES} --spec runs/spec.json"),
    # docs/comparing.md
    "compare-python": Example("python", '''\
import agentab

traces = agentab.datasets.example_experiment(seed=0)            # 60 tasks x 5 seeds x 2 arms
scores = agentab.score(traces, agentab.datasets.example_specs())
result = agentab.compare(
    scores,
    baseline="baseline",
    metrics=["outcome", "rubric", "tokens", "n_steps", "cap_hit", "arg_accuracy"],
    primary="outcome",
    guardrails={"tokens": "p95 <= +10%"},
    seed=0,                  # the default: two identical calls give identical numbers
)
print(result)
'''),
    "compare-json": Example("shell", f"agentab compare {TRACES} --spec runs/spec.json --metric outcome --json",
                            head=30),
    # docs/planning.md
    "plan-python": Example("python", '''\
import agentab

runs = agentab.score(agentab.datasets.example_experiment(seed=1, n_tasks=20, n_seeds=3))
pilot = runs[runs["arm"] == "baseline"]          # 20 tasks x 3 seeds
print(agentab.power.plan(pilot, "rubric", 1.5))  # detect an odds ratio of 1.5 on the 0-3 rubric
'''),
    "formulas-python": Example("python", '''\
from agentab.power import mde, power, sample_size

print(sample_size("binary", 0.05, baseline=0.54, seeds_per_task=3, icc=0.3))
print(sample_size("ordinal", 1.5, baseline=[0.2, 0.3, 0.3, 0.2]))
print(power("continuous", 0.5, [32, 64, 128]))
print(mde("binary", 300, baseline=0.54, seeds_per_task=5, icc=0.3))
'''),
    "paired-python": Example("python", '''\
from agentab.power import sample_size

print(sample_size("continuous", 0.3, design="paired", correlation=0.6))
print(sample_size("continuous", 0.3))                        # the same effect, independent tasks
print(sample_size("binary", 0.1, design="paired", discordant=0.3))
'''),
    "power-paired-cli": Example("shell", "agentab power --metric binary --effect 0.1 --paired --discordant 0.3"),
    # docs/results-tables.md
    "table-plan": Example("shell", f"agentab plan {TABLE} --arm-column model --where \"agent == 'Droid'\" "
                          "--baseline-arm claude-4-sonnet --field outcome=is_resolved --metric outcome --effect 0.1"),
    "table-summary": Example("shell", f"agentab summary {TABLE} --arm-column submission --field outcome=is_resolved "
                             "--field harness=agent"),
    # docs/harness.md
    "harness-python": Example("python", '''\
import agentab
from agentab.harness.example import example_spec, run_example

out = run_example("harness", n_tasks=6, n_seeds=4)   # both arms, 6 tasks x 4 seeds each
scores = agentab.score(agentab.load_traces(out), example_spec())
columns = ["outcome", "n_steps", "loop", "non_terminated", "accidental_recovery", "forbidden_side_effects"]
print(scores.groupby("arm")[columns].mean().round(2).to_string())
lucky = scores[(scores["arm"] == "baseline") & scores["accidental_recovery"].fillna(False) & scores["loop"]]
print(f"\\nlucky recoveries in the baseline (right result after errors and a loop): {len(lucky)}")
result = agentab.compare(scores, baseline="baseline", metrics=["outcome", "loop", "non_terminated", "n_steps"])
print(result.verdict)
'''),
    "harness-cli": Example("shell", "agentab run agentab.harness.example:baseline_agent --tasks "
                           "agentab.harness.example:example_tasks --tools agentab.harness.example:TOOLS --seeds 3 "
                           "--arm baseline --step-cap 12 --out harness-cli/runs.jsonl -q"),
}


# --------------------------------------------------------------------------- #
# Running the examples
# --------------------------------------------------------------------------- #
def _spec_json(spec: object) -> dict:
    """A TrajectorySpec as the JSON that ``--spec`` reads (the fields that differ from the defaults)."""
    data = {}
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if value == field.default:
            continue
        if field.name == "reference":
            value = [{"tool": c.tool} if c.args is None else {"tool": c.tool, "args": dict(c.args)} for c in value]
        elif isinstance(value, tuple):
            value = list(value)
        elif field.name == "expected_state":
            value = {key: list(entries) for key, entries in value.items()}
        data[field.name] = value
    return data


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A fresh folder with the example experiment (``runs/``, with its spec) and docs/data/, as the cwd."""
    from agentab.cli import main
    from agentab.datasets import example_specs

    before = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="agentab-docs-") as folder:
        path = Path(folder)
        shutil.copytree(ROOT / "docs" / "data", path / "docs" / "data")
        os.chdir(path)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main(["example", "--out", "runs/"])
            spec = path / "runs" / "spec.json"
            if not spec.exists():  # until `agentab example` writes it
                specs = {task: _spec_json(s) for task, s in example_specs(0).items()}
                spec.write_text(json.dumps({"tasks": specs}, indent=1) + "\n")
            yield path
        finally:
            os.chdir(before)


def _run_shell(line: str) -> str:
    """One ``agentab`` command run in-process: stdout and stderr as a terminal would show them."""
    from agentab.cli import main

    argv = shlex.split(line)
    if argv[0] != "agentab":
        raise SystemExit(f"docs/_outputs.py runs only agentab commands, got {line!r}")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            code = main(argv[1:])
        except SystemExit as exit_:  # argparse: an unknown flag or --help
            code = exit_.code
    text = buffer.getvalue()
    if code not in (0, None):
        text += f"(exit code {code})\n"
    return text


def _run_python(code: str) -> str:
    """A Python example run in a fresh namespace: what it prints."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        exec(compile(code, "<docs example>", "exec"), {"__name__": "__docs__"})  # noqa: S102 (our own examples)
    return buffer.getvalue()


def _clean(text: str, folder: Path) -> str:
    """Without the workspace's path, timings, trailing spaces or blank lines at the end."""
    text = text.replace(str(folder) + os.sep, "").replace(str(folder), ".")
    text = _TIMING.sub("", text)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def _cut(text: str, head: int | None) -> str:
    lines = text.splitlines()
    if head is None or len(lines) <= head:
        return text
    return "\n".join(lines[:head] + ["..."])


def render(example: Example, folder: Path) -> str:
    """The Markdown of one example: the commands or code, then the output, in fenced blocks."""
    if example.kind == "shell":
        parts = []
        for line in example.source.strip().splitlines():
            output = _cut(_clean(_run_shell(line), folder), example.head)
            parts.append(f"$ {line}\n{output}" if example.show_source else output)
        return "```console\n" + "\n\n".join(parts) + "\n```\n"
    output = _cut(_clean(_run_python(example.source), folder), example.head)
    code = f"```python\n{example.source.rstrip()}\n```\n\n" if example.show_source else ""
    return code + "```text\n" + output + "\n```\n"


# --------------------------------------------------------------------------- #
# The Markdown files
# --------------------------------------------------------------------------- #
def markdown_files() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[str]:
    """The names of the output blocks in one file, in order."""
    return [m["name"] for m in BLOCK.finditer(path.read_text(encoding="utf-8"))]


def regenerate(paths: list[Path], only: Callable[[str], bool] = lambda name: True) -> dict[Path, str]:
    """Every file's text with its output blocks regenerated (files without blocks left out)."""
    names = {name for path in paths for name in blocks(path) if only(name)}
    unknown = sorted(names - set(EXAMPLES))
    if unknown:
        raise SystemExit(f"unknown output blocks: {', '.join(unknown)} (add them to EXAMPLES in docs/_outputs.py)")
    with workspace() as folder:
        rendered = {name: render(EXAMPLES[name], folder) for name in sorted(names)}

    def replace(match: re.Match) -> str:
        name = match["name"]
        body = rendered.get(name, match["body"])
        return match["open"] + body + match["close"]

    return {path: BLOCK.sub(replace, path.read_text(encoding="utf-8")) for path in paths if blocks(path)}


def stale(paths: list[Path] | None = None) -> list[str]:
    """``file: block`` for every block whose text is not what its example prints now."""
    paths = markdown_files() if paths is None else paths
    out = []
    for path, text in regenerate(paths).items():
        now = {m["name"]: m["body"] for m in BLOCK.finditer(text)}
        before = {m["name"]: m["body"] for m in BLOCK.finditer(path.read_text(encoding="utf-8"))}
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        out += [f"{shown}: {name}" for name in before if before[name] != now[name]]
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line: --write, --check or --show NAME."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="regenerate every output block in place")
    group.add_argument("--check", action="store_true", help="exit 1 when a block is stale")
    group.add_argument("--show", metavar="NAME", help="print one example's block")
    args = parser.parse_args(argv)
    if args.show:
        with workspace() as folder:
            print(render(EXAMPLES[args.show], folder), end="")
        return 0
    if args.check:
        old = stale()
        for entry in old:
            print(f"stale: {entry} (python docs/_outputs.py --write)")
        return 1 if old else 0
    for path, text in regenerate(markdown_files()).items():
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
