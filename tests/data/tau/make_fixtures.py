"""Regenerate the tau fixtures of this folder from the shared real-run data (see README.md here).

    python tests/data/tau/make_fixtures.py [SHARED_DATA_DIR]

SHARED_DATA_DIR defaults to ``../shared/data`` next to the repository. Rows
are copied byte for byte (whole lines of the source JSON Lines files, in
their order); only the choice of rows is ours. The output is gzip-compressed
with a zero timestamp, so the files are the same on every run.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_SHARED = HERE.parents[2].parent / "shared" / "data"

#: tau-bench: tasks 0-9, all four trials.
TAU_BENCH_SOURCE = "tau-bench/gpt-4o-airline_trajectories.jsonl"
TAU_BENCH_TASKS = set(range(10))
TAU_BENCH_OUT = "tau_bench_gpt4o_airline.jsonl.gz"

#: tau2-bench policy A/B, block 1: two of its three agent models, both policies, every task and trial.
TAU2_SOURCE = "tau2-bench-grok-policy-ab/tau2_block1_4tasks_x4trials_3models_2025-10-13.jsonl"
TAU2_MODELS = ("xai/grok-3-mini", "xai/grok-4")
TAU2_OUT = "tau2_grok_policy_ab.jsonl.gz"


def _subset(source: Path, keep) -> list[bytes]:
    lines = source.read_bytes().splitlines(keepends=True)
    return [line for line in lines if line.strip() and keep(json.loads(line))]


def _write(path: Path, lines: list[bytes]) -> None:
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh:
        for line in lines:
            fh.write(line if line.endswith(b"\n") else line + b"\n")


def main(shared: Path = DEFAULT_SHARED) -> None:
    tau = _subset(shared / TAU_BENCH_SOURCE, lambda run: run["task_id"] in TAU_BENCH_TASKS)
    tau2 = _subset(shared / TAU2_SOURCE, lambda run: run["agent_model"] in TAU2_MODELS)
    assert len(tau) == 40 and len(tau2) == 64, (len(tau), len(tau2))
    _write(HERE / TAU_BENCH_OUT, tau)
    _write(HERE / TAU2_OUT, tau2)
    for name in (TAU_BENCH_OUT, TAU2_OUT):
        print(f"{name}: {(HERE / name).stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SHARED)
