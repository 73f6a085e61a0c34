"""A web page's article text: headings kept, boilerplate and hidden text dropped, each block's css path kept.

The page is parsed with a real HTML5 parser (html5lib, the WHATWG algorithm
browsers implement: :mod:`.tree`), so the element tree is the one a browser
builds: omitted end tags (``<p>a<p>b``, ``<li>a<li>b``), implied ``<tbody>``,
misnested markup. Every css path kbflow records therefore selects, in a
browser, the element that holds the text.

- dropped: ``script``, ``style``, ``noscript``, ``template``, ``svg`` (inline
  SVG's titles and labels too), ``iframe``, ``head``, comments; text a reader
  cannot see (:mod:`.hidden`; a tab panel behind its tab is read: its reader
  chooses the tab); navigation and boilerplate (``nav``, ``header`` but
  an article's own (:func:`_own_header`), ``footer``, ``aside``, ``form``,
  ``button``, and elements whose id, class or role names a menu, sidebar,
  cookie banner, share bar, comments, related links, ads, newsletter,
  breadcrumbs or table of contents). What was dropped and why is kept in the
  page's layout (``dropped``);
- the content root is the ``article`` (or ``main`` / ``role="main"``) holding
  the most text, else ``body``;
- block elements (paragraphs, headings, list items, quotes, ``pre`` (one
  block whatever elements hold its lines, fenced as Markdown code where a
  line of it would read as a heading: :mod:`.code`),
  captions) become blocks joined by a blank line; a table's row of values is
  one block, its cells joined by ``" | "`` (:mod:`.rows`), where a row that
  lays out a page is read as blocks; any element holding blocks is a
  container, whatever its tag (inline XBRL's ``<ix:nonNumeric>``, a web
  component); headings are written as Markdown ``#`` lines so the document
  chunker keeps them as structure, and a page with no heading element takes
  its bold lines as headings (:mod:`.emphasis`: an SEC filing's ``PART II``,
  ``Item 7.``, statement titles); whitespace is collapsed outside ``pre``.

The layout maps each block's char span to the css path of its element
(``html > body > div#main > p:nth-of-type(3)``); a chunk's locator takes the
deepest element enclosing all of its blocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kbflow.sources.web.apidocs import read_api_page
from kbflow.sources.web.code import code_block, is_code_block
from kbflow.sources.web.emphasis import MAX_HEADING_CHARS, all_bold, api_depth, bold_level
from kbflow.sources.web.hidden import StyleRules, hidden_reason, sibling_hidden_reason
from kbflow.sources.web.links import JAVADOC_COMMENT, REFRESH_URL
from kbflow.sources.web.markers import MARKER, is_marker
from kbflow.sources.web.rows import CELL_SEP, row_text
from kbflow.sources.web.tree import HEADINGS, Node, assign_css, parse
from kbflow.sources.web.xbrl import COVER_LINES, cover_title, filing_facts, filing_title

__all__ = ["WebPage", "extract"]

_DROP_TAGS = {"script", "style", "noscript", "template", "svg", "iframe", "head", "object", "embed", "canvas", "select"}
_BOILERPLATE_TAGS = {"nav", "header", "footer", "aside", "form", "button", "dialog", "menu"}
_BOILERPLATE = re.compile(
    r"(^|[\s_-])(nav|navbar|menu|sidebar|side-bar|cookie|consent|share|sharing|social|comments?|related|promo|"
    r"advert|ads?|banner|newsletter|subscribe|breadcrumbs?|footer|header|masthead|popup|modal|skip-link|"
    r"toc|table-of-contents)($|[\s_-])",
    re.IGNORECASE,
)
_BOILERPLATE_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "dialog", "menu", "menubar"}
_BLOCKS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "blockquote", "td", "th", "dd", "dt",
    "figcaption", "caption", "address", "summary",
}  # fmt: skip
#: blocks that are never a heading, bold or not (a list's item, a cell, a quote, code)
_NOT_BOLD_HEADINGS = frozenset({"pre", "li", "dt", "dd", "td", "th", "caption", "figcaption", "blockquote", "summary"})
_CONTAINERS = {
    "div", "section", "article", "main", "ul", "ol", "table", "tr", "tbody", "thead", "tfoot", "dl", "figure",
    "body", "html", "details",
}  # fmt: skip
#: elements that end a line inside a ``<pre>`` (its cells do not: a row is one line)
_LINES = (_BLOCKS | _CONTAINERS) - {"td", "th"}
#: elements a class or id never marks as boilerplate: headings and inline text are content wherever they are
#: (mdBook writes every heading as ``<h2><a class="header" href="#x">Title</a></h2>``)
_NOT_REGIONS = {
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "span", "em", "strong", "b", "i", "code", "small", "sup", "sub",
    "abbr", "mark", "kbd", "var", "q", "cite", "time", "u", "s",
}  # fmt: skip
#: classes of an API generator's documentation comment: a member's description, never a page's comment thread
#: (TypeDoc writes each member's TSDoc in ``<div class="tsd-comment tsd-typography">``)
_DOC_COMMENTS = frozenset({"tsd-comment", "doc-comment", "doccomment", "jsdoc", "tsdoc"})
_SPACE = re.compile(r"\s+")
#: dropped elements listed in a page's layout, at most
MAX_DROPPED_LISTED = 200


class _Rules:
    def __init__(self, styles: StyleRules) -> None:
        self.styles = styles

    def why(self, node: Node) -> str:
        """Why ``node`` is not content ("" when it is); computed once per node."""
        if node.why is None:
            node.why = self._why(node)
        return node.why

    def _why(self, node: Node) -> str:
        a = node.attrs
        if node.tag in _DROP_TAGS:
            return f"<{node.tag}>"
        hidden = hidden_reason(node.tag, a, self.styles)
        if not hidden and self.styles.siblings and node.parent is not None:
            hidden = sibling_hidden_reason(node.tag, a, lambda: _before(node), self.styles)
        if hidden and not _shown_once_scripts_ran(node, hidden) and not _behind_its_tab(node, hidden):
            return f"hidden: {hidden}"
        if node.tag in _BOILERPLATE_TAGS and not (node.tag == "header" and _own_header(node)):
            return f"boilerplate: <{node.tag}>"
        if a.get("role", "").lower() in _BOILERPLATE_ROLES:
            return f'boilerplate: role="{a["role"]}"'
        classes = a.get("class", "").split()
        if is_marker(node, classes):
            return MARKER
        if node.big or node.tag in ("html", "body", "main", "article") or node.tag in _NOT_REGIONS:
            return ""
        if _DOC_COMMENTS.intersection(c.lower() for c in classes):
            return ""
        for name in ("class", "id"):
            for m in _BOILERPLATE.finditer(a.get(name, "")):
                if m.group(2).lower() != "header" or node.tag not in ("header", "div") or not _own_header(node):
                    return f'boilerplate: {name} "{m.group(2)}"'
        return ""


def _own_header(node: Node) -> bool:
    """Whether ``node`` (a ``<header>``, or a ``<div>`` classed as one) is the article's own header, not the site's
    banner: a ``<header>`` in an ``<article>`` (its title, date and authors: Docusaurus puts a page's ``<h1>`` in
    one, WordPress its ``entry-header``), or either in the page's ``<main>`` holding its ``<h1>`` (Javadoc's
    ``<div class="header"><h1>Class Pump</h1>``)."""
    at, main = node.parent, False
    while at is not None:
        if at.tag == "article" and node.tag == "header":
            return True
        main = main or at.tag in ("article", "main") or at.attrs.get("role", "").lower() == "main"
        at = at.parent
    return main and _holds_h1(node)


def _holds_h1(node: Node) -> bool:
    return any(isinstance(c, Node) and (c.tag == "h1" or _holds_h1(c)) for c in node.children)


def _before(node: Node) -> list[tuple[str, dict[str, str]]]:
    """``(tag, attrs)`` of the elements before ``node`` among its parent's children."""
    out: list[tuple[str, dict[str, str]]] = []
    for c in node.parent.children if node.parent is not None else ():
        if c is node:
            break
        if not isinstance(c, str):
            out.append((c.tag, c.attrs))
    return out


def _shown_once_scripts_ran(node: Node, hidden: str) -> bool:
    """Whether hiding ``node`` hides a whole page until its scripts show it, not some text from its reader.

    Frame-busting (``html { display: none }`` until a script sees the page is not framed) and anti-flicker
    snippets (``body { visibility: hidden }`` or ``opacity: 0`` until a test variant loads) hide the page
    itself: every word of it is hidden alike, so no text is hidden from a reader who sees the rest. An
    ``aria-hidden`` container that holds most of the page (an app's root while a dialog is open) is on
    screen: ``aria-hidden`` hides from screen readers, not from the eye. Hidden elements inside either
    are still dropped.
    """
    return node.tag in ("html", "body") or (node.big and hidden == 'aria-hidden="true"')


def _behind_its_tab(node: Node, hidden: str) -> bool:
    """Whether ``node`` is a tab panel its reader shows by choosing its tab: Docusaurus and sphinx-tabs give
    every panel but the chosen one the ``hidden`` attribute (an install command for npm, yarn and pnpm; an
    example in Python, Java and Go). Only a panel beside a panel on screen, in one tab set, and hidden by that
    attribute alone: a lone hidden panel is hidden text like any other."""
    if hidden != "hidden attribute" or node.attrs.get("role", "").lower() != "tabpanel" or node.parent is None:
        return False
    return any(
        isinstance(c, Node) and c.attrs.get("role", "").lower() == "tabpanel" and "hidden" not in c.attrs
        for c in node.parent.children
    )


def _raw_sizes(node: Node) -> int:
    """Visible-ish text length under ``node`` (scripts and styles excluded), without class rules; marks the
    elements that hold blocks (:attr:`Node.blocky`)."""
    if node.tag in _DROP_TAGS:
        node.size = 0
        return 0
    n = 0
    for c in node.children:
        if isinstance(c, str):
            n += len(c.strip())
        else:
            n += _raw_sizes(c)
            node.blocky = node.blocky or c.blocky or c.tag in _BLOCKS or c.tag in _CONTAINERS
    node.size = n
    return n


def _mark_big(node: Node, total: int) -> None:
    node.big = node.size > 0.4 * total
    for c in node.children:
        if isinstance(c, Node):
            _mark_big(c, total)


@dataclass
class WebPage:
    """A page as kbflow reads it: its text, ``[char_start, char_end, css_path]`` per block, and what was
    dropped as hidden or boilerplate (``{"css_path", "reason", "chars"}`` per element)."""

    text: str
    blocks: list[list]
    title: str | None
    url: str | None
    dropped: list[dict[str, Any]] = field(default_factory=list)
    #: the page's ``<meta name="robots">`` directives, lower case (``"noindex, follow"``)
    robots: str | None = None
    #: where a ``<meta http-equiv="refresh">`` sends the reader (a redirect stub), if anywhere
    redirect: str | None = None
    #: the page's ``<link rel="canonical">``, as written
    canonical: str | None = None
    #: where the page's ``<link rel="index">`` and ``<link rel="search">`` point, as written (the site's index
    #: and search pages, e.g. Sphinx's ``genindex.html`` and ``search.html``)
    site_pages: dict[str, str] = field(default_factory=dict)
    #: the generator its ``<meta name="generator">`` names, lower case, without a version (``rustdoc``,
    #: ``doxygen``, ``javadoc/sourcetohtmlconverter``; ``""``: none)
    generator: str = ""
    #: the classes of its ``<body>`` (rustdoc's source view: ``rustdoc src``)
    body_classes: tuple[str, ...] = ()

    def layout(self) -> str:
        return json.dumps({"blocks": self.blocks, "dropped": self.dropped}, separators=(",", ":"))


#: rules of a generator's own stylesheet that hide text, for the pages that name it (``<meta name="generator">``):
#: kbflow reads no linked stylesheet, and these hide on every page (Doxygen's hover tooltips, ``.ttc``, closing
#: each source page; its search frames' "Loading... Searching... No Matches" statuses; rustdoc's "Expand
#: description" label of a description shown open, which its stylesheet hides)
_GENERATOR_CSS = {
    "doxygen": ".ttc, .SRStatus { display: none }\n",
    "rustdoc": "summary.hideme { display: none }\n",
}


def _generator(meta: dict[str, str]) -> str:
    """The page's generator, lower case, without its version (``Doxygen 1.9.4``: ``doxygen``)."""
    return (meta.get("generator", "").split() or [""])[0].lower()


def extract(html: str) -> WebPage:
    """The article text of an HTML document, with its blocks' css paths and what was dropped."""
    root_node, meta, css, facts, headings = parse(html)
    if not meta.get("generator") and re.search("<!--" + JAVADOC_COMMENT.pattern, html[:4096], re.IGNORECASE):
        meta["generator"] = "javadoc"  # JDK 8-15 (its summaries and copied descriptions are read as pointers)
    filing = filing_title(filing_facts(facts))
    if filing:
        meta["filing"] = filing
    assign_css(root_node, "")
    read_api_page(root_node, _generator(meta))  # a generator's copies as pointers, its folded sources left out
    _mark_big(root_node, _raw_sizes(root_node))
    reading = _Reading(_Rules(StyleRules.parse(_GENERATOR_CSS.get(_generator(meta), "") + css)))
    article = reading.article(root_node)
    reading.bold_headings = not any(reading.shown_in(h, article) for h in headings)
    reading.walk(article, root=True)
    if "filing" not in meta and (cover := cover_title([text for text, _ in reading.blocks[:COVER_LINES]])):
        meta["filing"] = cover  # a filing from before inline XBRL: its cover page's lines
    heading = next((text[2:] for text, _ in reading.blocks if text.startswith("# ")), None)
    if heading and _SPACE.sub(" ", meta.get("title", "")).strip().casefold() in _NO_TITLES:
        meta["title"] = heading  # an untitled page (an export's "Document") is titled by its <h1>
    return _page(reading.blocks, meta, reading.dropped)


#: ``<title>``s that name no page: none, or a word processor's or an editor's placeholder
_NO_TITLES = frozenset({"", "document", "untitled", "untitled document", "new document", "untitled page"})


class _Reading:
    """One page read as its reader sees it: the article's blocks, and what was dropped and why."""

    def __init__(self, rules: _Rules) -> None:
        self.rules = rules
        self.dropped: list[dict[str, Any]] = []
        self.blocks: list[tuple[str, str]] = []  # (text, css)
        #: the page has no heading element: its bold lines are its headings (:mod:`.emphasis`)
        self.bold_headings = False
        #: the level of the last heading read: an API entry's signature is a heading below it
        self.section_level = 1

    def content(self, node: Node) -> bool:
        """Whether ``node`` is content; a dropped element with text is listed once, with its reason."""
        why = self.rules.why(node)
        if why and node.size and len(self.dropped) < MAX_DROPPED_LISTED and not why.startswith("<") and why != MARKER:
            if not any(node.css.startswith(d["css_path"] + " > ") or node.css == d["css_path"] for d in self.dropped):
                self.dropped.append({"css_path": node.css, "reason": why, "chars": node.size})
        return not why

    def text_len(self, node: Node) -> int:
        if self.rules.why(node):
            return 0
        return sum(len(c.strip()) if isinstance(c, str) else self.text_len(c) for c in node.children)

    def shown_in(self, node: Node, article: Node) -> bool:
        """Whether ``node`` is content inside ``article`` (neither it nor an element around it dropped)."""
        at: Node | None = node
        while at is not None and at is not article:
            if self.rules.why(at):
                return False
            at = at.parent
        return at is article

    def find(self, node: Node, pred: Callable[[Node], bool]) -> list[Node]:
        out = [node] if pred(node) else []
        for c in node.children:
            if isinstance(c, Node) and not self.rules.why(c):
                out.extend(self.find(c, pred))
        return out

    def article(self, root_node: Node) -> Node:
        """The ``<article>`` or ``<main>`` with the most text (over 200 characters), else the one that holds the
        page's ``<h1>`` (a short page of an API reference: rustdoc's module of two items), else the body."""
        mains = self.find(root_node, lambda n: n.tag in ("article", "main") or n.attrs.get("role") == "main")
        bodies = self.find(root_node, lambda n: n.tag == "body")
        best = max(mains, key=self.text_len, default=None)
        if best is not None and self.text_len(best) > 200:
            return best
        titled = [m for m in mains if _holds_h1(m) and self.text_len(m) > 0]
        if len(titled) == 1:
            return titled[0]
        return bodies[0] if bodies else root_node

    def flush(self, parts: list[str], node: Node, pre: bool) -> None:
        text = "".join(parts)
        text = code_block(text) if pre else _SPACE.sub(" ", text).strip()
        if text:
            level = int(node.tag[1]) if node.tag in HEADINGS else 0
            if not level and self.bold_heading(node, text):
                level = bold_level(text)
            if level:
                self.section_level = level
            elif depth := api_depth(node):  # one level below its section, a class's members one more
                level = min(6, self.section_level + depth)
            if level:
                text = "#" * level + " " + text.replace("\n", " ")
            self.blocks.append((text, node.css))

    def row_heading(self, row: Node, text: str) -> str | None:
        """A filing's part or item heading laid out as a table row (``ITEM 7. | MANAGEMENT'S DISCUSSION ...``,
        all bold) as a heading line, cells a space apart; ``None`` for any other row."""
        level = bold_level(text)
        if not self.bold_headings or len(text) > MAX_HEADING_CHARS or level == 3 or not all_bold(row, self.content):
            return None
        return "#" * level + " " + text.replace(CELL_SEP, " ")

    def bold_heading(self, node: Node, text: str) -> bool:
        """Whether the block ``text`` (all of ``node``'s) is a heading of a page without heading elements."""
        if not self.bold_headings or node.blocky or node.tag in _NOT_BOLD_HEADINGS or len(text) > MAX_HEADING_CHARS:
            return False
        return text[0] != "#" and any(c.isalpha() for c in text) and all_bold(node, self.content)

    def inline(self, node: Node, pre: bool) -> str:
        out = []
        for c in node.children:
            if isinstance(c, str):
                out.append(c)
            elif self.content(c):
                text = self.inline(c, pre or c.tag == "pre")
                if pre and c.tag in _LINES and text and not text.endswith("\n"):
                    text += "\n"  # a highlighter's line element (Prism's <div class="token-line">) ends a line
                out.append(text)
        return "".join(out)

    def code_text(self, node: Node) -> str:
        """A code block's text: a ``<pre>``'s as written; Doxygen's fragment is its line elements, a line each
        (the line breaks between them in the markup are not the page's: only the lines keep their spaces)."""
        if node.tag == "pre":
            return self.inline(node, True)
        lines = (self.inline(c, True) for c in node.children if not isinstance(c, str) and self.content(c))
        return "\n".join(line.rstrip("\n") for line in lines)

    def walk(self, node: Node, root: bool = False) -> None:
        if not root and not self.content(node):
            return
        if is_code_block(node):  # one block, whatever elements hold its lines
            self.flush([self.code_text(node)], node, True)
            return
        parts: list[str] = []
        for c in node.children:
            if isinstance(c, str):
                parts.append(c)
            elif not self.content(c):
                continue
            elif c.tag == "tr" and (row := row_text(c, self.content)) is not None:
                self.flush(parts, node, False)
                parts = []
                if row:
                    self.blocks.append((self.row_heading(c, row) or row, c.css))
            elif c.tag in _BLOCKS or c.tag in _CONTAINERS or c.blocky:
                self.flush(parts, node, False)
                parts = []
                self.walk(c)
            else:
                parts.append(self.inline(c, False))
        self.flush(parts, node, False)


def _page(blocks: list[tuple[str, str]], meta: dict[str, str], dropped: list[dict[str, Any]]) -> WebPage:
    """The page from its blocks (joined by blank lines, each with its char span and css path) and metadata."""
    text_parts: list[str] = []
    spans: list[Any] = []
    pos = 0
    for text, path in blocks:
        if text_parts:
            text_parts.append("\n\n")
            pos += 2
        spans.append([pos, pos + len(text), path])
        text_parts.append(text)
        pos += len(text)
    title = _SPACE.sub(" ", meta.get("filing") or meta.get("og:title") or meta.get("title", "")).strip() or None
    url = meta.get("canonical") or meta.get("og:url") or None
    refresh = REFRESH_URL.search(meta.get("refresh", ""))
    return WebPage(
        "".join(text_parts),
        spans,
        title,
        url,
        dropped,
        robots=meta.get("robots") or None,
        redirect=refresh.group(1).strip(" '\"") if refresh else None,
        canonical=meta.get("canonical") or None,
        site_pages={rel: meta[f"rel-{rel}"] for rel in ("index", "search") if f"rel-{rel}" in meta},
        generator=_generator(meta),
        body_classes=tuple(meta.get("body-class", "").split()),
    )
