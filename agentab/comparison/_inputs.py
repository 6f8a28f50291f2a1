"""The validated input of :func:`agentab.compare`: arms, metrics and their kinds, the primary, the design.

:func:`_compare_iv` checks every argument once (the shared ones through :mod:`agentab._checks`) and
returns a :class:`_CompareInput` that the routing (:mod:`agentab.comparison._routing`) reads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentab._checks import (
    MIN_DECISION_RESAMPLES,
    check_alpha,
    check_n_resamples,
    check_paired,
    seed_sequence,
)
from agentab._vocabulary import DEFAULT_DIRECTION, DIRECTIONS, KINDS, QUANTILE_KINDS
from agentab.comparison.decide import Guardrail, guardrail_metrics, parse_guardrails
from agentab.errors import CompareError
from agentab.scoring import infer_kind, metric_kinds
from agentab.traces import Traces, column_hint

#: Columns never taken as metrics when kinds are inferred.
_NOT_METRICS = {"run_id", "task_id", "seed", "arm", "model", "harness", "reasons", "metadata", "terminal_state"}


#: The warning of a comparison that found no task column (shown first, not in the notes at the end).
NO_TASKS = ("runs treated as independent: the data has no task column 'task_id', so runs of one task count as "
            "separate evidence (too confident if tasks differ in difficulty); name the task column: cluster= in "
            "Python, --cluster on the command line")


@dataclass(frozen=True)
class _Metric:
    name: str
    kind: str
    direction: str
    source: str  # "declared", "score" or "inferred"
    requested: bool = True  # named by the user (as a metric, the primary or a guardrail)


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
    seed: np.random.SeedSequence  # every metric's stream is derived from it
    notes: list[str]

    @property
    def design_warning(self) -> str:
        """What the header must say first about the design ("" when nothing)."""
        return NO_TASKS if NO_TASKS in self.notes else ""


def _resolve_arms(data: pd.DataFrame, arm: str, baseline: Any, candidate: Any) -> tuple[str, str]:
    if arm not in data.columns:
        raise CompareError(f"no arm column {arm!r} in the data (columns: {', '.join(map(str, data.columns))})")
    labels = data[arm]
    if labels.isna().any():
        raise CompareError(f"column {arm!r} has {int(labels.isna().sum())} rows without an arm")
    try:
        present = list(dict.fromkeys(str(a) for a in pd.unique(labels)))
    except TypeError:  # unhashable labels (lists, dicts)
        bad = next(v for v in labels if not pd.api.types.is_hashable(v))
        raise CompareError(f"column {arm!r} has an arm label that is not text or a number: {bad!r:.80} "
                           f"({type(bad).__name__})") from None
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
    return _default_roles(present, arm)


def _default_roles(present: list[str], arm: str) -> tuple[str, str]:
    """The roles of two arms when neither was given: only from their names, never from row order.

    An arm named "baseline" is the baseline; an arm named "candidate" makes the other one the baseline (the
    name states its role, and swapping rows or files cannot change it). Anything else is an error naming the arms.
    """
    lowered = [a.lower() for a in present]
    for role in ("baseline", "candidate"):
        if lowered.count(role) == 1:
            index = lowered.index(role) if role == "baseline" else 1 - lowered.index(role)
            return present[index], present[1 - index]
    listed = " and ".join(repr(a) for a in sorted(present))
    first = sorted(present)[0]
    raise CompareError(
        f"column {arm!r} has two arms, {listed}, and neither is named 'baseline' or 'candidate': say which is the "
        f"baseline, e.g. baseline={first!r} (or candidate=); the baseline is never taken from row order"
    )


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
    raise CompareError(f"primary metric {primary!r} is not a column of the data; {column_hint(data, primary)}")


def _resolve_cluster(data: pd.DataFrame, cluster: Any, paired: bool | str, notes: list[str]) -> Any:
    """The task column (None: runs are independent), its ids checked."""
    if cluster is not None and not pd.api.types.is_hashable(cluster):
        raise CompareError(f"`cluster` must name the task column (or be None), got {cluster!r}")
    if cluster is not None and cluster not in data.columns:
        if cluster != "task_id":
            raise CompareError(f"no cluster column {cluster!r} in the data")
        notes.append(NO_TASKS)
        cluster = None
    if cluster is None and paired is True:
        raise CompareError("paired=True needs a task column (cluster=); runs are never paired by row order")
    if cluster is not None:
        _check_task_ids(data[cluster], cluster, CompareError)
    return cluster


def _compare_iv(data, arm, baseline, candidate, metrics, primary, guardrails, cluster, paired, alpha, n_resamples, seed):
    if isinstance(data, Traces):  # any engine's: what is compared is the per-run score table
        raise CompareError("`data` must be a DataFrame with one row per run: score the traces first, "
                           "agentab.compare(agentab.score(traces, spec))")
    if not isinstance(data, pd.DataFrame):
        raise CompareError(f"`data` must be a DataFrame with one row per run (e.g. from agentab.score), got {type(data).__name__}")
    _unique_columns(data.columns, "data", CompareError)
    alpha = check_alpha(alpha, CompareError)
    n_resamples = check_n_resamples(n_resamples, CompareError, minimum=MIN_DECISION_RESAMPLES)
    paired = check_paired(paired, CompareError)
    notes: list[str] = []
    base_name, cand_name = _resolve_arms(data, arm, baseline, candidate)
    cluster = _resolve_cluster(data, cluster, paired, notes)
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
    if spec.kind in QUANTILE_KINDS and primary_q is None:
        raise CompareError(
            f"primary metric {primary!r} is a {spec.kind} metric: name a quantile, e.g. '{primary} p50' "
            "(its mean is descriptive only: the tail drags it)"
        )
    if spec.kind not in QUANTILE_KINDS and primary_q is not None:
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
        seed_sequence(seed, CompareError),
        notes,
    )


def _unique_columns(columns: pd.Index, what: str, error: type[Exception]) -> None:
    """Refuse repeated column names: ``frame[name]`` would be a table, not a column."""
    repeated = columns[columns.duplicated()].unique()
    if len(repeated):
        counts = ", ".join(f"{name!r} ({int((columns == name).sum())} times)" for name in repeated[:5])
        raise error(f"the {what} has repeated column names: {counts}; rename or drop them (each column is read by name)")


def _check_task_ids(tasks: pd.Series, column: str, error: type[Exception]) -> None:
    """Every run has a task id, text or a number, and no two of them read as the same task.

    The tests (:mod:`agentab.stats`) match tasks by their text, with integral numbers as integers (``3`` and
    ``3.0`` are one task); ids that are equal as text but not as values (``"3"`` and ``3``, ``True`` and ``1``)
    would be one task to the test and two to everything else, so they are refused.
    """
    if tasks.isna().any():
        raise error(f"column {column!r} has {int(tasks.isna().sum())} rows without a task")
    values = tasks.cat.categories if isinstance(tasks.dtype, pd.CategoricalDtype) else tasks
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "integer", "floating", "mixed-integer-float",
                                                         "boolean", "empty"):
        return  # one type of scalar (the common case, checked without a loop): read the same as values and text
    bad = next((v for v in values if isinstance(v, (list, dict, set, np.ndarray, pd.Series))
                or not pd.api.types.is_hashable(v)), None)
    if bad is not None:
        raise error(f"column {column!r} has a task id that is not text or a number: {bad!r:.80} "
                    f"({type(bad).__name__}); give each run one task id")
    if any(isinstance(v, (bool, np.bool_)) for v in values):  # True == 1 as a value, "True" != "1" as text
        raise error(f"column {column!r} mixes boolean task ids with other values; write every task id one way "
                    f"(e.g. data[{column!r}].astype(str))")
    from agentab.stats.two_sample import task_label

    seen: dict[str, Any] = {}
    for value in pd.unique(np.asarray(values, dtype=object)):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        label = task_label(value)
        if label in seen:
            raise error(
                f"column {column!r} holds task ids that are the same as text but differ in type: {seen[label]!r} "
                f"({type(seen[label]).__name__}) and {value!r} ({type(value).__name__}); write every task id one way "
                f"(e.g. data[{column!r}].astype(str))"
            )
        seen[label] = value


def _arm_values(inp: _CompareInput, column: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """One metric column as floats for the baseline and the candidate.

    The two arms are the halves of one array (baseline runs, then candidate runs), so a test that pools
    them (:func:`agentab.stats._inputs._two_sample_iv`) uses that array rather than a copy of both.
    """
    values = _values(inp.data, column, kind)
    n_base = int(inp.base_rows.sum())
    pooled = np.empty(n_base + int(inp.cand_rows.sum()))
    np.compress(inp.base_rows, values, out=pooled[:n_base])
    np.compress(inp.cand_rows, values, out=pooled[n_base:])
    del values  # the whole column's floats are not kept while the arms are
    return pooled[:n_base], pooled[n_base:]


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
    if pd.api.types.is_complex_dtype(series):
        raise CompareError(f"metric {column!r} holds complex numbers; give real numbers")
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=float, na_value=np.nan)  # one copy at most (none for float64)
    if series.dtype == object:
        missing = series.isna().to_numpy()
        try:
            numbers = pd.to_numeric(series.map(_real), errors="coerce")
        except (OverflowError, TypeError, ValueError) as exc:  # e.g. an integer of 400 digits
            raise CompareError(f"metric {column!r} has a value that is not a float64 number ({exc})") from None
        bad = numbers.isna().to_numpy() & ~missing
        if not bad.any():
            return numbers.to_numpy(dtype=float)
        first = series[bad].iloc[0]
        raise CompareError(f"metric {column!r} has {int(bad.sum())} non-numeric value(s), e.g. {first!r}")
    raise CompareError(f"metric {column!r} must be numeric or boolean, got dtype {series.dtype}")


def _real(value: Any) -> Any:
    """One value of an object column on its way to a float: booleans as 1/0, complex numbers as not numbers."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (complex, np.complexfloating)):
        return None if pd.isna(value) else "complex"  # coerced to NaN and reported below as non-numeric
    return value


def _min_effect_iv(min_effect: Any) -> None:
    if min_effect is None:
        return
    if isinstance(min_effect, bool) or not isinstance(min_effect, (int, float, np.integer, np.floating)):
        raise CompareError(f"min_effect must be a number on agentab.power.plan's scale, got {min_effect!r}")
    if not math.isfinite(min_effect) or min_effect == 0:
        raise CompareError(f"min_effect must be a finite, non-zero number, got {min_effect!r}")
