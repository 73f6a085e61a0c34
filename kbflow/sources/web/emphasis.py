"""Headings that are no heading elements: a page's lines set in bold alone, an API reference's entries.

An SEC filing (inline XBRL HTML, as EDGAR publishes every 10-K and 10-Q)
and many a page exported from a word processor have no ``<h1>``-``<h6>``:
their headings are ``<div><span style="font-weight:700">Item 7. ...</span></div>``.
Read as paragraphs, none of their chunks had a heading path, and a chunk
of a statement did not say which statement it is. In a page with no heading
element, a block whose every word is bold (``<b>``, ``<strong>`` or a
``font-weight`` of bold or 600-900 in its style), that holds a letter (a
cover page's rule of bold underscores is none) and that is at most
:data:`MAX_HEADING_CHARS` long is a heading: level 1 for a filing's
``PART I``, 2 for its ``Item 7.``, 3 for any other. A page with heading
elements keeps only those.

An API reference written by Sphinx (most Python projects' documentation)
gives each function, class, method and attribute a ``<dt>`` signature in a
``<dl class="py method">``, not a heading: the chunks of a long entry did
not say whose parameters they list, and one chunk held the end of one
entry and the start of the next. Each signature is a heading one level
below the section it is in, an entry nested in a class one more
(:func:`api_depth`), so each entry is a section of its own and its chunks
carry ``Developer Interface > Main Interface > requests.request(method,
url, **kwargs)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_HEADING_CHARS", "all_bold", "api_depth", "bold_level"]

#: a bold block longer than this is an emphasized paragraph, not a heading
MAX_HEADING_CHARS = 200
_BOLD_STYLE = re.compile(r"font-weight\s*:\s*(bold|bolder|[6-9]00)\b", re.IGNORECASE)
_PLAIN_STYLE = re.compile(r"font-weight\s*:\s*(normal|lighter|[1-5]00)\b", re.IGNORECASE)
_PART = re.compile(r"part\s+[ivx]+\b", re.IGNORECASE)
_ITEM = re.compile(r"item\s+\d+[a-z]?\s*[.:]", re.IGNORECASE)


def all_bold(node: Any, content: Callable[[Any], bool], bold: bool = False) -> bool:
    """Whether every word under ``node`` is set in bold (``bold``: its parent's text is); ``content(node)``
    says whether an element is read at all."""
    style = node.attrs.get("style", "")
    if node.tag in ("b", "strong") or _BOLD_STYLE.search(style):
        bold = True
    elif _PLAIN_STYLE.search(style):
        bold = False
    for child in node.children:
        if isinstance(child, str):
            if child.strip() and not bold:
                return False
        elif content(child) and not all_bold(child, content, bold):
            return False
    return True


def bold_level(text: str) -> int:
    """The heading level of a bold line: 1 for a filing's part (``PART II``), 2 for its item (``Item 7.``), else 3."""
    if _PART.match(text):
        return 1
    if _ITEM.match(text):
        return 2
    return 3


#: Sphinx's object types, as classes of the ``<dl>`` around an entry (``<dl class="py method">``)
_API_OBJECTS = frozenset(
    "function class method attribute data exception classmethod staticmethod property decorator module type "
    "member var macro struct enum enumerator union concept".split()
)


def _api_dl(node: Any) -> bool:
    return node.tag == "dl" and bool(_API_OBJECTS.intersection(node.attrs.get("class", "").split()))


def api_depth(node: Any) -> int:
    """How deep the API entry whose signature is the ``<dt>`` ``node`` is nested (1: not inside another entry),
    or 0 where it is none: Sphinx's ``<dt class="sig sig-object">`` (Sphinx 4 and later), or a ``<dt id>`` in a
    ``<dl>`` of an object type (older Sphinx's ``<dl class="function"><dt id="requests.get">``)."""
    if node.tag != "dt":
        return 0
    parent = node.parent
    if "sig-object" not in node.attrs.get("class", "").split() and not (
        node.attrs.get("id") and parent is not None and _api_dl(parent)
    ):
        return 0
    depth = 0
    while parent is not None:
        depth += _api_dl(parent)
        parent = parent.parent
    return max(depth, 1)
