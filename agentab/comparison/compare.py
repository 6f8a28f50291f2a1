"""Compare two arms metric by metric, each with the test its kind calls for.

:func:`compare` takes one row per run (the table from :func:`agentab.score`,
or any DataFrame with an arm column), routes every metric to the test for its
kind, respects the task as the unit of replication, adjusts secondary
p-values for multiplicity, checks guardrails and reaches one decision
(:mod:`agentab.comparison.decide`). The statistics live in :mod:`agentab.stats`.

====================  =========================================================
kind                  what is reported
====================  =========================================================
binary                difference in (task-averaged) rate; pass^k with seeds
ordinal               Cliff's delta (probability of superiority), level shares
cost, count           p50 and p95: differences and ratios; the mean, labelled
continuous            difference in means
====================  =========================================================
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import recorded_seed
from agentab._vocabulary import DEFAULT_DIRECTION, KINDS
from agentab.comparison._dropped import collapse
from agentab.comparison._inputs import _compare_iv, _CompareInput, _min_effect_iv
from agentab.comparison._routing import (
    QUANTILES,
    _assess,
    _compare_metric,
    _fewest_seeds,
    _levels_table,
    _runs_per_task,
)
from agentab.comparison._slices_core import SlicedComparison, sliced
from agentab.comparison.decide import Decision, check_guardrail, decide, holm
from agentab.comparison.multi import MultiComparison, compare_many, is_many
from agentab.comparison.result import (
    Comparison,
    ComparisonDesign,
    ComparisonSettings,
    Dropped,
)
from agentab.errors import CompareError, StatsWarning
from agentab.traces import labels, load_results

__all__ = ["compare", "Comparison", "DEFAULT_DIRECTION", "TABLE_COLUMNS"]

#: Columns of :attr:`Comparison.table`.
TABLE_COLUMNS = (
    "metric", "kind", "statistic", "role", "method", "design", "n_baseline", "n_candidate", "tasks",
    "baseline", "candidate", "effect", "ci_low", "ci_high", "ratio", "ratio_low", "ratio_high",
    "p_value", "p_adjusted", "direction", "assessment", "warnings",
)  # fmt: skip


def _labels(frame: pd.DataFrame, column: str) -> str:
    return labels(frame[column]) if column in frame else "-"


def _arms_table(inp: _CompareInput) -> pd.DataFrame:
    rows = {}
    for name, frame in ((inp.baseline, inp.base), (inp.candidate, inp.cand)):
        rows[name] = {
            "model": _labels(frame, "model"),
            "harness": _labels(frame, "harness"),
            "runs": len(frame),
            "tasks": frame[inp.cluster].nunique() if inp.cluster else len(frame),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def _seeds(inp: _CompareInput) -> str:
    if inp.cluster is None:
        return "1 (no tasks)"
    counts = pd.concat([_runs_per_task(inp.base[inp.cluster]), _runs_per_task(inp.cand[inp.cluster])])
    low, high = int(counts.min()), int(counts.max())
    return f"{low}" if low == high else f"{low}-{high}"


def _planning_advice(inp: _CompareInput, row: pd.Series, res: Any, min_effect: float | None) -> tuple[str | None, Any]:
    """How many tasks and seeds would settle an inconclusive primary metric: one reason line and the Plan.

    (None, None) when the primary metric is already significant (the verdict waits on a guardrail instead).
    """
    from agentab.errors import PowerError
    from agentab.power import plan
    from agentab.stats.power import log_odds_for_delta

    if pd.notna(row["p_value"]) and row["p_value"] < inp.alpha:
        return None, None
    kind = row["kind"]
    if kind not in KINDS:
        return f"no sample-size advice for a {kind} primary metric", None
    if inp.cluster is None:
        return "no sample-size advice without a task column (the ICC cannot be measured)", None
    what = "the minimum effect of interest"
    effect = min_effect
    if effect is None:
        what = "the observed effect"
        if kind == "binary":
            effect = float(row["effect"])
        elif kind == "continuous":
            base = inp.data.loc[inp.base_rows, inp.primary_metric].astype(float)
            sd = float(base.std(ddof=1))
            if not sd > 0:  # also NaN (one run)
                return ("no sample-size advice: the baseline's runs of the primary metric "
                        f"{'do not vary' if base.notna().sum() > 1 else 'are fewer than two'}, so the observed effect "
                        "has no SD to be read as Cohen's d; pass min_effect="), None
            effect = float(row["effect"]) / sd
        elif kind == "ordinal":
            shares = np.asarray(res.shares.baseline, dtype=float)
            if np.count_nonzero(shares > 0) < 2:
                return ("no sample-size advice: every baseline run of the primary metric has the same level: "
                        "no variance to plan with"), None
            effect = math.exp(log_odds_for_delta(shares, float(row["effect"]))) if len(shares) else math.nan
        else:
            effect = float(row["ratio"]) - 1.0
    if not np.isfinite(effect):
        return (f"no sample-size advice: {what} is not a finite change on plan's scale (a quantile of 0, or a Cliff's delta "
                "no shift of the baseline's levels reaches, e.g. +-1); pass min_effect="), None
    if effect == 0 or (kind == "ordinal" and effect == 1):
        return f"no sample-size advice: {what} is zero; pass min_effect= to plan for the effect that matters", None
    seeds = max(1, _fewest_seeds(inp.data.loc[inp.base_rows], np.ones(int(inp.base_rows.sum())), inp.cluster))
    paired = res.design_kind == "paired"
    try:
        p = plan(
            inp.data.loc[inp.base_rows | inp.cand_rows], inp.primary_metric, effect, kind=kind, alpha=inp.alpha, power=0.8,
            design="paired" if paired else "independent", seeds_per_task=seeds, cluster=inp.cluster, arm=inp.arm,
            baseline=inp.baseline, quantile=inp.primary_q or 0.5,
        )
    except PowerError as exc:
        return f"no sample-size advice: {exc}", None
    scope = "(the same tasks in both arms)" if paired else "per arm"
    return (
        f"a new experiment of about {p.tasks:,} tasks x {seeds} seed(s) {scope} would detect {what} "
        f"({p.effect_text()}) with 80% power (agentab.power.plan, or agentab plan, lists the options); adding tasks to this one "
        "and testing again inflates false positives"
    ), p


def compare(
    data: pd.DataFrame,
    *,
    arm: str = "arm",
    baseline: str | None = None,
    candidate: str | Sequence[str] | None = None,
    metrics: Mapping[str, Any] | Sequence[str] | None = None,
    primary: str = "outcome",
    guardrails: Mapping[str, Any] | Sequence[str] | None = None,
    cluster: str | None = "task_id",
    paired: bool | str = "auto",
    alpha: float = 0.05,
    n_resamples: int = 9999,
    seed: Any = 0,
    min_effect: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    fields: Mapping[str, str] | None = None,
    where: str | Sequence[str] | None = None,
    by: str | None = None,
) -> Comparison | MultiComparison | SlicedComparison:
    """Compare a candidate arm with a baseline, metric by metric, and decide.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per run: the table from :func:`agentab.score`, or any
        DataFrame with an arm column, metric columns and (optionally) a task
        column.
    arm : str
        The column naming each run's arm.
    baseline, candidate : str, optional
        The arms to compare. With two arms, one of them is enough; with
        neither given, an arm named "baseline" is the baseline, or else the
        other of an arm named "candidate" (the names state the roles). Any
        other pair is a :class:`~agentab.errors.CompareError` naming both
        arms: the baseline is never taken from row order, which would let
        sorting the data flip the verdict. Several candidates: a list of
        arm names, or ``"all"`` (every arm but the baseline; unless an arm is
        named "all", which ``"all"`` then names), with ``baseline=`` given:
        the result is a :class:`~agentab.comparison.multi.MultiComparison`
        whose ``.candidates`` maps each candidate to its two-arm
        ``Comparison``, the primary metric adjusted across candidates
        (step-down max-T over shared task sign flips; Holm where that cannot
        apply) and every pair of arms in ``.pairs``
        (:mod:`agentab.comparison.multi`).
    metrics : mapping or list, optional
        Column -> kind (``"binary"``, ``"ordinal"``, ``"count"``, ``"cost"``,
        ``"continuous"``) or (kind, direction) with direction ``"higher"``,
        ``"lower"`` or ``"neither"``; a list of columns takes kinds as below.
        By default every metric :func:`agentab.score` recorded (kinds and
        directions from the table); for other tables, kinds are inferred
        from values (booleans or 0/1: binary; non-negative integers: count;
        other numbers: continuous), with direction "neither" and a note.
        Kinds given without a direction take the kind's default: higher is
        better for binary, ordinal and continuous, lower for cost and count.
    primary : str
        The metric that decides, tested at ``alpha``. A cost or count metric
        is named with its quantile (``"tokens p50"``).
    guardrails : mapping or list, optional
        Bounds a candidate must be shown to respect, e.g.
        ``{"tokens": "p95 <= +10%"}``; grammar in :mod:`agentab.comparison.decide`.
    cluster : str or None
        The task column. The task is the unit of replication: p-values
        permute whole tasks and intervals resample whole tasks. None (or no
        such column) treats runs as independent.
    paired : {"auto", True, False}
        "auto" analyses the arms as paired by task when at least half of all
        tasks (and at least two) were run by both; tasks run by one arm only
        are then dropped (counted in the warnings). False compares tasks as
        independent samples.
    alpha : float
        Significance level of the primary test and of the Holm-adjusted
        secondary tests; intervals have confidence ``1 - alpha``.
    n_resamples : int
        Permutations (when the exact distribution is larger) and bootstrap
        resamples per metric.
    seed : int, numpy.random.SeedSequence, numpy.random.Generator or None, default 0
        Seed of the resampling: by default 0, so two identical calls give
        identical numbers (as the ``agentab`` command, whose ``--seed`` is 0
        too). ``None`` draws fresh entropy; a Generator is drawn from once.
        The seed actually used is recorded in ``settings.seed`` (an integer),
        and passing it back reproduces the result exactly. Each metric draws
        from its own stream derived from the seed and its name, so adding a
        metric never changes another metric's result.
    min_effect : float, optional
        The smallest effect on the primary metric worth detecting, on
        :func:`agentab.power.plan`'s scale (binary: change of rate; ordinal:
        odds ratio; continuous: Cohen's d; cost/count: relative change of
        the quantile). When the verdict is inconclusive, the reasons say how
        many tasks and seeds would detect it with 80% power; without it, the
        observed effect is used.
    progress : callable, optional
        Called as ``progress(metric, done, total)`` after each metric's
        tests, for a progress bar (the ``agentab`` command draws one).
    fields : mapping, optional
        agentab's names -> the table's columns (``{"task_id": "instance_id",
        "outcome": "is_resolved"}``), as in :func:`agentab.load_results`
        and the CLI's ``--field NAME=KEY``; ``data`` may then also be a
        results table's path.
    where : str or list of str, optional
        Row filters in :meth:`pandas.DataFrame.query` syntax, applied in
        order (``"agent == 'Droid'"``), as the CLI's ``--where``.
    by : str, optional
        Slice by a task property (a runs column or a metadata key): the
        primary effect in each slice with its interval, Holm across slices,
        and a permutation test of whether the effect differs between slices;
        returns a SlicedComparison (see
        :func:`agentab.comparison.slices.compare_slices`). Not with several
        candidates.

    Returns
    -------
    Comparison or MultiComparison or SlicedComparison
        ``.decision.verdict`` and ``.decision.reasons``; ``.table`` (one row
        per statistic); ``.metric(name)`` for scipy-style results. With
        several candidates, a MultiComparison (``.candidates``, ``.table``,
        ``.pairs``, ``.best_statement``). With ``by``, a SlicedComparison
        (``.slices``, ``.interaction_pvalue``, ``.comparisons``, ``.overall``).

    Notes
    -----
    Effects are candidate minus baseline: differences of task-averaged rates
    and means (each task weighs the same, as in a benchmark score; with
    equal seeds per task this is the plain difference), Cliff's delta for
    ordinal metrics, differences and ratios of quantiles (inverse-ECDF
    quantiles with tasks weighted equally) for cost and count metrics.
    Secondary p-values are Holm-adjusted (Holm 1979, via statsmodels'
    ``multipletests``) over every secondary row; the primary is tested alone
    at ``alpha``. The decision rule is in :mod:`agentab.comparison.decide`. Adding seeds
    until a result turns significant (peeking) inflates false positives: fix
    the design first (:mod:`agentab.stats` has the tests).

    Examples
    --------
    >>> import agentab
    >>> traces = agentab.datasets.example_experiment(seed=0, n_tasks=30, n_seeds=3)
    >>> scores = agentab.score(traces, agentab.datasets.example_specs(n_tasks=30))
    >>> result = agentab.compare(scores, metrics=["outcome", "rubric", "tokens"],
    ...                          guardrails={"tokens": "p95 <= +10%"}, n_resamples=999, seed=0)
    >>> print(result.decision)
    verdict: inconclusive
      - primary metric: no significant difference at alpha = 0.05: outcome (rate): 52.2% -> 62.2% (+10.0%, 95% CI -0.0% to +20.5%), p = 0.096
      - guardrail tokens p95 <= +10%: unresolved (ratio 0.8822, CI 0.5215 to 1.18; bound 1.1)
      - a new experiment of about 97 tasks x 3 seed(s) (the same tasks in both arms) would detect the observed effect (+10.0 points of success rate) with 80% power (agentab.power.plan, or agentab plan, lists the options); adding tasks to this one and testing again inflates false positives
    >>> result.table[["metric", "statistic", "design"]].head(3)
               metric      statistic                     design
    0         outcome           rate  paired by task (30 tasks)
    1  outcome pass^3         pass^3  paired by task (30 tasks)
    2          rubric  Cliff's delta  paired by task (30 tasks)
    """
    if by is not None:
        if not isinstance(candidate, (str, type(None))) or candidate == "all":
            raise CompareError("`by` slices one comparison: give one candidate, not a list or 'all'")
        return sliced(data, by, run=compare, arm=arm, baseline=baseline, candidate=candidate, metrics=metrics,
                      primary=primary, guardrails=guardrails, cluster=cluster, paired=paired, alpha=alpha,
                      n_resamples=n_resamples, seed=seed, min_effect=min_effect, progress=progress, fields=fields,
                      where=where)
    if fields is not None or where is not None or isinstance(data, (str, os.PathLike)):
        data = load_results(data, fields=fields, where=where)
    if is_many(data, arm, candidate):
        return compare_many(
            compare, data, arm=arm, baseline=baseline, candidate=candidate, seed=seed, progress=progress,
            metrics=metrics, primary=primary, guardrails=guardrails, cluster=cluster, paired=paired, alpha=alpha,
            n_resamples=n_resamples, min_effect=min_effect,
        )
    inp = _compare_iv(data, arm, baseline, candidate, metrics, primary, guardrails, cluster, paired, alpha, n_resamples, seed)
    _min_effect_iv(min_effect)
    if progress is not None and not callable(progress):
        raise CompareError(f"`progress` must be callable as progress(metric, done, total), got {progress!r}")
    rows, results, levels, drops = _test_metrics(inp, progress)
    table, family = _table(rows, inp)
    decision, next_plan = _decision(inp, table, results[inp.primary_metric], min_effect)
    dropped = collapse(drops, [m.name for m in inp.metrics if m.name in results])
    return _result(inp, table, decision, results, levels, dropped, family, next_plan)


def _result(inp: _CompareInput, table: pd.DataFrame, decision: Decision, results: dict[str, Any],
            levels: list[pd.DataFrame], dropped: tuple[Dropped, ...], family: tuple[str, ...], next_plan: Any
            ) -> Comparison:
    """The :class:`Comparison` of the tested metrics."""
    primary_res = results[inp.primary_metric]
    design = ComparisonDesign(primary_res.design_kind, primary_res.design, _seeds(inp), primary_res.dropped_tasks,
                              primary_res.dropped_runs, inp.design_warning)
    kinds = pd.DataFrame(
        [(m.name, m.kind, m.direction, m.source) for m in inp.metrics], columns=["metric", "kind", "direction", "source"]
    ).set_index("metric")
    settings = ComparisonSettings(inp.alpha, inp.n_resamples, recorded_seed(inp.seed), inp.cluster, inp.paired,
                                  inp.primary, inp.arm)
    return Comparison(
        table,
        decision,
        inp.baseline,
        inp.candidate,
        _arms_table(inp),
        design,
        kinds,
        pd.concat(levels, ignore_index=True) if levels else pd.DataFrame(columns=["metric", "level", "baseline", "candidate", "shift"]),
        settings,
        tuple(n for n in inp.notes if n != inp.design_warning),
        results,
        _compared_runs(inp, design.kind),
        next_plan,
        dropped,
        family,
    )


def _test_metrics(inp: _CompareInput, progress: Callable[[str, int, int], None] | None
                  ) -> tuple[list[dict], dict[str, Any], list[pd.DataFrame], list[Dropped]]:
    """Every metric's tests: the table rows, the scipy-style results by name, the ordinal level tables, the runs
    left out."""
    quantiles: dict[str, set[float]] = {}
    for g in inp.guardrails:
        if g.quantile is not None:
            quantiles.setdefault(g.metric, set()).add(g.quantile)
    if inp.primary_q is not None:
        quantiles.setdefault(inp.primary_metric, set()).add(inp.primary_q)
    rows: list[dict] = []
    results: dict[str, Any] = {}
    levels = []
    drops: list[Dropped] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        for done, m in enumerate(inp.metrics, start=1):
            qs = sorted(set(QUANTILES) | quantiles.get(m.name, set()))
            metric_rows, extra, res, dropped = _compare_metric(inp, m, qs)
            if progress is not None:
                progress(m.name, done, len(inp.metrics))
            if res is None:
                continue
            rows += metric_rows
            drops += dropped
            results[m.name] = res
            results.update(extra)
            if m.kind == "ordinal":
                levels.append(_levels_table(m.name, res, inp.data[m.name]))
    return rows, results, levels, drops


def _table(rows: list[dict], inp: _CompareInput) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The comparison table: primary first, secondary p-values Holm-adjusted, every row assessed."""
    table = pd.DataFrame(rows)
    table["role"] = np.where(table["metric"] == inp.primary, "primary", table["role"])
    table = pd.concat([table[table["role"] == "primary"], table[table["role"] != "primary"]], ignore_index=True)
    table["p_adjusted"] = table["p_value"]
    # Tarone (1990): a hypothesis whose smallest attainable p-value is 1 (the metric is constant in both arms)
    # cannot be rejected, and leaving it out of the Holm family costs no error control.
    family = (table["role"] == "secondary") & table["p_value"].notna() & ~table["constant"]
    if family.any():
        table.loc[family, "p_adjusted"] = holm(table.loc[family, "p_value"])
    table["assessment"] = _assess(table, inp.alpha)
    table["tasks"] = table["tasks"].astype("Int64")
    return table[list(TABLE_COLUMNS)], tuple(table.loc[family, "metric"])


def _decision(inp: _CompareInput, table: pd.DataFrame, primary_res: Any, min_effect: float | None
              ) -> tuple[Decision, Any]:
    """The verdict with its guardrails, and the plan of a next experiment when it is inconclusive."""
    checks = [check_guardrail(g, table.loc[table["metric"] == g.row].iloc[0]) for g in inp.guardrails]
    decision = decide(table, inp.primary, checks, inp.alpha)
    next_plan = None
    if decision.verdict == "inconclusive":
        advice, next_plan = _planning_advice(inp, table.iloc[0], primary_res, min_effect)
        if advice is not None:
            decision = dataclasses.replace(decision, reasons=(*decision.reasons, advice))
    return decision, next_plan


def _compared_runs(inp: _CompareInput, design_kind: str) -> pd.DataFrame:
    """The runs of the two arms that were analysed: with a paired design, those of the tasks both arms ran."""
    runs = inp.data.loc[inp.base_rows | inp.cand_rows]
    if design_kind != "paired" or inp.cluster is None:
        return runs
    shared = pd.Index(pd.unique(inp.base[inp.cluster])).intersection(pd.Index(pd.unique(inp.cand[inp.cluster])))
    return runs[runs[inp.cluster].isin(shared)]
