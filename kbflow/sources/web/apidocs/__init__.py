"""API references read by their generators' own structure: copied members as pointers to their definitions.

An API generator documents a generic member again on every type that has
it (a trait's methods on each implementor, the members a class inherits),
and opens a page with summaries of the members its entries document again.
Such copies differ from each other by the owning type's name only, so they
outrank the type's own members and fill a top 5 with one text. Each
generator marks them in its own markup, read by a module of its own:

- :mod:`.rustdoc`: trait, auto-trait and blanket implementations; a module's
  item lists.
- :mod:`.javadoc`: descriptions copied from an overridden member; summary
  tables.
- :mod:`.doxygen`: members inherited from a base class; member summaries.
- :mod:`.typedoc`: inherited members.
- :mod:`.sphinx`: ``autosummary`` tables; the members autodoc documents
  again under each class that inherits them.
- :mod:`.pdoc`: inherited members; and each member's signature, which pdoc
  and pdoc3 write in no heading element, read as the heading of its entry.

Each reads a copy as one pointer line naming what it points to ("Members
documented on Iterator: next, size_hint, ...", "Documented below: add,
addAll, ..."), so a search for a member's name still finds the types that
have it, and the member's text is read where it is defined. And any
generator's member source folded into a closed ``<details>``
(mkdocstrings' "Source code in", pdoc3's "Expand source code") is left out
(:mod:`.source_views`).
"""

from __future__ import annotations

from kbflow.sources.web.apidocs import doxygen, javadoc, pdoc, rustdoc, sphinx, typedoc
from kbflow.sources.web.apidocs.source_views import leave_out_source_views
from kbflow.sources.web.tree import Node

__all__ = ["read_api_page"]


def read_api_page(root: Node, generator: str) -> int:
    """Read the page ``root`` as its ``generator`` (its ``<meta name="generator">``, lower case, without a
    version; ``""``: none) writes it, in place: each copy folded into a pointer line, each member's folded
    source left out (see the package's docs). Returns how many members, blocks or lists were read so.
    TypeDoc and Sphinx name themselves in no ``<meta>``: their pages are known by their classes."""
    left_out = leave_out_source_views(root)  # any generator's: mkdocstrings', pdoc3's
    return left_out + _read_generated(root, generator)


def _read_generated(root: Node, generator: str) -> int:
    if generator.startswith("javadoc"):
        return javadoc.read(root)
    if generator == "doxygen":
        return doxygen.read(root)
    if generator == "rustdoc":
        return rustdoc.read(root)
    if generator in ("pdoc", "pdoc3"):
        return pdoc.read(root, generator)
    return typedoc.read(root) + sphinx.read(root)
