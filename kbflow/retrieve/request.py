"""A search request, validated once: the options :meth:`kbflow.Retriever.search` takes, applied to the settings.

:class:`SearchOptions` types the options; :func:`retrieval_for` checks the
query, ``k`` and every option that is a retrieval setting, and returns the
retriever's :class:`~kbflow.config.RetrievalSettings` with them applied and
the candidate depth of each leg. What needs the lake (filters checked
against its sources and scopes, the reranker loaded) the retriever adds, in
a :class:`Request`. Every error is a :class:`~kbflow.errors.QueryError`
naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from kbflow.config import MAX_K, MAX_QUERY_CHARS, MAX_RERANK_DEPTH, RetrievalSettings
from kbflow.errors import ConfigError, QueryError
from kbflow.retrieve.rerank import Reranker

__all__ = ["OVERRIDES", "Request", "SearchOptions", "check_query", "retrieval_for"]


class SearchOptions(TypedDict, total=False):
    """The options of :meth:`Retriever.search` and :meth:`Retriever.rank` (see :meth:`Retriever.search`)."""

    mode: str
    fusion: str
    scope: str
    kinds: str | Sequence[str]
    source_types: str | Sequence[str]
    source_ids: str | Sequence[str]
    rrf_k: int
    weights: Mapping[str, float]
    names_weight: float
    symbol_first: bool
    min_depth: int
    depth: int
    reranker: str | Reranker | bool
    rerank_depth: int
    min_score: float
    distinct: bool
    document_weight: float
    page_weight: float


#: the options that override the retrieval setting of the same name
OVERRIDES = (
    "mode",
    "fusion",
    "rrf_k",
    "names_weight",
    "symbol_first",
    "min_depth",
    "distinct",
    "document_weight",
    "page_weight",
)


@dataclass(frozen=True)
class Request:
    """One validated request: the retrieval settings with its options applied."""

    query: str
    k: int
    settings: RetrievalSettings
    depth: int
    filters: dict[str, list[str]]
    reranker: Reranker | None


def check_query(query: Any, k: Any, max_k: int = MAX_K) -> None:
    """Raise :class:`QueryError` unless ``query`` is 1 to ``MAX_QUERY_CHARS`` characters of text and ``k`` an
    integer in ``1..max_k`` (a chunk search and a claims recall alike)."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("the query is empty; pass some text to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
        raise QueryError(f"k must be an integer in 1..{max_k}, got {k!r}")


def retrieval_for(
    base: RetrievalSettings, query: str, k: int, max_k: int, options: Mapping[str, Any]
) -> tuple[RetrievalSettings, int]:
    """``(settings, depth)``: ``base`` with the request's options applied, and the candidates each leg fetches
    (at least ``3 * k``, the fusion window ``min_depth + 1``); raises :class:`QueryError` on an empty or
    over-long query, ``k`` out of ``1..max_k``, an unknown option or a value the settings reject."""
    unknown = set(options) - set(SearchOptions.__annotations__)
    if unknown:
        raise QueryError(f"unknown search options {sorted(unknown)}; known: {', '.join(SearchOptions.__annotations__)}")
    check_query(query, k, max_k)
    overrides = {name: options.get(name) for name in OVERRIDES}
    weights = options.get("weights")
    if weights is not None:
        unknown_legs = set(weights) - {"dense", "bm25"}
        if unknown_legs:
            raise QueryError(f"unknown legs in weights: {sorted(unknown_legs)}; use 'dense' and 'bm25'")
        overrides.update(dense_weight=weights.get("dense"), bm25_weight=weights.get("bm25"))
    rerank_depth = options.get("rerank_depth")
    if rerank_depth is not None and (isinstance(rerank_depth, bool) or not isinstance(rerank_depth, int)):
        raise QueryError(f"rerank_depth must be an integer in 1..{MAX_RERANK_DEPTH}, got {rerank_depth!r}")
    overrides["rerank_depth"] = rerank_depth
    try:
        settings = base.override(**overrides)
    except ConfigError as exc:
        raise QueryError(str(exc)) from None
    depth = options.get("depth")
    depth = depth if depth is not None else settings.depth(k)
    if depth < 3 * k:
        raise QueryError(f"depth must be at least 3*k = {3 * k}, got {depth}")
    return settings, max(depth, settings.min_depth + 1)  # the fusion window and the score it must beat
