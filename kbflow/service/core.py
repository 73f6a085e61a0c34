"""What a kbflow server does, whatever the protocol: the REST API, the web page and the MCP tools all call a
:class:`Service`.

The service holds the lake and what every part shares (its settings, its
keys, the retriever of the current version) and does the searching itself:
search, chunks, resolving and recording citations, health, versions and
insights (the ``search`` and ``insights`` routers). Its other parts have a
router each: :attr:`Service.sources` (:mod:`.sources`, ``/v1/sources``) and
:attr:`Service.claims` (:mod:`.claims`, ``/v1/claims``). What a key may reach
is decided in :mod:`.access`.

A service holds the lake, its settings, a :class:`~kbflow.usage.keys.KeyRing` and
the current :class:`~kbflow.retrieve.retriever.Retriever`. The retriever is
re-opened when an ingest publishes a new search-table version (checked at
most every :attr:`Service.RECHECK` seconds); a request keeps the retriever
it started with, so each answers from one version while an ingest commits.

Every method takes the caller's :class:`~kbflow.usage.keys.ApiKey` (``None`` when
the server has no keys: a local, trusted server) and enforces its scope and
role (:mod:`kbflow.usage.keys`) before anything is read or written.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kbflow import schema as S
from kbflow import usage
from kbflow.config import Settings
from kbflow.errors import NotFoundError, QueryError
from kbflow.lake.lake import Lake
from kbflow.lake.sql import sql_str
from kbflow.records import Citation, Hit, Hits
from kbflow.retrieve.retriever import Retriever
from kbflow.service.access import require_global, scope_for
from kbflow.service.claims import ClaimService
from kbflow.service.reads import PageReads
from kbflow.service.sources import SourceService, source_dict
from kbflow.usage.keys import ApiKey, KeyRing

__all__ = ["Service", "hits_dict", "source_dict"]

_CHUNK_COLUMNS = [
    S.CHUNK_ID,
    S.SOURCE_ID,
    S.SOURCE_TYPE,
    S.URI,
    S.TITLE,
    S.CONTENT_HASH,
    S.CHUNK_HASH,
    S.SCOPE,
    S.CONTENT_KIND,
    S.UNIT_HASH,
    S.POSITION,
    S.LOCATOR,
    S.TEXT,
]


def hits_dict(hits: Hits, version: int) -> dict[str, Any]:
    """A search result as the REST API returns it (and :class:`kbflow.Client` reads back)."""
    return {
        "query": hits.query,
        "mode": hits.mode,
        "query_id": hits.query_id,
        "confidence": hits.confidence,
        "low_confidence": hits.low_confidence,
        "flag": hits.flag.to_dict() if hits.flag is not None else None,
        "latency_ms": hits.latency_ms,
        "expansion": hits.expansion,
        "version": version,
        "hits": [h.to_dict() for h in hits],
    }


class Service:
    """The operations of ``kbflow serve`` over one lake (see the module docs).

    ``source_roots``: folders under which sources added over the network
    (``add_source``) must lie, with keys or without (default: the current
    directory, so a keyless server never registers a folder it was not started
    in). ``kbflow add`` on the command line is not limited. URLs are always
    allowed (fetched behind kbflow's SSRF guard).
    """

    RECHECK = 1.0

    def __init__(
        self,
        lake: str | Lake,
        settings: Settings | Mapping[str, Any] | None = None,
        *,
        log_queries: bool = True,
        source_roots: Sequence[str] | None = None,
    ) -> None:
        self.lake = lake if isinstance(lake, Lake) else Lake(lake, create=False)
        settings = Settings.coerce(settings, lake=self.lake.uri)
        if not log_queries:
            settings = replace(settings, retrieval=settings.retrieval.override(log_queries=False))
        self.settings = settings
        self.keys = KeyRing(self.lake)
        roots = [os.getcwd()] if source_roots is None else source_roots
        self.source_roots = [os.path.realpath(r) for r in roots]
        self._lock = threading.Lock()
        self._retriever: Retriever | None = None
        self._checked = float("-inf")
        self._older: dict[tuple[int | None, str | None], Retriever] = {}
        #: the parts each router calls: the source registry and the claims store
        self.sources = SourceService(self)
        self.claims = ClaimService(self)

    #: the names this class answered to before its parts had their own (``service.add_source`` is
    #: ``service.sources.add``), kept so that code written against them runs unchanged
    _MOVED: dict[str, tuple[str, str]] = {
        "source": ("sources", "get"),
        "add_source": ("sources", "add"),
        "remove_source": ("sources", "remove"),
        "refresh_source": ("sources", "refresh"),
        "learn_claim": ("claims", "learn"),
        "recall_claims": ("claims", "recall"),
        "claim": ("claims", "get"),
        "claim_history": ("claims", "history"),
        "transition_claim": ("claims", "transition"),
        "check_claims": ("claims", "check"),
    }

    def __getattr__(self, name: str) -> Any:
        moved = type(self)._MOVED.get(name)
        if moved is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(getattr(self, moved[0]), moved[1])

    # --- the current version ----------------------------------------------------------
    def retriever(self) -> Retriever:
        """The retriever of the latest search-table version (re-opened after an ingest publishes one)."""
        with self._lock:
            now = time.monotonic()
            current = self._retriever
            if current is None or now - self._checked > self.RECHECK:
                self._checked = now
                if current is None or current.dataset.latest_version != current.version:
                    fresh = Retriever.open(self.lake, settings=self.settings, origin="rest")
                    if current is not None:
                        fresh.share_model(current)  # the model stays loaded
                    self._retriever = current = fresh
            return current

    def _pinned(self, version: int | None, tag: str | None) -> Retriever:
        """A retriever of an older version or a tagged snapshot (the last few are kept open)."""
        with self._lock:
            found = self._older.get((version, tag))
            if found is None:
                found = Retriever.open(self.lake, version=version, tag=tag, settings=self.settings, origin="rest")
                if self._retriever is not None:
                    found.share_model(self._retriever)
                self._older[(version, tag)] = found
                while len(self._older) > 4:
                    self._older.pop(next(iter(self._older)))
            return found

    def principal(self, token: str | None) -> ApiKey | None:
        """The key a request carries, checked; ``None`` when the server has no keys (everything allowed)."""
        if not self.keys.enabled:
            return None
        return self.keys.verify(token)

    # --- search -----------------------------------------------------------------
    def search(
        self, key: ApiKey | None, query: str, k: int = 10, *, origin: str = "rest", **options: Any
    ) -> tuple[Hits, int]:
        """``Retriever.search`` within the key's scope; returns the hits and the version they came from."""
        options = {name: value for name, value in options.items() if value is not None}
        scope = scope_for(key, options.pop("scope", None))
        if scope is not None:
            options["scope"] = scope
        version, tag = options.pop("version", None), options.pop("tag", None)
        retriever = self.retriever() if version is None and tag is None else self._pinned(version, tag)
        caller, reach = (key.key_id, key.scope) if key is not None else (None, None)
        hits = retriever.search(query, k, caller=caller, origin=origin, reach=reach, **options)
        return hits, retriever.version

    @property
    def pages(self) -> PageReads:
        """What the web page reads (:mod:`kbflow.service.reads`): a chunk on its page, sources, versions."""
        return PageReads(self)

    # --- chunks, citations ------------------------------------------------------------
    def chunk_row(self, key: ApiKey | None, chunk_id: str) -> dict[str, Any]:
        """A chunk's row, where the key may see it (else :class:`~kbflow.errors.NotFoundError`)."""
        if not isinstance(chunk_id, str) or not chunk_id or len(chunk_id) > 200:
            raise QueryError(f"chunk id must be a non-empty string of at most 200 characters, got {chunk_id!r}")
        rows = self.lake.scan(S.CHUNKS, _CHUNK_COLUMNS, f"{S.CHUNK_ID} = {sql_str(chunk_id)}").to_pylist()
        if not rows or (key is not None and not key.can_see(rows[0][S.SCOPE])):
            raise NotFoundError(f"no chunk {chunk_id!r} in this lake")  # the same answer outside the key's scope
        return rows[0]

    def chunk(self, key: ApiKey | None, chunk_id: str) -> dict[str, Any]:
        """A chunk's text, citation, kind and scope, and the chunks before and after it in its unit."""
        row = self.chunk_row(key, chunk_id)
        where = (
            f"{S.SOURCE_ID} = {sql_str(row[S.SOURCE_ID])} AND {S.UNIT_HASH} = {sql_str(row[S.UNIT_HASH])} "
            f"AND {S.POSITION} IN ({row[S.POSITION] - 1}, {row[S.POSITION] + 1})"
        )
        near = {
            r[S.POSITION]: r[S.CHUNK_ID] for r in self.lake.scan(S.CHUNKS, [S.CHUNK_ID, S.POSITION], where).to_pylist()
        }
        return {
            "chunk_id": chunk_id,
            "text": row[S.TEXT],
            "content_kind": row[S.CONTENT_KIND],
            "scope": row[S.SCOPE],
            "citation": Citation.from_row(row).to_dict(),
            "rendered": Citation.from_row(row).render(),
            "neighbours": {"previous": near.get(row[S.POSITION] - 1), "next": near.get(row[S.POSITION] + 1)},
        }

    def resolve(self, key: ApiKey | None, chunk_id: str, *, indexed: bool = False) -> dict[str, Any]:
        """The text the chunk's citation points at, re-read from its source (``indexed``: as indexed).

        Raises :class:`StaleCitationError` when the source changed since.
        """
        from kbflow.retrieve.resolver import resolve

        row = self.chunk_row(key, chunk_id)
        citation = Citation.from_row(row)
        text = row[S.TEXT] if indexed else resolve(citation, lake=self.lake)
        return {"chunk_id": chunk_id, "text": text, "indexed": indexed, "citation": citation.to_dict()}

    def cite(
        self,
        key: ApiKey | None,
        chunk_ids: Sequence[str],
        *,
        query_id: str | None = None,
        turn_id: str | None = None,
        origin: str = "rest",
    ) -> int:
        """Record that these chunks were put in front of a model (``citation_log``); returns how many."""
        if not chunk_ids or len(chunk_ids) > 100:
            raise QueryError(f"cite 1 to 100 chunk ids at a time, got {len(chunk_ids)}")
        for name, value in (("query_id", query_id), ("turn_id", turn_id)):
            if value is not None and (not isinstance(value, str) or len(value) > 200):
                raise QueryError(f"{name} must be a string of at most 200 characters")
        hits = []
        for rank, chunk_id in enumerate(chunk_ids, start=1):
            row = self.chunk_row(key, chunk_id)
            citation = Citation.from_row(row)
            hits.append(
                Hit(rank, 0.0, chunk_id, row[S.TEXT], citation, row[S.CONTENT_KIND], row[S.SCOPE], query_id=query_id)
            )
        rows = usage.citation_rows(hits, origin=origin, caller=key.key_id if key else None, turn_id=turn_id)
        return usage.log_citations(self.lake, rows)

    def record_delivered(self, key: ApiKey | None, hits: Hits, origin: str) -> None:
        """Hits handed to an agent as a tool result were put in front of a model: log them as cited."""
        if self.settings.retrieval.log_queries and hits:
            usage.log_citations(self.lake, usage.citation_rows(hits, origin=origin, caller=key.key_id if key else None))

    # --- the lake as a whole ----------------------------------------------------------------
    def versions(self, key: ApiKey | None) -> tuple[dict[str, dict[str, int]], dict[str, list[dict[str, Any]]]]:
        """The lake's tags and every table's versions: they span every scope, so a ``global`` key."""
        require_global(key, "the lake's versions")
        return self.lake.snapshots(), self.lake.history()

    def prune_logs(self) -> dict[str, int]:
        """Drop query and citation log rows older than the settings' ``log_days`` (:func:`kbflow.usage.prune`)."""
        return usage.prune(self.lake, self.settings.log_days)

    # --- insights -----------------------------------------------------------------------
    def insights(self, key: ApiKey | None, since: str | None = "7d", top: int = 20) -> dict[str, Any]:
        """The insights report (:func:`kbflow.insights`); it spans every scope, so it needs a ``global`` key."""
        from kbflow.usage.insights import insights

        require_global(key, "insights")
        if not 1 <= top <= 1000:
            raise QueryError(f"top must be in 1..1000, got {top}")
        return insights(self.lake, since, top=top, log_days=self.settings.log_days).to_dict()

    def health(self, *, anonymous: bool = False) -> dict[str, Any]:
        """Whether the server is alive; with a key (or on a server without keys) also its lake, version, size and
        model. ``anonymous``: the request carried no valid key on a server that has keys: ``{"status": "ok"}``
        only, naming nothing of the lake."""
        if anonymous:
            return {"status": "ok"}
        retriever = self.retriever()
        return {
            "status": "ok",
            "lake": self.lake.uri,
            "version": retriever.version,
            "chunks": retriever.rows,
            "model": retriever.model_id,
            "auth": self.keys.enabled,
        }
