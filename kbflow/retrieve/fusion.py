"""Rank fusion: pure functions over ranked id lists.

Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009): a document's
fused score is ``sum over legs of weight / (k + rank)``, ranks 1-based, with
``k = 60`` in the paper. Only ranks matter, so legs with incomparable scores
(cosine similarity, BM25) fuse without normalization.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from kbflow.errors import ConfigError

__all__ = ["rrf"]


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
    if k < 1:
        raise ConfigError(f"rrf k must be >= 1, got {k}")
    weights = weights or {}
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for leg, ids in rankings.items():
        w = float(weights.get(leg, 1.0))
        if w < 0:
            raise ConfigError(f"weight of leg {leg!r} must be >= 0, got {w}")
        for rank, doc in enumerate(ids, start=1):
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
            best[doc] = min(best.get(doc, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))
