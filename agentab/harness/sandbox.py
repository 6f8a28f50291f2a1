"""A fresh folder per run, its snapshots and their diff, SQLite row changes, and the write guard.

The terminal state
------------------
:func:`snapshot` maps each file and symbolic link under the sandbox (relative POSIX path) to its kind,
SHA-256 of its content (of the link's target text for a link: links are recorded as links, never
followed), size and permission bits. :func:`diff` of two snapshots gives ``files_created``,
``files_modified`` (content, mode or kind changed) and ``files_deleted``, sorted. Folders are not entries:
an empty folder made or removed is not seen.

For each SQLite database (a file starting with SQLite's 16-byte header) :func:`database_changes` counts
rows inserted, updated and deleted per table between the two states, keyed by the table's primary key,
or by ``rowid`` for a table without one (so a ``VACUUM``, which may renumber rowids, can show as changes;
``INSERT OR REPLACE`` is a delete plus an insert). Databases are read from copies (with their ``-wal``
file) taken outside the sandbox, so reading them never writes into it.

Containment of in-process agents
--------------------------------
:class:`WriteGuard` is an audit hook (:func:`sys.addaudithook`) installed in the run's worker process
(hooks cannot be removed, so never in the caller's process). While a run is active it refuses, with a
``PermissionError``, every Python-level write outside the sandbox and the run's temporary folder: opening a
file for writing (``open``, ``os.open``), ``os.remove``/``unlink``, ``rename``/``replace``, ``mkdir``,
``rmdir``, ``link``, ``symlink`` (where the link is made), ``truncate``, ``chmod``, ``chown``, ``utime``,
``shutil.rmtree``/``copyfile``/``copytree`` and ``sqlite3.connect`` to a database file. Paths are resolved
with symlinks followed (``realpath``), so ``../x`` and a link pointing out are both refused. Each refusal is
recorded. Reading outside the sandbox is allowed (the agent imports its libraries). Not contained: C
extensions and ``ctypes`` calls that write without Python's audit events, and subprocesses the agent
starts itself (recorded as ``subprocesses``, not refused): run command agents through
:func:`agentab.harness.network.sandbox_command` instead.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Entry", "WriteGuard", "database_changes", "diff", "is_sqlite", "snapshot", "copy_databases"]

SQLITE_HEADER = b"SQLite format 3\x00"
_CHUNK = 1 << 20

#: An entry of a snapshot: (kind, sha256 hex or None, size, permission bits). Kinds: file, sqlite (a file with
#: SQLite's header), link, other.
Entry = tuple[str, Any, int, int]


def _digest(path: str) -> tuple[str, bool]:
    """SHA-256 of the file, and whether it starts with SQLite's header (read once, for both)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        first = chunk = f.read(_CHUNK)
        while chunk:
            h.update(chunk)
            chunk = f.read(_CHUNK)
    return h.hexdigest(), first[:16] == SQLITE_HEADER


def snapshot(root: str | os.PathLike[str], exclude: Iterable[str] = ()) -> dict[str, Entry]:
    """Every file and link under ``root``: relative POSIX path -> (kind, sha256, size, mode); links not followed.

    Kinds: ``file``, ``sqlite`` (a file starting with SQLite's header), ``link`` (the hash is of its target's
    text), ``other`` (FIFOs, sockets, devices: never opened).

    ``exclude`` names top-level entries to leave out.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); _ = (root / "a.txt").write_text("hi")
    >>> snapshot(root)["a.txt"][0], snapshot(root)["a.txt"][2]
    ('file', 2)
    """
    out: dict[str, Entry] = {}
    skip = set(exclude)
    stack = [(os.fspath(root), "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if not prefix and entry.name in skip:
                    continue
                rel = prefix + entry.name
                info = entry.stat(follow_symlinks=False)
                mode = stat.S_IMODE(info.st_mode)
                if stat.S_ISLNK(info.st_mode):
                    target = os.readlink(entry.path)
                    out[rel] = ("link", hashlib.sha256(os.fsencode(target)).hexdigest(), len(target), mode)
                elif stat.S_ISDIR(info.st_mode):
                    stack.append((entry.path, rel + "/"))
                elif stat.S_ISREG(info.st_mode):
                    digest, database = _digest(entry.path)
                    out[rel] = ("sqlite" if database else "file", digest, info.st_size, mode)
                else:  # FIFOs, sockets, devices: never opened
                    out[rel] = ("other", None, 0, mode)
    return out


def diff(before: Mapping[str, Entry], after: Mapping[str, Entry]) -> dict[str, list[str]]:
    """``files_created``, ``files_modified`` (kind, content or mode changed) and ``files_deleted``, sorted."""
    return {
        "files_created": sorted(set(after) - set(before)),
        "files_modified": sorted(p for p in set(after) & set(before) if tuple(after[p]) != tuple(before[p])),
        "files_deleted": sorted(set(before) - set(after)),
    }


def is_sqlite(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file starting with SQLite's header (links are not followed)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(16) == SQLITE_HEADER
    except OSError:
        return False


def copy_databases(root: str | os.PathLike[str], entries: Mapping[str, Entry], into: str | os.PathLike[str]) -> list[str]:
    """Copy every SQLite database of a snapshot (with its ``-wal``) from ``root`` into ``into``; their paths."""
    found = []
    for rel, (kind, *_rest) in sorted(entries.items()):
        source = os.path.join(root, rel)
        if kind != "sqlite" or rel.endswith(("-wal", "-shm", "-journal")) or not is_sqlite(source):
            continue
        target = os.path.join(into, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
        if os.path.isfile(source + "-wal") and not os.path.islink(source + "-wal"):
            shutil.copyfile(source + "-wal", target + "-wal")
        found.append(rel)
    return found


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table_rows(db: sqlite3.Connection) -> dict[str, dict[Any, tuple]]:
    """table -> {key: row} (key: the primary key's values, or rowid)."""
    out = {}
    tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()
    for (table,) in tables:
        info = db.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
        columns = [row[1] for row in info]
        keys = [row[1] for row in sorted(info, key=lambda r: r[5]) if row[5] > 0]
        names = ", ".join(_quote(c) for c in columns)
        if keys:
            rows = db.execute(f"SELECT {names} FROM {_quote(table)}").fetchall()
            at = [columns.index(k) for k in keys]
            out[table] = {tuple(r[i] for i in at): tuple(r) for r in rows}
        else:
            rows = db.execute(f"SELECT rowid, {names} FROM {_quote(table)}").fetchall()
            out[table] = {r[0]: tuple(r[1:]) for r in rows}
    return out


def _read(path: str | None) -> dict[str, dict[Any, tuple]]:
    if path is None or not os.path.exists(path):
        return {}
    db = sqlite3.connect(path)
    try:
        return _table_rows(db)
    except sqlite3.DatabaseError:
        return {}
    finally:
        db.close()


def database_changes(before: str | None, after: str | None) -> dict[str, dict[str, int]]:
    """Rows inserted, updated and deleted per table between two copies of a database (either may be missing).

    Only tables with a change are listed; a table that appeared counts all its rows as inserted.
    """
    old, new = _read(before), _read(after)
    out = {}
    for table in sorted(set(old) | set(new)):
        a, b = old.get(table, {}), new.get(table, {})
        counts = {"inserted": sum(1 for k in b if k not in a), "updated": sum(1 for k in b if k in a and a[k] != b[k]),
                  "deleted": sum(1 for k in a if k not in b)}
        if any(counts.values()):
            out[table] = counts
    return out


def databases_diff(root: str, before_copies: str, before_entries: Mapping[str, Entry],
                   after_entries: Mapping[str, Entry]) -> dict[str, dict[str, dict[str, int]]]:
    """``databases``: every SQLite file before or after -> its per-table row changes (databases unchanged left out)."""
    with tempfile.TemporaryDirectory(prefix="agentab-db-") as scratch:
        changed = {rel: e for rel, e in after_entries.items() if before_entries.get(rel) != e}  # no copy of the rest
        after_dbs = copy_databases(root, changed, scratch)
        before_dbs = [rel for rel in before_entries if os.path.exists(os.path.join(before_copies, rel))]
        out = {}
        for rel in sorted(set(after_dbs) | set(before_dbs)):
            if rel in before_entries and rel in after_entries and before_entries[rel] == after_entries[rel]:
                continue
            old = os.path.join(before_copies, rel) if rel in before_dbs else None
            new = os.path.join(scratch, rel) if rel in after_dbs else None
            changes = database_changes(old, new)
            if changes:
                out[rel] = changes
        return out


#: Audit events that write to a path: event -> positions of the path arguments (and of their dir_fd).
_WRITE_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.rename": ((0, 2), (1, 3)),
    "os.link": ((1, 3),), "os.symlink": ((1, 2),), "os.truncate": ((0, None),), "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),), "os.utime": ((0, 3),), "shutil.rmtree": ((0, 1),), "shutil.copyfile": ((1, None),),
    "shutil.copytree": ((1, None),), "os.mkfifo": ((0, 2),), "os.mknod": ((0, 3),), "os.setxattr": ((0, None),),
    "os.removexattr": ((0, None),),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_SPAWN_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn")


class WriteGuard:
    """An audit hook refusing writes outside ``roots`` while :attr:`active` (see the module docstring).

    Parameters
    ----------
    roots : iterable of path
        The folders writes may go to (the sandbox, the run's temporary folder). ``/dev/null`` is allowed too.
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        self.roots = [os.path.realpath(r) for r in roots]
        self.active = False
        self.refused: list[dict[str, str]] = []
        self.subprocesses: list[str] = []

    def install(self) -> WriteGuard:
        """Add the hook to this process (for good: call it only in a worker process)."""
        sys.addaudithook(self)
        return self

    def _inside(self, path: Any, dir_fd: Any = None) -> bool | None:
        if isinstance(path, int) or path is None:
            return None  # a file descriptor: already open
        try:
            text = os.fsdecode(path)
        except TypeError:
            return None
        if text == os.devnull:
            return True
        try:
            if not os.path.isabs(text):
                at_fd = isinstance(dir_fd, int) and not isinstance(dir_fd, bool) and dir_fd >= 0
                text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}") if at_fd else os.getcwd(), text)
            real = os.path.realpath(text)
        except (OSError, ValueError):  # cannot tell where it goes: refused
            return False
        return any(real == root or real.startswith(root + os.sep) for root in self.roots)

    def _refuse(self, event: str, path: Any) -> None:
        shown = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else repr(path)
        self.refused.append({"event": event, "path": shown})
        raise PermissionError(errno.EACCES, f"agentab sandbox: {event} outside the sandbox is refused", shown)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event == "open":
            path, _mode, flags = (tuple(args) + (None, None, None))[:3]
            if isinstance(flags, int) and flags & _WRITE_FLAGS and self._inside(path) is False:
                self._refuse("open for writing", path)
        elif event in _WRITE_EVENTS:
            for at, fd_at in _WRITE_EVENTS[event]:
                dir_fd = args[fd_at] if fd_at is not None and fd_at < len(args) else None
                if at < len(args) and self._inside(args[at], dir_fd) is False:
                    self._refuse(event, args[at])
        elif event == "sqlite3.connect":
            self._sqlite(args[0] if args else None)
        elif event in _SPAWN_EVENTS or event.startswith("os.exec"):
            self.subprocesses.append(f"{event}: {' '.join(map(str, args[:2]))[:300]}")

    def _sqlite(self, database: Any) -> None:
        text = os.fsdecode(database) if isinstance(database, (str, bytes, os.PathLike)) else ""
        if text in ("", ":memory:") or text.startswith("file::memory:"):
            return
        if text.startswith("file:"):
            text = text[5:].split("?", 1)[0]
        if self._inside(text) is False:
            self._refuse("sqlite3.connect", database)
