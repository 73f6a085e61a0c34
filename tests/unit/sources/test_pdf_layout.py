"""Page layout (kbflow.sources.pdf.layout): column gutters found from the words' cover, one bin at a time."""

from __future__ import annotations

import random

from kbflow.sources.pdf import layout
from kbflow.sources.pdf.layout import MIN_GUTTER


def _gutters_bin_by_bin(lines, width):
    """The gutter rule one bin and one word at a time: bins of a point covered by at most ``allowed`` words,
    in runs of at least MIN_GUTTER points inside the middle 80% of the page and the text's extent, with text on
    both sides on a fifth of the lines."""
    if len(lines) < 6:
        return []
    bins = int(width) + 1
    cover = [0] * bins
    for line in lines:
        for w in line:
            for b in range(max(0, int(w["x0"])), min(bins, int(w["x1"]) + 1)):
                cover[b] += 1
    lo, hi = int(0.1 * width), int(0.9 * width)
    covered = sorted(c for c in cover[lo : hi + 1] if c)
    allowed = max(1, len(lines) // 25, int(0.2 * covered[len(covered) // 2])) if covered else 1
    left = min(int(min(w["x0"] for line in lines for w in line)), hi)
    right = max(int(max(w["x1"] for line in lines for w in line)), lo)
    lo, hi = max(lo, left + 1), min(hi, right - 1)
    runs, start = [], None
    for b in range(lo, hi + 1):
        empty = cover[b] <= allowed
        if empty and start is None:
            start = b
        if (not empty or b == hi) and start is not None:
            end = b if empty else b - 1
            if end - start + 1 >= MIN_GUTTER:
                runs.append((float(start), float(end + 1)))
            start = None
    return [
        (g0, g1)
        for g0, g1 in runs
        if sum(1 for ln in lines if any(w["x1"] <= g0 for w in ln) and any(w["x0"] >= g1 for w in ln))
        >= max(3, len(lines) // 5)
    ]


def _page(rng, width):
    """Lines of words in one to three columns, some lines across the page, a few words off its edges."""
    columns = rng.choice([1, 2, 3])
    edges = [width * k / columns for k in range(columns + 1)]
    lines = []
    for _ in range(rng.randint(3, 40)):
        line = []
        spans = [(edges[0], edges[-1])] if rng.random() < 0.15 else list(zip(edges, edges[1:]))
        for left, right in spans:
            x = left + rng.uniform(-12, 14) if rng.random() < 0.2 else left + 8 + rng.uniform(0, 4)
            while x < right - rng.uniform(12, 40):
                w = min(rng.uniform(3, 60), max(3.0, right - 10 - x))
                line.append({"x0": x, "x1": x + w, "text": "w"})
                x += w + rng.uniform(1, 8)
        if line:
            lines.append(line)
    return lines


def test_gutters_match_the_rule_applied_bin_by_bin_on_random_pages():
    rng = random.Random(11)
    widths = [rng.choice([595.0, 612.0, 792.0, 300.5]) for _ in range(300)]
    pages = [(_page(rng, width), width) for width in widths]
    expected = [_gutters_bin_by_bin(lines, width) for lines, width in pages]
    assert [layout._gutters(lines, width) for lines, width in pages] == expected
    assert sum(map(len, expected)) > 50  # the pages do have columns
