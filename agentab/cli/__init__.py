"""The ``agentab`` command: a thin layer over the public API, with exit codes usable as a CI gate."""

from agentab.cli._main import (EXIT_BAD_INPUT, EXIT_DONT_SHIP, EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_OK,
                              build_parser, main)

__all__ = ["EXIT_BAD_INPUT", "EXIT_DONT_SHIP", "EXIT_INCONCLUSIVE", "EXIT_INTERNAL", "EXIT_OK", "build_parser",
           "main"]
