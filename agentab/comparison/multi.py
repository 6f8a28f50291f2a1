"""Many arms: every candidate against one baseline, the primary metric adjusted across the candidates.

``agentab.compare(data, arm=..., baseline="prod", candidate=["a", "b"])`` (or ``candidate="all"``: every
arm but the baseline) runs the two-arm comparison of each candidate with the baseline, all from the same
seed, and adjusts the primary metric's p-value across the candidates; secondary metrics keep their Holm
adjustment within each candidate. The result, a :class:`MultiComparison`, maps each candidate to its
two-arm :class:`~agentab.comparison.result.Comparison` (``.candidates["a"].decision.verdict``), whose
table's ``p_adjusted`` on the primary row carries the adjustment and whose verdict is reached with it.

The adjustment (:func:`agentab.stats.max_t`, :func:`agentab.stats.arms.max_t_arms`): step-down max-T
(Westfall & Young 1993) under sign flips of whole tasks applied to every candidate at once, the very patterns
each two-arm test draws (exact by enumeration when ``2^tasks <= n_resamples``), of the statistic each two-arm
test reads: the task-level t of a rate or a mean, Cliff's delta over its standard error, a quantile difference
over its root mean square on the flips. It applies when every candidate is paired by task with the baseline;
arms on different tasks have no flips to share, and their two-arm p-values are Holm-adjusted, as the result
says. The candidates' two-arm tests draw each metric's flips once (:func:`agentab.stats.arms.shared_draws`).
Every pair of arms is compared on the same flips and adjusted
together (:attr:`MultiComparison.pairs`, the CLI's ``--all-pairs``); a candidate is called best only when it
is shown better than the baseline and every other candidate in that family, so the chance that the
statement is wrong is at most ``alpha``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import jsonable_seed, recorded_seed, seed_sequence
from agentab._display import Blank, Block, Display, Items, Lines, Section, Table
from agentab.comparison._multi_family import primary_family
from agentab.comparison.decide import Adjustment, assess, decide, format_value
from agentab.comparison.result import Comparison
from agentab.errors import CompareError
from agentab.stats.arms import shared_draws

__all__ = ["SCHEMA", "SUMMARY_COLUMNS", "MultiComparison", "MultiSettings", "compare_many", "is_many"]

#: The JSON schema of a comparison of many arms (a two-arm comparison is ``agentab.comparison/1``).
SCHEMA = "agentab.comparison/2"
#: Columns of :attr:`MultiComparison.table`.
SUMMARY_COLUMNS = ("candidate", "verdict", "baseline", "value", "effect", "ci_low", "ci_high", "p_value",
                   "p_adjusted", "assessment", "tasks")


@dataclass(frozen=True)
class MultiSettings:
    """The settings of a comparison of many arms (each candidate's own are in its ``Comparison.settings``).

    Attributes
    ----------
    alpha, n_resamples : float, int
    seed : int or numpy.random.SeedSequence
        The seed every candidate's comparison and the adjustment drew from; passing it back reproduces all.
    primary, arm, baseline : str
    candidates : tuple of str
    adjustment : {"max-T step-down", "holm"}
        How the primary p-values were adjusted across candidates.
    exact : bool or None
        The max-T enumerated every sign pattern (None: Holm).
    n_patterns : int
        Sign patterns of the max-T (0: Holm).
    """

    alpha: float
    n_resamples: int
    seed: Any
    primary: str
    arm: str
    baseline: str
    candidates: tuple[str, ...]
    adjustment: str
    exact: bool | None
    n_patterns: int


@dataclass(frozen=True)
class MultiComparison(Display):
    """The result of :func:`agentab.compare` with several candidates (see :mod:`agentab.comparison.multi`).

    Attributes
    ----------
    baseline : str
    candidates : dict of str to Comparison
        Each candidate's two-arm comparison with the baseline; the primary row's ``p_adjusted`` is adjusted
        across candidates and the verdict reached with it.
    table : pandas.DataFrame
        One row per candidate (columns :data:`SUMMARY_COLUMNS`): its verdict and primary effect.
    pairs : pandas.DataFrame
        Every pair of arms on the primary metric (``effect`` is ``b - a``), p-values adjusted together by
        step-down max-T on the same sign flips; empty where the max-T cannot apply.
    adjustment : str
        How the primary p-values were adjusted, in one sentence.
    best : str or None
        The candidate shown better than the baseline and every other candidate, if any.
    best_statement : str
        The best candidate with the error rate of the claim, or why there is none.
    settings : MultiSettings
    notes : tuple of str
    """

    baseline: str
    candidates: dict[str, Comparison]
    table: pd.DataFrame
    pairs: pd.DataFrame
    adjustment: str
    best: str | None
    best_statement: str
    settings: MultiSettings
    notes: tuple[str, ...] = ()

    @property
    def verdicts(self) -> dict[str, str]:
        """Each candidate's verdict."""
        return {c: comp.verdict for c, comp in self.candidates.items()}

    def flipped_tasks(self, n: int = 10) -> pd.DataFrame:
        """Every candidate's :meth:`Comparison.flipped_tasks` against the baseline, stacked in candidate order,
        with the candidate's name in a last column ``comparison`` (the p-values are per task and per candidate,
        adjusted for neither).

        Examples
        --------
        >>> import agentab
        >>> runs = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=12, n_seeds=2))
        >>> three = runs.assign(arm=runs["arm"].astype(str))
        >>> three = pd.concat([three, three[three.arm == "candidate"].assign(arm="other",
        ...                    run_id=lambda d: d.run_id.astype(str) + "-o")])
        >>> many = agentab.compare(three, baseline="baseline", candidate="all", metrics=["outcome"],
        ...                        n_resamples=199)
        >>> sorted(set(many.flipped_tasks(n=3)["comparison"]))
        ['candidate', 'other']
        """
        frames = [c.flipped_tasks(n).assign(comparison=name) for name, c in self.candidates.items()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def __repr__(self) -> str:
        return f"MultiComparison({len(self.candidates)} candidates vs {self.baseline!r}: best {self.best!r})"

    def to_frame(self) -> pd.DataFrame:
        """The summary table (one row per candidate), as :attr:`table`; a copy."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values, schema ``"agentab.comparison/2"``; keys may be added, never renamed or removed.

        Keys: ``schema``, ``baseline``, ``primary``, ``verdicts`` (candidate -> verdict), ``best`` (a name or
        None), ``best_statement``, ``adjustment``, ``summary`` (one object per candidate, keys
        :data:`SUMMARY_COLUMNS`), ``pairs`` (keys ``PAIR_COLUMNS``), ``settings``, ``notes`` and
        ``candidates`` (candidate -> its two-arm comparison's ``to_dict()``, schema ``agentab.comparison/1``).
        """
        from agentab._display import json_ready

        settings = {**dataclasses.asdict(self.settings), "seed": jsonable_seed(self.settings.seed)}
        return json_ready({
            "schema": SCHEMA,
            "baseline": self.baseline,
            "primary": self.settings.primary,
            "verdicts": self.verdicts,
            "best": self.best,
            "best_statement": self.best_statement,
            "adjustment": self.adjustment,
            "summary": self.table.to_dict(orient="records"),
            "pairs": self.pairs.to_dict(orient="records"),
            "settings": settings,
            "notes": list(self.notes),
            "candidates": {c: comp.to_dict() for c, comp in self.candidates.items()},
        })

    def verdict_lines(self) -> list[str]:
        """One line per candidate: its verdict and primary effect with the adjusted p-value."""
        lines = []
        for r in self.table.itertuples(index=False):
            kind = str(self.candidates[r.candidate].table.iloc[0]["kind"])
            lines.append(
                f"{r.candidate}: {r.verdict.upper()}  {self.settings.primary} {format_value(r.baseline, kind)} -> "
                f"{format_value(r.value, kind)} ({format_value(r.effect, kind, True)}, CI "
                f"{format_value(r.ci_low, kind, True)} to {format_value(r.ci_high, kind, True)}), "
                f"p = {r.p_value:.3g}, adjusted p = {r.p_adjusted:.3g}"
            )
        return lines

    def summary_table(self) -> pd.DataFrame:
        """The summary as people read it: formatted values, intervals and p-values (strings), one row per candidate."""
        t = self.table
        kinds = [str(self.candidates[c].table.iloc[0]["kind"]) for c in t["candidate"]]
        level = f"{1 - self.settings.alpha:.0%} CI"
        return pd.DataFrame({
            "candidate": t["candidate"], "verdict": t["verdict"],
            self.settings.primary: [f"{format_value(b, k)} -> {format_value(v, k)}"
                                    for b, v, k in zip(t["baseline"], t["value"], kinds)],
            "effect": [format_value(e, k, True) for e, k in zip(t["effect"], kinds)],
            level: [f"[{format_value(lo, k, True)}, {format_value(hi, k, True)}]"
                    for lo, hi, k in zip(t["ci_low"], t["ci_high"], kinds)],
            "p": [f"{p:.3g}" if np.isfinite(p) else "-" for p in t["p_value"]],
            "p adjusted": [f"{p:.3g}" if np.isfinite(p) else "-" for p in t["p_adjusted"]],
            "assessment": t["assessment"],
        })

    def text(self, *, pairs: bool = False) -> str:
        """``str(result)``, with every pair of arms listed when ``pairs`` (the CLI's ``--all-pairs``)."""
        from agentab._display import render_text

        return render_text(self._view(pairs=pairs))

    def _view(self, pairs: bool = False) -> list[Block]:
        """Header, one verdict line per candidate, the best-candidate statement, the summary (and the pairs)."""
        s = self.settings
        header = [f"agentab comparison: {len(self.candidates)} candidate(s) vs {self.baseline}",
                  f"primary {s.primary}; alpha {s.alpha:g}; {s.n_resamples} resamples; seed {s.seed}"]
        shown = self.summary_table()
        view: list[Block] = [Lines(header), Blank(), Lines(self.verdict_lines()), Blank(), Lines([self.best_statement]),
                             Lines([f"({self.adjustment}; secondary metrics: Holm within each candidate)"], small=True),
                             Blank(), Table(shown)]
        if pairs and len(self.pairs):
            view += [Blank(), Section("every pair of arms (effect b - a; p-values adjusted together):", [Table(self.pairs)])]
        elif pairs:
            view += [Blank(), Lines(["every pair of arms: not computed (" + self.best_statement + ")"])]
        if self.notes:
            view += [Blank(), Items(list(self.notes), title=None, indent="", bullet="note: ")]
        return view


def is_many(data: pd.DataFrame, arm: str, candidate: Any) -> bool:
    """Whether ``candidate`` asks for many candidates: a list or tuple, or "all" (unless an arm is named "all")."""
    if isinstance(candidate, (list, tuple)):
        return True
    if isinstance(candidate, str) and candidate == "all":
        return not (isinstance(data, pd.DataFrame) and arm in data.columns and (data[arm].astype(str) == "all").any())
    return False


def _candidates(data: pd.DataFrame, arm: str, baseline: Any, candidate: Any) -> tuple[str, list[str]]:
    """The baseline and the candidates, checked; "all" is every other arm, sorted by name (never by row order)."""
    if arm not in data.columns:
        raise CompareError(f"no arm column {arm!r} in the data (columns: {', '.join(map(str, data.columns))})")
    present = sorted(dict.fromkeys(str(a) for a in pd.unique(data[arm].dropna())))
    if baseline is None:
        raise CompareError("several candidates need a named baseline: say which arm it is with baseline= "
                           f"(arms: {', '.join(present)})")
    if str(baseline) not in present:
        raise CompareError(f"baseline arm {baseline!r} not in column {arm!r} (arms: {', '.join(present)})")
    base = str(baseline)
    names = [a for a in present if a != base] if isinstance(candidate, str) else [str(c) for c in candidate]
    if not names:
        raise CompareError(f"no candidate to compare with baseline {base!r} (arms: {', '.join(present)})")
    for name in names:
        if name not in present:
            raise CompareError(f"candidate arm {name!r} not in column {arm!r} (arms: {', '.join(present)})")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise CompareError(f"candidates named more than once: {', '.join(repeated)}")
    if base in names:
        raise CompareError(f"the baseline {base!r} is also listed as a candidate")
    return base, names


def compare_many(compare_one: Callable[..., Comparison], data: pd.DataFrame, *, arm: str, baseline: Any,
                 candidate: Any, seed: Any, progress: Callable[[str, int, int], None] | None,
                 **options: Any) -> MultiComparison:
    """Every candidate against the baseline with ``compare_one`` (the two-arm :func:`agentab.compare`), adjusted.

    ``options`` are the two-arm comparison's other arguments, passed on unchanged.
    """
    if not isinstance(data, pd.DataFrame):
        raise CompareError(f"`data` must be a DataFrame with one row per run (e.g. from agentab.score), got {type(data).__name__}")
    base, names = _candidates(data, arm, baseline, candidate)
    if progress is not None and not callable(progress):
        raise CompareError(f"`progress` must be callable as progress(metric, done, total), got {progress!r}")
    used = recorded_seed(seed_sequence(seed, CompareError))
    comps: dict[str, Comparison] = {}
    with shared_draws():  # the candidates' paired tests (and the max-T) draw each metric's sign flips once
        for i, name in enumerate(names):
            tick = None if progress is None else _tick(progress, name, i, len(names))
            comps[name] = compare_one(data, arm=arm, baseline=base, candidate=name, seed=used, progress=tick, **options)
        first = comps[names[0]]
        alpha, n_resamples = first.settings.alpha, first.settings.n_resamples
        family = primary_family(data, comps, base, alpha, n_resamples, used)
    comps = {c: _adjusted(comp, family.p_adjusted[c], len(names), family.method) for c, comp in comps.items()}
    settings = MultiSettings(alpha, n_resamples, used, first.settings.primary, arm, base, tuple(names), family.method,
                             family.exact, family.n_patterns)
    return MultiComparison(base, comps, _summary(comps), family.pairs, family.words, family.best,
                           family.best_statement, settings, family.notes)


def _tick(progress: Callable[[str, int, int], None], name: str, i: int, k: int) -> Callable[[str, int, int], None]:
    """The two-arm comparison's progress as a share of all the candidates'."""
    def tick(metric: str, done: int, total: int) -> None:
        progress(f"{name}: {metric}", i * total + done, k * total)
    return tick


def _adjusted(comp: Comparison, p_adjusted: float, k: int, method: str) -> Comparison:
    """The two-arm comparison with its primary p-value adjusted across ``k`` candidates, and its verdict re-reached."""
    table = comp.table.copy()
    row = table.iloc[0]
    table.loc[0, "p_adjusted"] = p_adjusted
    table.loc[0, "assessment"] = assess("primary", p_adjusted, p_adjusted, row["effect"], row["ci_low"], row["ci_high"],
                                        row["direction"], comp.settings.alpha)
    how = Adjustment(p_adjusted, k, "Holm" if method == "holm" else "max-T")
    decision = decide(comp.table, comp.settings.primary, comp.decision.guardrails, comp.settings.alpha, how)
    if decision.verdict == comp.verdict == "inconclusive":  # the two-arm advice of a next experiment still holds
        plain = decide(comp.table, comp.settings.primary, comp.decision.guardrails, comp.settings.alpha)
        decision = dataclasses.replace(decision, reasons=(*decision.reasons, *comp.decision.reasons[len(plain.reasons):]))
    plan = comp.plan if decision.verdict == "inconclusive" else None
    return dataclasses.replace(comp, table=table, decision=decision, plan=plan)


def _summary(comps: Mapping[str, Comparison]) -> pd.DataFrame:
    """One row per candidate: verdict and the primary row."""
    rows = []
    for c, comp in comps.items():
        r = comp.table.iloc[0]
        rows.append({"candidate": c, "verdict": comp.verdict, "baseline": r["baseline"], "value": r["candidate"],
                     "effect": r["effect"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_value": r["p_value"],
                     "p_adjusted": r["p_adjusted"], "assessment": r["assessment"], "tasks": r["tasks"]})
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
