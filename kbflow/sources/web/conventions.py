"""The conventions a site uses to say a page is not for search: robots ``noindex``, redirect stubs, canonicals,
its generated index and search pages, an API generator's views of source files.

A documentation site as its authors publish it holds pages nobody should find
in a search: the print page that repeats every chapter (robots ``noindex``),
stubs left where a page moved (``<meta http-equiv="refresh">``), copies
whose ``<link rel="canonical">`` names the page they copy, and the site's
generated index and search pages, which name themselves in their own
``<link rel="index">`` or ``<link rel="search">`` (Sphinx's ``genindex.html``
lists every symbol of the site, so it would match every query that names
one). Search engines honour the first three, and a site's own search box
skips its index.

API generators also write each source file as a page of its own: rustdoc's
``src/`` (``<body class="rustdoc src">``, which ``cargo doc`` writes for
every crate it documents), Javadoc's ``src-html/`` (``<body
class="source-page">``, generator ``javadoc/SourceToHTMLConverter``),
Doxygen's ``*_source.html`` ("tstring.h Source File"), Sphinx's
``_modules/`` (viewcode's "Source code for requests.api") and JSDoc's
``*.js.html`` ("JSDoc: Source: command.js"). They are the
code, not its documentation: each holds every docstring again beside its
code (rustdoc's and Javadoc's with each line's number read into the text,
"001/* 002 * Licensed to ..."), so a question about what a member does
finds a run of source lines instead of the member's entry. On Debian's
Commons Lang Javadoc they are half of the chunks. The member's entry links
to its lines; the code itself is searched as code by a ``repo`` source
over the sources.

Javadoc also writes lists of what other pages document: a "Uses of Class"
page for every class and package (each method elsewhere that takes or
returns it, with its signature and the first sentence of its description
again), the index of every member (``index-all.html``), the class trees,
the lists of all classes and packages, of deprecated members, and its help
page. JDK 16 and later name each in its ``<body>`` class
(``class-use-page``, ``index-page``, ``tree-page`` ...), older ones by its
path. Doxygen writes a "Member List" of every class with every inherited
member (``*-members.html``), the indexes of all class and file members
(``functions_*.html``, ``globals_*.html``), the class list, hierarchy and
index, the file list and a legend of its graphs. They are copies, as
Sphinx's genindex is: on Debian's Commons Lang the "Uses of" pages alone are
223 of 507, on log4cplus' Doxygen the lists are 167 of 451.

rustdoc writes two pages of its own beside every crate's, ``help.html`` and
``settings.html`` (``<body class="rustdoc mod sys">``): a title and a "Back"
link, which its script fills with keyboard shortcuts and theme choices.

kbflow leaves all of them out at load, listed with its reason, unless the
source sets :data:`ALL_PAGES_OPTION` (``kbflow add ... --all-pages``).
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from collections.abc import Collection

from kbflow.sources.web.extract import WebPage
from kbflow.sources.web.links import LISTS_NOT_FOLLOWED, generator_of

__all__ = ["ALL_PAGES_OPTION", "JAVADOC_LIST_PAGES", "canonical_rel", "left_out", "source_view"]

#: the source option that keeps every page, whatever the site says of it
ALL_PAGES_OPTION = "all_pages"
_HINT = "`kbflow add ... --all-pages` keeps it"
#: per generator, the paths of its lists of what other pages document: those a crawl does not follow, and those it
#: reads its way through (the lists of all classes and packages, JDK 8's frames, Doxygen's class and file lists)
_LIST_PATHS = {
    "javadoc": re.compile(
        LISTS_NOT_FOLLOWED["javadoc"].pattern
        + r"|(?:^|/)(?:allclasses(?:-index|-frame|-noframe)?|allpackages-index|overview-frame|package-frame)\.html$"
    ),
    "doxygen": re.compile(
        LISTS_NOT_FOLLOWED["doxygen"].pattern + r"|(?:^|/)(?:annotated|hierarchy|classes|files|namespaces)\.html$"
    ),
}
_LISTS_SAY = {
    "javadoc": ("Javadoc", "its uses, index, trees and lists of classes"),
    "doxygen": ("Doxygen", "its member lists and indexes, class and file lists"),
}
#: Javadoc's ``<body>`` classes of its lists of what other pages document (JDK 16 and later)
JAVADOC_LIST_PAGES = frozenset(
    {
        "class-use-page",
        "package-use-page",
        "index-page",
        "split-index-page",
        "tree-page",
        "package-tree-page",
        "all-classes-index-page",
        "all-packages-index-page",
        "deprecated-list-page",
        "help-page",
    }
)


def canonical_rel(href: str | None, rel: str, rels: Collection[str]) -> str | None:
    """The page of the source (one of ``rels``) that ``href``, the canonical of page ``rel``, names.

    A relative href is resolved against ``rel``; an absolute URL is matched by
    the longest page path its path ends with (``https://x.org/book/ch1.html``
    names ``book/ch1.html``, or ``ch1.html``). ``None``: no page of the source.
    """
    if not href:
        return None
    parts = urllib.parse.urlsplit(href.strip())
    path = urllib.parse.unquote(parts.path)
    if path.endswith("/") or not path:
        path += "index.html"
    if not parts.scheme and not parts.netloc and not path.startswith("/"):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), path))
        return target if target in rels else None
    matches = [r for r in rels if path == r or path.endswith("/" + r)]
    return max(matches, key=len) if matches else None


#: Doxygen's name for the page of a source file: ``json__writer_8cpp_source.html``
_DOXYGEN_SOURCE = re.compile(r"_source\.html?$")


def source_view(page: WebPage, rel: str) -> str | None:
    """The API generator whose view of a source file page ``rel`` is (``None``: it is no such view)."""
    if page.generator == "rustdoc" and "src" in page.body_classes:
        return "rustdoc"
    where = "/" + rel
    if page.generator.startswith("javadoc/sourcetohtml"):
        return "Javadoc"
    if "/src-html/" in where and ("source-page" in page.body_classes or page.title == "Source code"):
        return "Javadoc"  # JDK 8 names no generator on these pages
    if page.generator == "doxygen" and ((page.title or "").endswith(" Source File") or _DOXYGEN_SOURCE.search(rel)):
        return "Doxygen"  # a page whose HTML header writes no <title> is known by Doxygen's name for it
    if "/_modules/" in where and page.text.lstrip("# ").startswith("Source code for "):
        return "Sphinx"
    if (page.title or "").startswith("JSDoc: Source: "):  # JSDoc's default template names no generator
        return "JSDoc"
    return None


def left_out(page: WebPage, rel: str, rels: Collection[str] = ()) -> str | None:
    """Why page ``rel`` of a source whose pages are ``rels`` is not for search (``None``: it is)."""
    directives = {d.strip() for d in (page.robots or "").split(",")}
    if directives & {"noindex", "none"}:
        return f"the page asks not to be indexed (robots noindex); {_HINT}"
    if page.redirect:
        return f"a redirect stub (meta refresh to {page.redirect}); {_HINT}"
    target = canonical_rel(page.canonical, rel, rels)
    if target is not None and target != rel:
        return f"a copy of {target} (its rel=canonical); {_HINT}"
    for kind, href in sorted(page.site_pages.items()):
        if href.strip().startswith("#") or canonical_rel(href, rel, rels) == rel:
            return f"the site's {kind} page (its own rel={kind} link names it: Sphinx's genindex, search); {_HINT}"
    lists = generator_of(page.generator)
    if lists is not None and (
        (lists == "javadoc" and JAVADOC_LIST_PAGES.intersection(page.body_classes))
        or _LIST_PATHS[lists].search("/" + rel)
    ):
        name, which = _LISTS_SAY[lists]
        what = f"{name}'s {page.title or 'list'} page"
        return f"{what}: a list of what other pages document, read there ({which}); {_HINT}"
    if page.generator == "rustdoc" and "sys" in page.body_classes:
        return (
            f"rustdoc's {page.title or 'own'} page: the generator's help or settings, which its script fills "
            f"(no word of the crate); {_HINT}"
        )
    generator = source_view(page, rel)
    if generator is not None:
        return (
            f"{generator}'s page of a source file: the code, not its documentation (a repo source over the "
            f"sources searches it as code); {_HINT}"
        )
    return None
