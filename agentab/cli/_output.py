"""What the ``agentab`` command gives back: text on stdout, one-line messages on stderr, exit codes.

Every line the command writes goes through :func:`clean` first: terminal escape sequences and
other control characters (file names, record fields and reasons come from the user's data) are
stripped, so no output can move the cursor, recolour or retitle the terminal. Newlines and tabs
stay. Progress bars (tqdm) go to stderr, only when stderr is a terminal and never with ``--quiet``.

Exit codes
----------
0 (:data:`EXIT_OK`)
    success (whatever the verdict, unless ``--fail-on`` says otherwise);
1 (:data:`EXIT_INTERNAL`)
    an internal error (a bug: ``--debug`` shows the traceback);
2 (:data:`EXIT_BAD_INPUT`)
    bad input: one line on stderr naming the file (line, field) and the problem;
3 (:data:`EXIT_DONT_SHIP`)
    ``agentab compare --fail-on dont-ship`` (or ``inconclusive``): the verdict is "don't ship";
4 (:data:`EXIT_INCONCLUSIVE`)
    ``agentab compare --fail-on inconclusive``: the verdict is "inconclusive".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd

import agentab
from agentab.errors import where

__all__ = ["EXIT_BAD_INPUT", "EXIT_DONT_SHIP", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK",
           "FAIL_ON", "Progress", "clean", "error", "exit_code", "note", "print_rejected", "say", "say_result",
           "show_warning"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_DONT_SHIP = 3
EXIT_INCONCLUSIVE = 4
#: Exit code of ``agentab`` interrupted (Ctrl-C), as a shell reports a SIGINT.
EXIT_INTERRUPTED = 130

#: ``--fail-on`` -> {verdict: exit code}: which verdicts fail a CI job.
FAIL_ON = {
    "dont-ship": {"don't ship": EXIT_DONT_SHIP},
    "inconclusive": {"don't ship": EXIT_DONT_SHIP, "inconclusive": EXIT_INCONCLUSIVE},
}

#: ANSI escape sequences (CSI, OSC, and two-character escapes), then any other control character
#: but newline and tab (C0, DEL, C1).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (newlines and tabs stay).

    Examples
    --------
    >>> clean("runs/\\x1b[31mred\\x1b[0m.jsonl: no such file\\a")
    'runs/red.jsonl: no such file'
    """
    return _ESCAPES.sub("", text)


def say(text: object = "", file: Any = None) -> None:
    """Print ``text`` (cleaned) to stdout, or to ``file``."""
    print(clean(str(text)), file=sys.stdout if file is None else file)


def say_result(text: str) -> None:
    """Print the result on stdout; when its reader has gone (``| head``), the rest is sent nowhere, and work goes on."""
    try:
        say(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `agentab compare ... | head`: the report and the exit code still follow
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def note(args: argparse.Namespace, text: str) -> None:
    """A note on stderr about a choice made on the user's behalf (silent under --quiet)."""
    if not getattr(args, "quiet", False):
        say(f"agentab: note: {text}", file=sys.stderr)


def error(text: str) -> None:
    """The one line of an error on stderr: ``agentab: <text>``."""
    say(f"agentab: {text}", file=sys.stderr)


def show_warning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
    """``warnings.showwarning`` for the command: one line on stderr, without the source line."""
    say(f"agentab: warning: {' '.join(str(message).split())}", file=sys.stderr)


def exit_code(fail_on: str | None, verdict: str) -> int:
    """The exit code of a verdict under ``--fail-on``."""
    return FAIL_ON.get(fail_on, {}).get(verdict, EXIT_OK)


def print_rejected(traces: agentab.Traces, *, quiet: bool = False, file: Any = None) -> None:
    """The records --lenient left out: a count and the first ten (the count alone under --quiet)."""
    if not len(traces.rejected):
        return
    out = sys.stdout if file is None else file
    head = f"{len(traces.rejected):,} of {traces.n_read:,} records rejected"
    if quiet:
        say(f"\n{head}", file=out)
        return
    say(f"\n{head}:", file=out)
    for row in traces.rejected.head(10).itertuples(index=False):
        location = where(row.source, row.line) + ("" if pd.isna(row.field) else f", field {row.field}")
        say(f"  {location}: {row.reason}", file=out)
    if len(traces.rejected) > 10:
        say(f"  ... and {len(traces.rejected) - 10:,} more", file=out)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """Progress bars on stderr (tqdm), drawn only when stderr is a terminal and not ``--quiet``."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_args(cls, args: argparse.Namespace) -> Progress:
        """Bars for a command: on when stderr is a terminal, unless ``--quiet``."""
        return cls(not getattr(args, "quiet", False) and _is_terminal(sys.stderr))

    @contextlib.contextmanager
    def phase(self, desc: str, unit: str = "it",
              total: int | None = None) -> Iterator[Callable[[str, int, int], None] | None]:
        """A bar shown from the start of a phase.

        Yields the ``progress(label, done, total)`` callback the API takes
        (None when bars are off, so the API is not called back at all). A
        phase without callbacks (scoring) shows as one step.
        """
        try:
            from tqdm import tqdm
        except ImportError:  # bars are a nicety: without tqdm, none
            self.enabled = False
        if not self.enabled:
            yield None
            return

        bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)

        def update(label: str, done: int, total: int) -> None:
            if bar.total != total:
                bar.total = total
            label = clean(str(label))
            bar.set_postfix_str(label if len(label) <= 40 else "..." + label[-37:], refresh=False)
            bar.update(done - bar.n)

        try:
            yield update
            if total is not None and bar.n < total:
                bar.update(total - bar.n)
        finally:
            bar.close()
