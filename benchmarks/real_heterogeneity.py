"""How much real agent changes vary from task to task: variance components of real benchmark pairs.

A plan from a one-arm pilot must assume how much the effect of a change varies across tasks (the
task-by-arm interaction); this script measures it on real leaderboard data in ``../shared/data/``
(see its README for provenance and licences), so a default can be derived from real pairs rather
than assumed (issue 18).

- **Terminal-Bench core 0.1.1**: 13 submissions x the same 80 tasks x 5 runs. For every pair of
  submissions (78), with per-task success rates ``a_t`` and ``b_t`` over 5 runs each, method-of-
  moments estimates on the probability scale (the estimand of ``agentab.compare``):

  - between-task SD of the true rate in each arm: ``var_t(a_t) - mean_t(s2_a,t / 5)``, with ``s2`` the
    unbiased within-task variance of the 5 runs;
  - **effect SD** (task-by-arm interaction): ``var_t(b_t - a_t) - mean_t(s2_a,t / 5 + s2_b,t / 5)``;
  - the ratio effect SD / between-task SD (mean of the two arms' between-task variances), the scale
    of issue 18's simulated grid (0, 0.5x, 1x).

  Harness errors (``is_resolved`` empty, 418 trials) count as failures, as the leaderboard does.
  Pairs are grouped: same model, different agent (a harness change); same agent, different model
  (a model change); both differ.
- **SWE-bench Verified, bash-only** (mini-SWE-agent, 25 models, the same 500 instances, one run
  each): per pair the share of discordant instances ``p10 + p01`` and the phi correlation. With one
  run per instance the effect's task-to-task variance cannot be told apart from run noise: the
  discordance bounds it (``var(d) = p10 + p01 - (p10 - p01)^2`` is its sum with the noise). The
  submission flagged corrupt in the data README is left out.

Run: ``python benchmarks/real_heterogeneity.py [--json PATH]`` (seconds). Prints the per-pair
table (``--all``) or the summary by group, and writes JSON with every pair when asked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TB = DATA / "terminal-bench" / "tb_core_0.1.1_trials.csv"
SWE = DATA / "swebench-verified-bash-only" / "swebench_verified_bash_only_per_instance.csv"
CORRUPT = {"20250720_mini-v0.0.0-claude-3-7-sonnet-20250219"}


def terminal_bench_pairs(path: Path = TB) -> pd.DataFrame:
    """Variance components of every pair of Terminal-Bench submissions (probability scale)."""
    trials = pd.read_csv(path, usecols=["submission", "agent", "model", "task_id", "is_resolved"])
    trials["y"] = trials["is_resolved"].astype(str).str.lower().eq("true").astype(float)
    per = trials.groupby(["submission", "task_id"])["y"].agg(["mean", "var", "size"]).reset_index()
    meta = trials.drop_duplicates("submission").set_index("submission")[["agent", "model"]]
    rows = []
    for a, b in combinations(sorted(per["submission"].unique()), 2):
        pa = per[per.submission == a].set_index("task_id")
        pb = per[per.submission == b].set_index("task_id")
        both = pa.drop(columns="submission").merge(pb.drop(columns="submission"), left_index=True, right_index=True,
                                                   suffixes=("_a", "_b"))
        noise_a = both["var_a"] / both["size_a"]
        noise_b = both["var_b"] / both["size_b"]
        between_a = max(0.0, float(both["mean_a"].var(ddof=1) - noise_a.mean()))
        between_b = max(0.0, float(both["mean_b"].var(ddof=1) - noise_b.mean()))
        d = both["mean_b"] - both["mean_a"]
        effect_var = max(0.0, float(d.var(ddof=1) - (noise_a + noise_b).mean()))
        between = np.sqrt((between_a + between_b) / 2)
        same_model = meta.loc[a, "model"] == meta.loc[b, "model"]
        same_agent = meta.loc[a, "agent"] == meta.loc[b, "agent"]
        group = "harness change (same model)" if same_model else ("model change (same agent)" if same_agent else "both differ")
        rows.append({
            "baseline": a, "candidate": b, "group": group, "tasks": len(both),
            "effect": float(d.mean()), "between_sd": float(between), "effect_sd": float(np.sqrt(effect_var)),
            "ratio": float(np.sqrt(effect_var) / between) if between > 0 else np.nan,
            "within_sd": float(np.sqrt(((both["var_a"] + both["var_b"]) / 2).mean())),
        })
    return pd.DataFrame(rows)


def swebench_pairs(path: Path = SWE) -> pd.DataFrame:
    """Discordance and phi of every pair of SWE-bench Verified bash-only submissions (one run per instance)."""
    table = pd.read_csv(path, usecols=["submission_folder", "instance_id", "resolved"])
    table = table[~table["submission_folder"].isin(CORRUPT)]
    wide = table.pivot_table(index="instance_id", columns="submission_folder", values="resolved", aggfunc="first").astype(float)
    rows = []
    for a, b in combinations(sorted(wide.columns), 2):
        x, y = wide[a], wide[b]
        ok = x.notna() & y.notna()
        x, y = x[ok], y[ok]
        p10, p01 = float(np.mean((x == 0) & (y == 1))), float(np.mean((x == 1) & (y == 0)))
        phi = float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else np.nan
        rows.append({"baseline": a, "candidate": b, "instances": int(ok.sum()), "effect": float(y.mean() - x.mean()),
                     "discordant": p10 + p01, "var_d_upper": p10 + p01 - (p10 - p01) ** 2, "phi": phi})
    return pd.DataFrame(rows)


def _quartiles(series: pd.Series) -> str:
    q = series.quantile([0.25, 0.5, 0.75])
    return f"{q.iloc[1]:.3f} ({q.iloc[0]:.3f}-{q.iloc[2]:.3f})"


def summary(tb: pd.DataFrame, swe: pd.DataFrame) -> str:
    lines = ["Terminal-Bench core 0.1.1, pairs of submissions on the same 80 tasks x 5 runs (probability scale):",
             "  median (interquartile range) over pairs",
             f"  {'group':<30} {'pairs':>5}  {'|effect|':>22}  {'between-task SD':>22}  {'effect SD':>22}  {'effect SD / between':>22}"]
    for group, part in [("all pairs", tb), *tb.groupby("group")]:
        lines.append(f"  {group:<30} {len(part):>5}  {_quartiles(part['effect'].abs()):>22}  {_quartiles(part['between_sd']):>22}  "
                     f"{_quartiles(part['effect_sd']):>22}  {_quartiles(part['ratio']):>22}")
    lines += ["", "SWE-bench Verified bash-only, pairs of models on the same 500 instances x 1 run:",
              f"  pairs {len(swe)}; discordant share {_quartiles(swe['discordant'])}; phi {_quartiles(swe['phi'])}; "
              f"var(d) upper bound (effect variance + run noise) {_quartiles(swe['var_d_upper'])}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every pair's estimates as JSON (atomic write)")
    parser.add_argument("--all", action="store_true", help="print every Terminal-Bench pair")
    args = parser.parse_args(argv)
    if not TB.exists() or not SWE.exists():
        print(f"data not found under {DATA}", file=sys.stderr)
        return 2
    tb, swe = terminal_bench_pairs(), swebench_pairs()
    print(summary(tb, swe))
    if args.all:
        with pd.option_context("display.width", 250, "display.max_rows", 200):
            print(tb.round(3).to_string(index=False))
    if args.json:
        out = {"terminal_bench": tb.to_dict(orient="records"), "swebench_verified": swe.to_dict(orient="records")}
        folder = os.path.dirname(os.path.abspath(args.json))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as handle:
            json.dump(out, handle, indent=1, default=float)
        os.replace(handle.name, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
