"""Task-weighted quantiles of many resamples, touching only a window of the sorted runs per resample.

A resample is a row of cell weights; its quantile is the first of the pooled
sorted runs at which the cumulative weight reaches ``q`` of the row's total
(:class:`agentab.stats._kernels.QuantileKernel`). Computing that cumulative
over every run costs O(runs) per resample. Here, per batch of resamples:

1. the batch's mean row locates a centre (its own quantile) and the rows'
   shares of weight up to the centre, one product of the weights with a
   per-cell vector, say how far each row's quantile lies from it, so a
   window ``[lo, hi)`` of the sorted runs is chosen that holds almost every
   row's quantile;
2. each row's weight below the window is one more such product (task
   weights times each cell's weight below ``lo``), and only the runs inside
   the window get a cumulative pass;
3. a row whose quantile falls outside the window, or whose cumulative share
   at the crossing lies within ``AMBIGUOUS`` of the threshold (where the two
   summation orders could round differently), is recomputed by the
   reference formula (:func:`reference_positions`), today's arithmetic
   exactly, so every row's answer is the reference's.

The cost per resample is O(cells + window): the window is a few standard
deviations of the rows' spread, about sqrt(tasks) runs times the runs per
task, rather than every run.

Rows are described by a :class:`Weights` object, so a paired design's
resamples (task counts, or sign flips) are read from task-level arrays
without building the (rows x cells) matrices.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cell_sums", "gathered_sums", "Weights", "Dense", "TaskBlocks", "Atoms", "Runs", "Levels", "product", "reference_positions",
           "windowed_positions", "AMBIGUOUS"]

#: Relative tolerance on cumulative weights (the kernel's ``TOL``), repeated here for the reference formula.
TOL = 1e-9
#: Half-width of the band around the threshold ``q - TOL`` inside which a row is recomputed by the reference
#: formula: wider than the rounding error of either summation (under 1e-10 up to millions of runs), narrower
#: than ``TOL``, so that shares of exactly ``q`` (ties, equal seeds) never fall in it.
AMBIGUOUS = 0.5 * TOL
#: Below this many atoms (sorted runs or levels) the reference formula is used for every row.
MIN_WINDOWED = 4096
#: Largest (rows x atoms) cumulative array of the reference formula held at once.
REFERENCE_CELLS = 1 << 21
#: A window wider than this share of the atoms is not worth it: the reference formula is used.
MAX_WINDOW_SHARE = 0.3


#: Rows per matrix product: small products run on one thread, which on a busy machine is several times
#: faster than BLAS's threads fighting over the cores (measured: 5 ms against 29 ms for 209 x 10,000 x 3).
PRODUCT_ROWS = 32


def product(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``x @ a``, ``PRODUCT_ROWS`` rows of ``x`` at a time."""
    out = np.empty((len(x), a.shape[1]))
    for i in range(0, len(x), PRODUCT_ROWS):
        np.matmul(x[i : i + PRODUCT_ROWS], a, out=out[i : i + PRODUCT_ROWS])
    return out


def cell_sums(cells: np.ndarray, weights: np.ndarray, n_cells: int) -> np.ndarray:
    """``np.bincount(cells, weights=weights, minlength=n_cells)``, without bincount's copy of int32 cells.

    bincount turns its cells into a platform-integer array first (8 bytes a run); ``np.add.at`` reads
    them as they are and adds the weights in the same order from the same zeros, so the sums are the same
    floats.
    """
    if cells.dtype == np.intp:
        return np.bincount(cells, weights=weights, minlength=n_cells)
    out = np.zeros(max(n_cells, int(cells.max()) + 1 if len(cells) else 0))
    np.add.at(out, cells, weights)
    return out


#: Runs per piece when per-cell weights are gathered for a sum: no array of one float per run.
PIECE_RUNS = 1 << 18


def gathered_sums(cells: np.ndarray, cell_weight: np.ndarray, n_cells: int) -> np.ndarray:
    """:func:`cell_sums` of the weights ``cell_weight[cells]``, gathered a piece at a time.

    ``np.add.at`` adds in order into the same totals, so the pieces continue one another: the same floats.
    """
    out = np.zeros(max(n_cells, int(cells.max()) + 1 if len(cells) else 0))
    for lo in range(0, len(cells), PIECE_RUNS):
        piece = cells[lo : lo + PIECE_RUNS]
        np.add.at(out, piece, cell_weight[piece])
    return out


class Weights:
    """Rows of cell weights (one row per resample), read through products and column gathers."""

    n_rows: int
    n_cells: int

    def dot(self, a: np.ndarray) -> np.ndarray:
        """``W @ a`` for ``a`` of shape (cells, k): shape (rows, k)."""
        raise NotImplementedError

    def columns(self, cells: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """The weights of the given cells in every row times ``scale`` (one per cell): (rows, len(cells))."""
        raise NotImplementedError

    def mean(self) -> np.ndarray:
        """The mean row, shape (cells,)."""
        raise NotImplementedError

    def dense(self, rows: np.ndarray) -> np.ndarray:
        """The given rows as a dense (len(rows), cells) matrix."""
        raise NotImplementedError


class Dense(Weights):
    """A dense (rows x cells) weight matrix."""

    def __init__(self, w: np.ndarray):
        self.w = w
        self.n_rows, self.n_cells = w.shape

    def dot(self, a: np.ndarray) -> np.ndarray:
        return product(self.w, a)

    def columns(self, cells: np.ndarray, scale: np.ndarray) -> np.ndarray:
        out = np.take(self.w, cells, axis=1)
        out *= scale
        return out

    def mean(self) -> np.ndarray:
        return self.w.mean(axis=0)

    def dense(self, rows: np.ndarray) -> np.ndarray:
        return self.w[rows]


class TaskBlocks(Weights):
    """Paired design: cells ``0..T-1`` (baseline of each task) and ``T..2T-1`` (candidate) weighted through
    one task-level matrix.

    Arm ``k``'s cells weigh ``alpha[k] + beta[k] * m`` for the (rows x T) matrix ``m``: a bootstrap row gives
    one arm the task counts (1, 0 on ``m = counts``) and the other nothing (0, 0); a sign flip gives each arm
    ``1 - swap`` of its own cells (1, -1) and ``swap`` of the other's (0, 1). Every weight is then the very
    number the dense matrix holds (0, 1 or a count), so products with the run weights round alike.
    """

    def __init__(self, m: np.ndarray, alpha: tuple[float, float], beta: tuple[float, float]):
        self.m = m
        self.alpha, self.beta = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
        self.n_rows, self.n_tasks = m.shape
        self.n_cells = 2 * self.n_tasks

    def _arm(self, cells: np.ndarray) -> np.ndarray:
        return (cells >= self.n_tasks).astype(np.intp)

    def dot(self, a: np.ndarray) -> np.ndarray:
        t = self.n_tasks
        parts = (a[:t], a[t:])
        inner = self.beta[0] * parts[0] + self.beta[1] * parts[1]
        constant = self.alpha[0] * parts[0].sum(axis=0) + self.alpha[1] * parts[1].sum(axis=0)
        out = product(self.m, inner)
        out += constant[None, :]
        return out

    def columns(self, cells: np.ndarray, scale: np.ndarray) -> np.ndarray:
        arm = self._arm(cells)
        out = np.take(self.m, cells - arm * self.n_tasks, axis=1)
        out *= self.beta[arm] * scale
        alpha = self.alpha[arm] * scale
        if alpha.any():
            out += alpha
        return out

    def mean(self) -> np.ndarray:
        m = self.m.mean(axis=0)
        return np.concatenate([self.alpha[k] + self.beta[k] * m for k in (0, 1)])

    def dense(self, rows: np.ndarray) -> np.ndarray:
        m = self.m[rows].astype(float)
        return np.concatenate([self.alpha[k] + self.beta[k] * m for k in (0, 1)], axis=1)


def reference_positions(cumulative: np.ndarray, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions of the quantiles ``q`` in rows of cumulative weights, as the reference formula computes them.

    ``cumulative`` (rows x atoms) is normalised by its last column in place; ``rows`` (increasing) is each
    row's index in its batch, which the reference adds to the row so that one search over the rows laid end
    to end finds every row's position: the same additions give the same rounding.
    """
    n = cumulative.shape[1]
    cumulative /= cumulative[:, -1:]
    cumulative += rows[:, None]
    targets = rows[:, None] + (q - TOL)[None, :]
    index = np.searchsorted(cumulative.ravel(), targets.ravel(), side="left").reshape(targets.shape)
    return np.minimum(index - np.arange(len(rows))[:, None] * n, n - 1)


class Atoms:
    """The sorted atoms of a kernel (its pooled sorted runs, or its distinct levels) seen by cells.

    ``before(i)`` is every cell's weight on atoms ``0..i-1``; ``increments(wt, lo, hi)`` the rows' weights on
    atoms ``lo..hi-1``; ``cumulative(w)`` the reference's cumulative weights of dense rows.
    """

    n: int

    def before(self, i: int) -> np.ndarray:
        raise NotImplementedError

    def increments(self, wt: Weights, lo: int, hi: int) -> np.ndarray:
        raise NotImplementedError

    def cumulative(self, w: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class Runs(Atoms):
    """Atoms that are runs: each has a cell and a weight (``1 / runs in its cell``).

    The weights are given per run (``run_weight``) or, when every run of a cell weighs the same, per cell
    (``cell_weight``, with ``run_weight`` None): each run's weight is then gathered from its cell when
    needed, the very same float, and no array of one float per run is kept.
    """

    def __init__(self, cell: np.ndarray, run_weight: np.ndarray | None, n_cells: int,
                 cell_weight: np.ndarray | None = None):
        if (run_weight is None) == (cell_weight is None):
            raise ValueError("give the weights per run or per cell")
        self.cell, self.n_cells, self.n = cell, n_cells, len(cell)
        self._run_weight, self.cell_weight = run_weight, cell_weight

    def cells(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The cells of runs ``lo..hi-1``."""
        return self.cell[lo:hi]

    def cells_at(self, index: np.ndarray) -> np.ndarray:
        """The cells of the runs at ``index``."""
        return self.cell[index]

    def weights(self, lo: int = 0, hi: int | None = None, cells: np.ndarray | None = None) -> np.ndarray:
        """The weights of runs ``lo..hi-1`` (``cells``: theirs, when already at hand)."""
        if self._run_weight is not None:
            return self._run_weight[lo:hi]
        return self.cell_weight[self.cells(lo, hi) if cells is None else cells]

    @property
    def run_weight(self) -> np.ndarray:
        return self.weights()

    def subset(self, index: np.ndarray) -> Runs:
        """The runs at ``index`` (in that order): their cells read through ``index``, not copied."""
        return _Subset(self, index)

    def before(self, i: int) -> np.ndarray:
        if self._run_weight is not None:
            return cell_sums(self.cells(0, i), self._run_weight[:i], self.n_cells)
        out = np.zeros(self.n_cells)
        for lo in range(0, i, PIECE_RUNS):  # cells and weights a piece at a time (see gathered_sums)
            piece = self.cells(lo, min(i, lo + PIECE_RUNS))
            np.add.at(out, piece, self.cell_weight[piece])
        return out

    def increments(self, wt: Weights, lo: int, hi: int) -> np.ndarray:
        cells = self.cells(lo, hi)
        return wt.columns(cells, self.weights(lo, hi, cells))

    def cumulative(self, w: np.ndarray) -> np.ndarray:
        # With weights per cell, w[r, c] * cell_weight[c] per run is one product per cell, then gathered: the
        # same floats as gathering both first, without two temporaries of one float per run and row.
        cells = self.cells()
        if self._run_weight is None:
            out = (w * self.cell_weight)[:, cells]
        else:
            out = w[:, cells] * self._run_weight
        del cells
        return np.cumsum(out, axis=1, out=out)  # in place: the same sums, one array fewer


class _Subset(Runs):
    """Some runs of a :class:`Runs` (an arm's, in sorted order): cells gathered through ``index`` when read,
    so that an arm's search keeps one index per run rather than its cells as well (the same cells)."""

    def __init__(self, parent: Runs, index: np.ndarray):
        self.parent, self.index = parent, index
        self.n_cells, self.n = parent.n_cells, len(index)
        self.cell_weight = parent.cell_weight
        self._run_weight = None if parent._run_weight is None else parent._run_weight[index]

    @property
    def cell(self) -> np.ndarray:  # type: ignore[override]
        return self.parent.cells_at(self.index)

    def cells(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        return self.parent.cells_at(self.index[lo:hi])

    def cells_at(self, index: np.ndarray) -> np.ndarray:
        return self.parent.cells_at(self.index[index])


class Levels(Atoms):
    """Atoms that are distinct values: ``shares`` (cells x levels) is each cell's weight on each level."""

    def __init__(self, shares: np.ndarray):
        self.shares, self.n = shares, shares.shape[1]

    def before(self, i: int) -> np.ndarray:
        return self.shares[:, :i].sum(axis=1)

    def increments(self, wt: Weights, lo: int, hi: int) -> np.ndarray:
        return wt.dot(np.ascontiguousarray(self.shares[:, lo:hi]))

    def cumulative(self, w: np.ndarray) -> np.ndarray:
        return np.cumsum(w @ self.shares, axis=1)


def _window(atoms: Atoms, wt: Weights, q: np.ndarray, cell_total: np.ndarray) -> tuple[np.ndarray, list]:
    """The rows' totals and, per quantile, the window ``(lo, hi)`` that should hold the rows' quantiles."""
    mean = wt.mean()
    cum = atoms.cumulative(mean[None, :])[0]
    cum /= cum[-1]
    centres = np.minimum(np.searchsorted(cum, q - TOL, side="left"), atoms.n - 1)
    first = wt.dot(np.column_stack([cell_total] + [atoms.before(int(c) + 1) for c in centres]))
    total = first[:, 0]
    windows = []
    for j, c in enumerate(centres):
        with np.errstate(invalid="ignore", divide="ignore"):
            need = (q[j] - TOL) - first[:, 1 + j] / total  # how much more share each row needs past the centre
        need = need[np.isfinite(need)]
        if len(need) == 0:
            windows.append((0, atoms.n))
            continue
        low, high = float(need.min()), float(need.max())
        slack = 0.5 * max(abs(low), abs(high)) + 1e-12
        lo = int(np.searchsorted(cum, cum[c] + low - slack, side="left"))
        hi = int(np.searchsorted(cum, cum[c] + high + slack, side="right")) + 1
        lo = max(0, min(lo, int(c)) - 2)
        hi = min(atoms.n, max(hi, int(c) + 1) + 2)
        windows.append((lo, hi))
    return total, windows


def windowed_positions(atoms: Atoms, wt: Weights, q: np.ndarray, cell_total: np.ndarray,
                       rows: np.ndarray, cache: dict | None = None) -> np.ndarray:
    """Positions (among the atoms) of every row's quantiles ``q``: the reference's, through windows.

    ``cell_total`` is each cell's total weight; ``rows`` each row's index in its batch (for the reference
    formula, see :func:`reference_positions`). ``cache``, when given, keeps the windows for the next batch
    of the same kind of rows, widened to hold the rows that fell outside; it changes the time taken,
    never the result. Returns (rows, len(q)) integer positions.
    """
    if atoms.n < MIN_WINDOWED:
        return _reference(atoms, wt, q, rows, np.arange(wt.n_rows))
    kept = None if cache is None else cache.get("windows")
    if kept is None:
        total, windows = _window(atoms, wt, q, cell_total)
        columns = np.column_stack([cell_total] + [atoms.before(lo) for lo, _ in windows])
        below = wt.dot(columns[:, 1:])
    else:
        windows, columns = kept
        first = wt.dot(columns)
        total, below = first[:, 0], first[:, 1:]
    out = np.empty((wt.n_rows, len(q)), dtype=np.int64)
    redo = np.zeros(wt.n_rows, dtype=bool)
    every = np.arange(wt.n_rows)
    for j, (lo, hi) in enumerate(windows):
        if hi - lo > MAX_WINDOW_SHARE * atoms.n:
            redo[:] = True
            break
        target = q[j] - TOL
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = np.cumsum(atoms.increments(wt, lo, hi), axis=1)
            inside += below[:, j : j + 1]
            inside /= total[:, None]
            start = below[:, j] / total
        k = np.sum(inside < target, axis=1)
        current = inside[every, np.minimum(k, hi - lo - 1)]
        previous = np.where(k > 0, inside[every, np.maximum(k - 1, 0)], start)
        redo |= ~((k < hi - lo) & (previous < target - AMBIGUOUS) & (current >= target + AMBIGUOUS))
        out[:, j] = lo + k
    if redo.any():
        which = np.flatnonzero(redo)
        out[which] = _reference(atoms, wt, q, rows, which)
        if cache is not None:  # widen the kept windows to where this batch's strays fell
            windows, columns = _widened(atoms, windows, columns, out[which])
    if cache is not None:
        cache["windows"] = (windows, columns)
    return out


def _reference(atoms: Atoms, wt: Weights, q: np.ndarray, rows: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The reference formula on rows ``which``, in chunks of at most ``REFERENCE_CELLS`` (rows x atoms)."""
    step = max(1, REFERENCE_CELLS // max(atoms.n, 1))
    return np.concatenate([
        reference_positions(atoms.cumulative(wt.dense(which[i : i + step])), q, rows[which[i : i + step]])
        for i in range(0, len(which), step)
    ]) if len(which) else np.empty((0, len(q)), dtype=np.int64)


def _widened(atoms: Atoms, windows: list, columns: np.ndarray, strays: np.ndarray) -> tuple[list, np.ndarray]:
    """The windows grown to hold the positions ``strays`` (rows x quantiles), with a margin of a tenth."""
    grown, columns = [], columns.copy()
    for j, (lo, hi) in enumerate(windows):
        margin = (max(hi, int(strays[:, j].max()) + 1) - min(lo, int(strays[:, j].min()))) // 10
        new_lo = max(0, min(lo, int(strays[:, j].min()) - margin))
        new_hi = min(atoms.n, max(hi, int(strays[:, j].max()) + 1 + margin))
        if new_lo != lo:
            columns[:, 1 + j] = atoms.before(new_lo)
        grown.append((new_lo, new_hi))
    return grown, columns
