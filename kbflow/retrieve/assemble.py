"""A ranking turned into cited hits: each hit's citation, leg ranks, scores and relevance, and the list's flag.

:func:`hits_of` reads the hits' rows from the search table (their texts,
their copies' citations, the cosines the dense leg did not give, their
files' roles); :func:`cited_hits` reads what the search step left (the fused ranking, each
leg's order, the rows taken from the search table, the query's cosines) and
makes one :class:`~kbflow.records.Hit` per ranked chunk: its citation and its
copies' (``also_in``), where each leg ranked it, and its relevance, from the
calibrated curve (:mod:`kbflow.retrieve.confidence`; an exact match of a
code name the query gives is certain). :func:`flag_reason` says why the list
is, or is not, flagged "no good match": its best relevance, that hit's
cosine, the curve read and the curve's midpoint, and the names the question
gives that the first hits' documents never write (:mod:`.unnamed`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from kbflow import schema as S
from kbflow.records import Citation, FlagReason, Hit
from kbflow.retrieve.confidence import Calibration
from kbflow.retrieve.pointers import POINTER
from kbflow.retrieve.ranking import Ranking
from kbflow.retrieve.table import SearchTable
from kbflow.retrieve.unnamed import NAME_HITS, unknown_names

__all__ = ["cited_hits", "cosines_of", "flag_reason", "hits_of", "relevance"]


def relevance(calibration: Calibration | None, cosine: float | None) -> float | None:
    """A hit's relevance from its cosine through ``calibration`` (``None`` where either is unknown)."""
    return calibration.relevance(cosine) if calibration is not None and cosine is not None else None


def cited_hits(
    ranking: Ranking,
    fused: Sequence[tuple[str, float]],
    rows: Sequence[Mapping[str, Any]],
    read: Mapping[str, Mapping[str, Any]],
    cosine: Mapping[str, float],
    calibration: Calibration | None,
    query_id: str | None,
    roles: Sequence[str | None] = (),
) -> list[Hit]:
    """One hit per ``(chunk id, score)`` of ``fused``, best first, from its search-table row in ``rows`` (the
    rows of its copies in ``read``); ``roles``: each one's file's role beside code, where known
    (:meth:`kbflow.retrieve.signals.Groups.roles_of`)."""
    roles = list(roles) or [None] * len(fused)
    positions = {leg: {cid: n for n, cid in enumerate(ids, start=1)} for leg, ids in ranking.legs.items()}
    defined = _defined(ranking)
    bm25 = ranking.leg_scores.get("bm25", {})
    return [
        Hit(
            rank=rank,
            score=float(score),
            chunk_id=cid,
            text=row[S.TEXT],
            citation=Citation.from_row(row),
            content_kind=row[S.CONTENT_KIND],
            scope=row[S.SCOPE],
            dense_rank=positions.get("dense", {}).get(cid),
            bm25_rank=positions.get("bm25", {}).get(cid),
            fused_rank=positions.get("fused", {}).get(cid),
            dense_score=cosine.get(cid),
            bm25_score=bm25.get(cid),
            relevance=1.0 if cid in defined else relevance(calibration, cosine.get(cid)),
            query_id=query_id,
            also_in=tuple(Citation.from_row(read[c]) for c in ranking.also_in.get(cid, ())),
            role=role,
        )
        for rank, ((cid, score), row, role) in enumerate(zip(fused, rows, roles, strict=True), start=1)
    ]


def hits_of(
    table: SearchTable,
    ranking: Ranking,
    calibration: Calibration | None,
    query_id: str | None,
    role_weight: float,
) -> list[Hit]:
    """The ranking's hits, read from the search ``table``: texts and citations (one take for the hits and their
    copies not read while grouping), cosines, relevance, and where ``role_weight`` ranked by them, each file's
    role or ``"pointer"`` for a chunk the ranking demoted as one that only points elsewhere
    (:mod:`kbflow.retrieve.pointers`)."""
    row_of = ranking.row_of
    fused = list(zip(ranking.ids, ranking.scores))
    copies = [c for cid, _ in fused for c in ranking.also_in.get(cid, ())]
    read = dict(ranking.rows)
    missing = [c for c in [cid for cid, _ in fused] + copies if c not in read]
    if missing:
        read.update(table.read(missing, row_of))
    rows = [dict(read[cid]) for cid, _ in fused]
    cosine = cosines_of(table, ranking, [cid for cid, _ in fused])
    roles: list[str | None] = []
    if fused and role_weight > 0:  # a file's role around code, else whether the chunk only points elsewhere
        files = table.groups.roles_of([row_of[cid] for cid, _ in fused])
        roles = [role or (POINTER if cid in ranking.pointers else None) for role, (cid, _) in zip(files, fused)]
    return cited_hits(ranking, fused, rows, read, cosine, calibration, query_id, roles)


def cosines_of(table: SearchTable, ranking: Ranking, ids: list[str]) -> dict[str, float]:
    """The cosine similarity of the query to each of ``ids``: the dense leg's score, computed from the ``table``
    for the hits it did not return (none in ``bm25`` mode)."""
    known = ranking.leg_scores.get("dense")
    if known is None or ranking.query_vector is None:
        return {}
    out = {cid: known[cid] for cid in ids if cid in known}
    missing = [cid for cid in ids if cid not in known]
    if missing:
        values = table.cosines(ranking.query_vector, [ranking.row_of[cid] for cid in missing])
        out.update(zip(missing, (float(v) for v in values)))
    return out


def _defined(ranking: Ranking) -> set[str]:
    """The chunks that define a code name the query gives: exact matches, certain whatever their cosine."""
    return set(ranking.legs.get("symbol", ()))


def flag_reason(
    table: SearchTable,
    query: str,
    hits: Sequence[Hit],
    confidence: float | None,
    calibration: Calibration | None,
    curve: str,
    ranking: Ranking,
) -> FlagReason | None:
    """Why a list is or is not flagged: its best hit's relevance (``confidence``) and cosine, the midpoint of the
    ``curve`` it was read off, and the names ``query`` gives that the first hits' documents never write
    (:mod:`kbflow.retrieve.unnamed`); ``None`` where no relevance is known."""
    if confidence is None or calibration is None:
        return None
    best = max((h for h in hits if h.relevance is not None), key=lambda h: h.relevance or 0.0)
    cosine = None if best.chunk_id in _defined(ranking) else best.dense_score
    # a name counts where the first hits' documents write it (a filing names its own company), never in a
    # document the request's scope and filters leave out
    within = [ranking.row_of[h.chunk_id] for h in hits[:NAME_HITS] if h.chunk_id in ranking.row_of]
    unknown = unknown_names(query, functools.partial(table.holds, within=within))
    return FlagReason(confidence, calibration.threshold, curve, cosine, unknown)
