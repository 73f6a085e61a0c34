"""Rank fusion: pure functions over ranked id lists.

Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009): a document's
fused score is ``sum over legs of weight / (k + rank)``, ranks 1-based, with
``k = 60`` in the paper. Only ranks matter, so legs with incomparable scores
(cosine similarity, BM25) fuse without normalization. Unequal weights give
weighted RRF.

Convex combination (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for
Hybrid Retrieval", ACM TOIS 2023): each leg's scores are min-max normalized
to [0, 1] over its candidates, and a document's fused score is
``sum over legs of weight * normalized score`` (0 where a leg did not return
it). It uses the score gaps RRF throws away, and is often the stronger fusion
once its weight is tuned.

The retriever fuses with a ``window``, its candidate depth floor: only the
candidates of a leg that score above its ``window + 1``-th count (convex
normalizes from that score; RRF ranks equal scores alike), so a leg fetched
deeper for a larger ``k`` changes no score and the first hits never depend on
``k``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kbflow.errors import ConfigError

__all__ = ["FUSIONS", "Fusion", "convex", "rrf"]

#: a leg's candidates: ``(ids best first, their scores)``
Scored = tuple[Sequence[str], Sequence[float]]
#: ``fuse(legs, *, weights, rrf_k, window) -> [(id, score), ...]`` best first: the one signature of :data:`FUSIONS`
Fusion = Callable[..., list[tuple[str, float]]]


def rrf(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse ranked lists of ids by (weighted) Reciprocal Rank Fusion.

    Parameters
    ----------
    rankings:
        ``{leg name: ids, best first}``; an id appears at most once per leg.
    k:
        The RRF constant; larger values flatten the advantage of top ranks.
    weights:
        ``{leg name: weight}``; legs not named weigh 1.0.

    Returns
    -------
    list of (id, score)
        Best first; ties broken by the best single-leg rank, then by id, so
        the order is deterministic.
    """
    return _rrf(
        {leg: [(doc, rank) for rank, doc in enumerate(ids, start=1)] for leg, ids in rankings.items()}, k, weights
    )


def _rrf(ranked: Mapping[str, Sequence[tuple[str, int | None]]], k: int, weights) -> list[tuple[str, float]]:
    """RRF over ``{leg: [(id, rank or None: kept, scoring 0)]}``."""
    if k < 1:
        raise ConfigError(f"rrf k must be >= 1, got {k}")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for leg, items in ranked.items():
        w = _weight(weights, leg)
        for position, (doc, rank) in enumerate(items, start=1):
            scores[doc] = scores.get(doc, 0.0) + (w / (k + rank) if rank is not None else 0.0)
            best[doc] = min(best.get(doc, position), position)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def _floor(values: Sequence[float], window: int | None) -> float | None:
    """The score a leg's candidate must beat to count: that of its ``window + 1``-th (``None``: all count)."""
    return values[window] if window is not None and len(values) > window else None


def _weight(weights: Mapping[str, float] | None, leg: str) -> float:
    w = float((weights or {}).get(leg, 1.0))
    if w < 0:
        raise ConfigError(f"weight of leg {leg!r} must be >= 0, got {w}")
    return w


def convex(
    legs: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    weights: Mapping[str, float] | None = None,
    window: int | None = None,
) -> list[tuple[str, float]]:
    """Fuse scored lists by a convex combination of min-max normalized scores.

    Parameters
    ----------
    legs:
        ``{leg name: (ids best first, their scores)}``; higher scores are better.
    weights:
        ``{leg name: weight}``; legs not named weigh 1.0. With weights
        ``alpha`` and ``1 - alpha`` this is the paper's convex combination.
    window:
        Each leg's scores are normalized from the score of its
        ``window + 1``-th candidate (0) to its best (1): only candidates that
        beat it count, however many the leg returned (``None``: from its
        lowest score).

    Returns
    -------
    list of (id, score)
        Best first; ties broken by the best single-leg rank, then by id.
    """
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for leg, (ids, values) in legs.items():
        if len(ids) != len(values):
            raise ConfigError(f"leg {leg!r} has {len(ids)} ids but {len(values)} scores")
        w = _weight(weights, leg)
        if not ids:
            continue
        floor = _floor(values, window)
        lo, hi = (min(values) if floor is None else floor), max(values)
        span = hi - lo
        for rank, (doc, value) in enumerate(zip(ids, values), start=1):
            norm = max(0.0, (value - lo) / span) if span > 0 else 1.0
            scores[doc] = scores.get(doc, 0.0) + w * norm
            best[doc] = min(best.get(doc, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def _fuse_rrf(legs: Mapping[str, Scored], *, weights: Mapping[str, float] | None = None, rrf_k: int = 60, window=None):
    """RRF over scored legs: equal scores share a rank (1 + how many scored higher), and with ``window``
    only candidates that beat the ``window + 1``-th count."""
    ranked = {}
    for leg, (ids, values) in legs.items():
        floor = _floor(values, window)
        items, rank = [], 0
        for n, (doc, value) in enumerate(zip(ids, values), start=1):
            if n == 1 or value != values[n - 2]:
                rank = n
            items.append((doc, rank if floor is None or value > floor else None))
        ranked[leg] = items
    return _rrf(ranked, rrf_k, weights)


def _fuse_convex(
    legs: Mapping[str, Scored], *, weights: Mapping[str, float] | None = None, rrf_k: int = 60, window=None
):
    return convex(legs, weights=weights, window=window)


#: fusion methods by name, each ``fuse(legs, *, weights, rrf_k, window)`` (``rrf_k`` is used by RRF only)
FUSIONS: dict[str, Fusion] = {"convex": _fuse_convex, "rrf": _fuse_rrf}
