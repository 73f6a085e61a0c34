"""pdoc's pages: each member's signature a heading, the members a class inherits one line per base.

pdoc gives a member no heading element. A module's function or class is a
``<section id="echo">``, a class's member a ``<div id="Group.add_command"
class="classattr">``, and each opens with its signature in a ``<div
class="attr function">`` (``class``, ``variable``): read as paragraphs, the
chunks of a long module did not say whose parameters they list, and one
chunk held the end of one entry and the start of the next. Each signature
is read as a heading, ``## def echo(message=None, ...)`` for a module's
member and ``### def add_command(self, cmd, name=None)`` for a class's
(``#### `` where the class is nested), so each entry is a section of its
own and its chunks carry ``click.core > class Group(Command): > def
add_command(...)``. The "Parameters" and "Returns" headings pdoc writes
into a docstring (``<h6>``) stay below their member.

pdoc lists the members a class inherits in a ``<div class="inherited">``:
an "Inherited Members" heading, then per base its name and links to its
members, which are documented on the base. Each base's list is read as one
line, "Inherited from Command: context_class, name, callback, ...", under
its heading made a section beside the class's members (not a part of the
last one), so a search for what a member does finds its definition.

pdoc3, the older fork (``<meta name="generator" content="pdoc3 0.11.6">``),
writes each entry as a ``<dt id="click.core.Group.add_command">`` signature
and a ``<dd>`` body, a class's members in its ``<dd>`` under its own
"Methods" and "Class variables" headings (``<h3>``, as the page's sections
are ``<h2>``): each signature is read as a heading one level below its
section, and a class's headings one level below the class. Each entry's
source is a closed ``<details class="source">`` ("Expand source code"),
which a reader sees only on demand: it is left out
(:mod:`.source_views`). Its
"Inherited members" list names, per base, the members' links: each base
is one line, "Inherited from Parameter: consume_value, get_default, ...".
"""

from __future__ import annotations

from collections.abc import Callable

from kbflow.sources.web.apidocs.nodes import classes, elements, inherited_line, text
from kbflow.sources.web.tree import Node

__all__ = ["read"]

#: the classes pdoc gives a member's signature (``<div class="attr function">``) besides ``attr``
_KINDS = frozenset({"function", "class", "variable"})


def _ancestors(node: Node, counted: Callable[[Node], bool]) -> int:
    """How many of ``node``'s ancestors are ``counted``."""
    depth, parent = 0, node.parent
    while parent is not None:
        depth += counted(parent)
        parent = parent.parent
    return depth


def _depth(node: Node) -> int:
    """How many members ``node`` is nested in (a module's member 1, a class's member 2)."""
    return _ancestors(node, lambda n: (n.tag == "section" and bool(n.attrs.get("id"))) or "classattr" in classes(n))


def _read_signatures(root: Node) -> int:
    """Each member's signature made a heading, one level below the member that holds it; how many."""
    read = 0
    for node in elements(root, "div", "attr"):
        depth = _depth(node)
        if depth and _KINDS.intersection(classes(node)):
            node.tag = f"h{min(6, 1 + depth)}"
            params = elements(node, "span", "param")  # a long signature is one parameter a line, tab-indented
            for n, param in enumerate(params):
                if param.children and isinstance(param.children[0], str):
                    param.children[0] = (" " if n else "") + param.children[0].lstrip()
            read += 1
    return read


def _fold_inherited(root: Node) -> int:
    """Each class's inherited members read as one line per base; how many members."""
    folded = 0
    for block in elements(root, "div", "inherited"):
        heading = next(iter(elements(block, "h5")), None)  # "Inherited Members": a section beside the members
        lines: list[Node | str] = []
        if heading is not None:
            heading.tag = f"h{min(6, 2 + _depth(block))}"
            lines.append(heading)
        for group in elements(block, "dl"):
            base = next((" ".join(text(dt).split()) for dt in elements(group, "dt")), "")
            names = [name for name in (" ".join(text(dd).split()) for dd in elements(group, "dd")) if name]
            if names:
                lines.append(Node("p", {}, block, [inherited_line(base or "a base", names)]))
                folded += len(names)
        block.children = lines
    return folded


def _dd_depth(node: Node) -> int:
    """How many ``<dd>`` (entries' bodies) hold ``node``."""
    return _ancestors(node, lambda n: n.tag == "dd")


def _read_pdoc3(root: Node) -> int:
    """pdoc3: each entry's ``<dt id>`` signature a heading (a section's member one level below its ``<h2>``, a
    class's member below the class's own "Methods" heading), each inherited list one line per base; how many
    signatures and inherited members were read."""
    read = 0
    for dt in elements(root, "dt"):
        if dt.attrs.get("id") and any("name" in classes(c) for c in elements(dt, "code")):
            dt.tag = f"h{min(6, 3 + 2 * _dd_depth(dt))}"
            read += 1
    for heading in elements(root, "h3"):
        if depth := _dd_depth(heading):  # a class's "Methods", "Class variables": below the class's heading
            heading.tag = f"h{min(6, 2 + 2 * depth)}"
    for block in elements(root, "ul", "hlist"):
        for item in [c for c in block.children if isinstance(c, Node) and c.tag == "li"]:
            inner = next(iter(elements(item, "ul", "hlist")), None)
            if inner is None or inner is item:
                continue
            base = " ".join(text(next(iter(elements(item, "b")), item)).split())
            names = [" ".join(text(li).split()) for li in elements(inner, "li")]
            item.children = [inherited_line(base, names)]
            read += len(names)
    return read


def read(root: Node, generator: str = "pdoc") -> int:
    """Read a pdoc (or, ``generator="pdoc3"``, a pdoc3) page in place: each signature a heading, each class's
    inherited members one line per base. Returns how many signatures and inherited members were read."""
    if generator == "pdoc3":
        return _read_pdoc3(root)
    return _read_signatures(root) + _fold_inherited(root)
