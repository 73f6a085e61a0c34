"""A whole site from one URL (kbflow.sources.web.crawl): robots.txt, sitemap, links under the prefix, noindex and
nofollow, the guard on every hop, caps, and conditional re-fetches. The site is served by a local HTTP server
that only the test switch (``KBFLOW_FETCH_ALLOW_HOSTS``) lets through."""

from __future__ import annotations

import collections
from http.server import BaseHTTPRequestHandler

import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL, local_http

from kbflow import Retriever, pipeline, resolve
from kbflow.cli import main
from kbflow.errors import ConfigError
from kbflow.lake import Lake
from kbflow.records import Source
from kbflow.sources.web.crawl import CrawlSettings, crawl, page_links, prefix_of, rel_of


def _html(title: str, body: str, head: str = "") -> bytes:
    page = f"<html><head><title>{title}</title>{head}</head><body><main><h1>{title}</h1>{body}</main></body></html>"
    return page.encode()


def _prose(topic: str) -> str:
    return "<p>" + " ".join(f"The {topic} step {i} is described here in detail." for i in range(12)) + "</p>"


SITE = {
    "/docs/": _html(
        "Handbook",
        _prose("welcome")
        + '<nav><a href="install.html">Install</a> <a href="guide/">Guide</a> <a href="private/keys.html">Keys</a>'
        ' <a href="/outside.html">Out</a> <a href="hidden.html">Hidden</a> <a href="quiet.html">Quiet</a>'
        ' <a href="moved.html">Moved</a> <a href="install.html#step-2">Step 2</a> <a href="mailto:x@y">Mail</a></nav>',
    ),
    "/docs/install.html": _html("Installing the turbine", _prose("turbine installation")),
    "/docs/guide/": _html("Guide", _prose("guide") + '<a href="deep.html">Deeper</a>'),
    "/docs/guide/deep.html": _html("Deep", _prose("deep maintenance")),
    "/docs/private/keys.html": _html("Keys", _prose("secret key")),
    "/docs/hidden.html": _html("Hidden", _prose("hidden"), '<meta name="robots" content="noindex">'),
    "/docs/quiet.html": _html(
        "Quiet", _prose("quiet") + '<a href="behind-quiet.html">Behind</a>', '<meta name="robots" content="nofollow">'
    ),
    "/docs/behind-quiet.html": _html("Behind", _prose("behind")),
    "/docs/orphan.html": _html("Orphan", _prose("orphan lubrication")),
    "/outside.html": _html("Outside", _prose("outside")),
}


class Site(BaseHTTPRequestHandler):
    hits: collections.Counter = collections.Counter()
    unchanged: collections.Counter = collections.Counter()  # answered 304
    version = 1

    def log_message(self, *args):
        pass

    def _send(self, status, body=b"", kind="text/html; charset=utf-8", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        Site.hits[self.path] += 1
        port = self.server.server_address[1]
        if self.path == "/robots.txt":
            text = f"User-agent: *\nDisallow: /docs/private/\nSitemap: http://127.0.0.1:{port}/docs/sitemap.xml\n"
            return self._send(200, text.encode(), "text/plain")
        if self.path == "/docs/sitemap.xml":
            xml = (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>http://127.0.0.1:{port}/docs/orphan.html</loc></url>"
                f"<url><loc>http://127.0.0.1:{port}/elsewhere/page.html</loc></url></urlset>"
            )
            return self._send(200, xml.encode(), "application/xml")
        if self.path == "/docs/moved.html":
            return self._send(301, b"", headers=[("Location", "/outside.html")])
        body = SITE.get(self.path)
        if body is None:
            return self._send(404, b"not here")
        if self.path == "/docs/install.html" and Site.version > 1:
            body = _html("Installing the turbine", _prose("turbine installation, revised"))
        etag = f'"{hash(body) & 0xFFFF:x}"'
        if self.headers.get("If-None-Match") == etag:
            Site.unchanged[self.path] += 1
            return self._send(304, b"", headers=[("ETag", etag)])
        return self._send(200, body, headers=[("ETag", etag)])


@pytest.fixture
def site(monkeypatch):
    Site.hits.clear()
    Site.unchanged.clear()
    Site.version = 1
    with local_http(Site, monkeypatch) as url:
        yield f"{url}/docs/"


FAST = CrawlSettings(delay=0)


def test_the_crawl_stays_in_the_prefix_and_honors_robots(site):
    result = crawl(site, FAST)
    rels = [p.rel for p in result.pages]
    assert rels[0] == "index.html"
    assert set(rels) == {
        "index.html", "install.html", "guide/index.html", "guide/deep.html", "hidden.html", "quiet.html",
        "orphan.html",  # from the sitemap only
    }  # fmt: skip
    why = {url.rsplit("/", 2)[-2] + "/" + url.rsplit("/", 1)[-1]: reason for url, reason, _ in result.left_out}
    assert why["private/keys.html"] == "robots.txt disallows it"
    assert "redirected outside" in why["docs/moved.html"]
    assert "/docs/behind-quiet.html" not in Site.hits  # a nofollow page's links are not followed
    assert "/outside.html" not in Site.hits or Site.hits["/outside.html"] == 1  # reached only through the redirect
    assert not any("elsewhere" in p.url for p in result.pages)


def test_a_crawl_started_at_a_page_at_the_sites_root_reads_the_site(site):
    # a Javadoc or a team's docs served at http://host/index.html: the folder is the site's root
    root = site.removesuffix("/docs/")
    result = crawl(f"{root}/outside.html", FAST)
    rels = [p.rel for p in result.pages]
    assert rels[0] == "outside.html" and "docs/orphan.html" in rels  # the sitemap's page, under the root too
    # a start URL with a query names no page: the crawl says so (a source's error would else be "no text")
    start = f"{site}?print=1"
    assert [(url, failed) for url, why, failed in crawl(start, FAST).left_out if "query" in why] == [(start, False)]


def test_depth_pages_and_delay_limits(site):
    shallow = {p.rel for p in crawl(site, CrawlSettings(depth=0, delay=0)).pages}
    # the start page's <nav> is the site's navigation (no depth); the guide's text link to deep.html is one link
    assert "guide/index.html" in shallow and "guide/deep.html" not in shallow
    assert "guide/deep.html" in {p.rel for p in crawl(site, CrawlSettings(depth=1, delay=0)).pages}
    capped = crawl(site, CrawlSettings(max_pages=2, delay=0))
    assert len(capped.pages) == 2
    (cap,) = [(url, why) for url, why, _ in capped.left_out if "stopped at 2 pages" in why]
    assert " more pages" in cap[0]  # one line for every page past the cap
    with pytest.raises(ConfigError, match="depth"):
        CrawlSettings(depth=-1)
    with pytest.raises(ConfigError, match="unknown crawl settings"):
        CrawlSettings.of({"speed": 3})


def test_every_hop_goes_through_the_guard(site, monkeypatch):
    monkeypatch.delenv("KBFLOW_FETCH_ALLOW_HOSTS")
    result = crawl(site, FAST)
    assert not result.pages
    assert result.left_out and all("request forgery guard" in why for _, why, _ in result.left_out)


def test_links_prefix_and_keys():
    page = '<base href="/b/"><a href="x.html#top">x</a><a href="http://o.org/y">y</a><a rel="nofollow" href="z">z</a>'
    assert page_links(page, "http://s.org/a/") == ["http://s.org/b/x.html", "http://o.org/y"]
    assert page_links('<meta name="robots" content="noindex, nofollow"><a href="x">x</a>', "http://s.org/") == []
    # a generator's page of a source file is left out of a source: no crawl spends a request on one
    sources = (
        '<a class="src" href="../src/demo/lib.rs.html#10">Source</a>'  # rustdoc
        '<a href="../../src-html/org/x/Foo.html#line-42">Foo</a>'  # Javadoc
        '<a class="reference internal" href="_modules/requests/api.html#get">[source]</a>'  # Sphinx viewcode
        '<a href="tstring_8h_source.html">Go to the source code of this file.</a>'  # Doxygen
        '<a href="src/guide.html">A guide under src/</a>'
    )
    assert page_links(sources, "http://s.org/d/a/b/") == ["http://s.org/d/a/b/src/guide.html"]
    assert prefix_of("http://S.org/docs/intro.html") == "http://s.org/docs/"
    assert prefix_of("http://s.org/index.html") == prefix_of("http://s.org") == "http://s.org/"  # not ``//``
    assert rel_of("http://s.org/index.html", prefix_of("http://s.org/index.html")) == "index.html"
    assert rel_of("http://s.org/docs/", "http://s.org/docs/") == "index.html"
    assert rel_of("http://s.org/docs/a/../b.html", "http://s.org/docs/") == "b.html"
    assert rel_of("http://s.org/other/b.html", "http://s.org/docs/") is None
    assert rel_of("http://s.org/docs/b.html?print=1", "http://s.org/docs/") is None


def test_a_crawled_site_is_ingested_cited_and_refreshed_conditionally(site, tmp_path):
    lake_path = str(tmp_path / "lake")
    runner = CliRunner()
    out = runner.invoke(
        main, ["--lake", lake_path, "add", site, "--type", "web", "--crawl", "--delay", "0", "--id", "handbook"]
    )
    assert out.exit_code == 0, out.output
    lake = Lake(lake_path)
    assert lake.get_source("handbook").options["crawl"] == {"delay": 0.0}
    settings = {"lake": lake_path, "model": FAST_MODEL}
    report = pipeline.ingest(lake, settings).sources[0]
    assert report.status == "new", report
    source = lake.get_source("handbook")
    skipped = {i["path"].rsplit("/", 1)[-1]: i["reason"] for i in source.issues}
    assert "robots noindex" in skipped["hidden.html"] and "robots.txt" in skipped["keys.html"]
    hits = Retriever.open(lake_path).search("turbine installation", k=3)
    top = hits[0]
    assert top.citation.locator.path == "install.html" and top.citation.label().startswith("Installing the turbine")
    assert resolve(top.citation, lake=lake) == top.text  # from the copy kept in the lake

    before = dict(Site.hits)
    Site.version = 2  # one page changes
    report = pipeline.ingest(lake, settings).sources[0]
    assert report.status == "updated", report
    fetched_again = {p for p in Site.hits if Site.hits[p] > before.get(p, 0)}
    assert "/docs/install.html" in fetched_again and not Site.unchanged["/docs/install.html"]
    assert Site.unchanged["/docs/guide/deep.html"] == 1 and Site.unchanged["/docs/"] == 1  # unchanged: 304
    assert "revised" in Retriever.open(lake_path).search("turbine installation revised", k=1)[0].text
    out = runner.invoke(main, ["--lake", lake_path, "add", site, "--type", "web", "--depth", "2", "--id", "handbook"])
    assert out.exit_code == 0 and lake.get_source("handbook").options["crawl"] == {"delay": 0.0, "depth": 2}
    bad = runner.invoke(main, ["--lake", lake_path, "add", str(tmp_path), "--type", "web", "--crawl"])
    assert bad.exit_code != 0 and "http(s):// URL" in bad.output


def test_a_site_that_cannot_be_reached_fails_the_source_not_the_lake(tmp_path, fast_settings, docs_dir):
    lake = Lake(fast_settings.lake)
    lake.register(Source("docs", "docs", str(docs_dir)))
    lake.register(Source("gone", "web", "http://127.0.0.1:9/docs/", options={"crawl": {"delay": 0}}))
    reports = {r.source_id: r for r in pipeline.ingest(lake, fast_settings).sources}
    assert reports["docs"].status == "new" and reports["gone"].status == "failed"
    assert "nothing to index" in (reports["gone"].error or "") or "refused" in (reports["gone"].error or "")
    assert Retriever.open(fast_settings.lake).search("bridges and rivers", k=1)  # the rest of the lake is intact
