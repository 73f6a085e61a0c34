"""Relations between claims: what one claim says of another, with evidence and a history of its own.

A :class:`Relation` says that claim ``source`` *entails*, *contradicts*,
*refines* or is *derived_from* claim ``target``. It is proposed (by an agent,
a tool or a person), then confirmed or rejected by someone else, or
withdrawn (``unrelate``). Its events live in the claims' event log beside
the claims' own (:mod:`kbflow.claims.log`), under the relation's id
(``rl_...``), so a relation has the same append-only history and audit
rows as a claim. Its current state is the fold of its events
(:func:`apply_relation_event`), kept in memory by :class:`RelationStates`.

The rules (pure, no storage): both claims exist and differ; a reader of the
relation's scope sees both (:func:`relation_scope`); ``refines`` makes no
cycle; the same relation is not proposed twice while it stands; confirming a
``contradicts`` is a person's act. No relation changes a claim's status: a
claim is superseded or disputed only when someone asks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kbflow import schema as S
from kbflow.claims import model as M
from kbflow.claims.model import Actor, Evidence
from kbflow.errors import ClaimError
from kbflow.records import scopes

__all__ = [
    "RELATION_STATUSES",
    "RELATION_TRANSITIONS",
    "RELATION_TYPES",
    "Relation",
    "RelationStates",
    "apply_relation_event",
    "check_relation_move",
    "is_relation_id",
    "new_relation_id",
    "relation_scope",
]

ENTAILS, CONTRADICTS, REFINES, DERIVED_FROM = "entails", "contradicts", "refines", "derived_from"
RELATION_TYPES = (ENTAILS, CONTRADICTS, REFINES, DERIVED_FROM)
PROPOSED, CONFIRMED, REJECTED, WITHDRAWN = "proposed", "confirmed", "rejected", "withdrawn"
RELATION_STATUSES = (PROPOSED, CONFIRMED, REJECTED, WITHDRAWN)
#: the statuses in which a relation stands (counts for duplicates, cycles and conflicts)
STANDING = (PROPOSED, CONFIRMED)
#: status -> the statuses a relation may move to (``withdrawn`` is reached through ``unrelate``)
RELATION_TRANSITIONS: dict[str, tuple[str, ...]] = {
    PROPOSED: (CONFIRMED, REJECTED, WITHDRAWN),
    CONFIRMED: (REJECTED, WITHDRAWN),
    REJECTED: (CONFIRMED, WITHDRAWN),
    WITHDRAWN: (),
}
#: the event that moves a relation to each status
RELATION_EVENTS = {PROPOSED: "relate", CONFIRMED: "confirm", REJECTED: "reject", WITHDRAWN: "unrelate"}
PREFIX = "rl_"


def new_relation_id() -> str:
    return PREFIX + uuid.uuid4().hex[:16]


def is_relation_id(value: str) -> bool:
    """Whether an id of the event log names a relation (else it names a claim)."""
    return value.startswith(PREFIX)


@dataclass(frozen=True)
class Relation:
    """A relation's current state (its history is ``Claims.history(relation_id)``)."""

    relation_id: str
    source: str
    type: str
    target: str
    status: str
    scope: str
    evidence: tuple[Evidence, ...]
    actor: Actor
    created_at: datetime
    updated_at: datetime
    reason: str | None = None
    #: who last confirmed, rejected or withdrew it
    decided_by: Actor | None = None
    seq: int = 0
    n: int = 0

    @property
    def standing(self) -> bool:
        return self.status in STANDING

    def other(self, claim_id: str) -> str:
        """The claim at the other end from ``claim_id``."""
        return self.target if claim_id == self.source else self.source

    def to_dict(self) -> dict[str, Any]:
        return {
            "relation_id": self.relation_id,
            "source": self.source,
            "type": self.type,
            "target": self.target,
            "status": self.status,
            "scope": self.scope,
            "evidence": [e.to_dict() for e in self.evidence],
            "actor": {"type": self.actor.type, "id": self.actor.id},
            "decided_by": {"type": self.decided_by.type, "id": self.decided_by.id} if self.decided_by else None,
            "reason": self.reason,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "seq": self.seq,
        }

    def render(self) -> str:
        """One line: ``rl_... cl_a contradicts cl_b [proposed] by agent:x``."""
        return f"{self.relation_id} {self.source} {self.type} {self.target} [{self.status}] by {self.actor}"


def apply_relation_event(relation: Relation | None, row: Mapping[str, Any]) -> Relation | None:
    """The relation after event ``row`` (``None`` before an applied ``relate``)."""
    data = json.loads(row[S.DATA] or "{}")
    actor, at = Actor(row[S.ACTOR_TYPE], row[S.ACTOR_ID]), row[S.AT]
    if row[S.EVENT] == "relate" and row[S.OUTCOME] == "applied":
        return Relation(
            relation_id=row[S.CLAIM_ID],
            source=data["source"],
            type=data["type"],
            target=data["target"],
            status=PROPOSED,
            scope=data["scope"],
            evidence=M.evidence_from_json(row[S.EVIDENCE]),
            actor=actor,
            created_at=at,
            updated_at=at,
            reason=row[S.REASON],
            seq=row[S.SEQ],
            n=row[S.EVENT_N],
        )
    if relation is None:
        return None
    if row[S.OUTCOME] != "applied":
        return replace(relation, seq=row[S.SEQ], n=row[S.EVENT_N])
    added = M.evidence_from_json(row[S.EVIDENCE])
    return replace(
        relation,
        status=row[S.TO_STATUS] or relation.status,
        evidence=relation.evidence + added,
        decided_by=actor,
        updated_at=at,
        seq=row[S.SEQ],
        n=row[S.EVENT_N],
    )


def relation_scope(source_scope: str, target_scope: str) -> str:
    """The scope of a relation between claims of these scopes: the narrower, where its readers see both;
    a :class:`ClaimError` when no one scope sees both (sibling scopes)."""
    if source_scope in scopes.visible(target_scope):
        return target_scope
    if target_scope in scopes.visible(source_scope):
        return source_scope
    raise ClaimError(
        f"claims of scopes {source_scope!r} and {target_scope!r} cannot be related: no reader of one scope sees "
        "both; relate claims within one scope or its ancestors"
    )


def check_relation_move(relation: Relation, to: str, actor: Actor) -> None:
    """Raise :class:`ClaimError` unless ``relation`` may move to ``to`` by ``actor`` (confirming a
    ``contradicts`` is a person's act)."""
    allowed = RELATION_TRANSITIONS[relation.status]
    if to not in allowed:
        shown = ", ".join(allowed) if allowed else "none (withdrawn is final)"
        raise ClaimError(
            f"relation {relation.relation_id}: cannot move from {relation.status} to {to}; it may move to: {shown}"
        )
    if to == CONFIRMED and relation.type == CONTRADICTS and actor.type != "user":
        raise ClaimError(
            f"relation {relation.relation_id}: only a person (actor type user) confirms that two claims "
            f"contradict each other, not {actor}"
        )


class RelationStates:
    """Relation id -> :class:`Relation`, and each claim's relations, folded from the event log."""

    def __init__(self) -> None:
        self.by_id: dict[str, Relation] = {}
        self._of: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self.by_id)

    def __contains__(self, relation_id: object) -> bool:
        return relation_id in self.by_id

    def get(self, relation_id: str) -> Relation | None:
        return self.by_id.get(relation_id)

    def fold(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Apply relation event rows, in order."""
        for row in rows:
            before = self.by_id.get(row[S.CLAIM_ID])
            if before is not None and row[S.EVENT_N] <= before.n:  # folded already
                continue
            after = apply_relation_event(before, row)
            if after is None:
                continue
            self.by_id[after.relation_id] = after
            for cid in (after.source, after.target):
                self._of.setdefault(cid, set()).add(after.relation_id)

    def of(self, claim_id: str) -> list[Relation]:
        """The relations ``claim_id`` is an end of, oldest first."""
        found = (self.by_id[r] for r in self._of.get(claim_id, ()))
        return sorted(found, key=lambda r: r.n)

    def standing(self, source: str, type_: str, target: str) -> Relation | None:
        """The standing relation ``source type target``, if one is proposed or confirmed."""
        for rel in self.of(source):
            if rel.standing and rel.type == type_ and rel.source == source and rel.target == target:
                return rel
        return None

    def refines_path(self, start: str, goal: str, extra: Mapping[str, Iterable[str]] | None = None) -> bool:
        """Whether standing ``refines`` relations (and the ``extra`` edges, source -> targets, of relations not
        written yet) lead from ``start`` to ``goal``."""
        seen, todo = {start}, [start]
        while todo:
            here = todo.pop()
            nexts = [r.target for r in self.of(here) if r.standing and r.type == REFINES and r.source == here]
            for there in [*nexts, *((extra or {}).get(here, ()))]:
                if there == goal:
                    return True
                if there not in seen:
                    seen.add(there)
                    todo.append(there)
        return False

    def values(self) -> list[Relation]:
        return sorted(self.by_id.values(), key=lambda r: r.n)
