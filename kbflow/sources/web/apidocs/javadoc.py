"""Javadoc's pages: descriptions copied from an overridden member, and the summary tables, read as pointers.

Javadoc marks a method that overrides or implements one without documenting
it ("Description copied from interface: ``Comparable``", then the
interface's description again): that copy is read as its pointer line,
"Documented on Comparable.", the method's signature and its "Specified by"
and "Overrides" notes kept.

Javadoc also opens each class page with summary tables (Method Summary,
Field Summary, ...): one row per member, its signature and the first
sentence of its description, which the member's own entry below says
again. A package's page lists its classes so, each with the first sentence
of its class's page. Each such table is read as one line naming its
members, "Documented below: add, addAll, clone, ...", or "Documented on
their pages: ArrayUtils, BooleanUtils, ...", so a search for what a member
does finds the member's entry, not a summary row of twenty overloads
(``ArrayUtils``' summary of ``indexOf``).

Javadoc titles a class page in a ``<div class="header">`` ("Package
org.apache.commons.collections4.map", then, in JDK 9 to 15, ``<h2
class="title">Class CaseInsensitiveMap``), which a reading of the page
drops as its banner where the title is no ``<h1>``: the header is kept, so
every member's entry stands under its class and the class's description
under its title, and it is read title first: the package line before it
was a chunk of its own on every page (50 of Commons Lang's 1,916 chunks
said "Package org.apache.commons.lang3" alone).
"""

from __future__ import annotations

from kbflow.sources.web.apidocs.nodes import classes, elements, text
from kbflow.sources.web.tree import Node
from kbflow.text.pointers import DOCUMENTED_BELOW, DOCUMENTED_ELSEWHERE, documented_on, pointer_line

__all__ = ["read"]

#: Javadoc's label before a description copied from the member a method overrides or implements (JDK 9+, JDK 8)
_COPIED_LABELS = frozenset({"descfrm-type-label", "descfrmTypeLabel"})


def _fold_javadoc(root: Node) -> int:
    """Javadoc: each description copied from an overridden or implemented member read as a pointer line."""
    folded = 0
    for parent in elements(root):
        children = parent.children
        for i, child in enumerate(children):
            if not isinstance(child, Node) or child.tag != "div" or "block" not in classes(child):
                continue
            label = next((s for s in elements(child, "span") if _COPIED_LABELS.intersection(classes(s))), None)
            if label is None:
                continue
            owner = " ".join(text(c) for c in elements(label, "code")).strip() or "the member it overrides"
            child.children = [documented_on(owner)]
            at = next((j for j in range(i + 1, len(children)) if isinstance(children[j], Node)), len(children))
            copy = children[at] if at < len(children) else None
            if isinstance(copy, Node) and copy.tag == "div" and "block" in classes(copy):
                del children[at]
            folded += 1
    return folded


#: Javadoc's summary tables: JDK 16+ (``<div class="summary-table">``), JDK 8-15 (``<table class="memberSummary">``,
#: ``typeSummary``, ``overviewSummary``, ``summary-table``)
_SUMMARY_TABLES = frozenset({"summary-table", "memberSummary", "typeSummary", "overviewSummary", "packagesSummary"})
#: the cell that names a row's member (three-column tables), else its first cell (a package's classes)
_NAME_CELLS = ("col-second", "colSecond", "col-constructor-name", "colConstructorName")
_FIRST_CELLS = ("col-first", "colFirst")


def _header_cell(cell: Node) -> bool:
    """A summary table's column header (JDK 16+: ``table-header``; before: ``<th scope="col">``)."""
    return "table-header" in classes(cell) or (cell.tag == "th" and cell.attrs.get("scope") == "col")


def _name_links(table: Node) -> list[Node]:
    """The links that name a summary's members: ``<a class="member-name-link">`` (JDK 16+), the link in a
    ``<span class="memberNameLink">`` or ``typeNameLink`` (JDK 8-15, where a member's name shares its cell)."""
    out = []
    for node in elements(table):
        kinds = set(classes(node))
        if node.tag == "a" and "member-name-link" in kinds:
            out.append(node)
        elif node.tag == "span" and kinds & {"memberNameLink", "typeNameLink"}:
            out.extend(elements(node, "a")[:1])
    return out


def _summary_names(table: Node) -> tuple[list[str], bool]:
    """The names a Javadoc summary table lists (each once, in order), and whether they are documented on
    the page itself (their links are to ``#`` anchors)."""
    links = _name_links(table)
    if not links:  # a package's classes: the first link of each row's naming cell
        rows = [c for c in elements(table) if not _header_cell(c)]
        cells = [c for c in rows if set(_NAME_CELLS) & set(classes(c))]
        cells = cells or [c for c in rows if set(_FIRST_CELLS) & set(classes(c))]
        links = [found[0] for found in (elements(cell, "a") for cell in cells) if found]
    names = [" ".join(text(link).split()) for link in links]
    here = all(link.attrs.get("href", "").startswith("#") for link in links)
    return list(dict.fromkeys(n for n in names if n)), here


def _fold_javadoc_summaries(root: Node) -> int:
    """Javadoc: each summary table read as one line naming what it lists (see the module's docs)."""
    folded = 0
    for table in elements(root):
        if not _SUMMARY_TABLES & set(classes(table)):
            continue
        names, here = _summary_names(table)
        if not names:
            continue
        table.children = [pointer_line(DOCUMENTED_BELOW if here else DOCUMENTED_ELSEWHERE, names)]
        table.tag = "div" if table.tag in ("table", "tbody", "tr") else table.tag
        folded += 1
    return folded


def _keep_title(root: Node) -> int:
    """Javadoc: the ``<div class="header">`` that holds the page's title (``<h1>`` or ``<h2 class="title">``) is
    content, not a banner, read title first (see the module's docs)."""
    kept = 0
    for header in elements(root, "div", "header"):
        title = next(
            (c for c in header.children if isinstance(c, Node) and c.tag in ("h1", "h2") and "title" in classes(c)),
            None,
        )
        if title is not None:
            header.why = ""
            # the title first, its package line after it: the line alone before the title was a chunk of its own
            header.children = [title, *(c for c in header.children if c is not title)]
            kept += 1
    return kept


def read(root: Node) -> int:
    """Fold a Javadoc page's copied descriptions and summary tables into pointer lines and keep its title, in
    place; how many."""
    return _keep_title(root) + _fold_javadoc(root) + _fold_javadoc_summaries(root)
