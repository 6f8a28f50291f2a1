"""The ``agentab`` command line: :func:`main`, which runs one command and turns every error into one line.

A thin layer over the public API (:func:`agentab.load_traces`, :func:`agentab.score`, :func:`agentab.compare`,
:func:`agentab.report`, :func:`agentab.diagnose`, :mod:`agentab.power`). The exit codes (0 ok, 1 internal
error, 2 bad input, 3 don't ship and 4 inconclusive under ``--fail-on``) are documented in
:mod:`agentab.cli._output`; stdout carries the result alone (``--json``: one JSON document), progress bars
go to stderr.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

import pandas as pd

from agentab.cli._inputs import InputError
from agentab.cli._output import (
    EXIT_BAD_INPUT,
    EXIT_DONT_SHIP,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    error,
    show_warning,
)
from agentab.cli._parser import build_parser
from agentab.errors import (
    CompareError,
    PowerError,
    ReportError,
    SpecError,
    TraceError,
    TraceWarning,
)

__all__ = ["EXIT_BAD_INPUT", "EXIT_DONT_SHIP", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_OK", "build_parser", "main"]

#: The errors that are bad input (exit 2, one line): the library's, the CLI's own, files that cannot be read.
_BAD_INPUT = (TraceError, SpecError, CompareError, PowerError, ReportError, InputError, OSError, KeyError,
              pd.errors.ParserError)


def _message(err: BaseException) -> str:
    """One line: the file and the problem."""
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror[0].lower()}{err.strerror[1:]}"
    return " ".join(str(err).split()) or type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentab`` command line; returns the exit code (see the module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", TraceWarning)
            warnings.showwarning = show_warning
            return args.func(args)
    except BrokenPipeError:  # the reader went away (`agentab ... | head`): nothing left to say
        sys.stderr.close()
        return EXIT_OK
    except _BAD_INPUT as err:
        if args.debug:
            raise
        error(f"error: {_message(err)}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if args.debug:
            raise
        error("interrupted")
        return EXIT_INTERRUPTED
    except Exception as err:  # last resort: no traceback without --debug
        if args.debug:
            raise
        error(f"internal error: {type(err).__name__}: {_message(err)} (run with --debug for details)")
        return EXIT_INTERNAL
