"""The ``agentab`` command line: :func:`main`, which runs one command and turns every error into one line.

A thin layer over the public API (:func:`agentab.load_traces`, :func:`agentab.score`, :func:`agentab.compare`,
:func:`agentab.report`, :func:`agentab.diagnose`, :mod:`agentab.power`). The exit codes (0 ok, 1 internal
error, 2 bad input, 3 don't ship and 4 inconclusive under ``--fail-on``) are documented in
:mod:`agentab.cli._output`; stdout carries the result alone (``--json``: one JSON document), progress bars
go to stderr.
"""

from __future__ import annotations

import re
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

__all__ = ["EXIT_BAD_INPUT", "EXIT_DONT_SHIP", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_OK", "build_parser", "cli_words",
           "main"]

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


#: The library's Python words and the command line's flags, for every command: (pattern, replacement).
_FLAGS = (
    (r"power\(\.\.\., method='simulation'\)", "agentab power --n N --method simulation"),
    (r"method='(\w+)'", r"--method \1"),
    (r"format='(\w+)'", r"--format \1"),
    (r"\(got kind='(\w+)', design='(\w+)'\)", r"(got \1, --design \2)"),
    (r"cluster=None", "--cluster none"),
    (r"\(cluster=\)", "(--cluster COL)"),
    (r"paired=True", "--paired yes"),
    (r"seeds_per_task=(\d+)", r"--seeds \1"),
    (r"alternative='([\w-]+)'", r"--alternative \1"),
    (r"`(heterogeneity|alpha|n_resamples|seed|quantile|power|format|primary|cluster|alternative|effect|fields|metrics|"
     r"guardrails)`", lambda m: "--" + {"fields": "field", "metrics": "metric", "guardrails": "guardrail"}.get(
         m.group(1), m.group(1)).replace("_", "-")),
    (r"\bcorrelation=", "--correlation"),
    (r"\bdiscordant=", "--discordant"),
)
#: Words whose flag depends on the command: {command: ((pattern, replacement), ...)}.
_COMMAND_FLAGS = {
    "compare": ((r"baseline= and candidate=", "the two arms with --names BASELINE CANDIDATE"),
                (r"e\.g\. baseline='([^']*)' \(or candidate=\)", r"e.g. --names \1 CANDIDATE")),
    "plan": ((r"design='paired'", "--design paired"), (r"baseline=('[^']*') given", r"--baseline-arm \1 given"),
             (r"say kind=", "say --kind"), (r"pass baseline=", "give --baseline-arm NAME"),
             (r"^baseline arm ", "--baseline-arm "), (r"the baseline with baseline=", "the baseline with --baseline-arm NAME")),
    "power": ((r"design='paired'", "--paired"), (r"give baseline=,", "give --baseline,"), (r"baseline= is", "--baseline is"),
              (r"give (\w+)=,", r"give --\1,"), (r"kind=", "--metric ")),
}


def cli_words(text: str, command: str | None) -> str:
    """A library message in the command line's words: flags, not Python keywords.

    Examples
    --------
    >>> cli_words("binary: give baseline=, the baseline success rate", "power")
    'binary: give --baseline, the baseline success rate'
    >>> cli_words("seeds_per_task=3 cannot be planned; `heterogeneity` must be a ratio", "plan")
    '--seeds 3 cannot be planned; --heterogeneity must be a ratio'
    """
    for pattern, replacement in (*_COMMAND_FLAGS.get(command or "", ()), *_FLAGS):
        text = re.sub(pattern, replacement, text)
    return text


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
        error(f"error: {cli_words(_message(err), getattr(args, 'command', None))}")
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
