"""Web pages: the article text of saved ``.html`` files (or of pages fetched by URL), boilerplate dropped.

- :mod:`.extract`: the page's text, blocks and css paths (an HTML5 parser: the
  tree a browser builds);
- :mod:`.hidden`: what a reader cannot see, never indexed.

A source is one ``.html``/``.htm`` file or a folder of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from kbflow import ids
from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileSetLoader, decode_text, read_bytes, register_loader
from kbflow.sources.web.extract import WebPage, extract

__all__ = ["WebLoader", "WebPage", "extract", "page_unit", "read_page"]


def read_page(path: str, data: bytes | None = None) -> WebPage:
    """Extract a saved page (UTF-8, or the charset its bytes decode as Latin-1 otherwise)."""
    data = read_bytes(path) if data is None else data
    try:
        html = decode_text(data, path)
    except SourceError:
        html = data.decode("latin-1")
    return extract(html)


def page_unit(source: Source, key: str, path: str, data: bytes, url: str | None = None) -> RawUnit:
    """The unit of one page's bytes (``key``: its unit key; ``url``: where it was fetched from, if it was)."""
    page = read_page(path, data)
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

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        return [page_unit(source, rel, path, read_bytes(path))]
