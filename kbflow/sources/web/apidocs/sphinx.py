"""Sphinx's pages: each ``autosummary`` table read as one line naming the members it lists.

Sphinx's ``autosummary`` tables (``<table class="autosummary">``) list a
module's or class's members, each with the first line of its docstring,
which the member's own entry (on the page or its own) says again: each is
read as one line naming them, as Javadoc's summaries are.
"""

from __future__ import annotations

from kbflow.sources.web.apidocs.nodes import classes, elements, text
from kbflow.sources.web.tree import Node

__all__ = ["read"]


def read(root: Node) -> int:
    """Sphinx: each ``autosummary`` table read as one line naming the members it links to."""
    folded = 0
    for table in elements(root, "table", "autosummary"):
        links = [a for a in elements(table, "a") if "internal" in classes(a) and a.attrs.get("href")]
        names = [" ".join(text(a).split()) for a in links]
        if not any(names):
            continue
        here = all(a.attrs["href"].startswith("#") for a in links)
        where = "Documented below" if here else "Documented on their pages"
        table.children = [f"{where}: {', '.join(dict.fromkeys(n for n in names if n))}."]
        table.tag = "div"
        folded += 1
    return folded
