"""The primary metric's family across candidates: max-T over shared task sign flips, Holm where it cannot apply.

:func:`primary_family` reads the per-candidate two-arm comparisons and the runs, and returns the adjusted
primary p-values (k candidates against the baseline), every pair of arms adjusted together, and the
best-candidate statement. The statistics are :func:`agentab.stats.max_t`'s (see its module for the scheme
and why it is valid); this module only lines the tasks up the way the two-arm paired test does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentab import stats
from agentab._checks import seed_sequence
from agentab.comparison._inputs import _values
from agentab.comparison._routing import _rng
from agentab.comparison.decide import holm
from agentab.comparison.result import Comparison
from agentab.stats.two_sample import task_label

__all__ = ["Family", "primary_family", "MAX_T_KINDS", "PAIR_COLUMNS"]

#: Primary metric kinds whose two-arm test is the paired task-level t (the max-T applies to them).
MAX_T_KINDS = ("binary", "continuous")
#: Columns of :attr:`MultiComparison.pairs`.
PAIR_COLUMNS = ("arm_a", "arm_b", "a", "b", "effect", "t", "p_value", "p_adjusted", "assessment")


@dataclass(frozen=True)
class Family:
    """The primary metric's adjustment across candidates, the pairs, and the best-candidate statement."""

    p_adjusted: dict[str, float]
    method: str  # "max-T step-down" or "holm"
    words: str  # how, in one sentence
    exact: bool | None
    n_patterns: int
    pairs: pd.DataFrame
    best: str | None
    best_statement: str
    notes: tuple[str, ...]


def _task_text(tasks: pd.Series) -> np.ndarray:
    """Task ids as the tests read them (:func:`agentab.stats.two_sample.task_label`), one per run."""
    uniques = pd.unique(tasks)
    labels = {u: task_label(u) for u in uniques}
    return tasks.map(labels).to_numpy(dtype=str)


def _task_means(data: pd.DataFrame, arm: str, names: Sequence[str], metric: str, kind: str,
                cluster: str) -> dict[str, pd.Series]:
    """Each arm's mean of ``metric`` per task (runs without a value left out), indexed by task text, sorted."""
    values = _values(data, metric, kind)
    keep = ~np.isnan(values)
    labels = data[arm].astype(str).to_numpy()[keep]
    tasks = _task_text(data[cluster])[keep]
    table = pd.Series(values[keep]).groupby([labels, tasks]).mean()
    return {name: table.loc[name].sort_index() if name in table.index.get_level_values(0) else pd.Series(dtype=float)
            for name in names}


def _why_not(comps: Mapping[str, Comparison]) -> str | None:
    """Why the max-T cannot apply to these comparisons' primary metric (None: it can)."""
    first = next(iter(comps.values()))
    row = first.table.iloc[0]
    if row["kind"] not in MAX_T_KINDS:
        return f"the primary metric is {row['kind']} ({row['statistic']}), whose two-arm test is not the paired task-level t"
    if first.settings.cluster is None:
        return "there is no task column: the runs are not paired by task"
    unpaired = [c for c, comp in comps.items() if comp.design.kind != "paired"]
    if unpaired:
        return f"{', '.join(unpaired)} {'is' if len(unpaired) == 1 else 'are'} not paired by task with the baseline"
    return None


def primary_family(data: pd.DataFrame, comps: Mapping[str, Comparison], baseline: str, alpha: float,
                   n_resamples: int, seed: object) -> Family:
    """The adjusted primary p-values of every candidate, the pairs and the best-candidate statement."""
    first = next(iter(comps.values()))
    primary, kind = first.settings.primary, str(first.table.iloc[0]["kind"])
    p_two = {c: float(comp.table.iloc[0]["p_value"]) for c, comp in comps.items()}
    why = _why_not(comps)
    means: dict[str, pd.Series] = {}
    tasks = pd.Index([])
    if why is None:
        means = _task_means(data, first.settings.arm, [baseline, *comps], primary, kind, first.settings.cluster)
        tasks = means[baseline].index
        for name in comps:
            tasks = tasks.intersection(means[name].index)
        if len(tasks) < 2:
            why = f"the arms share {len(tasks)} task(s) with a value of {primary}"
        means = {a: m.loc[tasks] for a, m in means.items()}
    if why is not None:
        return _holm(p_two, why)
    same = all(int(comp.metric(primary).n_units[0]) == len(tasks) for comp in comps.values())
    arms = [baseline, *comps]
    root = seed_sequence(seed)
    stream = primary if same else f"{primary} shared tasks"
    pairs = [(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :]]  # the k (baseline, candidate) pairs first
    res, every = _max_t(means, pairs, [range(len(comps)), range(len(pairs))], n_resamples, _rng(root, stream))
    notes: list[str] = []
    if not same:
        notes.append(f"the candidates were paired with the baseline on different tasks (missing values): the max-T ran "
                     f"on the {len(tasks)} tasks every arm has a value for, and each adjusted p-value is at least its "
                     "two-arm p-value (a rejection needs both)")
    elif not np.allclose(res.pvalue, [p_two[c] for c in comps], rtol=1e-9, atol=1e-12):
        notes.append("the max-T's sign flips are not the two-arm tests' own (their p-values differ): each adjusted "
                     "p-value is taken at least its two-arm p-value")
    adjusted = {c: max(float(p), p_two[c]) for c, p in zip(comps, res.adjusted)}
    table = _pairs(means, pairs, every, first, alpha)
    best, statement = _best(table, comps, baseline, primary, first, alpha)
    how = f"exact, all {res.n_patterns} sign patterns" if res.exact else f"Monte Carlo, {res.n_patterns} random sign patterns"
    whose = "the two-arm tests' own" if same else "on the tasks every arm shares"
    words = (f"primary p-values adjusted across the {len(comps)} candidates by step-down max-T (Westfall-Young) over "
             f"sign flips of whole tasks shared by every candidate, {whose} ({how}; {len(tasks)} tasks)")
    return Family(adjusted, "max-T step-down", words, res.exact, res.n_patterns, table, best, statement, tuple(notes))


def _max_t(means: Mapping[str, pd.Series], pairs: Sequence[tuple[str, str]], families: Sequence[Sequence[int]],
           n_resamples: int, rng: np.random.Generator) -> tuple[stats.MaxTResult, ...]:
    """The max-T of ``b - a`` for every pair ``(a, b)``, per family, on one set of flips; tie keys and tolerances
    as the two-arm paired test's."""
    diffs, scores, scales = [], [], []
    for a, b in pairs:
        x, y = means[a].to_numpy(), means[b].to_numpy()
        diffs.append(y - x)
        scores.append((x + y) / 2)
        origin = float(np.max(np.abs(np.r_[x, y]), initial=0.0))
        scales.append(max(float(np.abs(y - x).max(initial=0.0)), 1e-4 * origin))
    return stats.max_t_families(np.array(diffs), families, np.array(scores), n_resamples=n_resamples, rng=rng,
                                scales=np.array(scales))


def _holm(p_two: Mapping[str, float], why: str) -> Family:
    """Holm (1979) over the candidates' two-arm primary p-values: the fallback where the max-T cannot apply."""
    adjusted = {c: float(p) for c, p in zip(p_two, holm(list(p_two.values())))}
    words = (f"primary p-values Holm-adjusted across the {len(p_two)} candidates (the fallback: the max-T over shared "
             f"sign flips cannot apply because {why})")
    statement = ("no best-candidate statement: it needs every pair of arms compared on one set of task sign flips "
                 f"(a rate or mean primary metric paired by task on the same tasks in every arm), and {why}")
    return Family(adjusted, "holm", words, None, 0, pd.DataFrame(columns=list(PAIR_COLUMNS)), None, statement, ())


def _pairs(means: Mapping[str, pd.Series], pairs: Sequence[tuple[str, str]], res: stats.MaxTResult,
           first: Comparison, alpha: float) -> pd.DataFrame:
    """Every pair of arms on the primary metric, ``b - a``, adjusted together (step-down max-T, same flips)."""
    direction = str(first.table.iloc[0]["direction"])
    rows = []
    for (a, b), t, p, padj in zip(pairs, res.t, res.pvalue, res.adjusted):
        effect = float(means[b].mean() - means[a].mean())
        rows.append({"arm_a": a, "arm_b": b, "a": float(means[a].mean()), "b": float(means[b].mean()), "effect": effect,
                     "t": float(t), "p_value": float(p), "p_adjusted": float(padj),
                     "assessment": _pair_assessment(effect, float(padj), direction, alpha)})
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))


def _pair_assessment(effect: float, p: float, direction: str, alpha: float) -> str:
    """Which arm of a pair is shown better ("b better", "a better"), or "no evidence"."""
    if not (np.isfinite(p) and p < alpha) or effect == 0:
        return "no evidence"
    if direction == "neither":
        return "differ"
    return "b better" if (effect > 0) == (direction == "higher") else "a better"


def _best(pairs: pd.DataFrame, comps: Mapping[str, Comparison], baseline: str, primary: str, first: Comparison,
          alpha: float) -> tuple[str | None, str]:
    """The candidate shown better than every other arm in the all-pairs family, with its error rate; else why not."""
    good = -1.0 if first.table.iloc[0]["direction"] == "lower" else 1.0
    family = f"all {len(pairs)} pairs of arms adjusted together by step-down max-T"
    arm_a, arm_b = pairs["arm_a"].to_numpy(dtype=object), pairs["arm_b"].to_numpy(dtype=object)
    effect, p_adj = pairs["effect"].to_numpy(dtype=float), pairs["p_adjusted"].to_numpy(dtype=float)
    scores = {}
    for c in comps:
        mine = (arm_a == c) | (arm_b == c)
        signed = np.where(arm_b[mine] == c, 1.0, -1.0) * effect[mine] * good
        wins = (signed > 0) & (p_adj[mine] < alpha)
        versus_baseline = float(signed[arm_a[mine] == baseline][0])
        scores[c] = (bool(wins.all()), float(p_adj[mine].max()), versus_baseline)
    winners = [c for c, (won, _, _) in scores.items() if won]
    if winners:
        c = winners[0]
        return c, (f"best candidate: {c}: its {primary} is better than the baseline's and every other candidate's "
                   f"({family}; largest adjusted p = {scores[c][1]:.3g}); the chance that any claim of this family "
                   f"is wrong, this one included, is at most alpha = {alpha:g}")
    top = max(comps, key=lambda c: scores[c][2])
    mine = pairs[(pairs["arm_a"] == top) | (pairs["arm_b"] == top)]
    weakest = mine.loc[mine["p_adjusted"].idxmax()]
    other = weakest["arm_a"] if weakest["arm_b"] == top else weakest["arm_b"]
    rival = "the baseline" if other == baseline else str(other)
    return None, (f"no single best candidate: none is shown better than every other arm on {primary} at alpha = "
                  f"{alpha:g} ({family}); e.g. {top} against {rival}: adjusted p = {weakest['p_adjusted']:.3g}")
