"""A table row read as the line its reader sees: ``Total net sales | $391,035 | 2% | $383,285 | (3)%``.

Every cell used to be a block of its own, a blank line from the next, so a
statement in a filing (SEC filings are HTML: one ``<td>`` for the label, one
for the ``$``, one for the figure, one for the ``%``, spacer cells between)
became a column of lone figures, each far from its row's label, and a
docs page's option table a list of names and a list of descriptions. Now a
row is one block: its non-empty cells in order, joined by ``" | "``, a cell
holding only a currency sign joined to the figure after it and one holding
only ``%`` or ``)`` to the figure before it, as the page shows them.

A row is read this way only where it is a row of data: its cells hold
inline text (no nested table, heading, list, ``pre`` or quote) and none is
over :data:`MAX_CELL_CHARS`. A table that lays out a page (one cell holding
the article) is read as blocks, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["CELL_SEP", "MAX_CELL_CHARS", "join_cells", "row_text"]

#: between a row's cells
CELL_SEP = " | "
#: a cell longer than this is prose laid out in a table, not a value: its row is read as blocks
MAX_CELL_CHARS = 400
#: elements that make a cell more than a value: its row is read as blocks
_BREAKERS = frozenset({"table", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "ul", "ol", "dl", "blockquote"})
#: elements whose text is set apart from its neighbours' inside a cell (``<td><p>a</p><p>b</p></td>``: "a b")
_SPACED = frozenset({"p", "div", "li", "dd", "dt", "section", "figure", "figcaption", "address", "summary"})
_CURRENCY = frozenset({"$", "US$", "C$", "A$", "NZ$", "HK$", "R$", "€", "£", "¥", "₹", "₩", "CHF"})
_CLOSER = re.compile(r"[%)]+")
_SPACE = re.compile(r"\s+")


class _NotARow(Exception):
    """The row holds more than values (raised while reading its cells)."""


def row_text(row: Any, content: Callable[[Any], bool]) -> str | None:
    """The text of the ``<tr>`` node ``row`` as one line ("" when its cells are empty), or ``None`` where it is
    not a row of data. ``content(node)`` says whether an element is read at all (not hidden or boilerplate)."""
    cells: list[str] = []
    try:
        for cell in row.children:
            if isinstance(cell, str) or not content(cell):
                continue  # the whitespace between cells; a hidden cell
            if cell.tag not in ("td", "th"):
                return None
            text = _SPACE.sub(" ", "".join(_cell_parts(cell, content))).strip()
            if len(text) > MAX_CELL_CHARS:
                return None
            if text:
                cells.append(text)
    except _NotARow:
        return None
    return join_cells(cells)


def _cell_parts(node: Any, content: Callable[[Any], bool]) -> list[str]:
    parts: list[str] = []
    for child in node.children:
        if isinstance(child, str):
            parts.append(child)
        elif content(child):
            if child.tag in _BREAKERS:
                raise _NotARow
            spaced = child.tag in _SPACED or child.blocky
            parts.extend([" ", *_cell_parts(child, content), " "] if spaced else _cell_parts(child, content))
    return parts


def join_cells(cells: list[str]) -> str:
    """Cells as one line: a lone currency sign joins the cell after it, a lone ``%`` or ``)`` the one before."""
    out: list[str] = []
    sign = ""
    for text in cells:
        if text in _CURRENCY:
            sign += text
        elif out and not sign and _CLOSER.fullmatch(text):
            out[-1] += text
        else:
            out.append(sign + text)
            sign = ""
    if sign:
        out.append(sign)
    return CELL_SEP.join(out)
