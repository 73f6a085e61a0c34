"""Merging the rankings of several retrievers into one."""


def reciprocal_rank_fusion(rankings, k=60, weights=None):
    """Fuse ranked lists of document ids with Reciprocal Rank Fusion.

    Each document scores sum(weight / (k + rank)) over the rankings it
    appears in (ranks start at 1), so the keyword and vector rankings are
    fused by rank alone and never need a common score scale.
    """
    weights = weights or [1.0] * len(rankings)
    fused = {}
    for ranking, weight in zip(rankings, weights):
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def interleave(rankings):
    """Round-robin merge: the first of each ranking, then the second, ..."""
    seen, merged = set(), []
    for position in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if position < len(ranking) and ranking[position] not in seen:
                seen.add(ranking[position])
                merged.append(ranking[position])
    return merged
