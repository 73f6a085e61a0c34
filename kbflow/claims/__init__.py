"""Claims: what agents and analysts learn from the corpus, kept with evidence, lifecycle and history.

>>> from kbflow import Claims, Evidence                          # doctest: +SKIP
>>> claims = Claims.open("data/lake")                            # doctest: +SKIP
>>> hit = Retriever.open("data/lake").search("how are ranks fused")[0]   # doctest: +SKIP
>>> cid = claims.learn("Ranks are fused with RRF at k=60", evidence=[Evidence.from_hit(hit)])  # doctest: +SKIP
>>> claims.verify(cid, by=("user", "ana"))                       # doctest: +SKIP
>>> claims.recall("how are rankings combined", k=5)             # doctest: +SKIP

- :mod:`kbflow.claims.model`: :class:`Claim`, :class:`Evidence` (plain values);
- :mod:`kbflow.claims.lifecycle`: the rules every field, piece of evidence and move obeys (pure);
- :mod:`kbflow.claims.events`: a claim's events and how they fold into its state (pure);
- :mod:`kbflow.claims.store`: :class:`Claims`, the facade: opening, learning and queries, with its two
  parts :mod:`kbflow.claims.moves` (observe, verify, dispute, supersede) and
  :mod:`kbflow.claims.relating` (relations between claims, and conflicts);
- :mod:`kbflow.claims.relations`: relations' values and rules; :mod:`kbflow.claims.conflicts`: candidate
  contradictions, from :mod:`kbflow.claims.facts` (subject, attribute, value read from a claim);
- :mod:`kbflow.claims.periods`: valid time read from words; :mod:`kbflow.claims.timeline`: record time,
  replayed from the log;
- :mod:`kbflow.claims.log`: the event log (commit, sync, repair, audit);
- :mod:`kbflow.claims.recall`: the index kept in step with the log, and recall
  (:mod:`kbflow.claims.index`: the in-memory hybrid index over claim texts);
- :mod:`kbflow.claims.evidence`: stale-evidence detection;
- :mod:`kbflow.claims.tables`: where the tables live (the lake, or memory);
- :mod:`kbflow.cli.claims`: ``kbflow claims ...``.

Names load on first use, so ``kbflow --help`` imports none of this.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_MODEL = ("ACTIVE", "EVIDENCE_KINDS", "STATUSES", "Actor", "Claim", "Evidence", "StaleEvidence")
_LIFECYCLE = ("TRANSITIONS", "check_transition")
_STORE = ("ClaimEvent", "ClaimHit", "ClaimHits", "Claims", "EvidenceReport")
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


def __getattr__(name: str) -> Any:
    module = (
        "kbflow.claims.lifecycle"
        if name in _LIFECYCLE
        else "kbflow.claims.model"
        if name in _MODEL
        else "kbflow.claims.store"
        if name in _STORE
        else "kbflow.claims.null"
        if name == "NullClaims"
        else None
    )
    if module is None:
        raise AttributeError(f"module 'kbflow.claims' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from kbflow.claims.lifecycle import TRANSITIONS, check_transition
    from kbflow.claims.model import ACTIVE, EVIDENCE_KINDS, STATUSES, Actor, Claim, Evidence, StaleEvidence
    from kbflow.claims.null import NullClaims
    from kbflow.claims.store import ClaimEvent, ClaimHit, ClaimHits, Claims, EvidenceReport
