"""A PDF page's words and their boxes from pdfium (a C++ core, via pypdfium2), and the cheap test for tables.

pdfium gives every character and its box in one call each, about 27x faster
than pdfminer's pure-Python interpreter (``bench/pdf_parse.py``). Words are
grouped as pdfplumber's ``extract_words`` groups them (lines by top within a
tolerance, characters by x within a line, a word ends at a blank or at a gap
wider than a share of the glyph size), so the layout steps above
(:mod:`.layout`: lines, columns, headers and footers) work as before. Ruled
tables come from the page's paths (:mod:`.rules`).

Boxes are in PDF points, from the top-left corner of the page's crop box
(the area pdfium renders), so a word's box outlines it on the page picture.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from kbflow._lazy import require
from kbflow.errors import SourceError

__all__ = [
    "X_TOLERANCE_RATIO",
    "Y_TOLERANCE",
    "display_transform",
    "open_document",
    "outline_sections",
    "page_labels",
    "page_words",
    "raw_bindings",
]


@cache
def raw_bindings() -> Any:
    """pypdfium2's raw bindings (imported on first use, looked up once)."""
    return require("pypdfium2.raw")


#: word splitting tolerance, as a share of the glyph size (an absolute one glues tightly set words)
X_TOLERANCE_RATIO = 0.15
#: characters whose tops are this close (points) share a line
Y_TOLERANCE = 3.0
#: a character rotated more than this (degrees) is not upright text and is left out, as pdfplumber does
MAX_ANGLE = 1.0


def open_document(path: str) -> Any:
    """pdfium's document, or a :class:`SourceError` saying why the file is not a readable PDF."""
    pdfium = require("pypdfium2")
    try:
        return pdfium.PdfDocument(path)
    except Exception as exc:  # PdfiumError: "Incorrect password error", "Data format error", ...
        message = " ".join(str(exc).split())
        if "password" in message.lower():
            raise SourceError(f"{path}: the PDF is encrypted; decrypt it first (qpdf --decrypt)") from None
        raise SourceError(f"{path}: not a readable PDF ({type(exc).__name__}: {message[:300]})") from None


def page_labels(doc: Any) -> list[str | None]:
    """Every page's label (``iv``, ``A-3``), ``None`` where the document names none."""
    labels: list[str | None] = []
    for i in range(len(doc)):
        try:
            labels.append(doc.get_page_label(i) or None)
        except Exception:  # a broken label tree names nothing
            labels.append(None)
    return labels


def outline_sections(doc: Any, max_depth: int = 8) -> list[str | None]:
    """Every page's section by the document's outline (bookmarks): the heading path in force on it
    (``Part II > Item 7. Management's Discussion``), ``None`` before the first bookmark or without an outline."""
    marks = []
    try:
        for n, item in enumerate(doc.get_toc(max_depth=max_depth)):
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = " ".join((item.get_title() or "").split())
            if index is not None and title:
                marks.append((index, n, item.level, title))
    except Exception:  # a broken outline names no section
        return [None] * len(doc)
    marks.sort()
    out: list[str | None] = []
    path: list[tuple[int, str]] = []
    j = 0
    for page in range(len(doc)):
        while j < len(marks) and marks[j][0] <= page:
            _, _, level, title = marks[j]
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
            j += 1
        out.append(" > ".join(t for _, t in path) or None)
    return out


def display_transform(page: Any) -> tuple[Any, float, float]:
    """A function from a box in page space to one in display space (top-left origin of the crop box, the
    page's /Rotate applied), and the display width and height."""
    left, bottom, right, top = page.get_cropbox()
    rotation = page.get_rotation() % 360
    w, h = right - left, top - bottom

    def box(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        if rotation == 90:  # the left edge is on top, the bottom edge on the left
            return y0 - bottom, x0 - left, y1 - bottom, x1 - left
        if rotation == 180:
            return right - x1, y0 - bottom, right - x0, y1 - bottom
        if rotation == 270:
            return top - y1, right - x1, top - y0, right - x0
        return x0 - left, top - y1, x1 - left, top - y0

    return box, (h if rotation in (90, 270) else w), (w if rotation in (90, 270) else h)


def _upright(angle: float, rotation: int) -> bool:
    """Whether a character drawn at ``angle`` (radians, page space) reads upright once the page is rotated."""
    degrees = (math.degrees(angle) + rotation) % 360
    return min(degrees, 360 - degrees) <= MAX_ANGLE


def _chars(page: Any, textpage: Any) -> tuple[list[dict[str, Any]], float, float]:
    """Every upright, visible character with its box (display space) and size; blanks as word breaks."""
    pdfium_c = raw_bindings()
    to_display, width, height = display_transform(page)
    rotation = page.get_rotation() % 360
    raw = textpage.raw
    # the raw calls, one rectangle re-used: pypdfium2's get_charbox allocates one per character
    unicode, angle, loose_box = (
        pdfium_c.FPDFText_GetUnicode,
        pdfium_c.FPDFText_GetCharAngle,
        pdfium_c.FPDFText_GetLooseCharBox,
    )
    rect = pdfium_c.FS_RECTF()
    out: list[dict[str, Any]] = []
    for i in range(textpage.count_chars()):
        code = unicode(raw, i)
        if code in (0, 0xFFFE, 0xFFFF):
            continue
        text = chr(code)
        if text.isspace():
            out.append({"text": " "})
            continue
        turn = angle(raw, i)
        if (turn or rotation) and not _upright(turn, rotation):  # most characters: 0 on an unrotated page
            continue
        if not loose_box(raw, i, rect):
            raise SourceError(f"pdfium could not give the box of character {i}")
        x0, y0, x1, y1 = to_display(rect.left, rect.bottom, rect.right, rect.top)
        if x1 <= x0 and y1 <= y0:
            continue
        out.append({"text": text, "x0": x0, "x1": x1, "top": y0, "bottom": y1, "size": y1 - y0})
    return out, width, height


def _lines(chars: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Characters clustered into lines by their tops (a chain within :data:`Y_TOLERANCE`), each sorted by x.

    Blanks stay where they stood in the text (between the characters around
    them) as word breaks: a blank marks its neighbours as two words.
    """
    visible = []
    for i, ch in enumerate(chars):
        if ch["text"] == " ":
            continue
        ch = dict(ch)
        ch["after_blank"] = i > 0 and chars[i - 1]["text"] == " "
        visible.append(ch)
    visible.sort(key=lambda c: c["top"])
    lines: list[list[dict[str, Any]]] = []
    last = None
    for ch in visible:
        if last is None or ch["top"] - last > Y_TOLERANCE:
            lines.append([])
        lines[-1].append(ch)
        last = ch["top"]
    return [sorted(line, key=lambda c: c["x0"]) for line in lines]


def _words(line: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line's characters (sorted by x) joined into words."""
    words: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for ch in line:
        if current:
            prev = current[-1]
            gap = ch["x0"] - prev["x1"]
            if ch["after_blank"] or gap > X_TOLERANCE_RATIO * ch["size"]:
                words.append(_word(current))
                current = []
        current.append(ch)
    if current:
        words.append(_word(current))
    return words


def _word(chars: list[dict[str, Any]]) -> dict[str, Any]:
    top, bottom = chars[0]["top"], chars[0]["bottom"]
    for c in chars:
        top, bottom = min(top, c["top"]), max(bottom, c["bottom"])
    x1 = max(c["x1"] for c in chars)
    return {"text": "".join(c["text"] for c in chars), "x0": chars[0]["x0"], "x1": x1, "top": top, "bottom": bottom}


def page_words(page: Any) -> tuple[list[dict[str, Any]], float, float]:
    """``(words, width, height)`` of a pdfium page: each word ``{"text", "x0", "x1", "top", "bottom"}``."""
    textpage = page.get_textpage()
    try:
        chars, width, height = _chars(page, textpage)
    finally:
        textpage.close()
    words = [w for line in _lines(chars) for w in _words(line)]
    return words, float(width), float(height)
