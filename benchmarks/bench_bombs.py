"""Decompression bombs against the default limits (slow: not in the test suite).

Each case is a small compressed file inflating to ``--gib`` GiB (default 8, as in issue 16): a one-line
``.jsonl.gz``, a ``.json.gz`` array, an OpenTelemetry ``.jsonl.gz``, an Inspect ``.json.gz`` log and an
Inspect ``.eval`` archive member. Each is loaded in a child process, strict and lenient, with the
defaults of :mod:`agentab.formats.files`; the child's peak memory and time are printed, and the run fails
unless strict gives a ``TraceError`` naming the limit and lenient a counted rejection (every case
stops long before inflating it all: at 200 times the compressed size).

    PYTHONPATH=$PWD python benchmarks/bench_bombs.py [--gib 8]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

_CHILD = """
import json, resource, sys, time
import agentab
start = time.perf_counter()
path, strict = sys.argv[1], sys.argv[2] == "strict"
try:
    traces = agentab.load_traces(path, strict=strict)
    outcome = f"loaded {len(traces.runs)}, rejected {len(traces.rejected)}: " + "; ".join(traces.rejected["reason"])
except agentab.TraceError as err:
    outcome = f"TraceError: {err}"
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

RECORD = '{"run_id": "r1", "task_id": "t", "seed": 0, "outcome": true, "steps": []}'


def _padding(fh, gib: float) -> None:
    block = b" " * 2**24
    for _ in range(int(gib * 2**30 / len(block))):
        fh.write(block)


def build(folder: Path, gib: float) -> dict[str, Path]:
    from agentab import formats

    cases = {"jsonl.gz": (RECORD + "\n", "a.jsonl.gz"), "json.gz": ("[" + RECORD + ",", "a.json.gz"),
             "otel.jsonl.gz": (formats.get("otel").example + "\n", "o.jsonl.gz"),
             "inspect.json.gz": (formats.get("inspect").example[:-2] + ",", "i.json.gz")}
    paths = {}
    for case, (head, name) in cases.items():
        paths[case] = folder / name
        with gzip.GzipFile(paths[case], "wb", compresslevel=9) as fh:
            fh.write(head.encode())
            _padding(fh, gib)
    paths["eval member"] = folder / "log.eval"
    header = {"version": 2, "status": "success", "eval": {"eval_id": "e", "task": "t", "model": "m"}}
    with zipfile.ZipFile(paths["eval member"], "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("header.json", json.dumps(header))
        with archive.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            _padding(fh, gib)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=8.0, help="inflated size of each bomb, GiB (default 8)")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="agentab-bombs-") as tmp:
        began = time.perf_counter()
        paths = build(Path(tmp), args.gib)
        print(f"built {len(paths)} bombs of {args.gib:g} GiB in {time.perf_counter() - began:.1f} s")
        for case, path in paths.items():
            for mode in ("strict", "lenient"):
                done = subprocess.run([sys.executable, "-c", _CHILD, str(path), mode], capture_output=True, text=True)
                if done.returncode != 0:
                    print(f"{case:16} {mode:8} CRASHED: {done.stderr.strip().splitlines()[-1:]}")
                    failed += 1
                    continue
                result = json.loads(done.stdout)
                ok = "MAX_INFLATION_RATIO" in result["outcome"] or "MAX_INFLATED_BYTES" in result["outcome"]
                ok = ok and (result["outcome"].startswith("TraceError") == (mode == "strict"))
                failed += not ok
                print(f"{case:16} {mode:8} {'ok' if ok else 'WRONG':5} {os_size(path):>9} compressed, "
                      f"{result['seconds']:6.2f} s, peak {result['peak_mib']:6.0f} MiB: {result['outcome'][:110]}")
    return 1 if failed else 0


def os_size(path: Path) -> str:
    return f"{path.stat().st_size / 2**20:.1f} MiB"


if __name__ == "__main__":
    sys.exit(main())
