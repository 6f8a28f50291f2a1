"""One display mechanism for every result: ``to_dict()`` for data, one view for text and HTML.

A result class inherits :class:`Display` and writes two methods:

- ``to_dict()`` -- its content as plain JSON values (the record a program reads; ``to_frame()`` follows);
- ``_view()`` -- what a person reads, once, as a list of blocks (:class:`Title`, :class:`Lines`,
  :class:`Items`, :class:`Table`, :class:`Blank`, :class:`Section`); ``_html_view()`` may add to it what
  only a page has room for (evidence tables), and is ``_view()`` unless a result says otherwise.

``str(result)`` renders the blocks as text and ``result._repr_html_()`` as HTML (what Jupyter shows), so
the two never disagree; every piece of user text is escaped in HTML. Only display rounds: the blocks
carry the numbers as the result holds them, formatted where the view is built.

A number that could not be computed (``None``, ``NaN``, ``pandas.NA``) is missing, never 0: it reads
:data:`MISSING` (``"n/a"``) in text, HTML and every table cell (:func:`number`, :class:`Table`), and
``null`` in JSON (:func:`json_ready`).

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
>>> number(float("nan"), "{:.1%}"), number(0.25, "{:.1%}"), json_ready({"p": float("nan"), "n": [1, None]})
('n/a', '25.0%', {'p': None, 'n': [1, None]})
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
import pandas as pd

__all__ = ["MISSING", "Blank", "Block", "Display", "Items", "Lines", "Section", "Table", "Title", "html_items",
           "is_missing", "json_ready", "number", "render_html", "render_text"]

#: Colours of a verdict's tone in HTML.
TONES = {"good": "#1b7837", "bad": "#b2182b", "neutral": "#595959"}

#: How a number that could not be computed reads in text and HTML (in JSON it is ``null``).
MISSING = "n/a"


def is_missing(value: Any) -> bool:
    """Whether ``value`` is a missing scalar: None, NaN, ``pandas.NA`` or ``NaT`` (lists and text are not).

    Examples
    --------
    >>> [is_missing(v) for v in (None, float("nan"), pd.NA, 0, 0.0, "", [None])]
    [True, True, True, False, False, False, False]
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return False


def number(value: Any, fmt: str = "{:g}") -> str:
    """``fmt.format(value)``, or :data:`MISSING` when the value is missing (never "0", "nan" or "<NA>").

    Examples
    --------
    >>> number(1234.5, "{:,.0f}"), number(None, "{:,.0f}"), number(pd.NA, "{:.1%}")
    ('1,234', 'n/a', 'n/a')
    """
    return MISSING if is_missing(value) else fmt.format(value)


def json_ready(value: Any) -> Any:
    """``value`` with every missing or non-finite number as None (JSON ``null``), numpy scalars as Python's,
    through dicts, lists and tuples (tuples become lists), so ``json.dumps(..., allow_nan=False)`` works."""
    if isinstance(value, Mapping):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if is_missing(value):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with missing cells of nullable (extension) columns as :data:`MISSING`; the others are left
    to ``na_rep``, so float columns keep their formatting."""
    out = frame
    for k, column in enumerate(frame.columns):
        values = frame.iloc[:, k]
        if isinstance(values.dtype, pd.api.extensions.ExtensionDtype) and values.isna().any():
            if out is frame:
                out = frame.copy()
            out.isetitem(k, values.astype(object).where(values.notna(), MISSING))
    return out


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
    """A table, shown with ``DataFrame.to_string`` and ``DataFrame.to_html`` (escaped; missing cells
    :data:`MISSING`)."""

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
        return [_shown(block.frame).to_string(index=block.index, na_rep=MISSING)]
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
        return _shown(block.frame).to_html(index=block.index, escape=True, border=0, na_rep=MISSING)
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
