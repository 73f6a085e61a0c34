"""How a PDF page becomes text: words in reading order, columns, headers and footers, tables.

Page text is rebuilt from pdfplumber's words (not its ``extract_text``) so that
every word's char span in the text is known, and so is its box:

- Columns: gutters are vertical strips inside the page that no word line
  crosses. Lines are cut at the gutters; a run of lines that do not cross a
  gutter is a band, read column by column; a line crossing a gutter (a
  title, a full-width table row) is read whole. Each column of a band, and
  each run of full-width lines, is one *block*: a chunk's regions are the
  unions of its words' boxes per block.
- Lines of one block join with ``\\n``; a vertical gap larger than 1.6 line
  heights, or a new block, starts a paragraph (``\\n\\n``).
- Headers and footers: the top and bottom lines of each page that repeat
  (digits ignored: :func:`line_key`) on at least half the pages of a document
  of 3 or more pages are dropped. The page's layout records what was dropped,
  so the page can later be rebuilt alone (:func:`page_text` with ``drop``).
- Tables (ruled tables pdfplumber's table finder sees, of at least two rows and
  two columns) are not prose: their words leave the page text and each table
  becomes a :class:`TableText`, Markdown rows in reading order, with each
  row's char span and box.

Everything here is pure: words and table boxes in, text and layout out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kbflow._lazy import require

__all__ = ["PageText", "TableText", "line_key", "page_text", "split_tables"]

#: a vertical strip this wide (points) that no line crosses separates columns
MIN_GUTTER = 6.0
_DIGITS = re.compile(r"\d+")


def line_key(text: str) -> str:
    """The key a header/footer line is recognised by across pages (digits ignored, lower case)."""
    return _DIGITS.sub("#", text).strip().lower()


@dataclass
class TableText:
    """One table of a page as Markdown rows: ``| a | b |``, a ``| --- |`` line after the first (header) row.

    ``rows`` holds ``[char_start, char_end, x0, top, x1, bottom]`` for every row line of ``text`` (the
    separator line has none); ``bbox`` is the table's box.
    """

    page: int
    index: int  # 1-based, in reading order on the page
    text: str
    rows: list[list[float]]
    bbox: list[float]
    #: header/footer lines dropped from the page (the table's unit carries them so its page can be rebuilt)
    dropped: list[str] = field(default_factory=list)
    #: the title lines at the top of its page (:mod:`.heading`), carried in its chunks' context header
    heading: str | None = None

    @property
    def header(self) -> str:
        """The header row's line (the first row)."""
        return self.text[int(self.rows[0][0]) : int(self.rows[0][1])] if self.rows else ""

    def layout(self) -> str:
        data = {"page": self.page, "table": self.index, "bbox": self.bbox, "rows": self.rows, "dropped": self.dropped}
        if self.heading:
            data["heading"] = self.heading
        return json.dumps(data, separators=(",", ":"))


@dataclass
class PageText:
    """One page as kbflow reads it: the text, and for every word
    ``[char_start, char_end, x0, top, x1, bottom, block]``; its tables apart."""

    page: int
    text: str
    words: list[list[float]]
    dropped: list[str]
    width: float
    height: float
    tables: list[TableText] = field(default_factory=list)
    #: whether tables were looked for (off: their words are prose); the page is rebuilt alike to resolve it
    with_tables: bool = True
    #: ``{"engine", "confidence"}`` where the words came from OCR (:mod:`.ocr`), else ``None``
    ocr: dict[str, Any] | None = None
    #: the section the PDF's outline puts this page in (``Part II > Item 7``), if it has an outline
    section: str | None = None
    #: the title lines at its top (:mod:`.heading`), carried in its chunks' context header
    heading: str | None = None

    def layout(self) -> str:
        data = {
            "page": self.page,
            "width": self.width,
            "height": self.height,
            "words": self.words,
            "dropped": self.dropped,
            "tables": self.with_tables,
        }
        if self.ocr is not None:
            data["ocr"] = self.ocr
        if self.heading:
            data["heading"] = self.heading
        return json.dumps(data, separators=(",", ":"))


def center_in(w: dict[str, Any], box: list[float] | tuple[float, ...]) -> bool:
    x, y = (w["x0"] + w["x1"]) / 2, (w["top"] + w["bottom"]) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def word_centers(words: list[dict[str, Any]]) -> list[tuple[float, float, dict[str, Any]]]:
    """``(x, y, word)`` of each word's center, as :func:`center_in` computes it."""
    return [((w["x0"] + w["x1"]) / 2, (w["top"] + w["bottom"]) / 2, w) for w in words]


def cell_words(cells: list[Any], centers: list[tuple[float, float, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The words of each cell of one table row: those whose center is in the cell (``None``: an empty cell).
    The words are first narrowed to the row's band, so a table of R rows, C columns and W words costs
    R x W + C x (words in a row), not R x C x W (statements of 60 rows and 6 columns made that a page's
    slowest step)."""
    present = [c for c in cells if c is not None]
    if not present:
        return [[] for _ in cells]
    top, bottom = min(c[1] for c in present), max(c[3] for c in present)
    band = [(x, y, w) for x, y, w in centers if top <= y <= bottom]
    return [[w for x, y, w in band if c[0] <= x <= c[2] and c[1] <= y <= c[3]] if c is not None else [] for c in cells]


def _row_cells(cells: list[Any], centers: list[tuple[float, float, dict[str, Any]]]) -> list[str]:
    """Each cell's text (``""`` for an empty cell)."""
    return [_cell_text(words) if c is not None else "" for c, words in zip(cells, cell_words(cells, centers))]


def _cell_text(words: list[dict[str, Any]]) -> str:
    """A cell's words in reading order, on one line, with ``|`` escaped for Markdown."""
    ordered = [w["text"] for line in _raw_lines(words) for w in line]
    return " ".join(ordered).replace("|", "\\|")


def split_tables(
    words: list[dict[str, Any]], tables: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[TableText]]:
    """``(prose words, tables)``: the words of each real table (2+ rows and 2+ columns with text) taken out.

    A table's page number and index are set later by :func:`page_text`'s caller (0 here).
    """
    prose = list(words)
    out: list[TableText] = []
    for table in sorted(tables, key=lambda t: (round(t["bbox"][1], 1), round(t["bbox"][0], 1))):
        inside = [w for w in prose if center_in(w, table["bbox"])]
        centers = word_centers(inside)
        rows: list[list[str]] = []
        boxes: list[list[float]] = []
        for row in table["rows"]:
            cells = _row_cells(row["cells"], centers)
            if any(cells):
                rows.append(cells)
                boxes.append([round(v, 2) for v in row["bbox"]])
        if len(rows) < 2 or max(sum(1 for c in r if c) for r in rows) < 2:
            continue  # a ruled box around text, not a table: its words stay prose
        taken = {id(w) for w in inside}
        prose = [w for w in prose if id(w) not in taken]
        width = max(len(r) for r in rows)
        lines: list[str] = []
        spans: list[list[float]] = []
        pos = 0
        for i, (cells, box) in enumerate(zip(rows, boxes)):
            line = "| " + " | ".join(cells + [""] * (width - len(cells))) + " |"
            spans.append([pos, pos + len(line), *box])
            lines.append(line)
            pos += len(line) + 1
            if i == 0:
                sep = "| " + " | ".join(["---"] * width) + " |"
                lines.append(sep)
                pos += len(sep) + 1
        out.append(TableText(0, len(out) + 1, "\n".join(lines), spans, [round(v, 2) for v in table["bbox"]]))
    return prose, out


def _raw_lines(words: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Words grouped into lines by vertical overlap, top to bottom, each sorted left to right."""
    lines: list[list[dict[str, Any]]] = []
    top = bottom = 0.0  # the last line's extent, kept as it grows (not recomputed per word: dense pages)
    for w in sorted(words, key=lambda w: (w["top"], w["x0"])):
        mid = (w["top"] + w["bottom"]) / 2
        if lines and top <= mid <= bottom:
            lines[-1].append(w)
            top, bottom = min(top, w["top"]), max(bottom, w["bottom"])
            continue
        lines.append([w])
        top, bottom = w["top"], w["bottom"]
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _gutters(lines: list[list[dict[str, Any]]], width: float) -> list[tuple[float, float]]:
    """Vertical strips in the middle 80% of the page crossed by few lines' words, with text on both sides."""
    if len(lines) < 6:
        return []
    np = require("numpy")
    step = 1.0
    bins = int(width / step) + 1
    x0 = np.fromiter((w["x0"] for line in lines for w in line), dtype=np.float64)
    x1 = np.fromiter((w["x1"] for line in lines for w in line), dtype=np.float64)
    # how many words cover each bin: +1 where a word's bins start, -1 past their end (int() truncates: np.trunc)
    first = np.maximum(0, np.trunc(x0 / step).astype(np.int64))
    past = np.minimum(bins, np.trunc(x1 / step).astype(np.int64) + 1)
    spans = past > first
    delta = np.zeros(bins + 1, dtype=np.int64)
    np.add.at(delta, first[spans], 1)
    np.add.at(delta, past[spans], -1)
    cover = np.cumsum(delta[:bins])
    lo, hi = int(0.1 * width / step), int(0.9 * width / step)
    # full-width lines (titles, centred author lines) may cross a gutter: allow a fifth of a column's cover
    middle = cover[lo : hi + 1]
    covered = np.sort(middle[middle > 0])
    allowed = max(1, len(lines) // 25, int(0.2 * int(covered[len(covered) // 2]))) if len(covered) else 1
    left = min(int(float(x0.min()) / step), hi)
    right = max(int(float(x1.max()) / step), lo)
    lo, hi = max(lo, left + 1), min(hi, right - 1)
    out = []
    if hi >= lo:  # runs of bins at most ``allowed`` covered, from ``lo`` to ``hi``
        empty = np.concatenate([[False], cover[lo : hi + 1] <= allowed, [False]]).astype(np.int8)
        edges = np.diff(empty)
        starts, ends = np.flatnonzero(edges == 1) + lo, np.flatnonzero(edges == -1) + lo - 1
        for start, end in zip(starts.tolist(), ends.tolist()):
            if (end - start + 1) * step >= MIN_GUTTER:
                out.append((start * step, (end + 1) * step))
    # a gutter must have text on both sides for most of the page
    keep = []
    for g0, g1 in out:
        both = sum(1 for line in lines if any(w["x1"] <= g0 for w in line) and any(w["x0"] >= g1 for w in line))
        if both >= max(3, len(lines) // 5):
            keep.append((g0, g1))
    return keep


def _segments(line: list[dict[str, Any]], gutters: list[tuple[float, float]]) -> list[list[dict[str, Any]]] | None:
    """The line cut at the gutters (one list per column), or ``None`` if a word crosses one."""
    cols: list[list[dict[str, Any]]] = [[] for _ in range(len(gutters) + 1)]
    for w in line:
        col = 0
        for g0, g1 in gutters:
            if w["x0"] < g0 and w["x1"] > g1:
                return None
            if w["x0"] >= g0:
                col += 1
        cols[col].append(w)
    return cols


def _repeating_key(line: list[dict[str, Any]]) -> str:
    return line_key(" ".join(w["text"] for w in line))


def _edge_keys(lines: list[list[dict[str, Any]]], height: float) -> list[str]:
    """Keys of the first and last line when they sit in the top / bottom 12% of the page."""
    keys = []
    if lines and max(w["bottom"] for w in lines[0]) < 0.12 * height:
        keys.append(_repeating_key(lines[0]))
    if len(lines) > 1 and min(w["top"] for w in lines[-1]) > 0.88 * height:
        keys.append(_repeating_key(lines[-1]))
    return keys


def page_text(
    words: list[dict[str, Any]],
    width: float,
    height: float,
    number: int,
    drop: frozenset[str] = frozenset(),
    tables: list[dict[str, Any]] | None = None,
) -> PageText:
    """Build a page's text in reading order, with the char span, box and block of every word.

    Words inside one of ``tables`` (each ``{"bbox", "rows": [{"bbox", "cells"}]}``, as the parser found
    them) are not prose: they become the page's tables (:class:`TableText`), not its text.
    """
    words, table_texts = split_tables(words, tables or [])
    lines = _raw_lines(words)
    lines, dropped = _drop_edges(lines, drop, height)
    text, spans = _reading_text(_reading_blocks(lines, width))
    for table in table_texts:
        table.page, table.dropped = number, dropped
    return PageText(number, text, spans, dropped, width, height, table_texts)


def _drop_edges(
    lines: list[list[dict[str, Any]]], drop: frozenset[str], height: float
) -> tuple[list[list[dict[str, Any]]], list[str]]:
    """The lines without the repeating header and footer lines ``drop`` names, and the text of those dropped."""
    dropped: list[str] = []
    if drop:
        edge = set(_edge_keys(lines, height))
        kept = []
        for i, line in enumerate(lines):
            key = _repeating_key(line)
            if key in drop and key in edge and (i == 0 or i == len(lines) - 1):
                dropped.append(" ".join(w["text"] for w in line))
            else:
                kept.append(line)
        lines = kept
    return lines, dropped


def _reading_blocks(lines: list[list[dict[str, Any]]], width: float) -> list[list[list[dict[str, Any]]]]:
    """The lines in reading order as blocks of lines: full-width runs, and each column of a band of columns."""
    gutters = _gutters(lines, width)
    # blocks: (kind, [lines]) where each line is a list of words, in reading order
    blocks: list[list[list[dict[str, Any]]]] = []
    band: list[list[list[dict[str, Any]]]] | None = None
    wide: list[list[dict[str, Any]]] | None = None
    for line in lines:
        cols = _segments(line, gutters) if gutters else None
        if cols is None:
            if band is not None:
                blocks.extend(c for c in band if c)
                band = None
            if wide is None:
                wide = []
                blocks.append(wide)
            wide.append(line)
        else:
            wide = None
            if band is None:
                band = [[] for _ in cols]
            for i, seg in enumerate(cols):
                if seg:
                    band[i].append(seg)
    if band is not None:
        blocks.extend(c for c in band if c)

    return blocks


def _reading_text(blocks: list[list[list[dict[str, Any]]]]) -> tuple[str, list[list[float]]]:
    """The text of ``blocks`` (a blank line between paragraphs and blocks) and every word's char span, box
    and block."""
    parts: list[str] = []
    spans: list[list[float]] = []
    pos = 0
    for b, block in enumerate(blocks):
        heights = sorted(max(w["bottom"] for w in ln) - min(w["top"] for w in ln) for ln in block)
        line_h = heights[len(heights) // 2] if heights else 10.0
        prev_bottom = None
        for ln in block:
            top = min(w["top"] for w in ln)
            if parts:
                gap = "\n\n" if prev_bottom is None or top - prev_bottom > 1.6 * line_h else "\n"
                parts.append(gap)
                pos += len(gap)
            for j, w in enumerate(ln):
                if j:
                    parts.append(" ")
                    pos += 1
                text = w["text"]
                spans.append(
                    [
                        pos,
                        pos + len(text),
                        round(w["x0"], 2),
                        round(w["top"], 2),
                        round(w["x1"], 2),
                        round(w["bottom"], 2),
                        b,
                    ]
                )
                parts.append(text)
                pos += len(text)
            prev_bottom = max(w["bottom"] for w in ln)
    return "".join(parts), spans
