"""Tables (PDF tables, as Markdown rows): cut between rows, never inside one.

A table unit's text is Markdown rows (``| a | b |``), the first the header,
followed by a ``| --- |`` line; its layout keeps each row's char span and box
(:class:`kbflow.sources.pdf.TableText`). Rows are packed under the token
budget; the first chunk starts with the header row, and every later chunk's
context header repeats it (:mod:`kbflow.chunk.context`), after the page's
heading (the statement's title, units and periods above the table), so each
chunk is read with its column names while its text stays exactly the rows it
cites. A row over the budget stays whole. A chunk's regions are its rows'
boxes; its bbox is the table's.
"""

from __future__ import annotations

from kbflow.chunk.base import Chunker, Piece, count_tokens, register_chunker
from kbflow.chunk.layout import parse as parse_layout
from kbflow.records import RawUnit

__all__ = ["TableChunker", "table_spans"]


def table_spans(text: str, rows: list[list[float]], budget: int) -> list[tuple[int, int, list[int]]]:
    """``(char_start, char_end, row indexes)`` of every chunk of a table, in order.

    ``rows`` are ``[char_start, char_end, ...]`` per row line; row 0 is the
    header, which starts the first chunk and is not counted again in later ones
    (their context header repeats it).
    """
    if not rows:
        return []
    header_tokens = count_tokens(text[int(rows[0][0]) : int(rows[0][1])])
    out: list[tuple[int, int, list[int]]] = []
    current: list[int] = [0]
    tokens = count_tokens(text[0 : int(rows[0][1])])
    for i in range(1, len(rows)):
        t = count_tokens(text[int(rows[i][0]) : int(rows[i][1])])
        limit = budget if not out else budget - header_tokens
        if len(current) > (1 if not out else 0) and tokens + t > limit:
            out.append((0 if not out else int(rows[current[0]][0]), int(rows[current[-1]][1]), current))
            current, tokens = [], 0
        current.append(i)
        tokens += t
    if current:
        out.append((0 if not out else int(rows[current[0]][0]), int(rows[current[-1]][1]), current))
    return out


@register_chunker
class TableChunker(Chunker):
    name = "table"
    priority = 12

    def accepts(self, unit: RawUnit) -> bool:
        return unit.content_kind == "table" and unit.layout is not None

    def pieces(self, unit: RawUnit) -> list[Piece]:
        layout = parse_layout(unit.layout) or {}
        rows = layout.get("rows") or []
        page = int(layout.get("page") or unit.locator.page or 0)
        header = unit.text[int(rows[0][0]) : int(rows[0][1])] if rows else None
        heading = layout.get("heading")  # the page's title lines: the statement, its units, its periods
        out = []
        for start, end, indexes in table_spans(unit.text, rows, self.settings.max_tokens):
            regions = tuple((page, tuple(rows[i][2:6])) for i in indexes)
            locator = unit.locator.replace(char_start=start, char_end=end, regions=regions)
            shown = header if header and start > 0 else None  # the first chunk starts with its header row
            context = "\n".join(p for p in (heading, shown) if p) or None
            out.append(Piece(unit.text[start:end], locator, context=context))
        return out
