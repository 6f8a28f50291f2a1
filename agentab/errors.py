"""Typed errors and warnings raised by agentab.

Every error about user input says where the problem is (file, line, field)
and what is wrong, so that a user can fix the input without a debugger. The
CLI turns these into one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import errno

__all__ = [
    "TraceError", "TraceWarning", "SpecError", "SpecWarning", "CompareError", "StatsWarning", "PowerError", "ReportError",
    "HarnessError", "NetworkBlocked", "where",
]


def where(source: str, line: int) -> str:
    """``"runs.jsonl, line 7"``, or ``"<records>, record 7"`` for in-memory records.

    Examples
    --------
    >>> where("runs.jsonl", 7), where("<records>", 2)
    ('runs.jsonl, line 7', '<records>, record 2')
    """
    unit = "record" if source.startswith("<") and source.endswith("records>") else "line"
    return f"{source}, {unit} {line}"


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
        parts = []
        if self.source is not None:
            parts.append(where(self.source, self.line) if self.line is not None else self.source)
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.field:
            parts.append(f"field {self.field}")
        return f"{', '.join(parts)}: {self.reason}" if parts else self.reason


class SpecError(ValueError):
    """A trajectory spec (or a spec file) is invalid."""


class SpecWarning(UserWarning):
    """A spec was accepted, but part of it looks wrong (a typo, a task not in the traces)."""


class TraceWarning(UserWarning):
    """Trace input was accepted, but something about it deserves attention."""


class CompareError(ValueError):
    """A comparison cannot be made as asked (missing arm or column, unknown kind, bad guardrail)."""


class StatsWarning(UserWarning):
    """A statistical result was computed, but rests on something the user should know.

    For example: a confidence interval fell back from BCa to percentile, a tail
    quantile rests on few runs, values were missing, or no p-value below
    ``alpha`` is attainable with so few tasks.
    """


class PowerError(ValueError):
    """A power or sample-size question cannot be answered as asked (bad alpha/power, zero effect, a pilot too small)."""


class ReportError(ValueError):
    """A report cannot be written as asked (unknown format, a path that is not a file, not a comparison)."""


class HarnessError(ValueError):
    """A harness argument (a network mode, a mock server's endpoints, ...) is invalid."""


class NetworkBlocked(ConnectionRefusedError, PermissionError):
    """An outbound connection (or name lookup) refused by a :class:`~agentab.harness.network.NetworkPolicy`.

    Parameters
    ----------
    host : str
        The host (name or address) the agent tried to reach.
    port : int or None
        Its port (None for a name lookup without one).
    """

    def __init__(self, host: str, port: int | None) -> None:
        self.host, self.port = host, port
        where = host if port is None else f"{host}:{port}"
        super().__init__(errno.ECONNREFUSED, f"network blocked: {where} is not on the allow list")

    def __reduce__(self):  # rebuilt from (host, port), not from OSError's (errno, text)
        return (type(self), (self.host, self.port))
