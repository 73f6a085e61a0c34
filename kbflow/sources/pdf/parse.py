"""Reading PDFs: every page's words and ruled tables from pdfium, in worker processes for long documents.

A page is parsed once (:func:`parse_page`: its words with their boxes from
pdfium's C++ core, :mod:`.pdfium`, and the ruled tables pdfplumber's table
finder builds from the page's straight edges, :mod:`.rules`). Long documents
are parsed by a pool of worker processes (:mod:`.pool`, :mod:`.worker`), a
few pages per task, at most two tasks per worker in flight: much of a page's
parse is Python, so only processes use more than one core, and the bounded
window keeps memory to a few pages per worker. The workers are started once
per process and reused, and start on the next file while this process builds
the last one's page texts.

A page that fails to parse is reported and skipped; the document's other
pages are not lost. Headers and footers need every page, so a document is
read in two passes over a temporary spill of its parsed pages (see
:func:`pdf_pages`). Resolving a citation needs one page: :func:`resolve_page`
parses only that page, given what the loader decided from the whole document
(the lines it dropped there).
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from kbflow._lazy import require
from kbflow.errors import SourceError
from kbflow.sources.pdf import pool
from kbflow.sources.pdf.aligned import with_aligned_tables
from kbflow.sources.pdf.layout import PageText, _edge_keys, _raw_lines, line_key, page_text, split_tables
from kbflow.sources.pdf.ocr import engine, needs_ocr, ocr_page
from kbflow.sources.pdf.pdfium import display_transform, open_document, outline_sections, page_labels, page_words
from kbflow.sources.pdf.pool import Parsed, pdf_workers
from kbflow.sources.pdf.rules import ruled_tables

log = logging.getLogger(__name__)

__all__ = [
    "PAGES_PER_TASK",
    "document_info",
    "page_sections",
    "parse_page",
    "pdf_pages",
    "pdf_workers",
    "prefetch_pages",
    "resolve_page",
]

#: pages one worker task parses
PAGES_PER_TASK = 4
#: documents shorter than this are parsed in this process (a pool would cost more than it saves)...
POOL_MIN_PAGES = 12
#: ...unless their first page is a scan to be read by OCR (a second a page): then a page a task, from two pages
SCANNED_POOL_MIN_PAGES = 2


def open_pdf(path: str, pages: list[int] | None = None):
    """pdfplumber's document, or a :class:`SourceError` saying why the file is not a readable PDF."""
    pdfplumber = require("pdfplumber")
    try:
        return pdfplumber.open(path, pages=pages)
    except Exception as exc:  # pdfminer raises many unrelated types
        # pdfplumber wraps pdfminer's error: look at what it wraps too
        inner = [exc, *(a for a in exc.args if isinstance(a, BaseException)), exc.__cause__, exc.__context__]
        names = [type(e).__name__ for e in inner if e is not None]
        if any("Password" in n or "Encrypt" in n for n in names):
            raise SourceError(f"{path}: the PDF is encrypted; decrypt it first (qpdf --decrypt)") from None
        cause = next((e for e in inner[1:] if e is not None), exc)
        detail = " ".join((str(cause) or str(exc)).split())[:300]  # one line
        what = type(cause).__name__ + (f": {detail}" if detail else "")
        raise SourceError(f"{path}: not a readable PDF ({what})") from None


def close_quietly(pdf: Any) -> None:
    """Close a pdfplumber document, whatever its broken page tree raises on the way."""
    try:
        pdf.close()
    except Exception:  # pdfminer raises many unrelated types
        log.debug("closing a broken PDF raised", exc_info=True)


class Document:
    """One PDF open for parsing (pdfium's document)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.pdfium = open_document(path)

    def __len__(self) -> int:
        return len(self.pdfium)

    def close(self) -> None:
        self.pdfium.close()


def parse_page(doc: Document, number: int, tables: bool = True, ocr: bool = True) -> dict[str, Any]:
    """Page ``number`` (1-based) as plain data: ``{"words", "width", "height", "tables", "ocr"}``.

    Words (text and box, in points from the top-left of the crop box, the
    page's rotation applied) and ruled tables (box, each row's box and cell
    boxes; :mod:`.rules`) both come from pdfium; pdfplumber's table finder
    turns the page's straight edges into tables. Unruled tables (columns of
    figures aligned by whitespace, :mod:`.aligned`) come from the words. A page whose text layer is
    empty or garbage is read by OCR where ``ocr`` (:mod:`.ocr`): its words
    are Tesseract's, and ``"ocr"`` says so (``{"engine", "confidence"}``;
    ``None`` for a page read from its text layer).
    """
    page = doc.pdfium[number - 1]
    scanned = None
    try:
        words, width, height = page_words(page)
        if ocr and needs_ocr(words):
            words, confidence = ocr_page(page, doc.path, number)
            scanned = {"engine": engine(), "confidence": confidence}
        found = ruled_tables(page, display_transform(page)[0], width, height) if tables and not scanned else []
    finally:
        page.close()
    if tables:  # statements print most tables without lines: columns of figures aligned by whitespace
        found = with_aligned_tables(_raw_lines(words), width, found)
    return {"words": words, "width": width, "height": height, "tables": found, "ocr": scanned}


# --- parsing pages, here or in worker processes --------------------------------------------
_open_docs: dict[tuple[str, int, float], Document] = {}


def _document(path: str) -> Document:
    """An open document, kept open for the next task on the same file version."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime)
    pdf = _open_docs.get(key)
    if pdf is None:
        for old in list(_open_docs.values()):
            old.close()
        _open_docs.clear()
        pdf = _open_docs[key] = Document(path)
    return pdf


def _encoded(number: int, raw: dict[str, Any]) -> Parsed:
    """A parsed page pickled (spilled as it is) with its edge lines' keys, both made where it was parsed."""
    prose, _ = split_tables(raw["words"], raw["tables"])
    return number, pickle.dumps(raw, protocol=5), None, _edge_keys(_raw_lines(prose), raw["height"])


def _parse_task(path: str, numbers: list[int], ocr: bool = True, tables: bool = True) -> list[Parsed]:
    """Pages ``numbers`` (1-based) of ``path``, each parsed (:func:`_encoded`) or with the reason it failed."""
    out: list[Parsed] = []
    try:
        pdf = _document(path)
    except (SourceError, OSError) as exc:
        return [(n, None, str(exc), []) for n in numbers]
    for n in numbers:
        try:
            out.append(_encoded(n, parse_page(pdf, n, tables=tables, ocr=ocr)))
        except SourceError as exc:  # says what and why already (an OCR engine missing or failing)
            out.append((n, None, str(exc).removeprefix(f"{path}: ").removeprefix(f"p.{n}: "), []))
        except Exception as exc:
            out.append((n, None, " ".join(f"{type(exc).__name__}: {exc}".split())[:300], []))
    return out


def _tasks(pages: int, per_task: int = PAGES_PER_TASK) -> list[list[int]]:
    return [list(range(i, min(i + per_task, pages + 1))) for i in range(1, pages + 1, per_task)]


def _plan(path: str, pages: int, workers: int, ocr: bool) -> list[list[int]] | None:
    """The worker tasks of ``path``'s pages, or ``None`` where this process parses them: a document of
    :data:`POOL_MIN_PAGES` or more, :data:`PAGES_PER_TASK` pages a task; a scanned one to be read by OCR from
    :data:`SCANNED_POOL_MIN_PAGES`, a page a task (each costs about a second: the workers share them)."""
    if workers <= 1:
        return None
    if pages >= POOL_MIN_PAGES:
        return _tasks(pages)
    if ocr and pages >= SCANNED_POOL_MIN_PAGES and _first_page_scanned(path):
        return _tasks(pages, 1)
    return None


def parse_document(
    path: str, pages: int, workers: int | None = None, ocr: bool = True, tables: bool = True
) -> Iterator[Parsed]:
    """Every page of ``path`` in order, as :func:`_parse_task` gives it, parsed by ``workers`` processes."""
    workers = pdf_workers() if workers is None else workers
    tasks = _plan(path, pages, workers, ocr)
    if tasks is not None:
        yield from pool.run(path, tasks, workers, ocr, tables).results()
        return
    try:
        for numbers in _tasks(pages):
            yield from _parse_task(path, numbers, ocr, tables)
    finally:
        for pdf in _open_docs.values():
            pdf.close()
        _open_docs.clear()


def parse_ahead(path: str, workers: int | None = None, ocr: bool = True, tables: bool = True) -> None:
    """Have the workers start on ``path``'s first pages now (the file a loader reads next), if it is long
    enough for them; a file that cannot be opened is left for its own turn to report."""
    workers = pdf_workers() if workers is None else workers
    try:
        pages, _ = document_info(path)
    except (SourceError, OSError):
        return
    tasks = _plan(path, pages, workers, ocr)
    if tasks is not None:
        pool.ahead(path, tasks, workers, ocr, tables)


@lru_cache(maxsize=8)
def _document_info(path: str, size: int, mtime: float) -> tuple[int, tuple[str | None, ...], tuple[str | None, ...]]:
    try:
        doc = open_document(path)
    except SourceError:
        if _pdfminer_pages(path) == 0:  # pdfium refuses an empty page tree; pdfminer says what it is
            return 0, (), ()
        raise
    try:
        return len(doc), tuple(page_labels(doc)), tuple(outline_sections(doc))
    finally:
        doc.close()


@lru_cache(maxsize=8)
def _scanned_first(path: str, size: int, mtime: float) -> bool:
    doc = open_document(path)
    try:
        page = doc[0]
        try:
            return needs_ocr(page_words(page)[0])
        finally:
            page.close()
    finally:
        doc.close()


def _first_page_scanned(path: str) -> bool:
    """Whether the first page of ``path`` has no usable text layer (:func:`.ocr.needs_ocr`); cached per file
    version. A file that cannot be read says no (its own parse reports why)."""
    try:
        st = os.stat(path)
        return _scanned_first(path, st.st_size, st.st_mtime)
    except Exception:  # only a hint for where to parse: a broken first page is reported by the parse itself
        return False


def _pdfminer_pages(path: str) -> int | None:
    """The page count pdfminer reads (``None`` where it cannot read the file either)."""
    try:
        pdf = open_pdf(path)
    except SourceError:
        return None
    try:
        return len(pdf.pages)
    except Exception:  # pdfminer raises many unrelated types
        return None
    finally:
        close_quietly(pdf)


def document_info(path: str) -> tuple[int, tuple[str | None, ...]]:
    """(page count, page labels) of a PDF; cached per file version."""
    st = os.stat(path)
    return _document_info(path, st.st_size, st.st_mtime)[:2]  # type: ignore[return-value]  # a slice of a typed tuple


def page_sections(path: str) -> tuple[str | None, ...]:
    """Every page's section by the PDF's outline (:func:`.pdfium.outline_sections`); cached per file version."""
    st = os.stat(path)
    return _document_info(path, st.st_size, st.st_mtime)[2]


def _drop_set(edge_keys: list[list[str]]) -> frozenset[str]:
    """Header/footer lines: edge lines repeating on at least half the pages (3 pages or more)."""
    pages = len(edge_keys)
    if pages < 3:
        return frozenset()
    counts: dict[str, int] = {}
    for keys in edge_keys:
        for key in set(keys):
            if key:
                counts[key] = counts.get(key, 0) + 1
    return frozenset(k for k, n in counts.items() if n >= max(2, pages / 2))


def pdf_pages(
    path: str,
    *,
    workers: int | None = None,
    on_error: Callable[[int, str], None] | None = None,
    on_page: Callable[[int, int], None] | None = None,
    tables: bool = True,
    ocr: bool = True,
    then: str | None = None,
) -> Iterator[tuple[PageText, str | None]]:
    """Yield ``(page text, page label)`` for every page of ``path`` that parses.

    Pages are parsed once (in worker processes for long documents) and spilled
    to a temporary file; once the repeated header/footer lines are known, each
    page's text is built from the spill. Memory holds a few pages. A page that
    fails to parse goes to ``on_error(page number, reason)`` (raised without
    it); ``on_page(pages parsed, pages)`` reports progress. ``tables=False``
    leaves tables in the prose (no table units); ``ocr=False`` leaves scanned
    pages empty (their page text has no words). ``then`` names the file the
    caller reads next: the workers start on it while this one's page texts
    are built (:func:`parse_ahead`).

    Raises
    ------
    SourceError
        The file is not a readable PDF, is encrypted, has no pages, or no page parses.
    """
    pages, labels = document_info(path)
    if pages == 0:
        raise SourceError(f"{path}: the PDF has no pages")
    edges: list[list[str]] = []
    failed: list[tuple[int, str]] = []
    with tempfile.TemporaryFile("w+b", prefix="kbflow-pdf-") as spill:
        for done, (number, body, error, edge) in enumerate(parse_document(path, pages, workers, ocr, tables), 1):
            if body is None:
                failed.append((number, error or "failed to parse"))
            edges.append(edge)
            spill.write(len(body or b"").to_bytes(8, "little"))
            spill.write(body or b"")
            if on_page is not None:
                on_page(done, pages)
        if then is not None:
            parse_ahead(then, workers, ocr, tables)
        if len(failed) == pages:
            raise SourceError(f"{path}: no page could be parsed (p.{failed[0][0]}: {failed[0][1]})")
        for number, error in failed:
            if on_error is None:
                raise SourceError(f"{path}: p.{number} could not be parsed ({error})")
            on_error(number, error)
        drop = _drop_set(edges)
        spill.seek(0)
        for number in range(1, pages + 1):
            size = int.from_bytes(spill.read(8), "little")
            raw = pickle.loads(spill.read(size)) if size else None  # this run's own pages (see .pool)
            if raw is not None:
                page = page_text(raw["words"], raw["width"], raw["height"], number, drop, raw["tables"])
                page.ocr = raw.get("ocr")
                yield page, labels[number - 1]


# --- one page again, for a citation ----------------------------------------------------------
#: pages rebuilt for citations, most recent last: (path, size, mtime, page, dropped lines) -> page
_pages: dict[tuple[Any, ...], PageText | None] = {}
_PAGES_KEPT = 64


def _keep(key: tuple[Any, ...], page: PageText | None) -> None:
    _pages[key] = page
    while len(_pages) > _PAGES_KEPT:
        del _pages[next(iter(_pages))]


def prefetch_pages(path: str, wanted: dict[int, list[str]], tables: bool = True) -> None:
    """Parse the pages ``wanted`` (page number -> the lines the loader dropped there) of ``path`` with one
    open of the document, so that resolving many citations of one file never opens it twice."""
    st = os.stat(path)
    todo = {
        n: tuple(d) for n, d in wanted.items() if (path, st.st_size, st.st_mtime, n, tuple(d), tables) not in _pages
    }
    if not todo:
        return
    for number, raw in _parsed_pages(path, sorted(todo), tables):
        dropped = todo[number]
        drop = frozenset(line_key(line) for line in dropped)
        built = page_text(raw["words"], raw["width"], raw["height"], number, drop, raw["tables"])
        _keep((path, st.st_size, st.st_mtime, number, dropped, tables), built)


def _parsed_pages(path: str, numbers: list[int], tables: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    """Pages ``numbers`` of ``path`` parsed: by the worker processes where they are running already and
    this is the main thread (an ingest's checks; a server's request threads never share the workers), split
    among them, a page that fails left out for resolving it alone to say why; else here, with one open of
    the document."""
    workers = pool.running() if threading.current_thread() is threading.main_thread() else 0
    if workers > 1 and len(numbers) > 1:
        share = -(-len(numbers) // workers)
        tasks = [numbers[i : i + share] for i in range(0, len(numbers), share)]
        for number, body, _, _ in pool.run(path, tasks, workers, True, tables).results():
            if body is not None:
                yield number, pickle.loads(body)
        return
    doc = Document(path)
    try:
        for number in numbers:
            if 1 <= number <= len(doc):
                yield number, parse_page(doc, number, tables)
    finally:
        doc.close()


def _page_alone(
    path: str, size: int, mtime: float, number: int, dropped: tuple[str, ...], tables: bool = True
) -> PageText | None:
    key = (path, size, mtime, number, dropped, tables)
    if key not in _pages:
        doc = Document(path)
        try:
            if not 1 <= number <= len(doc):
                return None
            raw = parse_page(doc, number, tables)
        finally:
            doc.close()
        drop = frozenset(line_key(line) for line in dropped)
        _keep(key, page_text(raw["words"], raw["width"], raw["height"], number, drop, raw["tables"]))
    return _pages[key]


@lru_cache(maxsize=4)
def _whole_document(path: str, size: int, mtime: float, tables: bool = True) -> dict[int, PageText]:
    return {page.page: page for page, _ in pdf_pages(path, on_error=lambda n, e: None, tables=tables)}


def resolve_page(path: str, number: int, dropped: list[str] | None = None, tables: bool = True) -> PageText:
    """Page ``number`` (1-based) of ``path`` exactly as the loader built it: its text and its tables.

    ``dropped`` is what the loader decided from the whole document for this
    page (the header/footer lines it dropped, stored in the page's layout):
    with it, only this page is parsed. Without it (``None``), the whole
    document is read once (and cached), since that decision needs every page.
    """
    st = os.stat(path)
    if dropped is not None:
        page = _page_alone(path, st.st_size, st.st_mtime, number, tuple(dropped), tables)
        if page is not None:
            return page
    pages, _ = document_info(path)
    if not 1 <= number <= pages:
        raise SourceError(f"{path}: has no page {number} (it has {pages})")
    found = _whole_document(path, st.st_size, st.st_mtime, tables).get(number)
    if found is None:
        raise SourceError(f"{path}: page {number} could not be parsed")
    return found
