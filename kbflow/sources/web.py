"""Saved web pages: the article text of each HTML file, headings kept, boilerplate dropped.

A source is one ``.html``/``.htm`` file or a folder of them (no network fetch).
Extraction, with the standard library's HTML parser:

- dropped: ``script``, ``style``, ``noscript``, ``template``, ``svg``, ``iframe``,
  ``head``, comments; hidden elements (``hidden``, ``aria-hidden="true"``,
  ``display:none`` / ``visibility:hidden`` inline styles); navigation and
  boilerplate (``nav``, ``header``, ``footer``, ``aside``, ``form``, ``button``, and
  elements whose id, class or role names a menu, sidebar, cookie banner, share
  bar, comments, related links, ads, newsletter or breadcrumbs);
- the content root is the ``article`` (or ``main`` / ``role="main"``) holding the
  most text, else ``body``;
- block elements (paragraphs, headings, list items, quotes, ``pre``, table
  cells, captions) become blocks joined by a blank line; headings are written
  as Markdown ``#`` lines so the document chunker keeps them as structure;
  whitespace is collapsed outside ``pre``.

The unit's layout maps each block's char span to the css path of its element
(``html > body > div#main > p:nth-of-type(3)``); a chunk's locator takes the
deepest element enclosing all of its blocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser

from kbflow import ids
from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileSetLoader, decode_text, read_bytes, register_loader

__all__ = ["WebLoader", "WebPage", "extract"]

_DROP_TAGS = {"script", "style", "noscript", "template", "svg", "iframe", "head", "object", "embed", "canvas", "select"}
_BOILERPLATE_TAGS = {"nav", "header", "footer", "aside", "form", "button", "dialog", "menu"}
_BOILERPLATE = re.compile(
    r"(^|[\s_-])(nav|navbar|menu|sidebar|side-bar|cookie|consent|share|sharing|social|comments?|related|promo|"
    r"advert|ads?|banner|newsletter|subscribe|breadcrumbs?|footer|header|masthead|popup|modal|skip-link)($|[\s_-])",
    re.IGNORECASE,
)
_BOILERPLATE_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "dialog", "menu", "menubar"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_BLOCKS = {
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "pre",
    "blockquote",
    "td",
    "th",
    "dd",
    "dt",
    "figcaption",
    "caption",
    "address",
    "summary",
}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_SPACE = re.compile(r"\s+")


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    parent: _Node | None
    children: list[_Node | str] = field(default_factory=list)
    css: str = ""
    size: int = 0
    #: holds a large share of the page's text: never dropped for its class or id alone
    big: bool = False


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root", {}, None)
        self.cur = self.root
        self.meta: dict[str, str] = {}
        self._in_title = False
        self.title = ""

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "meta" and a.get("property") in ("og:url", "og:title"):
            self.meta[a["property"]] = a.get("content", "")
        if tag == "link" and "canonical" in a.get("rel", "").split():
            self.meta["canonical"] = a.get("href", "")
        if tag == "title":
            self._in_title = True
        if tag in _VOID:
            if tag == "br":
                self.cur.children.append("\n")
            return
        node = _Node(tag, a, self.cur)
        self.cur.children.append(node)
        self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        node = self.cur
        while node is not self.root and node.tag != tag:
            node = node.parent  # type: ignore[assignment]
        if node is not self.root:
            self.cur = node.parent  # type: ignore[assignment]

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.cur.children.append(data)


def _dropped(node: _Node) -> bool:
    a = node.attrs
    if node.tag in _DROP_TAGS or node.tag in _BOILERPLATE_TAGS:
        return True
    if "hidden" in a or a.get("aria-hidden", "").lower() == "true" or _HIDDEN_STYLE.search(a.get("style", "")):
        return True
    if a.get("role", "").lower() in _BOILERPLATE_ROLES:
        return True
    if node.big or node.tag in ("html", "body", "main", "article"):
        return False
    return bool(_BOILERPLATE.search(a.get("class", "")) or _BOILERPLATE.search(a.get("id", "")))


def _raw_sizes(node: _Node) -> int:
    """Visible-ish text length under ``node`` (scripts and styles excluded), without class rules."""
    if node.tag in _DROP_TAGS:
        node.size = 0
        return 0
    n = sum(len(c.strip()) if isinstance(c, str) else _raw_sizes(c) for c in node.children)
    node.size = n
    return n


def _mark_big(node: _Node, total: int) -> None:
    node.big = node.size > 0.4 * total
    for c in node.children:
        if isinstance(c, _Node):
            _mark_big(c, total)


def _assign_css(node: _Node, path: str) -> None:
    """Give every element its css path; ``:nth-of-type(n)`` only where the parent has several of that tag."""
    elements = [c for c in node.children if isinstance(c, _Node)]
    totals: dict[str, int] = {}
    for child in elements:
        totals[child.tag] = totals.get(child.tag, 0) + 1
    seen: dict[str, int] = {}
    for child in elements:
        n = seen[child.tag] = seen.get(child.tag, 0) + 1
        ident = child.attrs.get("id", "")
        seg = child.tag + (f"#{ident}" if ident and re.fullmatch(r"[A-Za-z][\w-]*", ident) else "")
        seg += f":nth-of-type({n})" if totals[child.tag] > 1 else ""
        child.css = f"{path} > {seg}" if path else seg
        _assign_css(child, child.css)


def _text_len(node: _Node) -> int:
    if _dropped(node):
        return 0
    return sum(len(c.strip()) if isinstance(c, str) else _text_len(c) for c in node.children)


def _find(node: _Node, pred) -> list[_Node]:
    out = [node] if pred(node) else []
    for c in node.children:
        if isinstance(c, _Node) and not _dropped(c):
            out.extend(_find(c, pred))
    return out


@dataclass
class WebPage:
    """A page as kbflow reads it: its text and ``[char_start, char_end, css_path]`` per block."""

    text: str
    blocks: list[list]
    title: str | None
    url: str | None

    def layout(self) -> str:
        return json.dumps({"blocks": self.blocks}, separators=(",", ":"))


def extract(html: str) -> WebPage:
    """The article text of an HTML document, with its blocks' css paths."""
    tb = _TreeBuilder()
    tb.feed(html)
    tb.close()
    _assign_css(tb.root, "")
    _mark_big(tb.root, _raw_sizes(tb.root))
    mains = _find(tb.root, lambda n: n.tag in ("article", "main") or n.attrs.get("role") == "main")
    bodies = _find(tb.root, lambda n: n.tag == "body")
    best = max(mains, key=_text_len, default=None)
    root = best if best is not None and _text_len(best) > 200 else (bodies[0] if bodies else tb.root)

    blocks: list[tuple[str, str]] = []  # (text, css)

    def flush(parts: list[str], node: _Node, pre: bool) -> str:
        text = "".join(parts)
        text = text.strip("\n") if pre else _SPACE.sub(" ", text).strip()
        if text:
            if node.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
                text = "#" * int(node.tag[1]) + " " + text.replace("\n", " ")
            blocks.append((text, node.css))
        return ""

    def walk(node: _Node) -> None:
        if _dropped(node) and node is not root:
            return
        pre = node.tag == "pre"
        parts: list[str] = []
        for c in node.children:
            if isinstance(c, str):
                parts.append(c)
            elif _dropped(c):
                continue
            elif c.tag in _BLOCKS or c.tag in (
                "div",
                "section",
                "article",
                "main",
                "ul",
                "ol",
                "table",
                "tr",
                "tbody",
                "thead",
                "dl",
                "figure",
                "body",
                "html",
            ):
                flush(parts, node, pre)
                parts = []
                walk(c)
            else:
                parts.append(_inline(c, pre))
        flush(parts, node, pre)

    def _inline(node: _Node, pre: bool) -> str:
        out = []
        for c in node.children:
            if isinstance(c, str):
                out.append(c)
            elif not _dropped(c):
                out.append(_inline(c, pre or c.tag == "pre"))
        return "".join(out)

    walk(root)
    text_parts, spans, pos = [], [], 0
    for text, css in blocks:
        if text_parts:
            text_parts.append("\n\n")
            pos += 2
        spans.append([pos, pos + len(text), css])
        text_parts.append(text)
        pos += len(text)
    title = _SPACE.sub(" ", tb.meta.get("og:title") or tb.title).strip() or None
    url = tb.meta.get("canonical") or tb.meta.get("og:url") or None
    return WebPage("".join(text_parts), spans, title, url)


def read_page(path: str, data: bytes | None = None) -> WebPage:
    """Extract a saved page (UTF-8, or the charset its bytes decode as Latin-1 otherwise)."""
    data = read_bytes(path) if data is None else data
    try:
        html = decode_text(data, path)
    except SourceError:
        html = data.decode("latin-1")
    return extract(html)


@register_loader
class WebLoader(FileSetLoader):
    name = "web"
    suffixes = (".html", ".htm")
    what = "a saved web page"
    plural = "saved web pages"
    description = "saved web pages: an .html file or a folder of them (article text, headings kept)"

    max_file_mb = 16.0

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        data = read_bytes(path)
        page = read_page(path, data)
        if not page.text.strip():
            raise SourceError(f"{path}: no article text found (everything was script, navigation or hidden)")
        unit = RawUnit(
            source_id=source.source_id,
            unit_key=rel,
            text=page.text,
            content_kind="web",
            locator=Locator(kind="web", path=rel, url=page.url or rel, char_start=0, char_end=len(page.text)),
            title=page.title or rel,
            file_hash=ids.bytes_hash(data),
            language="markdown",
            layout=page.layout(),
        )
        return [unit]
