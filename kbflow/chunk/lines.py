"""The fallback for files no structural chunker understands: deterministic line windows.

Windows of ``window_lines`` lines, cut earlier when the token budget is
reached; blank lines at a window's edges are left out. The locator is the
code locator (path and 1-based inclusive line span), without a symbol.
"""

from __future__ import annotations

from kbflow.chunk.base import Chunker, Piece, count_tokens, line_span, line_starts, register_chunker
from kbflow.records import RawUnit


def line_windows(lines: list[str], first: int, last: int, max_lines: int, budget: int) -> list[tuple[int, int]]:
    """Windows ``(line_start, line_end)`` (1-based) over ``lines[first-1:last]``, skipping blank edges."""
    out: list[tuple[int, int]] = []
    start = None
    tokens = 0
    for n in range(first, last + 1):
        line = lines[n - 1]
        t = count_tokens(line)
        if start is None:
            if not line.strip():
                continue
            start, tokens = n, t
            continue
        if n - start >= max_lines or tokens + t > budget:
            out.append((start, n - 1))
            start, tokens = (n, t) if line.strip() else (None, 0)
            continue
        tokens += t
    if start is not None:
        out.append((start, last))
    # trim trailing blank lines of every window
    trimmed = []
    for s, e in out:
        while e > s and not lines[e - 1].strip():
            e -= 1
        trimmed.append((s, e))
    return trimmed


@register_chunker
class LineChunker(Chunker):
    name = "lines"
    priority = 100

    def accepts(self, unit: RawUnit) -> bool:
        return unit.content_kind == "code"

    def pieces(self, unit: RawUnit) -> list[Piece]:
        starts = line_starts(unit.text)
        lines = unit.text.split("\n")
        budget = self.settings.code_max_tokens
        out = []
        for s, e in line_windows(lines, 1, len(lines), self.settings.window_lines, budget):
            locator = unit.locator.replace(line_start=s, line_end=e, symbol=None, ast_path=None)
            out.append(Piece(line_span(unit.text, s, e, starts), locator))
        return out
