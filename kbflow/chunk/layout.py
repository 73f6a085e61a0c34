"""Locator details a chunk gets from its unit's layout: PDF regions, web css paths.

A unit's ``layout`` (JSON, written by the loader) maps char spans of the unit
text to places in the source. These functions turn a chunk's char span into
the locator fields of docs/design.md ("Provenance").
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["check_regions", "pdf_regions", "web_css_path"]

Box = tuple[float, float, float, float]


#: how far (PDF points) a word may poke out of a region and still count as inside it
TOLERANCE = 0.5


def _union(words) -> list[float]:
    return [min(w[2] for w in words), min(w[3] for w in words), max(w[4] for w in words), max(w[5] for w in words)]


def _inside(word, box, tol: float = TOLERANCE) -> bool:
    """Whether ``word`` lies wholly inside ``box`` (grown by ``tol``)."""
    return word[2] >= box[0] - tol and word[4] <= box[2] + tol and word[3] >= box[1] - tol and word[5] <= box[3] + tol


def _lines(words) -> list[list]:
    """Consecutive words grouped into text lines (a new line where a word starts left of or below the last)."""
    lines: list[list] = []
    for w in words:
        last = lines[-1][-1] if lines else None
        if last is not None and w[2] >= last[4] - 1 and abs(w[3] - last[3]) < 0.5 * max(1.0, last[5] - last[3]):
            lines[-1].append(w)
        else:
            lines.append([w])
    return lines


def _block_boxes(mine: list, others: list) -> list[list[float]]:
    """Boxes covering ``mine`` (one block's words of the chunk) that hold none of ``others`` wholly.

    One box, the union, when that is clean: the usual case. A chunk that starts
    or ends mid-line would sweep in its neighbours' words on that line, so the
    words are then cut into lines and consecutive lines merged while the merged
    box stays clean: at most a partial first line, the full lines, a partial
    last line.
    """
    box = _union(mine)
    # every box below lies within the union: only the other words the union holds can spoil one (checking just
    # those keeps a dense page's chunks linear in its words, not quadratic)
    others = [o for o in others if _inside(o, box)]
    if not others:
        return [box]
    out: list[list[float]] = []
    for line in _lines(mine):
        box = _union(line)
        if out:
            merged = [
                min(out[-1][0], box[0]),
                min(out[-1][1], box[1]),
                max(out[-1][2], box[2]),
                max(out[-1][3], box[3]),
            ]
            if not any(_inside(o, merged) for o in others):
                out[-1] = merged
                continue
        out.append(box)
    return out


def pdf_regions(layout: dict[str, Any], start: int, end: int) -> tuple[tuple[int, Box], ...]:
    """``(page, bbox)`` regions of the span ``[start, end)``, in reading order.

    One region per column block the span touches, the union of the span's
    words in that block, split further only where that union would also cover
    a word outside the span (see :func:`_block_boxes`).
    """
    mine: dict[int, list] = {}
    others: list = []
    for w in layout["words"]:
        if w[1] <= start or w[0] >= end:
            others.append(w)
        else:
            mine.setdefault(int(w[6]), []).append(w)
    page = int(layout["page"])
    return tuple(
        (page, tuple(box))  # type: ignore[misc]  # boxes of four, as stored
        for words in mine.values()
        for box in _block_boxes(words, others)
    )


def check_regions(layout: dict[str, Any], start: int, end: int, regions, tol: float = TOLERANCE) -> tuple[int, int]:
    """``(missing, intruding)``: the span's words outside every region, and the other words of the
    page lying wholly inside one (both 0 for an exact citation)."""
    missing = intruding = 0
    boxes = [b for _, b in regions]
    for w in layout["words"]:
        hit = any(_inside(w, b, tol) for b in boxes)
        if w[1] <= start or w[0] >= end:
            intruding += hit
        else:
            missing += not hit
    return missing, intruding


def web_css_path(layout: dict[str, Any], start: int, end: int) -> str | None:
    """The css path of the element enclosing every block the span ``[start, end)`` touches
    (the deepest common ancestor of those blocks)."""
    paths = [p for b0, b1, p in layout["blocks"] if b1 > start and b0 < end]
    if not paths:
        return None
    parts = [p.split(" > ") for p in paths]
    common = []
    for level in zip(*parts):
        if all(x == level[0] for x in level):
            common.append(level[0])
        else:
            break
    return " > ".join(common) or None


def parse(layout: str | None) -> dict[str, Any] | None:
    return json.loads(layout) if layout else None
