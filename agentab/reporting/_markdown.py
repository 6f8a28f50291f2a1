"""Markdown for the report: escaped user text, pipe tables, and writing it with its figure folder atomically.

Figures get new names at every write (``figureNN-<id>.png``) before the text is replaced, and only
then are the earlier report's figures deleted, so a kill at any moment leaves one whole report.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from agentab._write import atomic_text
from agentab.errors import ReportError

__all__ = ["figure_folder", "format_cell", "png", "write_markdown"]


@dataclass
class _Block:
    kind: str  # h1 h2 h3 p warning list table figure pre verdict details
    text: str = ""
    items: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None
    figure: Any = None
    children: list[_Block] = field(default_factory=list)


def png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight", pad_inches=0.1)
    return buffer.getvalue()


def format_cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if not np.isfinite(value) else f"{value:.4g}"
    if value is None or value is pd.NA:
        return ""
    return str(value)


def _markdown_table(table: pd.DataFrame) -> str:
    def cell(value: Any) -> str:
        return _md(format_cell(value)).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(cell(c) for c in table.columns) + " |"
    rule = "|" + "|".join("---" for _ in table.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


#: What :func:`_md` changes, in order: a backslash first (so text cannot undo an escape), then what
#: opens raw HTML or entities, emphasis, links and images (``[``, ``]``), and bare autolinks.
_MD_ESCAPES = (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), ("*", "\\*"), ("_", "\\_"), ("[", "\\["),
               ("]", "\\]"), ("`", "\\`"), ("://", ":\\/\\/"), ("www.", "www\\."), ("@", "\\@"),
               ("\r", " "), ("\n", " "))


def _md(text: str) -> str:
    """Text as Markdown shows it literally: no raw HTML, no emphasis, links, images or autolinks from user text."""
    for raw, escaped in _MD_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def _fence(text: str) -> str:
    """A code block no line of ``text`` can close: a fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _markdown(blocks: list[_Block], folder: Path, prefix: str, figures: list[tuple[str, bytes]],
              token: str) -> str:
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append("#" * int(b.kind[1]) + " " + _md(b.text))
        elif b.kind == "p":
            out.append(_md(b.text))
        elif b.kind == "warning":
            out.append(f"**{_md(b.text)}**")
        elif b.kind == "verdict":
            out.append(f"**Verdict: {_md(b.text)}**")
        elif b.kind == "list":
            out.append("\n".join(f"- {_md(i)}" for i in b.items))
        elif b.kind == "table":
            out.append(_markdown_table(b.table))
        elif b.kind == "figure":
            data = png(b.figure)
            figures.append((b.text, data))
            name = f"figure{len(figures):02d}-{token}.png"
            _new_file(folder / name, data)
            out.append(f"![{_md(b.text)}]({prefix}/{name})")
        elif b.kind == "pre":
            out.append(_fence(b.text))
        elif b.kind == "details":
            out.append(f"**{_md(b.text)}**\n\n" + _markdown(b.children, folder, prefix, figures, token))
    return "\n\n".join(out)


# --------------------------------------------------------------------------- #
# Writing: whole or not at all
# --------------------------------------------------------------------------- #
#: The names of the figures a Markdown report writes (``figureNN-<id of the write>.png``): the only
#: files of its folder a later report of the same name deletes.
_FIGURE_NAME = re.compile(r"figure[0-9]{2,}-[0-9a-f]{12}\.png")


def figure_folder(path: Path) -> Path:
    """The image folder of a Markdown report: ``<stem>_files``, ``<stem>_markdown_files`` for ``.markdown``."""
    suffix = path.suffix.lower()
    return path.with_name(path.stem + ("_markdown_files" if suffix == ".markdown" else "_files"))


def _new_file(path: Path, data: bytes) -> None:
    """Create ``path`` (never an existing file or a symlink's target) holding ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


@contextlib.contextmanager
def _locked(folder: Path) -> Any:
    """Hold an exclusive lock on ``folder`` (two reports of one name are written one after the other)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): no lock
        yield
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_markdown(path: Path, blocks: list[_Block], footer: str, figures: list[tuple[str, bytes]]) -> None:
    """New figures under new names, then the text replaced atomically, then the earlier report's figures
    deleted: a kill at any moment leaves the old report with its figures or the new one with its own."""
    folder = figure_folder(path)
    if folder.is_symlink():
        raise ReportError(f"{folder}: the report's image folder is a symlink; agentab does not write through it")
    if folder.exists() and not folder.is_dir():
        raise ReportError(f"{folder}: a file is in the way of the report's image folder")
    folder.mkdir(exist_ok=True)
    token = secrets.token_hex(6)
    with _locked(folder):
        written: list[Path] = []
        try:
            text = _markdown(blocks, folder, quote(folder.name), figures, token) + f"\n\n---\n{footer}\n"
            written = sorted(folder.glob(f"figure*-{token}.png"))
            atomic_text(path, text)
        except BaseException:
            for figure in folder.glob(f"figure*-{token}.png"):
                with contextlib.suppress(OSError):
                    figure.unlink()
            raise
        keep = {p.name for p in written}
        for old in folder.iterdir():  # an earlier report's figures (by agentab's names only), never a symlink
            if old.name not in keep and _FIGURE_NAME.fullmatch(old.name) and not old.is_symlink() and old.is_file():
                with contextlib.suppress(OSError):
                    old.unlink()
