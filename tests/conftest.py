"""Shared helpers for the test suite."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest


def make_record(run_id: str = "r1", task_id: str = "t1", seed: int = 0, n_steps: int = 2, **overrides: Any) -> dict:
    """A valid trace record with every field filled in."""
    steps = []
    for i in range(n_steps):
        steps.append({
            "index": i,
            "tool": "read_file" if i % 2 == 0 else "write_file",
            "args": {"path": f"src/f{i}.py", "mode": "r"},
            "observation": {"status": "ok", "bytes": 100 * (i + 1)},
            "tokens_in": 800 + i,
            "tokens_out": 40 + i,
            "started_at": f"2026-11-02T09:00:{2 * i:02d}Z",
            "ended_at": f"2026-11-02T09:00:{2 * i + 1:02d}.5Z",
        })
    record = {
        "run_id": run_id,
        "task_id": task_id,
        "seed": seed,
        "arm": "baseline",
        "steps": steps,
        "terminal_state": {
            "files_created": ["out/summary.md"],
            "files_modified": ["src/f1.py"],
            "files_deleted": [],
            "external_calls": ["https://example.org/api"],
            "rows_inserted": 3,
        },
        "retries": 1,
        "backtracks": 0,
        "outcome": True,
        "cost_usd": 0.0123,
        "latency_s": 4.5,
        "metadata": {"model": "sonnet-4", "harness": "react-v1", "temperature": 0.2},
    }
    record.update(copy.deepcopy(overrides))
    return record


def same_traces(a: Any, b: Any) -> None:
    """Two loads give the same tables, counts, sources and formats (a parallel load against a serial one)."""
    import pandas as pd

    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.rejected, b.rejected)
    assert (a.n_read, a.sources, a.formats) == (b.n_read, b.sources, b.formats)


def format_files(folder: Path, seed: int, n_tasks: int, n_seeds: int) -> tuple[dict[str, list[Path]], Any]:
    """The example experiment written in every format as the format benchmark writes it (into ``folder``): each
    format's paths, and the benchmark's writers module (its ``fields=`` mappings)."""
    import sys

    import agentab

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        import _format_writers as writers
    finally:
        sys.path.pop(0)
    records = list(agentab.datasets.example_records(seed=seed, n_tasks=n_tasks, n_seeds=n_seeds))
    folder.mkdir()
    return writers.write_all(records, folder), writers


def write_jsonl(path: Path, records: list[Any]) -> Path:
    """Write records (dicts, or raw text lines) as JSON Lines."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    data = ("\n".join(lines) + "\n").encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.fixture
def record():
    return make_record
