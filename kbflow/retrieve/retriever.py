"""Hybrid retrieval over the search table, with the citation in every hit.

Two legs each fetch a candidate depth (at least ``3 * k``): the dense leg (a
vector search over the chunk vectors, cosine) and the keyword leg (BM25 over
Lance's full-text index, English stemming and stop words). Their ranked ids
are fused by :func:`kbflow.retrieve.fusion.rrf`. Filters (scope, content kind,
source type, source ids) are pushed into both legs as pre-filters. Each leg
returns whole chunk rows, so a hit's citation needs no second lookup.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Sequence

from kbflow import schema as S
from kbflow.config import MAX_K, MAX_QUERY_CHARS, Settings
from kbflow.embed.base import get_embedder
from kbflow.errors import LakeNotFoundError, QueryError
from kbflow.index.search import VECTOR_INDEX, search_model
from kbflow.lake.lake import Lake
from kbflow.records import Citation, Hit, Hits, Locator
from kbflow.retrieve.fusion import rrf

__all__ = ["Retriever"]

MODES = ("hybrid", "dense", "bm25")


def _as_list(value: str | Iterable[str] | None, name: str) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    if not values or any(not isinstance(v, str) or not v for v in values):
        raise QueryError(f"{name} must be a non-empty string or list of strings, got {value!r}")
    return values


class Retriever:
    """Search a lake. Open with :meth:`open`; query with :meth:`search`.

    Examples
    --------
    >>> r = Retriever.open("data/lake")                       # doctest: +SKIP
    >>> for hit in r.search("where are ranks fused", k=5):    # doctest: +SKIP
    ...     print(hit.score, hit.citation.render(), hit.text[:80])
    """

    def __init__(self, lake: Lake, table, settings: Settings) -> None:
        self.lake = lake
        self.table = table
        self.settings = settings
        self.model_id = search_model(table) or settings.model
        self.rows = table.count_rows()
        self._has_vector_index = any(ix.name == VECTOR_INDEX for ix in table.list_indices())
        registered = lake.sources() if lake.has_table(S.SOURCES) else []
        self.source_ids = frozenset(s.source_id for s in registered)
        self.scopes = frozenset(s.scope for s in registered) | {S.GLOBAL_SCOPE}
        self._embedder = None
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def open(
        cls,
        lake: str | Lake | None = None,
        *,
        settings: Settings | Mapping[str, Any] | None = None,
    ) -> Retriever:
        """Open the lake's search table (``lake``: a path/URI, a :class:`Lake`, or ``None`` for the default).

        The query model is the one the search table was built with.
        """
        lake = lake if isinstance(lake, Lake) else Lake(lake, create=False)
        settings = Settings.coerce(settings, lake=lake.uri)
        if not lake.has_table(S.SEARCH):
            raise LakeNotFoundError(f"{lake.uri}: no search table yet; run `kbflow ingest` first")
        table = lake.table(S.SEARCH, create=False)
        retriever = cls(lake, table, settings)
        return retriever

    def __repr__(self) -> str:
        return f"Retriever({self.lake.uri!r}, rows={self.rows}, model={self.model_id!r})"

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = get_embedder(self.model_id, self.settings.embed_batch_size)
        return self._embedder

    # --- request validation ---------------------------------------------------
    def _filter(self, scope, kinds, source_types, source_ids) -> str | None:
        parts = []
        if scope is not None:
            if not isinstance(scope, str) or not scope:
                raise QueryError(f"scope must be a project id string, got {scope!r}")
            if scope not in self.scopes:
                raise QueryError(f"unknown scope {scope!r}; scopes in this lake: {', '.join(sorted(self.scopes))}")
            parts.append(S.sql_in(S.SCOPE, sorted({scope, S.GLOBAL_SCOPE})))
        for name, values, allowed, column in (
            ("content kind", _as_list(kinds, "kinds"), S.CONTENT_KINDS, S.CONTENT_KIND),
            ("source type", _as_list(source_types, "source_types"), S.SOURCE_TYPES, S.SOURCE_TYPE),
            ("source id", _as_list(source_ids, "source_ids"), self.source_ids, S.SOURCE_ID),
        ):
            if values is None:
                continue
            unknown = sorted(set(values) - set(allowed))
            if unknown:
                raise QueryError(f"unknown {name} {', '.join(map(repr, unknown))}; known: {', '.join(sorted(allowed))}")
            parts.append(S.sql_in(column, values))
        return " AND ".join(parts) if parts else None

    # --- the legs ----------------------------------------------------------------
    def _dense(self, query: str, depth: int, where: str | None):
        vector = self.embedder.embed_query(query)
        q = self.table.search(vector, vector_column_name=S.VECTOR).distance_type("cosine")
        if self._has_vector_index:
            q = q.ef(max(64, depth * 2)).refine_factor(2)
        if where:
            q = q.where(where, prefilter=True)
        return q.select([*S.HIT_COLUMNS, "_distance"]).limit(depth).to_arrow()

    def _bm25(self, query: str, depth: int, where: str | None):
        q = self.table.search(query, query_type="fts", fts_columns=S.TEXT)
        if where:
            q = q.where(where, prefilter=True)
        return q.select([*S.HIT_COLUMNS, "_score"]).limit(depth).to_arrow()

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: str | None = None,
        scope: str | None = None,
        kinds: str | Sequence[str] | None = None,
        source_types: str | Sequence[str] | None = None,
        source_ids: str | Sequence[str] | None = None,
        rrf_k: int | None = None,
        weights: Mapping[str, float] | None = None,
        depth: int | None = None,
    ) -> Hits:
        """The top ``k`` chunks for ``query``, each with its citation.

        Parameters
        ----------
        query:
            Free text, 1 to 1,000 characters.
        k:
            Number of hits, 1 to 100.
        mode:
            ``"hybrid"`` (default), ``"dense"`` or ``"bm25"``.
        scope:
            A project id: hits from sources of that scope and from global sources.
        kinds, source_types, source_ids:
            Keep only chunks of these content kinds (``code``, ``doc``,
            ``record``, ...), source types (``repo``, ``docs``, ``jsonl``, ...)
            or registered source ids.
        rrf_k, weights, depth:
            Fusion constant, per-leg weights ``{"dense": w, "bm25": w}`` and
            candidates per leg (at least ``3 * k``); defaults from the settings.

        Raises
        ------
        QueryError
            Empty or over-long query, ``k`` out of range, unknown mode or filter value.
        """
        t0 = time.perf_counter()
        defaults = self.settings.retrieval
        mode = mode or defaults.mode
        if mode not in MODES:
            raise QueryError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if not isinstance(query, str) or not query.strip():
            raise QueryError("the query is empty; pass some text to search for")
        if len(query) > MAX_QUERY_CHARS:
            raise QueryError(f"the query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise QueryError(f"k must be an integer in 1..{MAX_K}, got {k!r}")
        depth = depth if depth is not None else defaults.depth(k)
        if depth < 3 * k:
            raise QueryError(f"depth must be at least 3*k = {3 * k}, got {depth}")
        weights = dict(weights) if weights is not None else {"dense": defaults.dense_weight, "bm25": defaults.bm25_weight}
        unknown_legs = set(weights) - {"dense", "bm25"}
        if unknown_legs:
            raise QueryError(f"unknown legs in weights: {sorted(unknown_legs)}; use 'dense' and 'bm25'")
        where = self._filter(scope, kinds, source_types, source_ids)
        if self.rows == 0:
            return Hits([], query=query, mode=mode)

        query = query.strip()
        legs: dict[str, Any] = {}
        if mode == "hybrid":
            # the keyword leg runs while the query is embedded and the dense leg searched
            # (torch and Lance release the GIL)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbflow-bm25")
            bm25 = self._pool.submit(self._bm25, query, depth, where)
            legs["dense"] = self._dense(query, depth, where)
            legs["bm25"] = bm25.result()
        elif mode == "dense":
            legs["dense"] = self._dense(query, depth, where)
        else:
            legs["bm25"] = self._bm25(query, depth, where)

        rows: dict[str, dict[str, Any]] = {}
        ranked: dict[str, list[str]] = {}
        leg_scores: dict[str, dict[str, float]] = {}
        for leg, table in legs.items():
            ids = table.column(S.CHUNK_ID).to_pylist()
            ranked[leg] = ids
            if leg == "dense":
                leg_scores[leg] = {i: 1.0 - d for i, d in zip(ids, table.column("_distance").to_pylist())}
            else:
                leg_scores[leg] = dict(zip(ids, table.column("_score").to_pylist()))
            for row in table.select(list(S.HIT_COLUMNS)).to_pylist():
                rows.setdefault(row[S.CHUNK_ID], row)

        if mode == "hybrid":
            fused = rrf(ranked, k=rrf_k or defaults.rrf_k, weights=weights)
        else:
            fused = [(i, leg_scores[mode][i]) for i in ranked[mode]]
        positions = {leg: {cid: n for n, cid in enumerate(ids, start=1)} for leg, ids in ranked.items()}
        hits = []
        for rank, (cid, score) in enumerate(fused[:k], start=1):
            row = rows[cid]
            hits.append(
                Hit(
                    rank=rank,
                    score=float(score),
                    chunk_id=cid,
                    text=row[S.TEXT],
                    citation=Citation(
                        source_id=row[S.SOURCE_ID],
                        source_type=row[S.SOURCE_TYPE],
                        uri=row[S.URI],
                        locator=Locator.from_row(row[S.LOCATOR]),
                        title=row[S.TITLE],
                        content_hash=row[S.CONTENT_HASH],
                    ),
                    content_kind=row[S.CONTENT_KIND],
                    scope=row[S.SCOPE],
                    dense_rank=positions.get("dense", {}).get(cid),
                    bm25_rank=positions.get("bm25", {}).get(cid),
                )
            )
        out = Hits(hits, query=query, mode=mode)
        out.latency_ms = (time.perf_counter() - t0) * 1000.0
        return out
