"""Benchmark: the recording harness's overhead per tool call and per run, against the bare agent (issue 23).

Per tool call: a bare Python function called ``--calls`` times, against the same function recorded by a
:class:`agentab.harness.Recorder` (a step with its canonical arguments, observation and times), and recorded
with the step streamed to a file as :func:`agentab.harness.run` does (``sink``: a JSON line written and
flushed at the start and at the end of every call).

Per run, on a fixture of ``--files`` small files (about 200 bytes each, in 20 folders), best of ``--repeat``:

- **bare agent**: the agent alone (reads 5 files, edits 3, writes 1) on a ready folder, in this process;
- **sandbox**: building the run's folder from the fixture folder (a copy, links kept as links);
- **snapshot**: the snapshot of every file (SHA-256 of its content, size, mode);
- **snapshot + diff**: the second snapshot and the diff against the first (what every run does at its end,
  with the look for SQLite databases);
- **harness run**: :func:`agentab.harness.run` end to end, ``--runs`` runs one at a time (``workers=1``), per
  run: fork of the worker, sandbox, both snapshots, mock-server-free services (network policy, usage
  capture, write guard), the agent, the record, its fsync'ed line, the sandbox removed;
- **harness run, empty fixture**: the same with no files, the fixed cost of a run.

Run: ``python benchmarks/bench_harness.py [--files 1000] [--runs 10] [--calls 20000] [--repeat 3]``

Last run
--------
2026-12-01, commit 5b5a480 (branch h-harness), 2 shared cores under heavy load from the lead's and other
helpers' jobs (load average 16-18: the copy of the fixture took 181-389 ms between runs, so read these as
orders of magnitude). ``python benchmarks/bench_harness.py``::

    per tool call (20,000 calls)            us/call  overhead
      bare function                           0.05
      recorded                                33.4  +33.4 us
      recorded, streamed to a file            72.5  +72.5 us

    per run (1,000-file fixture, best of 3)      ms  overhead
      bare agent                                0.8
      sandbox (copy of the fixture)             389
      snapshot                                 29.4
      snapshot + diff                          40.0
      harness run (10 runs, workers=1)          621  +620 ms
      harness run, empty fixture                100  +99 ms

A recorded call costs tens of microseconds (the arguments and the result made JSON, two timestamps; streamed,
the step's line written and flushed twice): nothing beside a model call or a real tool. A run costs about
0.1 s of fixed work (the fork of the worker, the network policy, usage capture and write guard, the record
and its fsync), plus, for a 1,000-file fixture, the copy into the sandbox (the largest part), two snapshots
(SHA-256 of every file, which also finds the SQLite databases) and the removal of the sandbox: about 0.6 s
in all on this loaded machine. ``workers`` runs them in parallel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agentab.harness import Recorder, Task, run  # noqa: E402
from agentab.harness.sandbox import databases_diff, diff, snapshot  # noqa: E402


def make_fixture(folder: Path, n_files: int) -> Path:
    """``n_files`` files of about 200 bytes in 20 folders."""
    for i in range(n_files):
        path = folder / f"pkg{i % 20:02d}" / f"module_{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + "VALUE = 1  # padding to about two hundred bytes of source text\n" * 3)
    return folder


def read_file(path: str) -> str:
    return Path(path).read_text()


def write_file(path: str, text: str) -> int:
    return Path(path).write_text(text)


def agent_work(read, write) -> None:
    """The bare agent's work: 5 reads, 3 edits, 1 new file (paths relative to the current folder)."""
    for i in range(5):
        read(path=f"pkg{i:02d}/module_{i:05d}.py")
    for i in range(3):
        write(path=f"pkg{i:02d}/module_{i:05d}.py", text="VALUE = 2\n")
    write(path="notes.md", text="done\n")


def harness_agent(env) -> None:
    agent_work(env.tools["read"], env.tools["write"])
    env.report(outcome=True)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def per_call(n_calls: int) -> list[tuple[str, float]]:
    """Microseconds per call: bare, recorded, recorded and streamed."""
    def tool(path, mode="r"):
        return len(path)

    rows = []
    start = time.perf_counter()
    for _ in range(n_calls):
        tool(path="src/main.py", mode="r")
    rows.append(("bare function", (time.perf_counter() - start) / n_calls * 1e6))
    rec = Recorder({"tool": tool})
    start = time.perf_counter()
    for _ in range(n_calls):
        rec.tools["tool"](path="src/main.py", mode="r")
    rows.append(("recorded", (time.perf_counter() - start) / n_calls * 1e6))
    import json

    with tempfile.TemporaryFile("w") as f:
        def sink(step):
            f.write(json.dumps(step) + "\n")
            f.flush()

        rec = Recorder({"tool": tool}, sink=sink)
        start = time.perf_counter()
        for _ in range(n_calls):
            rec.tools["tool"](path="src/main.py", mode="r")
        rows.append(("recorded, streamed to a file", (time.perf_counter() - start) / n_calls * 1e6))
    return rows


def per_run(n_files: int, n_runs: int, repeat: int) -> list[tuple[str, float]]:
    """Milliseconds per run of each phase (see the module docstring)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as scratch:
        base = Path(scratch)
        fixture = make_fixture(base / "fixture", n_files)
        task = Task("bench", fixture=fixture)
        work = base / "work"

        def bare() -> None:
            cwd = os.getcwd()
            os.chdir(work)
            try:
                agent_work(read_file, write_file)
            finally:
                os.chdir(cwd)

        def build() -> None:
            shutil.rmtree(work, ignore_errors=True)
            task.build(work, task.instance(0))

        build()
        rows.append(("bare agent", best(bare, repeat) * 1e3))
        rows.append(("sandbox (copy of the fixture)", best(build, repeat) * 1e3))
        rows.append(("snapshot", best(lambda: snapshot(work), repeat) * 1e3))
        first = snapshot(work)
        rows.append(("snapshot + diff", best(lambda: (diff(first, after := snapshot(work)),
                                                      databases_diff(str(work), str(base), first, after)), repeat) * 1e3))
        tools = {"read": read_file, "write": write_file}
        for label, runs_task in ((f"harness run ({n_runs} runs, workers=1)", task),
                                 ("harness run, empty fixture", Task("empty"))):
            def whole(t=runs_task) -> None:
                out = base / "runs.jsonl"
                out.unlink(missing_ok=True)
                run(harness_agent if t is task else (lambda env: env.report(outcome=True)), [t], seeds=n_runs,
                    out=out, tools=tools, progress=False, root=base)

            whole()  # the first call imports what the workers need
            rows.append((label, best(whole, repeat) / n_runs * 1e3))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="files in the fixture (default 1000)")
    parser.add_argument("--runs", type=int, default=10, help="runs per harness measurement (default 10)")
    parser.add_argument("--calls", type=int, default=20000, help="tool calls per measurement (default 20000)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many (default 3)")
    args = parser.parse_args(argv)
    calls = per_call(args.calls)
    print(f"per tool call ({args.calls:,} calls)            us/call  overhead")
    for label, us in calls:
        extra = "" if label == "bare function" else f"  {us - calls[0][1]:+.1f} us"
        print(f"  {label:<36}{us:>8.2f}{extra}" if us < 1 else f"  {label:<36}{us:>8.1f}{extra}")
    runs = per_run(args.files, args.runs, args.repeat)
    print(f"\nper run ({args.files:,}-file fixture, best of {args.repeat})      ms  overhead")
    bare = runs[0][1]
    for label, ms in runs:
        extra = f"  {ms - bare:+.0f} ms" if label.startswith("harness run") else ""
        print(f"  {label:<38}{ms:>7.1f}{extra}" if ms < 100 else f"  {label:<38}{ms:>7.0f}{extra}")


if __name__ == "__main__":
    main()
