"""Ruled tables from pdfium's vector paths, found by pdfplumber's table finder without pdfminer.

pdfplumber finds a ruled table from the page's edges: the segments of its
lines, rectangles and curves that run straight across or down. Reading those
through pdfminer interprets the whole page in Python (about 0.7 s a page);
here the same edges come from pdfium's path objects (C++), in the display
coordinates the words use, and go to pdfplumber's own ``TableFinder`` as
explicit edges, so snapping, joining, intersections and the "two cells at
least" rule stay pdfplumber's. Only the step from intersections to cells is
kbflow's (:func:`cells`): pdfplumber's own rescans every later point and
rebuilds two edge sets for each pair it tries; this one gives the same
cells in the same order from an index (the parser's pages/s before and
after: docs/performance.md, ``python bench/pdf_ingest.py``).
``tests/integration/test_pdf.py`` checks the tables against pdfplumber's
``find_tables`` on real PDFs, and :func:`cells` against pdfplumber's
``intersections_to_cells``.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Iterator
from typing import Any

from kbflow._lazy import require
from kbflow.sources.pdf.pdfium import raw_bindings, unchecked

__all__ = ["cells", "path_edges", "ruled_tables"]


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


def _matrix(obj: Any, matrix: Any, get_matrix: Callable[..., int]) -> Matrix:
    """The object's matrix (``matrix``: an ``FS_MATRIX`` to read it into; ``get_matrix``: pdfium's call)."""
    if not get_matrix(obj, ctypes.byref(matrix)):
        return _IDENTITY
    return (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f)


def _path_objects(page_raw: Any) -> Iterator[tuple[Any, Matrix]]:
    """Every path object of the page, with the matrix from its space to the page's (forms looked into)."""
    pdfium_c = raw_bindings()
    get_type, get_matrix, form_count, form_object, page_object = (
        unchecked("FPDFPageObj_GetType"),
        unchecked("FPDFPageObj_GetMatrix"),
        unchecked("FPDFFormObj_CountObjects"),
        unchecked("FPDFFormObj_GetObject"),
        unchecked("FPDFPage_GetObject"),
    )
    path, form = pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_FORM
    matrix = pdfium_c.FS_MATRIX()

    def walk(count: int, get: Callable[[int], Any], outer: Matrix, depth: int) -> Iterator[tuple[Any, Matrix]]:
        for i in range(count):
            obj = get(i)
            kind = get_type(obj)
            if kind == path:
                yield obj, _compose(_matrix(obj, matrix, get_matrix), outer)
            elif kind == form and depth < MAX_DEPTH:
                inner = _compose(_matrix(obj, matrix, get_matrix), outer)
                yield from walk(form_count(obj), functools.partial(form_object, obj), inner, depth + 1)

    yield from walk(pdfium_c.FPDFPage_CountObjects(page_raw), functools.partial(page_object, page_raw), _IDENTITY, 0)


def _subpaths(obj: Any, matrix: Matrix) -> Iterator[list[tuple[float, float]]]:
    """The path's subpaths as lists of points in page space (a close adds the first point again; a Bézier
    segment ends its subpath there, as its curve is no straight edge)."""
    pdfium_c = raw_bindings()
    get_segment, get_point, get_type, get_close = (
        unchecked("FPDFPath_GetPathSegment"),
        unchecked("FPDFPathSegment_GetPoint"),
        unchecked("FPDFPathSegment_GetType"),
        unchecked("FPDFPathSegment_GetClose"),
    )
    starts = (pdfium_c.FPDF_SEGMENT_MOVETO, pdfium_c.FPDF_SEGMENT_BEZIERTO)
    a, b, c, d, e, f = matrix
    x, y = ctypes.c_float(), ctypes.c_float()
    x_ref, y_ref = ctypes.byref(x), ctypes.byref(y)  # one pair of pointers for every segment
    points: list[tuple[float, float]] = []
    for i in range(unchecked("FPDFPath_CountSegments")(obj)):
        segment = get_segment(obj, i)
        if not get_point(segment, x_ref, y_ref):
            continue
        px, py = x.value, y.value
        point = (a * px + c * py + e, b * px + d * py + f)
        if get_type(segment) in starts:
            if len(points) > 1:
                yield points
            points = [point]
            continue
        points.append(point)
        if get_close(segment) and points[0] != point:
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


Point = tuple[float, float]
Box = tuple[float, float, float, float]


def _edge_boxes(edges: list[dict[str, Any]]) -> frozenset[Box]:
    return frozenset((e["x0"], e["top"], e["x1"], e["bottom"]) for e in edges)


def cells(intersections: dict[Point, dict[str, list[dict[str, Any]]]]) -> list[Box]:
    """pdfplumber's ``intersections_to_cells``: the same cells in the same order, each point's edges read once.

    For each intersection point in sorted order, its cell is the first pair (a
    point below it on a shared vertical edge, then a point right of it on a
    shared horizontal edge) whose fourth corner is an intersection joined to
    both; the points below and to the right come from per-column and per-row
    lists instead of a scan of every later point.
    """
    vertical = {p: _edge_boxes(edges["v"]) for p, edges in intersections.items()}
    horizontal = {p: _edge_boxes(edges["h"]) for p, edges in intersections.items()}
    points = sorted(intersections)
    columns: dict[float, list[Point]] = {}
    rows: dict[float, list[Point]] = {}
    for point in points:  # sorted by x, then y: a column runs down, a row runs right
        columns.setdefault(point[0], []).append(point)
        rows.setdefault(point[1], []).append(point)
    at_column = {p: i for column in columns.values() for i, p in enumerate(column)}
    at_row = {p: i for row in rows.values() for i, p in enumerate(row)}
    found: list[Box] = []
    for point in points:
        cell = _smallest_cell(
            point,
            columns[point[0]][at_column[point] + 1 :],
            rows[point[1]][at_row[point] + 1 :],
            vertical,
            horizontal,
        )
        if cell is not None:
            found.append(cell)
    return found


def _smallest_cell(
    point: Point,
    below: list[Point],
    right: list[Point],
    vertical: dict[Point, frozenset[Box]],
    horizontal: dict[Point, frozenset[Box]],
) -> Box | None:
    for down in below:
        if vertical[point].isdisjoint(vertical[down]):
            continue
        for across in right:
            if horizontal[point].isdisjoint(horizontal[across]):
                continue
            corner = (across[0], down[1])
            if (
                corner in vertical
                and not vertical[corner].isdisjoint(vertical[across])
                and not horizontal[corner].isdisjoint(horizontal[down])
            ):
                return (point[0], point[1], corner[0], corner[1])
    return None


@functools.cache
def _finder() -> type:
    """pdfplumber's ``TableFinder`` with :func:`cells` for its step from intersections to cells."""
    table = require("pdfplumber.table")

    class Finder(table.TableFinder):  # type: ignore[misc, name-defined]  # pdfplumber's class, imported lazily
        def __init__(self, page: Any, settings: dict[str, Any]) -> None:  # pdfplumber 0.11's steps, in its order
            self.page = page
            self.settings = table.TableSettings.resolve(settings)
            self.edges = self.get_edges()
            self.intersections = table.edges_to_intersections(
                self.edges, self.settings.intersection_x_tolerance, self.settings.intersection_y_tolerance
            )
            self.cells = cells(self.intersections)
            self.tables = [table.Table(self.page, group) for group in table.cells_to_tables(self.cells)]

    return Finder


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
    settings = {
        "vertical_strategy": "explicit",
        "horizontal_strategy": "explicit",
        "explicit_vertical_lines": vertical,
        "explicit_horizontal_lines": horizontal,
    }
    finder = _finder()(_PageBox(width, height), settings)
    return [
        {
            "bbox": list(t.bbox),
            "rows": [{"bbox": list(r.bbox), "cells": [list(c) if c else None for c in r.cells]} for r in t.rows],
        }
        for t in finder.tables
    ]
