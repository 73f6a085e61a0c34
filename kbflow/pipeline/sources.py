"""Removing a source, and finding the sources whose bytes changed since they were indexed."""

from __future__ import annotations

from collections.abc import Iterable

from kbflow import schema as S
from kbflow.errors import KbflowError
from kbflow.lake.lake import Lake
from kbflow.lake.lease import lease
from kbflow.pipeline.common import source_filter
from kbflow.pipeline.results import RemoveResult, StaleSource
from kbflow.records import Source
from kbflow.sources.base import get_loader

__all__ = ["remove_source", "source_fingerprint", "stale_sources"]


def remove_source(lake: Lake, source_id: str, *, wait: float = 0.0) -> RemoveResult:
    """Delete a source's rows from ``documents``, ``chunks`` and the search table, then unregister it.

    Idempotent: removing a source that is already gone (or half gone, after a
    crash) finishes the job. Data goes first and the registry row last, so no
    crash leaves rows the registry does not know about. Vectors stay in
    ``embeddings`` (keyed by text hash, they may serve other sources, and a
    re-added source re-uses them). Holds the lake's exclusive write lease
    (waiting up to ``wait`` seconds for another writer).
    """
    where = source_filter(source_id)
    with lease(lake.uri, f"kbflow remove {source_id}", wait=wait):
        registered = bool(lake.sources([source_id]))
        result = RemoveResult(source_id, registered)
        for name in (S.DOCUMENTS, S.CHUNKS, S.SEARCH, S.SOURCES):
            if not lake.has_table(name):
                continue
            table = lake.table(name)
            n = table.count_rows(where)
            if n:
                table.delete(where)
                result.versions[name] = lake.table(name).version
            result.rows_removed[name] = n
    return result


def source_fingerprint(lake: Lake, source: Source) -> str:
    """The fingerprint of everything ``source``'s loader would read now (nothing is parsed or kept);
    raises the loader's :class:`~kbflow.errors.KbflowError` when the source cannot be read."""
    loader = get_loader(source.source_type)
    loader.lake_uri, loader.keep_fetched = lake.uri, False
    return loader.fingerprint(source)


def stale_sources(lake: Lake, source_ids: Iterable[str] | None = None) -> list[StaleSource]:
    """Sources whose bytes no longer match what was indexed.

    Found by fingerprinting only: nothing is parsed or written.
    """
    out = []
    for source in lake.sources(source_ids):
        if source.content_hash is None:
            out.append(StaleSource(source.source_id, "never indexed"))
            continue
        try:
            fingerprint = source_fingerprint(lake, source)
        except KbflowError as exc:
            out.append(StaleSource(source.source_id, "unreadable", str(exc)))
            continue
        if fingerprint != source.content_hash:
            out.append(StaleSource(source.source_id, "changed", fingerprint=fingerprint))
        elif source.status == S.FAILED:
            out.append(StaleSource(source.source_id, "failed", source.last_error, fingerprint))
        elif source.status == S.PENDING:
            detail = "indexed but not yet in the search table"
            out.append(StaleSource(source.source_id, "not published", detail, fingerprint))
    return out
