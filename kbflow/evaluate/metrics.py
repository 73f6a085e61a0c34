"""Retrieval metrics, computed by ranx (trec_eval's definitions: nDCG with linear gains).

A run is ``{query id: {doc id: score}}`` and qrels ``{query id: {doc id:
relevance}}``; judgements of 0 or less count as not relevant. Every judged
query counts: one the run has nothing for scores 0.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from kbflow._lazy import require

__all__ = ["METRICS", "score_run"]

#: what ``kbflow eval`` reports
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "recall@5", "hit_rate@3", "hit_rate@5")


def score_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Mean and per-query scores of ``run`` against ``qrels``.

    Returns
    -------
    (means, per_query)
        ``{metric: mean over judged queries}`` and ``{query id: {metric: score}}``.
    """
    ranx = require("ranx")
    positive = {q: {d: int(r) for d, r in docs.items() if r > 0} for q, docs in qrels.items()}
    positive = {q: docs for q, docs in positive.items() if docs}
    # ranx wants at least one scored doc per query it sees; queries left out score 0 (make_comparable)
    scored = {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items() if docs and q in positive}
    if not scored:
        return {m: 0.0 for m in metrics}, {q: {m: 0.0 for m in metrics} for q in positive}
    ranx_run = ranx.Run(scored)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety notes on ranx's kernels
        means = ranx.evaluate(ranx.Qrels(positive), ranx_run, list(metrics), make_comparable=True)
    if len(metrics) == 1:
        means = {metrics[0]: means}
    per_query = {q: {m: float(ranx_run.scores[m].get(q, 0.0)) for m in metrics} for q in positive}
    return {m: float(v) for m, v in means.items()}, per_query
