"""The claims event log: every change to a claim is an event, and the claims are the events folded.

``claim_events`` is append-only and the source of truth. Each write first
appends its events (one Lance commit), then upserts the changed claims'
current state into ``claims`` (a second commit), then appends one
``claim_audit`` row per operation (a third). A process killed between the
first two commits leaves events whose claim rows are missing or behind; the
next open (and any writer before its own write) folds those events into the
claim rows again (:meth:`EventLog.repair`), so a claim never exists without
its creation event and no event is ever lost. A failed audit write never
undoes the claim write: it is logged as a warning, counted in
:attr:`EventLog.audit_failures`, and the missing rows are written by the next
open.

Writes hold the store's write lock (:mod:`kbflow.claims.tables`) from
reading the current state to the last commit (:meth:`EventLog.commit`). What
the log folds in it reports to the recall index
(:class:`~kbflow.claims.recall.ClaimRecall`): new claims, and every status.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kbflow import schema as S
from kbflow.claims import model as M
from kbflow.claims.events import PendingEvent, apply_event
from kbflow.claims.model import Claim
from kbflow.claims.recall import ClaimRecall
from kbflow.claims.relations import RelationStates, is_relation_id
from kbflow.claims.tables import Tables, claim_from_row, claim_row
from kbflow.claims.timeline import Timeline
from kbflow.records import scopes

__all__ = ["AUDITED", "ClaimStates", "EventLog"]

log = logging.getLogger("kbflow.claims")

#: seconds between checks, on reads, for events other processes appended
RECHECK = 1.0


def _now() -> datetime:
    return datetime.now(UTC)


#: the events that get an audit row (the store's own staleness flags do not)
AUDITED = ("learn", "observe", "verify", "dispute", "supersede", "relate", "confirm", "reject", "unrelate")


class ClaimStates:
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


# hook for the crash-safety test: called between the events commit and the claims commit
_between_commits: Callable[[], None] | None = None


class EventLog:
    """A store's event log over its ``tables``: the claims' current state (:attr:`state`), folded from the
    events, kept in step with other writers, written as events, claim rows and audit rows.

    ``recall`` is told of every claim folded in; ``wait`` is how long a write waits for another writer.
    """

    def __init__(self, tables: Tables, recall: ClaimRecall, wait: float = 30.0) -> None:
        self.tables = tables
        self.recall = recall
        self.wait = wait
        self.model_id = recall.model_id
        self.audit_failures = 0
        self.mutex = threading.RLock()
        self.state = ClaimStates()
        self._persisted: dict[str, int] = {}  # claim id -> the event number its stored row folds in
        self._n = 0
        self._version: Any = None
        self._checked = float("-inf")
        self._relations: RelationStates | None = None  # read on first need (:meth:`relations`)
        self._timeline: Timeline | None = None  # read on first need (:meth:`timeline`)

    @property
    def n(self) -> int:
        """The number of the last event folded in."""
        return self._n

    # --- what is read on first need -------------------------------------------------------------
    def relations(self) -> RelationStates:
        """The relations' current state, folded from their events (read from the log once, then kept)."""
        with self.mutex:
            if self._relations is None:
                self.sync()
                states = RelationStates()
                table = self.tables.events_table(S.CLAIM_EVENTS_SCHEMA.names, self._n, relations=True)
                states.fold(sorted(table.to_pylist(), key=lambda r: r[S.EVENT_N]))
                self._relations = states
            return self._relations

    def timeline(self) -> Timeline:
        """The claims' status changes by record time (read from the log once, then kept)."""
        with self.mutex:
            if self._timeline is None:
                self.sync()
                columns = [S.CLAIM_ID, S.EVENT_N, S.AT, S.EVENT, S.OUTCOME, S.FROM_STATUS, S.TO_STATUS]
                table = self.tables.events_table(columns, self._n)
                self._timeline = Timeline.from_events(table.sort_by(S.EVENT_N))
            return self._timeline

    # --- reading the log ------------------------------------------------------------------------
    def load(self) -> None:
        """Read the stored claims, then repair: fold in events their rows miss, and write missing audit rows."""
        table = self.tables.claims_arrow()
        if table.num_rows:
            ids = table.column(S.CLAIM_ID).to_pylist()
            numbers = table.column(S.EVENT_N).to_pylist()
            self.recall.load(table)
            self.state.load(table.drop_columns([S.VECTOR]), ids)
            self._persisted = dict(zip(ids, numbers, strict=True))
            self._n = max(numbers)
        self.repair()

    def repair(self) -> None:
        """Fold in events no claim row holds yet (a write cut off between its commits) and audit what is not."""
        keys = self.tables.event_keys()
        if not keys:
            return
        if not self._gaps(keys)[0] and not self._audit_gaps(keys):
            self._n = max(self._n, max(n for _, n in keys))
            self._version = self.tables.version()
            return
        # looked like a cut-off write, or a write in progress elsewhere: look again holding the lock
        with self.mutex, self.tables.lock(self.wait):
            keys = self.tables.event_keys()
            stored = {r[S.CLAIM_ID]: r[S.EVENT_N] for r in self.tables.claims(columns=[S.CLAIM_ID, S.EVENT_N])}
            self._persisted.update(stored)
            behind, _ = self._gaps(keys)
            audit_missing = self._audit_gaps(keys)
            self.sync()
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
            if is_relation_id(claim_id):  # a relation's state is its events' fold, kept in memory only
                continue
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

    def sync(self) -> list[str]:
        """Fold in events other writers appended since this log last looked; returns the claims they touched."""
        version = self.tables.version()
        if version is not None and version == self._version:
            return []
        rows = self.tables.events(self._n)
        self._version = version
        if not rows:
            return []
        new = self.fold(rows)
        if new:  # as the other writer stored them; embedded here only where its row is missing or of another model
            self.recall.add(new, self.recall.stored_vectors(self.tables, new))
        return list(dict.fromkeys(r[S.CLAIM_ID] for r in rows if r[S.CLAIM_ID] in self.state))

    def fold(self, rows: Sequence[Mapping[str, Any]]) -> list[Claim]:
        """Apply event rows, in order, to the current state; returns the claims they created."""
        new: list[Claim] = []
        if self._timeline is not None:
            self._timeline.add(rows)
        for row in rows:
            if is_relation_id(row[S.CLAIM_ID]):
                if self._relations is not None:
                    self._relations.fold([row])
                self._n = max(self._n, row[S.EVENT_N])
                continue
            before = self.state.get(row[S.CLAIM_ID])
            after = apply_event(before, row)
            if after is not None:
                self.state[after.claim_id] = after
                self.recall.set_status(after)
                if before is None:
                    new.append(after)
            self._n = max(self._n, row[S.EVENT_N])
        return new

    def refresh(self) -> None:
        """On reads: pick up other writers' events, at most every :data:`RECHECK` seconds."""
        now = time.monotonic()
        if now - self._checked < RECHECK:
            return
        self._checked = now
        with self.mutex:
            self.sync()

    # --- writing --------------------------------------------------------------------------------
    def commit(
        self, plan: Callable[[], list[PendingEvent]], vectors: Mapping[str, np.ndarray] | None = None
    ) -> list[Claim]:
        """Run ``plan`` (which reads the current state and returns the events to write) under the write lock,
        then commit: events, claim rows, audit rows. ``vectors``: of the claims the events learn, by id (the
        others are embedded). Raises the first refused event's error after the commit."""
        with self.mutex, self.tables.lock(self.wait):
            touched = self.sync()
            # claims other writers changed whose rows are behind (their write was cut off): repaired with ours
            behind = [cid for cid in touched if self.state[cid].n > self._persisted_n(cid)]
            pending = plan()
            if not pending:
                return []
            rows = self._event_rows(pending)
            self.tables.append(S.CLAIM_EVENTS, rows)  # the source of truth: from here on nothing is lost
            self._version = self.tables.version()
            if _between_commits is not None:
                _between_commits()
            self.recall.add(self.fold(rows), vectors)
            changed = list(dict.fromkeys([*behind, *(r[S.CLAIM_ID] for r in rows)]))
            self._write_claims([cid for cid in changed if cid in self.state])
            self._write_audit(rows)
        for p in pending:
            if p.error is not None:
                raise p.error
        return [self.state[cid] for cid in dict.fromkeys(p.claim_id for p in pending) if cid in self.state]

    def _event_rows(self, pending: Sequence[PendingEvent]) -> list[dict[str, Any]]:
        """The ``claim_events`` rows of ``pending``: numbered after the last event, each claim's ``seq`` counted on."""
        rows: list[dict[str, Any]] = []
        seqs: dict[str, int] = {}
        at = _now()
        for i, p in enumerate(pending, start=1):
            seq = seqs.get(p.claim_id, self._seq(p.claim_id)) + 1
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
        return rows

    def _seq(self, event_id: str) -> int:
        """How many events the claim or relation ``event_id`` has had."""
        if is_relation_id(event_id):
            rel = self.relations().get(event_id)
            return rel.seq if rel else 0
        current = self.state.get(event_id)
        return current.seq if current else 0

    def _persisted_n(self, claim_id: str) -> int:
        known = self._persisted.get(claim_id)
        if known is None or known < self.state[claim_id].n:
            rows = self.tables.claims([claim_id], [S.CLAIM_ID, S.EVENT_N])
            known = rows[0][S.EVENT_N] if rows else 0
            self._persisted[claim_id] = known
        return known

    def _write_claims(self, claim_ids: Sequence[str]) -> None:
        if not claim_ids:
            return
        rows = [claim_row(self.state[cid], self.model_id, self.recall.vector(cid)) for cid in claim_ids]
        self.tables.upsert_claims(rows)
        for cid in claim_ids:
            self._persisted[cid] = self.state[cid].n

    def _audit_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """An audited event's audit row: the status, evidence and scope of its claim or relation after it (as
        the event row says, where this log does not hold that claim or relation)."""
        subject: Any = (
            (self._relations.get(row[S.CLAIM_ID]) if self._relations is not None else None)
            if is_relation_id(row[S.CLAIM_ID])
            else self.state.get(row[S.CLAIM_ID])
        )
        evidence = subject.evidence if subject else M.evidence_from_json(row[S.EVIDENCE])
        return {
            S.EVENT_N: row[S.EVENT_N],
            S.AT: row[S.AT],
            S.EVENT: row[S.EVENT],
            S.OUTCOME: row[S.OUTCOME],
            S.CLAIM_ID: row[S.CLAIM_ID],
            S.STATUS: subject.status if subject else row[S.TO_STATUS],
            S.EVIDENCE_COUNT: len(evidence),
            S.EVIDENCE_KINDS: sorted({e.kind for e in evidence}),
            S.SCOPE: subject.scope if subject else json.loads(row[S.DATA] or "{}").get("scope") or scopes.GLOBAL,
            S.ACTOR_TYPE: row[S.ACTOR_TYPE],
            S.ACTOR_ID: row[S.ACTOR_ID],
        }

    def _write_audit(self, event_rows: Sequence[Mapping[str, Any]]) -> None:
        """One audit row per audited event; a failure is reported, never raised (the claim write stands)."""
        rows = [self._audit_row(row) for row in event_rows if row[S.EVENT] in AUDITED]
        if not rows:
            return
        try:
            self.tables.append(S.CLAIM_AUDIT, rows)
        except Exception as exc:  # the claim write stands; the next open writes the missing rows
            self.audit_failures += 1
            message = f"claims: could not write {len(rows)} audit row(s) ({exc}); the claim write stands"
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=4)
