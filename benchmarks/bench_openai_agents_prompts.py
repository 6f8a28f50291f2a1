"""Benchmark: an OpenAI Agents SDK export with its prompts, against the same export without them.

The SDK's own models record each model call's messages on its ``generation``
span (``input``: the whole conversation so far; ``output``: the completion)
unless tracing is told not to include data, so in a real export the prompts are
most of the bytes, and grow with every turn. The reader never reads them
(``docs/traces/openai-agents.md``: "What is lost"): it keeps their members
undecoded (``agentab.formats._openai_agents_steps.Shallow``).

The runs of ``bench_formats.py``'s OpenAI Agents export (``--runs`` of the
example experiment, one arm) are written twice: as there, and with each
generation span's ``input`` the messages so far (a system and a user message,
then each call and each tool result in turn, the result three times its
output) and ``output`` its call. Both are loaded with ``workers=1`` (best of
``--repeat``) and checked to give the same runs and steps. The numbers to read:
seconds per file, and megabytes per second.

Run: ``python benchmarks/bench_openai_agents_prompts.py [--runs N] [--repeat N]``.

Last run (2026-12-03, 2 CPUs, ``--runs 1000 --repeat 3``): see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import agentab
from _format_writers import _openai_agents_trace  # benchmarks/ is on the path


def with_prompts(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One trace's items with each generation's prompt (the conversation so far) and completion."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful software engineer. " * 8},
                                     {"role": "user", "content": "Fix the failing test in the scheduler. " * 4}]
    out = []
    for item in items:
        item = json.loads(json.dumps(item))
        data = item.get("span_data") or {}
        if data.get("type") == "generation":
            call = {"role": "assistant", "content": None,
                    "tool_calls": [{"id": "call_1", "type": "function",
                                    "function": {"name": "read_file", "arguments": "{\"path\": \"src/a.py\"}"}}]}
            data["input"], data["output"] = list(history), [call]
            history.append(call)
        elif data.get("type") == "function":
            history.append({"role": "tool", "tool_call_id": "call_1", "content": (data.get("output") or "") * 3})
        out.append(item)
    return out


def best(path: Path, repeat: int) -> tuple[float, agentab.Traces]:
    times, loaded = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        loaded = agentab.load_traces({"arm": path}, format="openai-agents", workers=1)
        times.append(time.perf_counter() - start)
    assert loaded is not None
    return min(times), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    args = parser.parse_args()
    records = list(agentab.datasets.example_records(seed=0, n_tasks=max(1, args.runs // 10), n_seeds=5))[:args.runs]
    folder = Path(tempfile.mkdtemp())
    paths = {"without prompts": folder / "plain.jsonl", "with prompts": folder / "prompts.jsonl"}
    with paths["without prompts"].open("w") as plain, paths["with prompts"].open("w") as full:
        for n, rec in enumerate(records):
            items = _openai_agents_trace(rec, n)
            plain.writelines(json.dumps(item) + "\n" for item in items)
            full.writelines(json.dumps(item) + "\n" for item in with_prompts(items))
    print(f"{len(records):,} runs; one process; best of {args.repeat}")
    print(f"{'file':>16} {'MB':>7} {'seconds':>8} {'MB/s':>7}")
    shapes = []
    for name, path in paths.items():
        seconds, loaded = best(path, args.repeat)
        size = path.stat().st_size / 1e6
        shapes.append((len(loaded.runs), loaded.steps["tool"].tolist(), loaded.runs["tokens"].tolist()))
        print(f"{name:>16} {size:>7.1f} {seconds:>8.2f} {size / seconds:>7.0f}")
    print("check:", "identical runs, steps and tokens" if shapes[0] == shapes[1] else "DIFFERENT")
    if shapes[0] != shapes[1]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
