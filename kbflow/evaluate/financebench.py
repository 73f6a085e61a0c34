"""FinanceBench-style sets: PDFs and questions judged by the page that holds the answer, read as they come.

A folder with ``questions.jsonl`` (FinanceBench's ``financebench_open_source.jsonl``
lines: ``financebench_id``, ``question``, ``question_type``, ``evidence``:
``[{"doc_name", "evidence_page_num"}]`` with 0-based page numbers) and ``pdfs/``
(``<doc_name>.pdf``) is a dataset as it is: :func:`load_financebench` reads it as
one ``pdf`` source judged by page (``<doc_name>.pdf#p<page>``, 1-based), with no
conversion by hand; :func:`~kbflow.evaluate.beir.load_beir` also reads a
``negatives.jsonl`` beside them (questions the filings cannot answer, as a
BEIR folder has them) for the "no good match" flag. ``kbflow eval`` then
also prints :func:`page_report`: hit@1, hit@5, nDCG@10 and MRR@10 per
question type, and the share of questions whose right document (any page of
the gold filing) is in the top 5, so a document miss and a page miss are
told apart.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from kbflow.errors import DatasetError
from kbflow.records import ids

__all__ = ["is_financebench", "load_financebench", "page_report"]


def is_financebench(root: str) -> bool:
    """Whether ``root`` is laid out as FinanceBench is (``questions.jsonl`` and ``pdfs/``, no ``queries.jsonl``)."""
    return (
        os.path.isfile(os.path.join(root, "questions.jsonl"))
        and os.path.isdir(os.path.join(root, "pdfs"))
        and not os.path.isfile(os.path.join(root, "queries.jsonl"))
    )


def _questions(path: str) -> Iterable[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{path}:{lineno}: not JSON ({exc})") from None
            if not isinstance(row, dict) or not row.get("question") or not row.get("financebench_id"):
                raise DatasetError(f'{path}:{lineno}: a question needs "financebench_id" and "question"')
            yield lineno, row


def _gold_pages(row: dict[str, Any], where: str, pdfs: str) -> dict[str, int]:
    """``{"<doc>.pdf#p<page>": 2}`` for a question's evidence (pages 0-based in the file, 1-based here)."""
    gold = {}
    for item in row.get("evidence") or []:
        doc, page = item.get("doc_name") or row.get("doc_name"), item.get("evidence_page_num")
        if not isinstance(page, int) or page < 0 or not doc:
            raise DatasetError(f'{where}: evidence needs "doc_name" and a 0-based "evidence_page_num"')
        if not os.path.isfile(os.path.join(pdfs, f"{doc}.pdf")):
            raise DatasetError(f"{where}: the evidence names {doc}.pdf, which is not in {pdfs}")
        gold[f"{doc}.pdf#p{page + 1}"] = 2
    return gold


def load_financebench(root: str, split: str = "test") -> Any:
    """The dataset in ``root`` (see the module docs) as a :class:`~kbflow.evaluate.beir.BeirDataset`."""
    from kbflow.evaluate.dataset import BeirDataset
    from kbflow.sources.files import file_hash

    root = os.path.abspath(root)
    path, pdfs = os.path.join(root, "questions.jsonl"), os.path.join(root, "pdfs")
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    groups: dict[str, str] = {}
    for lineno, row in _questions(path):
        qid = str(row["financebench_id"])
        gold = _gold_pages(row, f"{path}:{lineno}", pdfs)
        if gold:
            queries[qid], qrels[qid] = str(row["question"]), gold
            groups[qid] = str(row.get("question_type") or "all")
    if not qrels:
        raise DatasetError(f"{path}: no question has an evidence page")
    names = sorted(n for n in os.listdir(pdfs) if n.lower().endswith(".pdf"))
    corpus_hash = ids.digest(file_hash(path), *(file_hash(os.path.join(pdfs, n)) for n in names))
    return BeirDataset(
        name=os.path.basename(root.rstrip(os.sep)),
        root=root,
        corpus=None,
        corpus_hash=corpus_hash,
        split=split,
        queries=queries,
        qrels=qrels,
        unit="page",
        sources=[{"id": "filings", "type": "pdf", "path": pdfs, "options": {}}],
        groups=groups,
    )


def _document(page_id: str) -> str:
    return page_id.split("#p", 1)[0]


def page_report(run: Any, dataset: Any) -> list[str]:
    """Lines for ``kbflow eval``: per question type and over all, hit@1, hit@5, nDCG@10, MRR@10 and the right
    document in the top 5 (from the run's per-query scores and top documents)."""
    kinds = sorted(set(dataset.groups.values()))
    rows = []
    for kind in [*kinds, "all"]:
        qids = [q for q in run.per_query if kind in ("all", dataset.groups.get(q))]
        if not qids:
            continue

        def mean(values: list[float], n: int = len(qids)) -> float:
            return sum(values) / n

        hit1 = mean([float(any(d in dataset.qrels[q] for d in run.top_docs.get(q, [])[:1])) for q in qids])
        hit5 = mean([float(any(d in dataset.qrels[q] for d in run.top_docs.get(q, [])[:5])) for q in qids])
        docs = mean(
            [
                float(
                    bool({_document(d) for d in run.top_docs.get(q, [])[:5]} & {_document(g) for g in dataset.qrels[q]})
                )
                for q in qids
            ]
        )
        ndcg = mean([run.per_query[q].get("ndcg@10", 0.0) for q in qids])
        mrr = mean([run.per_query[q].get("mrr@10", 0.0) for q in qids])
        rows.append(
            f"  {kind:22s} {len(qids):4d} questions  hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  nDCG@10 {ndcg:.4f}  "
            f"MRR@10 {mrr:.4f}  right document in top 5 {docs:.3f}"
        )
    return [f"{run.config.get('mode')} ({run.run_id}): pages judged, by question type", *rows]
