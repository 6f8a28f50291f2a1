"""The ``agentab`` command: a thin layer over the public API, with exit codes usable as a CI gate.

- :mod:`~agentab.cli._main` -- :func:`main`: runs a command, turns errors into one line and an exit code;
- :mod:`~agentab.cli._parser` -- :func:`build_parser`: every command's options, shared ones written once;
- :mod:`~agentab.cli._commands` -- one short function per command, handing the work to the library;
- :mod:`~agentab.cli._arms` -- which runs are the baseline's and the candidate's (``agentab compare``);
- :mod:`~agentab.cli._inputs` -- option values, spec files, scores tables and traces, read and checked;
- :mod:`~agentab.cli._output` -- stdout, stderr (escapes stripped), progress bars and the exit codes.
"""

from agentab.cli._main import main
from agentab.cli._output import (
           EXIT_BAD_INPUT,
           EXIT_DONT_SHIP,
           EXIT_INCONCLUSIVE,
           EXIT_INTERNAL,
           EXIT_OK,
)
from agentab.cli._parser import build_parser

__all__ = ["EXIT_BAD_INPUT", "EXIT_DONT_SHIP", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_OK", "build_parser",
           "main"]
