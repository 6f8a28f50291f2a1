"""Experimental designs and the resampling plans that respect them.

Runs are grouped into *cells*: one cell per (unit, arm). A unit is a task
(the unit of replication) or, without task ids, a single run. Every resample
-- a bootstrap draw or a permutation of arm labels -- is a pair of weight
matrices ``(w_base, w_cand)`` of shape ``(batch, n_cells)``: how much each
cell counts in each arm. Statistics (:mod:`agentab.stats._kernels`) are
functions of those weights, so one kernel serves every design.

Designs
-------
``"paired"``
    Both arms ran the same tasks. A permutation swaps the arm labels of whole
    tasks (a sign flip of each task's difference); a bootstrap resamples tasks
    with all their runs in both arms.
``"clustered"``
    Different tasks per arm. A permutation reassigns whole tasks to arms
    (keeping each arm's number of tasks); a bootstrap resamples tasks within
    each arm.
``"independent"``
    No task ids (or one run per task): each run is its own unit.

Every task carries equal weight in its arm whatever its number of seeds, so
the estimand is the task-averaged difference, the way a benchmark score
averages over tasks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = ["Design", "CountDesign", "count_design", "make_design", "paired_design", "shared_draws", "DESIGNS"]

#: The designs a comparison can use.
DESIGNS = ("paired", "clustered", "independent")
#: Largest batch of resamples times cells held in memory at once.
BATCH_CELLS = 1 << 21
#: Cells per piece of a batch of bootstrap counts (drawn some rows at a time, same stream): only counts are batch-sized.
_PIECE_CELLS = 1 << 16

#: The random sign-flip patterns drawn inside :func:`shared_draws`, by the generator's state before the draw
#: (None outside it: every draw is fresh, as always).
_SHARED: ContextVar[dict | None] = ContextVar("agentab_shared_draws", default=None)


@contextmanager
def shared_draws() -> Iterator[None]:
    """Within the block, random sign-flip patterns are drawn once per generator state and reused.

    Several candidates compared with one baseline draw their patterns from the same stream (one per metric,
    from the seed), so each paired test would draw the very same rows again. Inside this block the first
    draw is kept, with the generator's state after it; a later draw from a generator in the same state
    (same number of tasks and resamples) reads the kept rows and leaves the generator where the fresh draw
    would have, so every number is bit for bit what it is outside the block. The kept rows live only as
    long as the block (no state survives it).
    """
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _reused(rng: np.random.Generator, key: tuple, draw: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """``draw()``'s batches, or, inside :func:`shared_draws`, the ones an earlier identical draw kept."""
    kept = _SHARED.get()
    if kept is None:
        yield from draw()
        return
    full = (key, repr(rng.bit_generator.state))
    if full not in kept:
        batches = list(draw())
        kept[full] = (batches, rng.bit_generator.state)
    batches, after = kept[full]
    rng.bit_generator.state = after
    yield from batches


class _RunWeights:
    """The ``run_weight`` field of :class:`Design`: the array given, or (given None) gathered from the
    design's ``cell_weight`` on each access, the very same floats, so that no array of one float per run
    is kept for the life of the design (readers that need it per run build it, and let it go)."""

    def __get__(self, design: Design | None, owner: type | None = None) -> np.ndarray:
        if design is None:
            raise AttributeError("run_weight")  # a field without a default
        given = design.__dict__["_run_weight"]
        return design.cell_weight[design.cell] if given is None else given

    def __set__(self, design: Design, value: np.ndarray | None) -> None:
        design.__dict__["_run_weight"] = value


@dataclass(frozen=True)
class Design:
    """Cells of a two-arm experiment and how to resample them.

    Attributes
    ----------
    kind : str
        One of :data:`DESIGNS`.
    cell : numpy.ndarray of int
        Cell of every run, baseline runs first, then candidate runs.
    n_runs : tuple of int
        Runs kept in each arm (baseline, candidate).
    base_cells, cand_cells : numpy.ndarray of int
        The cells of each arm. In a paired design ``base_cells[t]`` and
        ``cand_cells[t]`` are the two arms of task ``t``.
    run_weight : numpy.ndarray of float
        ``1 / runs in its cell`` for every run, so each cell weighs 1 in total. Given None, it is
        ``cell_weight[cell]``, built on each access.
    dropped_units : tuple of int
        Tasks of the baseline and candidate arm left out because the other arm
        did not run them (paired design only).
    dropped_runs : tuple of int
        Runs in those tasks.
    cell_weight : numpy.ndarray of float or None
        ``1 / runs in the cell`` for every cell, when the run weights are given as None.
    """

    kind: str
    cell: np.ndarray
    n_runs: tuple[int, int]
    base_cells: np.ndarray
    cand_cells: np.ndarray
    run_weight: np.ndarray | None = _RunWeights()  # type: ignore[assignment]
    dropped_units: tuple[int, int] = (0, 0)
    dropped_runs: tuple[int, int] = (0, 0)
    cell_weight: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.__dict__["_run_weight"] is None and self.cell_weight is None:
            raise ValueError("give the run weights per run or per cell")

    @property
    def n_cells(self) -> int:
        return len(self.base_cells) + len(self.cand_cells)

    def gathered_weights(self) -> np.ndarray | None:
        """The per-cell weights every run's weight is gathered from, or None when they are given per run."""
        return self.cell_weight if self.__dict__["_run_weight"] is None else None

    @property
    def n_units(self) -> tuple[int, int]:
        """Units (tasks, or runs without task ids) in each arm."""
        return len(self.base_cells), len(self.cand_cells)

    @property
    def label(self) -> str:
        """A short description for tables, e.g. ``"paired by task (40 tasks)"``."""
        if self.kind == "paired":
            return f"paired by task ({len(self.base_cells)} tasks)"
        if self.kind == "clustered":
            return f"independent tasks ({self.n_units[0]} + {self.n_units[1]})"
        return f"independent runs ({self.n_runs[0]} + {self.n_runs[1]})"

    # ------------------------------------------------------------------ #
    # Weight matrices
    # ------------------------------------------------------------------ #
    def observed(self) -> tuple[np.ndarray, np.ndarray]:
        """The weights of the data as observed, shape ``(1, n_cells)``."""
        w_base = np.zeros((1, self.n_cells))
        w_cand = np.zeros((1, self.n_cells))
        w_base[0, self.base_cells] = 1.0
        w_cand[0, self.cand_cells] = 1.0
        return w_base, w_cand

    def log_n_permutations(self) -> float:
        """Natural log of the number of distinct label assignments the permutation test ranges over."""
        if self.kind == "paired":
            return len(self.base_cells) * math.log(2)
        n_b, n_c = self.n_units
        return math.lgamma(n_b + n_c + 1) - math.lgamma(n_b + 1) - math.lgamma(n_c + 1)

    def n_permutations(self, limit: int) -> int | None:
        """Number of distinct label assignments if at most ``limit``, else None."""
        if self.log_n_permutations() > math.log(limit) + 1e-9:
            return None
        if self.kind == "paired":
            n = 2 ** len(self.base_cells)
        else:
            n_b, n_c = self.n_units
            n = math.comb(n_b + n_c, n_c)
        return n if n <= limit else None

    def batch_size(self) -> int:
        return max(1, BATCH_CELLS // max(self.n_cells, 1))

    def permutations(
        self, n_resamples: int, rng: np.random.Generator, *, exact: bool
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Weight matrices of the permutation null distribution, in batches.

        With ``exact`` every distinct assignment appears once (the observed one
        included); otherwise ``n_resamples`` random assignments are drawn.
        Draws consume ``rng`` row by row, so results do not depend on the
        batch size.
        """
        batch = self.batch_size()
        if self.kind == "paired":
            for swap in self.swaps(n_resamples, rng, exact=exact):
                yield self._swap(swap)
            return
        # Random draws are uniform doubles, taken row by row (one per unit), so
        # the stream does not depend on where batches start.
        n_b, n_c = self.n_units
        cells = np.concatenate([self.base_cells, self.cand_cells])
        if exact:
            rows: list[tuple[int, ...]] = []
            for chosen in combinations(range(n_b + n_c), n_c):
                rows.append(chosen)
                if len(rows) == batch:
                    yield self._assign(np.array(rows), cells)
                    rows = []
            if rows:
                yield self._assign(np.array(rows), cells)
            return
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            keys = rng.random((size, n_b + n_c))
            chosen = np.argpartition(keys, n_c - 1, axis=1)[:, :n_c]  # the n_c smallest keys: a uniform subset
            yield self._assign(chosen, cells)

    def swaps(self, n_resamples: int, rng: np.random.Generator, *, exact: bool) -> Iterator[np.ndarray]:
        """Paired design: rows of booleans, which tasks swap their arms, in batches.

        Every pattern once when ``exact`` (pattern ``i`` swaps the tasks whose bit is set in ``i``),
        else ``n_resamples`` random rows of one uniform per task, so the draws do not depend on the
        batch size. :meth:`permutations` turns them into weight matrices; the paired statistics of
        :mod:`agentab.stats._studentized` read them directly.
        """
        n_tasks = len(self.base_cells)
        batch = self.batch_size()
        if exact:
            codes = np.arange(2**n_tasks, dtype=np.int64)
            for start in range(0, len(codes), batch):
                chunk = codes[start : start + batch]
                yield ((chunk[:, None] >> np.arange(n_tasks)) & 1).astype(bool)
            return
        def draw() -> Iterator[np.ndarray]:
            for start in range(0, n_resamples, batch):
                size = min(batch, n_resamples - start)
                yield rng.random((size, n_tasks)) < 0.5

        yield from _reused(rng, ("swaps", n_tasks, n_resamples, batch), draw)

    def task_picks(self, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Paired design: the tasks drawn by each bootstrap resample (rows of task indices), in batches.

        The same draws as :meth:`bootstrap`, without the weight matrices: a
        kernel that averages over tasks can gather and average directly.
        """
        n_tasks = len(self.base_cells)
        batch = max(1, BATCH_CELLS // max(n_tasks, 1))
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            yield _picks(rng.random((size, n_tasks)), n_tasks)

    def task_counts(self, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Paired design: how often each task is drawn in each bootstrap resample, in batches.

        The batches of :meth:`task_picks`, each built a few rows at a time from the same uniforms.
        """
        n_tasks = len(self.base_cells)
        batch = max(1, BATCH_CELLS // max(n_tasks, 1))
        step = max(1, _PIECE_CELLS // max(n_tasks, 1))
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            counts = np.empty((size, n_tasks))
            for lo in range(0, size, step):
                hi = min(lo + step, size)
                counts[lo:hi] = _counts_of(_picks(rng.random((hi - lo, n_tasks)), n_tasks), n_tasks)
            yield counts
            del counts  # the consumer's batch is not kept alive while the next one is built

    def bootstrap(self, n_resamples: int, rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Weight matrices of bootstrap resamples of units, in batches."""
        batch = self.batch_size()
        n_b, n_c = self.n_units
        if self.kind == "paired":
            for counts in self.task_counts(n_resamples, rng):
                w_base = np.zeros((len(counts), self.n_cells))
                w_cand = np.zeros((len(counts), self.n_cells))
                w_base[:, self.base_cells] = counts
                w_cand[:, self.cand_cells] = counts
                yield w_base, w_cand
            return
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            w_base = np.zeros((size, self.n_cells))
            w_cand = np.zeros((size, self.n_cells))
            u = rng.random((size, n_b + n_c))  # one row: the baseline draws, then the candidate draws
            w_base[:, self.base_cells] = _counts(u[:, :n_b], n_b)
            w_cand[:, self.cand_cells] = _counts(u[:, n_b:], n_c)
            yield w_base, w_cand

    # ------------------------------------------------------------------ #
    def _swap(self, swap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keep = (~swap).astype(float)
        flip = swap.astype(float)
        w_base = np.zeros((len(swap), self.n_cells))
        w_cand = np.zeros((len(swap), self.n_cells))
        w_base[:, self.base_cells] = keep
        w_base[:, self.cand_cells] = flip
        w_cand[:, self.cand_cells] = keep
        w_cand[:, self.base_cells] = flip
        return w_base, w_cand

    def _assign(self, chosen: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of ``chosen`` list the pooled units that form the candidate arm."""
        size = len(chosen)
        w_cand_units = np.zeros((size, len(cells)))
        w_cand_units[np.arange(size)[:, None], chosen] = 1.0
        w_base = np.zeros((size, self.n_cells))
        w_cand = np.zeros((size, self.n_cells))
        w_cand[:, cells] = w_cand_units
        w_base[:, cells] = 1.0 - w_cand_units
        return w_base, w_cand


@dataclass(frozen=True)
class CountDesign(Design):
    """Independent runs of a metric with few distinct values: the cells are the values.

    With ``k`` distinct values an arm is fully described by its count vector,
    so a permutation of arm labels is a multivariate hypergeometric draw of
    the candidate's counts from the pooled counts, and a bootstrap resample a
    multinomial draw per arm: each resample costs O(k), whatever the number
    of runs. Each run's ``cell`` is the index of its value among the pooled
    distinct values (``levels``).
    """

    base_counts: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    cand_counts: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    levels: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    @property
    def n_cells(self) -> int:
        return len(self.base_counts)

    @property
    def n_units(self) -> tuple[int, int]:
        return self.n_runs

    def observed(self) -> tuple[np.ndarray, np.ndarray]:
        return self.base_counts[None, :].astype(float), self.cand_counts[None, :].astype(float)

    def n_permutations(self, limit: int) -> int | None:
        return None  # the count design is only chosen when there are far more permutations than resamples

    def batch_size(self) -> int:
        return max(1, BATCH_CELLS // (4 * max(self.n_cells, 1)))

    def permutations(
        self, n_resamples: int, rng: np.random.Generator, *, exact: bool
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        pool = (self.base_counts + self.cand_counts).astype(np.int64)
        batch = self.batch_size()
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            cand = rng.multivariate_hypergeometric(pool, int(self.n_runs[1]), size=size).astype(float)
            yield pool[None, :] - cand, cand

    def bootstrap(self, n_resamples: int, rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        p_base = self.base_counts / self.n_runs[0]
        p_cand = self.cand_counts / self.n_runs[1]
        # One stream per arm, so that the draws do not depend on where batches start.
        rng_base, rng_cand = (np.random.default_rng(seed) for seed in rng.integers(2**63, size=2))
        batch = self.batch_size()
        for start in range(0, n_resamples, batch):
            size = min(batch, n_resamples - start)
            base = rng_base.multinomial(int(self.n_runs[0]), p_base, size=size).astype(float)
            cand = rng_cand.multinomial(int(self.n_runs[1]), p_cand, size=size).astype(float)
            yield base, cand


#: Largest number of distinct values for which runs are resampled as counts.
COUNT_LEVELS = 64
#: Fewest permutations (as a log) for which the count design replaces exact enumeration.
_LOG_MANY = math.log(10**6)


def count_design(values: np.ndarray, n_base: int, n_cand: int) -> CountDesign | None:
    """The count design for independent runs, if the values are few and the runs many."""
    n = n_base + n_cand
    many = math.lgamma(n + 1) - math.lgamma(n_base + 1) - math.lgamma(n_cand + 1) > _LOG_MANY
    if not many:
        return None
    # A cheap look at evenly spaced values first: most continuous metrics stop here.
    if len(np.unique(values[:: max(1, n // 20_000)])) > COUNT_LEVELS:
        return None
    levels = np.unique(values)
    if len(levels) > COUNT_LEVELS or 4 * len(levels) > n:
        return None
    codes = np.searchsorted(levels, values).astype(np.int32)
    k = len(levels)
    base_counts = np.bincount(codes[:n_base], minlength=k)
    cand_counts = np.bincount(codes[n_base:], minlength=k)
    # Kernels read the counts and `levels`, never the runs: no per-run arrays beyond `cell`.
    return CountDesign(
        "independent",
        codes,
        (n_base, n_cand),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        np.broadcast_to(np.nan, (n,)),
        base_counts=base_counts,
        cand_counts=cand_counts,
        levels=levels,
    )


def paired_design(n_tasks: int) -> Design:
    """A paired design of ``n_tasks`` tasks with one run per task and arm (what :meth:`Design.swaps` needs)."""
    cell = np.arange(2 * n_tasks)
    return Design("paired", cell, (n_tasks, n_tasks), cell[:n_tasks], cell[n_tasks:], np.ones(2 * n_tasks))


def _picks(u: np.ndarray, n: int) -> np.ndarray:
    """Units drawn with replacement, from uniforms: row ``i`` draws ``u.shape[1]`` of ``n`` units."""
    return np.multiply(u, n).astype(np.int64)  # u < 1, so u * n < n: no clamp needed


def _counts_of(picks: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` units appears in each row of ``picks`` (as floats).

    Counted a few rows at a time (one bincount of the rows' picks offset by ``n`` per row), so the integer
    temporaries are a piece's size, not the batch's.
    """
    size = len(picks)
    counts = np.empty((size, n))
    step = max(1, _PIECE_CELLS // max(n, 1))
    for lo in range(0, size, step):
        rows = picks[lo : lo + step]
        flat = rows + n * np.arange(len(rows))[:, None]
        counts[lo : lo + len(rows)] = np.bincount(flat.ravel(), minlength=len(rows) * n).reshape(len(rows), n)
    return counts


def _counts(u: np.ndarray, n: int) -> np.ndarray:
    """Bootstrap counts per unit from uniforms: row ``i`` draws ``n`` units with replacement."""
    counts = np.empty((len(u), n))
    step = max(1, _PIECE_CELLS // max(n, 1))
    for lo in range(0, len(u), step):
        counts[lo : lo + step] = _counts_of(_picks(u[lo : lo + step], n), n)
    return counts


def _label(value: object) -> str:
    """Task ids as text; integral floats read as integers, so 3 and 3.0 are the same task."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return str(value)


def _codes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Task ids as text (see :func:`_label`), vectorised for numeric and text arrays.

    Returns the distinct ids as sorted text and each run's index into them.
    """
    if labels.dtype.kind in "iu" or (labels.dtype.kind == "f" and np.all(labels == np.round(labels))):
        return _integer_codes(labels.astype(np.int64))
    if labels.dtype.kind in "fUS":
        text = labels.astype(str)
    else:
        text = np.array([_label(v) for v in labels], dtype=str)
    uniques, codes = np.unique(text, return_inverse=True)
    return uniques, codes.reshape(-1)


def _integer_codes(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_codes` of integer ids, turning only the distinct ids into text.

    The same result as ``np.unique(ids.astype(str), return_inverse=True)`` (ids ranked as text: "10" before
    "9"), without a text array of one string per run (21 characters of 4 bytes each, 84 bytes per run).
    Distinct integers have distinct text, so the text order has no ties to break.
    """
    distinct = np.unique(ids)
    text = distinct.astype(str)
    order = np.argsort(text, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order), dtype=np.intp)
    # Each run's position among the distinct ids (what np.unique's inverse gives), without its temporaries.
    return text[order], rank[np.searchsorted(distinct, ids)]


def make_design(
    n_base: int,
    n_cand: int,
    base_strata: np.ndarray | None,
    cand_strata: np.ndarray | None,
    paired: bool | str,
) -> tuple[Design, np.ndarray, np.ndarray]:
    """Choose and build the design.

    Parameters
    ----------
    n_base, n_cand : int
        Runs in each arm (after missing values were removed).
    base_strata, cand_strata : array or None
        Task id of every run of each arm, or both None.
    paired : {"auto", True, False}
        ``"auto"`` pairs when task ids are given and at least half of all
        tasks (and at least two) were run by both arms; tasks run by one arm
        only are then dropped (and counted).

    Returns
    -------
    design : Design
    keep_base, keep_cand : numpy.ndarray of bool
        Which runs of each arm the design uses.
    """
    keep_base = np.ones(n_base, dtype=bool)
    keep_cand = np.ones(n_cand, dtype=bool)
    if base_strata is None:
        index = np.int32 if n_base + n_cand < 2**31 else np.int64
        cell = np.arange(n_base + n_cand, dtype=index)
        design = Design(
            "independent",
            cell,
            (n_base, n_cand),
            cell[:n_base],
            cell[n_base:],
            np.broadcast_to(1.0, (n_base + n_cand,)),  # one run per cell: no array needed
        )
        return design, keep_base, keep_cand
    base_ids, base_code = _codes(base_strata)
    cand_ids, cand_code = _codes(cand_strata)
    shared = np.intersect1d(base_ids, cand_ids)
    union = len(base_ids) + len(cand_ids) - len(shared)
    if paired == "auto":
        paired = len(shared) >= 2 and 2 * len(shared) >= union
    if paired:
        in_base = np.isin(base_ids, shared)
        in_cand = np.isin(cand_ids, shared)
        keep_base = in_base[base_code]
        keep_cand = in_cand[cand_code]
        n_tasks = len(shared)
        # Task t of `shared`: baseline cell t, candidate cell n_tasks + t. Each distinct id is looked up once
        # (a text array per run would be 84 bytes a run for integer ids).
        index = np.int32 if 2 * n_tasks < 2**31 else np.intp  # the cells' type (see _cells): no int64 copy
        base_cell = np.searchsorted(shared, base_ids).astype(index)[_kept(base_code, keep_base)]
        cand_cell = (n_tasks + np.searchsorted(shared, cand_ids)).astype(index)[_kept(cand_code, keep_cand)]
        cell = _cells(base_cell, cand_cell, 2 * n_tasks)
        del base_cell, cand_cell
        design = Design(
            "paired",
            cell,
            (int(keep_base.sum()), int(keep_cand.sum())),
            np.arange(n_tasks),
            np.arange(n_tasks, 2 * n_tasks),
            None,
            dropped_units=(int((~in_base).sum()), int((~in_cand).sum())),
            dropped_runs=(int((~keep_base).sum()), int((~keep_cand).sum())),
            cell_weight=_cell_weight(cell, 2 * n_tasks),
        )
        return design, keep_base, keep_cand
    n_b = len(base_ids)
    cell = _cells(base_code, n_b + cand_code, n_b + len(cand_ids))
    kind = "independent" if len(cell) == n_b + len(cand_ids) else "clustered"
    design = Design(
        kind,
        cell,
        (n_base, n_cand),
        np.arange(n_b),
        np.arange(n_b, n_b + len(cand_ids)),
        None,
        cell_weight=_cell_weight(cell, n_b + len(cand_ids)),
    )
    return design, keep_base, keep_cand


def _kept(codes: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``codes[keep]``, without a copy when every run is kept."""
    return codes if keep.all() else codes[keep]


def _cells(base: np.ndarray, cand: np.ndarray, n_cells: int) -> np.ndarray:
    """Every run's cell, baseline runs first, as int32 when the cells allow (half the memory of int64)."""
    cell = np.empty(len(base) + len(cand), dtype=np.int32 if n_cells < 2**31 else np.int64)
    cell[: len(base)] = base
    cell[len(base) :] = cand
    return cell


def _cell_weight(cell: np.ndarray, n_cells: int) -> np.ndarray:
    """``1 / runs in the cell`` per cell: gathered per run, the floats ``1.0 / size[cell]`` would give."""
    size = np.bincount(cell, minlength=n_cells)
    with np.errstate(divide="ignore"):  # a cell without runs is never gathered
        return 1.0 / size
