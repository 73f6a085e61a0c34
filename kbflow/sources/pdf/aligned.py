"""Unruled tables: columns of figures aligned by whitespace, as financial statements print them.

Most statements in filings draw no lines: a row is a label at the left and
figures at the right, each period's figures right-aligned under its column
header, the units in a caption above. :func:`aligned_tables` finds them from
the page's words alone (pure, no rendering):

1. each line is cut into cells where the gap between two words is wider
   than :data:`CELL_GAP` line heights (a currency sign starts a cell and
   joins the figure after it);
2. a line is a row of figures when at least one cell after its first is a
   figure (``16,388``, ``(1,084)``, ``10.13``, ``12%``, ``—``), and a strong
   row when two are; a block is a run of such rows, with at most
   :data:`MAX_LABEL_RUN` label lines in between ("Operating expenses:"),
   holding :data:`MIN_STRONG_ROWS` strong rows or more;
3. the columns are the right edges the figures share (figures are
   right-aligned); a block whose figures mostly fall outside them is prose
   that happens to hold numbers, and a block whose labels end on one right
   edge or go on in lower case is a paragraph beside another column's
   figures: both are left alone;
4. a block needs a label on half its rows or more (a grid of figures alone,
   such as a tax table, has nothing a question names, and stays prose);
5. the lines right above the block whose words all sit over the figure
   columns ("Years Ended", "December 2, 2022") become one header row, so a
   column reads "December 2, 2022" whatever lines its header spans.

The result has the shape of a ruled table (``{"bbox", "rows": [{"bbox",
"cells"}]}``), so :func:`kbflow.sources.pdf.layout.split_tables` turns both
kinds into table units alike: rows as Markdown, each row's box kept for
citations and the page picture.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from statistics import median
from typing import Any

from kbflow.sources.pdf.layout import cell_words, center_in, word_centers

__all__ = ["aligned_tables", "is_figure", "with_aligned_tables"]

#: a figure cell: a number with its sign, parentheses, currency, thousands separators, decimals, percent; or a dash
_FIGURE = re.compile(r"^[(\[]?[-+−]?[$€£¥]?\s?[-+−]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?[%)\]]*\*?$|^[-–—]+$")
_CURRENCY = frozenset("$€£¥")
#: a gap between two words wider than this many line heights starts a new cell (a space is about 0.3)
CELL_GAP = 0.6
#: rows of two figures or more a block needs
MIN_STRONG_ROWS = 3
#: label lines (no figure) a block may hold in a row, between rows of figures
MAX_LABEL_RUN = 2
#: the share of a block's figures that must sit in its columns
MIN_ALIGNED = 0.8
#: a gap between lines wider than this many line heights ends a block
MAX_LINE_GAP = 2.5
#: label ends this close (points) to the rightmost one count as on one edge
JUSTIFIED = 2.0
#: the share of labels on one right edge that marks a block as justified prose
PROSE_SHARE = 0.5
#: the share of labels starting in lower case that marks a block as a paragraph's lines
LOWER_SHARE = 0.3
#: the share of a block's rows that must have a label: a grid of figures alone (a tax table) stays prose, as
#: no label finds its rows
MIN_LABELLED = 0.5
#: header lines above a block, at most
MAX_HEADER_LINES = 4

Word = dict[str, Any]
Box = tuple[float, float, float, float]


def is_figure(text: str) -> bool:
    """Whether a cell's text is one figure (``$ 16,388``, ``(112)``, ``10.13``, ``34.6%``, ``—``)."""
    return bool(_FIGURE.match(text.strip()))


def _cells(line: Sequence[Word]) -> list[list[Word]]:
    """A line cut at gaps wider than its height; a lone currency sign joins the cell after it."""
    height = median(w["bottom"] - w["top"] for w in line) or 1.0
    cells: list[list[Word]] = [[line[0]]]
    for w in line[1:]:
        gap = w["x0"] - cells[-1][-1]["x1"]
        after_sign = len(cells[-1]) == 1 and cells[-1][0]["text"] in _CURRENCY
        joins = after_sign or (gap <= CELL_GAP * height and w["text"] not in _CURRENCY)
        if joins:
            cells[-1].append(w)
        else:
            cells.append([w])
    return cells


def _text(cell: Sequence[Word]) -> str:
    return " ".join(w["text"] for w in cell)


class _Line:
    """One line of the page: its words, its cells, and which cells are figures."""

    def __init__(self, words: Sequence[Word]) -> None:
        self.words = list(words)
        self.cells = _cells(self.words)
        self.top = min(w["top"] for w in self.words)
        self.bottom = max(w["bottom"] for w in self.words)
        self.x0 = min(w["x0"] for w in self.words)
        self.x1 = max(w["x1"] for w in self.words)
        # the first cell is the row's label (a section number there is no figure) unless the line is figures alone
        figures = [is_figure(_text(c)) for c in self.cells]
        alone = len(self.cells) > 1 and all(figures)
        self.figures = [c for i, c in enumerate(self.cells) if figures[i] and (i or alone)]

    @property
    def height(self) -> float:
        return self.bottom - self.top


def _blocks(lines: list[_Line]) -> list[list[_Line]]:
    """Runs of rows of figures (label lines between them allowed), each with enough strong rows."""
    out: list[list[_Line]] = []
    current: list[_Line] = []
    labels = 0
    for line in lines:
        near = not current or line.top - current[-1].bottom <= MAX_LINE_GAP * max(line.height, 1.0)
        if line.figures and near:
            current.append(line)
            labels = 0
            continue
        if current and near and labels < MAX_LABEL_RUN and len(line.cells) <= 2:
            current.append(line)
            labels += 1
            continue
        out.append(current)
        current, labels = ([line], 0) if line.figures else ([], 0)
    out.append(current)
    blocks = []
    for block in out:
        while block and not block[-1].figures:  # label lines after the last row of figures are prose
            block.pop()
        if sum(1 for line in block if len(line.figures) >= 2) >= MIN_STRONG_ROWS:
            blocks.append(block)
    return blocks


def _columns(block: list[_Line]) -> list[tuple[float, float]]:
    """The figure columns of a block, left to right, each ``(x0, x1)``: right edges shared by the figures."""
    cells = [c for line in block for c in line.figures]
    tolerance = max(4.0, 0.8 * median(line.height for line in block))
    groups: list[list[list[Word]]] = []
    for cell in sorted(cells, key=lambda c: c[-1]["x1"]):
        if groups and cell[-1]["x1"] - groups[-1][-1][-1]["x1"] <= tolerance:
            groups[-1].append(cell)
        else:
            groups.append([cell])
    strong = sum(1 for line in block if len(line.figures) >= 2)
    kept = [g for g in groups if len(g) >= max(2, strong // 3)]
    if sum(len(g) for g in kept) < MIN_ALIGNED * len(cells):
        return []  # figures that share no columns: prose holding numbers
    kept.sort(key=lambda g: g[0][0]["x0"])
    return [(min(c[0]["x0"] for c in g), max(c[-1]["x1"] for c in g)) for g in kept]


def _prose_labels(block: list[_Line]) -> bool:
    """Whether the block's labels read as lines of a paragraph in another text column beside a table: most
    end on one right edge (justified), or many start in lower case (a sentence going on), where a
    statement's row labels are ragged and capitalized."""
    labels = [line.cells[0] for line in block if len(line.cells) > 1 and line.cells[0] not in line.figures]
    if len(labels) < MIN_STRONG_ROWS:
        return False
    ends = [cell[-1]["x1"] for cell in labels]
    justified = sum(1 for x in ends if max(ends) - x <= JUSTIFIED) >= PROSE_SHARE * len(labels)
    going_on = sum(1 for cell in labels if cell[0]["text"][:1].islower()) >= LOWER_SHARE * len(labels)
    return justified or going_on


def _header(lines: list[_Line], first: int, start: float) -> int:
    """How many lines right above line ``first`` are the block's column headers: every word over the
    figure columns (right of ``start``), each line close to the next."""
    count = 0
    below = lines[first]
    for i in range(first - 1, max(-1, first - 1 - MAX_HEADER_LINES), -1):
        line = lines[i]
        if line.x0 < start or below.top - line.bottom > MAX_LINE_GAP * max(line.height, 1.0):
            break
        count, below = count + 1, line
    return count


def _table(rows: list[list[_Line]], columns: list[tuple[float, float]], width: float) -> dict[str, Any]:
    """The table of ``rows`` (each one or more lines) cut at ``columns``: label cell, then one cell a column.

    It ends at its last column (words further right are another text column's); rows meet halfway between
    lines, so no word falls in two rows."""
    x0 = max(0.0, min(line.x0 for row in rows for line in row) - 0.5)
    x1 = min(width, columns[-1][1] + 0.5)
    bounds = [x0, columns[0][0] - 0.5]
    bounds += [(a[1] + b[0]) / 2 for a, b in zip(columns, columns[1:])]
    bounds.append(x1)
    tops = [min(line.top for line in row) for row in rows]
    bottoms = [max(line.bottom for line in row) for row in rows]
    edges = [tops[0] - 0.5] + [(b + t) / 2 for b, t in zip(bottoms, tops[1:])] + [bottoms[-1] + 0.5]
    out_rows = []
    for top, bottom in zip(edges, edges[1:]):
        cells = [[bounds[i], top, bounds[i + 1], bottom] for i in range(len(bounds) - 1)]
        out_rows.append({"bbox": [x0, top, x1, bottom], "cells": cells})
    return {"bbox": [x0, edges[0], x1, edges[-1]], "rows": out_rows, "ruled": False}


def _inside(line: _Line, box: Sequence[float]) -> bool:
    x, y = (line.x0 + line.x1) / 2, (line.top + line.bottom) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def aligned_tables(lines: Sequence[Sequence[Word]], width: float) -> list[tuple[dict[str, Any], list[_Line]]]:
    """The unruled tables of a page, from its words grouped into lines (top to bottom, each left to right):
    each ``{"bbox", "rows": [{"bbox", "cells"}], "ruled": False}`` with the lines it holds."""
    page = [_Line(line) for line in lines if line]
    found = []
    for block in _blocks(page):
        columns = _columns(block)
        if not columns or _prose_labels(block):
            continue
        first = page.index(block[0])
        above = _header(page, first, columns[0][0] - 0.5)
        header = page[first - above : first]
        body = list(block)
        while body and body[0].x0 >= columns[0][0] - 0.5 and len(header) < MAX_HEADER_LINES:
            header.append(body.pop(0))  # figures alone under the headers (the years): part of the header
        rows = ([header] if header else []) + [[line] for line in body]
        labelled = sum(1 for line in body if not line.figures or line.cells[0] not in line.figures)
        if len(rows) >= 2 and labelled >= MIN_LABELLED * len(body):
            found.append((_table(rows, columns, width), header + body))
    return found


def with_aligned_tables(
    lines: Sequence[Sequence[Word]], width: float, ruled: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A page's tables: its ``ruled`` ones and its unruled ones (:func:`aligned_tables`). Where both hold the
    same lines, a ruled table that is a real one (two rows of two cells with words, as
    :func:`~kbflow.sources.pdf.layout.split_tables` keeps) and holds most of them stays; ruled pieces of an
    unruled table (a shaded band around a row or two) give way to it, and a frame drawn around it is no table."""
    words = [w for line in lines for w in line]
    real = [r for r in ruled if _filled_rows(r, words) >= 2]
    out = list(ruled)
    for table, held in aligned_tables(lines, width):
        inside = [sum(1 for line in held if _inside(line, r["bbox"])) for r in real]
        if any(n >= 0.5 * len(held) for n in inside):
            continue  # the ruled table is this one
        pieces = [r for r, n in zip(real, inside) if n and _within(r["bbox"], table["bbox"])]
        if any(n and not any(r is p for p in pieces) for r, n in zip(real, inside)):
            continue  # a ruled table reaching beyond this one: keep what the rules say
        out = [r for r in out if not any(r is p for p in pieces)] + [table]
    return out


def _filled_rows(table: dict[str, Any], words: Sequence[Word]) -> int:
    """Rows of a ruled table with words in two cells or more."""
    centers = word_centers([w for w in words if center_in(w, table["bbox"])])
    return sum(1 for row in table["rows"] if sum(1 for ws in cell_words(row["cells"], centers) if ws) >= 2)


def _within(inner: Sequence[float], outer: Sequence[float], slack: float = 2.0) -> bool:
    return (
        inner[0] >= outer[0] - slack
        and inner[1] >= outer[1] - slack
        and inner[2] <= outer[2] + slack
        and inner[3] <= outer[3] + slack
    )
