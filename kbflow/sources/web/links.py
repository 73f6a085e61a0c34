"""What a page links to, as a reader's browser would reach it, and which of those links are the site's navigation.

A crawl follows what a reader can reach from a page: its ``<a href>`` links,
the documents its frames and iframes show (mdBook's table of contents is an
``<iframe src="toc.html">`` inside ``<noscript>``; Javadoc's older sites are
framesets), and the pages its ``<link rel>`` names (``next``, ``prev``,
``contents``, ``index``, ``up``...). Some of these are *navigation*: the
site's own table of contents and reading order. A link inside a navigation
element (``<nav>``, or an element whose class or id names a sidebar, a table
of contents, a toctree, a menu or a navbar: mdBook's sidebar, Sphinx's
toctree and sidebar, Docusaurus' sidebar, rustdoc's sidebar, Javadoc's
navigation bar), a frame, a ``<link rel>`` and an ``<a rel="next">`` or
``prev`` are navigation; a link in the text is not. A crawl counts depth in
text links only, so a book whose chapters form a chain (each page linking
the next) is read whole at any depth. Doxygen writes its menu bar (the
namespaces, classes and files lists) into a script, ``menudata.js``, that
its pages load and a browser runs: a page's ``<script src>`` of such a
script is a link to read for the pages it names (:func:`menu_links`), all
of them navigation; without it, a crawl of Doxygen's pages reaches their
main page alone.

A link to an API generator's page of a source file is not followed: those
pages are left out of a source (:mod:`.conventions`), and rustdoc links one
from every item ("Source", ``<a class="src">``), Javadoc from every member
(``src-html/``), Sphinx's viewcode from every entry (``_modules/``) and
Doxygen from every file (``*_source.html``), so a crawl would spend its
page budget on them. Nor is a generator's page's link to one of its lists of
what other pages document (:data:`LISTS_NOT_FOLLOWED`), left out of a source
too: Javadoc's uses of each class and package, its index of every member,
its class trees, its deprecated list and help page (it writes a "Uses of"
page for every class: 223 of the 507 pages of Debian's Commons Lang), and
Doxygen's member lists of every class, its indexes of all members and file
members, and its graph legend (162 of the 451 pages of Debian's log4cplus). Every page
they link is reached from its package, class, file or namespace. The lists
of all classes (Javadoc's and Doxygen's) are followed, since a reader finds
every class there, but left out.
"""

from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

__all__ = ["LISTS_NOT_FOLLOWED", "MENU_SCRIPTS", "Link", "generator_of", "links_of", "menu_links", "page_links"]

#: ``<link rel>`` values that name another page of the same document set
NAV_RELS = frozenset(
    "next prev previous contents toc index start first last up chapter section subsection appendix glossary".split()
)
#: a class or id naming a navigation element
_NAV_NAME = re.compile(
    r"(?:^|[-_ ])(?:nav|navbar|sidebar|sidebars|toc|toctree|menu|navigation|subnav|topnav)(?:[-_ ]|$)"
)
#: the path of an API generator's page of a source file (Javadoc, Sphinx's viewcode, Doxygen)
_SOURCE_VIEW = re.compile(r"(?:^|/)(?:src-html|_modules)/|_source\.html$")
#: per generator (its ``<meta name="generator">``, lower case, starts with the key), the paths of its lists of what
#: other pages document that a crawl from one of its pages does not follow
LISTS_NOT_FOLLOWED = {
    "javadoc": re.compile(
        r"(?:^|/)(?:class-use/[^/]+|package-use|index-all|index-files/index-\d+|overview-tree|package-tree|"
        r"deprecated-list|help-doc)\.html$"
    ),
    "doxygen": re.compile(
        r"(?:^|/)(?:[^/]+-members|functions(?:_[^/.]+)?|globals(?:_[^/.]+)?|namespacemembers(?:_[^/.]+)?|"
        r"graph_legend|inherits)\.html$"
    ),
}
#: where rustdoc's "Source" links go: ``../src/<crate>/<file>.rs.html``
_RUSTDOC_SOURCE = re.compile(r"(?:^|/)src/.+\.html$")
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)


@dataclass(frozen=True)
class Link:
    """One link of a page: its absolute URL (no fragment), whether it is the site's navigation, and whether it
    is a script the site writes its navigation into (Doxygen's ``menudata.js``: read for its links with
    :func:`menu_links`, not a page)."""

    url: str
    navigation: bool = False
    menu: bool = False


#: the scripts a generator writes its navigation into, and the generator (a key of :data:`LISTS_NOT_FOLLOWED`):
#: Doxygen's menu bar (``var menudata={children:[{text:"Classes",url:"annotated.html",...``), which its pages
#: build with JavaScript
MENU_SCRIPTS = {"menudata.js": "doxygen"}
_MENU_URL = re.compile(r"""\burl\s*:\s*["']([^"']+)["']""")


def menu_links(script: str, url: str) -> list[Link]:
    """The pages a navigation script fetched from ``url`` names (each once, in order), as navigation links, but
    its generator's lists of what other pages document (the menu's "Class Members")."""
    lists = LISTS_NOT_FOLLOWED.get(MENU_SCRIPTS.get(urlsplit(url).path.rsplit("/", 1)[-1], ""))
    out: dict[str, None] = {}
    for href in _MENU_URL.findall(script):
        target = urldefrag(urljoin(url, href.strip())).url
        if urlsplit(target).scheme in ("http", "https") and not (lists and lists.search(urlsplit(target).path)):
            out.setdefault(target, None)
    return [Link(target, True) for target in out]


class _Links(html.parser.HTMLParser):
    """A page's links, the ``<base href>`` and its robots meta; navigation elements tracked as a stack."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.found: list[tuple[str, bool]] = []
        self.menus: list[str] = []  # the navigation scripts it loads (:data:`MENU_SCRIPTS`)
        self.robots = ""
        self.generator = ""  # its <meta name="generator">, lower case
        self._open: list[tuple[str, bool]] = []  # (tag, is a navigation element)

    def _in_nav(self) -> bool:
        return any(nav for _, nav in self._open)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        rel = set(values.get("rel", "").lower().split())
        if tag == "base" and values.get("href") and self.base is None:
            self.base = values["href"]
        elif tag == "a" and values.get("href") and "nofollow" not in rel and not _to_source(values):
            self.found.append((values["href"], self._in_nav() or bool(rel & {"next", "prev", "previous"})))
        elif tag == "link" and values.get("href") and rel & NAV_RELS:
            self.found.append((values["href"], True))
        elif tag in ("frame", "iframe") and values.get("src"):
            self.found.append((values["src"], True))
        elif tag == "script" and urlsplit(values.get("src", "")).path.rsplit("/", 1)[-1] in MENU_SCRIPTS:
            self.menus.append(values["src"])
        elif tag == "meta" and values.get("name", "").lower() in ("robots", "kbflow"):
            self.robots += "," + values.get("content", "").lower()
        elif tag == "meta" and values.get("name", "").lower() == "generator":
            self.generator = values.get("content", "").lower()
        if tag not in _VOID:
            names = f"{values.get('class', '')} {values.get('id', '')}".lower()
            self._open.append((tag, tag == "nav" or bool(_NAV_NAME.search(names))))

    def handle_comment(self, data: str) -> None:
        if not self.generator and data.strip().lower().startswith("generated by javadoc"):
            self.generator = "javadoc"  # JDK 8-15 name themselves so, not in a <meta name="generator">

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, max(-1, len(self._open) - 64), -1):  # close what it closes
            if self._open[i][0] == tag:
                del self._open[i:]
                return


def _to_source(values: dict[str, str]) -> bool:
    """Whether an ``<a>`` goes to a generator's page of a source file (rustdoc's ``Source``: ``class="src"``, to
    ``src/``)."""
    path = urlsplit(values["href"].strip()).path
    if "src" in values.get("class", "").split() and _RUSTDOC_SOURCE.search(path):
        return True
    return bool(_SOURCE_VIEW.search(path))


def generator_of(generator: str) -> str | None:
    """The key of :data:`LISTS_NOT_FOLLOWED` whose generator a page's ``generator`` (lower case) names, if any."""
    return next((key for key in LISTS_NOT_FOLLOWED if generator.startswith(key)), None)


def links_of(text: str, url: str, *, skip_lists: bool = True) -> list[Link]:
    """The ``http(s)`` links of a page fetched from ``url`` (absolute, fragments dropped, each once: as navigation
    where any of its appearances is); none when the page's robots meta says ``nofollow`` (or ``none``).
    ``skip_lists=False`` keeps the links to its generator's lists (:data:`LISTS_NOT_FOLLOWED`) too."""
    parser = _Links()
    try:
        parser.feed(text)
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken markup: keep what it read
        pass
    if {d.strip() for d in parser.robots.split(",")} & {"nofollow", "none"}:
        return []
    base = urljoin(url, parser.base) if parser.base else url
    lists = LISTS_NOT_FOLLOWED.get(generator_of(parser.generator) or "") if skip_lists else None
    out: dict[str, bool] = {}
    for href, navigation in parser.found:
        target = urldefrag(urljoin(base, href.strip())).url
        if lists is not None and lists.search(urlsplit(target).path):
            continue
        if urlsplit(target).scheme in ("http", "https"):
            out[target] = out.get(target, False) or navigation
    menus = [urldefrag(urljoin(base, src.strip())).url for src in parser.menus]
    return [Link(target, navigation) for target, navigation in out.items()] + [
        Link(src, True, menu=True) for src in dict.fromkeys(menus) if urlsplit(src).scheme in ("http", "https")
    ]


def page_links(text: str, url: str) -> list[str]:
    """The URLs of the pages :func:`links_of` finds, in the order the page names them."""
    return [link.url for link in links_of(text, url) if not link.menu]
