"""PDFs: one raw unit per page, read in column order with every word's box kept, and one per table.

- :mod:`.layout`: how a page becomes text (reading order, columns, repeated
  headers and footers, tables as Markdown rows), pure;
- :mod:`.parse`: reading pages with pdfium, in worker processes for long
  documents; re-reading one page for a citation;
- :mod:`.ocr`: scanned pages (no text layer, or a garbage one) read by
  Tesseract, words and boxes as from pdfium (source option ``{"ocr": false}``
  turns it off: such pages are then listed as left out).

A page's unit holds its prose (``content_kind="pdf"``); each ruled table on it
is a unit of its own (``content_kind="table"``, key ``…#page=00012#table=1``)
whose text is Markdown rows and whose layout keeps each row's box, so a table
chunk is cited by its page, the table's box and its rows' boxes. Text inside a
table is never repeated in the page's prose.

Nothing is lost without a word: an encrypted, corrupt, truncated or zero-page
PDF, or one with no text even by OCR, fails its own file (reported; the other
files load); a page that fails to parse, or to be read by OCR, is reported
while the document's other pages load; pages left without text are listed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source, ids
from kbflow.sources.base import FileIssue, FileSetLoader, register_loader
from kbflow.sources.files import file_hash
from kbflow.sources.pdf.heading import page_heading
from kbflow.sources.pdf.layout import PageText, TableText, line_key, page_text
from kbflow.sources.pdf.parse import (
    document_info,
    page_sections,
    pdf_pages,
    pdf_workers,
    prefetch_pages,
    resolve_page,
)

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
#: the source option turning OCR off (``{"ocr": false}``: scanned pages are listed as left out)
OCR_OPTION = "ocr"


def _pages(numbers: list[int]) -> str:
    """``3`` or ``3-5, 9``: page numbers as runs."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _blank_reason(ocr: bool, count: int) -> str:
    what = "a page" if count == 1 else f"{count} pages"
    if not ocr:
        return f"{what} with no text layer (scanned); OCR is off for this source (option {OCR_OPTION!r})"
    return f"{what} with no text, even by OCR (blank or a picture without words)"


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
    # 1: each page's layout carries its heading (the title lines at its top, :mod:`.heading`)
    # 2: unruled tables (columns of figures aligned by whitespace, :mod:`.aligned`) are table units too
    revision = "2"

    def fingerprint(self, source: Source) -> str:
        base = super().fingerprint(source)
        # turning tables or OCR off or on re-loads the PDFs
        if not source.options.get(TABLES_OPTION, True):
            base = ids.digest(base, "no tables")
        if not source.options.get(OCR_OPTION, True):
            base = ids.digest(base, "no ocr")
        return base

    def load_file(self, source: Source, rel: str, path: str) -> Iterator[RawUnit]:
        digest = file_hash(path)
        any_text = False

        def page_failed(number: int, reason: str) -> None:
            self.issues.append(FileIssue(f"{rel} p.{number}", reason, failed=True))

        def parsed(done: int, total: int) -> None:
            self.report_progress(pages=1)

        tables = bool(source.options.get(TABLES_OPTION, True))
        ocr = bool(source.options.get(OCR_OPTION, True))
        blank: list[int] = []
        sections = page_sections(path)
        pages = pdf_pages(path, on_error=page_failed, on_page=parsed, tables=tables, ocr=ocr, then=self.upcoming)
        for page, label in pages:
            page.section = sections[page.page - 1] if page.page <= len(sections) else None
            page.with_tables = tables
            page.heading = page_heading(page.text)
            name = f"{rel} p.{label or page.page}"
            if page.dropped:
                log.info("%s: dropped repeated header/footer lines %s", name, page.dropped)
            if page.ocr is not None:
                self.report_progress(ocr_pages=1)
            if page.text.strip():
                any_text = True
                yield self._page_unit(source, rel, label, page, digest)
            elif not page.tables:
                blank.append(page.page)
            for table in page.tables:
                any_text = True
                table.heading = page.heading
                yield self._table_unit(source, rel, label, table, digest, page.section)
        if not any_text:
            if ocr:
                raise SourceError(f"{path}: no text layer, and OCR found no words (blank pages or pictures only)")
            raise SourceError(
                f"{path}: no text layer (an image-only or scanned PDF); OCR is off for this source "
                f"(option {OCR_OPTION!r})"
            )
        if blank:
            self.issues.append(FileIssue(f"{rel} p.{_pages(blank)}", _blank_reason(ocr, len(blank))))

    @staticmethod
    def _page_unit(source: Source, rel: str, label: str | None, page: PageText, digest: str) -> RawUnit:
        confidence = (page.ocr or {}).get("confidence")
        return RawUnit(
            source_id=source.source_id,
            unit_key=f"{rel}#page={page.page:05d}",
            text=page.text,
            content_kind="pdf",
            locator=Locator(
                kind="pdf",
                path=rel,
                page=page.page,
                page_label=label,
                char_start=0,
                char_end=len(page.text),
                ocr_confidence=None if page.ocr is None else round(float(confidence or 0.0), 4),
                heading_path=page.section,
            ),
            title=f"{rel} p.{label or page.page}",
            file_hash=digest,
            layout=page.layout(),
        )

    @staticmethod
    def _table_unit(
        source: Source, rel: str, label: str | None, table: TableText, digest: str, section: str | None = None
    ) -> RawUnit:
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
                bbox=(table.bbox[0], table.bbox[1], table.bbox[2], table.bbox[3]),
                char_start=0,
                char_end=len(table.text),
                heading_path=section,
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
