"""The element-tree helpers the readers of generated API pages share."""

from __future__ import annotations

from kbflow.sources.web.tree import Node
from kbflow.text.pointers import inherited_from, pointer_line

__all__ = ["classes", "elements", "inherited_line", "text"]


def classes(node: Node) -> list[str]:
    return node.attrs.get("class", "").split()


def text(node: Node | str) -> str:
    if isinstance(node, str):
        return node
    return "".join(text(c) for c in node.children)


def elements(node: Node, tag: str | None = None, cls: str | None = None) -> list[Node]:
    """``node``'s descendants (and itself) with ``tag`` and the class ``cls``, in document order."""
    out = []
    stack: list[Node] = [node]
    while stack:
        cur = stack.pop()
        if (tag is None or cur.tag == tag) and (cls is None or cls in classes(cur)):
            out.append(cur)
        stack.extend(reversed([c for c in cur.children if isinstance(c, Node)]))
    return out


def inherited_line(origin: str, names: list[str]) -> str:
    """The pointer line that stands for members inherited from ``origin``: "Inherited from Command: name, help."
    (each name once, in order)."""
    return pointer_line(inherited_from(origin), names)
