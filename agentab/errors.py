"""Typed errors and warnings raised by agentab.

Every error about user input says where the problem is (file, line, field)
and what is wrong, so that a user can fix the input without a debugger. The
CLI turns these into one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

__all__ = ["TraceError", "TraceWarning"]


class TraceError(ValueError):
    """A trace record, or a whole trace source, is invalid.

    Parameters
    ----------
    reason : str
        What is wrong, in words a user can act on.
    source : str, optional
        The file (or ``"<records>"`` for in-memory records) the problem is in.
    line : int, optional
        1-based line of the record in a file, or 1-based position of the
        record in an in-memory list.
    field : str, optional
        Path of the offending field inside the record, e.g.
        ``"steps[2].tokens_in"``.

    Examples
    --------
    >>> err = TraceError("expected int >= 0, got -5", source="runs.jsonl",
    ...                  line=7, field="steps[2].tokens_in")
    >>> print(err)
    runs.jsonl, line 7, field steps[2].tokens_in: expected int >= 0, got -5
    >>> isinstance(err, ValueError)
    True
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.source is not None:
            where.append(self.source)
        if self.line is not None:
            unit = "record" if self.source == "<records>" else "line"
            where.append(f"{unit} {self.line}")
        if self.field:
            where.append(f"field {self.field}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class TraceWarning(UserWarning):
    """Trace input was accepted, but something about it deserves attention."""
