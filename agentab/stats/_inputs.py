"""Validated inputs of the two-sample functions, and what every result records about them.

:func:`_two_sample_iv` checks and normalises the arguments shared by every function of
:mod:`agentab.stats.two_sample` once (samples, task ids, design, alternative, level, resamples, seed)
and builds the resampling design; :func:`_result_fields` turns the validated input and a resampling into
the typed fields every :class:`~agentab.stats.TwoSampleResult` carries.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentab._checks import (
    check_alternative,
    check_confidence_level,
    check_n_resamples,
    check_paired,
    recorded_seed,
    seed_sequence,
)
from agentab.errors import StatsWarning
from agentab.stats._design import Design, count_design, make_design

__all__ = ["MAX_MAGNITUDE", "magnitude_problem", "_Input", "_two_sample_iv", "_result_fields", "_permutation_words", "_bootstrap_words", "_scale", "_emit"]


#: Largest magnitude a value may have. The tests compute in float64 (largest 1.8e308): sums over runs,
#: differences of arms, the squares of variances and the cubes of the BCa acceleration need the headroom
#: (cubes overflow near 5.6e102). No measured metric comes near it; a value beyond is a sentinel or a unit bug.
MAX_MAGNITUDE = 1e100


def magnitude_problem(values: np.ndarray) -> str | None:
    """Why finite ``values`` are too large for float64 statistics (one line), or None."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return None
    largest = float(np.max(np.abs(finite)))
    if largest <= MAX_MAGNITUDE:
        return None
    count = int(np.sum(np.abs(finite) > MAX_MAGNITUDE))
    return (
        f"{count} value(s) beyond +-{MAX_MAGNITUDE:g} (largest magnitude {largest:.3g}): sums and differences of such "
        "values overflow float64 (a sentinel or a unit error?); mark them missing (NaN) or rescale the column"
    )


@dataclass(frozen=True)
class _Input:
    """Validated arguments shared by every two-sample function."""

    values: np.ndarray  # baseline runs then candidate runs, missing values removed
    design: Design
    alternative: str
    confidence_level: float
    n_resamples: int
    rng: np.random.Generator
    seed: int | None  # recorded in the result: None when a Generator was given
    excluded: tuple[int, int]
    notes: list[str]


def _as_values(sample: Any, name: str) -> np.ndarray:
    try:
        values = np.asarray(sample, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be numeric (numbers or booleans): {exc}") from None
    if values.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional, got shape {values.shape}")
    if np.isinf(values).any():
        raise ValueError(f"`{name}` contains infinite values; remove or cap them first")
    problem = magnitude_problem(values)
    if problem is not None:
        raise ValueError(f"`{name}` has {problem}")
    return values


def _as_strata(strata: Any, n: int, name: str) -> np.ndarray:
    labels = np.asarray(strata)
    if labels.dtype.kind not in "iufUS":  # anything but plain numbers and text: look at every id
        labels = labels.astype(object)
    if labels.ndim != 1 or len(labels) != n:
        raise ValueError(f"`{name}` must give one task per run: {n} runs, got shape {labels.shape}")
    if labels.dtype.kind == "f":
        missing = np.isnan(labels)
    elif labels.dtype == object:
        missing = np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in labels], dtype=bool)
        bad = next((i for i, v in enumerate(labels) if not _scalar_id(v)), None)
        if bad is not None:
            raise ValueError(
                f"`{name}` has a task id that is not text or a number at position {bad}: {labels[bad]!r:.80} "
                f"({type(labels[bad]).__name__})"
            )
    else:
        missing = np.zeros(len(labels), dtype=bool)
    if missing.any():
        raise ValueError(f"`{name}` has {int(missing.sum())} missing task id(s), first at position {int(np.argmax(missing))}")
    return labels


def _scalar_id(value: object) -> bool:
    """A task id is a hashable scalar (text, a number, ...), never a list, a dict or an array."""
    if isinstance(value, (list, dict, set, np.ndarray)):
        return False
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _generator(rng: Any) -> tuple[np.random.Generator, int | np.random.SeedSequence | None]:
    """The generator a function draws from and the seed its result records.

    A Generator is used as it is (its state cannot be recorded); anything else goes through
    :func:`agentab._checks.seed_sequence`, so an integer draws exactly as ``numpy.random.default_rng(seed)``
    and ``None`` draws fresh entropy, recorded so that passing it back reproduces the result.
    """
    if isinstance(rng, np.random.Generator):
        return rng, None
    sequence = seed_sequence(rng)
    return np.random.default_rng(sequence), recorded_seed(sequence)


def _two_sample_iv(
    x: Any,
    y: Any,
    x_strata: Any,
    y_strata: Any,
    paired: bool | str,
    alternative: str,
    confidence_level: float,
    n_resamples: int,
    rng: Any,
) -> _Input:
    xv = _as_values(x, "x")
    yv = _as_values(y, "y")
    if (x_strata is None) != (y_strata is None):
        raise ValueError("give task ids for both samples (`x_strata` and `y_strata`) or for neither")
    if x_strata is not None:
        xs = _as_strata(x_strata, len(xv), "x_strata")
        ys = _as_strata(y_strata, len(yv), "y_strata")
    paired = check_paired(paired)
    if paired is True and x_strata is None:
        raise ValueError("a paired design needs the task of every run (`x_strata`, `y_strata`); runs are never paired by position")
    alternative = check_alternative(alternative)
    confidence_level = check_confidence_level(confidence_level)
    n_resamples = check_n_resamples(n_resamples)
    generator, seed = _generator(rng)
    notes: list[str] = []
    keep_x = ~np.isnan(xv)
    keep_y = ~np.isnan(yv)
    excluded = (int((~keep_x).sum()), int((~keep_y).sum()))
    if sum(excluded):
        notes.append(f"missing values excluded: {excluded[0]} baseline, {excluded[1]} candidate")
    xv = xv if keep_x.all() else xv[keep_x]
    yv = yv if keep_y.all() else yv[keep_y]
    for name, v in (("x (baseline)", xv), ("y (candidate)", yv)):
        if len(v) == 0:
            raise ValueError(f"`{name}` has no values" + (" after excluding missing ones" if sum(excluded) else ""))
    if x_strata is not None:
        design, kb, kc = make_design(len(xv), len(yv), xs if keep_x.all() else xs[keep_x],
                                     ys if keep_y.all() else ys[keep_y], paired)  # no copy of every task id
        if design.kind == "paired" and (design.n_runs[0] == 0 or len(design.base_cells) == 0):
            raise ValueError("a paired design needs tasks run by both arms; these samples share none")
        xv = xv if kb.all() else xv[kb]  # no copy when the design keeps every run
        yv = yv if kc.all() else yv[kc]
        if sum(design.dropped_units):
            notes.append(
                f"tasks run by one arm only dropped from the paired comparison: {design.dropped_units[0]} baseline "
                f"({design.dropped_runs[0]} runs), {design.dropped_units[1]} candidate ({design.dropped_runs[1]} runs)"
            )
    else:
        design = count_design(np.concatenate([xv, yv]), len(xv), len(yv))
        if design is None:
            design, _, _ = make_design(len(xv), len(yv), None, None, paired)
    if min(design.n_units) < 2:
        notes.append(
            f"only {min(design.n_units)} {'task' if design.kind != 'independent' else 'run'} in an arm: "
            "there is no variation to test against and no interval worth the name"
        )
    count = design.n_permutations(limit=10**6)
    if count is not None:
        smallest = (2.0 if alternative == "two-sided" else 1.0) / count
        if smallest > 1 - confidence_level:
            notes.append(
                f"with {design.label} the smallest attainable p-value is {min(smallest, 1.0):.3g}: "
                "no difference can be significant at this level; add tasks"
            )
    return _Input(
        _joined(xv, yv),
        design,
        alternative,
        float(confidence_level),
        int(n_resamples),
        generator,
        seed,
        excluded,
        notes,
    )


def _joined(xv: np.ndarray, yv: np.ndarray) -> np.ndarray:
    """``np.concatenate([xv, yv])``, or the array of which they are adjacent halves (no copy of every run).

    The caller's arms are often two slices of one pooled array (:func:`agentab.comparison._inputs._arm_values`):
    the same floats in the same order, so every statistic is the same; the tests only read the values.
    """
    base = xv.base
    if (base is not None and yv.base is base and isinstance(base, np.ndarray) and base.ndim == 1
            and base.dtype == np.float64 and xv.dtype == np.float64 and yv.dtype == np.float64
            and base.flags.c_contiguous and xv.flags.c_contiguous and yv.flags.c_contiguous):
        start = base.__array_interface__["data"][0]
        x_at, y_at = xv.__array_interface__["data"][0], yv.__array_interface__["data"][0]
        offset, rest = divmod(x_at - start, base.itemsize)
        if rest == 0 and y_at == x_at + xv.nbytes and 0 <= offset and offset + len(xv) + len(yv) <= len(base):
            return base[offset : offset + len(xv) + len(yv)]
    return np.concatenate([xv, yv])


def _result_fields(data: _Input, res: Any, ci_method: str | None, n_permutations: float | None = None) -> dict[str, Any]:
    """The typed fields of a result that record its input, design and resampling."""
    d = data.design
    if n_permutations is None:
        n_permutations = len(res.null) if res is not None and res.null is not None else 0
    return {
        "design_kind": d.kind,
        "n_runs": d.n_runs,
        "n_units": d.n_units,
        "excluded": data.excluded,
        "dropped_tasks": d.dropped_units,
        "dropped_runs": d.dropped_runs,
        "exact": None if res is None else res.exact,
        "n_resamples": data.n_resamples,
        "n_permutations": n_permutations,
        "ci_method": ci_method,
        "confidence_level": data.confidence_level,
        "alternative": data.alternative,
        "seed": data.seed,
        "notes": tuple(data.notes),
    }


def _permutation_words(design: Design, exact: bool, n_resamples: int) -> str:
    what = {
        "paired": "sign flips of per-task differences",
        "clustered": "whole tasks reassigned between arms",
        "independent": "runs permuted between arms",
    }[design.kind]
    how = f"exact, all {design.n_permutations(limit=n_resamples)}" if exact else f"Monte Carlo, {n_resamples} resamples"
    return f"permutation test ({what}; {how})"


def _bootstrap_words(design: Design, ci_method: str) -> str:
    unit = {"paired": "tasks (both arms)", "clustered": "tasks within arm", "independent": "runs within arm"}[design.kind]
    return f"{ci_method} bootstrap over {unit}"


def _scale(values: np.ndarray) -> float:
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if len(finite) else 1.0


def _emit(notes: list[str], what: str) -> tuple[str, ...]:
    for note in notes:
        warnings.warn(f"{what}: {note}", StatsWarning, stacklevel=4)
    return tuple(notes)
