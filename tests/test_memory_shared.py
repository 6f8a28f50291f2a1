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
