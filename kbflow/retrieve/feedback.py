"""Pseudo-relevance feedback for prose records: the query moved toward its first hits, the candidates fused again.

A question over a set of prose records (abstracts, articles, posts: a JSONL
record set) usually has several relevant records, and its first hits say in
the collection's own words what it asks about. Moving the query's vector
toward theirs (Rocchio's feedback, on the dense leg) and rescoring every
candidate of both legs with it finds the relevant records whose words the
question missed. Fused again, the first hit stays first: feedback reorders
what follows it, so a lookup whose first hit is right keeps it.

Elsewhere one unit answers a question (a function, a PDF page, a filing's
table, a section of a documentation site) and first hits that are not it
pull the query away from it. Measured on every set here (hybrid nDCG@10,
docs/evaluation.md): Cranfield's abstracts gain 0.012, while code, PDF pages,
filings, a site and CoSQA's records (Python functions) each lose up to 0.02
where feedback applies to them. So it applies only where every feedback hit
is a record of a record set that reads as prose: a sample of each JSONL
file's records (up to :data:`PROSE_SAMPLE`, spread over it), three in four
of them prose by :func:`reads_as_prose`, judged once per search-table
version when the document groups load (:func:`prose_documents`), so a
search reads no text for it.

The hits keep the query's own cosines: a hit's ``dense_score``, its
``relevance`` and the "no good match" flag read the question, not the
feedback.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "PROSE_READ",
    "PROSE_RECORDS",
    "PROSE_SAMPLE",
    "PROSE_SHARE",
    "RECORD",
    "applies",
    "feedback_vector",
    "first_kept",
    "prose_documents",
    "reads_as_prose",
    "sample_rows",
]

#: the share of a text's characters (of its first :data:`PROSE_CHARS`) that are letters or white space from which
#: it reads as prose: Cranfield's chunks 0.95 and over for 95 in 100, CoSQA's Python functions 0.914 and under
PROSE_SHARE = 0.93
PROSE_CHARS = 1500
#: the content kind feedback applies to (:data:`kbflow.schema.CONTENT_KINDS`)
RECORD = "record"
#: the records read of each record document to judge it (fewer each where a lake holds many: at most
#: :data:`PROSE_READ` in all)
PROSE_SAMPLE = 64
PROSE_READ = 8192
#: the share of a record document's sampled records that must read as prose: Cranfield's abstracts 0.99, CoSQA's
#: functions none; Python's FAQ, its answers' code samples inline, 0.57, is no record set of prose
PROSE_RECORDS = 0.75


def reads_as_prose(text: str) -> bool:
    """Whether ``text`` is prose rather than code or a table: letters and white space make at least
    :data:`PROSE_SHARE` of its first :data:`PROSE_CHARS` characters."""
    head = text[:PROSE_CHARS]
    if not head.strip():
        return False
    plain = sum(c.isalpha() or c.isspace() for c in head)
    return plain / len(head) >= PROSE_SHARE


def applies(prose: Iterable[bool]) -> bool:
    """Whether feedback applies to a query whose first hits' documents are, each, a record set of prose or not
    (:func:`prose_documents`): every one is."""
    prose = list(prose)
    return bool(prose) and all(prose)


def sample_rows(rows_of: Sequence[Sequence[int]]) -> list[list[int]]:
    """Up to :data:`PROSE_SAMPLE` rows of each document (``rows_of``: each record document's rows in order),
    spread evenly over it, at most :data:`PROSE_READ` in all (one each where a lake holds more record documents
    than that)."""
    each = max(1, min(PROSE_SAMPLE, PROSE_READ // max(1, len(rows_of))))
    out = []
    for rows in rows_of:
        n = min(each, len(rows))
        out.append([rows[(i * len(rows)) // n] for i in range(n)] if n else [])
    return out


def prose_documents(samples: Sequence[Sequence[str]]) -> list[bool]:
    """For each record document, given the texts of its sampled records: whether at least :data:`PROSE_RECORDS`
    of them read as prose."""
    return [bool(texts) and sum(map(reads_as_prose, texts)) >= PROSE_RECORDS * len(texts) for texts in samples]


def feedback_vector(query: Sequence[float], hits: np.ndarray, weight: float) -> np.ndarray:
    """The query's unit vector plus ``weight`` times the mean of the first hits' unit vectors (Rocchio's
    feedback without negatives), as float32; the dense leg's cosines need no unit length."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    vectors = np.asarray(hits, dtype=np.float32).reshape(-1, q.shape[0])
    if len(vectors) == 0:
        return q
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    units = vectors / np.where(norms > 0, norms, 1.0)
    return (q + np.float32(weight) * units.mean(axis=0)).astype(np.float32)


def first_kept(fused: Sequence[tuple[str, float]], again: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """``again`` (the candidates fused with the feedback leg) after ``fused``'s first hit, which stays first:
    no score that follows it is above its own."""
    if not fused:
        return list(again)
    first, top = fused[0]
    return [(first, top)] + [(cid, min(score, top)) for cid, score in again if cid != first]
