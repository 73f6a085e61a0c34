"""Where a claims store keeps its three tables: the lake (Lance) or memory.

Both give the store the same few operations, all called with the store's
write lock held except the reads: append events, upsert claim rows, append
audit rows, and read them back. The lake's lock is an ``flock`` on
``<lake>/_claims.lock`` (its own, not the ingest lease: claims are learned
while an ingest runs), plus a thread lock per lake within the process. On S3
the lock is a lease object of its own, ``<lake>/_claims.lease.json``, taken
and renewed by conditional puts as the lake's write lease is
(:class:`~kbflow.lake.object_lease.ObjectLease`), so two processes writing
one store cannot lose an event. Other object stores have no lock across
processes: run one writing process per lake there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.claims import model as M
from kbflow.claims.model import Actor, Claim, StaleEvidence
from kbflow.claims.relations import PREFIX as RELATION_PREFIX
from kbflow.claims.relations import is_relation_id
from kbflow.errors import LakeBusyError, LakeError
from kbflow.lake.lake import Lake
from kbflow.lake.object_lease import is_s3
from kbflow.lake.sql import sql_in, sql_str

__all__ = ["LakeTables", "MemoryTables", "Tables", "claim_from_row", "claim_row"]

LOCK_FILE = "_claims.lock"
#: the claims store's lease object on S3
LEASE_OBJECT = "_claims.lease.json"
#: a table with more data files than this is compacted after a write (one small write adds one file)
COMPACT_FRAGMENTS = 64

_thread_locks: dict[str, threading.RLock] = {}
_thread_locks_guard = threading.Lock()


class Tables(ABC):
    """The claims, claim_events and claim_audit tables of one store."""

    @abstractmethod
    def lock(self, wait: float) -> contextlib.AbstractContextManager[None]:
        """Hold the store's write lock (one writer at a time, across threads and processes)."""

    @abstractmethod
    def events(self, after: int = 0, claim_id: str | None = None) -> list[dict[str, Any]]:
        """Event rows with ``n > after`` (of one claim), in order."""

    @abstractmethod
    def events_table(
        self, columns: Sequence[str], upto: int, *, relations: bool = False, claim_ids: Sequence[str] | None = None
    ) -> Any:
        """Event rows with ``n <= upto`` as an Arrow table of ``columns``: of relations only (``relations``), or
        of ``claim_ids``."""

    @abstractmethod
    def event_keys(self) -> list[tuple[str, int]]:
        """``(claim_id, n)`` of every event."""

    @abstractmethod
    def claims(self, claim_ids: Sequence[str] | None = None, columns: Sequence[str] | None = None) -> list[dict]:
        """Claim rows (all, or those of ``claim_ids``)."""

    @abstractmethod
    def audit(self, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Audit rows, in order."""

    @abstractmethod
    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Append rows to ``claim_events`` or ``claim_audit`` in one commit."""

    @abstractmethod
    def upsert_claims(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert or replace claim rows (keyed by ``claim_id``) in one commit."""

    def claims_arrow(self):
        """Every claim row as an Arrow table."""
        pa = require("pyarrow")
        return pa.Table.from_pylist(self.claims(), schema=S.CLAIMS_SCHEMA)

    def version(self) -> Any:
        """Something that changes whenever another writer appended events (``None``: always check)."""
        return None


class MemoryTables(Tables):
    """The three tables as lists, for tests and throwaway stores (``Claims.memory()``)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {S.CLAIM_EVENTS: [], S.CLAIM_AUDIT: []}
        self.claim_rows: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def lock(self, wait: float) -> Iterator[None]:
        if not self._lock.acquire(timeout=max(wait, 0.001)):
            raise LakeBusyError("the in-memory claims store is held by another thread")
        try:
            yield
        finally:
            self._lock.release()

    def events(self, after: int = 0, claim_id: str | None = None) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.rows[S.CLAIM_EVENTS]
            if r[S.EVENT_N] > after and (claim_id is None or r[S.CLAIM_ID] == claim_id)
        ]

    def event_keys(self) -> list[tuple[str, int]]:
        return [(r[S.CLAIM_ID], r[S.EVENT_N]) for r in self.rows[S.CLAIM_EVENTS]]

    def events_table(
        self, columns: Sequence[str], upto: int, *, relations: bool = False, claim_ids: Sequence[str] | None = None
    ) -> Any:
        pa = require("pyarrow")
        wanted = set(claim_ids) if claim_ids is not None else None
        rows = [
            {c: r[c] for c in columns}
            for r in self.rows[S.CLAIM_EVENTS]
            if r[S.EVENT_N] <= upto
            and (not relations or is_relation_id(r[S.CLAIM_ID]))
            and (wanted is None or r[S.CLAIM_ID] in wanted)
        ]
        return pa.Table.from_pylist(rows, schema=pa.schema([S.CLAIM_EVENTS_SCHEMA.field(c) for c in columns]))

    def claims(self, claim_ids: Sequence[str] | None = None, columns: Sequence[str] | None = None) -> list[dict]:
        rows = self.claim_rows.values() if claim_ids is None else (self.claim_rows.get(c) for c in claim_ids)
        return [dict(r) if columns is None else {c: r[c] for c in columns} for r in rows if r is not None]

    def audit(self, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return [dict(r) if columns is None else {c: r[c] for c in columns} for r in self.rows[S.CLAIM_AUDIT]]

    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        self.rows[table].extend(dict(r) for r in rows)

    def upsert_claims(self, rows: Sequence[dict[str, Any]]) -> None:
        for row in rows:
            self.claim_rows[row[S.CLAIM_ID]] = dict(row)

    def version(self) -> Any:
        return len(self.rows[S.CLAIM_EVENTS])


class LakeTables(Tables):
    """The three tables in a lake, as Lance datasets."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self._depth = 0  # lock() nesting (changed only by the thread holding the thread lock)

    @contextlib.contextmanager
    def lock(self, wait: float) -> Iterator[None]:
        with _thread_locks_guard:
            tlock = _thread_locks.setdefault(self.lake.uri, threading.RLock())
        if not tlock.acquire(timeout=max(wait, 0.001)):
            raise LakeBusyError(f"{self.lake.uri}: the claims store is being written by another thread")
        self._depth += 1
        try:
            if self._depth > 1 or (not self.lake.is_local and not is_s3(self.lake.uri)):
                # nested in this thread's own lock; or an object store without conditional puts: writers are
                # serialized per process only
                yield
                return
            if not self.lake.is_local:
                with self._object_lease(wait):
                    yield
                return
            path = os.path.join(self.lake.uri.removeprefix("file://"), LOCK_FILE)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise LakeError(f"{path}: cannot open the claims lock file ({exc.strerror or exc})") from None
            try:
                deadline = time.monotonic() + max(0.0, wait)
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise LakeBusyError(
                                f"{self.lake.uri}: the claims store is being written by another process "
                                f"(waited {wait:g}s)"
                            ) from None
                        time.sleep(0.02)
                yield
            finally:
                os.close(fd)  # closing releases the flock
        finally:
            self._depth -= 1
            tlock.release()

    @contextlib.contextmanager
    def _object_lease(self, wait: float) -> Iterator[None]:
        from kbflow.lake.object_lease import ObjectLease
        from kbflow.lake.storage import env_storage_options

        held = ObjectLease(self.lake.uri, env_storage_options(), "kbflow claims", True, LEASE_OBJECT)
        held.acquire(wait)
        try:
            yield
        finally:
            held.release()

    def _scan(self, name: str, columns: Sequence[str] | None = None, where: str | None = None):
        return self.lake.scan(name, columns, where)

    def events(self, after: int = 0, claim_id: str | None = None) -> list[dict[str, Any]]:
        where = f"{S.EVENT_N} > {int(after)}"
        if claim_id is not None:
            where += f" AND {S.CLAIM_ID} = {sql_str(claim_id)}"
        rows = self._scan(S.CLAIM_EVENTS, where=where).to_pylist()
        return sorted(rows, key=lambda r: r[S.EVENT_N])

    def events_table(
        self, columns: Sequence[str], upto: int, *, relations: bool = False, claim_ids: Sequence[str] | None = None
    ) -> Any:
        where = f"{S.EVENT_N} <= {int(upto)}"
        if relations:
            where += f" AND starts_with({S.CLAIM_ID}, {sql_str(RELATION_PREFIX)})"
        if claim_ids is not None:
            where += f" AND {sql_in(S.CLAIM_ID, list(claim_ids))}"
        return self._scan(S.CLAIM_EVENTS, list(columns), where)

    def event_keys(self) -> list[tuple[str, int]]:
        table = self._scan(S.CLAIM_EVENTS, [S.CLAIM_ID, S.EVENT_N])
        return list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))

    def claims(self, claim_ids: Sequence[str] | None = None, columns: Sequence[str] | None = None) -> list[dict]:
        if claim_ids is not None and not claim_ids:
            return []
        if claim_ids is None:
            return self._scan(S.CLAIMS, columns).to_pylist()
        out: list[dict] = []
        ids = list(claim_ids)
        for start in range(0, len(ids), 500):
            out.extend(self._scan(S.CLAIMS, columns, sql_in(S.CLAIM_ID, ids[start : start + 500])).to_pylist())
        return out

    def claims_arrow(self):
        return self._scan(S.CLAIMS)

    def audit(self, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        rows = self._scan(S.CLAIM_AUDIT, columns).to_pylist()
        return sorted(rows, key=lambda r: r.get(S.EVENT_N, 0))

    def append(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        pa = require("pyarrow")
        data = pa.Table.from_pylist(list(rows), schema=S.SCHEMAS[table])
        self.lake.append(table, data.to_reader())
        self._compact(table)

    def upsert_claims(self, rows: Sequence[dict[str, Any]]) -> None:
        pa = require("pyarrow")
        data = pa.Table.from_pylist(list(rows), schema=S.CLAIMS_SCHEMA)
        table = self.lake.table(S.CLAIMS)
        table.merge_insert(S.CLAIM_ID).when_matched_update_all().when_not_matched_insert_all().execute(data)
        self._compact(S.CLAIMS)

    def _compact(self, name: str) -> None:
        """Many small writes leave many small files: merge them once there are :data:`COMPACT_FRAGMENTS`."""
        ds = self.lake.dataset(name)
        if len(ds.get_fragments()) > COMPACT_FRAGMENTS:
            ds.optimize.compact_files(materialize_deletions_threshold=0.0)

    def version(self) -> Any:
        if not self.lake.has_table(S.CLAIM_EVENTS):
            return 0
        return self.lake.dataset(S.CLAIM_EVENTS).version


# --- a claim as a row of the claims table, and back -------------------------------------------------
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
        S.VALID_FROM: claim.valid_from,
        S.VALID_TO: claim.valid_to,
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
        valid_from=row.get(S.VALID_FROM),  # absent from the rows of a store written before valid time
        valid_to=row.get(S.VALID_TO),
        seq=row[S.SEQ],
        n=row[S.EVENT_N],
    )
