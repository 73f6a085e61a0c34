"""How honest the "no good match" flag is on a dataset: never above a right answer, always on an unanswerable one.

Two error rates, measured with the lake's own curve (:mod:`kbflow.retrieve.confidence`) and default search
settings, ``k=3``:

- *fired on answered*: of the judged questions whose top 3 hold a relevant document, the share flagged
  ``low_confidence`` (the flag printed above a right answer);
- *silent on negatives*: of the dataset's questions the corpus cannot answer (``negatives.jsonl``), the share
  not flagged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kbflow.evaluate.beir import BeirDataset

__all__ = ["FlagErrors", "flag_errors", "flag_report"]

#: the hits a question is judged answered by
TOP = 3


@dataclass(frozen=True)
class FlagErrors:
    """The flag's two error counts on one dataset (see the module docs)."""

    answered: int
    fired_on_answered: int
    negatives: int
    silent_on_negatives: int
    #: the cosine at which the lake's curve flags (``None``: no curve)
    threshold: float | None = None

    @property
    def fired_rate(self) -> float:
        return self.fired_on_answered / self.answered if self.answered else 0.0

    @property
    def silent_rate(self) -> float:
        return self.silent_on_negatives / self.negatives if self.negatives else 0.0

    def line(self) -> str:
        """One line for ``kbflow eval``."""
        where = f" (flags below cosine {self.threshold:.3f})" if self.threshold is not None else ""
        return (
            f"no-answer flag{where}: fired above a right answer on {self.fired_on_answered}/{self.answered} "
            f"answered questions ({self.fired_rate:.2f}); silent on {self.silent_on_negatives}/{self.negatives} "
            f"questions the corpus cannot answer ({self.silent_rate:.2f})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "answered": self.answered,
            "fired_on_answered": self.fired_on_answered,
            "fired_rate": self.fired_rate,
            "negatives": self.negatives,
            "silent_on_negatives": self.silent_on_negatives,
            "silent_rate": self.silent_rate,
            "threshold": self.threshold,
        }


def flag_errors(
    retriever: Any, dataset: BeirDataset, doc_of: Mapping[str, str], limit: int | None = None
) -> FlagErrors | None:
    """The flag's errors on ``dataset`` (``doc_of``: chunk id -> judged document); ``None`` where the lake's
    model has no curve or the dataset has no negatives."""
    if retriever.calibration is None or not dataset.negatives:
        return None
    judged = list(dataset.queries.items())[:limit]
    found = retriever.search_many([text[:1000] for _, text in judged], k=TOP)
    answered = fired = 0
    for (qid, _), hits in zip(judged, found):
        if any(dataset.qrels[qid].get(doc_of.get(h.chunk_id, ""), 0) > 0 for h in hits):
            answered += 1
            fired += hits.low_confidence
    negatives = [text[:1000] for text in dataset.negatives]
    silent = sum(not hits.low_confidence for hits in retriever.search_many(negatives, k=TOP))
    return FlagErrors(answered, fired, len(negatives), silent, retriever.calibration.threshold)


def flag_report(
    lake: Any, dataset: BeirDataset, *, tag: str | None = None, limit: int | None = None
) -> FlagErrors | None:
    """:func:`flag_errors` on the dataset's lake as it now is (or at ``tag``), searches not logged."""
    from dataclasses import replace

    from kbflow.config import Settings
    from kbflow.evaluate.evaluate import judged_docs
    from kbflow.retrieve.retriever import Retriever

    if not dataset.negatives:
        return None
    settings = Settings.coerce(None, lake=lake.uri)
    settings = replace(settings, retrieval=replace(settings.retrieval, log_queries=False))
    retriever = Retriever.open(lake, tag=tag, settings=settings)
    return flag_errors(retriever, dataset, judged_docs(retriever, dataset.unit), limit=limit)
