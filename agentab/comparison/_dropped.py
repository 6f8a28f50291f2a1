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


def _task_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run's index into its arm's distinct task ids, and those ids as text (:func:`_text`).

    Integer, boolean and float ids are told apart by their bits (distinct bits give distinct text, ``-0.0``
    included), so only the distinct ids become text, not one string per run; other ids are read as text first.
    """
    if values.dtype.kind in "iubf":
        bits = values.view(f"u{values.dtype.itemsize}") if values.dtype.kind == "f" else values
        codes, distinct = pd.factorize(bits, sort=False)
        return codes, _text(np.asarray(distinct, dtype=bits.dtype).view(values.dtype))
    codes, distinct = pd.factorize(_text(values), sort=False)
    return codes, np.asarray(distinct, dtype=object)


def _texts(text: np.ndarray, codes: np.ndarray) -> set[str]:
    """The distinct texts of the runs with these codes."""
    return set(text[np.unique(codes)])


def metric_drops(inp: Any, metric: str, x: np.ndarray, y: np.ndarray, design_kind: str) -> list[Dropped]:
    """Runs of ``metric`` left out of its test, per arm: missing values, then tasks of one arm only (paired).

    ``x`` and ``y`` are the metric's values in the baseline's and the candidate's runs (NaN: missing);
    ``design_kind`` is the design its test used.
    """
    out: list[Dropped] = []
    arms = ((inp.baseline, inp.base, inp.base_rows, x), (inp.candidate, inp.cand, inp.cand_rows, y))
    # Per arm: the task code of every run with a value, the text of each code, and the tasks with a value.
    kept: list[tuple[np.ndarray, np.ndarray, set[str]]] = []
    for arm, frame, rows, values in arms:
        missing = np.isnan(values)
        if inp.cluster is None:
            if missing.any():
                ids, count = _ids(_run_labels(inp, np.flatnonzero(rows)[missing]))
                out.append(Dropped("missing value", arm, int(missing.sum()), 0, ids, (metric,), count))
            continue
        codes, text = _task_codes(np.asarray(frame[inp.cluster].to_numpy()))
        kept.append((codes[~missing], text, _texts(text, codes[~missing])))
        if missing.any():
            gone = _texts(text, codes[missing])
            lost = gone - kept[-1][2]
            ids, count = _ids(lost) if lost else _ids(gone)
            out.append(Dropped("missing value", arm, int(missing.sum()), len(lost), ids, (metric,), count))
    if design_kind == "paired" and kept:
        for (arm, *_), (codes, text, own), (*_, other) in zip(arms, kept, kept[::-1]):
            alone = own - other
            if alone:
                ids, count = _ids(alone)
                runs = int(np.isin(text, list(alone))[codes].sum())
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
