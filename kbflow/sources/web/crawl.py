"""A whole documentation site from one URL: a polite, bounded, guarded crawl.

``kbflow add https://docs.example.org/guide/ --type web --crawl`` makes a
source of every page under that URL's folder (its *prefix*): the pages the
site's ``sitemap.xml`` lists there, and the pages reached by following links
from the start page, at most ``depth`` text links deep. The crawl

- reads ``robots.txt`` first and fetches nothing it disallows for kbflow's
  user agent (its ``Crawl-delay`` lengthens the wait); a page marked robots
  ``nofollow`` is read but its links are not followed, and one marked
  ``noindex`` is left out like any page the site marks not for search
  (:mod:`.conventions`);
- follows no link to an API generator's page of a source file (rustdoc's
  "Source", Javadoc's ``src-html/``: :mod:`.links`), which a source leaves
  out, nor to its lists of what other pages document (Javadoc's uses of
  each class, Doxygen's member lists);
- reads the script a generator writes its menu into (Doxygen's
  ``menudata.js``) for the pages it names, once, as the site's navigation;
- waits ``delay`` seconds between requests (1 by default);
- counts depth in the links of a page's text only: the site's navigation
  (its table of contents and sidebars, frames and iframes, ``<link
  rel=next|prev|contents>``, next and previous chapter) is followed at the
  depth of the page that shows it (:mod:`.links`), so a book of chained
  chapters, or a reference whose pages are reached from its index frame, is
  read whole;
- fetches every page, redirect hop, ``robots.txt`` and sitemap through the
  server-side request forgery guard of :mod:`.fetch`, and leaves out a page
  whose redirects end outside the prefix;
- stops at ``max_pages`` pages and ``max_mb`` MiB in all (each page also has
  the source's per-file limit), listing what it left out and why;
- sends each page's last ``ETag`` / ``Last-Modified``, so a page unchanged
  since the last crawl costs a ``304`` and is read from the lake's raw area.

Pages are keyed by their path under the prefix (``reference/profiles.html``;
a folder URL is its ``index.html``), like the files of a saved copy of the site,
so a crawled site and a saved one give the same chunks and citations.
"""

from __future__ import annotations

import posixpath
import time
import urllib.robotparser
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from kbflow.errors import ConfigError, SourceError
from kbflow.sources.web.fetch import HTML_TYPES, USER_AGENT, Fetched, PrivateHosts, fetch
from kbflow.sources.web.links import Link, links_of, menu_links, page_links

__all__ = ["CRAWL_OPTION", "CrawlSettings", "CrawledPage", "Crawl", "crawl", "page_links"]

#: the source option that makes a URL source a crawl: ``{"depth", "max_pages", "max_mb", "delay"}``
CRAWL_OPTION = "crawl"
_TEXT_TYPES = ("text/plain", "application/xml", "text/xml", "application/octet-stream")
#: what a server calls a navigation script (:data:`~kbflow.sources.web.links.MENU_SCRIPTS`)
_SCRIPT_TYPES = ("text/javascript", "application/javascript", "application/x-javascript", *_TEXT_TYPES)
#: sitemap files read at most (a sitemap index may name many)
MAX_SITEMAPS = 10
#: navigation scripts read at most (a Doxygen site has one; a page naming thousands costs no more than this)
MAX_MENU_SCRIPTS = 10
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass(frozen=True)
class CrawlSettings:
    """How far and how fast a crawl goes (the ``crawl`` option of a web source)."""

    depth: int = 3
    max_pages: int = 500
    max_mb: float = 256.0
    delay: float = 1.0

    def __post_init__(self) -> None:
        checks = {
            "depth": 0 <= self.depth <= 50,
            "max_pages": 1 <= self.max_pages <= 100_000,
            "max_mb": self.max_mb > 0,
            "delay": 0 <= self.delay <= 60,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ConfigError(
                f"crawl settings out of range: {', '.join(f'{n}={getattr(self, n)!r}' for n in bad)} "
                "(depth 0..50, max_pages 1..100000, max_mb > 0, delay 0..60 seconds)"
            )

    @classmethod
    def of(cls, value: Any) -> CrawlSettings:
        """Settings from a source option: ``True`` (the defaults) or a mapping of some fields."""
        if value is True:
            return cls()
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"the crawl option must be true or a mapping of depth, max_pages, max_mb, delay; got {value!r}"
            )
        unknown = set(value) - {"depth", "max_pages", "max_mb", "delay"}
        if unknown:
            raise ConfigError(f"unknown crawl settings {sorted(unknown)}; known: depth, max_pages, max_mb, delay")
        return cls(**dict(value))


@dataclass
class CrawledPage:
    """One page of a crawl: where it is, its bytes (``None`` when unchanged: read them from the raw area)."""

    url: str
    rel: str
    data: bytes | None
    digest: str | None = None
    charset: str | None = None
    etag: str | None = None
    last_modified: str | None = None


@dataclass
class Crawl:
    """What a crawl found: pages in crawl order and ``(url, reason, failed)`` for what it left out."""

    prefix: str
    pages: list[CrawledPage] = field(default_factory=list)
    left_out: list[tuple[str, str, bool]] = field(default_factory=list)
    requests: int = 0


def prefix_of(url: str) -> str:
    """The folder a crawl stays in: the start URL up to its last ``/``."""
    parts = urlsplit(url)
    folder = parts.path if parts.path.endswith("/") else posixpath.dirname(parts.path)
    if not folder.endswith("/"):  # a page at the site's root (``/index.html``) is in ``/``, not ``//``
        folder += "/"
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{folder}"


def rel_of(url: str, prefix: str) -> str | None:
    """The page key of ``url`` under ``prefix`` (``index.html`` for a folder), ``None`` outside it."""
    parts = urlsplit(url)
    if parts.query:
        return None  # a query names a view of a page, not a page of the site
    here = f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path or '/'}"
    if not here.startswith(prefix):
        return None
    rel = unquote(here[len(prefix) :])
    if rel == "" or rel.endswith("/"):
        rel += "index.html"
    rel = posixpath.normpath(rel)
    return None if rel.startswith("..") else rel


class _Polite:
    """Fetches behind the guard, one at a time, ``delay`` seconds apart."""

    def __init__(self, delay: float, max_page_bytes: int | None, private: PrivateHosts | None = None) -> None:
        self.delay, self.max_page_bytes, self.last, self.count = delay, max_page_bytes, 0.0, 0
        self.private = private

    def get(
        self,
        url: str,
        accept: tuple[str, ...] = HTML_TYPES,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> Fetched:
        wait = self.last + self.delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        try:
            return fetch(
                url,
                max_bytes=self.max_page_bytes,
                accept=accept,
                etag=etag,
                last_modified=last_modified,
                private=self.private,
            )
        finally:
            self.last, self.count = time.monotonic(), self.count + 1


def _robots(client: _Polite, prefix: str) -> urllib.robotparser.RobotFileParser:
    """The site's ``robots.txt`` (none, or one that cannot be read: everything allowed, as crawlers do on a 404)."""
    parts = urlsplit(prefix)
    where = f"{parts.scheme}://{parts.netloc}/robots.txt"
    robots = urllib.robotparser.RobotFileParser(where)
    try:
        fetched = client.get(where, accept=_TEXT_TYPES)
        robots.parse(fetched.body.decode("utf-8", "replace").splitlines())
    except SourceError:
        robots.parse([])
    return robots


def _sitemap_urls(client: _Polite, robots: urllib.robotparser.RobotFileParser, prefix: str) -> list[str]:
    """Page URLs the site's sitemaps list (those named in robots.txt, else ``sitemap.xml`` at the prefix)."""
    todo = deque(robots.site_maps() or [urljoin(prefix, "sitemap.xml")])
    pages: list[str] = []
    seen = 0
    while todo and seen < MAX_SITEMAPS:
        url = todo.popleft()
        seen += 1
        try:
            root = ET.fromstring(client.get(url, accept=_TEXT_TYPES).body)
        except (SourceError, ET.ParseError):
            continue
        for loc in root.iter(f"{_SITEMAP_NS}loc"):
            target = (loc.text or "").strip()
            if root.tag == f"{_SITEMAP_NS}sitemapindex":
                todo.append(target)
            elif target:
                pages.append(urldefrag(target).url)
    return pages


def crawl(
    start: str,
    settings: CrawlSettings,
    known: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    max_page_bytes: int | None = 16 << 20,
    read: Callable[[str], bytes] | None = None,
    private: PrivateHosts | None = None,
) -> Crawl:
    """Crawl from ``start`` (see the module docs).

    ``known``: ``{url: {"etag", "last_modified", "hash", "charset"}}`` of the last
    crawl, for conditional requests; ``read(hash)``: the bytes kept under a hash
    (an unchanged page's links are followed from them); ``private``: the private hosts it may reach
    (:class:`~kbflow.sources.web.fetch.PrivateHosts`; default the machine's).
    """
    known = known or {}
    prefix = prefix_of(start)
    client = _Polite(settings.delay, max_page_bytes, private)
    robots = _robots(client, prefix)
    delay = robots.crawl_delay(USER_AGENT)
    if delay:
        client.delay = max(client.delay, float(delay))
    out = Crawl(prefix)
    if rel_of(start, prefix) is None:  # only a query keeps a start page out of its own folder
        out.left_out.append(
            (start, "a URL with a query is a view of a page: start the crawl at a page or a folder", False)
        )
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    queue.extend((url, 0) for url in _sitemap_urls(client, robots, prefix) if rel_of(url, prefix))
    seen: set[str] = set()
    menus: set[str] = set()  # navigation scripts read already
    capped: list[str] = []  # pages found after a cap was reached: listed once, not page by page
    budget = int(settings.max_mb * (1 << 20))
    while queue:
        url, depth = queue.popleft()
        rel = rel_of(url, prefix)
        if rel is None or rel in seen:
            continue
        seen.add(rel)
        if len(out.pages) >= settings.max_pages or budget <= 0:
            capped.append(url)
            continue
        if not robots.can_fetch(USER_AGENT, url):
            out.left_out.append((url, "robots.txt disallows it", False))
            continue
        page = _fetch_page(client, url, prefix, known.get(url) or {}, out)
        if page is None or (page.rel != rel and page.rel in seen):  # a redirect to a page crawled already
            continue
        seen.add(page.rel)
        out.pages.append(page)
        data = page.data if page.data is not None else (read(page.digest) if read and page.digest else b"")
        budget -= len(page.data or b"")
        if data:
            links = links_of(data.decode(page.charset or "utf-8", "replace"), page.url)
            links += _menus(client, robots, prefix, [link.url for link in links if link.menu], menus, out)
            for link in links:
                step = depth if link.navigation else depth + 1  # the site's own navigation costs no depth
                if step <= settings.depth and not link.menu:
                    queue.append((link.url, step))
    if capped:
        cap = f"{settings.max_pages} pages" if budget > 0 else f"{settings.max_mb:g} MiB"
        more = f" and {len(capped) - 1} more pages" if len(capped) > 1 else ""
        out.left_out.append((f"{capped[0]}{more}", f"the crawl stopped at {cap} (crawl max_pages / max_mb)", False))
    out.requests = client.count
    return out


def _menus(
    client: _Polite,
    robots: urllib.robotparser.RobotFileParser,
    prefix: str,
    urls: list[str],
    read: set[str],
    out: Crawl,
) -> list[Link]:
    """The pages the navigation scripts at ``urls`` name (:func:`~kbflow.sources.web.links.menu_links`), each
    script under the prefix fetched once (``read``) through the guard, :data:`MAX_MENU_SCRIPTS` in a crawl. A
    script that cannot be read names none, and a script past the cap is not read: each is a line of
    ``out.left_out`` (the pages only it names are not reached)."""
    links: list[Link] = []
    for url in urls:
        if url in read or rel_of(url, prefix) is None or not robots.can_fetch(USER_AGENT, url):
            continue
        read.add(url)
        if len(read) > MAX_MENU_SCRIPTS:
            if len(read) == MAX_MENU_SCRIPTS + 1:
                why = f"a navigation script past the first {MAX_MENU_SCRIPTS} the crawl reads (and any after it)"
                out.left_out.append((url, why, False))
            continue
        try:
            fetched = client.get(url, accept=_SCRIPT_TYPES)
        except SourceError as exc:
            out.left_out.append((url, f"the site's navigation script could not be read: {exc}", False))
            continue
        links.extend(menu_links(fetched.body.decode("utf-8", "replace"), fetched.url))
    return links


def _fetch_page(client: _Polite, url: str, prefix: str, last: Mapping[str, Any], out: Crawl) -> CrawledPage | None:
    """One page, conditionally; ``None`` (and a line in ``out.left_out``) when it cannot be used."""
    try:
        fetched = client.get(url, etag=last.get("etag"), last_modified=last.get("last_modified"))
    except SourceError as exc:
        out.left_out.append((url, str(exc), True))
        return None
    final = rel_of(fetched.url, prefix)
    if final is None:
        out.left_out.append((url, f"redirected outside {prefix} (to {fetched.url})", False))
        return None
    if fetched.status == 304:
        if not last.get("hash"):
            out.left_out.append((url, "the server answered 304 for a page kbflow never kept", True))
            return None
        return CrawledPage(
            fetched.url, final, None, last["hash"], last.get("charset"), last.get("etag"), last.get("last_modified")
        )
    return CrawledPage(fetched.url, final, fetched.body, None, fetched.charset, fetched.etag, fetched.last_modified)
