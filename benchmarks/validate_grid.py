"""Validation grid of agentab's task-level inference with few tasks (issue 17, item 5).

What it measures
----------------
For every cell of the grid (a model, a design, numbers of tasks and seeds) it simulates ``--reps``
null data sets and as many under an alternative, and analyses each with

- **agentab**: the public array functions ``rate_difference``, ``ordinal_superiority`` and
  ``quantile_difference`` (``q=(0.5, 0.95)``), called with task ids (``x_strata``, ``y_strata``),
  two-sided, 95%, ``n_resamples=--resamples``;
- **t**: a paired t-test of the per-task mean differences with its t-interval (Welch's t-test of the
  task means for different tasks per arm);
- **sign-flip**: the exact sign-flip test of the sum of per-task differences (paired cells);
- **attainable**: the largest size any sign-flip test can have at 0.05 given the number ``k`` of nonzero
  task differences, ``2 floor(0.025 2^k) / 2^k``, averaged over the null data sets: a cell whose
  attainable size is below 0.035 cannot reach the size target for reasons of discreteness alone; the
  row also gives the median ``k`` and the share of null data sets with ``2^k < 40``, where no sign-flip
  test can reject at 0.05 at all (the ``a-note`` column says how often agentab's notes tell).

Columns: **size** (share of null data sets with p < 0.05, the decision rule) and **power** (the same under the
alternative), with their Monte Carlo SE; **coverage** of the true effect by the 95% interval under the
alternative, with its SE, and the interval's median **width**; **disagree**, the share of all data sets
(null and alternative) whose interval excludes 0 while p >= 0.05, or holds 0 while p < 0.05; **a-note**,
the share whose result notes (or warnings) say that alpha cannot be reached. The t-interval of the
ordinal and cost cells estimates another quantity (mean level, mean log cost), so its coverage is not
shown. Models, truths and the reference methods: ``benchmarks/_grid_models.py``.

Flags (agentab and t rows; the issue's targets): ``size>0.065`` / ``size>0.06`` / ``size<0.035`` for
cells with at least 8 tasks (``size<0.035*`` when the cell's attainable size is below 0.035:
discreteness); ``cov<0.935`` / ``cov>0.965`` for cells with at least 8 tasks (cost p95: 20);
``power<t`` when agentab's power is below the t-test's by more than 2 Monte Carlo SE of the difference
(binary and ordinal cells: the t-test of mean log cost tests another functional than p50 / p95).

Cells
-----
- paired binary: 5, 8, 12, 20, 40 tasks x 1, 3, 5 seeds x ICC 0.3, 0.7 x base rate 0.5, 0.15;
- ordinal 0-3: 8, 20, 40 tasks x 3 seeds, paired;
- cost p50 / p95: 10, 20, 50 tasks x 5 seeds, paired;
- other binary designs: unequal seeds (20 tasks, 1-8 seeds per task and arm, ICC 0.3, base 0.5);
  25% of the candidate's tasks missing (20 tasks x 3 seeds); clustered (20 + 20 different tasks x 3
  seeds, ICC 0.3); weak null (10 tasks at ICC 0.7 against 30 at ICC 0.1, both mean 0.5: size only).

Run
---
    python benchmarks/validate_grid.py [--reps N] [--resamples B] [--seed S] [--jobs J]
                                       [--cells REGEX ...] [--quick] [--json PATH] [--compare BEFORE]
    python benchmarks/validate_grid.py --show PATH [--compare BEFORE]
    python benchmarks/validate_grid.py --list

Defaults: ``--reps 1000 --resamples 999 --seed 20261201 --jobs 2``; ``--quick`` runs six cells with 100
replications (unless ``--reps`` is given). ``--cells`` keeps the cells whose name matches any of the
regular expressions (``--list`` prints the names and each binary cell's shift). ``--show PATH`` prints
the tables of a saved run; ``--compare BEFORE.json`` adds a before -> after table (size, coverage,
power) of the cells both runs have, e.g. ``--show after.json --compare before.json``. Every
replication has its own random streams (numpy ``SeedSequence(seed, spawn_key=(cell, replication))``,
the cell numbered in the full grid), so the numbers depend neither on ``--jobs`` nor on ``--cells``.
``--json`` writes every figure (atomically) for before / after comparisons.

Last run
--------
2026-12-01, ``python benchmarks/validate_grid.py --jobs 1 --json grid_before.json`` on commit eb7dd12
(agentab.stats sha256 f8641ae91065, the methods before issue 17), 2 shared cores: 7.8 min wall time;
seconds per cell (both hypotheses, 2,000 analyses by every method): paired binary 2.5-4.5, ordinal 8-15,
cost 15 / 36 / 100 (10 / 20 / 50 tasks: agentab's quantile call takes about 36 ms at 50 x 5, the
20,000-flip sign-flip test 10 ms), the other binary designs 3-6. Two runs with the same seed gave the
same figures. Of the 73 agentab rows: ``power<t`` 51, ``size<0.035*`` 37 (discreteness: the attainable
size is below 0.035 in 38 of the 56 cells with at least 8 tasks, every ICC 0.7 cell below 40 tasks
among them), ``cov<0.935`` 35 (down to 0.88 at 8 x 5, ICC 0.3, where the t-interval covers 0.94),
``size<0.035`` 11, ``cov>0.965`` 5, ``size>0.065`` 1 (the weak null, 0.075); ``disagree`` up to 0.41
with 8 tasks. The t-interval itself misses the coverage band in 27 of those 51 binary cells (mostly ICC
0.7 and rare success), so there the band may be out of any method's reach. agentab's paired binary test
is the exact sign-flip test (identical size and power in every cell). For ordinal cells ``k`` counts
tasks whose mean levels differ, fewer than those whose level shares differ (agentab's unit), so the
attainable row understates what agentab's test can reach there.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, fields
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _grid_models import ALPHA, Cell, attainable_size, calibrated, replicate, truth
from _provenance import source_state

SIZE_BAND = (0.035, 0.06)
SIZE_MAX = 0.065
COVER_BAND = (0.935, 0.965)
MIN_TASKS = 8
QUICK_CELLS = (
    r"^binary T=8 m=3 ICC=0.3 base=0.5$",
    r"^binary T=20 m=3 ICC=0.7 base=0.5$",
    r"^ordinal T=8 ",
    r"^cost T=10 ",
    r"^missing",
    r"^weak null",
)


def grid() -> list[Cell]:
    """Every cell, in a fixed order (a cell's index keys its random streams)."""
    cells = [
        Cell(f"binary T={t} m={m} ICC={icc} base={base}", "paired binary", "binary", "paired", t, m, icc, base)
        for base in (0.5, 0.15)
        for icc in (0.3, 0.7)
        for m in (1, 3, 5)
        for t in (5, 8, 12, 20, 40)
    ]
    cells += [Cell(f"ordinal T={t} m=3", "ordinal", "ordinal", "paired", t, 3) for t in (8, 20, 40)]
    cells += [Cell(f"cost T={t} m=5", "cost", "cost", "paired", t, 5) for t in (10, 20, 50)]
    other = "other binary designs"
    cells += [
        Cell("unequal seeds T=20 m=1..8 ICC=0.3 base=0.5", other, "binary", "paired", 20, 0),
        Cell("missing 25% cand. tasks T=20 m=3 ICC=0.3 base=0.5", other, "binary", "paired", 20, 3,
             missing=0.25),
        Cell("clustered T=20+20 m=3 ICC=0.3 base=0.5", other, "binary", "clustered", 20, 3),
        Cell("weak null T=10+30 m=3 ICC=0.7/0.1 base=0.5", other, "binary", "clustered", 10, 3, icc=0.7,
             cand_tasks=30, cand_icc=0.1, null_only=True),
    ]
    return [calibrated(cell) for cell in cells]


# --------------------------------------------------------------------------- #
# Simulation
# --------------------------------------------------------------------------- #
def run_job(job: tuple[int, Cell, int, int, int, int]) -> tuple[int, int, list[dict], list[dict], float]:
    """Replications ``start..stop-1`` of one cell: the null and alternative records and the seconds."""
    index, cell, start, stop, seed, n_resamples = job
    t0 = time.perf_counter()
    nulls, alts = [], []
    for rep in range(start, stop):
        null_ss, alt_ss = np.random.SeedSequence(seed, spawn_key=(index, rep)).spawn(2)
        nulls.append(replicate(cell, False, null_ss, n_resamples))
        if not cell.null_only:
            alts.append(replicate(cell, True, alt_ss, n_resamples))
    return index, start, nulls, alts, time.perf_counter() - t0


def simulate_cells(selected: list[tuple[int, Cell]], args: argparse.Namespace) -> dict[int, dict]:
    """Run every job (in ``args.jobs`` processes); per cell index its records in replication order."""
    jobs = [(i, cell, start, min(start + args.chunk, args.reps), args.seed, args.resamples)
            for i, cell in selected for start in range(0, args.reps, args.chunk)]
    parts: dict[int, dict] = {i: {"parts": [], "seconds": 0.0} for i, _ in selected}
    t_start = time.perf_counter()
    if args.jobs > 1:
        ctx = get_context("fork") if sys.platform != "win32" else get_context()
        with ctx.Pool(args.jobs) as pool:
            for done, out in enumerate(pool.imap_unordered(run_job, jobs), 1):
                _collect(parts, out)
                _progress(done, len(jobs), t_start)
    else:
        for done, job in enumerate(jobs, 1):
            _collect(parts, run_job(job))
            _progress(done, len(jobs), t_start)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    for entry in parts.values():
        entry["parts"].sort(key=lambda part: part[0])
        entry["null"] = [r for _, nulls, _ in entry["parts"] for r in nulls]
        entry["alt"] = [r for _, _, alts in entry["parts"] for r in alts]
    return parts


def _collect(parts: dict, out: tuple) -> None:
    index, start, nulls, alts, seconds = out
    parts[index]["parts"].append((start, nulls, alts))
    parts[index]["seconds"] += seconds


def _progress(done: int, total: int, t_start: float) -> None:
    if not sys.stderr.isatty():
        return
    elapsed = time.perf_counter() - t_start
    print(f"\r{done}/{total} jobs, {elapsed:.0f} s elapsed, about {elapsed / done * (total - done):.0f} s to go  ",
          end="", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- #
# Summaries
# --------------------------------------------------------------------------- #
def _rate(hits: np.ndarray) -> tuple[float | None, float | None]:
    if len(hits) == 0:
        return None, None
    r = float(np.mean(hits))
    return r, float(np.sqrt(r * (1 - r) / len(hits)))


def _method_row(cell: Cell, method: str, j: int, true: float, nulls: list[dict], alts: list[dict]) -> dict:
    """Size, coverage, width, power, disagreement and alpha notes of one method and output."""
    def column(records: list[dict], key: str) -> np.ndarray:
        return np.array([r[method][key][j] if key in r[method] else np.nan for r in records], dtype=float)

    p_null, p_alt = column(nulls, "p"), column(alts, "p")
    row: dict[str, Any] = {"method": method, "output": cell.outputs[j] if method == "agentab" else cell.kind}
    row["size"], row["size_se"] = _rate(p_null < ALPHA)
    row["power"], row["power_se"] = _rate(p_alt < ALPHA) if alts else (None, None)
    row.update(coverage=None, coverage_se=None, width=None, disagree=None, alpha_note=None, coverage_note=None, errors=0)
    if method == "sign-flip":
        return row
    lo_alt, hi_alt = column(alts, "lo"), column(alts, "hi")
    if alts and (method == "agentab" or cell.kind == "binary"):
        row["coverage"], row["coverage_se"] = _rate((lo_alt <= true) & (true <= hi_alt))
        row["width"] = float(np.nanmedian(hi_alt - lo_alt)) if np.isfinite(hi_alt - lo_alt).any() else None
    lo = np.concatenate([column(nulls, "lo"), lo_alt])
    hi = np.concatenate([column(nulls, "hi"), hi_alt])
    p = np.concatenate([p_null, p_alt])
    ok = np.isfinite(p) & np.isfinite(lo) & np.isfinite(hi)
    excludes = (lo > 0) | (hi < 0)
    row["disagree"] = float(np.mean((excludes != (p < ALPHA))[ok])) if ok.any() else None
    if method == "agentab":
        records = nulls + alts
        row["alpha_note"] = float(np.mean([r["agentab"]["note"] for r in records]))
        row["coverage_note"] = float(np.mean([r["agentab"].get("cnote", False) for r in alts])) if alts else None
        row["errors"] = sum(bool(r["agentab"]["error"]) for r in records)
        row["error_kinds"] = sorted({r["agentab"]["error"] for r in records} - {""})
    return row


def summarise(cell: Cell, true: np.ndarray, nulls: list[dict], alts: list[dict]) -> list[dict]:
    """Every method's row of one cell."""
    rows = [_method_row(cell, "agentab", j, float(true[j]), nulls, alts) for j in range(len(cell.outputs))]
    rows.append(_method_row(cell, "t", 0, float(true[0]), nulls, alts))
    if cell.design == "paired":
        rows.append(_method_row(cell, "sign-flip", 0, float(true[0]), nulls, alts))
        ks = np.array([r["k"] for r in nulls])
        sizes = np.array([attainable_size(int(k)) for k in ks])
        rows.append({"method": "attainable", "output": cell.kind, "size": float(np.mean(sizes)),
                     "median_k": float(np.median(ks)), "unreachable": float(np.mean(sizes == 0)),
                     "k_counts": np.bincount(ks).tolist()})
    return rows


def flags(cell: Cell, rows: list[dict]) -> None:
    """Add each row's flags against the issue's targets (``row["flags"]``)."""
    attainable = next((r["size"] for r in rows if r["method"] == "attainable"), None)
    t_row = next(r for r in rows if r["method"] == "t")
    for row in rows:
        marks: list[str] = []
        row["flags"] = marks
        if row["method"] not in ("agentab", "t") or cell.min_tasks < MIN_TASKS:
            continue
        size = row["size"]
        if size is not None and size > SIZE_MAX:
            marks.append("size>0.065")
        elif size is not None and size > SIZE_BAND[1]:
            marks.append("size>0.06")
        elif size is not None and size < SIZE_BAND[0]:
            marks.append("size<0.035" + ("*" if attainable is not None and attainable < SIZE_BAND[0] else ""))
        in_scope = not (row["output"] == "p95" and cell.min_tasks < 20)
        cover = row["coverage"]
        if cover is not None and in_scope and not COVER_BAND[0] <= cover <= COVER_BAND[1]:
            marks.append("cov<0.935" if cover < COVER_BAND[0] else "cov>0.965")
        if (row["method"] == "agentab" and cell.kind != "cost" and row["power"] is not None
                and t_row["power"] is not None):
            margin = 2 * np.hypot(row["power_se"], t_row["power_se"])
            if row["power"] < t_row["power"] - margin:
                marks.append("power<t")


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #
def _pm(value: float | None, se: float | None) -> str:
    return f"{'-':>13}" if value is None else f"{value:6.3f} ± {se:.3f}"


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "-" if value is None else format(value, fmt)


def print_tables(results: list[dict]) -> None:
    """One table per family: a line per cell and method."""
    header = (f"{'cell':<50} {'method':<12} {'size':>13}  {'coverage':>13}  {'width':>9}  {'power':>13}  "
              f"{'disagree':>8}  {'a-note':>6}  {'c-note':>6}  {'s':>5}  flags")
    for family in dict.fromkeys(r["family"] for r in results):
        print(f"\n{family}\n{header}\n{'-' * len(header)}")
        for res in (r for r in results if r["family"] == family):
            for i, row in enumerate(res["rows"]):
                label = res["name"] if i == 0 else ""
                method = row["method"] + (f" {row['output']}" if row["output"] in ("p50", "p95") else "")
                if row["method"] == "t" and res["design"] == "clustered":
                    method = "t (Welch)"
                if row["method"] == "attainable":
                    unreachable = row.get("unreachable")
                    share = "" if unreachable is None else f"; {unreachable:.0%} of null data sets cannot reach 0.05"
                    line = (f"{label:<50} {method:<12} {row['size']:>6.3f}          "
                            f"(median k {row['median_k']:.0f}{share})")
                    print(line)
                    continue
                secs = f"{res['seconds']:5.1f}" if i == 0 else " " * 5
                extra = f" errors {row['errors']} {row['error_kinds']}" if row.get("errors") else ""
                print(f"{label:<50} {method:<12} {_pm(row['size'], row['size_se'])}  "
                      f"{_pm(row['coverage'], row['coverage_se'])}  {_num(row['width'], '9.4g'):>9}  "
                      f"{_pm(row['power'], row['power_se'])}  {_num(row['disagree']):>8}  "
                      f"{_num(row['alpha_note']):>6}  {_num(row.get('coverage_note')):>6}  {secs}  {','.join(row['flags'])}{extra}")


def write_json(path: str, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically (a temporary file in the same folder, then ``os.replace``)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(payload, handle, indent=1)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def package_state() -> str:
    """The commit of the repository and a digest of the agentab.stats sources actually imported."""
    import agentab.stats

    folder = Path(agentab.stats.__file__).resolve().parent
    return source_state(sorted(folder.glob("*.py")), "agentab/stats/*.py")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=None, help="replications per cell (1000; --quick: 100)")
    parser.add_argument("--resamples", type=int, default=999, help="agentab's n_resamples (default 999)")
    parser.add_argument("--seed", type=int, default=20261201, help="root seed")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--chunk", type=int, default=50, help="replications per job (default 50)")
    parser.add_argument("--cells", nargs="+", default=None, metavar="REGEX", help="keep cells matching any")
    parser.add_argument("--quick", action="store_true", help="six cells, 100 replications")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the results as JSON")
    parser.add_argument("--list", action="store_true", help="print the cell names and exit")
    parser.add_argument("--show", default=None, metavar="PATH", help="print the tables of a --json file (no run)")
    parser.add_argument("--compare", default=None, metavar="BEFORE", help="also print before -> after against "
                        "a --json file of an earlier run")
    args = parser.parse_args(argv)
    if args.reps is None:
        args.reps = 100 if args.quick else 1000
    return args


def compare(before: list[dict], after: list[dict]) -> None:
    """Print size, coverage and power of the cells in both runs, before -> after, with the after flags."""
    old = {(r["name"], row["method"], row["output"]): row for r in before for row in r["rows"]}
    header = f"{'cell':<50} {'method':<12} {'size before -> after':>22}  {'coverage':>15}  {'power':>15}  flags after"
    print(f"\nbefore -> after\n{header}\n{'-' * len(header)}")
    for res in after:
        for row in res["rows"]:
            prior = old.get((res["name"], row["method"], row["output"]))
            if prior is None or row["method"] == "attainable":
                continue
            method = row["method"] + (f" {row['output']}" if row["output"] in ("p50", "p95") else "")
            pairs = [f"{_num(prior.get(key))} -> {_num(row.get(key))}" for key in ("size", "coverage", "power")]
            print(f"{res['name']:<50} {method:<12} {pairs[0]:>22}  {pairs[1]:>15}  {pairs[2]:>15}  "
                  f"{','.join(row.get('flags', []))}")


def _load(path: str, header: bool = False) -> list[dict]:
    """The cells of a JSON written by ``--json``, their flags recomputed with this version's targets
    (``header``: print what the run measured first)."""
    with open(path) as handle:
        payload = json.load(handle)
    results = payload["cells"]
    if header:
        a = payload["args"]
        print(f"agentab validation grid (from {path}): {len(results)} cells, {a['reps']} replications per cell and "
              f"hypothesis, {a['resamples']} resamples, seed {a['seed']}, {a['jobs']} processes")
        print(f"agentab: {payload['package_state']}; run {payload['date'][:16]} UTC, "
              f"{payload['elapsed_seconds'] / 60:.1f} min wall time")
    names = {f.name for f in fields(Cell)}
    for res in results:
        flags(Cell(**{k: v for k, v in res.items() if k in names}), res["rows"])
    return results


def run_grid(args: argparse.Namespace) -> list[dict]:
    """Simulate the selected cells and print their tables; the results (as written by ``--json``)."""
    cells = list(enumerate(grid()))
    patterns = [re.compile(p) for p in (args.cells or []) + (list(QUICK_CELLS) if args.quick else [])]
    selected = [(i, c) for i, c in cells if not patterns or any(p.search(c.name) for p in patterns)]
    t_start = time.perf_counter()
    state = package_state()
    print(f"agentab validation grid: {len(selected)} cells, {args.reps} replications per cell and hypothesis, "
          f"{args.resamples} resamples, seed {args.seed}, {args.jobs} processes")
    print(f"agentab: {state}")
    truths = {i: truth(c, np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(i,))))
              for i, c in selected}
    parts = simulate_cells(selected, args)
    results = []
    for i, cell in selected:
        rows = summarise(cell, truths[i], parts[i]["null"], parts[i]["alt"])
        flags(cell, rows)
        results.append({**asdict(cell), "index": i, "truth": truths[i].tolist(),
                        "seconds": parts[i]["seconds"], "rows": rows})
    print_tables(results)
    elapsed = time.perf_counter() - t_start
    print(LEGEND)
    print(f"finished {datetime.date.today().isoformat()} in {elapsed / 60:.1f} min wall time")
    if args.json:
        write_json(args.json, {"package_state": state, "args": vars(args), "date": datetime.datetime.now(
            datetime.timezone.utc).isoformat(), "elapsed_seconds": elapsed, "cells": results})
    return results


LEGEND = (
    "\nsize / power: share with p < 0.05 under the null / alternative; coverage: share of 95% intervals holding "
    "the truth (alternative); width: median; ± Monte Carlo SE. disagree: interval vs p < 0.05 (all data sets); "
    "a-note: notes saying alpha cannot be reached; c-note: alternative results whose notes say the interval's coverage is approximate; s: seconds in the cell's jobs (summed over processes); "
    "attainable: mean largest sign-flip size at 0.05 (k nonzero task differences; 2^k < 40: no sign-flip "
    "test can reject). t (Welch): Welch's t-test of task means (different tasks per arm). Binary alternative: mean "
    "logit shift per cell aiming the t-test's z at 2.5 (--list, JSON)."
)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        print("\n".join(f"{i:3d}  {cell.name:<46} shift {cell.shift:.3f}" for i, cell in enumerate(grid())))
        return 0
    if args.show:
        results = _load(args.show, header=True)
        print_tables(results)
        print(LEGEND)
    else:
        results = run_grid(args)
    if args.compare:
        compare(_load(args.compare), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
