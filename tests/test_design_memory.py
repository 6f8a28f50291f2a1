"""The memory-lean paths of the design and the comparison give exactly what the plain ones gave.

Issue 22 (memory): integer task ids are turned into text once per distinct id, the paired design looks
up each distinct id once, bootstrap counts are built a few rows at a time, and the left-out runs are
found by task codes. Each test below sets the lean path against the plain formula it replaced (written
here), on cases where the two could part: ids whose text order differs from their numeric order,
negative, unsigned and float ids, ``-0.0``, and designs wider than one piece of counts.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import agentab
from agentab.comparison._dropped import _task_codes, _text
from agentab.stats import _design
from agentab.stats._design import _codes, make_design


def _plain_codes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The text of every run, then ``np.unique``: what ``_codes`` did before."""
    if labels.dtype.kind in "iu" or (labels.dtype.kind == "f" and np.all(labels == np.round(labels))):
        text = labels.astype(np.int64).astype(str)
    else:
        text = labels.astype(str)
    uniques, codes = np.unique(text, return_inverse=True)
    return uniques, codes.reshape(-1)


@pytest.mark.parametrize("make", [
    lambda rng, n: rng.integers(-1000, 1000, n),
    lambda rng, n: rng.integers(0, 2**63 - 1, n, dtype=np.int64),
    lambda rng, n: rng.integers(0, 40, n).astype(np.uint8),
    lambda rng, n: rng.integers(0, 2**64 - 1, n, dtype=np.uint64),
    lambda rng, n: rng.integers(-30, 30, n).astype(float),
    lambda rng, n: rng.integers(5, 15, n).astype(np.int32),  # "10" sorts before "5" as text
])
def test_integer_ids_get_the_codes_of_their_text(make):
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 300):
        ids = make(rng, n)
        uniques, codes = _codes(ids)
        plain_uniques, plain_codes = _plain_codes(ids)
        assert uniques.dtype == plain_uniques.dtype and np.array_equal(uniques, plain_uniques)
        assert codes.dtype == plain_codes.dtype and np.array_equal(codes, plain_codes)


def test_integer_ids_and_the_same_ids_as_text_give_the_same_design():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 120, 900)
    cand = rng.integers(3, 130, 800)  # some tasks in one arm only: dropped from the paired design
    for paired in ("auto", True, False):
        a, kb_a, kc_a = make_design(len(base), len(cand), base, cand, paired)
        b, kb_b, kc_b = make_design(len(base), len(cand), base.astype(str), cand.astype(str), paired)
        assert a.kind == b.kind
        assert np.array_equal(a.cell, b.cell) and np.array_equal(a.run_weight, b.run_weight)
        assert np.array_equal(kb_a, kb_b) and np.array_equal(kc_a, kc_b)
        assert a.dropped_units == b.dropped_units and a.dropped_runs == b.dropped_runs


def test_paired_cells_are_those_of_a_search_per_run():
    rng = np.random.default_rng(2)
    base, cand = rng.integers(0, 60, 500), rng.integers(10, 70, 400)
    design, keep_base, keep_cand = make_design(len(base), len(cand), base, cand, True)
    base_ids, base_code = _plain_codes(base)
    cand_ids, cand_code = _plain_codes(cand)
    shared = np.intersect1d(base_ids, cand_ids)
    plain = np.concatenate([np.searchsorted(shared, base_ids[base_code[keep_base]]),
                            len(shared) + np.searchsorted(shared, cand_ids[cand_code[keep_cand]])])
    assert np.array_equal(design.cell, plain)


def _plain_counts(picks: np.ndarray, n: int) -> np.ndarray:
    size = len(picks)
    flat = picks + n * np.arange(size)[:, None]
    return np.bincount(flat.ravel(), minlength=size * n).reshape(size, n).astype(float)


@pytest.mark.parametrize("n_tasks", [1, 3, 250, _design._PIECE_CELLS + 7])
def test_task_counts_built_in_pieces_are_the_counts_of_the_picks(n_tasks):
    ids = np.repeat(np.arange(n_tasks), 2)
    design, _, _ = make_design(len(ids), len(ids), ids, ids, True)
    n_resamples = 2 * max(1, _design.BATCH_CELLS // n_tasks) + 3 if n_tasks < 1000 else 45  # several batches
    lean, plain = np.random.default_rng(7), np.random.default_rng(7)
    got = list(design.task_counts(n_resamples, lean))
    want = [_plain_counts(p, n_tasks) for p in design.task_picks(n_resamples, plain)]
    assert [g.shape for g in got] == [w.shape for w in want]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert lean.bit_generator.state == plain.bit_generator.state  # the same stream consumed, no more


def test_unpaired_bootstrap_counts_are_the_counts_of_the_picks():
    u = np.random.default_rng(3).random((70, 3000))
    for n in (1, 40, 3000):
        part = u[:, :n]
        assert np.array_equal(_design._counts(part, n), _plain_counts(_design._picks(part, n), n))


@pytest.mark.parametrize("ids", [
    np.array([3, -1, 3, 10, 2**40, -1]),
    np.array([0.5, -0.0, 0.0, 2.0, 0.5]),  # -0.0 and 0.0 read as different text, so different tasks
    np.array([True, False, True]),
    np.array([1.5, 2.5], dtype=np.float32),
    np.array(["a", "b", "a"]),
    np.array([1, "x", 1, 2.5], dtype=object),
])
def test_task_codes_give_each_run_its_text(ids):
    codes, text = _task_codes(ids)
    assert list(text[codes]) == list(_text(ids))
    assert len(set(text)) == len(text)  # one code per distinct text


def _experiment(ids_as_text: bool) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    tasks = np.tile(np.repeat(np.arange(8, 14), 3), 2)  # text order 10..13, 8, 9 differs from numeric order
    cand = np.repeat([False, True], len(tasks) // 2)
    frame = pd.DataFrame({
        "arm": np.where(cand, "candidate", "baseline"),
        "task_id": tasks.astype(str) if ids_as_text else tasks,
        "outcome": rng.random(len(tasks)) < 0.5 + 0.2 * cand,
        "tokens": np.round(np.exp(7 + rng.normal(size=len(tasks)))).astype(np.int64),
    })
    frame.loc[[0, 5], "tokens"] = np.nan  # missing values: counted as left out, by task
    return frame.drop(index=frame.index[(frame["arm"] == "candidate") & (frame["task_id"].astype(str) == "13")])


def test_compare_gives_the_same_table_and_drops_for_integer_and_text_task_ids():
    results = []
    for as_text in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(agentab.compare(_experiment(as_text), baseline="baseline", candidate="candidate",
                                           metrics={"outcome": "binary", "tokens": "cost"}, primary="outcome",
                                           n_resamples=999, seed=5))
    ints, texts = results
    pd.testing.assert_frame_equal(ints.table, texts.table)
    assert ints.dropped == texts.dropped and len(ints.dropped) > 0


def test_runs_weighted_per_cell_read_the_same_floats_as_runs_weighted_per_run():
    from agentab.stats._kernels import _per_cell
    from agentab.stats._windowed import Dense, Runs

    rng = np.random.default_rng(6)
    ids = rng.integers(0, 50, 700)
    design, _, _ = make_design(len(ids), len(ids), ids, rng.permutation(ids), True)
    weight = _per_cell(design)
    assert weight is not None
    order = rng.permutation(len(design.cell))
    per_run = Runs(design.cell[order], design.run_weight[order], design.n_cells)
    per_cell = Runs(design.cell[order], None, design.n_cells, weight)
    wt = Dense(rng.random((4, design.n_cells)))
    for i in (0, 1, 333, len(order)):
        assert np.array_equal(per_run.before(i), per_cell.before(i))
    assert np.array_equal(per_run.increments(wt, 10, 400), per_cell.increments(wt, 10, 400))
    assert np.array_equal(per_run.cumulative(wt.dense(np.arange(4))), per_cell.cumulative(wt.dense(np.arange(4))))
    index = np.flatnonzero(design.cell[order] >= 50)
    assert np.array_equal(per_run.subset(index).run_weight, per_cell.subset(index).run_weight)
    nudged = design.run_weight.copy()
    nudged[0] = np.nextafter(nudged[0], 1.0)  # run 0's cell has other runs (700 runs in 50 tasks)
    assert _per_cell(dataclasses.replace(design, run_weight=nudged)) is None  # then weights stay per run
