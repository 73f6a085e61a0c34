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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from kbflow import schema as S
from kbflow.config import MAX_K, MAX_QUERY_CHARS, MAX_RERANK_DEPTH, RetrievalSettings
from kbflow.errors import ConfigError, QueryError
from kbflow.records import scopes
from kbflow.retrieve.glossary import load_glossary
from kbflow.retrieve.rerank import Reranker
from kbflow.sources.base import loader_names
from kbflow.text.terms import lone_half

__all__ = [
    "OVERRIDES",
    "Request",
    "SearchOptions",
    "check_query",
    "filters_for",
    "min_score_for",
    "names_within",
    "retrieval_for",
]


class SearchOptions(TypedDict, total=False):
    """The options of :meth:`Retriever.search` and :meth:`Retriever.rank` (see :meth:`Retriever.search`)."""

    mode: str
    fusion: str
    scope: str
    kinds: str | Sequence[str] | None
    source_types: str | Sequence[str] | None
    source_ids: str | Sequence[str] | None
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
    role_weight: float
    feedback: float
    glossary: str | None


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
    "role_weight",
    "feedback",
    "glossary",
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
    half = lone_half(query)  # JSON can escape half of a UTF-16 pair alone ("\ud83d"): no UTF-8 text holds it
    if half:
        raise QueryError(f"the query holds {half}; send the whole character or leave it out")
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
        if overrides.get("glossary") is not None:
            load_glossary(settings.glossary)  # a request's own glossary is read (and checked) now
    except ConfigError as exc:
        raise QueryError(str(exc)) from None
    depth = options.get("depth")
    depth = depth if depth is not None else settings.depth(k)
    if depth < 3 * k:
        raise QueryError(f"depth must be at least 3*k = {3 * k}, got {depth}")
    return settings, max(depth, settings.min_depth + 1)  # the fusion window and the score it must beat


def _as_list(value: str | Iterable[str] | None, name: str) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    if not values or any(not isinstance(v, str) or not v for v in values):
        raise QueryError(f"{name} must be a non-empty string or list of strings, got {value!r}")
    return values


def filters_for(
    options: Mapping[str, Any], known_scopes: Iterable[str], known_sources: Iterable[str]
) -> dict[str, list[str]]:
    """``{column: allowed values}`` of a request's ``scope``, ``kinds``, ``source_types`` and ``source_ids``, every
    value checked against the lake's scopes and sources (a :class:`QueryError` naming the known ones)."""
    scope, kinds = options.get("scope"), options.get("kinds")
    source_types, source_ids = options.get("source_types"), options.get("source_ids")
    known_scopes, known_sources = frozenset(known_scopes), frozenset(known_sources)
    out: dict[str, list[str]] = {}
    if scope is not None:
        try:
            scope = scopes.normalize(scope)
        except ConfigError as exc:
            raise QueryError(str(exc)) from None
        if not any(scopes.contains(scope, s) or s in scopes.ancestors(scope) for s in known_scopes - {"global"}):
            if scope != S.GLOBAL_SCOPE:
                raise QueryError(
                    f"unknown scope {scope!r}: no source lies in it, above it or below it; "
                    f"scopes in this lake: {', '.join(sorted(known_scopes))}"
                )
        out[S.SCOPE] = scopes.visible(scope)
    for name, values, allowed, column in (
        ("content kind", _as_list(kinds, "kinds"), S.CONTENT_KINDS, S.CONTENT_KIND),
        ("source type", _as_list(source_types, "source_types"), loader_names(), S.SOURCE_TYPE),
        ("source id", _as_list(source_ids, "source_ids"), known_sources, S.SOURCE_ID),
    ):
        if values is None:
            continue
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise QueryError(f"unknown {name} {', '.join(map(repr, unknown))}; known: {', '.join(sorted(allowed))}")
        out[column] = list(dict.fromkeys(values))
    return out


def names_within(reach: str | None, source_scopes: Mapping[str, str]) -> tuple[frozenset[str], frozenset[str]]:
    """The scopes and source ids a request may name, of a lake whose sources have ``source_scopes`` (id -> scope).

    Without ``reach``, all of them. With it (the scope of the key a server
    searches for), those a search in ``reach`` sees, and ``reach`` itself even
    where it holds no source: an error then never names a scope or source
    beyond the key.
    """
    if reach is None:
        return frozenset(source_scopes.values()) | {S.GLOBAL_SCOPE}, frozenset(source_scopes)
    above = set(scopes.ancestors(reach))

    def seen(scope: str) -> bool:
        return scopes.contains(reach, scope) or scope in above

    named = {scope for scope in source_scopes.values() if seen(scope)}
    ids = {sid for sid, scope in source_scopes.items() if seen(scope)}
    return frozenset(named | {reach, S.GLOBAL_SCOPE}), frozenset(ids)


def min_score_for(min_score: Any, mode: str, calibration: Any, model_id: str) -> float | None:
    """A request's ``min_score`` checked: a relevance in 0..1, in a mode that has relevances (a dense leg), for a
    model with a ``calibration``."""
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0 <= min_score <= 1:
        raise QueryError(f"min_score must be a relevance in 0..1, got {min_score!r}")
    if mode == "bm25":
        raise QueryError("min_score needs each hit's relevance, which bm25 mode has none of (it embeds no query)")
    if calibration is None:
        raise QueryError(
            f"min_score needs each hit's relevance, and model {model_id} has no calibration; "
            "fit one with `python bench/calibrate.py --model ...` and set retrieval.calibration"
        )
    return float(min_score)
