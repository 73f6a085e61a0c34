"""Re-read a source at a citation's locator and return the text there, or say it no longer holds it.

The invariant the chunkers keep and the tests hold them to: for every chunk,
``resolve(hit) == hit.text``. A citation carries the hash of the text it was
indexed with (``chunk_hash``), so :func:`resolve` never hands back text the
source no longer holds: when the text read differs, it raises
:class:`~kbflow.errors.StaleCitationError`, carrying the text as indexed (when
known) and the text the source holds now.

Two kinds of "differs" are told apart: the source changed since it was indexed
(its file hash differs, or it is gone) is *stale*; the file is byte for byte
what was indexed but the text read back differs is a resolver failure (a bug),
raised as a plain :class:`~kbflow.errors.ResolveError`.

With a lake (``resolve(..., lake=...)``), a PDF citation re-reads only its
page: what the loader decided from the whole document (the repeated header
and footer lines it dropped) is stored with the page in ``documents.layout``.
Without one, the whole document is parsed once (and cached per file version).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from kbflow import schema as S
from kbflow.chunk.base import line_span
from kbflow.errors import ResolveError, SourceError, StaleCitationError
from kbflow.lake.sql import sql_in, sql_str
from kbflow.records import Citation, Hit, Locator, ids
from kbflow.records.paths import confined_file
from kbflow.sources.files import file_hash, read_text
from kbflow.sources.jsonl import RecordFields, iter_records, record_text
from kbflow.sources.notebook import is_notebook, notebook_text

if TYPE_CHECKING:  # pragma: no cover
    from kbflow.lake.lake import Lake

__all__ = ["read_at", "resolve", "resolve_many", "source_file"]


def source_file(citation: Citation) -> str:
    """The file a citation's bytes are in (for its file hash), as its real path inside its source
    (:func:`~kbflow.records.paths.confined_file`)."""
    if citation.locator.kind == "record":
        return confined_file(citation.uri, citation.uri)
    return citation.file_path()


def _slice(text: str, citation: Citation, where: str) -> str:
    loc = citation.locator
    if loc.char_start is None or loc.char_end is None or not 0 <= loc.char_start <= loc.char_end <= len(text):
        raise StaleCitationError(
            f"{where}: chars {loc.char_start}-{loc.char_end} are outside the text (0-{len(text)}); "
            "the source changed since it was indexed",
            current_text=None,
        )
    return text[loc.char_start : loc.char_end]


def _unit_keys(loc: Locator) -> list[str]:
    """The ``documents`` unit keys of a PDF locator's page, and of its table when it cites one."""
    from kbflow.sources.pdf import table_key

    path, page = loc.path or "", loc.page or 0
    return [f"{path}#page={page:05d}"] + ([table_key(path, page, loc.table)] if loc.table else [])


def _pdf_dropped(citation: Citation, lake: Lake | None) -> tuple[list[str], bool] | None:
    """The header/footer lines the loader dropped from the cited page (``None``: unknown, parse the document).

    Read from the page's unit in ``documents`` (or, on a page that is all
    table, from the table's unit): what the loader decided from every page.
    """
    if lake is None or not lake.has_table(S.DOCUMENTS):
        return None
    keys = _unit_keys(citation.locator)
    where = f"{S.SOURCE_ID} = {sql_str(citation.source_id)} AND {sql_in(S.UNIT_KEY, keys)}"
    for layout in lake.scan(S.DOCUMENTS, [S.LAYOUT], where).column(0).to_pylist():
        if layout:
            data = json.loads(layout)
            return list(data.get("dropped") or []), bool(data.get("tables", True))
    return None


def _ocr_text(citation: Citation, lake: Lake | None, path: str) -> str | None:
    """A scanned page's text as OCR read it at ingest, from the lake, once the file's bytes are checked against
    the citation (``None`` without a lake or a stored page: the page is read by OCR again)."""
    if lake is None or not lake.has_table(S.DOCUMENTS) or not citation.content_hash:
        return None
    if file_hash(path) != citation.content_hash:
        raise StaleCitationError(f"{path}: the file changed since it was indexed (a scanned page)", None)
    key = f"{citation.locator.path}#page={citation.locator.page:05d}"
    where = f"{S.SOURCE_ID} = {sql_str(citation.source_id)} AND {S.UNIT_KEY} = {sql_str(key)}"
    texts = lake.scan(S.DOCUMENTS, [S.TEXT], where).column(0).to_pylist()
    return texts[0] if texts else None


#: while :func:`resolve_many` runs: the last file it read, ``((reader, path), text)``, so citations of one file
#: (sorted together) read and parse it once
_LAST: ContextVar[list[Any] | None] = ContextVar("kbflow_last_file", default=None)


def _read_once(reader: str, path: str, read: Callable[[], str]) -> str:
    """``read()``, or the text it gave for the same file last time within one :func:`resolve_many`."""
    last = _LAST.get()
    if last is None:
        return read()
    if last[0] != (reader, path):
        last[:] = [(reader, path), read()]
    return str(last[1])


def _file_text(path: str, encoding: str | None) -> str:
    text = read_text(path, encoding)
    return notebook_text(text, path) if is_notebook(path) else text


def _read_file(citation: Citation, lake: Lake | None) -> str:
    loc, path = citation.locator, citation.file_path()
    text = _read_once(
        loc.kind, path, lambda: _file_text(path, loc.encoding) if loc.kind == "doc" else read_text(path, loc.encoding)
    )
    if loc.kind == "doc":
        return _slice(text, citation, path)
    try:
        if loc.line_start is None or loc.line_end is None:
            raise ValueError("a code citation without its lines")
        return line_span(text, loc.line_start, loc.line_end)
    except ValueError:
        raise StaleCitationError(
            f"{path}: lines {loc.line_start}-{loc.line_end} are not in the file; it changed since it was indexed",
            current_text=None,
        ) from None


def _read_pdf(citation: Citation, lake: Lake | None) -> str:
    from kbflow.sources.pdf import resolve_page

    loc, path = citation.locator, citation.file_path()
    if loc.ocr_confidence is not None and not loc.table:
        stored = _ocr_text(citation, lake, path)
        if stored is not None:
            return _slice(stored, citation, f"{path} p.{loc.page}")
    known = _pdf_dropped(citation, lake)
    page = resolve_page(path, loc.page or 0, *(known or (None,)))
    if loc.table:
        if not 1 <= loc.table <= len(page.tables):
            raise StaleCitationError(f"{path} p.{loc.page}: has no table {loc.table} now", None)
        return _slice(page.tables[loc.table - 1].text, citation, f"{path} p.{loc.page} table {loc.table}")
    return _slice(page.text, citation, f"{path} p.{loc.page}")


def _read_web(citation: Citation, lake: Lake | None) -> str:
    from kbflow.sources.web import is_url, read_fetched, read_page

    if is_url(citation.uri):  # fetched by URL: the copy kept in the lake is what was indexed
        if lake is None or not citation.content_hash:
            raise ResolveError(f"{citation.uri}: a page fetched by URL resolves from the lake's copy; pass lake=")
        page = read_fetched(lake.uri, citation.source_id, citation.content_hash)
        return _slice(page.text, citation, citation.uri)
    path = citation.file_path()
    return _slice(_read_once("web", path, lambda: read_page(path).text), citation, path)


def _read_ticket(citation: Citation, lake: Lake | None) -> str:
    from kbflow.sources.tickets import iter_posts

    loc, path = citation.locator, citation.file_path()
    for issue, comment_id, body, _author in iter_posts(path, on_problem=lambda where, reason: None):
        if str(issue["number"]) == loc.ticket_id and comment_id == loc.comment_id:
            return _slice(body, citation, f"{path} ticket {loc.ticket_id} comment {loc.comment_id}")
    raise StaleCitationError(f"{path}: no comment {loc.comment_id!r} in ticket {loc.ticket_id!r}", None)


#: the cited records of each JSONL file :func:`resolve_many` read in one pass ((file, its keys) -> id -> record)
_RECORDS: ContextVar[dict[tuple[str, RecordFields], dict[str, dict[str, Any]]] | None] = ContextVar(
    "kbflow_records", default=None
)


def _records_of(path: str, wanted: set[str], fields: RecordFields) -> dict[str, dict[str, Any]]:
    """The records of ``path`` whose id is in ``wanted`` (the first of each, as the loader keeps), one read."""
    found: dict[str, dict[str, Any]] = {}
    for _, obj in iter_records(path, lambda lineno, reason: None, fields):
        rid = str(obj[fields.id])
        if rid in wanted and rid not in found:
            found[rid] = obj
            if len(found) == len(wanted):
                break
    return found


def _read_record(citation: Citation, lake: Lake | None) -> str:
    loc = citation.locator
    record_id, fields = loc.record_id or "", RecordFields.of_locator(loc.field)
    read = (_RECORDS.get() or {}).get((citation.uri, fields))
    obj = (read if read is not None else _records_of(source_file(citation), {record_id}, fields)).get(record_id)
    if obj is None:
        raise StaleCitationError(f"{citation.uri}: no record with {fields.id} {record_id!r}", None)
    text, _field = record_text(obj, fields)
    return _slice(text, citation, f"{citation.uri} record {record_id}")


def _prefetch_records(citations: list[Citation]) -> dict[tuple[str, RecordFields], dict[str, dict[str, Any]]]:
    """The cited records of every JSONL file, each file read once (a file that cannot be read is left out:
    each citation's resolve says why)."""
    wanted: dict[tuple[str, RecordFields], set[str]] = {}
    for c in citations:
        if c.locator.kind == "record" and c.locator.record_id is not None:
            wanted.setdefault((c.uri, RecordFields.of_locator(c.locator.field)), set()).add(c.locator.record_id)
    out = {}
    for (path, fields), record_ids in wanted.items():
        try:
            out[(path, fields)] = _records_of(confined_file(path, path), record_ids, fields)
        except (SourceError, ResolveError, OSError):
            continue
    return out


#: how each kind of locator reads its text from the source as it is now
_READERS: dict[str, Callable[[Citation, Lake | None], str]] = {
    "doc": _read_file,
    "code": _read_file,
    "pdf": _read_pdf,
    "web": _read_web,
    "ticket": _read_ticket,
    "record": _read_record,
}


def read_at(citation: Citation, lake: Lake | None = None) -> str:
    """The text at ``citation``'s locator as the source holds it now, compared with nothing.

    Raises
    ------
    StaleCitationError
        The source is gone or no longer has that region.
    ResolveError
        The source cannot be read, or the locator cannot be resolved.
    """
    reader = _READERS.get(citation.locator.kind)
    if reader is None:
        raise ResolveError(f"resolving {citation.locator.kind!r} locators is not supported")
    try:
        return reader(citation, lake)
    except StaleCitationError:
        raise
    except SourceError as exc:
        if not os.path.exists(source_file(citation)):
            raise StaleCitationError(f"{source_file(citation)}: the source file is gone", None) from None
        raise ResolveError(f"cannot resolve citation of source {citation.source_id!r}: {exc}") from None


def _indexed_text(citation: Citation, lake: Lake | None) -> str | None:
    if lake is None or not citation.chunk_hash or not lake.has_table(S.CHUNKS):
        return None
    where = f"{S.SOURCE_ID} = {sql_str(citation.source_id)} AND {S.CHUNK_HASH} = {sql_str(citation.chunk_hash)}"
    rows = lake.scan(S.CHUNKS, [S.TEXT], where).column(0).to_pylist()
    return rows[0] if rows else None


def _indexed_at(citation: Citation, lake: Lake | None) -> Any:
    if lake is None:
        return None
    found = lake.sources([citation.source_id])
    return found[0].last_indexed if found else None


def resolve(target: Citation | Hit, *, lake: Lake | None = None) -> str:
    """The text at a citation's locator, read afresh from the source; the same text it was indexed with.

    Parameters
    ----------
    target:
        A :class:`~kbflow.records.Hit` (its text is the indexed text) or a
        :class:`~kbflow.records.Citation`.
    lake:
        The lake the citation came from: a PDF page is then re-read alone, and
        a stale citation's error carries the indexed text and time.

    Raises
    ------
    StaleCitationError
        The source changed since it was indexed: the text there differs, the
        region is gone, or the file is. ``indexed_text`` and ``current_text``
        carry both sides (each ``None`` where unknown).
    ResolveError
        The source cannot be read, or (a bug) the file is unchanged but the
        text read back differs from the text indexed.
    """
    citation = target.citation if isinstance(target, Hit) else target
    indexed = target.text if isinstance(target, Hit) else None
    try:
        text = read_at(citation, lake)
    except StaleCitationError as exc:
        exc.indexed_text = indexed if indexed is not None else _indexed_text(citation, lake)
        exc.indexed_at = _indexed_at(citation, lake)
        raise
    expected = citation.chunk_hash or (ids.text_hash(indexed) if indexed is not None else None)
    if expected is None or ids.text_hash(text) == expected:
        return text
    indexed = indexed if indexed is not None else _indexed_text(citation, lake)
    from kbflow.sources.web import is_url

    path = citation.uri if is_url(citation.uri) else source_file(citation)
    try:  # a URL's copy in the lake never changes: a difference there is a bug too
        unchanged = is_url(path) or (citation.content_hash is not None and file_hash(path) == citation.content_hash)
    except SourceError:
        unchanged = False
    if unchanged:
        raise ResolveError(
            f"{path}: the file is unchanged since it was indexed, but the text at {citation.render()} reads back "
            "differently; this is a kbflow bug, please report it"
        )
    raise StaleCitationError(
        f"{path}: the source changed since it was indexed; the text at {citation.render()} is no longer the same",
        current_text=text,
        indexed_text=indexed,
        indexed_at=_indexed_at(citation, lake),
    )


def _prefetch_pdf_pages(citations: list[Citation], lake: Lake | None) -> None:
    """Parse every cited PDF page, one open of each file (layouts looked up in one scan per source)."""
    if lake is None or not lake.has_table(S.DOCUMENTS):
        return
    from kbflow.sources.pdf import prefetch_pages

    wanted: dict[str, dict[str, Citation]] = {}  # source id -> unit key -> a citation of it
    for c in citations:
        loc = c.locator
        if loc.kind == "pdf" and loc.page:
            for key in _unit_keys(loc):
                wanted.setdefault(c.source_id, {})[key] = c
    by_file: dict[tuple[str, bool], dict[int, list[str]]] = {}
    for source_id, units in wanted.items():
        where = f"{S.SOURCE_ID} = {sql_str(source_id)} AND {sql_in(S.UNIT_KEY, units)}"
        for row in lake.scan(S.DOCUMENTS, [S.UNIT_KEY, S.LAYOUT], where).to_pylist():
            c = units[row[S.UNIT_KEY]]
            if row[S.LAYOUT]:
                data = json.loads(row[S.LAYOUT])
                try:
                    path = c.file_path()
                except ResolveError:
                    continue  # resolve() says why, citation by citation
                pages = by_file.setdefault((path, bool(data.get("tables", True))), {})
                pages.setdefault(c.locator.page or 0, list(data.get("dropped") or []))
    for (path, tables), pages in by_file.items():
        try:
            prefetch_pages(path, pages, tables)
        except (SourceError, OSError):
            continue  # resolve() says why, citation by citation


def resolve_many(citations: Iterable[Citation], *, lake: Lake | None = None) -> list[str | Exception]:
    """:func:`resolve` for many citations, grouped by file so a document is parsed (a record set read) at most once.

    Returns, in the order given, each citation's text or the error resolving
    it raised (:class:`StaleCitationError`, :class:`ResolveError`).
    """
    citations = list(citations)
    order = sorted(range(len(citations)), key=lambda i: (citations[i].uri, citations[i].locator.path or ""))
    out: list[str | Exception] = [""] * len(citations)
    _prefetch_pdf_pages(citations, lake)
    token, last = _RECORDS.set(_prefetch_records(citations)), _LAST.set([None, ""])
    try:
        for i in order:
            try:
                out[i] = resolve(citations[i], lake=lake)
            except ResolveError as exc:
                out[i] = exc
    finally:
        _RECORDS.reset(token)
        _LAST.reset(last)
    return out
