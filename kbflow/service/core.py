"""What a kbflow server does, whatever the protocol: the REST API and the MCP tools both call a :class:`Service`.

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
from kbflow.errors import AccessDeniedError, ConfigError, NotFoundError, QueryError
from kbflow.lake.lake import Lake
from kbflow.lake.sql import sql_str
from kbflow.records import Citation, Hit, Hits, Source, scopes
from kbflow.retrieve.retriever import Retriever
from kbflow.service.reads import PageReads
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


def source_dict(source: Source) -> dict[str, Any]:
    """A registered source as the REST API and MCP show it: :meth:`Source.to_dict`, the one JSON shape."""
    return source.to_dict()


def hits_dict(hits: Hits, version: int) -> dict[str, Any]:
    """A search result as the REST API returns it (and :class:`kbflow.Client` reads back)."""
    return {
        "query": hits.query,
        "mode": hits.mode,
        "query_id": hits.query_id,
        "confidence": hits.confidence,
        "low_confidence": hits.low_confidence,
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
        self._claims = None

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
                    if current is not None and current.model_id == fresh.model_id:
                        fresh._embedder = current._embedder  # the model stays loaded
                    self._retriever = current = fresh
            return current

    def _pinned(self, version: int | None, tag: str | None) -> Retriever:
        """A retriever of an older version or a tagged snapshot (the last few are kept open)."""
        with self._lock:
            found = self._older.get((version, tag))
            if found is None:
                found = Retriever.open(self.lake, version=version, tag=tag, settings=self.settings, origin="rest")
                if self._retriever is not None:
                    found._embedder = self._retriever._embedder if found.model_id == self._retriever.model_id else None
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
    @staticmethod
    def _scope_for(key: ApiKey | None, scope: str | None) -> str | None:
        """The scope a request searches in: a key searches its own scope unless it names one under it."""
        if key is None:
            return scope
        if scope is None:
            return None if key.scope == scopes.GLOBAL else key.scope
        try:
            scope = scopes.normalize(scope)
        except ConfigError as exc:
            raise QueryError(str(exc)) from None
        key.require(scope)
        return scope

    def search(
        self, key: ApiKey | None, query: str, k: int = 10, *, origin: str = "rest", **options: Any
    ) -> tuple[Hits, int]:
        """``Retriever.search`` within the key's scope; returns the hits and the version they came from."""
        options = {name: value for name, value in options.items() if value is not None}
        scope = self._scope_for(key, options.pop("scope", None))
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

    # --- sources --------------------------------------------------------------------
    def sources(self, key: ApiKey | None) -> list[dict[str, Any]]:
        registered = self.lake.sources() if self.lake.has_table(S.SOURCES) else []
        return [source_dict(s) for s in registered if key is None or key.can_see(s.scope)]

    def source(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        from kbflow.errors import SourceNotFoundError

        found = [s for s in self.sources(key) if s["source_id"] == source_id]
        if not found:
            raise SourceNotFoundError(f"no source {source_id!r} in this lake")
        return found[0]

    def _editable(self, key: ApiKey | None, source_id: str) -> Source:
        from kbflow.errors import SourceNotFoundError

        try:
            source = self.lake.get_source(source_id)
        except SourceNotFoundError:
            raise SourceNotFoundError(f"no source {source_id!r} in this lake") from None
        if key is not None:
            if not key.can_see(source.scope):
                raise SourceNotFoundError(f"no source {source_id!r} in this lake")
            key.require(source.scope, write=True)
        return source

    def add_source(self, key: ApiKey | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """Register a source (``{"uri", "type", "id"?, "scope"?, "title"?}`` plus the options of
        :func:`kbflow.pipeline.register_source`: ``max_file_mb``, ``refresh``, ``all_pages``, ``crawl``,
        ``crawl_limits``, ``fields``), as ``kbflow add`` does. An editor's key must reach the source's scope, and its
        current scope where it is registered already (moving a source needs both); a local path must lie under a
        ``source_roots`` folder (with keys or without). Without ``scope`` a new source takes the key's, a registered
        one keeps its own. Returns the source and the files its loader will leave out."""
        from kbflow.pipeline import register_source
        from kbflow.pipeline.registration import OPTION_NAMES

        uri, source_type = body.get("uri"), body.get("type")
        if not isinstance(uri, str) or not uri or not isinstance(source_type, str):
            raise QueryError("a source needs 'uri' (a path on the server or an http(s) URL) and 'type'")
        if key is not None and key.role != "editor":
            raise AccessDeniedError(f"key {key.key_id} is a reader; adding, removing or refreshing needs an editor")
        options = {name: body.get(name) for name in OPTION_NAMES}
        try:
            added = register_source(
                self.lake,
                uri,
                source_type,
                source_id=body.get("id"),
                scope=body.get("scope") or None,
                title=body.get("title"),
                options=options,
                roots=list(self.source_roots),
                editor=key,
                default_scope=key.scope if key is not None else scopes.GLOBAL,
            )
        except ConfigError as exc:
            raise QueryError(str(exc)) from None
        return added.to_dict()

    def remove_source(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        from kbflow.pipeline import remove_source

        self._editable(key, source_id)
        return remove_source(self.lake, source_id).to_dict()

    def refresh_source(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        """Run the ingest (Dagster assets where installed) for one source; returns its summary."""
        from kbflow.pipeline import run_ingest

        self._editable(key, source_id)
        summary = run_ingest(self.settings, [source_id], runner="auto")
        return summary.to_dict()

    # --- claims ---------------------------------------------------------------------------
    def claims(self):
        """The lake's claims store (opened once, on first use)."""
        with self._lock:
            if self._claims is None:
                from kbflow.claims import Claims

                self._claims = Claims.open(self.lake, settings=self.settings)
            return self._claims

    @staticmethod
    def _actor(key: ApiKey | None, kind: str | None, default: str):
        """Who acts for a request: the given kind (agent, user or tool), named by the key (or ``local``)."""
        from kbflow.claims import Actor

        kind = kind or default
        if kind not in ("agent", "user", "tool"):
            raise QueryError(f"actor_type must be agent, user or tool, got {kind!r}")
        return Actor(kind, (key.name or key.key_id) if key is not None else "local")

    def _evidence(self, key: ApiKey | None, items: Sequence[Mapping[str, Any]] | None) -> list:
        """Evidence from request JSON; a citation names only its chunk (``{"kind": "citation", "ref": id}``) and is
        read from the lake, within the key's scope."""
        from kbflow.claims import Evidence

        out = []
        for item in items or ():
            if not isinstance(item, Mapping):
                raise QueryError("each evidence item is an object {kind, ref, text?}")
            if item.get("kind") == "citation":
                out.append(Evidence.from_row(self.chunk_row(key, item.get("ref") or item.get("chunk_id") or "")))
            else:
                out.append(Evidence.from_dict({k: v for k, v in item.items() if k in ("kind", "ref", "text")}))
        return out

    def _visible_claim(self, key: ApiKey | None, claim_id: str, *, write: bool = False):
        claim = self.claims().get(claim_id)
        if key is not None:
            if not key.can_see(claim.scope):
                raise NotFoundError(f"no claim {claim_id!r} in this store")
            if write:
                key.require(claim.scope, write=True)
        return claim

    def learn_claim(
        self, key: ApiKey | None, body: Mapping[str, Any], *, actor_default: str = "user"
    ) -> dict[str, Any]:
        """Learn a claim (``{"text", "evidence", "scope"?, "status"?, "confidence"?, "domain"?, "tags"?}``); an
        editor of the claim's scope only."""
        scope = body.get("scope") or (key.scope if key is not None else scopes.GLOBAL)
        if key is not None:
            try:
                key.require(scopes.normalize(scope), write=True)
            except ConfigError as exc:
                raise QueryError(str(exc)) from None
        store = self.claims()
        claim_id = store.learn(
            body.get("text"),
            self._evidence(key, body.get("evidence")),
            scope=scope,
            actor=self._actor(key, body.get("actor_type"), actor_default),
            confidence=body.get("confidence"),
            status=body.get("status"),
            domain=body.get("domain"),
            tags=body.get("tags") or (),
        )
        return store.get(claim_id).to_dict()

    def recall_claims(
        self,
        key: ApiKey | None,
        query: str | None,
        k: int = 5,
        *,
        scope: str | None = None,
        statuses: Sequence[str] | None = None,
        domain: str | None = None,
        tags: Sequence[str] | None = None,
        all_statuses: bool = False,
    ) -> dict[str, Any]:
        """Claims matching ``query`` (or, without one, the newest ``k``) that the key may see."""
        from kbflow.claims import ACTIVE

        scope = self._scope_for(key, scope)
        chosen = None if all_statuses else (tuple(statuses) if statuses else ACTIVE)
        store = self.claims()
        visible = (lambda c: key.can_see(c.scope)) if key is not None else None
        if query:
            hits = store.recall(query, k, scope=scope, statuses=chosen, domain=domain, tags=tags, visible=visible)
            return {"query": query, "hits": hits.to_dicts()}
        if not 1 <= k <= 100:
            raise QueryError(f"k must be in 1..100, got {k}")
        listed = [c for c in store.list(statuses=chosen, scope=scope) if visible is None or visible(c)]
        listed = [c for c in listed if (domain is None or c.domain == domain) and (not tags or set(tags) & set(c.tags))]
        return {"query": None, "claims": [c.to_dict() for c in listed[-k:][::-1]]}

    def claim(self, key: ApiKey | None, claim_id: str) -> dict[str, Any]:
        return self._visible_claim(key, claim_id).to_dict()

    def claim_history(self, key: ApiKey | None, claim_id: str) -> dict[str, Any]:
        self._visible_claim(key, claim_id)
        return {"claim_id": claim_id, "events": [e.to_dict() for e in self.claims().history(claim_id)]}

    def transition_claim(
        self, key: ApiKey | None, claim_id: str, action: str, body: Mapping[str, Any], *, actor_default: str = "user"
    ) -> dict[str, Any]:
        """``verify``, ``dispute`` or ``supersede`` a claim (an editor of its scope only)."""
        self._visible_claim(key, claim_id, write=True)
        store = self.claims()
        actor = self._actor(key, body.get("actor_type"), actor_default)
        if action == "verify":
            claim = store.verify(claim_id, by=actor, reason=body.get("reason"), evidence=self._evidence(
                key, body.get("evidence")), confidence=body.get("confidence"), expect=body.get("expect"))  # fmt: skip
        elif action == "dispute":
            claim = store.dispute(claim_id, reason=body.get("reason"), evidence=self._evidence(
                key, body.get("evidence")), by=actor, expect=body.get("expect"))  # fmt: skip
        elif action == "supersede":
            new_id = body.get("new_id")
            if not isinstance(new_id, str):
                raise QueryError("supersede needs new_id, the claim that replaces this one (learn it first)")
            self._visible_claim(key, new_id)
            claim = store.supersede(claim_id, new_id, by=actor, reason=body.get("reason"))
        else:
            raise QueryError(f"unknown claim action {action!r}; verify, dispute or supersede")
        return claim.to_dict()

    def check_claims(self, key: ApiKey | None) -> dict[str, Any]:
        """Check every claim's citations (:meth:`Claims.check_evidence`); it spans every scope: a global editor."""
        if key is not None and (key.scope != scopes.GLOBAL or key.role != "editor"):
            raise AccessDeniedError(f"key {key.key_id}: checking claims spans every scope; use a global editor key")
        return self.claims().check_evidence().to_dict()

    # --- the lake as a whole ----------------------------------------------------------------
    def versions(self, key: ApiKey | None) -> tuple[dict[str, dict[str, int]], dict[str, list[dict[str, Any]]]]:
        """The lake's tags and every table's versions: they span every scope, so a ``global`` key."""
        if key is not None and key.scope != scopes.GLOBAL:
            raise AccessDeniedError(f"key {key.key_id} (scope {key.scope}): the lake's versions span every scope")
        return self.lake.snapshots(), self.lake.history()

    def prune_logs(self) -> dict[str, int]:
        """Drop query and citation log rows older than the settings' ``log_days`` (:func:`kbflow.usage.prune`)."""
        return usage.prune(self.lake, self.settings.log_days)

    # --- insights -----------------------------------------------------------------------
    def insights(self, key: ApiKey | None, since: str | None = "7d", top: int = 20) -> dict[str, Any]:
        """The insights report (:func:`kbflow.insights`); it spans every scope, so it needs a ``global`` key."""
        from kbflow.usage.insights import insights

        if key is not None and key.scope != scopes.GLOBAL:
            raise AccessDeniedError(
                f"key {key.key_id} (scope {key.scope}): insights span every scope; use a global key"
            )
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
