"""Web pages: the article text of saved ``.html`` files or of pages fetched by URL, boilerplate dropped.

- :mod:`.extract`: the page's text, blocks and css paths (an HTML5 parser: the
  tree a browser builds);
- :mod:`.hidden`: what a reader cannot see, never indexed;
- :mod:`.fetch`: fetching by URL behind a server-side request forgery guard;
- :mod:`.conventions`: pages the site marks as not for search (robots
  ``noindex``, redirect stubs, non-canonical copies), left out and listed;
- :mod:`.crawl`: a whole site from one URL (``robots.txt``, sitemaps, links
  under the URL's folder), polite and bounded.

A source is one ``.html``/``.htm`` file, a folder of them, one
``http(s)://`` URL, or with the ``crawl`` option the site under a URL. A URL is
fetched at ingest (conditionally: an unchanged page costs a ``304``) and the
bytes fetched are kept in the lake's raw area (:mod:`kbflow.lake.raw`), which
``resolve`` and freshness checks read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source, ids
from kbflow.sources.base import FileIssue, FileSetLoader, SkipFile, register_loader
from kbflow.sources.files import decode_text, read_bytes
from kbflow.sources.web.conventions import ALL_PAGES_OPTION, left_out
from kbflow.sources.web.crawl import CRAWL_OPTION, Crawl, CrawlSettings, crawl
from kbflow.sources.web.extract import WebPage, extract

__all__ = ["WebLoader", "WebPage", "extract", "is_url", "page_unit", "read_fetched", "read_page"]


def _private(options: Mapping[str, Any] | None):
    """The private hosts a source's fetches may reach: the machine's, and its ``allow_private`` option's."""
    from kbflow.sources.web.fetch import allowed_private

    return allowed_private((options or {}).get("allow_private") or ())


def is_url(uri: str) -> bool:
    return uri.lower().startswith(("http://", "https://"))


def read_page(path: str, data: bytes | None = None, charset: str | None = None) -> WebPage:
    """Extract a page from its bytes: in ``charset`` when the server named one, else UTF-8, else Latin-1."""
    data = read_bytes(path) if data is None else data
    html = None
    if charset:
        try:
            html = data.decode(charset)
        except (LookupError, UnicodeDecodeError):
            html = None
    if html is None:
        try:
            html = decode_text(data, path)
        except SourceError:
            html = data.decode("latin-1")
    return extract(html)


def page_unit(
    source: Source,
    key: str,
    path: str,
    data: bytes,
    url: str | None = None,
    charset: str | None = None,
    page: WebPage | None = None,
) -> RawUnit:
    """The unit of one page's bytes (``key``: its unit key; ``url``: where it was fetched from, if it was;
    ``page``: the page already read from them)."""
    page = read_page(path, data, charset) if page is None else page
    if not page.text.strip():
        raise SourceError(f"{path}: no article text found (everything was script, navigation or hidden)")
    return RawUnit(
        source_id=source.source_id,
        unit_key=key,
        text=page.text,
        content_kind="web",
        locator=Locator(kind="web", path=key, url=url or page.url or key, char_start=0, char_end=len(page.text)),
        title=page.title or key,
        file_hash=ids.bytes_hash(data),
        language="markdown",
        layout=page.layout(),
    )


@register_loader
class WebLoader(FileSetLoader):
    name = "web"
    suffixes = (".html", ".htm")
    what = "a saved web page"
    plural = "saved web pages"
    description = "saved web pages: an .html file or a folder of them (article text, headings kept)"
    max_file_mb = 16.0
    schemes = ("http", "https")
    #: 2: headings whose text sits in an element of a "header"-like class are kept (mdBook); 3: pages hidden
    #: whole until their scripts run are read, headings' permalink markers (Sphinx's ¶) dropped, deep pages read,
    #: a site's index and search pages that name themselves (rel=index, rel=search) left out; 4: a table's row of
    #: values is one line, its cells joined by " | "; any element holding blocks is a container; a page without
    #: heading elements takes its bold lines as headings; an inline XBRL filing is titled by its cover page; an
    #: API reference's entries (Sphinx's signatures) are headings; a <pre> whose lines read as headings is fenced; an
    #: element an ``A ~ B`` rule of the page hides (pdoc's sources) is dropped; 5: a <pre>'s line elements (Prism's
    #: token lines) are its lines, an article's own <header> (or one in <main> holding the <h1>) and a tab panel
    #: behind its tab are read, tables of contents, inline SVG, code blocks' line numbers and rustdoc's anchors
    #: and "Source" links dropped; Doxygen's fragments are code blocks, its tooltips hidden; an untitled page is
    #: titled by its <h1>; 6: what an API generator copies from elsewhere is a pointer line (rustdoc's trait
    #: members on each implementor, Javadoc's "Description copied from", TypeDoc's inherited members), and
    #: TypeDoc's doc comments (``tsd-comment``) are read, no longer dropped as a comment thread; 7: Doxygen's
    #: lists of members inherited from a base class are one line each; 8: Javadoc's summary tables, Sphinx's
    #: autosummary tables and rustdoc's lists of a module's items are one line naming what they list; 9: an API
    #: generator's views of source files (rustdoc's ``src/``, Javadoc's ``src-html/``, Doxygen's
    #: ``*_source.html``, Sphinx's ``_modules/``) are left out, rustdoc's "Expand description" labels hidden, a
    #: short <main> that holds the page's <h1> is its article (not the body with its sidebar); 10: rustdoc's long
    #: declarations (a trait's 106 method signatures before their entries) are one line naming the members, and
    #: its help and settings pages are left out; 11: a Doxygen page whose HTML header writes no <title> is titled by
    #: Doxygen's own title, and its page of a source file is known by its name (``*_source.html``); 12: TypeDoc's
    #: index lists are one line each; 13: Javadoc's header that holds a class page's title is read, title first;
    #: 14: Sphinx's ``__weakref__`` and ``__dict__`` as Python before 3.11 documents them are Python's own
    revision = "14"
    #: the crawl its fingerprint made, taken (once) by the load that follows
    _crawled: Crawl | None = None

    def files(self, uri: str, options: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
        found = super().files(uri, options)
        self._rels = {rel for rel, _ in found}  # what a canonical link may name
        return found

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        """One saved page; a page the site marks as not for search is left out (:mod:`.conventions`)."""
        data = read_bytes(path)
        page = read_page(path, data)
        why = None if source.options.get(ALL_PAGES_OPTION) else left_out(page, rel, getattr(self, "_rels", ()))
        if why:
            raise SkipFile(why)
        return [page_unit(source, rel, path, data, page=page)]

    # --- pages by URL -------------------------------------------------------------
    def check(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        if not is_url(uri):
            return super().check(uri, options)
        from kbflow.sources.web.fetch import _addresses, check_url

        _, host, port = check_url(uri)
        _addresses(uri, host, port, _private(options))  # refused now rather than at ingest

    def _fetch(self, source: Source) -> tuple[str, Any]:
        """``(content hash, fetched)``: fetched conditionally against the last fetch kept in the lake."""
        from kbflow.lake.raw import RawStore
        from kbflow.sources.web.fetch import fetch

        if self.lake_uri is None:
            raise SourceError(f"{source.uri}: a web page by URL is fetched into a lake; ingest it with kbflow ingest")
        store = RawStore(self.lake_uri, source.source_id)
        state = store.state()
        limit = self.limit_bytes(source.options)
        fetched = fetch(
            source.uri,
            max_bytes=limit,
            etag=state.get("etag"),
            last_modified=state.get("last_modified"),
            private=_private(source.options),
        )
        if fetched.status == 304 and state.get("hash"):
            return state["hash"], None
        return ids.bytes_hash(fetched.body), fetched

    def fingerprint(self, source: Source) -> str:
        if not is_url(source.uri):
            base = super().fingerprint(source)
            # keeping every page or not changes what loads: turning it on or off re-loads the source
            return ids.digest(base, "all pages") if source.options.get(ALL_PAGES_OPTION) else base
        self.issues = []
        if source.options.get(CRAWL_OPTION):
            crawled = self._crawled = self._crawl(source)
            pages = [(p.rel, p.digest or ids.bytes_hash(p.data or b"")) for p in crawled.pages]
            return ids.digest(ids.combine(pages), str(bool(source.options.get(ALL_PAGES_OPTION))), self.revision)
        digest, fetched = self._fetch(source)
        self._fetched = (digest, fetched)
        return ids.digest(digest, self.revision)

    def _crawl(self, source: Source) -> Crawl:
        """Crawl the site from the source's URL, conditionally against the last crawl kept in the lake."""
        from kbflow.lake.raw import RawStore

        if self.lake_uri is None:
            raise SourceError(f"{source.uri}: a crawled site is fetched into a lake; ingest it with kbflow ingest")
        store = RawStore(self.lake_uri, source.source_id)
        settings = CrawlSettings.of(source.options[CRAWL_OPTION])
        known = store.state().get("crawl") or {}
        return crawl(
            source.uri,
            settings,
            known,
            max_page_bytes=self.limit_bytes(source.options),
            read=lambda h: store.get(h)[0],
            private=_private(source.options),
        )

    def _load_crawl(self, source: Source) -> Iterator[RawUnit]:
        """The pages of a crawl as units, each kept in the lake's raw area; what it left out listed."""
        from kbflow.lake.raw import RawStore

        result = self._crawled or self._crawl(source)
        self._crawled = None
        store = RawStore(self.lake_uri or "", source.source_id)
        self.issues.extend(FileIssue(url, why, failed=failed) for url, why, failed in result.left_out)
        rels = {p.rel for p in result.pages}
        state: dict[str, Any] = {}
        for p in result.pages:
            data = p.data if p.data is not None else store.get(p.digest or "")[0]
            digest = store.put(data, {"url": p.url, "charset": p.charset})
            state[p.url] = {"etag": p.etag, "last_modified": p.last_modified, "hash": digest, "charset": p.charset}
            try:
                page = read_page(p.url, data, p.charset)
                why = None if source.options.get(ALL_PAGES_OPTION) else left_out(page, p.rel, rels)
                if why:
                    raise SkipFile(why)
                yield page_unit(source, p.rel, p.url, data, url=p.url, charset=p.charset, page=page)
            except SkipFile as exc:
                self.issues.append(FileIssue(p.url, str(exc)))
            except SourceError as exc:
                self.issues.append(FileIssue(p.url, str(exc).removeprefix(f"{p.url}: "), failed=True))
        store.set_state({"crawl": state, "fetched_at": datetime.now(UTC).isoformat(timespec="seconds")})

    def load(self, source: Source) -> Iterator[RawUnit]:
        if not is_url(source.uri):
            yield from super().load(source)
            return
        if source.options.get(CRAWL_OPTION):
            count = 0
            for unit in self._load_crawl(source):
                count += 1
                yield unit
            if not count:
                raise self.nothing_loaded(source)
            return
        from kbflow.lake.raw import RawStore

        store = RawStore(self.lake_uri or "", source.source_id)
        digest, fetched = getattr(self, "_fetched", None) or self._fetch(source)
        if fetched is None:  # unchanged since the copy kept
            data, note = store.get(digest)
            url, charset, state = note.get("url", source.uri), note.get("charset"), store.state()
        else:
            data, url, charset = fetched.body, fetched.url, fetched.charset
            store.put(data, {"url": url, "charset": charset})
            state = {"url": url, "hash": digest, "etag": fetched.etag, "last_modified": fetched.last_modified}
        state["fetched_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        store.set_state(state)
        page = read_page(url, data, charset)
        why = None if source.options.get(ALL_PAGES_OPTION) else left_out(page, source.uri)
        if why:
            self.issues.append(FileIssue(source.uri, why))
            raise self.nothing_loaded(source)
        yield page_unit(source, source.uri, url, data, url=url, charset=charset, page=page)

    def estimate_bytes(self, source: Source) -> int:
        return 0 if is_url(source.uri) else super().estimate_bytes(source)


def read_fetched(lake_uri: str, source_id: str, digest: str) -> WebPage:
    """The page kept in the lake's raw area under ``digest`` (what a URL source's citation resolves against)."""
    from kbflow.lake.raw import RawStore

    data, note = RawStore(lake_uri, source_id).get(digest)
    return read_page(note.get("url", digest), data, note.get("charset"))
