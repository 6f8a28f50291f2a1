"""Tasks and their held-out instances: :class:`Task`, a seeded :class:`Draw` per instance, :class:`Instance`.

A task is a template. ``task.instance(seed)`` draws its randomised parameters (file names, directory
layout, API payload values, initial database rows) from a generator seeded by ``(task_id, seed)`` through
a stable hash (SHA-256, not Python's salted ``hash``), so the same task id and seed give the same instance
on every machine and in every process, and a new seed is a new instance. The fixture, the mock API's
endpoints and the expected terminal state are functions of that instance, so the reference solution's
expectations follow the randomisation.

What each field of :class:`Task` may be
---------------------------------------
``fixture``
    ``None`` (an empty folder), a folder to copy (symlinks copied as links, never followed), a mapping
    ``{relative path: text or bytes}``, or a callable ``fixture(root, instance)`` that writes into the
    empty folder ``root`` (or returns such a mapping, which is then written).
``expected_state``
    ``None`` (no check: the outcome comes from ``env.report``), a mapping, or a callable
    ``expected_state(instance)`` returning one. Its keys: ``files_created``, ``files_modified``,
    ``files_deleted`` (lists of relative paths the run's diff must equal, as sets), ``files``
    (``{path: text, bytes or None}``: the content the file must have at the end, ``None`` for "absent")
    and ``databases`` (``{db path: {table: {"inserted": n, "updated": n, "deleted": n}}}``, the counts
    given must match). The run's outcome is ``True`` when every part given holds.
``endpoints``
    ``None`` (no mock server), or a mapping or a callable ``endpoints(instance)`` returning one, in the
    form :class:`agentab.harness.mock_server.MockServer` takes.
``randomise``
    ``None`` (every seed is the same instance), or a callable ``randomise(draw)`` returning a mapping of
    parameters (``instance.params``); ``draw`` is a :class:`Draw` over the instance's generator.

Examples
--------
>>> task = Task("sum", fixture=lambda root, inst: {inst.params["name"]: f"{inst.params['a']} + 2"},
...             randomise=lambda d: {"name": d.filename(ext=".txt"), "a": d.integer(1, 9)})
>>> task.instance(3).params == task.instance(3).params, task.instance(3).params != task.instance(4).params
(True, True)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Union

import numpy as np

from agentab.errors import HarnessError

__all__ = ["Draw", "Instance", "Task", "instance_rng", "write_database", "STATE_CHECKS"]

#: The keys an ``expected_state`` mapping may have.
STATE_CHECKS = ("files_created", "files_modified", "files_deleted", "files", "databases")

Fixture = Union[None, str, os.PathLike, Mapping[str, Union[str, bytes]], Callable[..., Any]]


def instance_rng(task_id: str | int, seed: int) -> np.random.Generator:
    """The generator of one task instance: ``numpy.random.default_rng`` seeded from SHA-256 of (task_id, seed).

    Examples
    --------
    >>> int(instance_rng("t", 0).integers(1000)) == int(instance_rng("t", 0).integers(1000))
    True
    """
    digest = hashlib.sha256(f"agentab.harness\0{task_id}\0{int(seed)}".encode()).digest()
    return np.random.default_rng(np.random.SeedSequence(int.from_bytes(digest, "big")))


class Draw:
    """Seeded draws for a task instance: names, layouts, values, rows (all from one generator).

    Parameters
    ----------
    rng : numpy.random.Generator
        The instance's generator (:func:`instance_rng`).
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        """A whole number in ``[low, high]`` (both included)."""
        return int(self.rng.integers(low, high + 1))

    def number(self, low: float, high: float, digits: int = 2) -> float:
        """A number in ``[low, high)``, rounded to ``digits`` decimals."""
        return round(float(self.rng.uniform(low, high)), digits)

    def choice(self, options: Sequence[Any]) -> Any:
        """One of ``options``."""
        if not len(options):
            raise HarnessError("choice() needs at least one option")
        return options[int(self.rng.integers(len(options)))]

    def shuffle(self, items: Sequence[Any]) -> list[Any]:
        """A shuffled copy of ``items``."""
        return [items[i] for i in self.rng.permutation(len(items))]

    def word(self, length: int = 6) -> str:
        """Lower-case letters, ``length`` of them."""
        letters = string.ascii_lowercase
        return "".join(letters[i] for i in self.rng.integers(0, len(letters), size=length))

    def filename(self, stem: str | None = None, ext: str = "") -> str:
        """A file name: ``stem_<word>ext`` (``<word>ext`` without a stem)."""
        word = self.word(5)
        return f"{stem}_{word}{ext}" if stem else f"{word}{ext}"

    def layout(self, names: Sequence[str], *, max_depth: int = 2, folders: Sequence[str] | None = None) -> dict[str, str]:
        """A directory layout: each name -> a relative path under 0..``max_depth`` drawn folders.

        ``folders`` are the folder names to draw from (default: drawn words).
        """
        pool = list(folders) if folders else [self.word(4) for _ in range(4)]
        out = {}
        for name in names:
            depth = self.integer(0, max_depth)
            out[name] = str(PurePosixPath(*[self.choice(pool) for _ in range(depth)], name))
        return out

    def rows(self, n: int, **columns: Any) -> list[dict[str, Any]]:
        """``n`` rows: each column a callable of this draw, a sequence to choose from, or a constant.

        A column named ``id`` given as ``None`` numbers the rows 1..n.
        """
        rows = []
        for i in range(n):
            row = {}
            for name, spec in columns.items():
                if spec is None and name == "id":
                    row[name] = i + 1
                elif callable(spec):
                    row[name] = spec(self)
                elif isinstance(spec, Sequence) and not isinstance(spec, (str, bytes)):
                    row[name] = self.choice(spec)
                else:
                    row[name] = spec
            rows.append(row)
        return rows


@dataclass(frozen=True)
class Instance:
    """One randomised instance of a task: its id, seed and parameters (read-only)."""

    task_id: str
    seed: int
    params: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.params[key]


def _check_task_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise TypeError(f"`task_id` must be non-empty text or an integer, got {value!r}")
    if isinstance(value, str) and ("/" in value or "\n" in value):
        raise HarnessError(f"`task_id` {value!r} may not contain '/' or a newline (it is part of the run id)")
    return str(value)


@dataclass(frozen=True)
class Task:
    """A task of the harness: a fixture template, its expected terminal state, mock endpoints, randomisation.

    Parameters
    ----------
    task_id : str or int
        The task's id (stored as text; no ``/``: run ids are ``task/seed/arm``).
    fixture : None, path, mapping or callable
        The sandbox's initial content (see the module docstring).
    expected_state : mapping or callable, optional
        The check of the terminal state that decides the outcome (see the module docstring).
    endpoints : mapping or callable, optional
        The mock API server's endpoints (a server is started per run only when given).
    randomise : callable, optional
        ``randomise(draw) -> mapping``: the instance's parameters.
    """

    task_id: str
    fixture: Fixture = None
    expected_state: Mapping[str, Any] | Callable[[Instance], Mapping[str, Any]] | None = None
    endpoints: Mapping[str, Any] | Callable[[Instance], Any] | None = None
    randomise: Callable[[Draw], Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_id", _check_task_id(self.task_id))
        fixture = self.fixture
        if fixture is not None and not isinstance(fixture, (str, os.PathLike, Mapping)) and not callable(fixture):
            raise TypeError(f"task {self.task_id!r}: `fixture` must be None, a folder, a mapping of path -> "
                            f"content or a callable, got {type(fixture).__name__}")
        if isinstance(fixture, (str, os.PathLike)) and not Path(fixture).is_dir():
            raise HarnessError(f"task {self.task_id!r}: the fixture folder {os.fspath(fixture)!r} does not exist")
        if isinstance(fixture, Mapping):
            for path, content in fixture.items():
                _relative(path, f"task {self.task_id!r}: fixture")
                if not isinstance(content, (str, bytes)):
                    raise TypeError(f"task {self.task_id!r}: fixture[{path!r}] must be text or bytes")
        for name in ("expected_state", "endpoints"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping) and not callable(value):
                raise TypeError(f"task {self.task_id!r}: `{name}` must be a mapping or a callable of the instance, "
                                f"got {type(value).__name__}")
        if isinstance(self.expected_state, Mapping):
            check_expected_state(self.expected_state, self.task_id)
        if self.randomise is not None and not callable(self.randomise):
            raise TypeError(f"task {self.task_id!r}: `randomise` must be a callable of a Draw")

    def instance(self, seed: int) -> Instance:
        """The instance of this task for ``seed``: its parameters drawn from :func:`instance_rng`."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"`seed` must be an integer, got {seed!r}")
        params: Mapping[str, Any] = {}
        if self.randomise is not None:
            params = self.randomise(Draw(instance_rng(self.task_id, int(seed))))
            if not isinstance(params, Mapping):
                raise TypeError(f"task {self.task_id!r}: `randomise` must return a mapping, got {type(params).__name__}")
        return Instance(self.task_id, int(seed), MappingProxyType(dict(params)))

    def expected(self, instance: Instance) -> Mapping[str, Any] | None:
        """The expected terminal state of ``instance`` (``None`` without one), checked."""
        value = self.expected_state(instance) if callable(self.expected_state) else self.expected_state
        return None if value is None else check_expected_state(value, self.task_id)

    def endpoints_of(self, instance: Instance) -> Any:
        """The mock endpoints of ``instance`` (``None`` without any)."""
        return self.endpoints(instance) if callable(self.endpoints) else self.endpoints

    def build(self, root: str | os.PathLike[str], instance: Instance) -> Path:
        """Write the fixture of ``instance`` into the (empty or missing) folder ``root``."""
        root = Path(root)
        fixture = self.fixture
        if isinstance(fixture, (str, os.PathLike)):
            shutil.copytree(fixture, root, symlinks=True, dirs_exist_ok=True)
            return root
        root.mkdir(parents=True, exist_ok=True)
        if callable(fixture):
            fixture = fixture(root, instance)
        if isinstance(fixture, Mapping):
            write_files(root, fixture, f"task {self.task_id!r}: fixture")
        elif fixture is not None:
            raise TypeError(f"task {self.task_id!r}: a fixture callable must write into its folder and return None "
                            f"or a mapping of path -> content, got {type(fixture).__name__}")
        return root


def _relative(path: Any, where: str) -> PurePosixPath:
    pure = PurePosixPath(str(path))
    if not str(path) or pure.is_absolute() or ".." in pure.parts:
        raise HarnessError(f"{where}: {path!r} must be a relative path inside the sandbox (no '..')")
    return pure


def write_files(root: Path, files: Mapping[str, str | bytes], where: str = "files") -> None:
    """Write ``{relative path: text or bytes}`` under ``root`` (folders made as needed)."""
    for path, content in files.items():
        target = root / _relative(path, where)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            raise TypeError(f"{where}[{path!r}] must be text or bytes, got {type(content).__name__}")


def check_expected_state(value: Any, task_id: str = "?") -> Mapping[str, Any]:
    """``value`` if it is a valid ``expected_state`` mapping (keys :data:`STATE_CHECKS`), else a TypeError/ValueError."""
    if not isinstance(value, Mapping):
        raise TypeError(f"task {task_id!r}: `expected_state` must be a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - set(STATE_CHECKS))
    if unknown:
        raise HarnessError(f"task {task_id!r}: `expected_state` has unknown keys {unknown}; known: {', '.join(STATE_CHECKS)}")
    for key in ("files_created", "files_modified", "files_deleted"):
        if key in value and (isinstance(value[key], (str, bytes)) or not isinstance(value[key], Sequence)):
            raise TypeError(f"task {task_id!r}: `expected_state[{key!r}]` must be a list of paths")
    for key in ("files", "databases"):
        if key in value and not isinstance(value[key], Mapping):
            raise TypeError(f"task {task_id!r}: `expected_state[{key!r}]` must be a mapping")
    return value


def write_database(path: str | os.PathLike[str], tables: Mapping[str, Sequence[Mapping[str, Any]]], *,
                   primary_keys: Mapping[str, str | Sequence[str]] | None = None) -> Path:
    """Create a SQLite database with one table per entry of ``tables`` (rows as dicts; columns from the first row).

    ``primary_keys`` names each table's key column(s); a table without one is keyed by its rowid.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = dict(primary_keys or {})
    with sqlite3.connect(path) as db:
        for table, rows in tables.items():
            if not rows:
                raise HarnessError(f"write_database: table {table!r} needs at least one row (its columns)")
            columns = list(rows[0])
            key = keys.get(table)
            key_cols = [key] if isinstance(key, str) else list(key or [])
            names = ", ".join(_quote(c) for c in columns)
            pk = f", PRIMARY KEY ({', '.join(_quote(c) for c in key_cols)})" if key_cols else ""
            db.execute(f"CREATE TABLE {_quote(table)} ({names}{pk})")
            marks = ", ".join("?" for _ in columns)
            db.executemany(f"INSERT INTO {_quote(table)} ({names}) VALUES ({marks})",
                           [tuple(row[c] for c in columns) for row in rows])
    db.close()
    return path


def _quote(name: str) -> str:
    """A SQL identifier, double-quoted."""
    return '"' + str(name).replace('"', '""') + '"'
