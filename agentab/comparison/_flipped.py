"""Which tasks flipped: the per-task result of the primary metric in each arm, ranked by a per-task exact test.

:meth:`agentab.Comparison.flipped_tasks` calls :func:`flipped_tasks`. For every task both arms ran (with at
least one known value each), the primary metric's per-task statistic in each arm:

==========  ==========================  =====================================================================
kind        per-task statistic          per-task test (two-sided)
==========  ==========================  =====================================================================
binary      successes / known runs      Fisher's exact test on the 2x2 table of successes and failures
ordinal     mean level                  permutation of the task's runs between the arms (mean difference)
continuous  mean                        permutation of the task's runs between the arms (mean difference)
cost/count  the primary's quantile      permutation of the task's runs between the arms (quantile difference)
==========  ==========================  =====================================================================

The permutation test enumerates every split of the task's pooled runs into the two arms' sizes when there are
at most :data:`MAX_EXACT` of them (p = share of splits with ``|T*| >= |T|``), else draws :data:`N_PERMUTATIONS`
random splits (p = (1 + hits) / (1 + B), Phipson & Smyth 2010) from a stream of the comparison's seed and the
task's run counts, shared by the tasks with the same counts (so a task's p-value never depends on the other
tasks). With one run per arm every test gives p = 1: one run each cannot show a per-task
difference. The p-values are per task and NOT adjusted for the number of tasks; ``p_adjusted`` is the
Benjamini-Hochberg adjustment over every task compared.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import check_whole, seed_sequence
from agentab._vocabulary import QUANTILE_KINDS, rank_of
from agentab.comparison._inputs import _values
from agentab.errors import CompareError

__all__ = ["CAVEAT", "FLIPPED_COLUMNS", "SHAPES", "flipped_tasks"]

#: The columns every flipped-tasks table starts with (more follow: see :func:`flipped_tasks`).
FLIPPED_COLUMNS = ("task_id", "baseline", "candidate", "effect", "p_value", "direction")

#: The splits of a task's runs enumerated exactly, at most; beyond, random splits.
MAX_EXACT = 10_000
#: Random splits of a task's runs when there are more than :data:`MAX_EXACT`.
N_PERMUTATIONS = 9_999

#: Failure-shape columns of :func:`agentab.score` shown among a run's reasons when true, with their words.
SHAPES = {
    "loop": "loop", "cap_hit": "loop cap hit", "non_terminated": "did not terminate", "over_budget": "over step budget",
    "error_cascade": "error cascade", "premature": "premature success claim", "accidental_recovery": "accidental recovery",
}  # fmt: skip
#: Text columns that say why a run ended as it did: score's ``reasons``, a harness's failure mode or error.
REASON_COLUMNS = ("reasons", "failure_mode", "termination_reason", "error")

#: What every reader of the table must know before the p-values.
CAVEAT = ("per-task results rest on a few runs each and are noisy: a task that flipped may not flip again; the "
          "p-values are per task and not adjusted for the number of tasks (p_adjusted: Benjamini-Hochberg over "
          "every task compared), so read the table as where to look, not as findings")

_TOL = 1e-9


def _primary(comparison: Any) -> tuple[str, str, str, float | None]:
    """The primary metric's column, kind, direction and quantile (None unless cost or count)."""
    primary = str(comparison.settings.primary)
    metrics = comparison.metrics
    if primary in metrics.index:
        column, q = primary, None
    else:
        column, _, stat = primary.rpartition(" p")
        if column not in metrics.index:
            raise CompareError(f"flipped_tasks: the primary {primary!r} is not among the comparison's metrics")
        q = float(stat) / 100
    kind, direction = str(metrics.loc[column, "kind"]), str(metrics.loc[column, "direction"])
    if kind not in QUANTILE_KINDS:
        q = None
    elif q is None:
        q = 0.5
    return column, kind, direction, q


def _statistic_name(kind: str, q: float | None) -> str:
    if kind == "binary":
        return "rate"
    if kind == "ordinal":
        return "mean level"
    return "mean" if q is None else f"p{100 * q:g}"


def _stat(values: np.ndarray, q: float | None) -> np.ndarray:
    """The per-arm statistic of each row of ``values`` (mean, or the inverse-ECDF ``q``-quantile)."""
    if q is None:
        return values.mean(axis=-1)
    k = rank_of(values.shape[-1], q) - 1
    return np.partition(values, k, axis=-1)[..., k]


def _fisher(k_base: int, n_base: int, k_cand: int, n_cand: int) -> float:
    from scipy.stats import fisher_exact

    table = [[k_cand, n_cand - k_cand], [k_base, n_base - k_base]]
    return float(fisher_exact(table, alternative="two-sided")[1])


class _Splits:
    """The splits of a task's pooled runs into the two arms' sizes, made once per (runs, baseline runs) and
    shared by every task of those sizes: all of them when few, else random ones from a stream of the seed and
    the sizes (so a task's p-value does not depend on which other tasks there are)."""

    def __init__(self, seed: Any) -> None:
        self.root = seed_sequence(seed, CompareError)
        self.made: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, bool, np.ndarray]] = {}

    def __call__(self, m: int, n_base: int) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray]:
        """Index arrays (one row per split) of the runs put in the baseline and in the candidate; whether they
        are every split; and the baseline's runs as 0/1 rows (for sums)."""
        if (m, n_base) not in self.made:
            if math.comb(m, n_base) <= MAX_EXACT:
                base = np.array(list(itertools.combinations(range(m), n_base)), dtype=np.int64).reshape(-1, n_base)
                rest = np.ones((len(base), m), dtype=bool)
                np.put_along_axis(rest, base, False, axis=1)
                cand = np.nonzero(rest)[1].reshape(len(base), m - n_base)
                exact = True
            else:
                key = np.random.SeedSequence(self.root.entropy, spawn_key=(*self.root.spawn_key, 0xF1, m, n_base))
                order = np.argsort(np.random.default_rng(key).random((N_PERMUTATIONS, m)), axis=1)
                base, cand, exact = order[:, :n_base], order[:, n_base:], False
            ones = np.zeros((len(base), m))
            np.put_along_axis(ones, base, 1.0, axis=1)
            self.made[m, n_base] = base, cand, exact, ones
        return self.made[m, n_base]


def _permutation(base: np.ndarray, cand: np.ndarray, q: float | None, splits: _Splits) -> float:
    """Two-sided permutation p-value of the difference of the per-arm statistic, runs split between the arms."""
    observed = float(_stat(cand, q) - _stat(base, q))
    pooled = np.concatenate([base, cand])
    to_base, to_cand, exact, in_base = splits(len(pooled), len(base))
    if q is None:  # means: the baseline's sums by one product, the candidate's are the rest
        sums = in_base @ pooled
        moved = np.abs((pooled.sum() - sums) / len(cand) - sums / len(base))
    else:
        moved = np.abs(_stat(pooled[to_cand], q) - _stat(pooled[to_base], q))
    hits = int(np.count_nonzero(moved >= abs(observed) - _TOL * max(1.0, abs(observed))))
    return hits / len(moved) if exact else (1 + hits) / (1 + len(moved))


def _arms(comparison: Any) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The compared runs with a known task, and masks of the baseline's and candidate's runs."""
    data, arm, cluster = comparison.data, comparison.settings.arm, comparison.settings.cluster
    if cluster is None or cluster not in data:
        raise CompareError("flipped_tasks needs a task column: the comparison had none (cluster=None), so it has "
                           "no per-task results")
    data = data[data[cluster].notna()]
    names = data[arm].astype(str).to_numpy()
    return data, names == str(comparison.baseline), names == str(comparison.candidate)


def _groups(tasks: np.ndarray) -> list[tuple[Any, np.ndarray]]:
    """Each task (in :func:`_sort_key` order) with the positions of its runs, in data order."""
    codes, uniques = pd.factorize(tasks)
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(uniques)))[:-1]
    parts = dict(zip(range(len(uniques)), np.split(order, bounds)))
    ranked = sorted(range(len(uniques)), key=lambda k: _sort_key(uniques[k]))
    return [(uniques[k], parts[k]) for k in ranked]


def _per_task(comparison: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Every task both arms ran with a known value: the per-arm statistics, the effect, the p-value; and what
    was left out."""
    column, kind, direction, q = _primary(comparison)
    data, in_base, in_cand = _arms(comparison)
    values = _values(data, column, kind)  # as the comparison read them
    known = ~np.isnan(values)
    splits, fisher = _Splits(comparison.settings.seed), {}
    rows, one_arm = [], []
    for task, at in _groups(data[comparison.settings.cluster].to_numpy()):
        b_at, c_at = at[in_base[at]], at[in_cand[at]]
        base, cand = values[b_at[known[b_at]]], values[c_at[known[c_at]]]
        missing = len(b_at) - len(base), len(c_at) - len(cand)
        if len(base) == 0 or len(cand) == 0:
            if len(base) or len(cand):
                one_arm.append(task)
            continue
        if kind == "binary":
            counts = (int(base.sum()), len(base), int(cand.sum()), len(cand))
            if counts not in fisher:
                fisher[counts] = _fisher(*counts)
            p, successes = fisher[counts], (counts[0], counts[2])
        else:
            p, successes = _permutation(base, cand, q, splits), (pd.NA, pd.NA)
        b, c = float(_stat(base, q)), float(_stat(cand, q))
        rows.append((task, b, c, c - b, p, len(base), len(cand), *missing, *successes))
    table = pd.DataFrame(rows, columns=["task_id", "baseline", "candidate", "effect", "p_value", "n_baseline",
                                        "n_candidate", "missing_baseline", "missing_candidate",
                                        "successes_baseline", "successes_candidate"])
    for name in ("successes_baseline", "successes_candidate"):
        table[name] = table[name].astype("Int64")
    info = {"metric": column, "kind": kind, "metric_direction": direction, "statistic": _statistic_name(kind, q),
            "one_arm": one_arm}
    return table, info


def _sort_key(task: Any) -> tuple:
    """Task ids in their natural order (numbers as numbers, text as text), mixed types apart."""
    return (0, float(task), "") if isinstance(task, (int, float, np.integer, np.floating)) else (1, 0.0, str(task))


def _direction(effect: pd.Series, direction: str) -> pd.Series:
    """"regressed" / "improved" by the metric's direction ("lower" flips the sign); "" when unchanged."""
    better = effect * (-1.0 if direction == "lower" else 1.0)
    moved = effect.abs() > _TOL * np.maximum(1.0, effect.abs())
    return pd.Series(np.where(~moved, "", np.where(better < 0, "regressed", "improved")), index=effect.index)


def _ranked(table: pd.DataFrame) -> pd.DataFrame:
    """Most evidence first: smallest p-value, then largest |effect|, then task id."""
    # Rounded to 12 digits: equal evidence computed along different float paths (1 - 2/3, 2/3 - 1/3) ties.
    keys = pd.DataFrame({"p": table["p_value"].round(12), "size": -table["effect"].abs().round(12),
                         "task": [_sort_key(t) for t in table["task_id"]]}, index=table.index)
    order = sorted(table.index, key=lambda i: (keys.at[i, "p"], keys.at[i, "size"], keys.at[i, "task"]))
    return table.loc[order]


def _run_ids(frame: pd.DataFrame) -> list[str]:
    if "run_id" in frame:
        return [str(v) for v in frame["run_id"]]
    return [str(v) for v in frame.index]


def _run_reasons(frame: pd.DataFrame) -> list[str]:
    """Why each run ended as it did: the failure shapes that are true, then the reason columns' text."""
    parts: list[list[str]] = [[] for _ in range(len(frame))]
    for column, words in SHAPES.items():
        if column in frame:
            for i, flag in enumerate(frame[column].tolist()):
                if isinstance(flag, (bool, np.bool_)) and bool(flag):
                    parts[i].append(words)
    for column in REASON_COLUMNS:
        if column in frame:
            for i, text in enumerate(frame[column]):
                if isinstance(text, str) and text.strip():
                    parts[i].append(text if column == "reasons" else f"{column}: {text}")
    return ["; ".join(p) for p in parts]


def _with_runs(shown: pd.DataFrame, comparison: Any, column: str, kind: str) -> pd.DataFrame:
    """Each listed task's runs in both arms: ids, values (None when unknown) and reasons, as tuples."""
    data, in_base, in_cand = _arms(comparison)
    tasks = data[comparison.settings.cluster].to_numpy()
    cells: dict[str, list[tuple]] = {f"{w}_{a}": [] for w in ("runs", "values", "reasons") for a in ("baseline", "candidate")}
    for task in shown["task_id"]:
        for name, mask in (("baseline", in_base), ("candidate", in_cand)):
            runs = data[(tasks == task) & mask]
            values = _values(runs, column, kind)
            cells[f"runs_{name}"].append(tuple(_run_ids(runs)))
            cells[f"values_{name}"].append(tuple(
                None if np.isnan(v) else (bool(v) if kind == "binary" else float(v)) for v in values))
            cells[f"reasons_{name}"].append(tuple(_run_reasons(runs)))
    out = shown.copy()
    for name, cell in cells.items():
        out[name] = pd.Series(cell, index=out.index, dtype=object)
    return out


def _one_arm_count(comparison: Any, seen: list) -> int:
    """Tasks with a known value in one arm only: in a paired design the comparison's own count (it also counts
    the tasks it took out of ``data``), else those seen in the runs."""
    if comparison.design.kind == "paired":
        return max(int(sum(comparison.design.dropped_tasks)), len(seen))
    return len(seen)


def flipped_tasks(comparison: Any, n: int = 10) -> pd.DataFrame:
    """The tasks whose per-task result of the primary metric moved most: :meth:`Comparison.flipped_tasks`."""
    n = check_whole(n, "n", 1, CompareError)
    table, info = _per_task(comparison)
    if len(table):
        from statsmodels.stats.multitest import multipletests

        table["p_adjusted"] = multipletests(table["p_value"].to_numpy(), method="fdr_bh")[1]
    else:
        table["p_adjusted"] = pd.Series(dtype=float)
    table["direction"] = _direction(table["effect"], info["metric_direction"])
    table["statistic"] = info["statistic"]
    regressed = _ranked(table[table["direction"] == "regressed"])
    improved = _ranked(table[table["direction"] == "improved"])
    shown = pd.concat([regressed.head(n), improved.head(n)])
    shown = _with_runs(shown, comparison, info["metric"], info["kind"])
    first = list(FLIPPED_COLUMNS)
    shown = shown[first + ["statistic"] + [c for c in shown.columns if c not in first and c != "statistic"]]
    shown = shown.reset_index(drop=True)
    one_arm = sorted(info["one_arm"], key=_sort_key)
    shown.attrs.update({
        "metric": info["metric"], "kind": info["kind"], "metric_direction": info["metric_direction"],
        "statistic": info["statistic"], "task_column": comparison.settings.cluster, "n": n,
        "tasks_compared": len(table), "regressed": len(regressed), "improved": len(improved),
        "unchanged": int((table["direction"] == "").sum()),
        "one_arm_tasks": _one_arm_count(comparison, one_arm), "one_arm_ids": tuple(str(t) for t in one_arm),
        "test": "Fisher's exact test (two-sided) on each task's successes and failures" if info["kind"] == "binary"
        else "a two-sided permutation test of each task's runs between the arms",
        "caveat": CAVEAT,
    })
    return shown
