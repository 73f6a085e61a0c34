"""The claims lifecycle: the rules a claim's fields, evidence and every move of its status obey (pure functions,
no storage).

A status moves only along :data:`TRANSITIONS`. Evidence is required, at most
:data:`~kbflow.claims.model.MAX_EVIDENCE` pieces, and a model's inference
backs only a hypothesis or an inferred claim. A claim resting on a model's
inference alone is verified only by a person; a claim is superseded only by
one that stands. :class:`~kbflow.claims.store.Claims` applies these rules
inside each write (:func:`check_move`), so a refused move is recorded with
the rule it broke.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbflow.claims.model import (
    DISPUTED,
    HYPOTHESIS,
    INFERRED,
    INITIAL,
    MAX_EVIDENCE,
    MAX_TEXT,
    MODEL_INFERENCE,
    OBSERVED,
    STATUSES,
    SUPERSEDED,
    VERIFIED,
    Actor,
    Claim,
    Evidence,
    check_whole,
)
from kbflow.errors import ClaimError, ClaimTransitionError, ConfigError
from kbflow.records import scopes

__all__ = [
    "TRANSITIONS",
    "check_confidence",
    "check_evidence_for",
    "check_fields",
    "check_move",
    "check_reason",
    "check_successor",
    "check_transition",
    "check_vouched",
    "has_direct_evidence",
]

#: status -> the statuses it may move to. ``superseded`` is reached only through ``supersede(old, new)``.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    HYPOTHESIS: (OBSERVED, DISPUTED),
    INFERRED: (VERIFIED, DISPUTED),
    OBSERVED: (VERIFIED, DISPUTED, SUPERSEDED),
    VERIFIED: (DISPUTED, SUPERSEDED),
    DISPUTED: (VERIFIED, SUPERSEDED),
    SUPERSEDED: (),
}


def check_transition(claim_id: str, current: str, wanted: str, *, via_supersede: bool = False) -> None:
    """Raise :class:`ClaimTransitionError` unless a claim in ``current`` may move to ``wanted``.

    ``superseded`` is allowed only ``via_supersede`` (:meth:`Claims.supersede`).
    """
    allowed = TRANSITIONS.get(current, ())
    if wanted not in STATUSES:
        raise ClaimError(f"claim {claim_id}: unknown status {wanted!r}; statuses are {', '.join(STATUSES)}")
    if wanted == SUPERSEDED and not via_supersede and wanted in allowed:
        raise ClaimTransitionError(
            f"claim {claim_id}: {current} -> superseded only through supersede(old, new), which names the "
            "claim that replaces it",
            claim_id,
            current,
            wanted,
            allowed,
        )
    if wanted not in allowed:
        shown = ", ".join(allowed) if allowed else "none (superseded is final)"
        raise ClaimTransitionError(
            f"claim {claim_id}: cannot move from {current} to {wanted}; from {current} a claim may move to: {shown}",
            claim_id,
            current,
            wanted,
            allowed,
        )


def check_confidence(confidence: Any) -> float:
    """``confidence`` as a float if it is a number in 0..1, else a :class:`ClaimError` saying so."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        raise ClaimError(f"confidence must be a number in 0..1, got {confidence!r}")  # nan fails the comparison too
    return float(confidence)


def check_fields(
    text: str, confidence: float, status: str, scope: str, domain: str | None, tags: Iterable[str]
) -> tuple[str, float, str, str | None, tuple[str, ...]]:
    """The claim's fields checked and normalized (raises :class:`ClaimError` naming the field)."""
    if not isinstance(text, str) or not text.strip():
        raise ClaimError("a claim needs a non-empty text")
    if len(text) > MAX_TEXT:
        raise ClaimError(f"a claim's text is at most {MAX_TEXT:,} characters, got {len(text):,}; state one fact")
    confidence = check_confidence(confidence)
    if status not in INITIAL:
        raise ClaimError(
            f"a claim is learned as {', '.join(INITIAL)}, not {status!r}; verified, disputed and superseded "
            "are reached through verify(), dispute() and supersede()"
        )
    try:
        scope = scopes.normalize(scope)
    except ConfigError as exc:
        raise ClaimError(str(exc)) from None
    if domain is not None and (not isinstance(domain, str) or not domain.strip() or len(domain) > 200):
        raise ClaimError(f"domain must be a non-empty string of at most 200 characters, got {domain!r}")
    tags = tuple(dict.fromkeys(tags or ()))
    if any(not isinstance(t, str) or not t.strip() or len(t) > 100 for t in tags) or len(tags) > 50:
        raise ClaimError("tags are at most 50 non-empty strings of at most 100 characters each")
    check_whole("the claim", text, domain, *tags)
    return text.strip(), float(confidence), scope, domain, tags


def check_reason(reason: Any) -> None:
    """Raise :class:`ClaimError` unless ``reason`` is ``None`` or a string of at most :data:`MAX_TEXT` characters."""
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_TEXT):
        raise ClaimError(f"reason must be a string of at most {MAX_TEXT:,} characters")
    check_whole("the reason", reason)


def check_evidence_for(
    claim: str, evidence: Sequence[Evidence], status: str, confidence: float, *, required: bool = True
) -> None:
    """Evidence rules: at least one (``required``), at most :data:`MAX_EVIDENCE`, and ``model_inference``
    only for a ``hypothesis`` or ``inferred`` claim with a confidence below 1. ``claim`` names the claim in errors."""
    if required and not evidence:
        raise ClaimError(
            f"claim {claim}: a claim needs at least one piece of evidence (a citation, url, tool_output, "
            "or model_inference for a hypothesis); none was given"
        )
    if len(evidence) > MAX_EVIDENCE:
        raise ClaimError(f"claim {claim}: at most {MAX_EVIDENCE} pieces of evidence, got {len(evidence)}")
    if any(e.kind == MODEL_INFERENCE for e in evidence):
        if status not in (HYPOTHESIS, INFERRED):
            raise ClaimError(
                f"claim {claim}: model_inference evidence is allowed only for a hypothesis or inferred claim, "
                f"not {status}; cite the corpus (a citation), a url or a tool_output instead"
            )
        if confidence >= 1:
            raise ClaimError(
                f"claim {claim}: a claim resting on model_inference cannot have confidence 1; give one below 1"
            )


def has_direct_evidence(evidence: Iterable[Evidence]) -> bool:
    """Whether any evidence is more than a model's inference."""
    return any(e.kind != MODEL_INFERENCE for e in evidence)


def check_move(
    claim_id: str,
    claim: Claim,
    to: str,
    added: tuple[Evidence, ...],
    confidence: float | None,
    *,
    expect: str | None = None,
    via_supersede: bool = False,
) -> None:
    """Raise unless ``claim`` may move to ``to`` with the evidence ``added``: the status it was expected in, an
    allowed transition, the evidence rules for evidence as given (a hypothesis learned from a model's inference
    may be observed later with evidence of its own), and the cap on evidence."""
    if expect is not None and claim.status != expect:
        raise ClaimTransitionError(
            f"claim {claim_id}: expected status {expect}, found {claim.status} (another writer changed it)",
            claim_id,
            claim.status,
            to,
            TRANSITIONS[claim.status],
        )
    check_transition(claim_id, claim.status, to, via_supersede=via_supersede)
    check_evidence_for(claim_id, added, to, confidence if confidence is not None else claim.confidence, required=False)
    if len(claim.evidence) + len(added) > MAX_EVIDENCE:
        raise ClaimError(f"claim {claim_id}: at most {MAX_EVIDENCE} pieces of evidence")


def check_vouched(claim_id: str, claim: Claim, added: tuple[Evidence, ...], actor: Actor) -> None:
    """A person (actor type ``user``) vouches by verifying; any other actor needs evidence beyond a model's
    inference, on the claim or added with the move."""
    if actor.type != "user" and not has_direct_evidence(claim.evidence + added):
        raise ClaimTransitionError(
            f"claim {claim_id}: only a person (actor type user) may verify a claim resting on model "
            "inference alone; add a citation, url or tool_output",
            claim_id,
            claim.status,
            VERIFIED,
            TRANSITIONS[claim.status],
        )


def check_successor(new_id: str, new: Claim) -> None:
    """A claim is superseded only by one that stands (neither superseded nor disputed)."""
    if new.status in (SUPERSEDED, DISPUTED):
        raise ClaimTransitionError(
            f"claim {new_id} is {new.status}; a claim is superseded only by one that stands",
            new_id,
            new.status,
            new.status,
            TRANSITIONS[new.status],
        )
