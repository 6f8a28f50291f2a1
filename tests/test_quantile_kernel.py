"""The windowed quantile kernel gives every resample exactly the quantile of the reference kernel.

``_Reference`` is the kernel as it was before the window (commit c432143): a cumulative sum over every
run of every resample. The window is a shortcut to the same index, so the tests ask for equality, not
closeness: on random weights (hypothesis and fixed seeds: ties, tiny tasks, one task with most of the runs,
q near 0 and 1, zero weights), on the designs' own resamples, and through ``quantile_difference``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentab.stats import _windowed
from agentab.stats._design import CountDesign, Design, make_design
from agentab.stats._kernels import QuantileKernel
from agentab.stats._resampling import resample


class _Reference:
    """QuantileKernel before the window: a (resamples x runs) weight matrix and its cumulative sum."""

    TOL = 1e-9
    MAX_LEVELS = 128

    def __init__(self, values: np.ndarray, design: Design, q: np.ndarray):
        self.q = np.asarray(q, dtype=float)
        if isinstance(design, CountDesign):
            self.shares, self.sorted = np.eye(len(design.levels)), design.levels
            return
        levels, codes = np.unique(values, return_inverse=True)
        self.shares = None
        if len(levels) <= self.MAX_LEVELS and len(levels) < len(values):
            shares = np.zeros((design.n_cells, len(levels)))
            np.add.at(shares, (design.cell, codes.reshape(-1)), design.run_weight)
            self.shares = shares
            self.sorted = levels
            return
        order = np.argsort(values, kind="stable")
        self.sorted = values[order]
        self.cell = design.cell[order]
        self.run_weight = design.run_weight[order]

    def quantiles(self, w: np.ndarray) -> np.ndarray:
        n = len(self.sorted)
        if self.shares is not None:
            cumulative = np.cumsum(w @ self.shares, axis=1)
        else:
            cumulative = np.cumsum(w[:, self.cell] * self.run_weight, axis=1)
        cumulative /= cumulative[:, -1:]
        rows = np.arange(len(w))
        cumulative += rows[:, None]
        targets = rows[:, None] + (self.q - self.TOL)[None, :]
        index = np.searchsorted(cumulative.ravel(), targets.ravel(), side="left").reshape(targets.shape)
        index = np.minimum(index - rows[:, None] * n, n - 1)
        return self.sorted[index]

    def __call__(self, w_base: np.ndarray, w_cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        base = self.quantiles(w_base)
        cand = self.quantiles(w_cand)
        return base, cand, cand - base


def _experiment(rng: np.random.Generator, n_tasks: int, seeds: tuple[int, int], *, ties: bool = False,
                dominant: bool = False, paired: bool = True) -> tuple[np.ndarray, Design]:
    """Values and the design of a two-arm experiment with task effects (seeds: the range of runs per task)."""
    sizes = rng.integers(seeds[0], seeds[1] + 1, size=2 * n_tasks)
    if dominant:
        sizes[0] = 8 * sizes.sum()  # one task holds most of the runs (its weight is still 1)
    task = np.repeat(np.arange(2 * n_tasks) % n_tasks, sizes)
    arm = np.repeat(np.arange(2 * n_tasks) >= n_tasks, sizes)
    effect = rng.normal(0, 1, n_tasks)[task]
    values = np.exp(10 + effect + 0.5 * rng.normal(size=len(task)) + 0.2 * arm)
    if ties:
        values = np.round(values / values.max() * 300) * 7.0  # about 300 levels: many ties, the runs path
    base, cand = values[~arm], values[arm]
    design, keep_b, keep_c = make_design(len(base), len(cand), task[~arm], task[arm], paired)
    return np.r_[base[keep_b], cand[keep_c]], design


QS = np.array([1e-6, 0.05, 0.5, 0.95, 1 - 1e-7])


@pytest.mark.parametrize("case", [
    dict(n_tasks=600, seeds=(10, 10)),
    dict(n_tasks=600, seeds=(1, 15), ties=True),
    dict(n_tasks=300, seeds=(1, 3), dominant=True),
    dict(n_tasks=800, seeds=(5, 5), paired=False),
    dict(n_tasks=500, seeds=(2, 30), ties=True, paired=False),
])
def test_every_resample_of_the_designs_matches_the_reference(case, monkeypatch):
    redone = []
    original = _windowed.reference_positions
    monkeypatch.setattr(_windowed, "reference_positions", lambda *a: redone.append(len(a[2])) or original(*a))
    rng = np.random.default_rng(7)
    values, design = _experiment(rng, **case)
    assert len(values) >= _windowed.MIN_WINDOWED  # the window is used, not the small-input shortcut
    new, old = QuantileKernel(values, design, QS), _Reference(values, design, QS)
    for make in (lambda r: design.bootstrap(600, r), lambda r: design.permutations(600, r, exact=False)):
        for wb, wc in make(np.random.default_rng(3)):
            for w in (wb, wc):
                np.testing.assert_array_equal(new.quantiles(w), old.quantiles(w))
    if design.kind == "paired":
        for counts in design.task_counts(600, np.random.default_rng(4)):
            w = np.zeros((len(counts), design.n_cells))
            w[:, design.base_cells] = counts
            np.testing.assert_array_equal(new.bootstrapped(counts)[0], old.quantiles(w))
        for swap in design.swaps(600, np.random.default_rng(5), exact=False):
            np.testing.assert_array_equal(np.stack(new.swapped(swap)), np.stack(old(*design._swap(swap))))
    if not case.get("dominant"):  # away from the extremes, the window holds nearly every resample's quantile
        redone.clear()
        middle = QuantileKernel(values, design, QS[1:-1])
        for wb, wc in design.bootstrap(600, np.random.default_rng(3)):
            middle(wb, wc)
        assert sum(redone) < 0.02 * 600 * 2


def _random_weights(rng: np.random.Generator, rows: int, n_cells: int, zeros: float, kind: str) -> np.ndarray:
    if kind == "counts":
        w = rng.poisson(1.0, size=(rows, n_cells)).astype(float)
    elif kind == "floats":
        w = rng.exponential(size=(rows, n_cells))
    else:
        w = (rng.random((rows, n_cells)) < 0.5).astype(float)
    w[rng.random((rows, n_cells)) < zeros] = 0.0
    w[:, 0] += w.sum(axis=1) == 0  # every row weighs something
    return w


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_tasks=st.integers(2, 700),
    seeds=st.tuples(st.integers(1, 12), st.integers(0, 25)),
    ties=st.booleans(),
    dominant=st.booleans(),
    zeros=st.sampled_from([0.0, 0.3, 0.95]),
    kind=st.sampled_from(["counts", "floats", "flips"]),
    q=st.lists(st.floats(1e-6, 1 - 1e-6), min_size=1, max_size=3),
)
def test_random_weights_match_the_reference(seed, n_tasks, seeds, ties, dominant, zeros, kind, q):
    rng = np.random.default_rng(seed)
    values, design = _experiment(rng, n_tasks, (seeds[0], seeds[0] + seeds[1]), ties=ties, dominant=dominant,
                                 paired=bool(seed % 2))
    qs = np.array(q)
    w = _random_weights(rng, 37, design.n_cells, zeros, kind)
    np.testing.assert_array_equal(QuantileKernel(values, design, qs).quantiles(w),
                                  _Reference(values, design, qs).quantiles(w))


def test_rows_outside_the_window_and_near_the_threshold_are_recomputed(monkeypatch):
    """A batch whose rows scatter widely (most fall outside any narrow window) and rows whose share at the
    crossing sits on the threshold still give the reference's quantiles."""
    rng = np.random.default_rng(11)
    values, design = _experiment(rng, 1000, (8, 8))
    qs = np.array([0.5, 0.9])
    w = np.zeros((50, design.n_cells))
    for i in range(50):  # each row a different handful of tasks: quantiles all over the sorted runs
        w[i, rng.choice(design.n_cells, size=3, replace=False)] = 1.0
    w[:10] = 1.0  # and rows with every cell at weight 1: shares of exactly j / n at the crossing
    calls = []
    original = _windowed.reference_positions
    monkeypatch.setattr(_windowed, "reference_positions", lambda *a: calls.append(len(a[2])) or original(*a))
    np.testing.assert_array_equal(QuantileKernel(values, design, qs).quantiles(w),
                                  _Reference(values, design, qs).quantiles(w))
    assert calls  # some rows went through the reference formula


def test_count_levels_use_the_window_and_match():
    rng = np.random.default_rng(5)
    n_tasks = 3000
    sizes = np.full(2 * n_tasks, 4)
    task = np.repeat(np.arange(2 * n_tasks) % n_tasks, sizes)
    arm = np.repeat(np.arange(2 * n_tasks) >= n_tasks, sizes)
    values = rng.poisson(8 + 4 * rng.random(n_tasks)[task]).astype(float)  # steps: a few dozen levels
    design, _, _ = make_design(int((~arm).sum()), int(arm.sum()), task[~arm], task[arm], True)
    qs = np.array([0.5, 0.95])
    new, old = QuantileKernel(values, design, qs), _Reference(values, design, qs)
    assert isinstance(new.atoms, _windowed.Levels)
    for wb, wc in design.bootstrap(400, np.random.default_rng(1)):
        np.testing.assert_array_equal(new(wb, wc)[2], old(wb, wc)[2])


@pytest.mark.parametrize("paired", [True, False])
def test_resample_is_unchanged(paired):
    """``resample`` (the paired path reads task counts and sign flips directly) gives the reference's arrays."""
    rng = np.random.default_rng(2)
    values, design = _experiment(rng, 700, (3, 9), paired=paired)
    qs = np.array([0.5, 0.95])
    new = resample(design, QuantileKernel(values, design, qs), n_resamples=999, rng=np.random.default_rng(8))
    old = resample(design, _Reference(values, design, qs), n_resamples=999, rng=np.random.default_rng(8))
    for field in ("base", "cand", "effect", "null", "boot_base", "boot_cand", "boot_effect"):
        np.testing.assert_array_equal(getattr(new, field), getattr(old, field))
