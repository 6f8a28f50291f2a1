"""Memory edits of round 2 (issue 22): shared arrays give the same numbers as the copies they replace."""

from __future__ import annotations

import numpy as np

from agentab.stats._inputs import _joined


def test_joined_shares_adjacent_halves():
    pooled = np.arange(10, dtype=float)
    got = _joined(pooled[:4], pooled[4:])
    assert np.shares_memory(got, pooled) and np.array_equal(got, pooled)
    inner = _joined(pooled[2:5], pooled[5:9])  # halves of a slice: the slice itself
    assert np.shares_memory(inner, pooled) and np.array_equal(inner, pooled[2:9])


def test_joined_copies_otherwise():
    pooled = np.arange(10, dtype=float)
    for x, y in ((pooled[:4], pooled[5:]), (pooled[5:], pooled[:5]), (pooled[::2], pooled[1::2]),
                 (np.ones(3), np.zeros(2)), (pooled[:0], np.ones(2))):
        got = _joined(x, y)
        assert np.array_equal(got, np.concatenate([x, y]))
        assert not np.shares_memory(got, pooled)


def test_cell_sums_are_bincounts():
    from agentab.stats._windowed import cell_sums

    rng = np.random.default_rng(0)
    for n_cells in (1, 7, 1000):
        cells = rng.integers(0, n_cells, 5000)
        weights = 1.0 / rng.integers(1, 13, 5000)
        plain = np.bincount(cells, weights=weights, minlength=n_cells + 3)
        for dtype in (np.int32, np.int64, np.intp):
            got = cell_sums(cells.astype(dtype), weights, n_cells + 3)
            assert got.view(np.uint64).tolist() == plain.view(np.uint64).tolist()
    assert len(cell_sums(np.zeros(0, dtype=np.int32), np.zeros(0), 4)) == 4


def test_arm_subset_reads_the_same_cells_and_weights():
    from agentab.stats._windowed import Runs

    rng = np.random.default_rng(1)
    cell = rng.integers(0, 50, 400).astype(np.int32)
    weight = 1.0 / rng.integers(1, 5, 50)
    index = np.flatnonzero(cell >= 25).astype(np.int32)
    for runs in (Runs(cell, None, 50, weight), Runs(cell, weight[cell], 50)):
        arm = runs.subset(index)
        copied = Runs(cell[index], runs.run_weight[index], 50)
        assert np.array_equal(arm.cell, cell[index]) and np.array_equal(arm.cells(3, 9), cell[index][3:9])
        assert np.array_equal(arm.run_weight, copied.run_weight)
        w = rng.random((3, 50))
        assert np.array_equal(arm.cumulative(w), copied.cumulative(w))
        for i in (0, 1, 17, len(index)):
            assert np.array_equal(arm.before(i), copied.before(i))
        inner = arm.subset(np.arange(5, 20))
        assert np.array_equal(inner.cell, cell[index][5:20])


def test_design_run_weights_are_gathered_from_cells():
    import dataclasses

    from agentab.stats._design import make_design

    rng = np.random.default_rng(2)
    base, cand = rng.integers(0, 40, 300), rng.integers(0, 40, 250)
    for paired in (True, False):
        design, _, _ = make_design(len(base), len(cand), base, cand, paired)
        size = np.bincount(design.cell, minlength=design.n_cells)
        assert np.array_equal(design.run_weight, 1.0 / size[design.cell])
        assert design.gathered_weights() is not None
        nudged = dataclasses.replace(design, run_weight=design.run_weight * 2)
        assert nudged.gathered_weights() is None and np.array_equal(nudged.run_weight, 2 * design.run_weight)


def test_integer_codes_rank_as_text():
    from agentab.stats._design import _codes

    rng = np.random.default_rng(3)
    ids = rng.integers(-50, 5000, 3000)
    uniques, codes = _codes(ids)
    plain_uniques, plain_codes = np.unique(ids.astype(str), return_inverse=True)
    assert np.array_equal(uniques, plain_uniques) and np.array_equal(codes, plain_codes.reshape(-1))


def test_gathered_sums_in_pieces_are_bincounts(monkeypatch):
    from agentab.stats import _windowed

    monkeypatch.setattr(_windowed, "PIECE_RUNS", 37)  # many pieces
    rng = np.random.default_rng(4)
    cells = rng.integers(0, 90, 4000).astype(np.int32)
    weight = 1.0 / rng.integers(1, 11, 90)
    plain = np.bincount(cells, weights=weight[cells], minlength=90)
    assert _windowed.gathered_sums(cells, weight, 90).view(np.uint64).tolist() == plain.view(np.uint64).tolist()
    runs = _windowed.Runs(cells, None, 90, weight)
    for i in (0, 36, 37, 38, 1000, 4000):
        expected = np.bincount(cells[:i], weights=weight[cells[:i]], minlength=90)
        assert runs.before(i).view(np.uint64).tolist() == expected.view(np.uint64).tolist()
