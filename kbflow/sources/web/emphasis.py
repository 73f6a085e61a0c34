"""Headings of a page that has no heading elements: its lines set in bold alone.

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_HEADING_CHARS", "all_bold", "bold_level"]

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
