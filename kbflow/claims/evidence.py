"""Stale evidence: which claims cite text their sources no longer hold.

A citation evidence keeps the chunk id, the chunk's content hash and the
text as cited. It still holds while the lake has that content hash in the
cited source (a chunk id is derived from the text, so a passage that only
moved keeps its id) and, checked against the sources, while the source file
still has that text at the cited place. Otherwise it is stale: the old text
and what the cited place holds now are reported side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbflow import schema as S
from kbflow.claims.events import APPLIED, PendingEvent
from kbflow.claims.model import CITATION, Actor, Claim, Evidence, StaleEvidence
from kbflow.errors import ResolveError, StaleCitationError
from kbflow.lake.sql import sql_in
from kbflow.records import Citation

if TYPE_CHECKING:
    from kbflow.lake.lake import Lake

__all__ = ["EvidenceReport", "find_stale", "stale_events"]

_BATCH = 500
GONE_FROM_LAKE = "the lake no longer holds the cited text (its source changed or was removed, and was re-ingested)"
CHANGED_AT_SOURCE = "the source no longer holds the cited text at the cited place (changed since it was indexed)"


def _text_now(citation: Citation, lake: Lake) -> str | None:
    """What the cited place holds now, read from the source (``None`` when the place or file is gone)."""
    from kbflow.retrieve.resolver import read_at

    try:
        return read_at(citation, lake)
    except (ResolveError, OSError):
        return None


def _lake_rows(lake: Lake, chunk_ids: Sequence[str]) -> dict[str, str]:
    """chunk id -> its content hash, for the ids the lake's chunks table holds."""
    out: dict[str, str] = {}
    for start in range(0, len(chunk_ids), _BATCH):
        part = chunk_ids[start : start + _BATCH]
        table = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.CHUNK_HASH], sql_in(S.CHUNK_ID, part))
        out.update(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))
    return out


def _lake_hashes(lake: Lake, pairs: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(source id, chunk hash)`` pairs the lake's chunks table holds."""
    hashes = sorted({h for _, h in pairs})
    found: set[tuple[str, str]] = set()
    for start in range(0, len(hashes), _BATCH):
        table = lake.scan(S.CHUNKS, [S.SOURCE_ID, S.CHUNK_HASH], sql_in(S.CHUNK_HASH, hashes[start : start + _BATCH]))
        found.update(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))
    return found


@dataclass
class EvidenceReport:
    """What :meth:`Claims.check_evidence <kbflow.claims.store.Claims.check_evidence>` found."""

    claims_checked: int = 0
    evidence_checked: int = 0
    #: claim id -> what no longer holds, for every claim now stale
    stale: dict[str, list[StaleEvidence]] = field(default_factory=dict)
    #: claims flagged by this check (not flagged before), and claims whose flag it cleared (their sources hold
    #: again); a claim flagged before whose findings changed gets a new ``evidence_stale`` event, in neither list
    newly_stale: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    #: citations that could not be checked against their source (unreadable, not stale): claim id -> messages
    unchecked: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "claims_checked": self.claims_checked,
            "evidence_checked": self.evidence_checked,
            "stale": {cid: [s.to_dict() for s in found] for cid, found in self.stale.items()},
            "newly_stale": self.newly_stale,
            "cleared": self.cleared,
            "unchecked": self.unchecked,
        }


def find_stale(claims: Sequence[Claim], lake: Lake, *, against_sources: bool = True) -> EvidenceReport:
    """Check every citation evidence of ``claims`` against ``lake`` (and, ``against_sources``, the files)."""
    from kbflow.retrieve.resolver import resolve_many

    report = EvidenceReport(claims_checked=len(claims))
    cites: list[tuple[Claim, int, Evidence, Citation]] = []
    for claim in claims:
        for i, ev in enumerate(claim.evidence):
            if ev.kind == CITATION and ev.citation:
                citation = Citation.from_dict({**ev.citation, "chunk_hash": ev.digest})
                cites.append((claim, i, ev, citation))
    report.evidence_checked = len(cites)
    if not cites:
        return report
    if not lake.has_table(S.CHUNKS):
        for claim, _, ev, _ in cites:
            report.unchecked.setdefault(claim.claim_id, []).append(f"{ev.ref}: {lake.uri} has no chunks table")
        return report
    at_id = _lake_rows(lake, sorted({ev.ref for _, _, ev, _ in cites}))
    elsewhere = _lake_hashes(
        lake,
        [(c.source_id, ev.digest) for _, _, ev, c in cites if ev.digest is not None and at_id.get(ev.ref) != ev.digest],
    )
    found: dict[str, list[StaleEvidence]] = {}
    to_resolve: list[tuple[Claim, int, Evidence, Citation]] = []
    for claim, i, ev, citation in cites:
        if at_id.get(ev.ref) == ev.digest:
            to_resolve.append((claim, i, ev, citation))
        elif (citation.source_id, ev.digest) not in elsewhere:
            stale = StaleEvidence(i, ev.ref, GONE_FROM_LAKE, ev.text, _text_now(citation, lake))
            found.setdefault(claim.claim_id, []).append(stale)
    if against_sources and to_resolve:
        results = resolve_many([c for _, _, _, c in to_resolve], lake=lake)
        for (claim, i, ev, _), result in zip(to_resolve, results, strict=True):
            if isinstance(result, StaleCitationError):
                stale = StaleEvidence(i, ev.ref, CHANGED_AT_SOURCE, ev.text, result.current_text)
                found.setdefault(claim.claim_id, []).append(stale)
            elif isinstance(result, Exception):
                report.unchecked.setdefault(claim.claim_id, []).append(f"{ev.ref}: {result}")
    report.stale = {cid: sorted(items, key=lambda s: s.evidence) for cid, items in found.items()}
    return report


def stale_events(claims: Sequence[Claim], report: EvidenceReport, state: Any) -> list[PendingEvent]:
    """The events a check's ``report`` calls for, against each claim's ``state`` now (claim id -> claim):
    ``evidence_stale`` where a claim's stale citations changed, ``evidence_fresh`` where they all hold again
    (``report`` notes which were newly flagged and which cleared). Its status stays: a person decides."""
    actor = Actor("system", "check_evidence")
    out = []
    for claim in claims:
        now = state[claim.claim_id]
        found = tuple(report.stale.get(claim.claim_id, ()))
        if found == now.stale:
            continue
        if found:
            if not now.stale:
                report.newly_stale.append(claim.claim_id)
            event = "evidence_stale"
            reason = f"{len(found)} citation(s) no longer hold"
        else:
            report.cleared.append(claim.claim_id)
            event, reason = "evidence_fresh", "every citation holds again"
        data = {"stale": [s.to_dict() for s in found]}
        out.append(PendingEvent(claim.claim_id, event, APPLIED, now.status, None, actor, reason, (), data))
    return out
