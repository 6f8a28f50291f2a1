"""Compare two arms metric by metric, each with the test its kind calls for.

:func:`compare` takes one row per run (the table from :func:`agentab.score`,
or any DataFrame with an arm column), routes every metric to the test for its
kind, respects the task as the unit of replication, adjusts secondary
p-values for multiplicity, checks guardrails and reaches one decision
(:mod:`agentab.decide`). The statistics live in :mod:`agentab.stats`.

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
import re
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab import stats
from agentab.comparison.result import Comparison
from agentab.comparison.decide import (
    Guardrail,
    check_guardrail,
    decide,
    guardrail_metrics,
    parse_guardrails,
)
from agentab.errors import CompareError, StatsWarning
from agentab._vocabulary import DEFAULT_DIRECTION, DIRECTIONS, KINDS
from agentab.scoring import infer_kind, metric_kinds

__all__ = ["compare", "Comparison", "DEFAULT_DIRECTION", "TABLE_COLUMNS"]

#: Quantiles reported for cost and count metrics.
QUANTILES = (0.5, 0.95)
#: Columns never taken as metrics when kinds are inferred.
_NOT_METRICS = {"run_id", "task_id", "seed", "arm", "model", "harness", "reasons", "metadata", "terminal_state"}
#: Columns of :attr:`Comparison.table`.
TABLE_COLUMNS = (
    "metric", "kind", "statistic", "role", "method", "design", "n_baseline", "n_candidate", "tasks",
    "baseline", "candidate", "effect", "ci_low", "ci_high", "ratio", "ratio_low", "ratio_high",
    "p_value", "p_adjusted", "direction", "assessment", "warnings",
)  # fmt: skip


@dataclass(frozen=True)
class _Metric:
    name: str
    kind: str
    direction: str
    source: str  # "declared", "score" or "inferred"
    requested: bool = True  # named by the user (as a metric, the primary or a guardrail)


# --------------------------------------------------------------------------- #
# Input validation
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _CompareInput:
    data: pd.DataFrame
    arm: str
    base_rows: np.ndarray  # bool per row of `data`
    cand_rows: np.ndarray
    base: pd.DataFrame  # the task, model and harness columns of each arm's runs
    cand: pd.DataFrame
    baseline: str
    candidate: str
    metrics: list[_Metric]
    primary: str  # the row: "outcome" or "tokens p95"
    primary_metric: str
    primary_q: float | None
    guardrails: list[Guardrail]
    cluster: str | None
    paired: bool | str
    alpha: float
    n_resamples: int
    seed: Any
    notes: list[str]


def _resolve_arms(data: pd.DataFrame, arm: str, baseline: Any, candidate: Any, notes: list[str]) -> tuple[str, str]:
    if arm not in data.columns:
        raise CompareError(f"no arm column {arm!r} in the data (columns: {', '.join(map(str, data.columns))})")
    labels = data[arm]
    if labels.isna().any():
        raise CompareError(f"column {arm!r} has {int(labels.isna().sum())} rows without an arm")
    present = list(dict.fromkeys(str(a) for a in pd.unique(labels)))
    for name, value in (("baseline", baseline), ("candidate", candidate)):
        if value is not None and str(value) not in present:
            raise CompareError(f"{name} arm {value!r} not in column {arm!r} (arms: {', '.join(present)})")
    if baseline is not None and candidate is not None:
        if str(baseline) == str(candidate):
            raise CompareError(f"baseline and candidate are the same arm {baseline!r}")
        return str(baseline), str(candidate)
    if len(present) < 2:
        raise CompareError(f"column {arm!r} has {len(present)} arm(s) ({', '.join(present) or 'none'}); a comparison needs two")
    if len(present) > 2 and (baseline is None or candidate is None):
        raise CompareError(f"column {arm!r} has {len(present)} arms ({', '.join(present)}); say which are baseline= and candidate=")
    if baseline is not None:
        return str(baseline), next(a for a in present if a != str(baseline))
    if candidate is not None:
        return next(a for a in present if a != str(candidate)), str(candidate)
    lowered = [a.lower() for a in present]
    if "baseline" in lowered:
        base = present[lowered.index("baseline")]
    elif "candidate" in lowered:
        base = present[1 - lowered.index("candidate")]
    else:
        base = present[0]
        notes.append(f"baseline arm taken to be {base!r} (first in the data); pass baseline= to choose")
    return base, next(a for a in present if a != base)


def _resolve_metrics(data: pd.DataFrame, metrics: Any, exclude: set[str], notes: list[str]) -> list[_Metric]:
    recorded = metric_kinds(data)
    out: list[_Metric] = []
    if metrics is None:
        inferred = []
        for name in data.columns:
            if name in exclude or name in _NOT_METRICS:
                continue
            if name in recorded.index:
                out.append(_Metric(str(name), recorded.loc[name, "kind"], recorded.loc[name, "direction"], "score", False))
                continue
            kind = infer_kind(data[name])
            if kind is not None:
                out.append(_Metric(str(name), kind, "neither", "inferred", False))
                inferred.append(f"{name}={kind}")
        if inferred:
            notes.append(
                "metric kinds inferred from values (direction unknown, so none of these is called better or worse): "
                + ", ".join(inferred)
                + "; pass metrics={column: (kind, 'higher'|'lower')} to declare them"
            )
        return out
    if isinstance(metrics, str) or not isinstance(metrics, (Mapping, Sequence)):
        raise CompareError(f"`metrics` must map column -> kind or list columns, got {metrics!r}")
    items = metrics.items() if isinstance(metrics, Mapping) else ((m, None) for m in metrics)
    for name, spec in items:
        if name not in data.columns:
            raise CompareError(f"metric {name!r} is not a column of the data")
        direction = None
        if spec is None:
            if name in recorded.index:
                out.append(_Metric(name, recorded.loc[name, "kind"], recorded.loc[name, "direction"], "score"))
                continue
            kind = infer_kind(data[name])
            if kind is None:
                raise CompareError(f"metric {name!r} is not numeric or boolean; give its kind")
            out.append(_Metric(name, kind, "neither", "inferred"))
            notes.append(f"kind of {name!r} inferred as {kind} (direction unknown)")
            continue
        if isinstance(spec, str):
            kind = spec
        elif isinstance(spec, Sequence) and len(spec) == 2:
            kind, direction = spec
        else:
            raise CompareError(f"metric {name!r}: give a kind or (kind, direction), got {spec!r}")
        if kind not in KINDS:
            raise CompareError(f"metric {name!r}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        if direction is not None and direction not in DIRECTIONS:
            raise CompareError(f"metric {name!r}: unknown direction {direction!r} (directions: {', '.join(DIRECTIONS)})")
        out.append(_Metric(name, kind, direction or DEFAULT_DIRECTION[kind], "declared"))
    return out


_QUANTILE_SUFFIX = re.compile(r"^(?P<metric>.+) p(?P<q>\d+(?:\.\d+)?)$")


def _split_primary(primary: str, data: pd.DataFrame) -> tuple[str, float | None]:
    """``"outcome"`` -> ("outcome", None); ``"tokens p95"`` -> ("tokens", 0.95); a column name wins."""
    if not isinstance(primary, str):
        raise CompareError(f"`primary` must name a metric column, got {primary!r}")
    if primary in data.columns:
        return primary, None
    match = _QUANTILE_SUFFIX.match(primary)
    if match and match["metric"] in data.columns:
        q = float(match["q"]) / 100
        if not 0 < q < 1:
            raise CompareError(f"primary {primary!r}: the quantile must lie between p0 and p100")
        return match["metric"], q
    if primary.endswith(" mean") and primary[: -len(" mean")] in data.columns:
        raise CompareError(f"primary {primary!r}: the mean of a cost or count metric is descriptive only; name p50 or p95")
    raise CompareError(f"primary metric {primary!r} is not a column of the data")


def _compare_iv(data, arm, baseline, candidate, metrics, primary, guardrails, cluster, paired, alpha, n_resamples, seed):
    if not isinstance(data, pd.DataFrame):
        raise CompareError(f"`data` must be a DataFrame with one row per run (e.g. from agentab.score), got {type(data).__name__}")
    if not 0 < alpha < 1:
        raise CompareError(f"`alpha` == {alpha!r}, must be between 0 and 1")
    if int(n_resamples) != n_resamples or n_resamples < 99:
        raise CompareError(f"`n_resamples` == {n_resamples!r}, must be an integer >= 99")
    if paired not in ("auto", True, False):
        raise CompareError(f"`paired` == {paired!r}, must be 'auto', True or False")
    notes: list[str] = []
    base_name, cand_name = _resolve_arms(data, arm, baseline, candidate, notes)
    if cluster is not None and cluster not in data.columns:
        if cluster != "task_id":
            raise CompareError(f"no cluster column {cluster!r} in the data")
        notes.append("no task_id column: runs are treated as independent (if tasks are in another column, name it: "
                     "cluster= in Python, --cluster on the command line)")
        cluster = None
    if cluster is None and paired is True:
        raise CompareError("paired=True needs a task column (cluster=); runs are never paired by row order")
    if cluster is not None and data[cluster].isna().any():
        raise CompareError(f"column {cluster!r} has {int(data[cluster].isna().sum())} rows without a task")
    exclude = {arm} | ({cluster} if cluster else set())
    resolved = _resolve_metrics(data, metrics, exclude, notes)
    kinds = {m.name: m.kind for m in resolved}
    # The primary metric and guardrail metrics are compared even when `metrics` leaves them out.
    primary_metric, primary_q = _split_primary(primary, data)
    needed = [primary_metric, *guardrail_metrics(guardrails)]
    for name in needed:
        if name in kinds:
            continue
        if name not in data.columns:
            role = "primary" if name == needed[0] else "guardrail"
            raise CompareError(f"{role} metric {name!r} is not a column of the data")
        more = _resolve_metrics(data, [name], exclude, notes)
        resolved += more
        kinds[name] = more[0].kind
    parsed = parse_guardrails(guardrails, kinds)
    spec = next(m for m in resolved if m.name == needed[0])
    if spec.direction == "neither":
        raise CompareError(
            f"primary metric {primary!r} has no direction; declare it, e.g. metrics={{{spec.name!r}: ({spec.kind!r}, 'higher')}}"
        )
    if spec.kind in ("cost", "count") and primary_q is None:
        raise CompareError(
            f"primary metric {primary!r} is a {spec.kind} metric: name a quantile, e.g. '{primary} p50' "
            "(its mean is descriptive only: the tail drags it)"
        )
    if spec.kind not in ("cost", "count") and primary_q is not None:
        raise CompareError(f"primary {primary!r}: quantiles apply to cost and count metrics; {spec.name!r} is {spec.kind}")
    primary = spec.name if primary_q is None else f"{spec.name} p{100 * primary_q:g}"
    # Arm labels compared through their (few) distinct values, never as one string per run.
    codes, uniques = pd.factorize(data[arm], sort=False)
    names = np.array([str(u) for u in uniques])
    base_rows = np.isin(codes, np.flatnonzero(names == base_name))
    cand_rows = np.isin(codes, np.flatnonzero(names == cand_name))
    other = len(data) - int(base_rows.sum()) - int(cand_rows.sum())
    if other:
        notes.append(f"{other} runs of other arms left out")
    # Only the task and description columns are copied per arm; metric columns are read one at a time.
    columns = [c for c in dict.fromkeys((cluster, "model", "harness")) if c is not None and c in data]
    return _CompareInput(
        data,
        arm,
        base_rows,
        cand_rows,
        data.loc[base_rows, columns],
        data.loc[cand_rows, columns],
        base_name,
        cand_name,
        resolved,
        primary,
        spec.name,
        primary_q,
        parsed,
        cluster,
        paired,
        float(alpha),
        int(n_resamples),
        _root_seed(seed),
        notes,
    )


# --------------------------------------------------------------------------- #
# Routing
# --------------------------------------------------------------------------- #
def _arm_values(inp: _CompareInput, column: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """One metric column as floats for the baseline and the candidate."""
    values = _values(inp.data, column, kind)
    return values[inp.base_rows], values[inp.cand_rows]


def _values(frame: pd.DataFrame, column: str, kind: str) -> np.ndarray:
    """A metric column as floats (NaN = missing), never coercing a value silently.

    Booleans read as 1/0; an ordered categorical (or one with numeric
    categories) as its category's position (ordinal) or value; object columns
    holding numbers, booleans and missing values are converted, anything else
    is an error naming the first offending value.
    """
    series = frame[column]
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = series.cat.categories
        if pd.api.types.is_numeric_dtype(categories) and not (kind == "ordinal" and series.cat.ordered):
            return series.astype(categories.dtype).astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        if kind == "ordinal" and series.cat.ordered:
            codes = series.cat.codes.to_numpy(dtype=float)
            return np.where(codes < 0, np.nan, codes)
        raise CompareError(
            f"metric {column!r} is categorical with unordered categories; make it an ordered categorical "
            "(ordinal) or numeric"
        )
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=float, na_value=np.nan)  # one copy at most (none for float64)
    if series.dtype == object:
        missing = series.isna().to_numpy()
        numbers = pd.to_numeric(series.map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v), errors="coerce")
        bad = numbers.isna().to_numpy() & ~missing
        if not bad.any():
            return numbers.to_numpy(dtype=float)
        first = series[bad].iloc[0]
        raise CompareError(f"metric {column!r} has {int(bad.sum())} non-numeric value(s), e.g. {first!r}")
    raise CompareError(f"metric {column!r} must be numeric or boolean, got dtype {series.dtype}")


def _root_seed(seed: Any) -> np.random.SeedSequence:
    """The seed of every metric's stream. A Generator is drawn from once (so it advances)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(2**63)))
    try:
        return np.random.SeedSequence(seed)
    except (TypeError, ValueError):
        raise CompareError(
            f"`seed` must be None, a non-negative integer, a numpy SeedSequence or Generator, got {seed!r}"
        ) from None


def _rng(root: np.random.SeedSequence, name: str) -> np.random.Generator:
    """A generator per metric: adding or removing metrics never changes another's result."""
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(zlib.crc32(name.encode()),)))


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


def _tail_note(known: np.ndarray) -> str:
    """How much of a long-tailed metric's total its top 5% of runs carry (``known``: no missing values)."""
    known = np.sort(known)
    total = known.sum()
    if len(known) < 20 or total <= 0:
        return "descriptive only: the mean of a long-tailed metric is dragged by its tail"
    top = known[int(np.floor(0.95 * len(known))) :].sum() / total
    return f"descriptive only: the top 5% of runs carry {top:.0%} of the total, so the mean follows the tail"


def _compare_metric(inp: _CompareInput, metric: _Metric, quantiles: Sequence[float]) -> tuple[list[dict], dict, Any]:
    x, y = _arm_values(inp, metric.name, metric.kind)
    known = np.r_[x[~np.isnan(x)], y[~np.isnan(y)]]
    if metric.kind == "binary" and not np.isin(known, (0.0, 1.0)).all():
        other = known[~np.isin(known, (0.0, 1.0))]
        raise CompareError(
            f"metric {metric.name!r} is compared as binary but has {len(other)} value(s) other than 0/1 (or booleans), "
            f"e.g. {float(other[0]):g}: declare its kind (count, cost, ordinal or continuous)"
        )
    if metric.kind in ("cost", "count") and (known < 0).any():
        raise CompareError(
            f"metric {metric.name!r} is compared as {metric.kind} but has {int((known < 0).sum())} negative value(s): "
            "declare it continuous"
        )
    try:
        return _route(inp, metric, quantiles, x, y, known)
    except ValueError as err:  # what the arrays cannot support (e.g. pass^k without seeds): named by metric
        raise CompareError(f"metric {metric.name!r} ({metric.kind}): {err}") from err


def _route(inp: _CompareInput, metric: _Metric, quantiles: Sequence[float], x: np.ndarray, y: np.ndarray,
           known: np.ndarray) -> tuple[list[dict], dict, Any]:
    """The tests of one metric's kind, as table rows."""
    if np.isnan(x).all() or np.isnan(y).all():
        arm = inp.baseline if np.isnan(x).all() else inp.candidate
        message = f"metric {metric.name!r} has no values in arm {arm!r}"
        if metric.requested or metric.name in (inp.primary, *(g.metric for g in inp.guardrails)):
            raise CompareError(message)
        inp.notes.append(message + ": left out")
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
        rows.append(_row(metric, "Cliff's delta", res, role))
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
        row["warnings"] = "; ".join(w for w in (_tail_note(known), row["warnings"]) if w)
        rows.append(row)
        extra[f"{metric.name} mean"] = mean
    constant = bool(known.min() == known.max())
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
    """better / worse / changed when the (Holm-adjusted) test is significant and the
    interval excludes no change on the same side; otherwise no evidence."""
    out = []
    for _, r in table.iterrows():
        p = r["p_value"] if r["role"] == "primary" else r["p_adjusted"]
        up = r["ci_low"] > 0 and r["effect"] > 0
        down = r["ci_high"] < 0 and r["effect"] < 0
        if r["role"] == "descriptive":
            out.append("descriptive")
        elif not np.isfinite(p) or p >= alpha or not (up or down):
            out.append("no evidence")
        elif r["direction"] == "neither":
            out.append("changed")
        else:
            out.append("better" if up == (r["direction"] == "higher") else "worse")
    return out


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


def _labels(frame: pd.DataFrame, column: str) -> str:
    if column not in frame:
        return "-"
    return ", ".join(map(str, pd.unique(frame[column].dropna()))) or "-"


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


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #
def _planning_advice(inp: _CompareInput, row: pd.Series, res: Any, min_effect: float | None) -> tuple[str | None, Any]:
    """How many tasks and seeds would settle an inconclusive primary metric: one reason line and the Plan.

    (None, None) when the primary metric is already significant (the verdict waits on a guardrail instead).
    """
    from agentab.errors import PowerError
    from agentab.power import plan
    from agentab.stats._power import log_odds_for_delta

    if pd.notna(row["p_value"]) and row["p_value"] < inp.alpha:
        return None, None
    kind = row["kind"]
    if kind not in ("binary", "ordinal", "continuous", "cost", "count"):
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
            effect = float(row["effect"]) / sd if sd > 0 else 0.0
        elif kind == "ordinal":
            shares = np.asarray(res.shares.baseline, dtype=float)
            effect = math.exp(log_odds_for_delta(shares, float(row["effect"]))) if len(shares) else math.nan
        else:
            effect = float(row["ratio"]) - 1.0
    if not np.isfinite(effect):
        return f"no sample-size advice: {what} is not a finite change on plan's scale (a quantile of 0, or a Cliff's delta of +-1); pass min_effect=", None
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


def _min_effect_iv(min_effect: Any) -> None:
    if min_effect is None:
        return
    if isinstance(min_effect, bool) or not isinstance(min_effect, (int, float, np.integer, np.floating)):
        raise CompareError(f"min_effect must be a number on agentab.power.plan's scale, got {min_effect!r}")
    if not math.isfinite(min_effect) or min_effect == 0:
        raise CompareError(f"min_effect must be a finite, non-zero number, got {min_effect!r}")


def compare(
    data: pd.DataFrame,
    *,
    arm: str = "arm",
    baseline: str | None = None,
    candidate: str | None = None,
    metrics: Mapping[str, Any] | Sequence[str] | None = None,
    primary: str = "outcome",
    guardrails: Mapping[str, Any] | Sequence[str] | None = None,
    cluster: str | None = "task_id",
    paired: bool | str = "auto",
    alpha: float = 0.05,
    n_resamples: int = 9999,
    seed: Any = None,
    min_effect: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Comparison:
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
        The arms to compare. With two arms and neither given, an arm named
        "baseline" is the baseline (else the other of an arm named
        "candidate", else the first arm in the data, with a note).
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
        ``{"tokens": "p95 <= +10%"}``; grammar in :mod:`agentab.decide`.
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
    seed : int, numpy.random.SeedSequence or None
        Seed of the resampling. Each metric draws from its own stream derived
        from the seed and its name, so adding a metric never changes another
        metric's result.
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

    Returns
    -------
    Comparison
        ``.decision.verdict`` and ``.decision.reasons``; ``.table`` (one row
        per statistic); ``.metric(name)`` for scipy-style results.

    Notes
    -----
    Effects are candidate minus baseline: differences of task-averaged rates
    and means (each task weighs the same, as in a benchmark score; with
    equal seeds per task this is the plain difference), Cliff's delta for
    ordinal metrics, differences and ratios of quantiles (inverse-ECDF
    quantiles with tasks weighted equally) for cost and count metrics.
    Secondary p-values are Holm-adjusted (Holm 1979, via statsmodels'
    ``multipletests``) over every secondary row; the primary is tested alone
    at ``alpha``. The decision rule is in :mod:`agentab.decide`. Adding seeds
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
      - primary metric: no significant difference at alpha = 0.05: outcome (rate): 52.2% -> 62.2% (+10.0%, 95% CI +0.0% to +20.0%), p = 0.108
      - guardrail tokens p95 <= +10%: unresolved (ratio 0.8822, CI 0.5215 to 1.18; bound 1.1)
      - a new experiment of about 97 tasks x 3 seed(s) (the same tasks in both arms) would detect the observed effect (+10.0 points of success rate) with 80% power (agentab.power.plan, or agentab plan, lists the options); adding tasks to this one and testing again inflates false positives
    >>> result.table[["metric", "statistic", "design"]].head(3)
               metric      statistic                     design
    0         outcome           rate  paired by task (30 tasks)
    1  outcome pass^3         pass^3  paired by task (30 tasks)
    2          rubric  Cliff's delta  paired by task (30 tasks)
    """
    inp = _compare_iv(data, arm, baseline, candidate, metrics, primary, guardrails, cluster, paired, alpha, n_resamples, seed)
    _min_effect_iv(min_effect)
    if progress is not None and not callable(progress):
        raise CompareError(f"`progress` must be callable as progress(metric, done, total), got {progress!r}")
    quantiles: dict[str, set[float]] = {}
    for g in inp.guardrails:
        if g.quantile is not None:
            quantiles.setdefault(g.metric, set()).add(g.quantile)
    if inp.primary_q is not None:
        quantiles.setdefault(inp.primary_metric, set()).add(inp.primary_q)
    rows: list[dict] = []
    results: dict[str, Any] = {}
    levels = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        for done, m in enumerate(inp.metrics, start=1):
            qs = sorted(set(QUANTILES) | quantiles.get(m.name, set()))
            metric_rows, extra, res = _compare_metric(inp, m, qs)
            if progress is not None:
                progress(m.name, done, len(inp.metrics))
            if res is None:
                continue
            rows += metric_rows
            results[m.name] = res
            results.update(extra)
            if m.kind == "ordinal":
                levels.append(_levels_table(m.name, res, inp.data[m.name]))
    table = pd.DataFrame(rows)
    table["role"] = np.where(table["metric"] == inp.primary, "primary", table["role"])
    table = pd.concat([table[table["role"] == "primary"], table[table["role"] != "primary"]], ignore_index=True)
    table["p_adjusted"] = table["p_value"]
    # Tarone (1990): a hypothesis whose smallest attainable p-value is 1 (the metric is constant in both arms)
    # cannot be rejected, and leaving it out of the Holm family costs no error control.
    family = (table["role"] == "secondary") & table["p_value"].notna() & ~table["constant"]
    if family.any():
        from statsmodels.stats.multitest import multipletests  # heavy: imported when first needed

        table.loc[family, "p_adjusted"] = multipletests(table.loc[family, "p_value"], alpha=inp.alpha, method="holm")[1]
    table["assessment"] = _assess(table, inp.alpha)
    table["tasks"] = table["tasks"].astype("Int64")
    table = table[list(TABLE_COLUMNS)]
    checks = [check_guardrail(g, table.loc[table["metric"] == g.row].iloc[0]) for g in inp.guardrails]
    decision = decide(table, inp.primary, checks, inp.alpha)
    primary_res = results[inp.primary_metric]
    next_plan = None
    if decision.verdict == "inconclusive":
        advice, next_plan = _planning_advice(inp, table.iloc[0], primary_res, min_effect)
        if advice is not None:
            decision = dataclasses.replace(decision, reasons=(*decision.reasons, advice))
    design = {
        "kind": primary_res.design_kind,
        "label": primary_res.design,
        "seeds": _seeds(inp),
        "dropped_tasks": primary_res.dropped_tasks,
        "dropped_runs": primary_res.dropped_runs,
    }
    kinds = pd.DataFrame(
        [(m.name, m.kind, m.direction, m.source) for m in inp.metrics], columns=["metric", "kind", "direction", "source"]
    ).set_index("metric")
    settings = {
        "alpha": inp.alpha,
        "n_resamples": inp.n_resamples,
        "seed": seed if seed is None or isinstance(seed, (int, np.integer)) else inp.seed.entropy,
        "cluster": inp.cluster,
        "paired": inp.paired,
        "primary": inp.primary,
        "arm": inp.arm,
    }
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
        tuple(inp.notes),
        results,
        _compared_runs(inp, design["kind"]),
        next_plan,
    )


def _compared_runs(inp: _CompareInput, design_kind: str) -> pd.DataFrame:
    """The runs of the two arms that were analysed: with a paired design, those of the tasks both arms ran."""
    runs = inp.data.loc[inp.base_rows | inp.cand_rows]
    if design_kind != "paired" or inp.cluster is None:
        return runs
    shared = pd.Index(pd.unique(inp.base[inp.cluster])).intersection(pd.Index(pd.unique(inp.cand[inp.cluster])))
    return runs[runs[inp.cluster].isin(shared)]
