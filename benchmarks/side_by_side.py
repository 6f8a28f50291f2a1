"""``run.py``'s benchmarks on two checkouts of agentab, one after the other in this run, side by side.

For a change that must not cost speed (a refactor): each checkout's own ``benchmarks/run.py`` cases run in a
fresh process with that checkout first on ``sys.path``, in the order before, after, before, after, ...
(``--rounds``), and the table gives each case's best agentab time per checkout, their ratio, and each
checkout's ratio against the reference that ``run.py`` measures in the same process.

Run: ``python benchmarks/side_by_side.py BEFORE_DIR AFTER_DIR`` (about 10 minutes a round on 2 cores), or
with ``--quick`` (run.py's small sizes, seconds). ``BEFORE_DIR`` can be made with
``git worktree add /tmp/before <commit>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

#: What each child process runs: run.py's cases as its main() runs them, the rows printed as JSON.
_CHILD = """
import json, sys, warnings
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/benchmarks"]
import agentab, run, bench_power
from agentab.errors import StatsWarning
assert agentab.__file__.startswith(sys.argv[1]), agentab.__file__
quick = sys.argv[2] == "quick"
warnings.simplefilter("ignore", StatsWarning)
run.warm_up()
rows = []
if quick:
    run.case_ordinal(1_000, 999, rows); run.case_p95(5_000, 500, rows); run.case_paired(60, 5, 999, rows)
    run.case_compare(20_000, rows)
else:
    run.case_ordinal(10_000, 9_999, rows); run.case_p95(100_000, 2_000, rows); run.case_paired(500, 5, 9_999, rows)
    run.case_compare(1_000_000, rows)
rows += bench_power.run(quick)
print("ROWS " + json.dumps(rows, default=float))
"""


def _rows(tree: Path, quick: bool) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), "quick" if quick else "full"], env=env,
                          capture_output=True, text=True, check=True, cwd=tree)
    line = next(line for line in done.stdout.splitlines() if line.startswith("ROWS "))
    return json.loads(line[len("ROWS "):])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="checkout of agentab before the change")
    parser.add_argument("after", type=Path, help="checkout of agentab after the change")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of before-then-after (default 1)")
    parser.add_argument("--quick", action="store_true", help="run.py's small sizes")
    args = parser.parse_args(argv)
    best: dict[str, dict[str, dict]] = {"before": {}, "after": {}}
    for _ in range(args.rounds):
        for label, tree in (("before", args.before.resolve()), ("after", args.after.resolve())):
            for r in _rows(tree, args.quick):
                kept = best[label].get(r["case"])
                if kept is None or r["agentab s"] < kept["agentab s"]:
                    best[label][r["case"]] = r
    table = pd.DataFrame([
        {"case": case, "n": b["n"], "before s": b["agentab s"], "after s": best["after"][case]["agentab s"],
         "after / before": best["after"][case]["agentab s"] / b["agentab s"],
         "before vs ref": b["ratio"], "after vs ref": best["after"][case]["ratio"],
         "before MB": b["agentab MB"], "after MB": best["after"][case]["agentab MB"]}
        for case, b in best["before"].items() if case in best["after"]
    ])
    fmt = lambda v: "-" if v is None or v != v else f"{v:,.0f}x" if v >= 10 else f"{v:.2f}x"  # noqa: E731
    with pd.option_context("display.width", 250):
        print(table.to_string(index=False, formatters={
            "before s": "{:.3f}".format, "after s": "{:.3f}".format, "after / before": "{:.2f}".format,
            "before vs ref": fmt, "after vs ref": fmt, "before MB": "{:.0f}".format, "after MB": "{:.0f}".format}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
