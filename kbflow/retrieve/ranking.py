"""Ranking a search request: the two legs, fusion, the signals, feedback, reranking, symbols, each text once.

:func:`rank` is the ranking half of :meth:`kbflow.retrieve.Retriever.search`
(and all of :meth:`~kbflow.retrieve.Retriever.rank`): chunk ids and scores,
best first, each leg's list and timings, in a :class:`Ranking`. The
retriever then reads the hits' rows and builds their citations.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbflow import schema as S
from kbflow.config import RetrievalSettings
from kbflow.errors import EmbedError
from kbflow.lake.lake import Lake
from kbflow.retrieve.beside import Pending, beside
from kbflow.retrieve.distinct import cached, distinct
from kbflow.retrieve.feedback import applies, feedback_vector, first_kept
from kbflow.retrieve.fusion import FUSIONS
from kbflow.retrieve.glossary import expanded_query
from kbflow.retrieve.pointers import demote
from kbflow.retrieve.request import Request
from kbflow.retrieve.rerank import Reranker
from kbflow.retrieve.symbols import defining, symbol_first
from kbflow.retrieve.table import Leg, SearchTable
from kbflow.retrieve.units import pool_units
from kbflow.text.terms import query_identifiers

__all__ = [
    "QueryEmbedder",
    "Ranking",
    "feedback_leg",
    "fuse_legs",
    "fuse_with_feedback",
    "rank",
    "rerank",
    "row_ids_of",
    "search_legs",
    "searched_text",
]


@dataclass(frozen=True)
class Ranking:
    """What :meth:`Retriever.rank` returns: fused chunk ids and scores, best first, and each leg's list.

    With a reranker, the first ``reranked`` positions are ordered and scored
    by the cross-encoder; the rest keep their fused order and scores.
    """

    ids: list[str]
    scores: list[float]
    #: each leg's ranked chunk ids before fusion; with a reranker also ``"fused"``, the order it reranked; where
    #: feedback applied, ``"feedback"``, the dense leg's rescored with the moved query (:mod:`.feedback`)
    legs: dict[str, list[str]]
    #: chunk id -> Lance row id in the pinned version
    row_of: dict[str, int] = field(repr=False)
    #: how many leading positions the cross-encoder scored (0 without one)
    reranked: int = 0
    #: each leg's raw score of each of its candidates: ``{"dense": {chunk id: cosine}, "bm25": {...: BM25}}``
    leg_scores: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    #: the query's embedding (``None`` in ``bm25`` mode)
    query_vector: Any = field(default=None, repr=False)
    #: milliseconds spent per step: ``embed``, ``dense``, ``bm25``, ``fuse`` (fusion, the document and page
    #: signals, feedback, reranking, symbols, grouping equal texts)
    timings: dict[str, float] = field(default_factory=dict, repr=False)
    #: kept chunk id -> the chunk ids of its copies (equal texts elsewhere; :mod:`kbflow.retrieve.distinct`)
    also_in: dict[str, list[str]] = field(default_factory=dict, repr=False)
    #: chunk id -> decoded hit row (text and payload) of the candidates read while judging pointers and grouping
    #: equal texts
    rows: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: the chunk ids ranked below the page's own text as pointers (:mod:`kbflow.retrieve.pointers`)
    pointers: frozenset[str] = field(default_factory=frozenset, repr=False)
    #: the words the glossary added to the query both legs searched ("" where it named no term;
    #: :mod:`kbflow.retrieve.glossary`)
    expansion: str = ""


class QueryEmbedder(Protocol):
    """Embeds a query for the dense leg (a retriever's model, loaded on its first call)."""

    def __call__(self, text: str) -> Any: ...


def _ordered(leg: Leg) -> Leg:
    """A leg's candidates best first, equal scores in chunk-id order (whatever order the index gave them)."""
    ids, row_ids, scores = leg
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order], [row_ids[i] for i in order], [scores[i] for i in order]


#: from this many rows, a hybrid search's keyword leg runs in a thread beside the exact dense leg's scan of the
#: vectors in memory (hybrid p50 0.91-0.96x at 100,000 synthetic chunks, 0.92-1.01x at 10,000, 1.01x on 2,121
#: chunks, interleaved: bench/query_latency.py's "legs" line)
PARALLEL_LEGS_MIN_ROWS = 10_000


def _weighs_signals(settings: RetrievalSettings) -> bool:
    """Whether :func:`fuse_legs` reads the document, page or role signal (its weights)."""
    return bool(settings.document_weight or settings.page_weight or settings.role_weight)


def searched_text(request: Request) -> tuple[str, str]:
    """``(text, expansion)``: what both legs search for ``request``, its query with the glossary's expansion of
    the terms it names (:func:`kbflow.retrieve.glossary.expanded_query`), and that expansion."""
    return expanded_query(request.query, request.settings.glossary)


class Laps:
    """Milliseconds per step of one ranking (:attr:`Ranking.timings`), each step timed from the end of the one
    before it; calling it with a step's name ends that step."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._clock = time.perf_counter()

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        self.timings[step] = self.timings.get(step, 0.0) + (now - self._clock) * 1000.0
        self._clock = now


def row_ids_of(legs: Mapping[str, Leg]) -> dict[str, int]:
    """Chunk id -> Lance row id of every candidate of ``legs``."""
    return {cid: rid for ids, rids, _ in legs.values() for cid, rid in zip(ids, rids)}


def search_legs(
    table: SearchTable, embed: QueryEmbedder, request: Request, searched: str, vector: Any, lap: Laps
) -> tuple[dict[str, Leg], Any]:
    """``(legs, vector)``: the request's legs on the search ``table``, each best first, and the query's embedding
    (``None`` in ``bm25`` mode). ``embed`` embeds ``searched`` (the query with its glossary expansion) where the
    mode has a dense leg and ``vector`` is ``None``; from :data:`PARALLEL_LEGS_MIN_ROWS` rows the keyword leg runs
    in a helper thread beside the exact dense scan."""
    settings, depth = request.settings, request.depth
    legs: dict[str, Leg] = {}
    if settings.mode not in ("hybrid", "dense"):
        vector = None
    elif vector is None:
        # a new process's first search: the vectors and the groups load while the model embeds the query
        table.warm(groups=settings.mode == "hybrid" or _weighs_signals(settings))
        vector = embed(searched)
        lap("embed")
    # after the model, not beside it: running the keyword leg in a thread beside the model made
    # torch's and Lance's thread pools fight over the cores (slower on 2 cores, measured)
    keyword = None
    if settings.mode in ("hybrid", "bm25"):
        search_keywords = lambda: table.bm25(searched, depth, request.filters, settings.names_weight)  # noqa: E731
        if vector is not None and table.exact and table.rows >= PARALLEL_LEGS_MIN_ROWS:
            keyword = beside(search_keywords)  # searched by a helper thread while this one scans the vectors
        else:
            keyword = Pending(search_keywords, handed=False)
    if vector is not None:
        legs["dense"] = _ordered(table.dense(vector, depth, request.filters))
        lap("dense")
    if keyword is not None:
        legs["bm25"] = _ordered(keyword.result())
        lap("bm25")
    return legs, vector


def rank(table: SearchTable, embed: QueryEmbedder, request: Request, vector: Any = None) -> Ranking:
    """Rank one request on a version's search ``table``: both legs, fusion, the document and page signals, feedback
    on prose records, an optional reranker, symbols first, each text once. ``embed`` embeds the searched text for
    the dense leg (called only where the mode has one and ``vector``, the embedding of :func:`searched_text`
    computed already, is ``None``). The signals, the reranker and code names read the query as written."""
    settings, k, query = request.settings, request.k, request.query
    searched, expansion = searched_text(request)
    if table.rows == 0:
        return Ranking([], [], {}, {})
    lap = Laps()
    legs, vector = search_legs(table, embed, request, searched, vector, lap)
    row_of = row_ids_of(legs)
    fused, moved = fuse_with_feedback(table, legs, settings, query, vector, row_of)
    ranked = {leg: ids for leg, (ids, _, _) in legs.items()}
    if moved is not None:
        ranked["feedback"] = moved[0]
    reranked = 0
    if request.reranker is not None and fused:
        ranked["fused"] = [cid for cid, _ in fused[: max(k, settings.rerank_depth)]]
        reranked = min(settings.rerank_depth, len(fused))
        fused = rerank(table.dataset, request.reranker, query, fused, settings.rerank_depth, row_of)
    names = query_identifiers(query) if settings.symbol_first else []
    if names:
        defined = defining(table.dataset, names, request.filters, row_of)
        if defined:
            ranked["symbol"] = [cid for cid, _ in defined]
            fused = symbol_first(fused, defined)
    rows: dict[str, dict[str, Any]] = {}  # the candidates read, for the steps below and the hits
    read = cached(lambda cids: table.read(cids, row_of), rows)
    fused, pointers = demote(fused, k, read, settings.role_weight)
    grouped = distinct(fused, k, read) if settings.distinct and fused else None
    fused = grouped.fused if grouped is not None else fused[:k]
    lap("fuse")
    return Ranking(
        [cid for cid, _ in fused],
        [float(score) for _, score in fused],
        ranked,
        row_of,
        reranked=min(reranked, len(fused)),
        leg_scores={leg: dict(zip(ids, scores)) for leg, (ids, _, scores) in legs.items()},
        query_vector=vector,
        timings=lap.timings,
        also_in=grouped.also_in if grouped is not None else {},
        rows=rows,
        pointers=pointers,
        expansion=expansion,
    )


def fuse_with_feedback(
    table: SearchTable,
    legs: Mapping[str, Leg],
    settings: RetrievalSettings,
    query: str,
    vector: Any,
    row_of: Mapping[str, int] | None = None,
) -> tuple[list[tuple[str, float]], Leg | None]:
    """``(fused, feedback leg)``: the legs fused (:func:`fuse_legs`), then, where feedback on prose records
    applies (:func:`feedback_leg`; ``vector`` is the query's embedding), fused again with the feedback leg in the
    dense leg's place behind the first hit (``None`` for the leg where it did not apply)."""
    if row_of is None:
        row_of = row_ids_of(legs)
    fused = fuse_legs(table, legs, settings, query, row_of)
    moved = feedback_leg(table, legs, fused, vector, settings, row_of)
    if moved is not None:
        fused = first_kept(fused, fuse_legs(table, {**legs, "dense": moved}, settings, query, row_of))
    return fused, moved


def feedback_leg(
    table: SearchTable,
    legs: Mapping[str, Leg],
    fused: list[tuple[str, float]],
    vector: Any,
    settings: RetrievalSettings,
    row_of: Mapping[str, int],
) -> Leg | None:
    """The dense leg again with the query moved toward the first fused hits (every candidate of both legs
    rescored, best first), where feedback applies: hybrid mode, ``settings.feedback`` on, and the first
    ``settings.feedback_hits`` hits all from record sets of prose (:mod:`kbflow.retrieve.feedback`); else
    ``None``."""
    n = settings.feedback_hits
    if not settings.feedback or settings.mode != "hybrid" or vector is None or len(fused) < n:
        return None
    rows = [row_of[cid] for cid, _ in fused[:n]]
    if not applies(table.groups.prose_of(rows)):  # judged once per version, when the groups load
        return None
    moved = feedback_vector(vector, table.vectors_of(rows), settings.feedback)
    candidates = list(row_of)
    cosines = table.cosines(moved, [row_of[cid] for cid in candidates])
    order = sorted(range(len(candidates)), key=lambda i: (-cosines[i], candidates[i]))[: len(legs["dense"][0])]
    return [candidates[i] for i in order], [row_of[candidates[i]] for i in order], [cosines[i] for i in order]


def fuse_legs(
    table: SearchTable,
    legs: Mapping[str, Leg],
    settings: RetrievalSettings,
    query: str,
    row_of: Mapping[str, int] | None = None,
) -> list[tuple[str, float]]:
    """The legs' candidates as one ranking, best first: fused by ``settings`` in ``hybrid`` mode (the mode's own
    leg otherwise), then lifted by the document and page signals (:mod:`kbflow.retrieve.signals`) read from the
    search ``table``. The step of :func:`rank` between the legs and reranking; ``legs`` are
    ``{"dense" and/or "bm25": (chunk ids, Lance row ids, scores), best first}``; ``row_of`` maps their chunk ids to
    row ids where the caller has that map already."""
    if row_of is None:
        row_of = row_ids_of(legs)
    if settings.mode != "hybrid":
        ids, _, scores = legs[settings.mode]
        fused = list(zip(ids, scores))
    else:
        fuse = FUSIONS[settings.fusion]
        weights = {"dense": settings.dense_weight, "bm25": settings.bm25_weight}
        scored = {leg: (ids, scores) for leg, (ids, _, scores) in legs.items()}
        fused = fuse(scored, weights=weights, rrf_k=settings.rrf_k, window=settings.min_depth)
        if fused:  # a code unit cut into chunks counts as one: fused again with each unit's best scores
            order = [cid for cid, _ in fused]
            pooled = pool_units(scored, order, table.groups.units_of([row_of[cid] for cid in order]))
            if pooled is not scored:
                fused = fuse(pooled, weights=weights, rrf_k=settings.rrf_k, window=settings.min_depth)
    if _weighs_signals(settings) and fused:
        rows = [row_of[cid] for cid, _ in fused]
        fused = table.groups.rescore(
            fused, rows, query, settings.document_weight, settings.page_weight, settings.role_weight
        )
    return fused


def rerank(
    dataset: Any, reranker: Reranker, query: str, fused: list[tuple[str, float]], n: int, row_of: Mapping[str, int]
) -> list[tuple[str, float]]:
    """``fused`` with its first ``n`` entries reordered by the cross-encoder's scores (ties keep fused order)."""
    head, tail = fused[:n], fused[n:]
    texts = Lake.take(dataset, [row_of[cid] for cid, _ in head], columns=[S.TEXT]).column(S.TEXT).to_pylist()
    scores = [float(x) for x in reranker.score(query, texts)]
    if len(scores) != len(head):
        raise EmbedError(f"reranker {reranker!r} returned {len(scores)} scores for {len(head)} passages")
    order = sorted(range(len(head)), key=lambda i: -scores[i])
    return [(head[i][0], scores[i]) for i in order] + tail
