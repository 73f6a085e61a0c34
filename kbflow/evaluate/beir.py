"""BEIR-format datasets: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

``corpus.jsonl`` holds ``{"_id", "title", "text"}`` per line (ingested as a
``jsonl`` source, so its records are read by :mod:`kbflow.sources.jsonl`);
``queries.jsonl`` holds ``{"_id", "text"}``; ``qrels/test.tsv`` has a header
and ``query-id<TAB>corpus-id<TAB>score`` rows (graded; 0 or less is not
relevant). A split other than ``test`` reads ``queries.<split>.jsonl`` where
that file exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kbflow.errors import DatasetError, SourceError
from kbflow.sources.base import file_hash
from kbflow.sources.jsonl import iter_records

__all__ = ["BeirDataset", "load_beir"]


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR dataset: where its corpus is, the queries that have judgements, and the judgements."""

    name: str
    root: str
    corpus: str  # path of corpus.jsonl
    corpus_hash: str
    split: str
    #: query id -> text, only queries with at least one judgement
    queries: dict[str, str] = field(repr=False)
    #: query id -> {doc id: graded relevance}
    qrels: dict[str, dict[str, int]] = field(repr=False)

    def __len__(self) -> int:
        return len(self.queries)


def _queries(path: str) -> dict[str, str]:
    try:  # the corpus reader's checks: UTF-8, one JSON object with an "_id" and string "text" per line
        return {str(obj["_id"]): obj.get("text") or "" for _, obj in iter_records(path)}
    except SourceError as exc:
        raise DatasetError(str(exc)) from None


def _qrels(path: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[:1] == ["query-id"]:
                continue
            if not line.strip():
                continue
            if len(parts) != 3:
                raise DatasetError(f"{path}:{lineno}: expected query-id<TAB>corpus-id<TAB>score, got {line.strip()!r}")
            try:
                score = int(float(parts[2]))
            except ValueError:
                raise DatasetError(f"{path}:{lineno}: score {parts[2]!r} is not a number") from None
            out.setdefault(parts[0], {})[parts[1]] = score
    return out


def load_beir(root: str, split: str = "test") -> BeirDataset:
    """Read a BEIR dataset folder; the corpus itself is streamed later, by the ingest.

    Raises
    ------
    DatasetError
        A file is missing or a line is malformed (the message names the file and line).
    """
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise DatasetError(f"{root}: not a folder; a BEIR dataset is a folder with corpus.jsonl, queries.jsonl, qrels/")
    corpus = os.path.join(root, "corpus.jsonl")
    queries_path = os.path.join(root, f"queries.{split}.jsonl")
    if split == "test" or not os.path.isfile(queries_path):
        queries_path = os.path.join(root, "queries.jsonl")
    qrels_path = os.path.join(root, "qrels", f"{split}.tsv")
    for path in (corpus, queries_path, qrels_path):
        if not os.path.isfile(path):
            raise DatasetError(f"{path}: missing; a BEIR dataset has corpus.jsonl, queries.jsonl and qrels/{split}.tsv")
    queries = _queries(queries_path)
    qrels = {q: docs for q, docs in _qrels(qrels_path).items() if any(v > 0 for v in docs.values())}
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise DatasetError(
            f"{qrels_path}: {len(unknown)} judged queries are not in {queries_path} (first: {unknown[0]!r})"
        )
    if not qrels:
        raise DatasetError(f"{qrels_path}: no query has a relevant document")
    return BeirDataset(
        name=os.path.basename(root.rstrip(os.sep)),
        root=root,
        corpus=corpus,
        corpus_hash=file_hash(corpus),
        split=split,
        queries={q: queries[q] for q in qrels},
        qrels=qrels,
    )
