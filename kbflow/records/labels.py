"""Citation labels a person reads: one short line per locator kind, never markup or offsets.

The full locator (css path, char offsets, boxes) stays in JSON and REST, where
``resolve`` needs it; the CLI, the web page, ``--prompt`` and MCP show this
label instead (at most :data:`MAX_LABEL_CHARS` characters):

====== =======================================================================
kind   label
====== =======================================================================
web    ``References and Borrowing § Mutable References`` (the page's title, or
       its first heading where the title is that heading plus the site's name,
       then the chunk's heading path)
doc    ``install.md § Install > From source``
pdf    ``report.pdf p.12`` (``p.12 (iv)`` where the page label differs,
       ``table 2`` for a table, ``(OCR)`` for a scanned page read by OCR),
       then ``§ Part II > Item 7`` where the PDF's outline puts the page in a
       section
code   ``kbflow/retrieve.py:40-88 Retriever.search``
ticket ``ticket 42 comment 1001``
record ``records.jsonl record 17``
====== =======================================================================

A label over the limit loses the middle of its heading path first, then the
middle of its path or title, each to ``…``.
"""

from __future__ import annotations

import posixpath
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

__all__ = ["MAX_LABEL_CHARS", "citation_label", "shorten"]

#: the longest label, page title included
MAX_LABEL_CHARS = 120
#: the heading path's separator in locators (``A > B > C``)
_HEADING_SEP = " > "
_ELLIPSIS = "…"

#: what a label reads of a locator (a :class:`~kbflow.records.Locator`: its kind and the fields of that kind)
Locator = Any


class Citation(Protocol):
    """What a label reads of a citation (a :class:`~kbflow.records.Citation`; this module imports no record, so
    that the records can call it)."""

    @property
    def uri(self) -> str: ...

    @property
    def title(self) -> str | None: ...

    @property
    def locator(self) -> Locator: ...


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters by dropping its middle (``src/…/module.py``)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    head = (limit - 1) // 2
    tail = limit - 1 - head
    return f"{text[:head].rstrip()}{_ELLIPSIS}{text[len(text) - tail :].lstrip()}"


def _headings(locator: Locator) -> list[str]:
    return [h.strip() for h in (locator.heading_path or "").split(_HEADING_SEP) if h.strip()]


def _join_headings(name: str, headings: list[str], limit: int) -> str:
    """``name § A > B > C`` within ``limit``: the middle headings go first, then the name's middle."""
    if not headings:
        return shorten(name, limit)
    full = f"{name} § {_HEADING_SEP.join(headings)}"
    if len(full) <= limit:
        return " ".join(full.split())
    last = shorten(headings[-1], limit // 2)
    if len(headings) > 1:
        kept = f"{headings[0]}{_HEADING_SEP}{_ELLIPSIS}{_HEADING_SEP}{last}" if len(headings) > 2 else ""
        if kept and len(name) + 3 + len(kept) <= limit:
            return f"{name} § {kept}"
        last = f"{_ELLIPSIS}{_HEADING_SEP}{last}"
    tail = f" § {last}"
    return shorten(name, limit - len(tail)) + tail


def _page_name(citation: Citation) -> str:
    """A web page's name: its title, else the last part of its URL's path, else the host."""
    if citation.title and citation.title.strip():
        return " ".join(citation.title.split())
    parts = urlsplit(citation.locator.url or citation.uri)
    tail = posixpath.basename(parts.path.rstrip("/"))
    return unquote(tail) or parts.netloc or (citation.locator.url or citation.uri)


def _web(citation: Citation, limit: int) -> str:
    name, headings = _page_name(citation), _headings(citation.locator)
    if headings and name.casefold().startswith(headings[0].casefold()):
        # "References and Borrowing - The Rust Programming Language" over "# References and Borrowing":
        # the heading says the page, without the site's name the title adds
        name, headings = headings[0], headings[1:]
    return _join_headings(name, headings, limit)


def _pdf(locator: Locator) -> str:
    out = f"{posixpath.basename(locator.path or '') or locator.path} p.{locator.page}"
    if locator.page_label and locator.page_label != str(locator.page):
        out += f" ({locator.page_label})"
    if locator.table:
        out += f" table {locator.table}"
    if locator.ocr_confidence is not None:
        out += " (OCR)"
    return out


def citation_label(citation: Citation, limit: int = MAX_LABEL_CHARS) -> str:
    """The one-line label a person reads for ``citation`` (at most ``limit`` characters)."""
    loc = citation.locator
    if loc.kind == "web":
        return _web(citation, limit)
    if loc.kind == "doc":
        return _join_headings(loc.path or citation.title or citation.uri, _headings(loc), limit)
    if loc.kind == "pdf":
        return _join_headings(_pdf(loc), _headings(loc), limit)
    if loc.kind == "code":
        place = f"{loc.path}:{loc.line_start}-{loc.line_end}"
        if not loc.symbol:
            return shorten(place, limit)
        symbol = shorten(loc.symbol, max(limit // 3, limit - len(place) - 1))
        return f"{shorten(place, limit - len(symbol) - 1)} {symbol}"
    if loc.kind == "record":
        name = posixpath.basename(citation.uri.rstrip("/")) or citation.uri
        return shorten(f"{name} record {loc.record_id}", limit)
    return shorten(f"ticket {loc.ticket_id} comment {loc.comment_id}", limit)
