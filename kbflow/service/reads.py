"""What the web page reads of the lake: ``Service.pages``, public methods of the service.

Each method checks the caller's key as the REST API does and returns plain
records (dicts, :class:`~kbflow.records.Citation`), so the page's routes
fetch with one call and render with a pure function
(:mod:`kbflow.service.web.pages`), and no route reads a table or builds a
filter itself.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kbflow import schema as S
from kbflow.errors import NotFoundError
from kbflow.lake.sql import sql_str
from kbflow.records import Citation, render

if TYPE_CHECKING:
    from kbflow.lake.lake import Lake
    from kbflow.usage.keys import ApiKey

__all__ = ["PageReads", "SCALE"]

#: page image scale of the citation view (pixels per PDF point)
SCALE = render.DEFAULT_SCALE


class PageReads:
    """The web page's reads over a :class:`~kbflow.service.core.Service` (``service.pages``), built on its
    public methods (``chunk_row``, ``sources``, ``source``, ``insights``) and its lake."""

    def __init__(self, service: Any) -> None:  # a Service (not imported: the service imports this module)
        self.service = service
        self.lake: Lake = service.lake

    def chunk_view(self, key: ApiKey | None, chunk_id: str) -> dict[str, Any]:
        """A chunk on its page: ``{"row", "citation", "siblings"`` (the unit's chunks in order), ``"unit"`` (the
        unit's document row or ``None``), ``"thread"`` (a ticket's posts)``}``."""
        row = self.service.chunk_row(key, chunk_id)
        citation = Citation.from_row(row)
        where = f"{S.SOURCE_ID} = {sql_str(row[S.SOURCE_ID])} AND {S.UNIT_HASH} = {sql_str(row[S.UNIT_HASH])}"
        siblings = self.lake.scan(S.CHUNKS, [S.CHUNK_ID, S.POSITION, S.TEXT], where).to_pylist()
        unit = self.lake.scan(S.DOCUMENTS, [S.TEXT, S.LOCATOR], where).to_pylist()
        thread: list[dict[str, Any]] = []
        loc = citation.locator
        if loc.kind == "ticket" and loc.ticket_id:
            docs = self.lake.scan(S.DOCUMENTS, [S.TEXT, S.LOCATOR], f"{S.SOURCE_ID} = {sql_str(row[S.SOURCE_ID])}")
            thread = [d for d in docs.to_pylist() if (d[S.LOCATOR] or {}).get("ticket_id") == loc.ticket_id]
        return {
            "row": row,
            "citation": citation,
            "siblings": sorted(siblings, key=lambda r: r[S.POSITION]),
            "unit": unit[0] if unit else None,
            "thread": thread,
        }

    def chunk_page_image(self, key: ApiKey | None, chunk_id: str) -> tuple[bytes, tuple[int, int]]:
        """The PNG of the PDF page a chunk is on, and its size in pixels (at :data:`SCALE`)."""
        return self.page_image(Citation.from_row(self.service.chunk_row(key, chunk_id)))

    @staticmethod
    def page_image(citation: Citation) -> tuple[bytes, tuple[int, int]]:
        """The PNG of the PDF page a citation (read through a key already) points at, and its size in pixels."""
        if citation.locator.kind != "pdf" or not citation.locator.page:
            raise NotFoundError(f"{citation.render()} is not on a PDF page")
        return render.page_png(render.pdf_file(citation), citation.locator.page, SCALE)

    def chunk_original(self, key: ApiKey | None, chunk_id: str) -> tuple[str, str]:
        """Where a chunk's original is: ``("url", URL)`` for a web page, else ``("file", path)`` (a
        :class:`~kbflow.errors.NotFoundError` when the file is gone)."""
        from kbflow.retrieve.resolver import source_file
        from kbflow.sources.web import is_url

        citation = Citation.from_row(self.service.chunk_row(key, chunk_id))
        if is_url(citation.uri):
            return "url", citation.uri
        path = source_file(citation)
        if not os.path.isfile(path):
            raise NotFoundError(f"{path}: the source file is gone")
        return "file", path

    def sources_overview(self, key: ApiKey | None) -> list[dict[str, Any]]:
        """The sources the key sees, each with ``"pill"``: its status, or ``stale`` where its files changed since
        it was indexed (``"stale_detail"`` says how)."""
        from kbflow.pipeline import stale_sources

        listed = self.service.sources.list(key)
        ids = [s["source_id"] for s in listed]
        stale = {s.source_id: s for s in stale_sources(self.lake, ids)} if listed else {}
        for s in listed:
            found = stale.get(s["source_id"])
            s["pill"] = s["status"]
            if found is not None and found.reason == "changed" and s["status"] in (S.INDEXED, S.PARTIAL):
                s["pill"] = "stale"
                s["stale_detail"] = found.detail
        return listed

    def source_view(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        """A source, its documents (``unit_hash``, ``unit_key``, ``text``) and its chunks (``chunk_id``,
        ``unit_hash``, ``position``, ``text``)."""
        source = self.service.sources.get(key, source_id)
        where = f"{S.SOURCE_ID} = {sql_str(source_id)}"
        docs, chunks = [], []
        if self.lake.has_table(S.DOCUMENTS):
            docs = self.lake.scan(S.DOCUMENTS, [S.UNIT_HASH, S.UNIT_KEY, S.TEXT], where).to_pylist()
        if self.lake.has_table(S.CHUNKS):
            chunks = self.lake.scan(S.CHUNKS, [S.CHUNK_ID, S.UNIT_HASH, S.POSITION, S.TEXT], where).to_pylist()
        return {"source": source, "docs": docs, "chunks": chunks}

    def lake_versions(self, key: ApiKey | None) -> tuple[dict[str, dict[str, int]], dict[str, list[dict[str, Any]]]]:
        """The lake's tags (each the table versions it names) and every table's readable versions (a global key)."""
        return self.service.versions(key)

    def insights_view(self, key: ApiKey | None, since: str | None) -> dict[str, Any]:
        """The service's ``insights`` and the median search latency per hour (the last 168 hours logged)."""
        from kbflow import usage

        report = self.service.insights(key, since)
        log = usage.read_log(self.lake, S.QUERY_LOG)
        points: list[tuple[str, float]] = []
        if log.height:
            import polars as pl

            by_hour = (
                log.with_columns(pl.col(S.LOGGED_AT).dt.truncate("1h").alias("hour"))
                .group_by("hour")
                .agg(pl.col(S.LATENCY_MS).median().alias("p50"))
                .sort("hour")
                .tail(168)
            )
            points = [(str(h)[:16], float(v)) for h, v in by_hour.iter_rows()]
        return {"report": report, "latency": points}
