"""Doxygen's pages: member summaries and inherited member lists read as pointer lines.

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
"""

from __future__ import annotations

from kbflow.sources.web.apidocs.nodes import classes, elements, text
from kbflow.sources.web.tree import Node

__all__ = ["read"]


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
            cell = Node(
                "td", {}, line, [f"{'Documented below' if here else 'Documented on their pages'}: {', '.join(names)}."]
            )
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
            listed = ", ".join(dict.fromkeys(n for n in names.get(group, []) if n))
            title = " ".join(text(row).split())
            cell = next(iter(elements(row, "td")), None)
            if cell is not None:  # the header's cell, now holding the line (a row reads its cells)
                cell.children = [f"{title}: {listed}." if listed else title]
                row.children = [cell]
            row.attrs["class"] = f"inherited {group}"  # read as the list it stands for, not as a page header
        parent.children = kept
    return folded


def read(root: Node) -> int:
    """Fold a Doxygen page's inherited member lists and member summaries into pointer lines, in place; how many
    members they named."""
    return _fold_doxygen(root) + _fold_doxygen_summaries(root)
