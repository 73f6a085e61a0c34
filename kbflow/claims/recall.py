"""Recall over a claims store: the in-memory index kept in step with the event log, and the hybrid search.

:class:`ClaimRecall` owns the store's :class:`~kbflow.claims.index.ClaimIndex`
and the embedding model. The event log (:mod:`kbflow.claims.log`) tells it
what changed: it is filled from the stored claim rows when a store opens
(their vectors as stored; embedded again only where stored under another
model), grown as claims are learned, and each claim's status kept current,
so a filtered recall never reads the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.claims import model as M
from kbflow.claims.index import ClaimIndex
from kbflow.claims.model import Claim
from kbflow.config import Settings
from kbflow.errors import ConfigError, QueryError
from kbflow.records import scopes as S_scopes

__all__ = ["ClaimHit", "ClaimHits", "ClaimRecall", "claim_filter", "visible_scopes"]


@dataclass(frozen=True)
class ClaimHit:
    """One claim recalled: the claim, its fused score and each leg's rank."""

    rank: int
    score: float
    claim: Claim
    dense_rank: int | None = None
    bm25_rank: int | None = None

    @property
    def stale(self) -> bool:
        """Whether a source no longer holds what one of its citations cited (see ``claim.stale``)."""
        return self.claim.evidence_stale

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "score": self.score,
            "dense_rank": self.dense_rank,
            "bm25_rank": self.bm25_rank,
            "stale": self.stale,
            "claim": self.claim.to_dict(),
        }


class ClaimHits(list):
    """The claims one :meth:`Claims.recall <kbflow.claims.store.Claims.recall>` returned, best first."""

    def __init__(self, hits: Iterable[ClaimHit] = (), *, query: str = "") -> None:
        super().__init__(hits)
        self.query = query

    def to_dicts(self) -> list[dict[str, Any]]:
        return [h.to_dict() for h in self]


class ClaimRecall:
    """The index of a store's claims and the model that embeds them (``settings.model`` on ``settings.backend``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model_id = settings.vector_space
        self.index: ClaimIndex | None = None
        self._embedder: Any = None

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from kbflow.embed.base import get_embedder

            s = self.settings
            self._embedder = get_embedder(s.model, s.embed_batch_size, s.backend, s.embed_threads)
        return self._embedder

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``texts`` (an empty ``(0, dim)`` array for none)."""
        if not texts:
            return np.zeros((0, self.embedder.dim), np.float32)
        return np.asarray(self.embedder.embed(list(texts)), np.float32)

    # --- upkeep: what the event log reports -------------------------------------------------------
    def load(self, table: Any) -> None:
        """Index the stored claims of a ``claims`` Arrow table (at least one row): one flat buffer where every
        vector is of this model, else the others embedded again here (in memory only)."""
        pc = require("pyarrow.compute")
        ids = table.column(S.CLAIM_ID).to_pylist()
        models = table.column(S.MODEL_ID).to_pylist()
        column = table.column(S.VECTOR).combine_chunks()
        lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
        same = np.asarray([m == self.model_id for m in models]) & (lengths == lengths.max())
        dim = int(lengths.max()) if same.any() else self.embedder.dim
        vectors = np.zeros((len(ids), dim), np.float32)
        texts = table.column(S.TEXT).to_pylist()
        if same.all():  # the usual case: one model, one flat buffer
            vectors[:] = column.flatten().to_numpy(zero_copy_only=False).reshape(len(ids), dim)
        else:  # stored under another model: embedded again for this one
            for i in np.flatnonzero(same):
                vectors[i] = np.asarray(column[int(i)].as_py(), np.float32)
            redo = np.flatnonzero(~same)
            vectors[redo] = self.vectors([texts[i] for i in redo])
        if self.index is None:
            self.index = ClaimIndex(dim)
        names = table.column_names  # a store written before valid time has no such columns: open at both ends
        valid = [table.column(c).to_pylist() if c in names else None for c in (S.VALID_FROM, S.VALID_TO)]
        statuses, scopes = table.column(S.STATUS).to_pylist(), table.column(S.SCOPE).to_pylist()
        self.index.add(ids, texts, vectors, statuses, scopes, *valid)

    def add(self, claims: Sequence[Claim], vectors: Mapping[str, np.ndarray] | np.ndarray | None = None) -> None:
        """Index new claims: with their vectors (an array in ``claims``' order, or by claim id; a claim without
        one is embedded here)."""
        if not claims:
            return
        if not isinstance(vectors, np.ndarray):
            known = dict(vectors or {})
            fresh = [c for c in claims if c.claim_id not in known]
            if fresh:
                known.update(zip((c.claim_id for c in fresh), self.vectors([c.text for c in fresh]), strict=True))
            vectors = np.stack([np.asarray(known[c.claim_id], np.float32) for c in claims])
        if self.index is None:
            self.index = ClaimIndex(vectors.shape[1] if len(vectors) else self.embedder.dim)
        self.index.add(
            [c.claim_id for c in claims],
            [c.text for c in claims],
            vectors,
            [c.status for c in claims],
            [c.scope for c in claims],
            [c.valid_from for c in claims],
            [c.valid_to for c in claims],
        )

    def stored_vectors(self, tables: Any, claims: Sequence[Claim]) -> dict[str, np.ndarray]:
        """Vectors of claims another writer learned, as it stored them (where of this model): by claim id."""
        return {
            r[S.CLAIM_ID]: np.asarray(r[S.VECTOR], np.float32)
            for r in tables.claims([c.claim_id for c in claims], [S.CLAIM_ID, S.MODEL_ID, S.VECTOR])
            if r[S.MODEL_ID] == self.model_id and r[S.VECTOR]
        }

    def set_status(self, claim: Claim) -> None:
        """Keep the index's status of ``claim`` current (status filters are masks over the index)."""
        if self.index is not None:
            self.index.set_status(claim.claim_id, claim.status)

    def vector(self, claim_id: str) -> np.ndarray:
        """The indexed vector of a claim (every claim in the store is indexed)."""
        if self.index is None:
            raise KeyError(claim_id)
        return self.index.vector(claim_id)

    # --- recall -----------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        k: int,
        claim: Callable[[str], Claim],
        *,
        statuses: tuple[str, ...] | None,
        scopes: list[str] | None,
        keep: Callable[[Claim], bool] | None = None,
        day: date | None = None,
        status_codes: Callable[[ClaimIndex], np.ndarray] | None = None,
    ) -> ClaimHits:
        """The ``k`` claims best matching ``query`` among those of ``statuses`` in ``scopes`` (``None``: any),
        valid on ``day`` (``None``: any), that ``keep`` accepts: cosine similarity and BM25 fused as the lake's
        searches fuse (``settings.retrieval``). ``claim`` gives a claim's state by id; ``status_codes`` each
        indexed claim's status at another moment (a replay of record time) in place of its status now."""
        index = self.index
        if index is None or not len(index):
            return ClaimHits(query=query)
        codes = status_codes(index) if status_codes is not None else None
        mask = index.filter_mask(statuses, scopes, status_codes=codes, day=day)
        if keep is not None:
            mask = index.mask(lambda cid: keep(claim(cid)), mask)
        if not mask.any():
            return ClaimHits(query=query)
        vector = np.asarray(self.embedder.embed_query(query), np.float32)
        r = self.settings.retrieval
        weights = {"dense": r.dense_weight, "bm25": r.bm25_weight}
        found = index.search(query, vector, mask, k, fusion=r.fusion, weights=weights, rrf_k=r.rrf_k)
        return ClaimHits(
            (ClaimHit(rank, score, claim(cid), d, b) for rank, (cid, score, d, b) in enumerate(found, 1)), query=query
        )


def visible_scopes(scope: str | None) -> list[str] | None:
    """The scopes a reader in ``scope`` sees (``None``: every scope); a bad scope is a :class:`QueryError`."""
    if scope is None:
        return None
    try:
        return S_scopes.visible(S_scopes.normalize(scope))
    except ConfigError as exc:
        raise QueryError(str(exc)) from None


def claim_filter(
    statuses: Iterable[str] | None, scope: str | None, domain: str | None, tags: Iterable[str] | None
) -> Callable[[Claim], bool]:
    """Whether a claim is of ``statuses``, visible in ``scope``, of ``domain`` and with any of ``tags`` (each
    ``None``: any); an unknown status or a bad scope is a :class:`~kbflow.errors.QueryError`."""
    wanted = tuple(statuses) if statuses is not None else None
    if wanted is not None:
        bad = [s for s in wanted if s not in M.STATUSES]
        if bad:
            raise QueryError(f"unknown claim status {bad[0]!r}; statuses are {', '.join(M.STATUSES)}")
    visible = visible_scopes(scope)
    seen = set(visible) if visible is not None else None
    tagset = set(tags) if tags else None

    def keep(c: Claim) -> bool:
        return (
            (wanted is None or c.status in wanted)
            and (seen is None or c.scope in seen)
            and (domain is None or c.domain == domain)
            and (tagset is None or bool(tagset & set(c.tags)))
        )

    return keep
