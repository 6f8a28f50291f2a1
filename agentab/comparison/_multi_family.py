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
from agentab._vocabulary import QUANTILE_KINDS
from agentab.comparison._inputs import _values
from agentab.comparison._routing import _rng
from agentab.comparison.decide import holm
from agentab.comparison.result import Comparison
from agentab.stats.arms import max_t_arms
from agentab.stats.two_sample import task_label

__all__ = ["Family", "primary_family", "MAX_T_KINDS", "MEAN_KINDS", "PAIR_COLUMNS"]

#: Primary metric kinds whose two-arm test is the paired task-level t (max-T of :func:`agentab.stats.max_t`).
MEAN_KINDS = ("binary", "continuous")
#: Every primary metric kind the max-T covers: rates and means, Cliff's delta (ordinal) and quantiles (cost, count)
#: by :func:`agentab.stats.arms.max_t_arms`.
MAX_T_KINDS = (*MEAN_KINDS, "ordinal", *QUANTILE_KINDS)
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


def _arm_runs(data: pd.DataFrame, arm: str, names: Sequence[str], column: str, kind: str,
              cluster: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each arm's values of ``column`` and their task texts (runs without a value left out)."""
    values = _values(data, column, kind)
    keep = ~np.isnan(values)
    labels = data[arm].astype(str).to_numpy()[keep]
    tasks = _task_text(data[cluster])[keep]
    return {name: (values[keep][labels == name], tasks[labels == name]) for name in names}


def _task_means(runs: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, pd.Series]:
    """Each arm's mean per task, indexed by task text, sorted."""
    return {name: pd.Series(v).groupby(t).mean().sort_index() for name, (v, t) in runs.items()}


def _why_not(comps: Mapping[str, Comparison]) -> str | None:
    """Why the max-T cannot apply to these comparisons' primary metric (None: it can)."""
    first = next(iter(comps.values()))
    row = first.table.iloc[0]
    if row["kind"] not in MAX_T_KINDS:
        return f"the primary metric is {row['kind']} ({row['statistic']}), which the max-T does not cover"
    if first.settings.cluster is None:
        return "there is no task column: the runs are not paired by task"
    unpaired = [c for c, comp in comps.items() if comp.design.kind != "paired"]
    if unpaired:
        return (f"{', '.join(unpaired)} {'is' if len(unpaired) == 1 else 'are'} not paired by task with the baseline "
                "(independent tasks have no sign flips to share: each pair's permutations reassign its own two "
                "arms' tasks, and a joint reassignment of every arm's tasks would mix a truly different "
                "candidate's runs into the others' null)")
    return None


def primary_family(data: pd.DataFrame, comps: Mapping[str, Comparison], baseline: str, alpha: float,
                   n_resamples: int, seed: object) -> Family:
    """The adjusted primary p-values of every candidate, the pairs and the best-candidate statement."""
    first = next(iter(comps.values()))
    primary, row = first.settings.primary, first.table.iloc[0]
    kind = str(row["kind"])
    column = primary.rpartition(" ")[0] if kind in QUANTILE_KINDS else primary
    p_two = {c: float(comp.table.iloc[0]["p_value"]) for c, comp in comps.items()}
    why = _why_not(comps)
    runs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    tasks = np.array([], dtype=str)
    if why is None:
        runs = _arm_runs(data, first.settings.arm, [baseline, *comps], column, kind, first.settings.cluster)
        tasks = np.unique(runs[baseline][1])
        for name in comps:
            tasks = np.intersect1d(tasks, runs[name][1])
        if len(tasks) < 2:
            why = f"the arms share {len(tasks)} task(s) with a value of {column}"
        runs = {a: (v[np.isin(t, tasks)], t[np.isin(t, tasks)]) for a, (v, t) in runs.items()}
    if why is not None:
        return _holm(p_two, why)
    same = all(int(comp.metric(primary).n_units[0]) == len(tasks) for comp in comps.values())
    arms = [baseline, *comps]
    stream = column if same else f"{column} shared tasks"
    pairs = [(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :]]  # the k (baseline, candidate) pairs first
    families = [range(len(comps)), range(len(pairs))]
    rng = _rng(seed_sequence(seed), stream)
    if kind in MEAN_KINDS:
        means = _task_means(runs)
        res, every = _max_t(means, pairs, families, n_resamples, rng)
        table = _pairs(pairs, every, [float(means[b].mean() - means[a].mean()) for a, b in pairs],
                       [(float(means[a].mean()), float(means[b].mean())) for a, b in pairs], first, alpha)
    else:
        index = {a: i for i, a in enumerate(arms)}
        q = float(np.atleast_1d(first.metric(primary).q)[0]) if kind in QUANTILE_KINDS else 0.5
        out = max_t_arms([runs[a][0] for a in arms], [runs[a][1] for a in arms], [(index[a], index[b]) for a, b in pairs],
                         families, kind="ordinal" if kind == "ordinal" else "quantile", q=q, n_resamples=n_resamples,
                         rng=rng)
        (res, every), shown = out.families, kind in QUANTILE_KINDS  # mean levels are not the effect's scale
        table = _pairs(pairs, every, list(out.effect),
                       [(a, b) if shown else (np.nan, np.nan) for a, b in zip(out.a, out.b)], first, alpha)
    notes = _notes(same, len(tasks), res, [p_two[c] for c in comps])
    adjusted = {c: max(float(p), p_two[c]) for c, p in zip(comps, res.adjusted)}
    best, statement = _best(table, comps, baseline, primary, first, alpha)
    return Family(adjusted, "max-T step-down", _words(len(comps), row, same, res, len(tasks)), res.exact,
                  res.n_patterns, table, best, statement, notes)


def _words(k: int, row: pd.Series, same: bool, res: stats.MaxTResult, n_tasks: int) -> str:
    """How the primary p-values were adjusted, in one sentence."""
    how = f"exact, all {res.n_patterns} sign patterns" if res.exact else f"Monte Carlo, {res.n_patterns} random sign patterns"
    whose = "the two-arm tests' own" if same else "on the tasks every arm shares"
    what = {"ordinal": "of Cliff's delta over its standard error", "cost": "of the quantile difference over its "
            "root mean square on the flips", "count": "of the quantile difference over its root mean square on the "
            "flips"}.get(str(row["kind"]), "of the task-level t")
    return (f"primary p-values adjusted across the {k} candidates by step-down max-T (Westfall-Young) {what}, over "
            f"sign flips of whole tasks shared by every candidate, {whose} ({how}; {n_tasks} tasks)")


def _notes(same: bool, n_tasks: int, res: stats.MaxTResult, p_two: Sequence[float]) -> tuple[str, ...]:
    """What the reader should know about the patterns the max-T ran on."""
    if not same:
        return (f"the candidates were paired with the baseline on different tasks (missing values): the max-T ran "
                f"on the {n_tasks} tasks every arm has a value for, and each adjusted p-value is at least its "
                "two-arm p-value (a rejection needs both)",)
    if not np.allclose(res.pvalue, p_two, rtol=1e-9, atol=1e-12):
        return ("the max-T's sign flips are not the two-arm tests' own (their p-values differ): each adjusted "
                "p-value is taken at least its two-arm p-value",)
    return ()


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


def _pairs(pairs: Sequence[tuple[str, str]], res: stats.MaxTResult, effects: Sequence[float],
           values: Sequence[tuple[float, float]], first: Comparison, alpha: float) -> pd.DataFrame:
    """Every pair of arms on the primary metric, ``b`` against ``a``, adjusted together (step-down max-T, same flips)."""
    direction = str(first.table.iloc[0]["direction"])
    rows = []
    for (a, b), effect, (va, vb), t, p, padj in zip(pairs, effects, values, res.t, res.pvalue, res.adjusted):
        rows.append({"arm_a": a, "arm_b": b, "a": float(va), "b": float(vb), "effect": float(effect),
                     "t": float(t), "p_value": float(p), "p_adjusted": float(padj),
                     "assessment": _pair_assessment(float(effect), float(padj), direction, alpha)})
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
