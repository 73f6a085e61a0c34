"""A member's source code that an API reference shows on demand, left out of the reading.

API generators can put each member's source code on its page, folded into a
closed ``<details>`` that a reader opens on demand: mkdocstrings ("Source
code in ``click/core.py``", on by default), pdoc3 ("Expand source code").
A browser shows such a block only once it is opened, and its text is the
code the reference documents again: read as the page's text, it was more
than half of a reference (mkdocstrings' reference of click: 448,520
characters, most of them source), and a member's code outranked its
documentation. A closed ``<details>`` whose ``<summary>`` names the source
and that holds code (a ``<pre>``) is left out, listed among the page's
dropped elements with :data:`SOURCE_CODE` as its reason, whatever the
generator. One left open (``<details open>``) is read, and so is one that
holds no code (a note titled "Source"). The source files themselves stay
where a source holds them (a ``repo`` source), and a generator's pages of
source files are left out by :mod:`kbflow.sources.web.conventions`.
"""

from __future__ import annotations

import re

from kbflow.sources.web.apidocs.nodes import elements, text
from kbflow.sources.web.tree import Node

__all__ = ["SOURCE_CODE", "leave_out_source_views"]

#: why a member's folded source is left out (listed among the page's dropped elements)
SOURCE_CODE = "source code: a member's source, shown on demand (a closed <details>)"
#: a ``<summary>`` that names the source it folds
_SOURCE_SUMMARY = re.compile(r"^\s*(?:source code\b|expand source\b|show source\b|view source\b|source\s*$)", re.I)


def leave_out_source_views(root: Node) -> int:
    """Mark each closed ``<details>`` of ``root`` that holds code and whose summary names it source code as not
    content (:data:`SOURCE_CODE`); how many."""
    marked = 0
    for details in elements(root, "details"):
        if "open" in details.attrs:
            continue
        summary = next(iter(elements(details, "summary")), None)
        if summary is None or not elements(details, "pre"):  # no code in it: a note titled "Source" is read
            continue
        if _SOURCE_SUMMARY.match(" ".join(text(summary).split())):
            details.why = SOURCE_CODE
            marked += 1
    return marked
