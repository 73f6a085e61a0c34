"""Markers beside what they mark: a heading's permalink, a member's count of overloads, a link between the docs
and their source code, a code block's line numbers.

Generators write them into the text they mark: Sphinx's ``¶`` after every
heading and ``[source]`` after every signature, pdoc's "View Source", JSDoc's
"Source: command.js, line 25" under every entry, rustdoc's ``§`` and
``Source``, Doxygen's ``◆`` and ``[1/3]`` around each member's title, line
numbers beside code. They are no words of the page: the reading drops them
(:mod:`.extract`, the reason :data:`MARKER`, not listed among a page's dropped
elements since every heading has one), so a heading reads as its name and a
signature as itself.
"""

from __future__ import annotations

import re

from kbflow.sources.web.code import LINE_NUMBERS, line_numbers
from kbflow.sources.web.tree import Node

__all__ = ["MARKER", "OVERLOAD_COUNT", "PERMALINK", "VIEWCODE", "is_marker"]

#: why a marker is dropped (not listed in the page's layout: every heading has one)
MARKER = "a permalink, source link or line number marker"
#: the classes of a heading's permalink (``<a class="headerlink" href="#x">¶</a>``: Sphinx and MkDocs; Docusaurus,
#: VitePress, AnchorJS, nbconvert, rustdoc's ``§``; Doxygen's ``<span class="permalink">`` around its ``◆``): a
#: symbol of at most 3 characters, no word of the heading
PERMALINK = frozenset(
    {"headerlink", "hash-link", "header-anchor", "anchorjs-link", "anchor-link", "anchor", "doc-anchor", "permalink"}
)
#: Doxygen's count of a member's overloads in its entry's title (``Logger() <span class="overload">[1/3]</span>``):
#: no word of the member's name, so the overloads' titles are the member's name alike (one entry)
OVERLOAD_COUNT = re.compile(r"\[\d+/\d+\]")
#: links between the docs and their source code: Sphinx's ``[source]`` and ``[docs]``, pdoc's "View Source" (a
#: ``<label>`` that shows the source it hides); rustdoc's ``Source``: below
VIEWCODE = frozenset({"viewcode-link", "viewcode-back", "view-source-button"})


def is_marker(node: Node, classes: list[str]) -> bool:
    """Whether ``node`` (with these classes) is a marker beside what it marks: a heading's permalink, a count of
    overloads, a link to or from the source code, line numbers (:data:`MARKER`)."""
    if node.tag in ("a", "span") and node.size <= 3 and PERMALINK.intersection(classes):
        return True
    if node.tag == "span" and "overload" in classes:
        return bool(OVERLOAD_COUNT.fullmatch("".join(c for c in node.children if isinstance(c, str)).strip()))
    if node.tag in ("a", "span", "label") and node.size <= 11 and VIEWCODE.intersection(classes):
        return True
    if LINE_NUMBERS.intersection(classes) and line_numbers(node):
        return True
    if node.tag in ("dt", "dd") and "tag-source" in classes and node.size <= 200:  # JSDoc's "Source: x.js, line 25"
        return True
    return node.tag == "a" and "src" in classes and node.children == ["Source"]  # rustdoc's, at every item
