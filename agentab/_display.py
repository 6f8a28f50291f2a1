"""One display mechanism for every result: ``to_dict()`` for data, one view for text and HTML.

A result class inherits :class:`Display` and writes two methods:

- ``to_dict()`` -- its content as plain JSON values (the record a program reads; ``to_frame()`` follows);
- ``_view()`` -- what a person reads, once, as a list of blocks (:class:`Title`, :class:`Lines`,
  :class:`Items`, :class:`Table`, :class:`Blank`, :class:`Section`); ``_html_view()`` may add to it what
  only a page has room for (evidence tables), and is ``_view()`` unless a result says otherwise.

``str(result)`` renders the blocks as text and ``result._repr_html_()`` as HTML (what Jupyter shows), so
the two never disagree; every piece of user text is escaped in HTML. Only display rounds: the blocks
carry the numbers as the result holds them, formatted where the view is built.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Answer(Display):
...     value: float
...     def to_dict(self):
...         return {"value": self.value}
...     def _view(self):
...         return [Title("answer"), Items([f"value {self.value:g}"])]
>>> print(Answer(0.5))
answer
  - value 0.5
>>> Answer(0.5)._repr_html_()
'<div><div><b>answer</b></div><ul><li>value 0.5</li></ul></div>'
>>> Answer(0.5).to_frame()
   value
0    0.5
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import pandas as pd

__all__ = ["Blank", "Block", "Display", "Items", "Lines", "Section", "Table", "Title", "html_items", "render_html",
           "render_text"]

#: Colours of a verdict's tone in HTML.
TONES = {"good": "#1b7837", "bad": "#b2182b", "neutral": "#595959"}


@dataclass(frozen=True)
class Title:
    """A heading line; ``tone`` ("good", "bad", "neutral") colours it in HTML; ``level`` 3 makes it an h3.

    ``plain`` is how it reads in text when that differs (e.g. capitals where HTML has colour and size).
    """

    text: str
    tone: str | None = None
    level: int | None = None
    plain: str | None = None


@dataclass(frozen=True)
class Lines:
    """Plain lines, each shown as it is; ``small`` sets them in a smaller font in HTML."""

    lines: Sequence[str]
    small: bool = False


@dataclass(frozen=True)
class Items:
    """A bulleted list: in text each item is ``indent + bullet + item`` under an optional title line.

    ``title_in_text=False`` shows the title in HTML only (where the text labels each line instead, e.g.
    ``bullet="note: "``).
    """

    items: Sequence[str]
    title: str | None = None
    indent: str = "  "
    bullet: str = "- "
    collapsed: bool = False
    title_in_text: bool = True


@dataclass(frozen=True)
class Table:
    """A table, shown with ``DataFrame.to_string`` and ``DataFrame.to_html`` (escaped)."""

    frame: pd.DataFrame
    index: bool = False


@dataclass(frozen=True)
class Blank:
    """An empty line in text; nothing in HTML."""


@dataclass(frozen=True)
class Section:
    """Blocks under a title: in HTML a ``<details>`` element (open unless ``collapsed``)."""

    title: str
    blocks: Sequence[Any] = field(default_factory=tuple)
    collapsed: bool = True
    indent: str = ""


Block = Union[Title, Lines, Items, Table, Blank, Section]


def html_items(texts: Sequence[str]) -> str:
    """HTML list items of plain texts (escaped)."""
    return "".join(f"<li>{html.escape(t)}</li>" for t in texts)


def _text_lines(block: Block) -> list[str]:
    if isinstance(block, Title):
        return [block.text if block.plain is None else block.plain]
    if isinstance(block, Lines):
        return list(block.lines)
    if isinstance(block, Items):
        head = [block.title] if block.title is not None and block.title_in_text else []
        return head + [f"{block.indent}{block.bullet}{item}" for item in block.items]
    if isinstance(block, Table):
        return [block.frame.to_string(index=block.index)]
    if isinstance(block, Blank):
        return [""]
    if isinstance(block, Section):
        inner = [line for b in block.blocks for line in _text_lines(b)]
        return [block.title] + [f"{block.indent}{line}" for line in inner]
    raise TypeError(f"not a display block: {block!r}")


def render_text(blocks: Sequence[Block]) -> str:
    """The blocks as text, one line after another."""
    return "\n".join(line for block in blocks for line in _text_lines(block))


def _html(block: Block) -> str:
    if isinstance(block, Title):
        style = f" style='color:{TONES.get(block.tone, block.tone)}'" if block.tone else ""
        if block.level:
            return f"<h{block.level}{style}>{html.escape(block.text)}</h{block.level}>"
        return f"<div><b{style}>{html.escape(block.text)}</b></div>"
    if isinstance(block, Lines):
        body = "".join(f"<div>{html.escape(line)}</div>" for line in block.lines)
        return f"<div style='font-size:smaller'>{body}</div>" if block.small else body
    if isinstance(block, Items):
        if not block.items:
            return ""
        listed = f"<ul>{html_items(block.items)}</ul>"
        if block.title is None:
            return listed
        if block.collapsed:
            return f"<details><summary>{html.escape(block.title)}</summary>{listed}</details>"
        return f"<div><b>{html.escape(block.title)}</b>{listed}</div>"
    if isinstance(block, Table):
        return block.frame.to_html(index=block.index, escape=True, border=0)
    if isinstance(block, Blank):
        return ""
    if isinstance(block, Section):
        inner = "".join(_html(b) for b in block.blocks)
        opened = "" if block.collapsed else " open"
        return f"<details{opened}><summary>{html.escape(block.title)}</summary>{inner}</details>"
    raise TypeError(f"not a display block: {block!r}")


def render_html(blocks: Sequence[Block]) -> str:
    """The blocks as one HTML fragment (user text escaped)."""
    return "<div>" + "".join(_html(block) for block in blocks) + "</div>"


class Display:
    """``str()``, Jupyter's HTML and ``to_frame()`` of a result, from its ``_view()`` and ``to_dict()``."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def _view(self) -> list[Block]:
        raise NotImplementedError

    def _html_view(self) -> list[Block]:
        """What HTML shows: the text view, unless a result shows more there (evidence tables, every metric)."""
        return self._view()

    def to_frame(self) -> pd.DataFrame:
        """The result's ``to_dict()`` as a one-row table (nested values stay as they are)."""
        return pd.DataFrame([self.to_dict()])

    def __str__(self) -> str:
        return render_text(self._view())

    def _repr_html_(self) -> str:
        return render_html(self._html_view())
