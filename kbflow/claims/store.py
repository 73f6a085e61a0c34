"""The claims store: learn, recall, verify, dispute, supersede, with every change an event of history.

:class:`Claims` is the facade: the lifecycle (each operation checks its
rules, then writes its events) and the queries. Two parts do the work below
it, one job each:

- the event log (:mod:`kbflow.claims.log`): events are the source of truth,
  claims their fold; commit, sync with other writers, repair of a write cut
  off between its commits, audit rows;
- recall (:mod:`kbflow.claims.recall`): the in-memory index the log keeps in
  step, and the hybrid search over it.

Writes hold the store's write lock while they read the current status, check
the transition and commit, so two writers transitioning the same claim are
serialized: the first wins, the second's attempt is refused against the
status the first left, and both attempts are in the claim's history (a
refused attempt is an event too, with ``outcome = "refused"``).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from kbflow.claims import model as M
from kbflow.claims.events import ClaimEvent, learn_event
from kbflow.claims.evidence import EvidenceReport, find_stale, stale_events
from kbflow.claims.log import EventLog
from kbflow.claims.model import Actor, Claim, Evidence
from kbflow.claims.moves import MoveOps
from kbflow.claims.periods import parse_date
from kbflow.claims.recall import ClaimHit, ClaimHits, ClaimRecall, claim_filter, visible_scopes
from kbflow.claims.relating import RelationOps
from kbflow.claims.relations import is_relation_id
from kbflow.claims.tables import LakeTables, MemoryTables, Tables
from kbflow.claims.timeline import as_timestamp, replay_hits
from kbflow.config import MAX_K as MAX_SEARCH_K
from kbflow.config import Settings
from kbflow.errors import ClaimError, NotFoundError, QueryError
from kbflow.lake.lake import Lake
from kbflow.records import scopes
from kbflow.retrieve.request import check_query

__all__ = ["ClaimEvent", "ClaimHit", "ClaimHits", "Claims", "EvidenceReport"]  # the package's names

if TYPE_CHECKING:
    from kbflow.claims.null import NullClaims

log = logging.getLogger("kbflow.claims")

#: the most claims one recall returns (the longest query is a search's, kbflow.config.MAX_QUERY_CHARS)
MAX_K = MAX_SEARCH_K


def _day(value: Any) -> date | None:
    """``valid_at`` as a date (``None``: any); a :class:`~kbflow.errors.QueryError` when it cannot be read."""
    if value is None:
        return None
    try:
        return parse_date(value, "valid_at")
    except ClaimError as exc:
        raise QueryError(str(exc)) from None


class Claims(MoveOps, RelationOps):
    """A store of claims with evidence, lifecycle and history, and relations between them (see the module docs;
    relations: :class:`~kbflow.claims.relating.RelationOps`).

    Open one with :meth:`open` (the lake's ``claims``, ``claim_events`` and
    ``claim_audit`` tables), :meth:`memory` (nothing persists: tests,
    notebooks) or :meth:`null` (does nothing: a stand-in where no store is
    configured). A store is safe to share between threads.

    Parameters
    ----------
    tables:
        Where the tables live (:mod:`kbflow.claims.tables`).
    settings:
        The model claims are embedded with for :meth:`recall` (``settings.model``
        on ``settings.backend``).
    actor:
        Who acts when a call names no actor: ``(type, id)``, ``"type:id"``;
        default the person running the process, ``("user", <login name>)``.
    lake:
        The lake :meth:`check_evidence` and :meth:`Evidence.from_chunk` read
        chunks from.
    wait:
        Seconds a write waits for another writer to finish before
        :class:`~kbflow.errors.LakeBusyError`.
    """

    def __init__(
        self,
        tables: Tables,
        settings: Settings,
        *,
        actor: Actor | tuple[str, str] | str | None = None,
        lake: Lake | None = None,
        wait: float = 30.0,
    ) -> None:
        self.tables = tables
        self.settings = settings
        self.lake = lake
        self.actor = Actor.coerce(actor)
        self.wait = wait
        self.model_id = settings.vector_space
        self._recall = ClaimRecall(settings)
        self._log = EventLog(tables, self._recall, wait)
        self._log.load()

    @property
    def audit_failures(self) -> int:
        """Audit writes that failed in this process (each claim write stood; the next open writes the rows)."""
        return self._log.audit_failures

    @property
    def embedder(self) -> Any:
        """The model claims are embedded with (loaded on first use)."""
        return self._recall.embedder

    # --- opening ------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        lake: str | Lake | None = None,
        *,
        settings: Settings | Mapping[str, Any] | None = None,
        actor: Actor | tuple[str, str] | str | None = None,
        wait: float = 30.0,
    ) -> Claims:
        """The claims store of ``lake`` (created on the first write; repaired if a write was cut off)."""
        lake = lake if isinstance(lake, Lake) else Lake(lake)
        settings = Settings.coerce(settings, lake=lake.uri)
        return cls(LakeTables(lake), settings, actor=actor, lake=lake, wait=wait)

    @classmethod
    def memory(
        cls,
        *,
        model: str | None = None,
        settings: Settings | Mapping[str, Any] | None = None,
        actor: Actor | tuple[str, str] | str | None = None,
        lake: str | Lake | None = None,
    ) -> Claims:
        """A store that lives in this process only (``model``: e.g. ``"hash:256"`` for fast tests; ``lake``:
        where :meth:`check_evidence` reads chunks)."""
        settings = Settings.coerce(settings, model=model)
        if lake is not None and not isinstance(lake, Lake):
            lake = Lake(lake, create=False)
        return cls(MemoryTables(), settings, actor=actor, lake=lake)

    @staticmethod
    def null() -> NullClaims:
        """A store that checks its input and keeps nothing (recall finds nothing)."""
        from kbflow.claims.null import NullClaims

        return NullClaims()

    def __repr__(self) -> str:
        where = self.lake.uri if isinstance(self.tables, LakeTables) and self.lake else "memory"
        return f"Claims({where!r}, claims={len(self._log.state)}, model={self.model_id!r})"

    def __len__(self) -> int:
        return len(self._log.state)

    # --- the operations -----------------------------------------------------------------------
    def _claim(self, claim_id: str) -> Claim:
        claim = self._log.state.get(claim_id)
        if claim is None:
            raise NotFoundError(f"no claim {claim_id!r} in this store")
        return claim

    def learn(
        self,
        text: str,
        evidence: Sequence[Evidence | Any],
        *,
        scope: str = scopes.GLOBAL,
        actor: Actor | tuple[str, str] | str | None = None,
        confidence: float | None = None,
        status: str | None = None,
        domain: str | None = None,
        tags: Iterable[str] = (),
        valid_from: Any = None,
        valid_to: Any = None,
    ) -> str:
        """Store a new claim; returns its id.

        ``evidence``: at least one :class:`Evidence` (or a search
        :class:`~kbflow.records.Hit`, taken as its citation). ``status``:
        ``observed`` (the default), ``inferred``, or ``hypothesis``; a claim
        resting only on ``model_inference`` evidence defaults to ``inferred``.
        ``confidence`` defaults by status (:data:`DEFAULT_CONFIDENCE`).
        ``valid_from`` / ``valid_to``: when it holds in the world (dates; ``None`` an open end); when neither
        is given, read from its text, else from its evidence where that names one period
        (:mod:`kbflow.claims.periods`).
        """
        return self.learn_many(
            [
                {
                    "text": text,
                    "evidence": evidence,
                    "scope": scope,
                    "actor": actor,
                    "confidence": confidence,
                    "status": status,
                    "domain": domain,
                    "tags": tags,
                    "valid_from": valid_from,
                    "valid_to": valid_to,
                }
            ]
        )[0]

    def learn_many(self, items: Iterable[Mapping[str, Any]]) -> list[str]:
        """Store many claims in one write (each a mapping of :meth:`learn`'s arguments); returns their ids."""
        built = [learn_event(item, self.actor) for item in items]
        if not built:
            return []
        # embedded before the lock is taken: writers wait for commits, not for the model
        texts = [p.data["text"] for p in built]
        vectors = dict(zip((p.claim_id for p in built), self._recall.vectors(texts), strict=True))
        self._log.commit(lambda: built, vectors)
        return [p.claim_id for p in built]

    # --- reading ------------------------------------------------------------------------------
    def get(self, claim_id: str) -> Claim:
        """The claim's current state (:class:`~kbflow.errors.NotFoundError` if unknown)."""
        self._log.refresh()
        return self._claim(claim_id)

    def list(
        self, *, statuses: Iterable[str] | None = None, scope: str | None = None, stale: bool | None = None
    ) -> list[Claim]:
        """Every claim (of ``statuses``, visible in ``scope``, with stale evidence or not), oldest first."""
        self._log.refresh()
        keep = claim_filter(statuses, scope, None, None)
        out = [c for c in self._log.state.values() if keep(c) and (stale is None or c.evidence_stale == stale)]
        return sorted(out, key=lambda c: (c.created_at, c.claim_id))

    def history(self, claim_id: str) -> builtins.list[ClaimEvent]:
        """Every event of the claim (or relation), in order: what was attempted, by whom, applied or refused,
        each at its record time (``event.at``); the claim's valid time is ``get(claim_id).valid``."""
        self._log.refresh()
        if not is_relation_id(claim_id):
            self._claim(claim_id)
        events = [ClaimEvent.from_row(r) for r in self.tables.events(0, claim_id)]
        if not events:  # a relation refused when proposed has a history and no state
            raise NotFoundError(f"no relation {claim_id!r} in this store")
        return events

    def audit(self) -> builtins.list[dict[str, Any]]:
        """The audit log: one row per learn/observe/verify/dispute/supersede attempt, in order."""
        return self.tables.audit()

    def recall(
        self,
        query: str,
        k: int = 5,
        *,
        scope: str | None = None,
        statuses: Iterable[str] | None = M.ACTIVE,
        domain: str | None = None,
        tags: Iterable[str] | None = None,
        visible: Callable[[Claim], bool] | None = None,
        valid_at: Any = None,
        as_of: Any = None,
    ) -> ClaimHits:
        """The claims best matching ``query``: cosine similarity and BM25 over claim texts, fused as the lake's
        searches fuse (``settings.retrieval``: convex, dense weight 1.0, BM25 0.5 by default).

        Only ``statuses`` (default: observed, inferred, verified; ``None``:
        all), visible in ``scope`` (the scope, its ancestors and ``global``,
        as for chunks), of ``domain``, with any of ``tags``. A hit whose
        claim's evidence went stale says so (``hit.stale``).

        Two time axes: ``valid_at`` (a date) keeps the claims that hold in the
        world on that day (their ``valid_from`` .. ``valid_to``; open ends
        hold). ``as_of`` (a timestamp) answers as the store would have then:
        only claims learned by then, filtered by the status each had then,
        each returned as it stood then (replayed from the event log).
        """
        check_query(query, k, MAX_K)
        day = _day(valid_at)
        moment = as_timestamp(as_of) if as_of is not None else None
        # replayed, a claim's status is the one it had then: the status test is the index's, not the claim's
        keep = claim_filter(statuses if moment is None else None, scope, domain, tags)
        narrowed = domain is not None or bool(tags) or visible is not None  # beyond status and scope
        self._log.refresh()
        timeline = self._log.timeline() if moment is not None else None
        with self._log.mutex:
            hits = self._recall.recall(
                query,
                k,
                self._log.state.__getitem__,
                statuses=tuple(statuses) if statuses is not None else None,
                scopes=visible_scopes(scope),
                keep=(lambda c: keep(c) and (visible is None or visible(c))) if narrowed else None,
                day=day,
                status_codes=(
                    (lambda ix: timeline.status_codes_at(moment, ix.status_codes(), ix.row, ix.code))
                    if timeline is not None and moment is not None
                    else None
                ),
            )
            if moment is None or not hits:
                return hits
            assert timeline is not None
            return replay_hits(hits, self.tables, self._log.n, moment, timeline)

    # --- stale evidence -----------------------------------------------------------------------
    def check_evidence(self, *, lake: str | Lake | None = None, against_sources: bool = True) -> EvidenceReport:
        """Check every citation of every claim not superseded against the lake (and its sources).

        A citation is stale when the lake no longer holds its chunk's text
        (the chunk's content hash is gone: the source changed and was
        re-ingested) or, ``against_sources``, when the source file no longer
        holds that text at the cited place (changed, not yet re-ingested). A
        claim with a stale citation is flagged (``claim.stale``: the old and
        new text side by side, an ``evidence_stale`` event); its status stays,
        for a person to decide. A flag whose citations hold again is cleared
        (an ``evidence_fresh`` event).
        """
        lake = lake if isinstance(lake, Lake) else (Lake(lake, create=False) if lake is not None else self.lake)
        if lake is None:
            raise ClaimError("check_evidence needs a lake to check citations against (Claims.memory(lake=...))")
        self._log.refresh()
        claims = [c for c in self._log.state.values() if c.status != M.SUPERSEDED]
        report = find_stale(claims, lake, against_sources=against_sources)
        self._log.commit(lambda: stale_events(claims, report, self._log.state))
        return report
