"""What each process of a parallel load reads (internal): parts of a file, chunks of a load's files.

A large JSON Lines file is cut at line boundaries into parts (:func:`plan_parts`, :func:`parts_at`). The files of
a load are cut into contiguous chunks of shrinking weight (:func:`plan_chunks`), which the processes claim one by
one; a large file that can be read in parts may itself be cut there (:func:`plan_pieces`), so that two or three
large files are shared as evenly as many small ones, and the process that starts first is not left alone with a
whole file while the others start.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHUNKS_PER_PROCESS", "COMPRESSED_WEIGHT", "file_weight", "parts_at", "plan_chunks", "plan_parts",
           "plan_pieces", "shrinking"]

_BLOCK = 8 * 2**20
#: A compressed file (gzip, an Inspect ``.eval`` zip) weighs this many times its bytes: it inflates to several times
#: its size.
COMPRESSED_WEIGHT = 8
#: A file (or a load's files) is cut into about this many parts per process, which the processes claim one by one
#: (:func:`agentab.traces._parallel.claim`): whichever is quicker reads more, and the last part is what one process
#: may wait for.
CHUNKS_PER_PROCESS = 6


def plan_parts(path: Path, n: int) -> list[tuple[int, int, int]]:
    """Cut ``path`` into ``n`` ``(start, end, first_line)`` parts of about equal bytes, at line boundaries."""
    size = path.stat().st_size
    return parts_at(path, [int(size * k / n) for k in range(1, n)])


def parts_at(path: Path, cuts: list[int]) -> list[tuple[int, int, int]]:
    """Cut ``path`` near the byte offsets ``cuts`` (ascending), each moved to the start of the next line: the
    ``(start, end, first_line)`` of each part that is not empty, in file order, covering the file."""
    size = path.stat().st_size
    parts: list[tuple[int, int, int]] = []
    with path.open("rb") as fh:
        starts = [0]
        for cut in cuts:  # move each cut to the start of the next line
            fh.seek(max(cut - 1, starts[-1]))
            fh.readline()
            starts.append(min(max(fh.tell(), starts[-1]), size))
        starts.append(size)
        fh.seek(0)
        line, position = 1, 0
        for start, end in zip(starts, starts[1:]):
            while position < start:  # count the newlines before this part
                block = fh.read(min(_BLOCK, start - position))
                line += block.count(b"\n")
                position += len(block)
            if end > start:
                parts.append((start, end, line))
    return parts


def file_weight(path: Path) -> int:
    """A file's bytes, a compressed one's (gzip, an Inspect ``.eval`` zip) counted :data:`COMPRESSED_WEIGHT` times."""
    size = path.stat().st_size
    return size * COMPRESSED_WEIGHT if path.name.lower().endswith((".gz", ".eval")) else size


def shrinking(total: float, processes: int) -> list[float]:
    """Where to cut ``total`` (the inner cuts, as running totals) into chunks for ``processes`` that claim them one
    by one: each chunk takes ``1 / (2 * processes)`` of what is left, and no less than ``total / (4 * processes *``
    :data:`CHUNKS_PER_PROCESS` ``)`` (the last one excepted: what is left). Large chunks first cost few hand-overs;
    small ones last leave a process that finishes early little to wait for (the last chunk is all one process may
    wait for).

    Examples
    --------
    >>> [round(cut, 3) for cut in shrinking(1.0, 2)][:4]
    [0.25, 0.438, 0.578, 0.684]
    >>> len(shrinking(1.0, 2)), len(shrinking(1.0, 1))
    (12, 0)
    """
    if processes < 2 or total <= 0:
        return []
    smallest = _smallest(total, processes)
    cuts, done = [], 0.0
    while total - done > smallest * 1.5:  # the last chunk at most 1.5 times the smallest
        done += max((total - done) / (2 * processes), smallest)
        cuts.append(done)
    return cuts


def _smallest(total: float, processes: int) -> float:
    return total / (4 * processes * CHUNKS_PER_PROCESS)


def plan_chunks(weights: list[int], processes: int) -> list[tuple[int, int]]:
    """Cut files (their weights, in reading order) into contiguous chunks ``[i, j)`` for ``processes`` claiming
    them one by one, of shrinking weight (:func:`shrinking`)."""
    total = sum(weights)
    if processes < 2 or len(weights) < 2 or total <= 0:
        return [(0, len(weights))]
    return _cut(weights, shrinking(total, processes))


def plan_pieces(weights: list[int], divisible: list[bool], processes: int
                ) -> list[tuple[int, int, tuple[float, ...]]]:
    """As :func:`plan_chunks`, but a file that can be read in parts (``divisible``) is cut where the chunks' cuts
    fall inside it: ``(i, j, ())`` is a chunk of whole files ``[i, j)``, ``(i, i + 1, fractions)`` a file to cut
    at those fractions of its bytes, each part a chunk of its own. A cut within half the smallest chunk of a
    file's edge is left out (a file no cut falls in is read whole, with its neighbours).

    Examples
    --------
    >>> [(i, j, [round(f, 2) for f in cuts]) for i, j, cuts in plan_pieces([50, 50], [True, False], 2)]
    [(0, 1, [0.5, 0.88]), (1, 2, [])]
    >>> plan_pieces([1, 1, 1, 1], [False] * 4, 2) == [(i, j, ()) for i, j in plan_chunks([1, 1, 1, 1], 2)]
    True
    """
    total = sum(weights)
    if processes < 2 or total <= 0 or not weights:
        return [(0, len(weights), ())]
    targets, margin = shrinking(total, processes), _smallest(total, processes) / 2
    starts = [0]
    for weight in weights:
        starts.append(starts[-1] + weight)
    fractions = [tuple((t - a) / w for t in targets if a + margin < t < a + w - margin) if split and w > 0 else ()
                 for a, w, split in zip(starts, weights, divisible)]
    out: list[tuple[int, int, tuple[float, ...]]] = []
    i = 0
    while i < len(weights):
        if fractions[i]:
            out.append((i, i + 1, fractions[i]))
            i += 1
            continue
        j = i + 1
        while j < len(weights) and not fractions[j]:
            j += 1
        a, b = starts[i], starts[j]  # a run of files read whole: cut among themselves, as plan_chunks does
        out.extend((i + g, i + h, ()) for g, h in _cut(weights[i:j], [t - a for t in targets if a < t < b]))
        i = j
    return out


def _cut(weights: list[int], targets: list[float]) -> list[tuple[int, int]]:
    """Contiguous groups ``[i, j)`` of ``weights``, cut after the file whose end is nearest each target (a running
    total), at least one file each."""
    cuts, running, i = [0], 0, 0
    for target in targets:
        # the cut after the file whose end is nearest the target (at least one file past the last cut)
        while i < len(weights) and (i < cuts[-1] + 1 or abs(running + weights[i] - target) <= abs(running - target)):
            running += weights[i]
            i += 1
        if i >= len(weights):
            break
        cuts.append(i)
    cuts.append(len(weights))
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
