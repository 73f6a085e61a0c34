"""The lifecycle half of the claims store: observe, verify, dispute and supersede a claim (:class:`MoveOps`,
a part of :class:`~kbflow.claims.store.Claims`).

Each move reads the claim's status under the store's write lock, checks the
move (:mod:`kbflow.claims.lifecycle`) and writes its event: applied, or
refused with the rule it broke (a refused attempt is history too, and its
error is raised once it is written).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kbflow.claims import lifecycle as L
from kbflow.claims import model as M
from kbflow.claims.events import APPLIED, REFUSED, PendingEvent
from kbflow.claims.model import Actor, Claim, Evidence
from kbflow.claims.relating import check_because
from kbflow.errors import ClaimError, ClaimTransitionError

if TYPE_CHECKING:
    from kbflow.claims.log import EventLog
    from kbflow.claims.relations import Relation

__all__ = ["MoveOps"]


class MoveOps:
    """A claim's moves along its lifecycle (mixed into :class:`~kbflow.claims.store.Claims`)."""

    _log: EventLog
    actor: Actor

    if TYPE_CHECKING:  # the store's own (and its RelationOps'), declared for the type checker only

        def _claim(self, claim_id: str) -> Claim: ...

        def relation(self, relation_id: str) -> Relation: ...

    def _transition(
        self,
        claim_id: str,
        to: str,
        event: str,
        *,
        by: Actor | tuple[str, str] | str | None,
        reason: str | None,
        evidence: Sequence[Evidence | Any] = (),
        confidence: float | None = None,
        expect: str | None = None,
        check: Callable[[Claim, tuple[Evidence, ...], Actor], None] | None = None,
    ) -> Claim:
        actor = Actor.coerce(by) if by is not None else self.actor
        added = tuple(Evidence.coerce(e) for e in evidence)
        L.check_reason(reason)
        if confidence is not None:
            confidence = L.check_confidence(confidence)
        self._log.refresh()
        self._claim(claim_id)  # unknown ids fail before anything is written

        def plan() -> list[PendingEvent]:
            claim = self._claim(claim_id)
            error: Exception | None = None
            try:
                L.check_move(claim_id, claim, to, added, confidence, expect=expect, via_supersede=event == "supersede")
                if check is not None:
                    check(claim, added, actor)
            except ClaimTransitionError as exc:
                error = exc
            data: dict[str, Any] = {"confidence": confidence} if confidence is not None and error is None else {}
            if error is not None:
                data["refused"] = str(error)
            return [
                PendingEvent(
                    claim_id,
                    event,
                    REFUSED if error else APPLIED,
                    claim.status,
                    to,
                    actor,
                    reason,
                    () if error else added,
                    data,
                    error,
                )
            ]

        return self._log.commit(plan)[0]

    def observe(
        self,
        claim_id: str,
        evidence: Sequence[Evidence | Any],
        *,
        by: Actor | tuple[str, str] | str | None = None,
        reason: str | None = None,
    ) -> Claim:
        """A hypothesis seen to hold: ``hypothesis -> observed``, with the evidence (not a model's inference)."""
        added = tuple(Evidence.coerce(e) for e in evidence)
        if not L.has_direct_evidence(added):
            raise ClaimError(f"claim {claim_id}: observing needs evidence beyond a model's inference")
        return self._transition(claim_id, M.OBSERVED, "observe", by=by, reason=reason, evidence=added)

    def verify(
        self,
        claim_id: str,
        *,
        by: Actor | tuple[str, str] | str | None = None,
        reason: str | None = None,
        evidence: Sequence[Evidence | Any] = (),
        confidence: float | None = None,
        expect: str | None = None,
    ) -> Claim:
        """Confirm a claim: ``observed | inferred | disputed -> verified``.

        A person (actor type ``user``) vouches by verifying; any other actor
        needs evidence beyond a model's inference, on the claim or added here.
        ``expect``: refuse unless the claim is still in that status.
        """

        def vouched(claim: Claim, added: tuple[Evidence, ...], actor: Actor) -> None:
            L.check_vouched(claim_id, claim, added, actor)

        return self._transition(
            claim_id,
            M.VERIFIED,
            "verify",
            by=by,
            reason=reason,
            evidence=evidence,
            confidence=confidence,
            expect=expect,
            check=vouched,
        )

    def dispute(
        self,
        claim_id: str,
        *,
        reason: str,
        evidence: Sequence[Evidence | Any] = (),
        by: Actor | tuple[str, str] | str | None = None,
        expect: str | None = None,
    ) -> Claim:
        """Challenge a claim: ``hypothesis | inferred | observed | verified -> disputed``, with a reason."""
        if not isinstance(reason, str) or not reason.strip():
            raise ClaimError(f"claim {claim_id}: a dispute needs a reason")
        return self._transition(claim_id, M.DISPUTED, "dispute", by=by, reason=reason, evidence=evidence, expect=expect)

    def supersede(
        self,
        claim_id: str,
        new_id: str,
        *,
        by: Actor | tuple[str, str] | str | None = None,
        reason: str | None = None,
        because: str | None = None,
    ) -> Claim:
        """Replace claim ``claim_id`` by the (already learned) claim ``new_id``: the old one becomes
        ``superseded`` and points at the new one, which records what it supersedes. ``because``: the id of
        the relation between them that led to it (a confirmed ``contradicts``, say), kept with the event."""
        if claim_id == new_id:
            raise ClaimError(f"claim {claim_id} cannot supersede itself")
        actor = Actor.coerce(by) if by is not None else self.actor
        self._log.refresh()
        self._claim(claim_id)
        self._claim(new_id)
        link = {"because": because} if because is not None else {}
        if because is not None:
            check_because(self.relation(because), claim_id, new_id)

        def plan() -> list[PendingEvent]:
            old, new = self._claim(claim_id), self._claim(new_id)
            error: Exception | None = None
            try:
                L.check_transition(claim_id, old.status, M.SUPERSEDED, via_supersede=True)
                L.check_successor(new_id, new)
            except ClaimTransitionError as exc:
                error = exc
            if error is not None:
                data = {"superseded_by": new_id, **link, "refused": str(error)}
                return [
                    PendingEvent(
                        claim_id, "supersede", REFUSED, old.status, M.SUPERSEDED, actor, reason, (), data, error
                    )
                ]
            return [
                PendingEvent(
                    claim_id,
                    "supersede",
                    APPLIED,
                    old.status,
                    M.SUPERSEDED,
                    actor,
                    reason,
                    (),
                    {"superseded_by": new_id, **link},
                ),
                PendingEvent(
                    new_id, "supersedes", APPLIED, new.status, None, actor, reason, (), {"supersedes": claim_id}
                ),
            ]

        return self._log.commit(plan)[0]
