"""The relation half of the claims store: relate, confirm, reject and unrelate claims, list relations and
conflicts (:class:`RelationOps`, a part of :class:`~kbflow.claims.store.Claims`).

Each operation checks its rules inside the store's write lock
(:mod:`kbflow.claims.relations`) and writes one event under the relation's
id. An attempt that breaks a rule (a claim that does not exist, a claim
related to itself, claims no one scope sees, a ``refines`` cycle, the same
relation twice) is refused: nothing is applied, the refused attempt is an
event of the relation's history and a row of the audit, and the error is
raised. No relation moves a claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbflow.claims import lifecycle as L
from kbflow.claims import model as M
from kbflow.claims.conflicts import Conflict, find_conflicts
from kbflow.claims.events import APPLIED, REFUSED, PendingEvent
from kbflow.claims.model import Actor, Evidence
from kbflow.claims.recall import claim_filter, visible_scopes
from kbflow.claims.relations import (
    CONFIRMED,
    CONTRADICTS,
    PROPOSED,
    REFINES,
    REJECTED,
    RELATION_STATUSES,
    RELATION_TYPES,
    WITHDRAWN,
    Relation,
    RelationStates,
    check_relation_move,
    new_relation_id,
    relation_scope,
)
from kbflow.errors import ClaimError, NotFoundError, QueryError
from kbflow.records import scopes

if TYPE_CHECKING:
    from kbflow.claims.log import EventLog

__all__ = ["RelationOps", "check_because"]

#: relation types that read the same both ways (``a contradicts b`` is ``b contradicts a``)
SYMMETRIC = (CONTRADICTS,)


class RelationOps:
    """Relations between a store's claims (mixed into :class:`~kbflow.claims.store.Claims`)."""

    _log: EventLog
    actor: Actor

    def _who(self, by: Actor | tuple[str, str] | str | None) -> Actor:
        return Actor.coerce(by) if by is not None else self.actor

    def relation(self, relation_id: str) -> Relation:
        """A relation's current state (:class:`~kbflow.errors.NotFoundError` if unknown)."""
        self._log.refresh()
        rel = self._log.relations().get(relation_id)
        if rel is None:
            raise NotFoundError(f"no relation {relation_id!r} in this store")
        return rel

    def relate(
        self,
        source: str,
        type: str,
        target: str,
        *,
        evidence: Sequence[Evidence | Any] = (),
        by: Actor | tuple[str, str] | str | None = None,
        reason: str | None = None,
    ) -> str:
        """Propose that claim ``source`` *entails*, *contradicts*, *refines* or is *derived_from* claim
        ``target``; returns the relation's id. It starts ``proposed``; someone confirms or rejects it.

        ``evidence``: why (as for claims); an agent or a tool must give some, a person may rest on the
        claims' own. Refused, and recorded as a refused attempt, when a claim does not exist, the two are one
        claim, no one scope sees both, it would close a cycle of ``refines``, or it stands already.
        """
        item = {"source": source, "type": type, "target": target, "evidence": evidence, "by": by, "reason": reason}
        return self.relate_many([item])[0]

    def relate_many(self, items: Iterable[Mapping[str, Any]]) -> list[str]:
        """Propose many relations in one write (each a mapping of :meth:`relate`'s arguments: ``source``,
        ``type``, ``target``, ``evidence``, ``by``, ``reason``); returns their ids. Each is checked as
        :meth:`relate` checks it, against the store and the relations before it in ``items``; a refused one
        is recorded and its error raised once all are written."""
        checked = [self._checked_relation(item) for item in items]
        if not checked:
            return []
        self._log.refresh()
        relations = self._log.relations()

        def plan() -> list[PendingEvent]:
            batch = _Batch(relations)
            return [self._relate_event(relation_id, item, batch) for relation_id, item in checked]

        self._log.commit(plan)
        return [relation_id for relation_id, _ in checked]

    def _checked_relation(self, item: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """A relation's arguments checked before the lock is taken (type, reason, evidence), with a new id."""
        unknown = set(item) - {"source", "type", "target", "evidence", "by", "reason"}
        if unknown:
            raise ClaimError(f"unknown relation fields {sorted(unknown)}")
        type_ = item.get("type")
        if type_ not in RELATION_TYPES:
            raise ClaimError(f"relation type must be one of {', '.join(RELATION_TYPES)}, got {type_!r}")
        actor = self._who(item.get("by"))
        added = tuple(Evidence.coerce(e) for e in item.get("evidence") or ())
        L.check_reason(item.get("reason"))
        label = f"relation {item.get('source')} {type_} {item.get('target')}"
        L.check_evidence_for(label, added, M.HYPOTHESIS, 0.5, required=actor.type != "user")
        return new_relation_id(), {**item, "by": actor, "evidence": added, "label": label}

    def _relate_event(self, relation_id: str, item: Mapping[str, Any], batch: _Batch) -> PendingEvent:
        """The ``relate`` event of one checked relation: applied, or refused with the rule it broke."""
        source, type_, target, label = item["source"], item["type"], item["target"], item["label"]
        a, b = self._log.state.get(source), self._log.state.get(target)
        data: dict[str, Any] = {"source": source, "type": type_, "target": target}
        error: ClaimError | None = None
        try:
            for cid, claim in ((source, a), (target, b)):
                if claim is None:
                    raise ClaimError(f"{label}: no claim {cid!r} in this store")
            assert a is not None and b is not None
            if source == target:
                raise ClaimError(f"{label}: a claim cannot be related to itself")
            data["scope"] = relation_scope(a.scope, b.scope)
            same = batch.standing(relation_id, source, type_, target)
            if same is not None:
                raise ClaimError(f"{label}: already {same}")
            if type_ == REFINES and batch.refines_path(target, source):
                raise ClaimError(f"{label}: {target} already refines {source}; refines cannot form a cycle")
            batch.add(relation_id, source, type_, target)
        except ClaimError as exc:
            error = exc
            data["scope"] = data.get("scope") or (a.scope if a is not None else scopes.GLOBAL)
            data["refused"] = str(exc)
        outcome, to = (REFUSED, None) if error else (APPLIED, PROPOSED)
        kept = () if error else item["evidence"]
        return PendingEvent(relation_id, "relate", outcome, None, to, item["by"], item.get("reason"), kept, data, error)

    def _move(
        self,
        relation_id: str,
        to: str,
        event: str,
        by: Actor | tuple[str, str] | str | None,
        reason: str | None,
        evidence: Sequence[Evidence | Any] = (),
    ) -> Relation:
        actor = self._who(by)
        added = tuple(Evidence.coerce(e) for e in evidence)
        L.check_reason(reason)
        L.check_evidence_for(f"relation {relation_id}", added, M.HYPOTHESIS, 0.5, required=False)
        self.relation(relation_id)  # unknown ids fail before anything is written
        relations = self._log.relations()

        def plan() -> list[PendingEvent]:
            rel = relations.by_id[relation_id]
            error: ClaimError | None = None
            try:
                check_relation_move(rel, to, actor)
            except ClaimError as exc:
                error = exc
            data = {"refused": str(error)} if error else {}
            outcome, kept = (REFUSED, ()) if error else (APPLIED, added)
            return [PendingEvent(relation_id, event, outcome, rel.status, to, actor, reason, kept, data, error)]

        self._log.commit(plan)
        return relations.by_id[relation_id]

    def confirm_relation(
        self,
        relation_id: str,
        *,
        by: Actor | tuple[str, str] | str | None = None,
        reason: str | None = None,
        evidence: Sequence[Evidence | Any] = (),
    ) -> Relation:
        """Confirm a proposed (or rejected) relation. Confirming a ``contradicts`` is a person's act (actor
        type ``user``); it changes neither claim: supersede or dispute one if that is what you decide."""
        return self._move(relation_id, CONFIRMED, "confirm", by, reason, evidence)

    def reject_relation(
        self, relation_id: str, *, by: Actor | tuple[str, str] | str | None = None, reason: str | None = None
    ) -> Relation:
        """Reject a proposed (or confirmed) relation: it stays in the history; a rejected ``contradicts`` is
        not listed by :meth:`conflicts` again."""
        return self._move(relation_id, REJECTED, "reject", by, reason)

    def unrelate(
        self, relation_id: str, *, by: Actor | tuple[str, str] | str | None = None, reason: str | None = None
    ) -> Relation:
        """Withdraw a relation (final; its history stays)."""
        return self._move(relation_id, WITHDRAWN, "unrelate", by, reason)

    def relations(
        self,
        claim_id: str | None = None,
        *,
        types: Iterable[str] | None = None,
        statuses: Iterable[str] | None = (PROPOSED, CONFIRMED),
        scope: str | None = None,
    ) -> list[Relation]:
        """The relations of ``claim_id`` (``None``: all), of ``types``, in ``statuses`` (default: those that
        stand; ``None``: all), visible in ``scope``, oldest first."""
        wanted_types = tuple(types) if types is not None else None
        wanted = tuple(statuses) if statuses is not None else None
        for value, known, what in ((wanted_types, RELATION_TYPES, "type"), (wanted, RELATION_STATUSES, "status")):
            bad = [v for v in value or () if v not in known]
            if bad:
                raise QueryError(f"unknown relation {what} {bad[0]!r}; they are {', '.join(known)}")
        visible = visible_scopes(scope)
        self._log.refresh()
        states = self._log.relations()
        with self._log.mutex:  # a writer's fold changes the states
            found = states.of(claim_id) if claim_id is not None else states.values()
        return [
            r
            for r in found
            if (wanted_types is None or r.type in wanted_types)
            and (wanted is None or r.status in wanted)
            and (visible is None or r.scope in visible)
        ]

    def conflicts(self, *, scope: str | None = None, confirmed: bool | None = None, visible: Any = None) -> list:
        """Candidate contradictions for a person to decide (:mod:`kbflow.claims.conflicts`): claims visible in
        ``scope`` that state different values of one subject's attribute over overlapping valid time, each
        with both claims and their evidence. ``confirmed``: only those a person confirmed (``True``), only the
        undecided (``False``); ``visible``: a further test of each claim (a key's reach). Changes nothing."""
        keep = claim_filter(None, scope, None, None)
        self._log.refresh()
        with self._log.mutex:  # a writer's fold changes the states
            relations = self._log.relations().values()
            if confirmed:  # only the claims a person said contradict: no need to read every claim's words
                ids = {cid for r in relations if r.type == CONTRADICTS for cid in (r.source, r.target)}
                found_claims = [self._log.state.get(cid) for cid in ids]
                pool = [c for c in found_claims if c is not None]
            else:
                pool = self._log.state.values()
            claims = [c for c in pool if keep(c) and (visible is None or visible(c))]
        found: list[Conflict] = find_conflicts(claims, relations)
        return [c for c in found if confirmed is None or c.confirmed == confirmed]


class _Batch:
    """The relations standing in the store, and those a batch of :meth:`RelationOps.relate_many` proposed before
    the one being checked (for duplicates and ``refines`` cycles)."""

    def __init__(self, relations: RelationStates) -> None:
        self.relations = relations
        self.proposed: dict[tuple[str, str, str], str] = {}
        self.refines: dict[str, list[str]] = {}

    def standing(self, relation_id: str, source: str, type_: str, target: str) -> str | None:
        """How the same relation stands already (``"proposed as rl_..."``), or ``None``."""
        keys = [(source, type_, target)] + ([(target, type_, source)] if type_ in SYMMETRIC else [])
        for key in keys:
            if key in self.proposed:
                return f"proposed as {self.proposed[key]}"
            same = self.relations.standing(*key)
            if same is not None:
                return f"{same.status} as {same.relation_id}"
        return None

    def refines_path(self, start: str, goal: str) -> bool:
        return self.relations.refines_path(start, goal, self.refines)

    def add(self, relation_id: str, source: str, type_: str, target: str) -> None:
        self.proposed[(source, type_, target)] = relation_id
        if type_ == REFINES:
            self.refines.setdefault(source, []).append(target)


def check_because(relation: Relation, old: str, new: str) -> None:
    """A supersession ``because`` of a relation: the relation joins the two claims and stands."""
    if {relation.source, relation.target} != {old, new} or relation.status not in (PROPOSED, CONFIRMED):
        raise ClaimError(
            f"relation {relation.relation_id} ({relation.source} {relation.type} {relation.target}, "
            f"{relation.status}) does not join {old} and {new} as a standing relation"
        )
