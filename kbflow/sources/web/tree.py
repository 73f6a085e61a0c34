"""A web page parsed as a browser builds it: the element tree kbflow reads, and what its ``<head>`` says.

html5lib runs the WHATWG parsing algorithm browsers implement, so omitted end
tags (``<p>a<p>b``), implied ``<tbody>`` and misnested markup give the tree a
browser gives, and every css path recorded (:func:`assign_css`) selects, in a
browser, the element that holds the text. An element nested deeper than
:data:`MAX_DEPTH` is attached at that depth, as browsers' parsers do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kbflow._lazy import require
from kbflow.sources.web.xbrl import FACTS

__all__ = ["HEADINGS", "MAX_DEPTH", "Node", "Parsed", "assign_css", "parse"]

HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: elements nested deeper are attached at this depth, as browsers' parsers do (Blink's limit is 512): the
#: page's reading is recursive, and a page of thousands of unclosed ``<div>`` must not exhaust the stack
MAX_DEPTH = 256
#: an inline ``<svg>`` as the parser names it (HTML elements are not namespaced)
_SVG = "{http://www.w3.org/2000/svg}svg"
_IDENT = re.compile(r"[A-Za-z][\w-]*")


@dataclass
class Node:
    """An element of the page: its tag (an inline ``<svg>`` named ``svg``), attributes and children (text runs
    and elements, in order); the reading fills in the rest."""

    tag: str
    attrs: dict[str, str]
    parent: Node | None
    children: list[Node | str] = field(default_factory=list)
    css: str = ""
    size: int = 0
    #: holds a large share of the page's text: never dropped for its class or id alone
    big: bool = False
    #: why this element is not content (computed once, unless a generator's reader set it first: Doxygen's
    #: cross-references), "" when it is
    why: str | None = None
    #: holds a block or container element: read as a container whatever its tag (an inline XBRL
    #: ``<ix:nonNumeric>`` around a filing's note, a web component, an ``<a>`` around a card's ``<div>``)
    blocky: bool = False


def _head_element(tag: str, attrs: dict[str, str], element: Any, meta: dict[str, str], styles: list[str]) -> None:
    """Keep what ``element`` says about the page: ``og:`` and canonical links, robots, generator, refresh, title,
    styles, the body's classes."""
    if tag == "meta" and attrs.get("property") in ("og:url", "og:title"):
        meta[attrs["property"]] = attrs.get("content", "")
    elif tag == "meta" and attrs.get("name", "").lower() in ("robots", "googlebot"):
        meta["robots"] = (meta.get("robots", "") + "," + attrs.get("content", "")).strip(",").lower()
    elif tag == "meta" and attrs.get("name", "").lower() == "generator":
        meta["generator"] = attrs.get("content", "")
    elif tag == "meta" and attrs.get("http-equiv", "").lower() == "refresh":
        meta["refresh"] = attrs.get("content", "")
    elif tag == "link" and "canonical" in attrs.get("rel", "").split():
        meta["canonical"] = attrs.get("href", "")
    elif tag == "link" and {"index", "search"} & set(attrs.get("rel", "").lower().split()):
        for rel in {"index", "search"} & set(attrs["rel"].lower().split()):
            meta[f"rel-{rel}"] = attrs.get("href", "")
    elif tag == "title":
        meta["title"] = (element.text or "") + meta.get("title", "")
    elif tag == "style":
        styles.append(element.text or "")
    elif tag == "body":
        meta["body-class"] = attrs.get("class", "")


class Parsed(NamedTuple):
    """A page as :func:`parse` builds it, with the elements later steps look for, found on the way."""

    root: Node
    meta: dict[str, str]
    css: str
    #: its inline XBRL cover-page facts (:data:`kbflow.sources.web.xbrl.FACTS`), in document order
    facts: list[Node]
    #: its heading elements, in document order
    headings: list[Node]


def parse(html: str) -> Parsed:
    """The page as a :class:`Node` tree (browser-equal), its ``og:``/canonical metadata, its styles, its cover
    page's facts and its headings."""
    html5lib = require("html5lib")
    doc = html5lib.parse(html, treebuilder="etree", namespaceHTMLElements=False)
    meta: dict[str, str] = {}
    styles: list[str] = []
    root = Node("#root", {}, None)
    facts: list[Node] = []
    headings: list[Node] = []

    # iterative, depth first, in document order: (element, where it goes, that node's depth, its tail only)
    stack: list[tuple[Any, Node, int, bool]] = [(doc, root, 0, False)]
    while stack:
        element, parent, depth, tail_only = stack.pop()
        tag = element.tag
        if tail_only or not isinstance(tag, str):  # a comment or processing instruction: its tail only
            if element.tail:
                parent.children.append(element.tail)
            continue
        attrs = {str(k).lower(): str(v or "") for k, v in element.attrib.items()}
        _head_element(tag, attrs, element, meta, styles)
        stack.append((element, parent, depth, True))  # its tail, once its descendants are in
        if tag == "br":
            parent.children.append("\n")
            continue
        if tag == _SVG:  # inline SVG: its <title> and <text> are a picture's, dropped with it
            tag = "svg"
        node = Node(tag, attrs, parent)
        parent.children.append(node)
        if tag == "ix:nonnumeric" and attrs.get("name") in FACTS:
            facts.append(node)
        elif tag in HEADINGS:
            headings.append(node)
        if element.text:
            node.children.append(element.text)
        # as browsers' parsers do, an element nested deeper than MAX_DEPTH is attached at that depth
        holder, at = (node, depth + 1) if depth + 1 < MAX_DEPTH else (parent, depth)
        stack.extend((child, holder, at, False) for child in reversed(element))
    return Parsed(root, meta, "\n".join(styles), facts, headings)


def assign_css(node: Node, path: str) -> None:
    """Give every element its css path; ``:nth-of-type(n)`` only where the parent has several of that tag."""
    elements = [c for c in node.children if isinstance(c, Node)]
    totals: dict[str, int] = {}
    for child in elements:
        totals[child.tag] = totals.get(child.tag, 0) + 1
    seen: dict[str, int] = {}
    for child in elements:
        n = seen[child.tag] = seen.get(child.tag, 0) + 1
        ident = child.attrs.get("id", "")
        seg = child.tag + (f"#{ident}" if ident and _IDENT.fullmatch(ident) else "")
        seg += f":nth-of-type({n})" if totals[child.tag] > 1 else ""
        child.css = f"{path} > {seg}" if path else seg
        assign_css(child, child.css)
