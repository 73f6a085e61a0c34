"""The claims store over HTTP and MCP (``/v1/claims``, the MCP claims tools): learn, recall, read and move claims
within a key's reach; every rule is the store's own (:mod:`kbflow.claims`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kbflow.errors import ConfigError, NotFoundError, QueryError
from kbflow.records import scopes
from kbflow.service.access import require_global, scope_for
from kbflow.usage.keys import ApiKey

if TYPE_CHECKING:
    from kbflow.config import Settings
    from kbflow.lake.lake import Lake

__all__ = ["ClaimService"]


class _Core(Protocol):
    """What the claims part reads of its :class:`~kbflow.service.core.Service`."""

    lake: Lake
    settings: Settings

    def chunk_row(self, key: ApiKey | None, chunk_id: str) -> dict[str, Any]: ...


class ClaimService:
    """The claims part of a :class:`~kbflow.service.core.Service` (``service.claims``)."""

    def __init__(self, service: _Core) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._store = None

    def __call__(self):
        """``service.claims()``, as before the service had parts: :meth:`store`."""
        return self.store()

    def store(self):
        """The lake's claims store (opened once, on first use)."""
        with self._lock:
            if self._store is None:
                from kbflow.claims import Claims

                self._store = Claims.open(self.service.lake, settings=self.service.settings)
            return self._store

    @staticmethod
    def _actor(key: ApiKey | None, kind: str | None, default: str):
        """Who acts for a request: the given kind (agent, user or tool), named by the key (or ``local``)."""
        from kbflow.claims import Actor

        kind = kind or default
        if kind not in ("agent", "user", "tool"):
            raise QueryError(f"actor_type must be agent, user or tool, got {kind!r}")
        return Actor(kind, (key.name or key.key_id) if key is not None else "local")

    def _evidence(self, key: ApiKey | None, items: Sequence[Mapping[str, Any]] | None) -> list:
        """Evidence from request JSON; a citation names only its chunk (``{"kind": "citation", "ref": id}``) and is
        read from the lake, within the key's scope."""
        from kbflow.claims import Evidence

        out = []
        for item in items or ():
            if not isinstance(item, Mapping):
                raise QueryError("each evidence item is an object {kind, ref, text?}")
            if item.get("kind") == "citation":
                chunk_id = item.get("ref") or item.get("chunk_id") or ""
                out.append(Evidence.from_row(self.service.chunk_row(key, chunk_id)))
            else:
                out.append(Evidence.from_dict({k: v for k, v in item.items() if k in ("kind", "ref", "text")}))
        return out

    @staticmethod
    def _within_reach(key: ApiKey | None, found: Any, what: str, ident: str, write: bool) -> Any:
        """``found`` (a claim or a relation) if the key sees its scope (else not found, as if it were not
        there), and may write it when ``write``."""
        if key is not None:
            if not key.can_see(found.scope):
                raise NotFoundError(f"no {what} {ident!r} in this store")
            if write:
                key.require(found.scope, write=True)
        return found

    def _visible_claim(self, key: ApiKey | None, claim_id: str, *, write: bool = False):
        return self._within_reach(key, self.store().get(claim_id), "claim", claim_id, write)

    def learn(self, key: ApiKey | None, body: Mapping[str, Any], *, actor_default: str = "user") -> dict[str, Any]:
        """Learn a claim (``{"text", "evidence", "scope"?, "status"?, "confidence"?, "domain"?, "tags"?,
        "valid_from"?, "valid_to"?}``); an editor of the claim's scope only."""
        scope = body.get("scope") or (key.scope if key is not None else scopes.GLOBAL)
        if key is not None:
            try:
                key.require(scopes.normalize(scope), write=True)
            except ConfigError as exc:
                raise QueryError(str(exc)) from None
        store = self.store()
        claim_id = store.learn(
            body.get("text"),
            self._evidence(key, body.get("evidence")),
            scope=scope,
            actor=self._actor(key, body.get("actor_type"), actor_default),
            confidence=body.get("confidence"),
            status=body.get("status"),
            domain=body.get("domain"),
            tags=body.get("tags") or (),
            valid_from=body.get("valid_from"),
            valid_to=body.get("valid_to"),
        )
        return store.get(claim_id).to_dict()

    def recall(
        self,
        key: ApiKey | None,
        query: str | None,
        k: int = 5,
        *,
        scope: str | None = None,
        statuses: Sequence[str] | None = None,
        domain: str | None = None,
        tags: Sequence[str] | None = None,
        all_statuses: bool = False,
        valid_at: str | None = None,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        """Claims matching ``query`` (or, without one, the newest ``k``) that the key may see; ``valid_at`` (a
        date): those that hold then; ``as_of`` (a timestamp): as the store believed then (a query only)."""
        from kbflow.claims import ACTIVE

        scope = scope_for(key, scope)
        chosen = None if all_statuses else (tuple(statuses) if statuses else ACTIVE)
        store = self.store()
        visible = (lambda c: key.can_see(c.scope)) if key is not None else None
        if query:
            hits = store.recall(
                query,
                k,
                scope=scope,
                statuses=chosen,
                domain=domain,
                tags=tags,
                visible=visible,
                valid_at=valid_at,
                as_of=as_of,
            )
            return {"query": query, "valid_at": valid_at, "as_of": as_of, "hits": hits.to_dicts()}
        if as_of is not None or valid_at is not None:
            raise QueryError("valid_at and as_of filter a recall: give a query (q)")
        if not 1 <= k <= 100:
            raise QueryError(f"k must be in 1..100, got {k}")
        listed = [c for c in store.list(statuses=chosen, scope=scope) if visible is None or visible(c)]
        listed = [c for c in listed if (domain is None or c.domain == domain) and (not tags or set(tags) & set(c.tags))]
        return {"query": None, "claims": [c.to_dict() for c in listed[-k:][::-1]]}

    def get(self, key: ApiKey | None, claim_id: str) -> dict[str, Any]:
        return self._visible_claim(key, claim_id).to_dict()

    def history(self, key: ApiKey | None, claim_id: str) -> dict[str, Any]:
        self._visible_claim(key, claim_id)
        return {"claim_id": claim_id, "events": [e.to_dict() for e in self.store().history(claim_id)]}

    def transition(
        self, key: ApiKey | None, claim_id: str, action: str, body: Mapping[str, Any], *, actor_default: str = "user"
    ) -> dict[str, Any]:
        """``verify``, ``dispute`` or ``supersede`` a claim (an editor of its scope only)."""
        self._visible_claim(key, claim_id, write=True)
        store = self.store()
        actor = self._actor(key, body.get("actor_type"), actor_default)
        if action == "verify":
            claim = store.verify(
                claim_id,
                by=actor,
                reason=body.get("reason"),
                evidence=self._evidence(key, body.get("evidence")),
                confidence=body.get("confidence"),
                expect=body.get("expect"),
            )
        elif action == "dispute":
            claim = store.dispute(
                claim_id,
                reason=body.get("reason"),
                evidence=self._evidence(key, body.get("evidence")),
                by=actor,
                expect=body.get("expect"),
            )
        elif action == "supersede":
            new_id = body.get("new_id")
            if not isinstance(new_id, str):
                raise QueryError("supersede needs new_id, the claim that replaces this one (learn it first)")
            self._visible_claim(key, new_id)
            because = body.get("because")
            if because is not None:
                self._visible_relation(key, because)
            claim = store.supersede(claim_id, new_id, by=actor, reason=body.get("reason"), because=because)
        else:
            raise QueryError(f"unknown claim action {action!r}; verify, dispute or supersede")
        return claim.to_dict()

    # --- relations and conflicts ---------------------------------------------------------------------
    def _visible_relation(self, key: ApiKey | None, relation_id: str, *, write: bool = False):
        return self._within_reach(key, self.store().relation(relation_id), "relation", relation_id, write)

    def relate(self, key: ApiKey | None, body: Mapping[str, Any], *, actor_default: str = "user") -> dict[str, Any]:
        """Propose a relation (``{"source", "type", "target", "evidence"?, "reason"?}``) between two claims the
        key sees; an editor of the narrower of their scopes (the relation's) only."""
        from kbflow.claims.relations import relation_scope

        source, target = body.get("source"), body.get("target")
        if not isinstance(source, str) or not isinstance(target, str):
            raise QueryError("a relation needs source and target, two claim ids")
        store = self.store()
        if key is not None:
            a, b = (self._visible_claim(key, cid) for cid in (source, target))
            joined = a.scope in scopes.visible(b.scope) or b.scope in scopes.visible(a.scope)
            # an editor of the relation's scope; of sibling scopes (refused below, and recorded), of the source's
            key.require(relation_scope(a.scope, b.scope) if joined else a.scope, write=True)
        rid = store.relate(
            source,
            body.get("type"),
            target,
            evidence=self._evidence(key, body.get("evidence")),
            by=self._actor(key, body.get("actor_type"), actor_default),
            reason=body.get("reason"),
        )
        return store.relation(rid).to_dict()

    def relation(self, key: ApiKey | None, relation_id: str) -> dict[str, Any]:
        return self._visible_relation(key, relation_id).to_dict()

    def relation_action(
        self, key: ApiKey | None, relation_id: str, action: str, body: Mapping[str, Any], *, actor_default: str = "user"
    ) -> dict[str, Any]:
        """``confirm``, ``reject`` or ``unrelate`` a relation (an editor of its scope only)."""
        self._visible_relation(key, relation_id, write=True)
        verbs = {"confirm": "confirm_relation", "reject": "reject_relation", "unrelate": "unrelate"}
        if action not in verbs:
            raise QueryError(f"unknown relation action {action!r}; confirm, reject or unrelate")
        actor = self._actor(key, body.get("actor_type"), actor_default)
        rel = getattr(self.store(), verbs[action])(relation_id, by=actor, reason=body.get("reason"))
        return rel.to_dict()

    def relations(
        self,
        key: ApiKey | None,
        claim_id: str | None = None,
        *,
        types: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        scope: str | None = None,
    ) -> dict[str, Any]:
        """The relations (of ``claim_id``) the key may see."""
        if claim_id is not None:
            self._visible_claim(key, claim_id)
        found = self.store().relations(
            claim_id, types=types or None, statuses=statuses or ("proposed", "confirmed"), scope=scope_for(key, scope)
        )
        return {"relations": [r.to_dict() for r in found if key is None or key.can_see(r.scope)]}

    def conflicts(
        self, key: ApiKey | None, *, scope: str | None = None, confirmed: bool | None = None
    ) -> dict[str, Any]:
        """Candidate contradictions among the claims the key may see."""
        visible = (lambda c: key.can_see(c.scope)) if key is not None else None
        found = self.store().conflicts(scope=scope_for(key, scope), confirmed=confirmed, visible=visible)
        return {"conflicts": [c.to_dict() for c in found]}

    def check(self, key: ApiKey | None) -> dict[str, Any]:
        """Check every claim's citations (:meth:`Claims.check_evidence`); it spans every scope: a global editor."""
        require_global(key, "checking claims", editor=True)
        return self.store().check_evidence().to_dict()
