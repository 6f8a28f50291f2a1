"""Run-level fields from outside the trace file: its path (``fields={"path": ...}``) and a results table
(``outcomes=``), applied to a reader's runs before they are validated.

Real evaluations keep a run's identity in the folder layout (``<task>/<seed>/trajectory.json``) and its verdict in
a separate results file (SWE-bench's ``report.json``, a CSV of rewards). A reader leaves the required fields its
file lacks out of the record and says so in :attr:`agentab.formats.Item.missing`; :class:`Overlay` fills them from
the path template and the outcomes table, and turns a run that nothing fills into the rejection the reader gave.

Rules (documented on :func:`agentab.load_traces`):

- A path template's values replace the reader's (the user's mapping wins, as with every ``fields`` entry). A run
  whose file path does not match the template is rejected.
- An outcomes row replaces the file's outcome (the file's own is kept as ``metadata.outcome_in_file``); a run no
  row matches keeps the outcome its file has, else is rejected naming the key it was looked up by. Rows that
  match no run are listed in ``Traces.unmatched_outcomes``.
- A table without a ``seed`` column matches runs by task alone: a task with more than one run is an error (one
  verdict cannot belong to several runs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentab.formats import Item, settle
from agentab.formats.decode import Prepared

if TYPE_CHECKING:  # the outcomes table imports pandas; a loader worker reads files without it
    from agentab.traces._outcomes import OutcomeTable

__all__ = ["PATH_FIELDS", "Overlay", "PathTemplate"]

#: The run-level fields a path template may capture.
PATH_FIELDS = ("run_id", "task_id", "seed", "arm", "model", "harness")
_NAME = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class PathTemplate:
    """A file-path template: ``{name}`` captures one path part as a run-level field; ``*``, ``?`` and ``**``
    match as in globs (``**``: any number of folders).

    Matched against a file's path relative to the folder given as the source, or, for a file given directly,
    against the end of its path.

    Examples
    --------
    >>> template = PathTemplate.compile("{task_id}/{seed}/*.json")
    >>> template.values("fix-bug/3/trajectory.json", anchored=True)
    {'task_id': 'fix-bug', 'seed': 3}
    >>> template.values("runs/fix-bug/3/trajectory.json", anchored=False)
    {'task_id': 'fix-bug', 'seed': 3}
    >>> template.values("fix-bug/trajectory.json", anchored=True) is None
    True
    """

    text: str
    pattern: str
    names: tuple[str, ...]

    @classmethod
    def compile(cls, text: str) -> PathTemplate:
        """Check and compile a template (a ValueError says what is wrong with it)."""
        if not isinstance(text, str) or not text.strip("/"):
            raise ValueError(f"`fields['path']` must be a path template such as '{{task_id}}/{{seed}}/*', got {text!r}")
        out, names, position = [], [], 0
        for match in _NAME.finditer(text):
            out.append(_glob(text[position:match.start()]))
            name = match.group(1)
            if name not in PATH_FIELDS:
                raise ValueError(f"`fields['path']` = {text!r}: {{{name}}} is not a field a path can give; "
                                 f"known: {', '.join(PATH_FIELDS)}")
            out.append(f"(?P={name})" if name in names else f"(?P<{name}>[^/]+)")
            if name not in names:
                names.append(name)
            position = match.end()
        rest = text[position:]
        if "{" in rest or "}" in rest or any("{" in part or "}" in part for part in _NAME.split(text)[::2]):
            raise ValueError(f"`fields['path']` = {text!r}: unbalanced braces (a field is written {{task_id}})")
        out.append(_glob(rest))
        if not names:
            raise ValueError(f"`fields['path']` = {text!r} captures no field: name one, e.g. {{task_id}}")
        return cls(text=text, pattern="".join(out).lstrip("/"), names=tuple(names))

    def values(self, relative: str, *, anchored: bool) -> dict[str, Any] | None:
        """The captured fields of a path (``/``-separated), or None when it does not match.

        A ``seed`` must be a whole number: a ValueError otherwise (the caller rejects the run with it).
        """
        regex = ("^" if anchored else r"(?:^|.*/)") + self.pattern + "$"
        match = re.match(regex, relative, flags=re.DOTALL)
        if match is None:
            return None
        found: dict[str, Any] = {name: match.group(name) for name in self.names}
        if "seed" in found:
            text = found["seed"]
            if not re.fullmatch(r"[+-]?\d{1,18}", text):
                raise ValueError(f"the path part {{seed}} is {text!r}, not a whole number")
            found["seed"] = int(text)
        return found


def _glob(text: str) -> str:
    """A glob fragment as a regular expression (``**`` any folders, ``*`` and ``?`` within one part)."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
        elif text.startswith("**", i):
            out.append(r".*")
            i += 2
        elif text[i] == "*":
            out.append(r"[^/]*")
            i += 1
        elif text[i] == "?":
            out.append(r"[^/]")
            i += 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    return "".join(out)


@dataclass
class Overlay:
    """Fills run-level fields from each file's path and from an outcomes table, run by run (see the module)."""

    template: PathTemplate | None = None
    table: OutcomeTable | None = None
    _paths: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.template is not None or self.table is not None

    def apply(self, items: Iterable[Item], path: Path | None, root: Path | None) -> Iterator[Item]:
        """The items of one file (``path``; None for records in memory) with the fields filled or rejected."""
        if not self.active:
            yield from map(settle, items)
            return
        from_path = self._from_path(path, root) if self.template is not None else {}
        for item in items:
            if item.record is None:
                yield item
            elif isinstance(from_path, str):  # the path does not fit the template: the reason
                yield Item(item.line, field="path", reason=from_path, source=item.source, run_id=_run_id(item.record))
            else:
                yield self._fill(item, from_path)

    def finish(self) -> Any:
        """The outcomes rows no run matched (None without a table); a seedless row matched twice is an error."""
        return None if self.table is None else self.table.unmatched()

    def _from_path(self, path: Path | None, root: Path | None) -> dict[str, Any] | str:
        assert self.template is not None
        if path is None:
            return f"records given in memory have no path for fields['path'] = {self.template.text!r}"
        key = str(path)
        if key not in self._paths:
            relative = path.relative_to(root).as_posix() if root is not None else path.as_posix()
            try:
                found = self.template.values(relative, anchored=root is not None)
            except ValueError as err:
                found = f"{err} (fields['path'] = {self.template.text!r})"
            if found is None:
                where = "relative to the source folder" if root is not None else "at its end"
                found = f"the file's path {relative!r} does not match fields['path'] = {self.template.text!r} ({where})"
            self._paths[key] = found
        return self._paths[key]

    def _fill(self, item: Item, from_path: Mapping[str, Any]) -> Item:
        record = item.record
        values = dict(from_path)
        missing = dict(item.missing or {})
        if self.table is not None:
            identity = _identity(record) | {k: v for k, v in values.items() if k in ("run_id", "task_id", "seed")}
            found = self.table.lookup(identity)
            if found.reason is not None:  # a blank verdict, or an evaluation the table says failed
                return Item(item.line, field=found.field, reason=found.reason, source=item.source,
                            run_id=_run_id(record))
            if found.matched:
                old = None if "outcome" in missing else _get(record, "outcome")
                values["outcome"] = found.value
                if old is not None and old != found.value:
                    values["outcome_in_file"] = old
            elif "outcome" in missing:
                where, reason = missing["outcome"]
                return Item(item.line, field=where, reason=f"{reason}; and {found.no_match}", source=item.source,
                            run_id=_run_id(record))
        for key in values:
            missing.pop(key, None)
        if missing:
            return settle(Item(item.line, record=record, source=item.source, missing=missing, run_id=_run_id(record)))
        meta = _get(record, "metadata")
        if meta is not None and not isinstance(meta, dict) and any(k in values for k in _IN_METADATA):
            return Item(item.line, field="metadata", reason="metadata must be an object", source=item.source,
                        run_id=_run_id(record))
        return Item(item.line, record=_set(record, values), source=item.source)


def _run_id(record: Any) -> str | None:
    """The run id a record has so far (a rejection names it), as text, or None."""
    value = _get(record, "run_id")
    return None if value is None else str(value)


def _identity(record: Any) -> dict[str, Any]:
    return {key: _get(record, key) for key in ("run_id", "task_id", "seed")}


def _get(record: Any, key: str) -> Any:
    if isinstance(record, Prepared):
        return getattr(record, key)
    return record.get(key)


#: Fields a path or table sets that live in the record's metadata.
_IN_METADATA = ("model", "harness", "outcome_in_file")


def _set(record: Any, values: Mapping[str, Any]) -> Any:
    """The record with ``values`` set (a Prepared is replaced; a dict, the reader's own, is changed in place)."""
    if not values:
        return record
    top = {k: v for k, v in values.items() if k not in _IN_METADATA}
    meta = {k: v for k, v in values.items() if k in _IN_METADATA}
    if isinstance(record, Prepared):
        if meta:
            top["metadata"] = {**(record.metadata or {}), **meta}
        if "task_id" in top:
            top["task_id"] = str(top["task_id"])
        return record._replace(**top)
    record.update(top)
    if meta:
        record["metadata"] = {**(record.get("metadata") or {}), **meta}
    return record
