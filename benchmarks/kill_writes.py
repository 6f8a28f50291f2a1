"""Kill a writer at random moments (SIGKILL) and check every output is the old one or the new one, whole.

Each kind of write (HTML report, Markdown report with its figures, ``Traces.to_parquet``,
``Traces.to_jsonl``, the CLI's ``score -o`` CSV and Parquet) is first written once as "old"; then a
child process rewrites the same path again and again with different content ("new") and is killed
after a random delay. After each kill the output must read back whole and equal the old or the new
one, and no temporary sibling may be mistaken for it.

    python benchmarks/kill_writes.py                # 25 kills per kind
    python benchmarks/kill_writes.py --kills 100 --kinds md parquet

``tests/test_outputs.py`` runs the same trials with a few kills per kind.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

KINDS = ("html", "md", "parquet", "jsonl", "csv", "score-parquet")
NAMES = {"html": "report.html", "md": "my report.md", "parquet": "store", "jsonl": "runs.jsonl",
         "csv": "scores.csv", "score-parquet": "scores.parquet"}

CHILD = r"""
import sys
from pathlib import Path
import agentab
from agentab._write import write_table
kind, path, version, loop = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "loop"
n_tasks = 6 if version == "old" else 8
traces = agentab.datasets.example_experiment(seed=0, n_tasks=n_tasks, n_seeds=2)
if kind in ("html", "md"):
    scores = agentab.score(traces)
    result = agentab.compare(scores, metrics=["outcome", "tokens"], n_resamples=199, seed=0)
if kind in ("csv", "score-parquet"):
    scores = agentab.score(traces)
print("ready", flush=True)
while True:
    if kind in ("html", "md"):
        agentab.report(result, path, title=f"agentab {version}")
    elif kind == "parquet":
        traces.to_parquet(path)
    elif kind == "jsonl":
        traces.to_jsonl(path)
    else:
        write_table(scores, path)
    if not loop:
        break
"""


def _run(kind: str, path: Path, version: str, loop: bool) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, kind, str(path), version, "loop" if loop else "once"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _version(kind: str, path: Path) -> str:
    """"old" or "new" (6 or 8 tasks: 24 or 32 runs), or raise AssertionError naming what is broken."""
    import agentab

    if kind in ("html", "md"):
        text = path.read_text(encoding="utf-8")
        found = [v for v in ("old", "new") if f"agentab {v}" in text]
        if kind == "html":
            assert text.endswith("</body></html>\n"), f"{path}: cut short"
        else:
            assert "\n---\nMade by agentab" in text, f"{path}: cut short"
            from urllib.parse import unquote
            import re
            links = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
            assert links, f"{path}: no figures"
            for link in links:
                figure = path.parent / unquote(link)
                assert figure.is_file() and figure.read_bytes().endswith(b"IEND\xaeB`\x82"), f"{figure}: missing or cut"
        assert len(found) == 1, f"{path}: neither old nor new"
        return found[0]
    if kind == "parquet":
        n = len(agentab.read_traces(path).runs)
    elif kind == "jsonl":
        n = len(agentab.load_traces(path).runs)
    elif kind == "csv":
        n = len(pd.read_csv(path))
    else:
        n = len(pd.read_parquet(path))
    assert n in (24, 32), f"{path}: {n} runs, neither old (24) nor new (32)"
    return "old" if n == 24 else "new"


def trials(kind: str, folder: Path, kills: int, seed: int = 0, max_delay: float = 1.5) -> dict[str, int]:
    """Write the old output, then ``kills`` times start a rewriting child and SIGKILL it; check after each."""
    rng = random.Random(seed)
    path = folder / NAMES[kind]
    first = _run(kind, path, "old", loop=False)
    first.communicate(timeout=300)
    assert first.returncode == 0, f"{kind}: the first write failed"
    assert _version(kind, path) == "old"
    seen = {"old": 0, "new": 0}
    for _ in range(kills):
        child = _run(kind, path, "new", loop=True)
        assert child.stdout is not None
        child.stdout.readline()  # "ready": the data are made, writes begin
        time.sleep(rng.uniform(0.0, max_delay))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        seen[_version(kind, path)] += 1
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for kind in args.kinds:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            seen = trials(kind, Path(tmp), args.kills, seed=args.seed)
            leftovers = [p.name for p in Path(tmp).rglob(".agentab-tmp-*")]
            print(f"{kind:14s} {args.kills} kills: old {seen['old']}, new {seen['new']}, whole every time; "
                  f"{len(leftovers)} temporary siblings left by kills; {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
