"""Ruled tables (kbflow.sources.pdf.rules): cells from intersections exactly as pdfplumber finds them."""

from __future__ import annotations

import random

from pdfplumber.table import edges_to_intersections, intersections_to_cells

from kbflow.sources.pdf.rules import cells


def _edge(orientation, at, start, end):
    if orientation == "h":
        return {"orientation": "h", "x0": start, "x1": end, "top": at, "bottom": at}
    return {"orientation": "v", "x0": at, "x1": at, "top": start, "bottom": end}


def _broken_grid(rng):
    """A grid of rules on a few positions, some rules cut short or missing, some doubled, a few stray ones:
    the cases where a corner is missing, a cell must look further right or down, or two points share an x
    without sharing an edge."""
    xs = sorted(rng.sample(range(0, 400, 10), rng.randint(2, 7)))
    ys = sorted(rng.sample(range(0, 400, 10), rng.randint(2, 7)))
    edges = []
    for y in ys:
        if rng.random() < 0.85:
            i, j = sorted(rng.sample(range(len(xs)), 2)) if rng.random() < 0.3 else (0, len(xs) - 1)
            edges.append(_edge("h", y, xs[i], xs[j]))
    for x in xs:
        if rng.random() < 0.85:
            i, j = sorted(rng.sample(range(len(ys)), 2)) if rng.random() < 0.3 else (0, len(ys) - 1)
            edges.append(_edge("v", x, ys[i], ys[j]))
    for _ in range(rng.randint(0, 3)):  # a stray rule, on or off the grid
        at, a, b = rng.randrange(0, 400, 5), rng.randrange(0, 400, 5), rng.randrange(0, 400, 5)
        edges.append(_edge(rng.choice("hv"), at, min(a, b), max(a, b) + 5))
    if edges and rng.random() < 0.3:
        edges.append(dict(rng.choice(edges)))  # the same rule drawn twice
    rng.shuffle(edges)
    return edges


def test_cells_are_pdfplumbers_own_in_its_order_on_random_broken_grids():
    rng = random.Random(7)
    found = 0
    for _ in range(400):
        intersections = edges_to_intersections(_broken_grid(rng), 3, 3)
        theirs = intersections_to_cells(intersections)
        assert cells(intersections) == theirs
        found += len(theirs)
    assert found > 2000  # the grids do hold cells


def test_a_cell_needs_its_fourth_corner_joined_to_both_sides():
    # an L of rules and a lone point where the fourth corner would be: no cell
    edges = [_edge("h", 0, 0, 100), _edge("v", 0, 0, 100), _edge("h", 100, 90, 110), _edge("v", 100, 90, 110)]
    intersections = edges_to_intersections(edges, 3, 3)
    assert cells(intersections) == intersections_to_cells(intersections) == []
    # the full square: one cell
    edges += [_edge("h", 100, 0, 100), _edge("v", 100, 0, 100)]
    intersections = edges_to_intersections(edges, 3, 3)
    assert cells(intersections) == intersections_to_cells(intersections) == [(0, 0, 100, 100)]
