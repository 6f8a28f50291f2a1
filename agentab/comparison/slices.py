"""The effect in each slice of the tasks, a test of whether it differs between slices, and Holm across slices.

:func:`compare_slices` splits the runs by a column (or a metadata key), calls :func:`agentab.compare`
on each slice's rows with the same arguments, so every slice's effect, interval and p-value are
exactly what ``compare`` gives on that slice alone, and adds what only the slices together can say:

- **multiplicity**: the slices' primary p-values are Holm-adjusted together (``p_adjusted``; Holm 1979,
  via statsmodels' ``multipletests``), so "it helps in slice X" is claimed at the family-wise level;
- **interaction**: whether the effect differs between slices, by permutation of the slices across whole
  tasks (:mod:`agentab.stats.interaction`), for every primary metric kind (Cochran's Q of rates, means and
  Cliff's deltas; the between-slice sum of squares of quantile differences);
- **small slices**: a slice with fewer than ``min_tasks`` tasks (default :data:`MIN_SLICE_TASKS`) gets its
  row with a missing effect and p-value and a note, never a confident number, and is left out of the
  Holm family and of the interaction test.

Tasks must nest in slices: the task is the unit of replication, so a task whose runs fall in two
slices is an error naming it (slice by a property of the task, not of the run).
"""

from __future__ import annotations

from typing import Any

from agentab.comparison._slices_core import (
    INTERACTION_KINDS,
    MIN_SLICE_TASKS,
    NO_SLICE,
    SLICE_COLUMNS,
    SlicedComparison,
    SliceSettings,
    sliced,
)
from agentab.comparison.compare import compare

__all__ = ["compare_slices", "SlicedComparison", "SliceSettings", "SLICE_COLUMNS", "MIN_SLICE_TASKS", "NO_SLICE",
           "INTERACTION_KINDS"]


def compare_slices(data: Any, by: str, *, traces: Any = None, min_tasks: int = MIN_SLICE_TASKS,
                   **compare_kwargs: Any) -> SlicedComparison:
    """Compare two arms in each slice of the tasks, test whether the effect differs between slices.

    Parameters
    ----------
    data : pandas.DataFrame or path
        As :func:`agentab.compare`'s (``fields=`` and ``where=`` are applied first, once).
    by : str
        A column of ``data`` (e.g. ``"task_type"``); else a key of its ``metadata`` column (a runs table),
        else of ``traces``' run metadata, matched by ``run_id``. Runs without a value form the slice
        ``"(none)"``. Every task must have one value: a task in two slices is a
        :class:`~agentab.errors.CompareError` naming it.
    traces : agentab.Traces, optional
        The traces ``data`` was scored from, to slice by a metadata key the scores do not carry.
    min_tasks : int
        Slices with fewer tasks (tasks both arms ran in a paired design, else the fewer of the two arms')
        are not compared: their row has missing numbers and a note. Default :data:`MIN_SLICE_TASKS`.
    **compare_kwargs
        Exactly :func:`agentab.compare`'s (arm, baseline, candidate, metrics, primary, cluster, paired,
        alpha, n_resamples, seed, ...), used for the unsliced comparison and for every slice (with the
        arms the unsliced one resolved and the seed it recorded).

    Returns
    -------
    SlicedComparison
        ``.slices`` (slice, effect, ci_low, ci_high, p_value, p_adjusted, n_tasks, ...),
        ``.interaction_pvalue``, ``.comparisons`` (slice -> Comparison), ``.overall``.

    Notes
    -----
    Each slice's row is the primary row of ``agentab.compare(rows of the slice, **compare_kwargs)``.
    ``p_adjusted`` is Holm's adjustment (Holm 1979) of the slices' primary p-values, over the slices that
    were compared: "the effect is nonzero in slice X" holds at family-wise level alpha across slices. The
    interaction test permutes slice labels across whole tasks with Cochran's Q, studentized, as its
    statistic (for quantiles the slices' task-weighted sum of squares) (:mod:`agentab.stats.interaction` says why this keeps
    the common effect and when it is exact); its size and power are measured in
    ``benchmarks/validate_slices.py``. Slices found by looking at the data and then tested are not
    protected by either: choose ``by`` before looking.

    Examples
    --------
    >>> import agentab
    >>> from agentab.comparison.slices import compare_slices
    >>> scores = agentab.score(agentab.datasets.example_experiment(seed=0, n_tasks=24, n_seeds=2))
    >>> scores["half"] = ["first" if int(t[1:]) < 12 else "second" for t in scores["task_id"]]
    >>> result = compare_slices(scores, "half", metrics=["outcome"], n_resamples=199, seed=0)
    >>> result.slices.columns[:7].tolist()
    ['slice', 'effect', 'ci_low', 'ci_high', 'p_value', 'p_adjusted', 'n_tasks']
    >>> result.slices["slice"].tolist(), 0 <= result.interaction_pvalue <= 1
    (['first', 'second'], True)
    """
    return sliced(data, by, run=compare, traces=traces, min_tasks=min_tasks, **compare_kwargs)
