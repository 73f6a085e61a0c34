"""Locator details a chunk gets from its unit's layout: PDF regions, web css paths.

A unit's ``layout`` (JSON, written by the loader) maps char spans of the unit
text to places in the source. These functions turn a chunk's char span into
the locator fields of DESIGN.md.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["pdf_regions", "web_css_path"]

Box = tuple[float, float, float, float]


def pdf_regions(layout: dict[str, Any], start: int, end: int) -> tuple[tuple[int, Box], ...]:
    """One ``(page, bbox)`` per block the span ``[start, end)`` touches, in reading order: the union
    of the boxes of the span's words in that block."""
    boxes: dict[int, list[float]] = {}
    order: list[int] = []
    for w0, w1, x0, top, x1, bottom, block in layout["words"]:
        if w1 <= start or w0 >= end:
            continue
        block = int(block)
        box = boxes.get(block)
        if box is None:
            boxes[block] = [x0, top, x1, bottom]
            order.append(block)
        else:
            box[0], box[1], box[2], box[3] = min(box[0], x0), min(box[1], top), max(box[2], x1), max(box[3], bottom)
    page = int(layout["page"])
    return tuple((page, tuple(boxes[b])) for b in order)  # type: ignore[misc]


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
