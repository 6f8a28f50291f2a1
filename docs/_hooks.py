"""MkDocs hooks: the command-line reference, generated from ``agentab``'s own argument parser.

``docs/cli.md`` holds the marker ``<!-- cli-reference -->``; at build time it is replaced by
:func:`cli_reference`, which walks :func:`agentab.cli.build_parser`: every command, its help text, its
usage and a table of every option. Nothing of it is typed by hand, so it cannot fall behind the parser
(``tests/test_docs.py`` checks that every command and flag is in it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- cli-reference -->"
_WIDTH = "100"


def _commands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each command's name, one-line help and subparser, in the parser's order."""
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return {name: (helps.get(name, ""), sub) for name, sub in action.choices.items()}
    return {}


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    """One table row per argument: its flags (or name), its value, its default and its help."""
    rows = ["| option | value | default | meaning |", "|---|---|---|---|"]
    for action in parser._actions:
        flags = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.metavar or action.dest}`"
        value = ""
        if action.option_strings and action.nargs != 0:
            value = f"`{action.metavar}`" if action.metavar else (
                "{" + ",".join(map(str, action.choices)) + "}" if action.choices else f"`{action.dest.upper()}`")
        elif not action.option_strings and action.nargs in ("+", "*"):
            value = "one or more" if action.nargs == "+" else "any number"
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{default}`"
        rows.append(f"| {flags} | {value} | {shown} | {_cell(action.help or '')} |")
    return rows


def cli_reference() -> str:
    """The Markdown reference of every ``agentab`` command and option, from the parser itself."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from agentab.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = _WIDTH  # argparse wraps help at the terminal's width: make it fixed
    try:
        parser = build_parser()
        lines = ["### `agentab`", "", "```text", parser.format_help().rstrip(), "```", ""]
        lines += _option_rows(parser) + [""]
        for name, (summary, sub) in _commands(parser).items():
            lines += [f"### `agentab {name}`", "", _cell(summary), "", "```text", sub.format_help().rstrip(),
                      "```", ""]
            lines += _option_rows(sub) + [""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """MkDocs hook: the CLI reference in place of its marker."""
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
