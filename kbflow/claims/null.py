"""A claims store that keeps nothing (``Claims.null()``): it checks what it is given as a real store does, so a
caller that turns claims off still finds its mistakes, and it answers every read as an empty store would."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbflow.claims.events import learn_event
from kbflow.claims.evidence import EvidenceReport
from kbflow.claims.model import Actor, Claim, Evidence
from kbflow.claims.recall import ClaimHits
from kbflow.errors import NotFoundError

__all__ = ["NullClaims"]


class NullClaims:
    """A claims store that checks its input and keeps nothing: ``learn`` returns a fresh id, ``recall``
    finds nothing, every other call on an id answers as for an unknown claim."""

    def __repr__(self) -> str:
        return "Claims.null()"

    def __len__(self) -> int:
        return 0

    def learn(self, text: str, evidence: Sequence[Evidence | Any], **fields: Any) -> str:
        return self.learn_many([{"text": text, "evidence": evidence, **fields}])[0]

    def learn_many(self, items: Iterable[Mapping[str, Any]]) -> list[str]:
        return [learn_event(item, Actor("system", "null")).claim_id for item in items]

    def recall(self, query: str, k: int = 5, **_: Any) -> ClaimHits:
        return ClaimHits(query=query)

    def list(self, **_: Any) -> list[Claim]:
        return []

    def _unknown(self, claim_id: str, *_: Any, **__: Any):
        raise NotFoundError(f"no claim {claim_id!r} in this store (Claims.null() keeps nothing)")

    get = history = observe = verify = dispute = supersede = _unknown
    relate = relation = confirm_relation = reject_relation = unrelate = _unknown

    def relate_many(self, items: Iterable[Mapping[str, Any]]) -> builtins.list[str]:
        for item in items:
            self._unknown(item.get("source", ""))
        return []

    def relations(self, *_: Any, **__: Any) -> builtins.list[Any]:
        return []

    def conflicts(self, **_: Any) -> builtins.list[Any]:
        return []

    def audit(self) -> builtins.list[dict[str, Any]]:
        return []

    def check_evidence(self, **_: Any) -> EvidenceReport:
        return EvidenceReport()
