"""PDFs: one raw unit per page, read in column order with every word's box kept, and one per table.

- :mod:`.layout`: how a page becomes text (reading order, columns, repeated
  headers and footers, tables as Markdown rows), pure;
- :mod:`.parse`: reading pages with pdfplumber, in worker processes for long
  documents; re-reading one page for a citation.

A page's unit holds its prose (``content_kind="pdf"``); each ruled table on it
is a unit of its own (``content_kind="table"``, key ``…#page=00012#table=1``)
whose text is Markdown rows and whose layout keeps each row's box, so a table
chunk is cited by its page, the table's box and its rows' boxes. Text inside a
table is never repeated in the page's prose.

Nothing is lost without a word: an encrypted, corrupt, truncated, zero-page or
image-only PDF fails its own file (reported; the other files load), and a page
that fails to parse is reported while the document's other pages load.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from kbflow import ids
from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileIssue, FileSetLoader, file_hash, register_loader
from kbflow.sources.pdf.layout import PageText, TableText, line_key, page_text
from kbflow.sources.pdf.parse import document_info, pdf_pages, pdf_workers, prefetch_pages, resolve_page

__all__ = [
    "PageText",
    "PdfLoader",
    "TableText",
    "document_info",
    "line_key",
    "page_text",
    "pdf_pages",
    "pdf_workers",
    "prefetch_pages",
    "resolve_page",
    "table_key",
]

log = logging.getLogger(__name__)


#: the source option turning table units off (``{"tables": false}``: tables stay in the page prose)
TABLES_OPTION = "tables"


def table_key(rel: str, page: int, index: int) -> str:
    """The unit key of table ``index`` (1-based) on page ``page`` of file ``rel``."""
    return f"{rel}#page={page:05d}#table={index}"


@register_loader
class PdfLoader(FileSetLoader):
    name = "pdf"
    suffixes = (".pdf",)
    what = "a PDF"
    plural = "PDFs"
    description = "a PDF file or a folder of PDFs (one unit per page and per table, word boxes kept)"
    streams = True
    max_file_mb = 256.0

    def fingerprint(self, source: Source) -> str:
        base = super().fingerprint(source)
        if source.options.get(TABLES_OPTION, True):
            return base
        return ids.digest(base, "no tables")  # turning tables off or on re-loads the PDFs

    def load_file(self, source: Source, rel: str, path: str) -> Iterator[RawUnit]:
        digest = file_hash(path)
        any_text = False

        def page_failed(number: int, reason: str) -> None:
            self.issues.append(FileIssue(f"{rel} p.{number}", reason, failed=True))

        def parsed(done: int, total: int) -> None:
            self.report_progress(pages=1)

        tables = bool(source.options.get(TABLES_OPTION, True))
        for page, label in pdf_pages(path, on_error=page_failed, on_page=parsed, tables=tables):
            page.with_tables = tables
            name = f"{rel} p.{label or page.page}"
            if page.dropped:
                log.info("%s: dropped repeated header/footer lines %s", name, page.dropped)
            if page.text.strip():
                any_text = True
                yield RawUnit(
                    source_id=source.source_id,
                    unit_key=f"{rel}#page={page.page:05d}",
                    text=page.text,
                    content_kind="pdf",
                    locator=Locator(
                        kind="pdf", path=rel, page=page.page, page_label=label, char_start=0, char_end=len(page.text)
                    ),
                    title=name,
                    file_hash=digest,
                    layout=page.layout(),
                )
            for table in page.tables:
                any_text = True
                yield self._table_unit(source, rel, label, table, digest)
        if not any_text:
            raise SourceError(f"{path}: no text layer (an image-only or scanned PDF); run OCR on it first")

    @staticmethod
    def _table_unit(source: Source, rel: str, label: str | None, table: TableText, digest: str) -> RawUnit:
        return RawUnit(
            source_id=source.source_id,
            unit_key=table_key(rel, table.page, table.index),
            text=table.text,
            content_kind="table",
            locator=Locator(
                kind="pdf",
                path=rel,
                page=table.page,
                page_label=label,
                table=table.index,
                bbox=tuple(table.bbox),
                char_start=0,
                char_end=len(table.text),
            ),
            title=f"{rel} p.{label or table.page} table {table.index}",
            file_hash=digest,
            layout=table.layout(),
        )

    def estimate_bytes(self, source: Source) -> int:
        # a PDF's bytes are mostly fonts and images: an eighth of them is a fair guess of its text's share
        return super().estimate_bytes(source) // 8

    def estimate_pages(self, source: Source) -> int:
        """Pages the source's PDFs hold (for progress bars)."""
        total = 0
        for _, path in self.files(source.uri, source.options):
            try:
                total += document_info(path)[0]
            except SourceError:
                continue
        return total
