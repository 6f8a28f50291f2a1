"""Benchmark: streaming a JSON Lines trace file larger than memory through ``load -> score``.

(results filled in below after the run)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Runs of the example experiment written once and repeated (with new run and task ids) to reach the size.
_TASKS, _SEEDS = 400, 5


def write_records(path: Path, size: int) -> tuple[int, int]:
    """Write at least ``size`` bytes of agentab records: the example experiment repeated under new ids.

    Copy ``k`` of the example's runs has run ids ``c<k>-<run_id>`` and task ids ``c<k>-<task_id>``, so every run
    id is unique and the tasks grow with the file. Returns (runs, bytes).
    """
    sys.path.insert(0, str(HERE.parent))
    import agentab

    traces = agentab.datasets.example_experiment(seed=0, n_tasks=_TASKS, n_seeds=_SEEDS)
    with tempfile.TemporaryDirectory() as tmp:
        block = (Path(tmp) / "block.jsonl")
        traces.to_jsonl(block)
        lines = block.read_bytes().splitlines(keepends=True)
    runs = written = copy = 0
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as fh:
        while written < size:
            prefix = b"c%d-" % copy
            chunk = b"".join(line.replace(b'{"run_id":"', b'{"run_id":"' + prefix, 1)
                             .replace(b'"task_id":"', b'"task_id":"' + prefix, 1) for line in lines)
            fh.write(chunk)
            written += len(chunk)
            runs += len(lines)
            copy += 1
    partial.rename(path)
    return runs, written
