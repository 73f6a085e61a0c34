"""Claims: what agents and analysts learn from the corpus, kept with evidence, lifecycle and history.

>>> from kbflow import Claims, Evidence                          # doctest: +SKIP
>>> claims = Claims.open("data/lake")                            # doctest: +SKIP
>>> hit = Retriever.open("data/lake").search("how are ranks fused")[0]   # doctest: +SKIP
>>> cid = claims.learn("Ranks are fused with RRF at k=60", evidence=[Evidence.from_hit(hit)])  # doctest: +SKIP
>>> claims.verify(cid, by=("user", "ana"))                       # doctest: +SKIP
>>> claims.recall("how are rankings combined", k=5)             # doctest: +SKIP

- :mod:`kbflow.claims.model`: :class:`Claim`, :class:`Evidence`, the lifecycle (pure);
- :mod:`kbflow.claims.store`: :class:`Claims`, the event-sourced store;
- :mod:`kbflow.claims.index`: hybrid recall over claim texts;
- :mod:`kbflow.claims.evidence`: stale-evidence detection;
- :mod:`kbflow.claims.tables`: where the tables live (the lake, or memory).
"""

from kbflow.claims.model import (
    ACTIVE,
    EVIDENCE_KINDS,
    STATUSES,
    TRANSITIONS,
    Actor,
    Claim,
    Evidence,
    StaleEvidence,
    check_transition,
)
from kbflow.claims.store import ClaimEvent, ClaimHit, ClaimHits, Claims, EvidenceReport, NullClaims

__all__ = [
    "ACTIVE",
    "EVIDENCE_KINDS",
    "STATUSES",
    "TRANSITIONS",
    "Actor",
    "Claim",
    "ClaimEvent",
    "ClaimHit",
    "ClaimHits",
    "Claims",
    "Evidence",
    "EvidenceReport",
    "NullClaims",
    "StaleEvidence",
    "check_transition",
]
