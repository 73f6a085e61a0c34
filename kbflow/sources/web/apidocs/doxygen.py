"""Doxygen's pages: summaries and inherited lists as pointer lines, a signature as one line, no cross-references.

Doxygen lists, in a class's member summary, every member of each base
class again (``<tr class="inherit_header ...">`` "Public Member Functions
inherited from ``geo::Shape``", then one row and one brief description per
member, each ``<tr class="... inherit ...">``): each such list is read as one
line, "Public Member Functions inherited from geo::Shape: area, name,
translate.".

Doxygen opens each class, file and namespace page with its own members'
summary too (``<table class="memberdecls">``: each member's declaration and
brief description, which its entry below says again): each list is read as
one line, "Documented below: assertion, isEnabledFor, log, ..." ("Documented
on their pages" where the entries are elsewhere: a namespace's classes).

Doxygen lays out each member's signature as a table (``<table
class="memname">``: the return type and name, ``(``, then one row per
parameter's type and name), which read cell by cell as ``void
log4cplus::NDC::setMaxDepth | ( | std::size_t | maxDepth)``: it is read as
the one line a reader sees, ``void log4cplus::NDC::setMaxDepth(std::size_t
maxDepth)``, its labels after it (``[virtual]``, ``[inline]``).

Doxygen writes a page's title above its contents as a ``<div
class="title">`` ("Json::Reader Class Reference"), no heading element: it is
read as the page's heading, so each member's entry (``## parse()``) stands
under its class, the class names every chunk's header, and a page whose HTML
header, a project's own (``HTML_HEADER``), writes no ``<title>`` (JsonCpp's
pages as Debian ships them) is titled by it.

And it closes a member's entry with its cross-references: "References
``Logger::forcedLog()``, ``Logger::isEnabledFor()``", "Referenced by
``TraceLogger::TraceLogger()``", "Definition at line 53 of file
tracelogger.h". They name other members, not what this one does, so an
entry that calls ``isEnabledFor`` would answer a question about it: they
are left out of the reading, listed among the page's dropped elements with
:data:`CROSS_REFERENCES` as their reason.
"""

from __future__ import annotations

import re

from kbflow.sources.web.apidocs.nodes import classes, elements, text
from kbflow.sources.web.tree import Node
from kbflow.text.pointers import DOCUMENTED_BELOW, DOCUMENTED_ELSEWHERE, pointer_line

__all__ = ["BANNER", "CROSS_REFERENCES", "read"]

#: why a member's cross-references are left out (listed among the page's dropped elements)
CROSS_REFERENCES = "cross-references: the members an entry calls, those that call it, its source line"
#: why Doxygen's banner is no content of the page
BANNER = "Doxygen's banner: the project's name, number and logo and its menus, the same on every page"
#: the classes of Doxygen's cross-reference paragraphs
_XREF_CLASSES = frozenset({"reference", "referencedby", "definition"})
_OPEN = re.compile(r"\s*\(\s*")
_CLOSE = re.compile(r"\s+\)")
_COMMA = re.compile(r"\s+,")


def _row_group(row: Node) -> str | None:
    """The inherited list a Doxygen summary row belongs to (``pub_methods_classgeo_1_1Shape``), else ``None``."""
    names = classes(row)
    if row.tag != "tr" or not ({"inherit", "inherit_header"} & set(names)):
        return None
    return next((c for c in names if c not in ("inherit", "inherit_header") and ":" not in c), None)


def _row_kind(row: Node) -> str | None:
    """A Doxygen summary row's kind (``memitem``, ``memdesc``, ``separator``, ``memTemplParams``...), ``None`` for
    an inherited member's row (:func:`_row_group`) or any other element."""
    names = classes(row)
    if row.tag != "tr" or {"inherit", "inherit_header"} & set(names) or not names:
        return None
    kind = names[0].split(":", 1)[0]
    return kind if kind in ("memitem", "memdesc", "separator", "memTemplParams", "memTemplItem") else None


def _fold_doxygen_summaries(root: Node) -> int:
    """Doxygen: each class's own member summary (``<table class="memberdecls">``: one row per member, its
    declaration and its brief description, which the member's entry below says again) read as one line naming
    them, "Documented below: assertion, log, ..." (or "Documented on their pages" where they link elsewhere)."""
    anchors = {n.attrs["id"] for n in elements(root) if n.attrs.get("id")}
    folded = 0
    for table in elements(root, "table", "memberdecls"):
        for parent in [table, *elements(table)]:
            rows = [c for c in parent.children if isinstance(c, Node) and _row_kind(c)]
            if not rows:
                continue
            links = [
                found[0]
                for row in rows
                if _row_kind(row) in ("memitem", "memTemplItem")
                for found in [elements(next(iter(elements(row, "td", "memItemRight")), row), "a")]
                if found
            ]
            names = list(dict.fromkeys(" ".join(text(a).split()) for a in links if text(a).strip()))
            if not names:
                continue
            here = all(a.attrs.get("href", "").rpartition("#")[2] in anchors for a in links)
            line = Node("tr", {"class": "memberlist"}, parent)
            cell = Node("td", {}, line, [pointer_line(DOCUMENTED_BELOW if here else DOCUMENTED_ELSEWHERE, names)])
            line.children = [cell]
            at = parent.children.index(rows[0])
            parent.children = [c for c in parent.children if not (isinstance(c, Node) and _row_kind(c))]
            parent.children.insert(at, line)
            folded += len(names)
    return folded


def _fold_doxygen(root: Node) -> int:
    """Doxygen: each list of members inherited from a base class read as its header and the members' names."""
    folded = 0
    for parent in elements(root):
        if not any(isinstance(c, Node) and _row_group(c) for c in parent.children):
            continue
        kept: list[Node | str] = []
        names: dict[str, list[str]] = {}
        header: dict[str, Node] = {}
        for child in parent.children:
            group = _row_group(child) if isinstance(child, Node) else None
            if group is None or not isinstance(child, Node):
                kept.append(child)
            elif "inherit_header" in classes(child):
                header[group] = child
                names[group] = []
                kept.append(child)
            elif any(c.startswith("memitem:") for c in classes(child)):
                cells = elements(child, "td", "memItemRight")
                links = elements(cells[0], "a") if cells else []
                names.setdefault(group, []).append(text(links[0] if links else child).strip())
                folded += 1
        for group, row in header.items():
            title = " ".join(text(row).split())
            cell = next(iter(elements(row, "td")), None)
            if cell is not None:  # the header's cell, now holding the line (a row reads its cells)
                cell.children = [pointer_line(title, names[group]) if any(names.get(group, [])) else title]
                row.children = [cell]
            row.attrs["class"] = f"inherited {group}"  # read as the list it stands for, not as a page header
        parent.children = kept
    return folded


def signature(proto: Node) -> str:
    """The one-line signature of a member's prototype (``<div class="memproto">``), its labels after it in
    brackets; ``""`` where it holds no ``<table class="memname">``."""
    tables = elements(proto, "table", "memname")
    if not tables:
        return ""
    line = " ".join(text(tables[0]).split())
    line = _COMMA.sub(",", _CLOSE.sub(")", _OPEN.sub("(", line, count=1)))
    labels = (" ".join(text(label).split()) for label in elements(proto, "span", "mlabel"))
    return line + "".join(f" [{label}]" for label in labels if label)


def _read_entries(root: Node) -> int:
    """Each member's signature read as one line, its cross-references left out; how many signatures."""
    lines = 0
    for proto in elements(root, "div", "memproto"):
        if line := signature(proto):
            proto.children = [line]
            lines += 1
    for para in elements(root, "p"):
        if _XREF_CLASSES.intersection(classes(para)):
            para.why = CROSS_REFERENCES
    return lines


def _title_heading(root: Node) -> int:
    """Doxygen's title of the page (``<div class="headertitle"><div class="title">Json::Reader Class
    Reference``, in the page's ``<div class="header">`` beside its links to the summaries) read as the page's
    heading: an ``<h1>`` opening its ``<div class="contents">``. The banner above it (``<div id="top">``: the
    project's name and number, its menus, a project's own header) is left out, listed with :data:`BANNER`."""
    contents = next(iter(elements(root, "div", "contents")), None)
    if contents is None:
        return 0
    for banner in (n for n in elements(root, "div") if n.attrs.get("id") == "top"):
        if contents not in elements(banner, "div", "contents"):  # a header left unclosed holds the page: kept
            banner.why = BANNER  # "log4cplus 2.0.8" on every page: its own chunk once the title is a heading
    for header in elements(root, "div", "headertitle"):
        for found in elements(header, "div", "title"):
            labels = [text(label) for label in elements(found, "span", "mlabels")]  # "abstract", "final"
            name = " ".join(text(found).split())
            for label in labels:
                name = name.removesuffix(" ".join(label.split())).strip()
            if name:
                contents.children.insert(0, Node("h1", {}, contents, [name], css=found.css))
                return 1
    return 0


def read(root: Node) -> int:
    """Read a Doxygen page in place: its title a heading, its inherited member lists and member summaries folded
    into pointer lines, each signature one line, the cross-references left out. Returns how many members the
    lists named, how many signatures were read and whether the title was."""
    return _title_heading(root) + _fold_doxygen(root) + _fold_doxygen_summaries(root) + _read_entries(root)
