"""The claims store: learn, recall, verify, dispute, supersede, with every change an event of history.

Storage is event-sourced. ``claim_events`` is append-only and the source of
truth: each write first appends its events (one Lance commit), then upserts
the changed claims' current state into ``claims`` (a second commit), then
appends one ``claim_audit`` row per operation (a third). A process killed
between the first two commits leaves events whose claim rows are missing or
behind; the next :meth:`Claims.open` (and any writer before its own write)
folds those events into the claim rows again, so a claim never exists
without its creation event and no event is ever lost. A failed audit write
never undoes the claim write: it is logged as a warning, counted in
:attr:`Claims.audit_failures`, and the missing rows are written by the next
open.

Writes hold the store's write lock (:mod:`kbflow.claims.tables`) while they
read the current status, check the transition and commit, so two writers
transitioning the same claim are serialized: the first wins, the second's
attempt is refused against the status the first left, and both attempts are
in the claim's history (a refused attempt is an event too, with
``outcome = "refused"``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kbflow import schema as S
from kbflow import scopes
from kbflow._lazy import require
from kbflow.claims import model as M
from kbflow.claims.evidence import EvidenceReport, find_stale
from kbflow.claims.index import ClaimIndex
from kbflow.claims.model import Actor, Claim, Evidence, StaleEvidence
from kbflow.claims.tables import LakeTables, MemoryTables, Tables
from kbflow.config import MAX_K as MAX_SEARCH_K
from kbflow.config import Settings
from kbflow.errors import ClaimError, ClaimTransitionError, ConfigError, NotFoundError, QueryError
from kbflow.lake.lake import Lake
from kbflow.retrieve.request import check_query

__all__ = ["ClaimEvent", "ClaimHit", "ClaimHits", "Claims", "EvidenceReport", "NullClaims"]

log = logging.getLogger("kbflow.claims")

#: confidence of a claim learned without one, by status
DEFAULT_CONFIDENCE = {M.HYPOTHESIS: 0.5, M.INFERRED: 0.7, M.OBSERVED: 0.9}
#: the most claims one recall returns (the longest query is a search's, kbflow.config.MAX_QUERY_CHARS)
MAX_K = MAX_SEARCH_K
#: seconds between checks, on reads, for events other processes appended
RECHECK = 1.0
#: the events that get an audit row (the store's own staleness flags do not)
AUDITED = ("learn", "observe", "verify", "dispute", "supersede")
APPLIED, REFUSED = "applied", "refused"


def _now() -> datetime:
    return datetime.now(UTC)


def _label(text: str) -> str:
    """How an error names a claim not stored yet: its text, clipped."""
    text = " ".join(str(text).split())
    return repr(text if len(text) <= 60 else text[:59] + "…")


def new_claim_id() -> str:
    return "cl_" + uuid.uuid4().hex[:16]


_LEARN_FIELDS = frozenset({"text", "evidence", "scope", "actor", "confidence", "status", "domain", "tags"})


def _learn_event(item: Mapping[str, Any], default_actor: Actor) -> _Pending:
    """The ``learn`` event of one :meth:`Claims.learn` argument set, every field and rule checked."""
    unknown = set(item) - _LEARN_FIELDS
    if unknown:
        raise ClaimError(f"unknown claim fields {sorted(unknown)}")
    evidence = tuple(Evidence.coerce(e) for e in (item.get("evidence") or ()))
    status = item.get("status")
    if status is None:
        status = M.OBSERVED if M.has_direct_evidence(evidence) or not evidence else M.INFERRED
    confidence = item.get("confidence")
    if confidence is None:
        confidence = DEFAULT_CONFIDENCE.get(status, 0.5)
    text, confidence, scope, domain, tags = M.check_fields(
        item.get("text"), confidence, status, item.get("scope") or scopes.GLOBAL, item.get("domain"),
        item.get("tags") or (),
    )  # fmt: skip
    M.check_evidence_for(_label(text), evidence, status, confidence)
    data = {"text": text, "confidence": confidence, "scope": scope, "domain": domain, "tags": list(tags)}
    actor = Actor.coerce(item["actor"]) if item.get("actor") is not None else default_actor
    return _Pending(new_claim_id(), "learn", APPLIED, None, status, actor, evidence=evidence, data=data)


def _visible_scopes(scope: str | None) -> list[str] | None:
    """The scopes a reader in ``scope`` sees (``None``: every scope); a bad scope is a :class:`QueryError`."""
    if scope is None:
        return None
    try:
        return scopes.visible(scopes.normalize(scope))
    except ConfigError as exc:
        raise QueryError(str(exc)) from None


# --- values returned ------------------------------------------------------------------------------
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
        """One line: ``#3 2026-11-23 10:02 verify observed -> verified by user:ana (applied): reason``."""
        move = f"{self.from_status or '-'} -> {self.to_status or '-'}"
        reason = f": {self.reason}" if self.reason else ""
        added = f" (+{len(self.evidence)} evidence)" if self.evidence else ""
        when = f"{self.at:%Y-%m-%d %H:%M:%S}"
        return f"#{self.seq} {when} {self.event} {move} by {self.actor} ({self.outcome}){added}{reason}"


@dataclass(frozen=True)
class ClaimHit:
    """One claim recalled: the claim, its fused score and each leg's rank."""

    rank: int
    score: float
    claim: Claim
    dense_rank: int | None = None
    bm25_rank: int | None = None

    @property
    def stale(self) -> bool:
        """Whether a source no longer holds what one of its citations cited (see ``claim.stale``)."""
        return self.claim.evidence_stale

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "score": self.score,
            "dense_rank": self.dense_rank,
            "bm25_rank": self.bm25_rank,
            "stale": self.stale,
            "claim": self.claim.to_dict(),
        }


class ClaimHits(list):
    """The claims one :meth:`Claims.recall` returned, best first."""

    def __init__(self, hits: Iterable[ClaimHit] = (), *, query: str = "") -> None:
        super().__init__(hits)
        self.query = query

    def to_dicts(self) -> list[dict[str, Any]]:
        return [h.to_dict() for h in self]


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


def claim_row(claim: Claim, model_id: str, vector: np.ndarray) -> dict[str, Any]:
    return {
        S.CLAIM_ID: claim.claim_id,
        S.TEXT: claim.text,
        S.STATUS: claim.status,
        S.CONFIDENCE: claim.confidence,
        S.SCOPE: claim.scope,
        S.DOMAIN: claim.domain,
        S.TAGS: list(claim.tags),
        S.ACTOR_TYPE: claim.actor.type,
        S.ACTOR_ID: claim.actor.id,
        S.CREATED_AT: claim.created_at,
        S.UPDATED_AT: claim.updated_at,
        S.EVIDENCE: M.evidence_json(claim.evidence),
        S.EVIDENCE_KINDS: sorted({e.kind for e in claim.evidence}),
        S.SUPERSEDES: claim.supersedes,
        S.SUPERSEDED_BY: claim.superseded_by,
        S.EVIDENCE_STALE: claim.evidence_stale,
        S.STALE: json.dumps([s.to_dict() for s in claim.stale], ensure_ascii=False) if claim.stale else None,
        S.SEQ: claim.seq,
        S.EVENT_N: claim.n,
        S.MODEL_ID: model_id,
        S.VECTOR: [float(v) for v in vector] if not isinstance(vector, list) else vector,
    }


def claim_from_row(row: Mapping[str, Any]) -> Claim:
    return Claim(
        claim_id=row[S.CLAIM_ID],
        text=row[S.TEXT],
        status=row[S.STATUS],
        confidence=row[S.CONFIDENCE],
        scope=row[S.SCOPE],
        evidence=M.evidence_from_json(row[S.EVIDENCE]),
        actor=Actor(row[S.ACTOR_TYPE], row[S.ACTOR_ID]),
        created_at=row[S.CREATED_AT],
        updated_at=row[S.UPDATED_AT],
        domain=row[S.DOMAIN],
        tags=tuple(row[S.TAGS] or ()),
        supersedes=row[S.SUPERSEDES],
        superseded_by=row[S.SUPERSEDED_BY],
        stale=tuple(StaleEvidence.from_dict(s) for s in json.loads(row[S.STALE] or "[]")),
        seq=row[S.SEQ],
        n=row[S.EVENT_N],
    )


class _States:
    """Claim id -> :class:`Claim`, read lazily from the stored rows: opening a large store builds no claim
    object until one is asked for (a recall builds only its hits)."""

    def __init__(self) -> None:
        self._claims: dict[str, Claim] = {}
        self._rows: dict[str, int] = {}
        self._table: Any = None

    def load(self, table: Any, claim_ids: list[str]) -> None:
        self._table = table
        self._rows = {cid: i for i, cid in enumerate(claim_ids)}

    def get(self, claim_id: str, default: Claim | None = None) -> Claim | None:
        claim = self._claims.get(claim_id)
        if claim is None:
            i = self._rows.get(claim_id)
            if i is None or self._table is None:
                return default
            claim = self._claims[claim_id] = claim_from_row(self._table.slice(i, 1).to_pylist()[0])
        return claim

    def __getitem__(self, claim_id: str) -> Claim:
        claim = self.get(claim_id)
        if claim is None:
            raise KeyError(claim_id)
        return claim

    def __setitem__(self, claim_id: str, claim: Claim) -> None:
        self._claims[claim_id] = claim

    def __contains__(self, claim_id: object) -> bool:
        return claim_id in self._claims or claim_id in self._rows

    def __len__(self) -> int:
        return len(self._rows) + sum(1 for c in self._claims if c not in self._rows)

    def values(self) -> list[Claim]:
        if self._table is not None:  # build every claim not built yet, once
            missing = [i for cid, i in self._rows.items() if cid not in self._claims]
            if missing:
                for row in self._table.take(missing).to_pylist():
                    self._claims[row[S.CLAIM_ID]] = claim_from_row(row)
            self._table = None
        return list(self._claims.values())


@dataclass
class _Pending:
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


# hook for the crash-safety test: called between the events commit and the claims commit
_between_commits: Callable[[], None] | None = None


class Claims:
    """A store of claims with evidence, lifecycle and history (see the module docs).

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
        self.audit_failures = 0
        self._mutex = threading.RLock()
        self._state = _States()
        self._persisted: dict[str, int] = {}  # claim id -> the event number its stored row folds in
        self._n = 0
        self._version: Any = None
        self._checked = float("-inf")
        self._embedder = None
        self._index: ClaimIndex | None = None
        self._load()

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
        return NullClaims()

    def __repr__(self) -> str:
        where = self.lake.uri if isinstance(self.tables, LakeTables) and self.lake else "memory"
        return f"Claims({where!r}, claims={len(self._state)}, model={self.model_id!r})"

    def __len__(self) -> int:
        return len(self._state)

    # --- embedding ----------------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from kbflow.embed.base import get_embedder

            s = self.settings
            self._embedder = get_embedder(s.model, s.embed_batch_size, s.backend, s.embed_threads)
        return self._embedder

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dim), np.float32)
        return np.asarray(self.embedder.embed(list(texts)), np.float32)

    # --- state --------------------------------------------------------------------------------
    def _load(self) -> None:
        """Read the stored claims, then repair: fold in events their rows miss, and write missing audit rows."""
        pc = require("pyarrow.compute")
        table = self.tables.claims_arrow()
        if table.num_rows:
            ids = table.column(S.CLAIM_ID).to_pylist()
            numbers = table.column(S.EVENT_N).to_pylist()
            models = table.column(S.MODEL_ID).to_pylist()
            column = table.column(S.VECTOR).combine_chunks()
            lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
            same = np.asarray([m == self.model_id for m in models]) & (lengths == lengths.max())
            dim = int(lengths.max()) if same.any() else self.embedder.dim
            vectors = np.zeros((len(ids), dim), np.float32)
            texts = table.column(S.TEXT).to_pylist()
            if same.all():  # the usual case: one model, one flat buffer
                vectors[:] = column.flatten().to_numpy(zero_copy_only=False).reshape(len(ids), dim)
            else:  # stored under another model: embedded again for this one (in memory only)
                for i in np.flatnonzero(same):
                    vectors[i] = np.asarray(column[int(i)].as_py(), np.float32)
                redo = np.flatnonzero(~same)
                vectors[redo] = self._vectors([texts[i] for i in redo])
            self._state.load(table.drop_columns([S.VECTOR]), ids)
            self._persisted = dict(zip(ids, numbers, strict=True))
            self._n = max(numbers)
            if self._index is None:
                self._index = ClaimIndex(dim)
            self._index.add(ids, texts, vectors, table.column(S.STATUS).to_pylist(), table.column(S.SCOPE).to_pylist())
        self._repair()

    def _repair(self) -> None:
        """Fold in events no claim row holds yet (a write cut off between its commits) and audit what is not."""
        keys = self.tables.event_keys()
        if not keys:
            return
        if not self._gaps(keys)[0] and not self._audit_gaps(keys):
            self._n = max(self._n, max(n for _, n in keys))
            self._version = self.tables.version()
            return
        # looked like a cut-off write, or a write in progress elsewhere: look again holding the lock
        with self._mutex, self.tables.lock(self.wait):
            keys = self.tables.event_keys()
            stored = {r[S.CLAIM_ID]: r[S.EVENT_N] for r in self.tables.claims(columns=[S.CLAIM_ID, S.EVENT_N])}
            self._persisted.update(stored)
            behind, _ = self._gaps(keys)
            audit_missing = self._audit_gaps(keys)
            self._sync()
            if behind:
                log.warning(
                    "claims: %d claim row(s) were behind their history (a write was cut off); repaired", len(behind)
                )
                self._write_claims(behind)
            if audit_missing:
                events = [r for r in self.tables.events() if r[S.EVENT_N] in audit_missing]
                self._write_audit(events)

    def _gaps(self, keys: list[tuple[str, int]]) -> tuple[list[str], dict[str, int]]:
        """The claims whose stored row folds in fewer events than their history has, and each claim's last event."""
        last: dict[str, int] = {}
        for claim_id, n in keys:
            if n > last.get(claim_id, 0):
                last[claim_id] = n
        return [cid for cid, n in last.items() if n > self._persisted.get(cid, 0)], last

    def _audit_gaps(self, keys: list[tuple[str, int]]) -> set[int]:
        audited = {r[S.EVENT_N] for r in self.tables.audit([S.EVENT_N])}
        if len(audited) >= len(keys):
            return set()
        events = {n for _, n in keys} - audited
        if not events:
            return set()
        return {
            r[S.EVENT_N]
            for r in self.tables.events(min(events) - 1)
            if r[S.EVENT_N] in events and r[S.EVENT] in AUDITED
        }

    def _sync(self) -> list[str]:
        """Fold in events other writers appended since this store last looked; returns the claims they touched."""
        version = self.tables.version()
        if version is not None and version == self._version:
            return []
        rows = self.tables.events(self._n)
        self._version = version
        if not rows:
            return []
        new = self._fold(rows)
        if new:
            self._index_add(new, self._stored_vectors(new))
        return list(dict.fromkeys(r[S.CLAIM_ID] for r in rows if r[S.CLAIM_ID] in self._state))

    def _fold(self, rows: Sequence[Mapping[str, Any]]) -> list[Claim]:
        """Apply event rows, in order, to the current state; returns the claims they created."""
        new: list[Claim] = []
        for row in rows:
            before = self._state.get(row[S.CLAIM_ID])
            after = apply_event(before, row)
            if after is not None:
                self._put(after)
                if before is None:
                    new.append(after)
            self._n = max(self._n, row[S.EVENT_N])
        return new

    def _stored_vectors(self, claims: Sequence[Claim]) -> np.ndarray:
        """Vectors of claims another writer learned: as it stored them, embedded here only where its row is
        missing (its write was cut off) or of another model."""
        stored = {
            r[S.CLAIM_ID]: r[S.VECTOR]
            for r in self.tables.claims([c.claim_id for c in claims], [S.CLAIM_ID, S.MODEL_ID, S.VECTOR])
            if r[S.MODEL_ID] == self.model_id and r[S.VECTOR]
        }
        missing = [c for c in claims if c.claim_id not in stored]
        if missing:
            stored.update(zip((c.claim_id for c in missing), self._vectors([c.text for c in missing]), strict=True))
        return np.stack([np.asarray(stored[c.claim_id], np.float32) for c in claims])

    def _index_add(self, claims: Sequence[Claim], vectors: np.ndarray) -> None:
        if self._index is None:
            self._index = ClaimIndex(vectors.shape[1] if len(vectors) else self.embedder.dim)
        self._index.add(
            [c.claim_id for c in claims], [c.text for c in claims], vectors, [c.status for c in claims],
            [c.scope for c in claims],
        )  # fmt: skip

    def _put(self, claim: Claim) -> None:
        """Make ``claim`` the current state (and its status the index's)."""
        self._state[claim.claim_id] = claim
        if self._index is not None:
            self._index.set_status(claim.claim_id, claim.status)

    def _refresh(self) -> None:
        """On reads: pick up other writers' events, at most every :data:`RECHECK` seconds."""
        now = time.monotonic()
        if now - self._checked < RECHECK:
            return
        self._checked = now
        with self._mutex:
            self._sync()

    def _vector_of(self, claim_id: str) -> np.ndarray:
        assert self._index is not None
        return self._index.vector(claim_id)

    # --- writing ------------------------------------------------------------------------------
    def _commit(self, plan: Callable[[], list[_Pending]], vectors: dict[str, np.ndarray] | None = None) -> list[Claim]:
        """Run ``plan`` (which reads the current state and returns the events to write) under the write lock,
        then commit: events, claim rows, audit rows. Raises the first refused event's error after the commit."""
        with self._mutex, self.tables.lock(self.wait):
            touched = self._sync()
            # claims other writers changed whose rows are behind (their write was cut off): repaired with ours
            behind = [cid for cid in touched if self._state[cid].n > self._persisted_n(cid)]
            pending = plan()
            if not pending:
                return []
            rows, seqs = [], {}
            at = _now()
            for i, p in enumerate(pending, start=1):
                current = self._state.get(p.claim_id)
                seq = seqs.get(p.claim_id, current.seq if current else 0) + 1
                seqs[p.claim_id] = seq
                rows.append(
                    {
                        S.EVENT_N: self._n + i,
                        S.CLAIM_ID: p.claim_id,
                        S.SEQ: seq,
                        S.EVENT: p.event,
                        S.OUTCOME: p.outcome,
                        S.FROM_STATUS: p.from_status,
                        S.TO_STATUS: p.to_status,
                        S.ACTOR_TYPE: p.actor.type,
                        S.ACTOR_ID: p.actor.id,
                        S.REASON: p.reason,
                        S.EVIDENCE: M.evidence_json(p.evidence),
                        S.DATA: json.dumps(p.data, ensure_ascii=False, separators=(",", ":")),
                        S.AT: at,
                    }
                )
            self.tables.append(S.CLAIM_EVENTS, rows)  # the source of truth: from here on nothing is lost
            self._version = self.tables.version()
            if _between_commits is not None:
                _between_commits()
            new = self._fold(rows)
            if new:
                fresh = [c for c in new if c.claim_id not in (vectors or {})]
                vecs = dict(vectors or {})
                if fresh:
                    vecs.update(zip((c.claim_id for c in fresh), self._vectors([c.text for c in fresh]), strict=True))
                self._index_add(new, np.stack([vecs[c.claim_id] for c in new]))
            changed = list(dict.fromkeys([*behind, *(r[S.CLAIM_ID] for r in rows)]))
            changed = [cid for cid in changed if cid in self._state]
            self._write_claims(changed)
            self._write_audit(rows)
        for p in pending:
            if p.error is not None:
                raise p.error
        return [self._state[cid] for cid in dict.fromkeys(p.claim_id for p in pending) if cid in self._state]

    def _persisted_n(self, claim_id: str) -> int:
        known = self._persisted.get(claim_id)
        if known is None or known < self._state[claim_id].n:
            rows = self.tables.claims([claim_id], [S.CLAIM_ID, S.EVENT_N])
            known = rows[0][S.EVENT_N] if rows else 0
            self._persisted[claim_id] = known
        return known

    def _write_claims(self, claim_ids: Sequence[str]) -> None:
        if not claim_ids:
            return
        rows = [claim_row(self._state[cid], self.model_id, self._vector_of(cid)) for cid in claim_ids]
        self.tables.upsert_claims(rows)
        for cid in claim_ids:
            self._persisted[cid] = self._state[cid].n

    def _write_audit(self, event_rows: Sequence[Mapping[str, Any]]) -> None:
        """One audit row per audited event; a failure is reported, never raised (the claim write stands)."""
        rows = []
        for row in event_rows:
            if row[S.EVENT] not in AUDITED:
                continue
            claim = self._state.get(row[S.CLAIM_ID])
            evidence = claim.evidence if claim else M.evidence_from_json(row[S.EVIDENCE])
            rows.append(
                {
                    S.EVENT_N: row[S.EVENT_N],
                    S.AT: row[S.AT],
                    S.EVENT: row[S.EVENT],
                    S.OUTCOME: row[S.OUTCOME],
                    S.CLAIM_ID: row[S.CLAIM_ID],
                    S.STATUS: claim.status if claim else row[S.TO_STATUS],
                    S.EVIDENCE_COUNT: len(evidence),
                    S.EVIDENCE_KINDS: sorted({e.kind for e in evidence}),
                    S.SCOPE: claim.scope if claim else json.loads(row[S.DATA] or "{}").get("scope", scopes.GLOBAL),
                    S.ACTOR_TYPE: row[S.ACTOR_TYPE],
                    S.ACTOR_ID: row[S.ACTOR_ID],
                }
            )
        if not rows:
            return
        try:
            self.tables.append(S.CLAIM_AUDIT, rows)
        except Exception as exc:  # the claim write stands; the next open writes the missing rows
            self.audit_failures += 1
            message = f"claims: could not write {len(rows)} audit row(s) ({exc}); the claim write stands"
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    # --- the operations -----------------------------------------------------------------------
    def _claim(self, claim_id: str) -> Claim:
        claim = self._state.get(claim_id)
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
    ) -> str:
        """Store a new claim; returns its id.

        ``evidence``: at least one :class:`Evidence` (or a search
        :class:`~kbflow.records.Hit`, taken as its citation). ``status``:
        ``observed`` (the default), ``inferred``, or ``hypothesis``; a claim
        resting only on ``model_inference`` evidence defaults to ``inferred``.
        ``confidence`` defaults by status (:data:`DEFAULT_CONFIDENCE`).
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
                }
            ]
        )[0]

    def learn_many(self, items: Iterable[Mapping[str, Any]]) -> list[str]:
        """Store many claims in one write (each a mapping of :meth:`learn`'s arguments); returns their ids."""
        built = [_learn_event(item, self.actor) for item in items]
        if not built:
            return []
        # embedded before the lock is taken: writers wait for commits, not for the model
        vectors = dict(zip((p.claim_id for p in built), self._vectors([p.data["text"] for p in built]), strict=True))
        self._commit(lambda: built, vectors)
        return [p.claim_id for p in built]

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
        if reason is not None and (not isinstance(reason, str) or len(reason) > M.MAX_TEXT):
            raise ClaimError(f"reason must be a string of at most {M.MAX_TEXT:,} characters")
        if confidence is not None:
            confidence = M.check_confidence(confidence)
        self._refresh()
        self._claim(claim_id)  # unknown ids fail before anything is written

        def plan() -> list[_Pending]:
            claim = self._claim(claim_id)
            error: Exception | None = None
            try:
                if expect is not None and claim.status != expect:
                    raise ClaimTransitionError(
                        f"claim {claim_id}: expected status {expect}, found {claim.status} (another writer changed it)",
                        claim_id, claim.status, to, M.TRANSITIONS[claim.status],
                    )  # fmt: skip
                M.check_transition(claim_id, claim.status, to, via_supersede=event == "supersede")
                # the rules apply to evidence as it is given: a hypothesis learned from a model's inference
                # may be observed later, with evidence of its own
                M.check_evidence_for(
                    claim_id, added, to, confidence if confidence is not None else claim.confidence, required=False
                )
                if len(claim.evidence) + len(added) > M.MAX_EVIDENCE:
                    raise ClaimError(f"claim {claim_id}: at most {M.MAX_EVIDENCE} pieces of evidence")
                if check is not None:
                    check(claim, added, actor)
            except ClaimTransitionError as exc:
                error = exc
            data = {"confidence": confidence} if confidence is not None and error is None else {}
            if error is not None:
                data["refused"] = str(error)
            return [
                _Pending(
                    claim_id, event, REFUSED if error else APPLIED, claim.status, to, actor, reason,
                    () if error else added, data, error,
                )
            ]  # fmt: skip

        return self._commit(plan)[0]

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
        if not M.has_direct_evidence(added):
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
            if actor.type != "user" and not M.has_direct_evidence(claim.evidence + added):
                raise ClaimTransitionError(
                    f"claim {claim_id}: only a person (actor type user) may verify a claim resting on model "
                    "inference alone; add a citation, url or tool_output",
                    claim_id, claim.status, M.VERIFIED, M.TRANSITIONS[claim.status],
                )  # fmt: skip

        return self._transition(
            claim_id, M.VERIFIED, "verify", by=by, reason=reason, evidence=evidence, confidence=confidence,
            expect=expect, check=vouched,
        )  # fmt: skip

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
    ) -> Claim:
        """Replace claim ``claim_id`` by the (already learned) claim ``new_id``: the old one becomes
        ``superseded`` and points at the new one, which records what it supersedes."""
        if claim_id == new_id:
            raise ClaimError(f"claim {claim_id} cannot supersede itself")
        actor = Actor.coerce(by) if by is not None else self.actor
        self._refresh()
        self._claim(claim_id)
        self._claim(new_id)

        def plan() -> list[_Pending]:
            old, new = self._claim(claim_id), self._claim(new_id)
            error: Exception | None = None
            try:
                M.check_transition(claim_id, old.status, M.SUPERSEDED, via_supersede=True)
                if new.status in (M.SUPERSEDED, M.DISPUTED):
                    raise ClaimTransitionError(
                        f"claim {new_id} is {new.status}; a claim is superseded only by one that stands",
                        new_id, new.status, new.status, M.TRANSITIONS[new.status],
                    )  # fmt: skip
            except ClaimTransitionError as exc:
                error = exc
            if error is not None:
                data = {"superseded_by": new_id, "refused": str(error)}
                return [
                    _Pending(claim_id, "supersede", REFUSED, old.status, M.SUPERSEDED, actor, reason, (), data, error)
                ]
            return [
                _Pending(
                    claim_id,
                    "supersede",
                    APPLIED,
                    old.status,
                    M.SUPERSEDED,
                    actor,
                    reason,
                    (),
                    {"superseded_by": new_id},
                ),
                _Pending(new_id, "supersedes", APPLIED, new.status, None, actor, reason, (), {"supersedes": claim_id}),
            ]

        return self._commit(plan)[0]

    # --- reading ------------------------------------------------------------------------------
    def get(self, claim_id: str) -> Claim:
        """The claim's current state (:class:`~kbflow.errors.NotFoundError` if unknown)."""
        self._refresh()
        return self._claim(claim_id)

    def list(
        self, *, statuses: Iterable[str] | None = None, scope: str | None = None, stale: bool | None = None
    ) -> list[Claim]:
        """Every claim (of ``statuses``, visible in ``scope``, with stale evidence or not), oldest first."""
        self._refresh()
        keep = self._filter(statuses, scope, None, None)
        out = [c for c in self._state.values() if keep(c) and (stale is None or c.evidence_stale == stale)]
        return sorted(out, key=lambda c: (c.created_at, c.claim_id))

    def history(self, claim_id: str) -> list[ClaimEvent]:
        """Every event of the claim, in order: what was attempted, by whom, applied or refused."""
        self._refresh()
        self._claim(claim_id)
        return [ClaimEvent.from_row(r) for r in self.tables.events(0, claim_id)]

    def audit(self) -> list[dict[str, Any]]:
        """The audit log: one row per learn/observe/verify/dispute/supersede attempt, in order."""
        return self.tables.audit()

    @staticmethod
    def _filter(statuses, scope, domain, tags) -> Callable[[Claim], bool]:
        wanted = tuple(statuses) if statuses is not None else None
        if wanted is not None:
            bad = [s for s in wanted if s not in M.STATUSES]
            if bad:
                raise QueryError(f"unknown claim status {bad[0]!r}; statuses are {', '.join(M.STATUSES)}")
        visible = _visible_scopes(scope)
        seen = set(visible) if visible is not None else None
        tagset = set(tags) if tags else None

        def keep(c: Claim) -> bool:
            return (
                (wanted is None or c.status in wanted)
                and (seen is None or c.scope in seen)
                and (domain is None or c.domain == domain)
                and (tagset is None or bool(tagset & set(c.tags)))
            )

        return keep

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
    ) -> ClaimHits:
        """The claims best matching ``query``: cosine similarity and BM25 over claim texts, fused as the lake's
        searches fuse (``settings.retrieval``: convex, dense weight 1.0, BM25 0.5 by default).

        Only ``statuses`` (default: observed, inferred, verified; ``None``:
        all), visible in ``scope`` (the scope, its ancestors and ``global``,
        as for chunks), of ``domain``, with any of ``tags``. A hit whose
        claim's evidence went stale says so (``hit.stale``).
        """
        check_query(query, k, MAX_K)
        keep = self._filter(statuses, scope, domain, tags)
        self._refresh()
        with self._mutex:
            index = self._index
            if index is None or not len(index):
                return ClaimHits(query=query)
            state = self._state
            mask = index.filter_mask(tuple(statuses) if statuses is not None else None, _visible_scopes(scope))
            if domain is not None or tags or visible is not None:
                mask = index.mask(lambda cid: keep(state[cid]) and (visible is None or visible(state[cid])), mask)
            if not mask.any():
                return ClaimHits(query=query)
            vector = np.asarray(self.embedder.embed_query(query), np.float32)
            r = self.settings.retrieval
            weights = {"dense": r.dense_weight, "bm25": r.bm25_weight}
            found = index.search(query, vector, mask, k, fusion=r.fusion, weights=weights, rrf_k=r.rrf_k)
            return ClaimHits(
                (ClaimHit(rank, score, state[cid], d, b) for rank, (cid, score, d, b) in enumerate(found, 1)),
                query=query,
            )

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
        self._refresh()
        claims = [c for c in self._state.values() if c.status != M.SUPERSEDED]
        report = find_stale(claims, lake, against_sources=against_sources)
        actor = Actor("system", "check_evidence")

        def plan() -> list[_Pending]:
            out = []
            for claim in claims:
                now = self._state[claim.claim_id]
                found = tuple(report.stale.get(claim.claim_id, ()))
                if found == now.stale:
                    continue
                if found:
                    if not now.stale:
                        report.newly_stale.append(claim.claim_id)
                    event = "evidence_stale"
                    reason = f"{len(found)} citation(s) no longer hold"
                else:
                    report.cleared.append(claim.claim_id)
                    event, reason = "evidence_fresh", "every citation holds again"
                data = {"stale": [s.to_dict() for s in found]}
                out.append(_Pending(claim.claim_id, event, APPLIED, now.status, None, actor, reason, (), data))
            return out

        self._commit(plan)
        return report


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
        return [_learn_event(item, Actor("system", "null")).claim_id for item in items]

    def recall(self, query: str, k: int = 5, **_: Any) -> ClaimHits:
        return ClaimHits(query=query)

    def list(self, **_: Any) -> list[Claim]:
        return []

    def _unknown(self, claim_id: str, *_: Any, **__: Any):
        raise NotFoundError(f"no claim {claim_id!r} in this store (Claims.null() keeps nothing)")

    get = history = observe = verify = dispute = supersede = _unknown

    def audit(self) -> list[dict[str, Any]]:
        return []

    def check_evidence(self, **_: Any) -> EvidenceReport:
        return EvidenceReport()
