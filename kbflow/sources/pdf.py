"""PDFs: one raw unit per page, read in column order, with every word's box kept.

Page text is rebuilt from pdfplumber's words (not its ``extract_text``) so that
every word's char span in the text is known, and so is its box:

- Words are split with a tolerance relative to the glyph size
  (``x_tolerance_ratio``): the default absolute tolerance glues tightly set
  words together (``temcanbeaftermonthsofwork``).
- Columns: gutters are vertical strips inside the page that no word line
  crosses. Lines are cut at the gutters; a run of lines that do not cross a
  gutter is a band, read column by column; a line crossing a gutter (a
  title, a full-width table row) is read whole. Each column of a band, and
  each run of full-width lines, is one *block*: a chunk's regions are the
  unions of its words' boxes per block.
- Lines of one block join with ``\\n``; a vertical gap larger than 1.6 line
  heights, or a new block, starts a paragraph (``\\n\\n``).
- Headers and footers: the top and bottom lines of each page that repeat
  (digits ignored) on at least half the pages of a document of 3 or more
  pages are dropped. The unit's layout records what was dropped.

Pages are parsed once, in a worker thread a few pages ahead, and their words
spilled to a temporary file; page texts are then built from the spill, so only
a few pages are ever held in memory.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kbflow import ids
from kbflow._lazy import require
from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileSetLoader, read_bytes, register_loader

__all__ = ["PageText", "PdfLoader", "page_text", "pdf_pages"]

log = logging.getLogger(__name__)

#: word splitting tolerance, as a share of the glyph size
X_TOLERANCE_RATIO = 0.15
#: a vertical strip this wide (points) that no line crosses separates columns
MIN_GUTTER = 6.0
_DIGITS = re.compile(r"\d+")


@dataclass
class PageText:
    """One page as kbflow reads it: the text, and for every word
    ``[char_start, char_end, x0, top, x1, bottom, block]``."""

    page: int
    text: str
    words: list[list[float]]
    dropped: list[str]
    width: float
    height: float

    def layout(self) -> str:
        return json.dumps(
            {
                "page": self.page,
                "width": self.width,
                "height": self.height,
                "words": self.words,
                "dropped": self.dropped,
            },
            separators=(",", ":"),
        )


def _open(path: str):
    pdfplumber = require("pdfplumber")
    try:
        return pdfplumber.open(path)
    except Exception as exc:
        name = type(exc).__name__
        if "Password" in name or "Encrypt" in name:
            raise SourceError(f"{path}: the PDF is encrypted; decrypt it first (qpdf --decrypt)") from None
        raise SourceError(f"{path}: not a readable PDF ({name}: {exc})") from None


def _words(page) -> list[dict[str, Any]]:
    words = page.extract_words(x_tolerance_ratio=X_TOLERANCE_RATIO, y_tolerance=3, keep_blank_chars=False)
    return [w for w in words if w["text"].strip() and w.get("upright", True)]


def _raw_lines(words: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Words grouped into lines by vertical overlap, top to bottom, each sorted left to right."""
    lines: list[list[dict[str, Any]]] = []
    for w in sorted(words, key=lambda w: (w["top"], w["x0"])):
        mid = (w["top"] + w["bottom"]) / 2
        if lines:
            last = lines[-1]
            top = min(x["top"] for x in last)
            bottom = max(x["bottom"] for x in last)
            if top <= mid <= bottom:
                last.append(w)
                continue
        lines.append([w])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def _gutters(lines: list[list[dict[str, Any]]], width: float) -> list[tuple[float, float]]:
    """Vertical strips in the middle 80% of the page crossed by few lines' words, with text on both sides."""
    if len(lines) < 6:
        return []
    step = 1.0
    bins = int(width / step) + 1
    cover = [0] * bins
    for line in lines:
        for w in line:
            for b in range(max(0, int(w["x0"] / step)), min(bins, int(w["x1"] / step) + 1)):
                cover[b] += 1
    lo, hi = int(0.1 * width / step), int(0.9 * width / step)
    # full-width lines (titles, centred author lines) may cross a gutter: allow a fifth of a column's cover
    covered = sorted(c for c in cover[lo : hi + 1] if c)
    allowed = max(1, len(lines) // 25, int(0.2 * covered[len(covered) // 2])) if covered else 1
    left = min(int(min(w["x0"] for line in lines for w in line) / step), hi)
    right = max(int(max(w["x1"] for line in lines for w in line) / step), lo)
    lo, hi = max(lo, left + 1), min(hi, right - 1)
    out, start = [], None
    for b in range(lo, hi + 1):
        empty = cover[b] <= allowed
        if empty and start is None:
            start = b
        if (not empty or b == hi) and start is not None:
            end = b if empty else b - 1
            if (end - start + 1) * step >= MIN_GUTTER:
                out.append((start * step, (end + 1) * step))
            start = None
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


def page_words(page) -> tuple[list[dict[str, Any]], float, float]:
    """A parsed page's words (text and box only) and its width and height."""
    words = [
        {"text": w["text"], "x0": w["x0"], "x1": w["x1"], "top": w["top"], "bottom": w["bottom"]} for w in _words(page)
    ]
    return words, float(page.width), float(page.height)


def page_text(
    words: list[dict[str, Any]], width: float, height: float, number: int, drop: frozenset[str] = frozenset()
) -> PageText:
    """Build a page's text in reading order, with the char span, box and block of every word."""
    lines = _raw_lines(words)
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
    return PageText(number, "".join(parts), spans, dropped, width, height)


# --- whole documents, page by page -------------------------------------------------------
#: pages parsed ahead of the consumer
_WINDOW = 4


def _parse_pages(path: str, pages: int) -> Iterator[tuple[list[dict[str, Any]], float, float]]:
    """Every page's words, parsed in a worker thread at most :data:`_WINDOW` pages ahead."""
    from collections import deque

    def parse(pdf, index):
        page = pdf.pages[index]
        try:
            return page_words(page)
        finally:
            page.flush_cache()
            page.close()

    with _open(path) as pdf, ThreadPoolExecutor(1, thread_name_prefix="kbflow-pdf") as pool:
        pending: deque = deque()
        for index in range(pages):
            pending.append(pool.submit(parse, pdf, index))
            if len(pending) >= _WINDOW:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


@lru_cache(maxsize=8)
def _document_info(path: str, size: int, mtime: float) -> tuple[int, tuple[str | None, ...]]:
    """(page count, page labels) of a PDF; cached per file version."""
    with _open(path) as pdf:
        n = len(pdf.pages)
        labels: list[str | None] = [None] * n
        try:
            for i, label in enumerate(pdf.doc.get_page_labels()):
                if i >= n:
                    break
                labels[i] = label
        except Exception:
            labels = [None] * n
    return n, tuple(labels)


def _info(path: str) -> tuple[int, tuple[str | None, ...]]:
    st = os.stat(path)
    return _document_info(path, st.st_size, st.st_mtime)


def _drop_set(edge_keys: list[list[str]]) -> frozenset[str]:
    """Header/footer lines: edge lines repeating on at least half the pages (3 pages or more)."""
    pages = len(edge_keys)
    if pages < 3:
        return frozenset()
    counts: dict[str, int] = {}
    for keys in edge_keys:
        for key in set(keys):
            if key:
                counts[key] = counts.get(key, 0) + 1
    return frozenset(k for k, n in counts.items() if n >= max(2, pages / 2))


def pdf_pages(path: str) -> Iterator[tuple[PageText, str | None]]:
    """Yield ``(page text, page label)`` for every page of ``path``.

    Pages are parsed once, in a worker thread, and their words spilled to a
    temporary file; once the repeated header/footer lines are known, each
    page's text is built from its spilled words. Memory holds a few pages.
    """
    import tempfile

    pages, labels = _info(path)
    if pages == 0:
        raise SourceError(f"{path}: the PDF has no pages")
    edges: list[list[str]] = []
    with tempfile.TemporaryFile("w+", encoding="utf-8", prefix="kbflow-pdf-") as spill:
        for words, width, height in _parse_pages(path, pages):
            edges.append(_edge_keys(_raw_lines(words), height))
            spill.write(json.dumps([words, width, height]) + "\n")
        drop = _drop_set(edges)
        spill.seek(0)
        for number, line in enumerate(spill, start=1):
            words, width, height = json.loads(line)
            yield page_text(words, width, height, number, drop), labels[number - 1]


@register_loader
class PdfLoader(FileSetLoader):
    name = "pdf"
    suffixes = (".pdf",)
    what = "a PDF"
    plural = "PDFs"
    description = "a PDF file or a folder of PDFs (one unit per page, word boxes kept)"

    streams = True
    max_file_mb = 256.0

    def load_file(self, source: Source, rel: str, path: str) -> Iterator[RawUnit]:
        file_hash = ids.bytes_hash(read_bytes(path))
        any_text = False
        for page, label in pdf_pages(path):
            if not page.text.strip():
                continue
            any_text = True
            if page.dropped:
                log.info("%s p.%d: dropped repeated header/footer lines %s", rel, page.page, page.dropped)
            yield RawUnit(
                source_id=source.source_id,
                unit_key=f"{rel}#page={page.page:05d}",
                text=page.text,
                content_kind="pdf",
                locator=Locator(
                    kind="pdf", path=rel, page=page.page, page_label=label, char_start=0, char_end=len(page.text)
                ),
                title=f"{rel} p.{label or page.page}",
                file_hash=file_hash,
                layout=page.layout(),
            )
        if not any_text:
            raise SourceError(f"{path}: no text layer (an image-only or scanned PDF); run OCR on it first")


@lru_cache(maxsize=4)
def _pages_text(path: str, size: int, mtime: float) -> tuple[str, ...]:
    return tuple(page.text for page, _ in pdf_pages(path))


def line_key(text: str) -> str:
    """The key a header/footer line is recognised by across pages (digits ignored, lower case)."""
    return _DIGITS.sub("#", text).strip().lower()


@lru_cache(maxsize=64)
def _page_alone(path: str, size: int, mtime: float, number: int, dropped: tuple[str, ...]) -> str | None:
    pdfplumber = require("pdfplumber")
    try:
        pdf = pdfplumber.open(path, pages=[number])
    except Exception:
        _open(path)
        raise
    with pdf:
        if not pdf.pages:
            return None
        words, width, height = page_words(pdf.pages[0])
    return page_text(words, width, height, number, frozenset(line_key(line) for line in dropped)).text


def resolve_page(path: str, page_number: int, dropped: list[str] | None = None) -> str:
    """The text of page ``page_number`` (1-based) of ``path``, exactly as the loader built it.

    ``dropped`` is what the loader decided from the whole document for this
    page: the header/footer lines it dropped (stored in the page's layout).
    With it, only this page is parsed; without it (``None``), the whole
    document is read once, since header/footer dropping depends on every page.
    """
    st = os.stat(path)
    if dropped is not None:
        text = _page_alone(path, st.st_size, st.st_mtime, page_number, tuple(dropped))
        if text is not None:
            return text
    pages, _ = _info(path)
    if not 1 <= page_number <= pages:
        raise SourceError(f"{path}: has no page {page_number} (it has {pages})")
    return _pages_text(path, st.st_size, st.st_mtime)[page_number - 1]
