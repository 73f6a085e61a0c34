"""Ruled tables from pdfium's vector paths, found by pdfplumber's table finder without pdfminer.

pdfplumber finds a ruled table from the page's edges: the segments of its
lines, rectangles and curves that run straight across or down. Reading those
through pdfminer interprets the whole page in Python (about 0.7 s a page);
here the same edges come from pdfium's path objects (C++), in the display
coordinates the words use, and go to pdfplumber's own ``TableFinder`` as
explicit edges, so snapping, joining, intersections, cells and the "two
cells at least" rule stay pdfplumber's. ``tests/test_pdf.py`` checks the
tables against pdfplumber's ``find_tables`` on real PDFs.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Iterator
from typing import Any

from kbflow._lazy import require
from kbflow.sources.pdf.pdfium import raw_bindings

__all__ = ["path_edges", "ruled_tables"]


#: segments shorter than this (points) are no edge (pdfplumber's ``edge_min_length_prefilter``)
MIN_EDGE = 1.0
#: coordinates this close (points) count as equal when telling straight edges from slanted ones
FLAT = 0.01
#: form XObjects nested deeper than this are not looked into
MAX_DEPTH = 8

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _compose(inner: Matrix, outer: Matrix) -> Matrix:
    """The matrix applying ``inner`` first, then ``outer`` (PDF's row-vector convention)."""
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F)


def _matrix(obj: Any) -> Matrix:
    pdfium_c = raw_bindings()
    m = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(m)):
        return _IDENTITY
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _path_objects(page_raw: Any) -> Iterator[tuple[Any, Matrix]]:
    """Every path object of the page, with the matrix from its space to the page's (forms looked into)."""
    pdfium_c = raw_bindings()

    def walk(count: int, get: Callable[[int], Any], outer: Matrix, depth: int) -> Iterator[tuple[Any, Matrix]]:
        for i in range(count):
            obj = get(i)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                yield obj, _compose(_matrix(obj), outer)
            elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and depth < MAX_DEPTH:
                inner = _compose(_matrix(obj), outer)
                count_inner = pdfium_c.FPDFFormObj_CountObjects(obj)
                yield from walk(count_inner, functools.partial(pdfium_c.FPDFFormObj_GetObject, obj), inner, depth + 1)

    yield from walk(
        pdfium_c.FPDFPage_CountObjects(page_raw), lambda i: pdfium_c.FPDFPage_GetObject(page_raw, i), _IDENTITY, 0
    )


def _subpaths(obj: Any, matrix: Matrix) -> Iterator[list[tuple[float, float]]]:
    """The path's subpaths as lists of points in page space (a close adds the first point again; a Bézier
    segment ends its subpath there, as its curve is no straight edge)."""
    pdfium_c = raw_bindings()
    a, b, c, d, e, f = matrix
    x, y = ctypes.c_float(), ctypes.c_float()
    points: list[tuple[float, float]] = []
    for i in range(pdfium_c.FPDFPath_CountSegments(obj)):
        segment = pdfium_c.FPDFPath_GetPathSegment(obj, i)
        if not pdfium_c.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y)):
            continue
        point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
        kind = pdfium_c.FPDFPathSegment_GetType(segment)
        if kind == pdfium_c.FPDF_SEGMENT_MOVETO or kind == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            if len(points) > 1:
                yield points
            points = [point]
            continue
        points.append(point)
        if pdfium_c.FPDFPathSegment_GetClose(segment) and points[0] != point:
            points.append(points[0])
    if len(points) > 1:
        yield points


def _edge(p0: tuple[float, float], p1: tuple[float, float], line: bool) -> dict[str, Any] | None:
    """pdfplumber's edge for one straight segment in display space (``None`` if it is slanted or tiny).

    A two-point path is pdfminer's ``LTLine``, whose edge pdfplumber calls vertical unless it is flat.
    """
    x0, x1 = sorted((p0[0], p1[0]))
    top, bottom = sorted((p0[1], p1[1]))
    if bottom - top <= FLAT:
        orientation, top, bottom = "h", (top + bottom) / 2, (top + bottom) / 2
    elif x1 - x0 <= FLAT or line:
        orientation = "v"
        if x1 - x0 <= FLAT:
            x0 = x1 = (x0 + x1) / 2
    else:
        return None
    if max(x1 - x0, bottom - top) < MIN_EDGE:
        return None
    return {
        "object_type": "path_edge",
        "orientation": orientation,
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "doctop": top,
        "width": x1 - x0,
        "height": bottom - top,
    }


def path_edges(page: Any, to_display: Callable[..., tuple[float, float, float, float]]) -> list[dict[str, Any]]:
    """The straight edges of every path the page draws, in display coordinates."""
    edges = []
    for obj, matrix in _path_objects(page.raw):
        for points in _subpaths(obj, matrix):
            shown = [to_display(x, y, x, y)[:2] for x, y in points]
            line = len(shown) == 2
            for p0, p1 in zip(shown, shown[1:]):
                edge = _edge(p0, p1, line)
                if edge is not None:
                    edges.append(edge)
    return edges


class _PageBox:
    """What pdfplumber's table finder reads of a page when every edge is given to it: the page's box."""

    def __init__(self, width: float, height: float) -> None:
        self.bbox = (0.0, 0.0, width, height)


def ruled_tables(
    page: Any, to_display: Callable[..., tuple[float, float, float, float]], width: float, height: float
) -> list[dict[str, Any]]:
    """The ruled tables of a pdfium page: ``{"bbox", "rows": [{"bbox", "cells": [box or None]}]}``."""
    edges = path_edges(page, to_display)
    vertical = [e for e in edges if e["orientation"] == "v"]
    horizontal = [e for e in edges if e["orientation"] == "h"]
    if len(vertical) < 2 or len(horizontal) < 2:  # two cells need three edges one way and two the other
        return []
    table = require("pdfplumber.table")
    settings = {
        "vertical_strategy": "explicit",
        "horizontal_strategy": "explicit",
        "explicit_vertical_lines": vertical,
        "explicit_horizontal_lines": horizontal,
    }
    finder = table.TableFinder(_PageBox(width, height), settings)  # type: ignore[arg-type]  # pdfplumber reads only the box's size
    return [
        {
            "bbox": list(t.bbox),
            "rows": [{"bbox": list(r.bbox), "cells": [list(c) if c else None for c in r.cells]} for r in t.rows],
        }
        for t in finder.tables
    ]
