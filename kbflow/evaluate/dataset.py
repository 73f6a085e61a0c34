"""What an evaluation set is once read: :class:`BeirDataset` (a BEIR folder, a ``sources.json`` set, or a
FinanceBench folder; :mod:`kbflow.evaluate.beir` and :mod:`kbflow.evaluate.financebench` read them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BeirDataset"]


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR dataset: where its corpus is, the queries that have judgements, and the judgements."""

    name: str
    root: str
    corpus: str | None  # path of corpus.jsonl (None for a sources.json dataset)
    corpus_hash: str
    split: str
    #: query id -> text, only queries with at least one judgement
    queries: dict[str, str] = field(repr=False)
    #: query id -> {doc id: graded relevance}
    qrels: dict[str, dict[str, int]] = field(repr=False)
    #: what a judged document is: "record", "page" or "symbol"
    unit: str = "record"
    #: the sources of a sources.json dataset: ``{"id", "type", "path" (absolute), "options"}`` each
    sources: list[dict[str, Any]] = field(default_factory=list, repr=False)
    #: questions the corpus cannot answer (``negatives.jsonl``, or the file sources.json names), for the flag
    negatives: list[str] = field(default_factory=list, repr=False)
    #: query id -> its question type, where the dataset has types (FinanceBench); reported apart
    groups: dict[str, str] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.queries)
