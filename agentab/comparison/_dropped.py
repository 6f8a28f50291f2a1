"""What a comparison left out: runs with a missing value and tasks run by one arm only, counted and named.

:func:`metric_drops` finds them for one metric (from its values in each arm and the design its test used);
:func:`collapse` merges the entries that every metric shares, so a task missing from one arm is named once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from agentab.comparison.result import Dropped

#: How many ids of the left-out tasks (or runs) a :class:`Dropped` names.
MAX_IDS = 5


def _ids(values: Any) -> tuple[tuple[str, ...], int]:
    """The first few distinct ids (sorted as text, so row order never changes them) and how many there are."""
    distinct = sorted({str(v) for v in values})
    return tuple(distinct[:MAX_IDS]), len(distinct)


def _run_labels(inp: Any, rows: np.ndarray) -> np.ndarray:
    """What names a run without a task column: its ``run_id`` when the data has one, else its row label."""
    if "run_id" in inp.data:
        return inp.data["run_id"].to_numpy()[rows]
    return np.asarray(inp.data.index)[rows]


def _text(values: Any) -> np.ndarray:
    return pd.Series(values, dtype=object).astype(str).to_numpy()


def metric_drops(inp: Any, metric: str, x: np.ndarray, y: np.ndarray, design_kind: str) -> list[Dropped]:
    """Runs of ``metric`` left out of its test, per arm: missing values, then tasks of one arm only (paired).

    ``x`` and ``y`` are the metric's values in the baseline's and the candidate's runs (NaN: missing);
    ``design_kind`` is the design its test used.
    """
    out: list[Dropped] = []
    arms = ((inp.baseline, inp.base, inp.base_rows, x), (inp.candidate, inp.cand, inp.cand_rows, y))
    kept: list[tuple[np.ndarray, set[str]]] = []  # per arm: the task of every run with a value, and the set of them
    for arm, frame, rows, values in arms:
        missing = np.isnan(values)
        if inp.cluster is None:
            if missing.any():
                ids, count = _ids(_run_labels(inp, np.flatnonzero(rows)[missing]))
                out.append(Dropped("missing value", arm, int(missing.sum()), 0, ids, (metric,), count))
            continue
        tasks = _text(frame[inp.cluster].to_numpy())
        kept.append((tasks[~missing], set(tasks[~missing])))
        if missing.any():
            lost = set(tasks[missing]) - kept[-1][1]
            ids, count = _ids(lost) if lost else _ids(tasks[missing])
            out.append(Dropped("missing value", arm, int(missing.sum()), len(lost), ids, (metric,), count))
    if design_kind == "paired" and kept:
        for (arm, *_), (tasks, own), (_, other) in zip(arms, kept, kept[::-1]):
            alone = own - other
            if alone:
                ids, count = _ids(alone)
                runs = int(np.isin(tasks, list(alone)).sum())
                out.append(Dropped("task in one arm only", arm, runs, len(alone), ids, (metric,), count))
    return out


def collapse(drops: Sequence[Dropped], metrics: Sequence[str]) -> tuple[Dropped, ...]:
    """One entry per (reason, arm, runs, tasks, ids), listing its metrics; ``()`` when it is every metric's."""
    merged: dict[tuple, list[str]] = {}
    for d in drops:
        merged.setdefault((d.reason, d.arm, d.runs, d.tasks, d.ids, d.n_ids), []).extend(d.metrics)
    everything = set(metrics)
    out = []
    for (reason, arm, runs, tasks, ids, n_ids), names in merged.items():
        names = list(dict.fromkeys(names))
        out.append(Dropped(reason, arm, runs, tasks, ids, () if set(names) == everything and len(names) > 1 else
                           tuple(names), n_ids))
    return tuple(out)
