"""TypeDoc's pages: the members a class inherits read as one line per base, its index lists as one line each.

TypeDoc marks each inherited member (``<section class="tsd-member
tsd-is-inherited">``, "Inherited from ``CommanderError.code``"): the
inherited members of a group are read as one line where the first of them
stood, "Inherited from CommanderError: code, exitCode, nestedError.".

Each page opens with an index of what it documents (``<div
class="tsd-index-list">`` under "Properties", "Methods", "Functions"), one
link a member: each list is read as one line, "Documented below: getState,
replaceReducer, subscribe." (links to anchors of the page), or "Documented on
their pages: applyMiddleware, compose." (a module's index of pages).
"""

from __future__ import annotations

from kbflow.sources.web.apidocs.nodes import classes, elements, inherited_line, text
from kbflow.sources.web.tree import Node
from kbflow.text.pointers import DOCUMENTED_BELOW, DOCUMENTED_ELSEWHERE, pointer_line

__all__ = ["read"]


def _inherited_from(section: Node) -> str:
    """The type a TypeDoc member is inherited from: the first link of its "Inherited from" line."""
    for aside in elements(section, "aside", "tsd-sources"):
        for para in elements(aside, "p"):
            if text(para).strip().startswith("Inherited from"):
                links = elements(para, "a")
                return text(links[0]).strip() if links else text(para).strip()[len("Inherited from") :].strip()
    return "its base"


def _fold_index_lists(root: Node) -> int:
    """TypeDoc: each index list of a page read as one line naming what it links to (see the module's docs)."""
    folded = 0
    for index in elements(root, "div", "tsd-index-list"):
        links = elements(index, "a", "tsd-index-link")
        names = [" ".join(text(link).split()) for link in links]
        if not any(names):
            continue
        here = all("#" in link.attrs.get("href", "") for link in links)
        index.children = [pointer_line(DOCUMENTED_BELOW if here else DOCUMENTED_ELSEWHERE, names)]
        folded += 1
    return folded


def read(root: Node) -> int:
    """TypeDoc: its index lists and the inherited members of each group read as one line each (the inherited
    members' where the first of them stood)."""
    folded = _fold_index_lists(root)
    for parent in elements(root):
        if not any(isinstance(c, Node) and "tsd-is-inherited" in classes(c) for c in parent.children):
            continue
        kept: list[Node | str] = []
        lines: dict[str, list[str]] = {}
        slot: dict[str, int] = {}
        for child in parent.children:
            if isinstance(child, Node) and child.tag == "section" and "tsd-is-inherited" in classes(child):
                base = _inherited_from(child)
                anchor = next((a.attrs["id"] for a in elements(child, "a", "tsd-anchor") if a.attrs.get("id")), "")
                name = anchor or "".join(text(h) for h in elements(child, "h3")[:1]).strip() or "a member"
                if base not in lines:
                    lines[base] = []
                    slot[base] = len(kept)
                    kept.append("")
                lines[base].append(name)
                folded += 1
            else:
                kept.append(child)
        for base, names in lines.items():
            kept[slot[base]] = inherited_line(base, names)
        parent.children = kept
    return folded
