"""A crawl reaches a whole site the way a reader's browser does (kbflow.sources.web.links): frames and iframes (in
<noscript> too), <link rel>, next and previous chapter, and each generator's navigation, at no depth; a text link
costs one. Small sites shaped as mdBook, Javadoc (frames), Sphinx, Docusaurus and rustdoc write them, served by a
local HTTP server; the private hosts a source may reach are named, and over HTTP only by a global editor."""

from __future__ import annotations

import functools
import http.server
import threading

import httpx
import pytest
from conftest import local_http

from kbflow.errors import AccessDeniedError, ConfigError, SourceError
from kbflow.lake import Lake
from kbflow.pipeline import register_source
from kbflow.sources.web.crawl import MAX_MENU_SCRIPTS, CrawlSettings, crawl
from kbflow.sources.web.fetch import PrivateHosts, fetch
from kbflow.sources.web.links import links_of
from kbflow.usage.keys import create_key

CHAPTERS = 12


def _page(title: str, body: str, head: str = "") -> str:
    text = " ".join(f"{title} explains point {i} of its subject." for i in range(8))
    return f"<html><head><title>{title}</title>{head}</head><body>{body}<main><h1>{title}</h1><p>{text}</p></main>"


def mdbook() -> dict[str, str]:
    """mdBook: the sidebar is an iframe of toc.html inside <noscript>; each chapter links the next (rel=next)."""
    pages = {
        "toc.html": "<ol class=chapter>"
        + "".join(f'<li><a href="ch{i}.html">Chapter {i}</a></li>' for i in range(1, CHAPTERS + 1))
        + "</ol>"
    }
    for i in range(1, CHAPTERS + 1):
        nxt = f'<a rel="next prefetch" href="ch{i + 1}.html">Next</a>' if i < CHAPTERS else ""
        sidebar = (
            '<nav id="sidebar"><noscript><iframe class="sidebar-iframe-outer" src="toc.html"></iframe></noscript></nav>'
        )
        pages[f"ch{i}.html"] = _page(f"Chapter {i}", sidebar + nxt)
    pages["index.html"] = pages["ch1.html"]
    return pages


def chain() -> dict[str, str]:
    """A book whose chapters form a chain: each page's only link is <link rel=next> to the following one."""
    return {
        ("index.html" if i == 0 else f"p{i}.html"): _page(f"Part {i}", "", f'<link rel="next" href="p{i + 1}.html">')
        for i in range(CHAPTERS)
    }


def javadoc() -> dict[str, str]:
    """Javadoc's frameset: the class list in one frame, the overview in the other."""
    classes = [f"org/ex/Class{i}.html" for i in range(CHAPTERS)]
    return {
        "index.html": '<html><frameset cols="20%,80%"><frame src="allclasses-frame.html">'
        '<frame src="overview-summary.html"></frameset></html>',
        "allclasses-frame.html": "<ul>" + "".join(f'<li><a href="{c}">C</a></li>' for c in classes) + "</ul>",
        "overview-summary.html": _page("Overview", ""),
        **{
            c: _page(c.rsplit("/", 1)[1][:-5], '<div class="topNav"><a href="../../index.html">Home</a></div>')
            for c in classes
        },
    }


def sphinx() -> dict[str, str]:
    """Sphinx: the index's toctree names the top sections; each section's own toctree names its pages."""
    pages = {"index.html": _page("Docs", '<div class="toctree-wrapper compound"><a href="a/index.html">A</a></div>')}
    pages["a/index.html"] = _page("A", '<div class="toctree-wrapper"><a href="b/index.html">B</a></div>')
    pages["a/b/index.html"] = _page("B", '<div class="toctree-wrapper"><a href="c/index.html">C</a></div>')
    pages["a/b/c/index.html"] = _page("C", '<div class="toctree-wrapper"><a href="d.html">D</a></div>')
    pages["a/b/c/d.html"] = _page("D", '<div class="sphinxsidebar"><a href="../../../index.html">Home</a></div>')
    return pages


def docusaurus() -> dict[str, str]:
    """Docusaurus: every page carries the sidebar menu of every doc."""
    menu = (
        '<aside class="theme-doc-sidebar-container"><ul class="menu__list">'
        + "".join(f'<li><a class="menu__link" href="/site/docs/d{i}">Doc {i}</a></li>' for i in range(CHAPTERS))
        + "</ul></aside>"
    )
    pages = {f"docs/d{i}/index.html": _page(f"Doc {i}", menu) for i in range(CHAPTERS)}
    pages["index.html"] = _page("Home", '<a href="docs/d0/">Start</a>')
    return pages


def rustdoc() -> dict[str, str]:
    """rustdoc: a crate page links all.html from its sidebar; all.html lists every item."""
    items = [f"struct.S{i}.html" for i in range(CHAPTERS)]
    sidebar = '<nav class="sidebar"><a href="all.html">All Items</a></nav>'
    return {
        "index.html": _page("Crate ex", sidebar),
        "all.html": _page(
            "All items", "<ul class=all-items>" + "".join(f'<li><a href="{i}">x</a></li>' for i in items) + "</ul>"
        ),
        **{i: _page(i, sidebar) for i in items},
    }


def doxygen() -> dict[str, str]:
    """Doxygen: the menu bar is built by a script from menudata.js; the class list links each class, and each
    class its member list (Doxygen's copy of every member, inherited ones too) and the index of all members."""
    head = '<meta name="generator" content="Doxygen 1.9.4"/><script type="text/javascript" src="menudata.js"></script>'
    classes = [f"classgeo_1_1Shape{i}.html" for i in range(CHAPTERS)]
    menu = (
        'var menudata={children:[{text:"Main Page",url:"index.html"},{text:"Classes",url:"annotated.html",children:'
        '[{text:"Class List",url:"annotated.html"},{text:"Class Members",url:"functions.html",children:[{text:"a",'
        'url:"functions.html#index_a"}]}]},{text:"Files",url:"files.html"}]}'
    )
    pages = {
        "menudata.js": menu,
        "index.html": _page("geo: Main Page", "", head),
        "annotated.html": _page("geo: Class List", "".join(f'<a href="{c}">{c}</a>' for c in classes), head),
        "files.html": _page("geo: File List", '<a href="shape_8h.html">shape.h</a>', head),
        "shape_8h.html": _page("geo: shape.h File Reference", "", head),
        "functions.html": _page("geo: Class Members", "".join(f'<a href="{c}#a1">area()</a>' for c in classes), head),
    }
    for c in classes:
        members = c.replace(".html", "-members.html")
        pages[c] = _page(c, f'<a href="{members}">List of all members</a>', head)
        pages[members] = _page("geo: Member List", f'<a href="{c}">area</a>', head)
    return pages


class _Handler(http.server.BaseHTTPRequestHandler):
    pages: dict[str, str] = {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split("?", 1)[0].removeprefix("/site/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        body = self.pages.get(path)
        if body is None and f"{path}/index.html" in self.pages:  # Docusaurus' folder URLs without a slash
            self.send_response(301)
            self.send_header("Location", f"/site/{path}/")
            self.end_headers()
            return
        data = (body or "not here").encode()
        self.send_response(200 if body is not None else 404)
        kind = "text/javascript" if path.endswith(".js") else "text/html"
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.parametrize("build", [mdbook, chain, javadoc, sphinx, docusaurus, rustdoc])
def test_a_crawl_reaches_every_page_any_page_links_to(build, monkeypatch):
    pages = build()
    handler = type("Pages", (_Handler,), {"pages": pages})
    with local_http(handler, monkeypatch) as url:
        found = crawl(f"{url}/site/", CrawlSettings(depth=1, delay=0))
    got = {p.rel for p in found.pages}
    assert got == set(pages), (sorted(set(pages) - got), sorted(got - set(pages)))


def test_a_doxygen_crawl_reads_the_menu_its_script_builds_and_skips_the_member_lists(monkeypatch):
    pages = doxygen()
    handler = type("Pages", (_Handler,), {"pages": pages})
    with local_http(handler, monkeypatch) as url:
        found = crawl(f"{url}/site/", CrawlSettings(depth=1, delay=0))
    got = {p.rel for p in found.pages}
    # the script is read for its links, not kept; the member lists and the members' index are not fetched
    lists = {rel for rel in pages if rel.endswith("-members.html") or rel == "functions.html"}
    assert got == set(pages) - lists - {"menudata.js"}
    assert found.requests == len(got) + 3  # robots.txt, sitemap.xml and the script, each once
    # a page that names a thousand such scripts costs a bounded number of requests
    many = "".join(f'<script src="m{i}/menudata.js"></script>' for i in range(1000))
    pages = {"index.html": _page("geo: Main Page", "", many)}
    handler = type("Pages", (_Handler,), {"pages": pages})
    with local_http(handler, monkeypatch) as url:
        found = crawl(f"{url}/site/", CrawlSettings(depth=1, delay=0))
    assert found.requests == 1 + 2 + MAX_MENU_SCRIPTS
    # the scripts it did not read, and one it could not (the server has none), are listed with their reasons
    reasons = [why for _, why, _ in found.left_out]
    assert sum(why.startswith("a navigation script past the first 10") for why in reasons) == 1
    assert sum(why.startswith("the site's navigation script could not be read") for why in reasons) == 10


def test_text_links_count_depth_and_navigation_does_not():
    page = (
        '<link rel="next" href="n.html"><link rel="stylesheet" href="s.css"><nav><a href="toc.html">TOC</a></nav>'
        '<div class="bd-sidebar"><a href="side.html">S</a></div><p><a href="text.html">text</a>'
        '<a rel="prev" href="p.html">back</a></p><noscript><iframe src="frame.html"></iframe></noscript><br/>'
        '<div><a href="after.html">after the nav closed</a></div>'
    )
    found = {link.url.rsplit("/", 1)[1]: link.navigation for link in links_of(page, "http://s.org/a/")}
    assert found == {
        "n.html": True, "toc.html": True, "side.html": True, "text.html": False, "p.html": True,
        "frame.html": True, "after.html": False,
    }  # fmt: skip


def test_a_refresh_stub_leads_where_the_browser_goes():
    """pdoc's ``index.html`` of one package is a refresh to the package's page and nothing else."""
    stub = '<html><head><meta http-equiv="refresh" content="0; url=./click.html"/></head></html>'
    assert [(link.url, link.navigation) for link in links_of(stub, "http://s.org/doc/index.html")] == [
        ("http://s.org/doc/click.html", True)
    ]
    assert links_of('<meta http-equiv="refresh" content="30">', "http://s.org/doc/") == []  # a reload, no page


def test_a_javadoc_or_doxygen_page_leads_to_its_classes_not_to_its_lists_of_members():
    body = (
        '<a href="Foo.html">Foo</a><a href="class-use/Foo.html">Use</a><a href="../../index-all.html">Index</a>'
        '<a href="package-tree.html">Tree</a><a href="../../allclasses-index.html">All Classes</a>'
        '<a href="../../help-doc.html">Help</a><a href="../../index-files/index-3.html">C</a>'
    )
    url = "http://s.org/api/org/x/package-summary.html"
    followed = ["http://s.org/api/org/x/Foo.html", "http://s.org/api/allclasses-index.html"]
    for head in ('<meta name="generator" content="javadoc/PackageWriterImpl">', "<!-- Generated by javadoc -->"):
        assert [link.url for link in links_of(f"<html><head>{head}</head><body>{body}</body></html>", url)] == followed
    # another site's links of those names are followed
    assert len(links_of(f"<html><body>{body}</body></html>", url)) == 7
    doxygen = (
        '<html><head><meta name="generator" content="Doxygen 1.9.4"></head><body><a href="annotated.html">Classes'
        '</a><a href="classgeo_1_1Circle-members.html">All members</a><a href="functions_func_a.html">a</a>'
        '<a href="classgeo_1_1Circle.html">Circle</a><a href="graph_legend.html">legend</a></body></html>'
    )
    found = [link.url.rsplit("/", 1)[1] for link in links_of(doxygen, "http://s.org/dox/index.html")]
    assert found == ["annotated.html", "classgeo_1_1Circle.html"]


def test_depth_still_bounds_text_links(monkeypatch):
    pages = {
        "index.html": _page("Start", '<a href="one.html">1</a>'),
        "one.html": _page("One", '<a href="two.html">2</a>'),
        "two.html": _page("Two", ""),
    }
    handler = type("Pages", (_Handler,), {"pages": pages})
    with local_http(handler, monkeypatch) as url:
        found = {p.rel for p in crawl(f"{url}/site/", CrawlSettings(depth=1, delay=0)).pages}
    assert found == {"index.html", "one.html"}


# --- private hosts ---------------------------------------------------------------------------------------
def _serve_one(page: str):
    handler = functools.partial(type("One", (_Handler,), {"pages": {"index.html": page}}))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/site/"


def test_named_private_hosts_and_networks_pass_and_nothing_else(monkeypatch):
    monkeypatch.delenv("KBFLOW_FETCH_ALLOW_HOSTS", raising=False)
    httpd, url = _serve_one(_page("Intranet", ""))
    port = httpd.server_address[1]
    try:
        with pytest.raises(SourceError, match="request forgery guard"):
            fetch(url)
        for entries in (["127.0.0.1"], [f"127.0.0.1:{port}"], ["127.0.0.0/8"]):
            assert fetch(url, private=PrivateHosts.of(entries)).status == 200
        for entries in ([f"127.0.0.1:{port + 1}"], ["10.0.0.0/8"], ["localhost"]):
            with pytest.raises(SourceError, match="request forgery guard"):
                fetch(url, private=PrivateHosts.of(entries))
        monkeypatch.setenv("KBFLOW_FETCH_ALLOW_HOSTS", "127.0.0.0/8 docs.internal")  # the machine's own list
        assert fetch(url).status == 200
    finally:
        httpd.shutdown()
    with pytest.raises(ConfigError, match="not a network"):
        PrivateHosts.of(["10.0.0.0/99"])
    with pytest.raises(ConfigError, match="port"):
        PrivateHosts.of(["docs.internal:http"])


def test_only_a_global_editor_opens_the_guard_over_http(tmp_path, monkeypatch):
    monkeypatch.delenv("KBFLOW_FETCH_ALLOW_HOSTS", raising=False)
    httpd, url = _serve_one(_page("Intranet", ""))
    lake = Lake(str(tmp_path / "lake"))
    scoped = create_key(lake, "acme", "editor")[0]
    admin = create_key(lake, "global", "editor")[0]
    try:
        with pytest.raises(SourceError, match="request forgery guard"):
            register_source(lake, url, "web", source_id="intranet", scope="acme", editor=scoped)
        with pytest.raises(AccessDeniedError, match="global editor"):
            register_source(lake, url, "web", source_id="intranet", scope="acme", editor=scoped,
                            options={"allow_private": ["127.0.0.1"]})  # fmt: skip
        added = register_source(lake, url, "web", source_id="intranet", scope="acme", editor=admin,
                                options={"allow_private": ["127.0.0.1"], "crawl": True})  # fmt: skip
        assert added.source.options["allow_private"] == ["127.0.0.1"]
        with pytest.raises(ConfigError, match="web sources"):
            register_source(lake, str(tmp_path), "docs", options={"allow_private": ["10.0.0.0/8"]})
    finally:
        httpd.shutdown()
    assert httpx.URL(url).host == "127.0.0.1"
