"""How much could fusion gain on a judged set? Each query ranked once, its two legs fused again many ways.

:func:`fusion_headroom` ranks every judged query of a dataset once in ``hybrid``
mode, keeps both legs' candidates (ids, scores and row ids, as
:class:`kbflow.retrieve.ranking.Ranking` holds them) and ranks them again
under each variant of the retrieval settings with
:func:`kbflow.retrieve.ranking.fuse_with_feedback`: the fusion, then the
document and page signals and feedback on prose records, as a search does
(symbols first, a reranker and grouping equal texts come after it and are
left out, so the defaults' figure is ``kbflow eval``'s wherever no query
names a code symbol). Each ranking is
scored against the qrels per query.

Beside each leg alone and each variant it gives two more figures:

- a fixed variant **chosen on the other half** of the queries
  (:meth:`Headroom.chosen`): does a setting picked on this set hold on
  queries it was not picked on?
- the **per-query best** of them all: an oracle that knows the answer and
  picks, for every query, the variant that ranks it best. It bounds what any
  rule choosing among these variants per query (a weight from the query's
  words, or from how its legs score) could reach; the gap between it and the
  best fixed variant is what such a rule would have to find. The bound is a
  loose one: the best of many rankings of one query is higher than any one
  of them by chance too.

``python bench/fusion_headroom.py`` prints them for the eval sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kbflow.config import MAX_QUERY_CHARS, RetrievalSettings, Settings
from kbflow.errors import ConfigError, DatasetError, QueryError
from kbflow.evaluate.beir import BeirDataset
from kbflow.evaluate.configs import config_for, rank_options
from kbflow.evaluate.evaluate import as_run, judged_docs, ranked_docs, ranking_k
from kbflow.evaluate.metrics import score_run
from kbflow.evaluate.paired import paired_test
from kbflow.lake.lake import Lake

if TYPE_CHECKING:
    from kbflow.retrieve.table import Leg

__all__ = ["DEFAULT", "LEGS", "Headroom", "fusion_headroom", "fusion_variants"]

#: the two legs alone, as :func:`fusion_headroom` names them
LEGS = ("dense", "bm25")
#: the name of the variant with the given settings unchanged
DEFAULT = "hybrid (settings)"


def fusion_variants(
    base: RetrievalSettings, weights: Sequence[float] = (), fusions: Sequence[str] = ("convex",)
) -> dict[str, RetrievalSettings]:
    """``{name: settings}``: each leg alone, ``base`` itself (:data:`DEFAULT`), and ``base`` in hybrid mode with
    each fusion at each keyword weight (``bm25_weight``; the dense leg keeps its weight) but the one ``base`` is.

    Raises
    ------
    ConfigError
        An unknown fusion or a negative weight (the settings check themselves).
    """
    variants = {leg: replace(base, mode=leg) for leg in LEGS}
    variants[DEFAULT] = replace(base, mode="hybrid")
    for fusion in fusions:
        for weight in weights:
            variant = replace(base, mode="hybrid", fusion=fusion, bm25_weight=float(weight))
            if variant != variants[DEFAULT]:
                variants[f"{fusion}, keyword weight {weight:g}"] = variant
    return variants


@dataclass(frozen=True)
class Headroom:
    """Per-query scores of each variant on one dataset, and what they add up to."""

    dataset: str
    split: str
    metric: str
    #: variant name -> {query id: score}; the legs alone are named ``dense`` and ``bm25``
    scores: dict[str, dict[str, float]] = field(repr=False)

    def mean(self, name: str) -> float:
        """The variant's mean score over the queries."""
        values = self.scores[name].values()
        return sum(values) / max(1, len(values))

    @property
    def oracle(self) -> float:
        """The mean over queries of the best score any variant gives each query."""
        queries = self.scores[DEFAULT]
        return sum(max(s[q] for s in self.scores.values()) for q in queries) / max(1, len(queries))

    def chosen(self, folds: int = 2) -> tuple[float, list[str]]:
        """A fixed variant as this set would choose it, scored where it was not chosen: the queries are dealt
        into ``folds`` folds (every ``folds``-th query, in the dataset's order); for each fold the variant with
        the best mean on the other folds is scored on it. Returns the mean over all queries and the variant
        chosen for each fold. Unlike :attr:`oracle` and the best variant's own mean, this does not reward
        fitting the queries it is measured on."""
        if folds < 2:
            raise ConfigError(f"folds must be >= 2, got {folds}")
        queries = list(self.scores[DEFAULT])
        total, picks = 0.0, []
        for fold in range(folds):
            held = queries[fold::folds]
            rest = [q for n, q in enumerate(queries) if n % folds != fold]
            pick = max(self.scores, key=lambda name: sum(self.scores[name][q] for q in rest))
            picks.append(pick)
            total += sum(self.scores[pick][q] for q in held)
        return total / max(1, len(queries)), picks

    @property
    def better_leg(self) -> str:
        """The leg that scores higher alone (``dense`` on a tie)."""
        return max(LEGS, key=lambda leg: (self.mean(leg), leg == "dense"))

    def against(self, a: str, b: str):
        """The paired test (:func:`kbflow.evaluate.paired.paired_test`) of variant ``a`` against ``b``."""
        return paired_test(self.scores[a], self.scores[b], self.metric)

    def lines(self) -> list[str]:
        """The report: a line per variant (its score, its lead over the better leg, queries it wins and loses
        against the settings' hybrid), the oracle, and the settings' hybrid tested against the better leg."""
        leg, base = self.better_leg, self.scores[DEFAULT]
        head = f"{self.dataset} ({self.split}, {len(base)} queries): {self.metric} of each way to rank the legs"
        out = [head, f"  {'ranking':34s} {self.metric:>8s} {'- ' + leg:>9s}  against {DEFAULT}: won / lost"]
        for name, scores in self.scores.items():
            won = sum(scores[q] > base[q] for q in base)
            lost = sum(scores[q] < base[q] for q in base)
            lead = self.mean(name) - self.mean(leg)
            out.append(f"  {name:34s} {self.mean(name):8.4f} {lead:+9.4f}  {won:>4d} / {lost}")
        fixed, picks = self.chosen()
        out.append(
            f"  {'chosen on the other half':34s} {fixed:8.4f} {fixed - self.mean(leg):+9.4f}"
            f"  (each half ranked by the variant best on the other: {'; '.join(picks)})"
        )
        out.append(
            f"  {'per query, the best of these':34s} {self.oracle:8.4f} {self.oracle - self.mean(leg):+9.4f}"
            "  (an oracle: it knows the answer)"
        )
        out.append(f"  {DEFAULT} against {leg} alone: {self.against(DEFAULT, leg).line()}")
        return out


def _legs(ranking: Any) -> dict[str, Leg]:
    """A ranking's two legs as ``{leg: (chunk ids, row ids, scores)}``."""
    return {
        leg: (ids, [ranking.row_of[c] for c in ids], [ranking.leg_scores[leg][c] for c in ids])
        for leg, ids in ranking.legs.items()
        if leg in LEGS
    }


def fusion_headroom(
    dataset: BeirDataset,
    lake: Lake,
    settings: Settings,
    variants: Mapping[str, RetrievalSettings],
    *,
    metric: str = "ndcg@10",
    limit: int | None = None,
) -> Headroom:
    """Rank each judged query (or the first ``limit``) of ``dataset`` once in ``lake`` (ingested as ``settings``
    says, e.g. by :func:`kbflow.evaluate.ingest_dataset`), then score every variant of :func:`fusion_variants`.

    Raises
    ------
    DatasetError
        The lake holds none of the dataset's documents, or a query cannot be searched (naming it).
    """
    from kbflow.retrieve.ranking import fuse_with_feedback
    from kbflow.retrieve.retriever import Retriever

    retriever = Retriever.open(lake, settings=settings)
    doc_of = judged_docs(retriever, dataset.unit)
    if not doc_of:
        raise DatasetError(f"{lake.uri}: the search table holds no corpus records; was the corpus ingested?")
    k = ranking_k(doc_of)
    options = rank_options(config_for(settings, mode="hybrid"), k)
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in variants}
    queries = list(dataset.queries.items())[: limit or None]
    for qid, text in queries:
        query = text[:MAX_QUERY_CHARS]
        try:
            ranking = retriever.rank(query, k, **options)
        except QueryError as exc:
            raise DatasetError(f"{dataset.root}: query {qid!r}: {exc}") from None
        legs, vector = _legs(ranking), ranking.query_vector
        for name, variant in variants.items():
            fused = fuse_with_feedback(retriever.table, legs, variant, query, vector)[0] if legs else []
            runs[name][qid] = as_run(ranked_docs([cid for cid, _ in fused], doc_of))
    qrels = {q: dataset.qrels[q] for q, _ in queries}
    scores = {name: {q: s[metric] for q, s in score_run(qrels, run, [metric])[1].items()} for name, run in runs.items()}
    return Headroom(dataset.name, dataset.split, metric, scores)
