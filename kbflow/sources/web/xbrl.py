"""The title of an SEC filing: who filed which form for which period, from its cover page (inline XBRL or not).

EDGAR publishes every 10-K and 10-Q as inline XBRL HTML whose ``<title>``
is its file's stem (``aapl-20240928``), a title that names neither the
company nor the year. Each chunk's context header starts with its page's
title, so a question naming Coca-Cola or fiscal 2025 could not tell one
filing's "Human Capital" section from another's. The cover page tags what a
reader looks for as document and entity information facts
(``<ix:nonNumeric name="dei:EntityRegistrantName">``, ``dei:DocumentType``,
``dei:DocumentFiscalYearFocus``, ``dei:DocumentFiscalPeriodFocus``,
``dei:DocumentPeriodEndDate``, some in the document's hidden header); where
the registrant is named, the page's title is made from them:
``Apple Inc. 10-K FY2024, period ended September 28, 2024``.

A filing from before inline XBRL (EDGAR's HTML of 2001-2019) has no such
facts, but its cover page has the lines every 10-K and 10-Q cover has:
``FORM 10-K``, ``For the fiscal year ended December 31, 2018`` and the
registrant's name above ``(Exact name of registrant as specified in its
charter)``. :func:`cover_title` reads them from the page's first
:data:`COVER_LINES` lines: ``AMAZON.COM, INC. 10-K, fiscal year ended
December 31, 2018``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["COVER_LINES", "FACTS", "cover_period", "cover_title", "filing_facts", "filing_title"]

#: the cover-page facts a filing's title is made of (the ``name`` of an ``<ix:nonNumeric>``)
FACTS = frozenset(
    {
        "dei:EntityRegistrantName",
        "dei:DocumentType",
        "dei:DocumentFiscalYearFocus",
        "dei:DocumentFiscalPeriodFocus",
        "dei:DocumentPeriodEndDate",
    }
)
_SPACE = re.compile(r"\s+")
#: a fact's text longer than this is not a name, a form or a date
_MAX_FACT_CHARS = 120


def filing_facts(elements: list[Any]) -> dict[str, str]:
    """The first text of each fact of :data:`FACTS` among ``elements``, the page's ``<ix:nonNumeric>`` elements
    naming one, in document order (the parser collects them as it builds the tree)."""
    found: dict[str, str] = {}
    for node in elements:
        name = node.attrs.get("name", "")
        if name not in found:
            text = _SPACE.sub(" ", "".join(_in_order(node))).strip()
            if text and len(text) <= _MAX_FACT_CHARS:
                found[name] = text
    return found


def _in_order(node: Any) -> list[str]:
    out: list[str] = []
    for c in node.children:
        out.extend([c] if isinstance(c, str) else _in_order(c))
    return out


def filing_title(facts: dict[str, str]) -> str | None:
    """``Registrant form FYyyyy, period ended date`` (a quarter: ``Q2 FY2025``), or ``None`` without a
    registrant's name."""
    name = facts.get("dei:EntityRegistrantName")
    if not name:
        return None
    parts = [name]
    if form := facts.get("dei:DocumentType"):
        parts.append(form)
    year, period = facts.get("dei:DocumentFiscalYearFocus"), facts.get("dei:DocumentFiscalPeriodFocus")
    if year:
        parts.append(f"FY{year}" if period in (None, "FY") else f"{period} FY{year}")
    title = " ".join(parts)
    if end := facts.get("dei:DocumentPeriodEndDate"):
        title += f", period ended {end}"
    return title


#: a cover page is read from this many of a page's first lines (blocks)
COVER_LINES = 80
_EXACT_NAME = re.compile(r"\(?\s*exact name of (?:the )?registrant as specified in its charter", re.IGNORECASE)
_FORM = re.compile(r"^form\s+(\d{1,2}-[a-z]{1,2}(?:/a)?)$", re.IGNORECASE)
_PERIOD = re.compile(
    r"^for the ((?:fiscal )?(?:year|quarterly period|quarter) ended\s+\w+\.?\s+\d{1,2},?\s+\d{4})", re.IGNORECASE
)
#: lines above the "exact name" line that are not a name
_NOT_A_NAME = re.compile(r"commission file|file number|mark one|^\(|^\W*$", re.IGNORECASE)


def cover_title(lines: list[str]) -> str | None:
    """``Registrant form, period`` from a filing's cover page lines (headings' ``#`` marks are ignored), or
    ``None`` where they name no registrant."""
    cover = [" ".join(line.lstrip("#").split()) for line in lines[:COVER_LINES]]
    name = form = period = None
    for i, line in enumerate(cover):
        if form is None and (m := _FORM.match(line)):
            form = m.group(1).upper()
        elif period is None and (m := _PERIOD.match(line)):
            period = m.group(1)
        elif name is None and (m := _EXACT_NAME.search(line)):
            before = line[: m.start()].strip(" |")
            above = next((c for c in reversed(cover[max(0, i - 3) : i]) if c), "")
            name = before or (above if not _NOT_A_NAME.search(above) else None)
            if name is None:
                return None
    if not name or len(name) > _MAX_FACT_CHARS:
        return None
    return f"{name} {form}, {period}" if form and period else f"{name} {form or ''}".strip()


def cover_period(lines: list[str]) -> str | None:
    """``Form, period`` from a filing's cover page lines (``10-Q, quarterly period ended September 30, 2023``),
    the period alone where no form line is found, or ``None`` where no period is: what a filing published as a
    PDF is about, where its file is named otherwise (``2023 Q3 MSFT.pdf``, a fiscal 2024 report)."""
    form = period = None
    for raw in lines[:COVER_LINES]:
        line = " ".join(raw.lstrip("#").split())
        if form is None and (m := _FORM.match(line)):
            form = m.group(1).upper()
        elif period is None and (m := _PERIOD.match(line)):
            period = m.group(1)
    if period is None:
        return None
    return f"{form}, {period}" if form else period
