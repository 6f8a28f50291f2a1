"""Atomic writes: every file and folder agentab writes appears whole or not at all.

A file is written to a temporary sibling (same folder, so the same file system) and renamed into place
with :func:`os.replace`; a folder (a Parquet store) is built as a temporary sibling folder and swapped
into place. A process killed at any moment leaves the previous output or the new one, never a mixture
or an empty file. The temporary sibling is removed on every exit path; a kill cannot remove it, so its
name carries the writer's host and process id (``.agentab-tmp-<host>-<pid>-...``) and the next write into
the same folder removes the leftovers of processes on this host that are no longer running
(:func:`sweep_stale`). Renaming never follows a symlink: a symlink at the target is replaced by the new
file, not written through.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["FORMULA_LEADS", "TEMP_PREFIX", "atomic_bytes", "atomic_file", "atomic_folder", "atomic_text", "csv_safe",
           "owned_prefix", "sweep_stale", "write_table"]

#: The name prefix of every temporary sibling agentab writes.
TEMP_PREFIX = ".agentab-tmp-"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:40] or "host"


def owned_prefix(prefix: str = TEMP_PREFIX) -> str:
    """``prefix`` with this host and process id, so a leftover can be told from a temporary still in use."""
    return f"{prefix}{_host()}-{os.getpid()}-"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists (e.g. another user's process): not ours to judge
        return True
    return True


def sweep_stale(folder: str | os.PathLike[str], prefix: str = TEMP_PREFIX) -> int:
    """Remove the temporaries in ``folder`` left by killed agentab processes of this host; how many went.

    Only names of the form ``<prefix><host>-<pid>-...`` whose host is this one and whose process is gone
    are removed, never anything else (a live writer, another machine's files on a shared disk, user files).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / f"{TEMP_PREFIX}{_host()}-999999999-x.part").write_text("left by a kill")
    >>> _ = (folder / f"{owned_prefix()}y.part").write_text("mine, still writing")
    >>> _ = (folder / "report.html").write_text("the user's")
    >>> sweep_stale(folder), sorted(p.name.split("-")[0] for p in folder.iterdir())
    (1, ['.agentab', 'report.html'])
    """
    pattern = re.compile(re.escape(f"{prefix}{_host()}-") + r"(\d+)-")
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or _running(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
            removed += 1
    return removed


def _fsync(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "wb", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; on a clean exit it replaces ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(path)
    sweep_stale(target.parent)
    fd, temp = tempfile.mkstemp(prefix=owned_prefix(), suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            _fsync(handle.fileno())
        with contextlib.suppress(OSError):  # mkstemp makes the file 0600: give it the usual mode
            os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def atomic_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_file(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def atomic_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_file(path, "w", encoding=encoding, newline="") as handle:
        handle.write(text)
    return Path(path)


def _exchange() -> Any:
    """``renameat2(..., RENAME_EXCHANGE)`` of Linux's C library (one atomic swap of two names), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _swap(new: Path, target: Path) -> Path | None:
    """Put folder ``new`` at ``target``; returns where the old ``target`` went (to delete), or None."""
    if not target.exists() and not target.is_symlink():
        os.rename(new, target)
        return None
    if target.is_symlink() or not target.is_dir():
        raise NotADirectoryError(20, "not a folder", str(target))
    exchange = _exchange()
    if exchange is not None and exchange(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(target),
                                         _RENAME_EXCHANGE) == 0:
        return new  # the names are swapped: `new` now holds the old folder
    # No atomic exchange here: two renames (a kill between them leaves the old folder at `old`).
    old = Path(tempfile.mkdtemp(prefix=owned_prefix(), dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    os.rename(new, target)
    return old


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary sibling folder to fill; on a clean exit it takes the place of ``path`` (a folder).

    On an exception it is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target.parent)
    temp = Path(tempfile.mkdtemp(prefix=owned_prefix(), dir=target.parent))
    try:
        yield temp
        for child in temp.iterdir():
            with contextlib.suppress(OSError):
                fd = os.open(child, os.O_RDONLY)
                _fsync(fd)
                os.close(fd)
        os.chmod(temp, 0o777 & ~_umask())
        old = _swap(temp, target)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


#: The first characters that make a spreadsheet read a CSV cell as a formula.
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def _defused(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_LEADS) else value


def csv_safe(frame: Any) -> Any:
    """A copy of a DataFrame whose text cells (and column names) cannot start a spreadsheet formula.

    A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
    ``'`` (OWASP's advice against CSV injection); numbers are untouched (``-1.5`` stays a number).
    """
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            out[column] = values.cat.rename_categories([_defused(c) for c in values.cat.categories])
        elif values.dtype == object or isinstance(values.dtype, pd.StringDtype):
            out[column] = values.map(_defused, na_action="ignore")
    out.columns = [_defused(c) for c in out.columns]
    return out


def write_table(frame: Any, path: str | os.PathLike[str], *, raw_csv: bool = False) -> Path:
    """Write a DataFrame atomically as Parquet (by suffix) or CSV (formula-leading cells neutralised unless ``raw_csv``)."""
    target = Path(path)
    if target.suffix.lower() == ".parquet":
        with atomic_file(target, "wb") as handle:
            frame.to_parquet(handle, index=False)
    else:
        shown = frame if raw_csv else csv_safe(frame)
        with atomic_file(target, "w", encoding="utf-8", newline="") as handle:
            shown.to_csv(handle, index=False)
    return target
