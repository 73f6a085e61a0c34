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

import ctypes
import math
from functools import cache
from typing import Any

from kbflow._lazy import require
from kbflow.errors import SourceError

__all__ = [
    "X_TOLERANCE_RATIO",
    "Y_TOLERANCE",
    "code_point",
    "display_transform",
    "open_document",
    "outline_sections",
    "page_labels",
    "page_words",
    "raw_bindings",
    "unchecked",
]


@cache
def raw_bindings() -> Any:
    """pypdfium2's raw bindings (imported on first use, looked up once)."""
    return require("pypdfium2.raw")


@cache
def unchecked(name: str) -> Any:
    """pypdfium2's raw function ``name`` called without ctypes' argument conversion, and holding the GIL.

    A parse makes a few calls per character and per path segment, each a few
    instructions of pdfium's: ctypes' checks of the declared argument types
    and its release of the GIL cost more than the call itself. Only for
    functions whose arguments are pdfium handles (as pypdfium2 returns them),
    ``byref`` pointers and ``int``s: a Python ``int`` goes as a C ``int`` and
    a ``float`` as a ``double``. The result has the binding's declared type.
    """
    function = getattr(raw_bindings(), name)
    address = ctypes.cast(function, ctypes.c_void_p).value
    if not address:
        raise SourceError(f"pdfium has no function {name}")
    return ctypes.PYFUNCTYPE(function.restype)(address)


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


def _objects_upright(page: Any) -> bool:
    """Whether every character on an unrotated page is upright, from its text objects' matrices alone.

    pdfium gives each character its text object's matrix, so a page whose text
    objects all keep their x axis level (``c == 0``, ``a > 0``) has no character
    to check one by one. A form (whose objects have their own matrices) or any
    turned object says no, and the characters are checked one by one.
    """
    pdfium_c = raw_bindings()
    if page.get_rotation() % 360:
        return False
    matrix = pdfium_c.FS_MATRIX()
    matrix_ref = ctypes.byref(matrix)
    kinds = (pdfium_c.FPDF_PAGEOBJ_TEXT, pdfium_c.FPDF_PAGEOBJ_FORM)
    get_object, get_type, get_matrix = (
        unchecked("FPDFPage_GetObject"),
        unchecked("FPDFPageObj_GetType"),
        unchecked("FPDFPageObj_GetMatrix"),
    )
    for i in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        obj = get_object(page.raw, i)
        kind = get_type(obj)
        if kind not in kinds:
            continue
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM or not get_matrix(obj, matrix_ref):
            return False
        if matrix.c != 0 or matrix.a <= 0:
            return False
    return True


#: the codes pdfium gives for what is not a character
_NOT_CHARS = frozenset((0, 0xFFFE, 0xFFFF))
_REPLACEMENT = 0xFFFD


def code_point(code: int, following: int) -> tuple[int, bool]:
    """``(character, joined)`` for a code pdfium gave: a UTF-16 high half joined with the low half that
    follows it (``joined``: skip that next code; pdfium gives both halves the same box); a lone half or a
    code beyond U+10FFFF (a broken font's map) becomes U+FFFD, which keeps its box and breaks no text
    encoding downstream; any other code is itself."""
    if 0xD800 <= code <= 0xDBFF and 0xDC00 <= following <= 0xDFFF:
        return 0x10000 + ((code - 0xD800) << 10) + (following - 0xDC00), True
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return _REPLACEMENT, False
    return code, False


def _chars(page: Any, textpage: Any) -> tuple[str, Any, Any, float, float]:
    """``(texts, blanks, boxes, width, height)``: every upright character in text order, blanks as word breaks.

    ``texts`` holds one character each (``" "`` for a blank), ``blanks`` says
    which are blanks and ``boxes`` is their ``(x0, top, x1, bottom)`` in display
    space (an array of shape ``(n, 4)``; a blank's box is empty). Characters
    with an empty box are left out.
    """
    np = require("numpy")
    pdfium_c = raw_bindings()
    to_display, width, height = display_transform(page)
    rotation = page.get_rotation() % 360
    check = not _objects_upright(page)  # most pages: no character needs its own angle
    raw = textpage.raw
    unicode, angle, loose_box = (
        unchecked("FPDFText_GetUnicode"),
        unchecked("FPDFText_GetCharAngle"),
        unchecked("FPDFText_GetLooseCharBox"),
    )
    count = textpage.count_chars()
    # every box is read straight into one array (a blank's stays zero), no Python object per character
    rects = (pdfium_c.FS_RECTF * count)()
    size = ctypes.sizeof(pdfium_c.FS_RECTF)
    texts: list[str] = []
    rows: list[int] = []
    joined = False
    for i in range(count):
        if joined:  # the low half of a UTF-16 pair, read with its high half
            joined = False
            continue
        code = unicode(raw, i)
        if code in _NOT_CHARS:
            continue
        if code >= 0xD800:  # rare: a UTF-16 half, or a code no character has
            code, joined = code_point(code, unicode(raw, i + 1) if i + 1 < count else 0)
        text = chr(code)
        if text.isspace():
            texts.append(" ")
            rows.append(i)
            continue
        if check:
            turn = angle(raw, i)
            if (turn or rotation) and not _upright(turn, rotation):
                continue
        if not loose_box(raw, i, ctypes.byref(rects, i * size)):
            raise SourceError(f"pdfium could not give the box of character {i}")
        texts.append(text)
        rows.append(i)
    blanks = np.array([t == " " for t in texts], dtype=bool)
    # FS_RECTF is (left, top, right, bottom), in page space: as (x0, y0, x1, y1)
    page_boxes = np.frombuffer(rects, dtype=np.float32).reshape(-1, 4)[rows][:, [0, 3, 2, 1]].astype(np.float64)
    x0, y0, x1, y1 = to_display(page_boxes[:, 0], page_boxes[:, 1], page_boxes[:, 2], page_boxes[:, 3])
    keep = np.flatnonzero(blanks | ~((x1 <= x0) & (y1 <= y0)))
    kept = "".join(texts[k] for k in keep) if len(keep) < len(texts) else "".join(texts)
    return kept, blanks[keep], np.stack([x0, y0, x1, y1], axis=1)[keep], width, height


def _grouped(texts: str, blanks: Any, boxes: Any) -> list[dict[str, Any]]:
    """Characters in text order grouped into words, as pdfplumber's ``extract_words`` groups them.

    Lines: the characters sorted by top (stably) and cut where a top is more
    than :data:`Y_TOLERANCE` below the one before; each line sorted by x
    (stably). A word ends at a line's end, before a character that followed a
    blank in the text, and before a gap wider than :data:`X_TOLERANCE_RATIO`
    of the next character's height.
    """
    np = require("numpy")
    after_blank = np.concatenate([[False], blanks[:-1]])
    visible = np.flatnonzero(~blanks)
    if not len(visible):
        return []
    x0, top, x1, bottom = (boxes[visible, k] for k in range(4))
    by_top = np.argsort(top, kind="stable")
    line = np.concatenate([[0], np.cumsum(np.diff(top[by_top]) > Y_TOLERANCE)])
    in_line = np.argsort(x0[by_top], kind="stable")
    by_line = in_line[np.argsort(line[in_line], kind="stable")]  # by line, then by x; ties as sorted by top
    order, line = by_top[by_line], line[by_line]
    x0, top, x1, bottom = x0[order], top[order], x1[order], bottom[order]
    gap = np.empty(len(order), dtype=bool)
    gap[0] = True
    gap[1:] = (line[1:] != line[:-1]) | (x0[1:] - x1[:-1] > X_TOLERANCE_RATIO * (bottom[1:] - top[1:]))
    starts = np.flatnonzero(gap | after_blank[visible][order])
    text = "".join(texts[k] for k in visible[order].tolist())
    ends = [*starts[1:].tolist(), len(order)]
    return [
        {"text": text[s:e], "x0": a, "x1": b, "top": c, "bottom": d}
        for s, e, a, b, c, d in zip(
            starts.tolist(),
            ends,
            x0[starts].tolist(),
            np.maximum.reduceat(x1, starts).tolist(),
            np.minimum.reduceat(top, starts).tolist(),
            np.maximum.reduceat(bottom, starts).tolist(),
        )
    ]


def page_words(page: Any) -> tuple[list[dict[str, Any]], float, float]:
    """``(words, width, height)`` of a pdfium page: each word ``{"text", "x0", "x1", "top", "bottom"}``."""
    textpage = page.get_textpage()
    try:
        texts, blanks, boxes, width, height = _chars(page, textpage)
    finally:
        textpage.close()
    return _grouped(texts, blanks, boxes), float(width), float(height)
