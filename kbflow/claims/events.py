"""A claim's events: what each one records, and how the events fold into the claim's current state (pure).

Every change to a claim is an event (:class:`ClaimEvent`): learned, observed,
verified, disputed, superseded, each applied or refused, with its actor,
reason and evidence. :func:`learn_event` makes a claim's first event from
``Claims.learn``'s arguments (every field and rule checked), and
:func:`apply_event` folds an event into the claim it changes. The log that
stores them is :mod:`kbflow.claims.log`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from kbflow import schema as S
from kbflow.claims import lifecycle as L
from kbflow.claims import model as M
from kbflow.claims import periods as P
from kbflow.claims.model import Actor, Claim, Evidence, StaleEvidence
from kbflow.errors import ClaimError
from kbflow.records import scopes

__all__ = [
    "APPLIED",
    "DEFAULT_CONFIDENCE",
    "REFUSED",
    "ClaimEvent",
    "PendingEvent",
    "apply_event",
    "learn_event",
    "new_claim_id",
]

APPLIED, REFUSED = "applied", "refused"


#: confidence of a claim learned without one, by status
DEFAULT_CONFIDENCE = {M.HYPOTHESIS: 0.5, M.INFERRED: 0.7, M.OBSERVED: 0.9}


def _label(text: str) -> str:
    """How an error names a claim not stored yet: its text, clipped."""
    text = " ".join(str(text).split())
    return repr(text if len(text) <= 60 else text[:59] + "…")


def new_claim_id() -> str:
    return "cl_" + uuid.uuid4().hex[:16]


_LEARN_FIELDS = frozenset(
    {"text", "evidence", "scope", "actor", "confidence", "status", "domain", "tags", "valid_from", "valid_to"}
)


def valid_time(item: Mapping[str, Any], text: str, evidence: tuple[Evidence, ...]) -> dict[str, Any]:
    """The ``learn`` event's record of when the claim holds: as given (``valid_from`` / ``valid_to``), else as
    its text, or all of its evidence, names one period; nothing when neither says."""
    given = item.get("valid_from") is not None or item.get("valid_to") is not None
    if given:
        (start, end), source = P.check_valid(item.get("valid_from"), item.get("valid_to")), "given"
    else:
        found = P.period_of(text, (e.text for e in evidence))
        if found is None:
            return {}
        (start, end), source = found
    return {
        "valid_from": start.isoformat() if start else None,
        "valid_to": end.isoformat() if end else None,
        "valid_read_from": source,
    }


def learn_event(item: Mapping[str, Any], default_actor: Actor) -> PendingEvent:
    """The ``learn`` event of one set of ``Claims.learn``'s arguments, every field and rule checked."""
    unknown = set(item) - _LEARN_FIELDS
    if unknown:
        raise ClaimError(f"unknown claim fields {sorted(unknown)}")
    evidence = tuple(Evidence.coerce(e) for e in (item.get("evidence") or ()))
    status = item.get("status")
    if status is None:
        status = M.OBSERVED if L.has_direct_evidence(evidence) or not evidence else M.INFERRED
    confidence = item.get("confidence")
    if confidence is None:
        confidence = DEFAULT_CONFIDENCE.get(status, 0.5)
    text, confidence, scope, domain, tags = L.check_fields(
        item.get("text") or "",
        confidence,
        status,
        item.get("scope") or scopes.GLOBAL,
        item.get("domain"),
        item.get("tags") or (),
    )
    L.check_evidence_for(_label(text), evidence, status, confidence)
    data = {"text": text, "confidence": confidence, "scope": scope, "domain": domain, "tags": list(tags)}
    try:
        data.update(valid_time(item, text, evidence))
    except ClaimError as exc:
        raise ClaimError(f"claim {_label(text)}: {exc}") from None
    actor = Actor.coerce(item["actor"]) if item.get("actor") is not None else default_actor
    return PendingEvent(new_claim_id(), "learn", APPLIED, None, status, actor, evidence=evidence, data=data)


@dataclass(frozen=True)
class ClaimEvent:
    """One event of a claim's history: what was attempted, by whom, and whether it was applied."""

    n: int
    claim_id: str
    seq: int
    event: str
    outcome: str
    from_status: str | None
    to_status: str | None
    actor: Actor
    reason: str | None
    evidence: tuple[Evidence, ...]
    data: Mapping[str, Any]
    at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ClaimEvent:
        return cls(
            n=row[S.EVENT_N],
            claim_id=row[S.CLAIM_ID],
            seq=row[S.SEQ],
            event=row[S.EVENT],
            outcome=row[S.OUTCOME],
            from_status=row[S.FROM_STATUS],
            to_status=row[S.TO_STATUS],
            actor=Actor(row[S.ACTOR_TYPE], row[S.ACTOR_ID]),
            reason=row[S.REASON],
            evidence=M.evidence_from_json(row[S.EVIDENCE]),
            data=json.loads(row[S.DATA] or "{}"),
            at=row[S.AT],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "claim_id": self.claim_id,
            "seq": self.seq,
            "event": self.event,
            "outcome": self.outcome,
            "from_status": self.from_status,
            "to_status": self.to_status,
            "actor": {"type": self.actor.type, "id": self.actor.id},
            "reason": self.reason,
            "evidence": [e.to_dict() for e in self.evidence],
            "data": dict(self.data),
            "at": self.at.isoformat(),
        }

    def render(self) -> str:
        """One line: ``#3 2026-11-23 10:02 verify observed -> verified by user:ana (applied): reason``; the
        record time first, the valid time a ``learn`` recorded (``[holds 2022-01-01 .. 2022-12-31]``), and
        why a refused attempt was refused."""
        move = f"{self.from_status or '-'} -> {self.to_status or '-'}"
        reason = f": {self.reason}" if self.reason else ""
        added = f" (+{len(self.evidence)} evidence)" if self.evidence else ""
        when = f"{self.at:%Y-%m-%d %H:%M:%S}"
        holds = ""
        if self.data.get("valid_from") or self.data.get("valid_to"):  # valid time, beside the record time
            holds = f" [holds {self.data.get('valid_from') or '…'} .. {self.data.get('valid_to') or '…'}]"
        refused = f": {self.data['refused']}" if self.outcome == REFUSED and self.data.get("refused") else ""
        line = f"#{self.seq} {when} {self.event} {move} by {self.actor} ({self.outcome}){added}{holds}{reason}"
        return line + (refused if not reason else "")


# --- folding events into claims (pure) -------------------------------------------------------------
def apply_event(claim: Claim | None, row: Mapping[str, Any]) -> Claim | None:
    """The claim after event ``row`` (``None`` before its ``learn``)."""
    data = json.loads(row[S.DATA] or "{}")
    seq, n, at = row[S.SEQ], row[S.EVENT_N], row[S.AT]
    if row[S.EVENT] == "learn" and row[S.OUTCOME] == APPLIED:
        return Claim(
            claim_id=row[S.CLAIM_ID],
            text=data["text"],
            status=row[S.TO_STATUS],
            confidence=float(data["confidence"]),
            scope=data["scope"],
            evidence=M.evidence_from_json(row[S.EVIDENCE]),
            actor=Actor(row[S.ACTOR_TYPE], row[S.ACTOR_ID]),
            created_at=at,
            updated_at=at,
            domain=data.get("domain"),
            tags=tuple(data.get("tags") or ()),
            valid_from=date.fromisoformat(data["valid_from"]) if data.get("valid_from") else None,
            valid_to=date.fromisoformat(data["valid_to"]) if data.get("valid_to") else None,
            seq=seq,
            n=n,
        )
    if claim is None:
        return None
    if row[S.OUTCOME] != APPLIED:
        return claim.with_(seq=seq, n=n)
    changes: dict[str, Any] = {"seq": seq, "n": n, "updated_at": at}
    if row[S.TO_STATUS]:
        changes["status"] = row[S.TO_STATUS]
    added = M.evidence_from_json(row[S.EVIDENCE])
    if added:
        changes["evidence"] = claim.evidence + added
    if "confidence" in data:
        changes["confidence"] = float(data["confidence"])
    if "superseded_by" in data:
        changes["superseded_by"] = data["superseded_by"]
    if "supersedes" in data:
        changes["supersedes"] = data["supersedes"]
    if "stale" in data:
        changes["stale"] = tuple(StaleEvidence.from_dict(s) for s in data["stale"])
        changes.pop("updated_at")  # a staleness flag is not a change of the claim
    return claim.with_(**changes)


@dataclass
class PendingEvent:
    """An event about to be written (its ``n`` and ``seq`` are given at commit)."""

    claim_id: str
    event: str
    outcome: str
    from_status: str | None
    to_status: str | None
    actor: Actor
    reason: str | None = None
    evidence: tuple[Evidence, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    error: Exception | None = None  # raised after the commit (a refused attempt is history too)
