"""TypeDoc's pages: the members a class inherits read as one line per base.

TypeDoc marks each inherited member (``<section class="tsd-member
tsd-is-inherited">``, "Inherited from ``CommanderError.code``"): the
inherited members of a group are read as one line where the first of them
stood, "Inherited from CommanderError: code, exitCode, nestedError.".
"""

from __future__ import annotations

from kbflow.sources.web.apidocs.nodes import classes, elements, inherited_line, text
from kbflow.sources.web.tree import Node

__all__ = ["read"]


def _inherited_from(section: Node) -> str:
    """The type a TypeDoc member is inherited from: the first link of its "Inherited from" line."""
    for aside in elements(section, "aside", "tsd-sources"):
        for para in elements(aside, "p"):
            if text(para).strip().startswith("Inherited from"):
                links = elements(para, "a")
                return text(links[0]).strip() if links else text(para).strip()[len("Inherited from") :].strip()
    return "its base"


def read(root: Node) -> int:
    """TypeDoc: the inherited members of each group read as one line naming them, where the first stood."""
    folded = 0
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
