"""agentab's figure style, shared by every figure module: the colours, the rc settings, text shown literally.

Figures are drawn inside :func:`_styled` (matplotlib's ``rc_context``, so no global state changes) and every
text of a figure is shown as written (:func:`_literal`: no math text, long lines cut).
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure

__all__ = ["BETTER", "LEVEL_COLOURS", "MAX_LABEL", "NEUTRAL", "PALETTE", "WORSE", "level_colours"]

#: Okabe-Ito colours: blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow, black.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
BETTER, WORSE, NEUTRAL = "#009E73", "#D55E00", "#6f6f6f"
#: Ordered levels of an ordinal metric (up to 4), worst first: vermillion, orange, sky blue, blue.
LEVEL_COLOURS = ("#D55E00", "#E69F00", "#56B4E9", "#0072B2")


def level_colours(n: int) -> list[Any]:
    """``n`` colours in level order, worst first: the four Okabe-Ito ones, or cividis (ordered, CVD-safe) for more."""
    if n <= len(LEVEL_COLOURS):
        return [LEVEL_COLOURS[i] for i in ((3,), (0, 3), (0, 1, 3), (0, 1, 2, 3))[n - 1]]
    return [matplotlib.colormaps["cividis"](v) for v in np.linspace(0.0, 0.95, n)]

_STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "legend.frameon": False,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "savefig.bbox": "tight",
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "text.parse_math": False,  # names are data: "$" is a dollar sign, never math text
    "text.usetex": False,
}


def _styled(function: Callable[..., Figure]) -> Callable[..., Figure]:
    """Draw inside agentab's style (restored afterwards: no global state changes)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with matplotlib.rc_context(_STYLE):
            return _literal(function(*args, **kwargs))

    return wrapper


#: Longest line of any text in a figure; longer ones end in an ellipsis (a 200,000-character name
#: would take all memory to lay out).
MAX_LABEL = 120


def _literal(figure: Figure) -> Figure:
    """Every text of ``figure`` shown as written: math text off (names like ``echo $PATH_$HOME``), long lines cut."""
    from matplotlib.text import Text

    for text in figure.findobj(Text):
        text.set_parse_math(False)
        value = text.get_text()
        if len(value) > MAX_LABEL:
            text.set_text("\n".join(line if len(line) <= MAX_LABEL else line[:MAX_LABEL - 1] + "\u2026"
                                     for line in value.split("\n")))
    return figure


def _wrap(text: str, width: int, max_lines: int = 4) -> str:
    """``text`` broken into lines of at most ``width`` characters (long words too), at most ``max_lines`` of them
    (the last one then ends in an ellipsis): long metric and arm names never run into their neighbours, and a
    name of any length costs a few lines."""
    lines = [part for line in str(text).split("\n")[:max_lines]
             for part in (textwrap.wrap(line[: width * max_lines + 1], width, break_long_words=True,
                                        break_on_hyphens=True) or [""])]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "\u2026"
    return "\n".join(lines)


def _shorten(text: str, limit: int, keep: int = 30) -> str:
    """``text`` of at most ``limit`` characters, cut in the middle: its end (a statistic, a unit) stays readable."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - keep - 1] + "\u2026" + text[-keep:]


def _log_ticks(axis: Any) -> None:
    """Plain numbers on a log axis (its default labels are math text, which agentab shows literally)."""
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _legend_right(ax: Any, width: int = 28, **kwargs: Any) -> None:
    """The legend beside the axes (never over the data), its labels wrapped."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, [_wrap(label, width) for label in labels], loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, fontsize=8, **kwargs)
