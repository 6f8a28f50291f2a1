"""Routing: every metric to the test its kind calls for, as rows of the comparison table.

Each metric draws from its own random stream, derived from the comparison's seed and the metric's name
(:func:`_rng`), so adding or removing a metric never changes another's result.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab import stats
from agentab._vocabulary import QUANTILE_KINDS
from agentab.comparison._dropped import metric_drops
from agentab.comparison._inputs import _arm_values, _CompareInput, _Metric
from agentab.comparison.decide import assess
from agentab.comparison.result import Dropped
from agentab.errors import CompareError
from agentab.stats.two_sample import magnitude_problem

#: Quantiles reported for cost and count metrics.
QUANTILES = (0.5, 0.95)


def _rng(root: np.random.SeedSequence, name: str) -> np.random.Generator:
    """A generator per metric: adding or removing metrics never changes another's result.

    The metric's key is appended to the root's own ``spawn_key``, so two children spawned from one
    sequence give different streams (an integer seed's sequence has an empty key: its streams are unchanged).
    """
    key = (*root.spawn_key, zlib.crc32(name.encode()))
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=key, pool_size=root.pool_size))


def _row(metric: _Metric, statistic: str, res: Any, role: str, *, j: int | None = None, name: str | None = None) -> dict:
    pick = (lambda v: float(np.asarray(v)[j])) if j is not None else (lambda v: float(v))
    kind = res.design_kind
    tasks = res.n_units[0] if kind == "paired" else sum(res.n_units) if kind == "clustered" else pd.NA
    return {
        "metric": name or metric.name,
        "kind": metric.kind,
        "statistic": statistic,
        "role": role,
        "method": res.method,
        "design": res.design,
        "n_baseline": res.n_runs[0],
        "n_candidate": res.n_runs[1],
        "tasks": tasks,
        "baseline": pick(res.estimates.baseline),
        "candidate": pick(res.estimates.candidate),
        "effect": pick(res.statistic),
        "ci_low": pick(res.confidence_interval.low),
        "ci_high": pick(res.confidence_interval.high),
        "ratio": pick(res.ratio) if j is not None else np.nan,
        "ratio_low": pick(res.ratio_interval.low) if j is not None else np.nan,
        "ratio_high": pick(res.ratio_interval.high) if j is not None else np.nan,
        "p_value": pick(res.pvalue),
        "direction": metric.direction,
        "warnings": "; ".join(
            dict.fromkeys(res.warnings if j is None else (*res.notes, *res.notes_by_q[j]))
        ),
    }


@dataclass(frozen=True)
class _Known:
    """What a metric's table rows say of its non-missing values in both arms."""

    tail_note: str  # the mean row's note (cost and count metrics; "" otherwise), see :func:`_tail_note`
    constant: bool  # one value throughout


def _tail_note(known: np.ndarray) -> str:
    """How much of a long-tailed metric's total its top 5% of runs carry (``known``: no missing values)."""
    known = np.sort(known)
    total = known.sum()
    if len(known) < 20 or total <= 0:
        return "descriptive only: the mean of a long-tailed metric is dragged by its tail"
    top = known[int(np.floor(0.95 * len(known))) :].sum() / total
    return f"descriptive only: the top 5% of runs carry {top:.0%} of the total, so the mean follows the tail"


def _compare_metric(inp: _CompareInput, metric: _Metric, quantiles: Sequence[float]
                    ) -> tuple[list[dict], dict, Any, list[Dropped]]:
    """One metric's table rows, its extra results by row name, its test's result and the runs it left out."""
    x, y = _arm_values(inp, metric.name, metric.kind)
    known = np.r_[x[~np.isnan(x)], y[~np.isnan(y)]]
    if metric.kind == "binary" and not np.isin(known, (0.0, 1.0)).all():
        other = known[~np.isin(known, (0.0, 1.0))]
        raise CompareError(
            f"metric {metric.name!r} is compared as binary but has {len(other)} value(s) other than 0/1 (or booleans), "
            f"e.g. {float(other[0]):g}: declare its kind (count, cost, ordinal or continuous)"
        )
    if metric.kind in QUANTILE_KINDS and (known < 0).any():
        raise CompareError(
            f"metric {metric.name!r} is compared as {metric.kind} but has {int((known < 0).sum())} negative value(s): "
            "declare it continuous"
        )
    problem = magnitude_problem(known)
    if problem is not None:
        message = f"metric {metric.name!r} has {problem}"
        if metric.requested or metric.name in (inp.primary_metric, *(g.metric for g in inp.guardrails)):
            raise CompareError(message)
        inp.notes.append(message + ": left out")
        return [], {}, None, []
    # What the rows need of the pooled values, taken now: the array (one float per run) is freed before the tests.
    # (No values at all: _route says so before it reads `constant`.)
    summary = _Known(_tail_note(known) if metric.kind in QUANTILE_KINDS else "",
                     bool(len(known) and known.min() == known.max()))
    del known
    try:
        rows, extra, res = _route(inp, metric, quantiles, x, y, summary)
    except ValueError as err:  # what the arrays cannot support (e.g. pass^k without seeds): named by metric
        raise CompareError(f"metric {metric.name!r} ({metric.kind}): {err}") from err
    return rows, extra, res, ([] if res is None else metric_drops(inp, metric.name, x, y, res.design_kind))


def _route(inp: _CompareInput, metric: _Metric, quantiles: Sequence[float], x: np.ndarray, y: np.ndarray,
           known: _Known) -> tuple[list[dict], dict, Any]:
    """The tests of one metric's kind, as table rows (``known``: what they say of the values, see :class:`_Known`)."""
    if np.isnan(x).all() or np.isnan(y).all():
        if np.isnan(x).all() and np.isnan(y).all():
            message = f"metric {metric.name!r} has no values in either arm"
        else:
            message = f"metric {metric.name!r} has no values in arm {inp.baseline if np.isnan(x).all() else inp.candidate!r}"
        if metric.requested or metric.name in (inp.primary, *(g.metric for g in inp.guardrails)):
            raise CompareError(message)
        inp.notes.append(message + " (not computed: e.g. a check the spec does not ask for): left out")
        return [], {}, None
    kw: dict[str, Any] = {"n_resamples": inp.n_resamples, "paired": inp.paired, "confidence_level": 1 - inp.alpha}
    if inp.cluster is not None:
        kw["x_strata"] = inp.base[inp.cluster].to_numpy()
        kw["y_strata"] = inp.cand[inp.cluster].to_numpy()
    role = "primary" if metric.name == inp.primary else "secondary"
    rows: list[dict] = []
    extra: dict[str, Any] = {}
    if metric.kind == "binary":
        res = stats.rate_difference(x, y, rng=_rng(inp.seed, metric.name), **kw)
        rows.append(_row(metric, "rate", res, role))
        if inp.cluster is not None and metric.direction != "lower":
            seeds = min(_fewest_seeds(inp.base, x, inp.cluster), _fewest_seeds(inp.cand, y, inp.cluster))
            if seeds >= 2:
                name = f"{metric.name} pass^{seeds}"
                pk = stats.pass_k_difference(x, y, k=seeds, rng=_rng(inp.seed, name), **kw)
                rows.append(_row(metric, f"pass^{seeds}", pk, "secondary", name=name))
                extra[name] = pk
    elif metric.kind == "ordinal":
        res = stats.ordinal_superiority(x, y, rng=_rng(inp.seed, metric.name), **kw)
        row = _row(metric, "Cliff's delta", res, role)
        row["baseline"] = row["candidate"] = np.nan  # Cliff's delta has no value per arm: the mean level is its own row
        rows.append(row)
        name = f"{metric.name} mean level"
        level = stats.mean_estimates(x, y, **{k: v for k, v in kw.items() if k in ("x_strata", "y_strata", "paired")})
        rows.append(_row(metric, "mean level", level, "descriptive", name=name))
        extra[name] = level
    elif metric.kind == "continuous":
        res = stats.mean_difference(x, y, rng=_rng(inp.seed, metric.name), **kw)
        rows.append(_row(metric, "mean", res, role))
    else:
        res = stats.quantile_difference(x, y, q=tuple(quantiles), rng=_rng(inp.seed, metric.name), **kw)
        for j, q in enumerate(quantiles):
            stat = f"p{100 * q:g}"
            name = f"{metric.name} {stat}"
            rows.append(_row(metric, stat, res, "primary" if name == inp.primary else "secondary", j=j, name=name))
        if any(g.row == f"{metric.name} mean" for g in inp.guardrails):  # a guardrail is judged on the interval
            mean = stats.mean_difference(x, y, rng=_rng(inp.seed, f"{metric.name} mean"), test=False, **kw)
        else:
            mean = stats.mean_estimates(x, y, **{k: v for k, v in kw.items() if k in ("x_strata", "y_strata", "paired")})
        row = _row(metric, "mean", mean, "descriptive", name=f"{metric.name} mean")
        row["warnings"] = "; ".join(w for w in (known.tail_note, row["warnings"]) if w)
        rows.append(row)
        extra[f"{metric.name} mean"] = mean
    constant = known.constant
    for row in rows:
        row["constant"] = constant
        if constant and row["role"] == "secondary":
            row["warnings"] = "; ".join(
                w for w in ("constant in both arms: cannot differ (left out of the Holm family)", row["warnings"]) if w
            )
    return rows, extra, res


def _runs_per_task(tasks: pd.Series) -> pd.Series:
    """Runs of every task present (categories without runs are not tasks)."""
    counts = tasks.value_counts()
    return counts[counts > 0]


def _fewest_seeds(frame: pd.DataFrame, values: np.ndarray, cluster: str) -> int:
    counts = _runs_per_task(frame.loc[~np.isnan(values), cluster])
    return int(counts.min()) if len(counts) else 0


def _assess(table: pd.DataFrame, alpha: float) -> list[str]:
    """Every row's assessment, by :func:`agentab.comparison.decide.assess` (the one rule)."""
    return [assess(r.role, r.p_value, r.p_adjusted, r.effect, r.ci_low, r.ci_high, r.direction, alpha)
            for r in table.itertuples(index=False)]


def _levels_table(name: str, res: Any, column: pd.Series) -> pd.DataFrame:
    levels = res.levels
    if isinstance(column.dtype, pd.CategoricalDtype) and column.cat.ordered:
        levels = column.cat.categories[levels.astype(int)]
    elif np.all(levels == np.round(levels)):
        levels = levels.astype(np.int64)
    return pd.DataFrame(
        {
            "metric": name,
            "level": levels,
            "baseline": res.shares.baseline,
            "candidate": res.shares.candidate,
            "shift": res.shift,
        }
    )
