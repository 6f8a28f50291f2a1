"""Random streams of the example experiment: one per task, one per run, and fast scalar draws from them.

A task draws its attributes from ``SeedSequence(seed, spawn_key=(task_index, 0))`` and a run from
``SeedSequence(seed, spawn_key=(task_index, arm_code, run_seed))`` (see :mod:`agentab.datasets.example`),
so a run depends only on ``(seed, task_index, arm, run_seed)``. Nothing uses global random state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Draws", "run_rng", "task_rng"]


def task_rng(seed: int, task_index: int) -> np.random.Generator:
    """Random stream of a task's attributes (independent of the arms)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(task_index, 0)))


def run_rng(seed: int, task_index: int, arm_code: int, run_seed: int) -> np.random.Generator:
    """Random stream of one run, keyed by (task, arm, run seed)."""
    key = (task_index, arm_code, run_seed)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


class Draws:
    """Fast scalar draws from a numpy Generator, buffered in blocks.

    Scalar calls into numpy cost ~0.4 us each; drawing blocks of 128 values
    and popping them from a Python list is several times faster.
    """

    __slots__ = ("_rng", "_u", "_z")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._u: list[float] = []
        self._z: list[float] = []

    def u(self) -> float:
        """Uniform on [0, 1)."""
        if not self._u:
            self._u = self._rng.random(128).tolist()
        return self._u.pop()

    def z(self) -> float:
        """Standard normal."""
        if not self._z:
            self._z = self._rng.standard_normal(64).tolist()
        return self._z.pop()

    def chance(self, p: float) -> bool:
        """Bernoulli(p)."""
        return self.u() < p

    def integer(self, low: int, high: int) -> int:
        """Uniform integer in ``[low, high]`` (both inclusive)."""
        return low + int(self.u() * (high - low + 1))

    def pick(self, options: Sequence[Any]) -> Any:
        """Uniform choice from a non-empty sequence."""
        return options[int(self.u() * len(options))]

    def lognormal(self, median: float, sigma: float) -> float:
        """Log-normal with the given median and log-scale sigma."""
        return median * math.exp(sigma * self.z())

    def weighted(self, weights: Sequence[float]) -> int:
        """Index drawn with probability proportional to ``weights``."""
        x = self.u() * sum(weights)
        for i, w in enumerate(weights):
            x -= w
            if x < 0:
                return i
        return len(weights) - 1
