"""Record time: what the store believed at a moment, replayed from its event log.

Every claim event carries the time it was committed (``at``). A recall
``as_of`` a timestamp asks which claims existed then and in which status:
:class:`Timeline` keeps, for every event that set a claim's status (its
``learn`` and each applied move), the time, the claim and its status before
and after, sorted by time. A claim's status at ``T`` is its status now,
unwound through the events after ``T``: the status before the first of them
(none before its ``learn``: the claim did not exist yet). That costs the
events after ``T``, not the whole log, and builds no claim.

The claims a recall returns are then rebuilt as they stood at ``T``
(:func:`state_at`: their events up to ``T``, folded), so their status,
confidence, evidence and links are what was believed then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from kbflow import schema as S
from kbflow.claims.events import APPLIED, apply_event
from kbflow.claims.model import Claim
from kbflow.claims.recall import ClaimHits
from kbflow.claims.relations import is_relation_id

if TYPE_CHECKING:
    from kbflow.claims.tables import Tables

__all__ = ["Timeline", "as_timestamp", "replay_hits", "state_at"]

_COLUMNS = [S.CLAIM_ID, S.EVENT_N, S.AT, S.EVENT, S.OUTCOME, S.FROM_STATUS, S.TO_STATUS]


def as_timestamp(value: Any) -> datetime:
    """A moment of record time: a :class:`datetime` (naive means UTC) or an ISO string (``2026-11-27``,
    ``2026-11-27T10:00:00Z``); a :class:`~kbflow.errors.QueryError` otherwise."""
    from kbflow.errors import QueryError

    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise QueryError(
                f"as_of: cannot read {value!r} as a timestamp; write ISO 8601 (2026-11-27 or 2026-11-27T10:00:00Z)"
            ) from None
    if not isinstance(value, datetime):
        raise QueryError(f"as_of must be a timestamp, got {type(value).__name__}")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _micros(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000)


class Timeline:
    """The status-setting events of a store, by time (built from the log once, then fed as it grows)."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, int, str | None, str]] = []  # (claim id, at µs, before, after)
        self._rows = np.zeros(0, np.int64)
        self._at = np.zeros(0, np.int64)
        self._before = np.zeros(0, np.int32)
        self._last: dict[str, int] = {}  # claim id -> its last event's time (µs): any event, status or not
        self._added = 0  # events taken in: the cache below holds while it is unchanged
        self._cache: tuple[tuple[int, int, int], np.ndarray] | None = None

    @classmethod
    def from_events(cls, table: Any) -> Timeline:
        """The timeline of an Arrow table of event rows (at least :data:`_COLUMNS`)."""
        timeline = cls()
        timeline.add(table.select(_COLUMNS).to_pylist())
        return timeline

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Take in event rows (relation events and events that set no status are skipped)."""
        for row in rows:
            if is_relation_id(row[S.CLAIM_ID]):
                continue
            at = _micros(row[S.AT])
            self._last[row[S.CLAIM_ID]] = max(at, self._last.get(row[S.CLAIM_ID], at))
            self._added += 1
            if row[S.OUTCOME] != APPLIED:
                continue
            if row[S.EVENT] == "learn":
                before = None
            elif row[S.TO_STATUS]:
                before = row[S.FROM_STATUS]
            else:
                continue
            self._pending.append((row[S.CLAIM_ID], at, before, row[S.TO_STATUS]))

    def _resolve(self, row_of: Mapping[str, int], code: Any) -> None:
        """Turn pending events into the sorted arrays (claims not indexed yet stay pending)."""
        if not self._pending:
            return
        keep: list[tuple[str, int, str | None, str]] = []
        later: list[tuple[str, int, str | None, str]] = []
        for item in self._pending:
            (keep if item[0] in row_of else later).append(item)
        self._pending = later
        if not keep:
            return
        rows = np.asarray([row_of[c] for c, *_ in keep], np.int64)
        at = np.asarray([a for _, a, _, _ in keep], np.int64)
        before = np.asarray([code(b) if b else 0 for _, _, b, _ in keep], np.int32)
        all_at = np.concatenate((self._at, at))
        order = np.argsort(all_at, kind="stable")
        self._rows = np.concatenate((self._rows, rows))[order]
        self._at = all_at[order]
        self._before = np.concatenate((self._before, before))[order]

    def status_codes_at(self, moment: datetime, now: np.ndarray, row_of: Mapping[str, int], code: Any) -> np.ndarray:
        """Each indexed claim's status code at ``moment`` (0: not learned yet), from its code ``now``;
        ``row_of`` maps claim ids to index rows and ``code`` a status to its code. The last answer is kept
        until an event comes in (an analyst replays one moment many times)."""
        key = (_micros(moment), self._added, len(now))
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        self._resolve(row_of, code)
        out = now.astype(np.int32, copy=True)
        first = int(np.searchsorted(self._at, key[0], side="right"))
        if first < len(self._at):
            rows, idx = np.unique(self._rows[first:], return_index=True)  # each claim's first event after
            out[rows] = self._before[first:][idx]
        self._cache = (key, out)
        return out

    def changed_after(self, claim_id: str, moment: datetime) -> bool:
        """Whether the claim had any event after ``moment`` (else its state now is its state then)."""
        return self._last.get(claim_id, 0) > _micros(moment)


def state_at(claim_id: str, rows: Sequence[Mapping[str, Any]], moment: datetime) -> Claim | None:
    """The claim as its events up to ``moment`` leave it (``None``: not learned by then)."""
    claim = None
    for row in sorted(rows, key=lambda r: r[S.EVENT_N]):
        if row[S.CLAIM_ID] == claim_id and row[S.AT] <= moment:
            claim = apply_event(claim, row)
    return claim


def replay_hits(hits: ClaimHits, tables: Tables, upto: int, moment: datetime, timeline: Timeline) -> ClaimHits:
    """``hits`` with each claim as it stood at ``moment``: a claim with no event since is as it is now; the
    others' events (up to event ``upto``) are read in one scan and folded up to then."""
    ids = [h.claim.claim_id for h in hits if timeline.changed_after(h.claim.claim_id, moment)]
    if not ids:
        return hits
    rows = tables.events_table(S.CLAIM_EVENTS_SCHEMA.names, upto, claim_ids=ids).to_pylist()
    then = [
        replace(h, claim=state_at(h.claim.claim_id, rows, moment) or h.claim) if h.claim.claim_id in ids else h
        for h in hits
    ]
    return ClaimHits(then, query=hits.query)
