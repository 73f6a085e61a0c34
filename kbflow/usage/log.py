"""What was asked and what was cited: the ``query_log`` and ``citation_log`` tables of the lake.

Every :meth:`Retriever.search <kbflow.retrieve.retriever.Retriever.search>`
from a user-facing surface (Python, a notebook, the CLI, REST, MCP; never an
evaluation, which calls ``rank``) adds a row to ``query_log``: the query, its
origin and caller, filters, mode, ``k``, how many hits, the top score, the
confidence (:attr:`Hits.confidence <kbflow.records.Hits.confidence>`), the
latency and the search-table version. :meth:`Retriever.cite` (and the REST
and MCP surfaces) add a row per chunk put in front of a model to
``citation_log``, with the chunk's hash and text as cited, so a citation
still shows what the model read after its source changed.

Writing never blocks or fails a search: rows go to an in-memory buffer that a
background thread appends to the lake in batches (every
:data:`FLUSH_SECONDS`, or at :data:`FLUSH_ROWS` rows, and when the process
exits or a server stops gracefully), one Lance commit per table per batch. A
process killed outright (``kill -9``, a power cut) loses at most the rows of
the last :data:`FLUSH_SECONDS`. A process whose client may kill it seconds
after its last answer (``kbflow mcp``: an agent closes the pipe, then sends
SIGTERM and SIGKILL) calls :func:`write_at_once`, and each row's write then
starts as soon as it is buffered.

Rows are kept :attr:`Settings.log_days <kbflow.config.Settings.log_days>`
days (90 unless configured; 0 keeps them all): :func:`prune` drops older ones,
as ``kbflow gc`` and a running server (hourly) do. A failed write is logged as a
warning and its rows dropped; the search has long returned. Call
:func:`flush` to write what is buffered now (tests, before reading the logs
in the same process).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kbflow import schema as S
from kbflow._lazy import require

if TYPE_CHECKING:
    from kbflow.lake.lake import Lake
    from kbflow.records import Hit, Hits

__all__ = [
    "FLUSH_ROWS",
    "FLUSH_SECONDS",
    "citation_rows",
    "default_origin",
    "flush",
    "log_citations",
    "log_query",
    "oldest",
    "prune",
    "write_at_once",
]

log = logging.getLogger("kbflow.usage")

#: rows buffered before a write is started without waiting for the timer
FLUSH_ROWS = 256
#: how often the background thread writes what is buffered
FLUSH_SECONDS = 2.0


def default_origin() -> str:
    """``"notebook"`` inside a Jupyter kernel (an IPython shell running over ZMQ), else ``"python"``."""
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
    except Exception:  # pragma: no cover - an IPython too odd to ask
        shell = None
    return "notebook" if shell is not None and type(shell).__name__ == "ZMQInteractiveShell" else "python"


def new_id() -> str:
    return uuid.uuid4().hex


def now() -> datetime:
    return datetime.now(UTC)


class _Buffer:
    """One lake's pending log rows; written by :meth:`flush`, one commit per table."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self.rows: dict[str, list[dict[str, Any]]] = {S.QUERY_LOG: [], S.CITATION_LOG: []}
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()  # one writer per lake at a time: batches stay in order

    def add(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        with self.lock:
            self.rows[table].extend(rows)
            return sum(len(v) for v in self.rows.values())

    def flush(self) -> int:
        pa = require("pyarrow")
        written = 0
        with self.write_lock:
            with self.lock:
                pending, self.rows = self.rows, {S.QUERY_LOG: [], S.CITATION_LOG: []}
            for table, rows in pending.items():
                if not rows:
                    continue
                try:
                    data = pa.Table.from_pylist(rows, schema=S.SCHEMAS[table])
                    self.lake.append(table, data.to_reader())
                    written += len(rows)
                except Exception as exc:  # a log write never surfaces in a search
                    log.warning(
                        "%s: could not write %d %s rows (%s); they are dropped", self.lake.uri, len(rows), table, exc
                    )
        return written


_buffers: dict[str, _Buffer] = {}
_registry_lock = threading.Lock()
_wake = threading.Event()
_thread: threading.Thread | None = None
_thread_pid = -1  # a forked child starts its own writer thread


def _buffer(lake: Lake) -> _Buffer:
    global _thread
    with _registry_lock:
        buf = _buffers.get(lake.uri)
        if buf is None:
            buf = _buffers[lake.uri] = _Buffer(lake)
        if _thread is None or not _thread.is_alive() or _thread_pid != os.getpid():
            _start_thread()
        return buf


def _start_thread() -> None:
    global _thread, _thread_pid
    _thread = threading.Thread(target=_run, name="kbflow-usage-log", daemon=True)
    _thread_pid = os.getpid()
    _thread.start()


_stop = threading.Event()
_at_once = threading.Event()


def write_at_once(on: bool = True) -> None:
    """Start writing each row as soon as it is buffered, not after :data:`FLUSH_SECONDS` (``on=False``: back to
    batches). For a process its client may stop seconds after the last answer: one Lance commit per search."""
    if on:
        _at_once.set()
    else:
        _at_once.clear()


def _run() -> None:
    while not _stop.is_set():
        _wake.wait(FLUSH_SECONDS)
        _wake.clear()
        if not _stop.is_set():
            flush()


def flush(lake: Lake | None = None) -> int:
    """Write the buffered log rows now (of ``lake``, or of every lake); returns the rows written."""
    with _registry_lock:
        buffers = [b for b in _buffers.values() if lake is None or b.lake.uri == lake.uri]
    return sum(b.flush() for b in buffers)


def _at_exit() -> None:
    """Stop the writer thread, then write what is left: no thread is inside a Lance write while the
    interpreter shuts down (a daemon thread in native code then can crash the process)."""
    _stop.set()
    _wake.set()
    thread = _thread
    if thread is not None and thread.is_alive() and _thread_pid == os.getpid():
        thread.join(timeout=10)
    flush()


atexit.register(_at_exit)


def _enqueue(lake: Lake, table: str, rows: Sequence[dict[str, Any]]) -> None:
    try:
        if _buffer(lake).add(table, rows) >= FLUSH_ROWS or _at_once.is_set():
            _wake.set()
    except Exception as exc:  # pragma: no cover - a log never fails a search
        log.warning("%s: could not buffer %s rows (%s)", lake.uri, table, exc)


def log_query(
    lake: Lake,
    hits: Hits,
    *,
    query_id: str,
    origin: str,
    caller: str | None,
    filters: Mapping[str, Any],
    k: int,
    version: int,
    tag: str | None = None,
) -> str:
    """Buffer one ``query_log`` row for a finished search; returns ``query_id``."""
    scope = filters.get("scope")
    rest = {name: value for name, value in filters.items() if name != "scope" and value}
    row = {
        S.QUERY_ID: query_id,
        S.LOGGED_AT: now(),
        S.QUERY: hits.query,
        S.ORIGIN: origin,
        S.CALLER: caller,
        S.SCOPE: scope,
        S.FILTERS: json.dumps(rest, sort_keys=True) if rest else None,
        S.MODE: hits.mode,
        "k": k,
        S.RESULTS: len(hits),
        S.TOP_SCORE: hits[0].score if hits else None,
        S.CONFIDENCE: hits.confidence,
        S.LATENCY_MS: hits.latency_ms,
        S.SEARCH_VERSION: version,
        S.LAKE_TAG: tag,
    }
    _enqueue(lake, S.QUERY_LOG, [row])
    return query_id


def citation_rows(
    hits: Iterable[Hit], *, origin: str, caller: str | None = None, turn_id: str | None = None
) -> list[dict[str, Any]]:
    """``citation_log`` rows for ``hits``: each keeps its chunk hash, citation and text as cited."""
    at = now()
    return [
        {
            S.CITATION_ID: new_id(),
            S.LOGGED_AT: at,
            S.CHUNK_ID: hit.chunk_id,
            S.CHUNK_HASH: hit.citation.chunk_hash,
            S.SOURCE_ID: hit.citation.source_id,
            S.QUERY_ID: hit.query_id,
            S.TURN_ID: turn_id,
            S.ORIGIN: origin,
            S.CALLER: caller,
            S.CITATION: json.dumps(hit.citation.to_dict(), sort_keys=True),
            S.TEXT: hit.text,
        }
        for hit in hits
    ]


def log_citations(lake: Lake, rows: Sequence[dict[str, Any]]) -> int:
    """Buffer ``citation_log`` rows (from :func:`citation_rows`); returns how many."""
    if rows:
        _enqueue(lake, S.CITATION_LOG, rows)
    return len(rows)


def prune(lake: Lake, days: int) -> dict[str, int]:
    """Delete the ``query_log`` and ``citation_log`` rows logged more than ``days`` days ago (``0``: keep every
    row); returns the rows removed per table. Old versions still hold them until ``kbflow gc`` removes those."""
    if days <= 0:
        return {}
    cutoff = (now() - timedelta(days=days)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return lake.delete_where((S.QUERY_LOG, S.CITATION_LOG), f"{S.LOGGED_AT} < TIMESTAMP '{cutoff}'")


def oldest(lake: Lake, table: str) -> datetime | None:
    """When the oldest row of a log table was logged (``None``: no row)."""
    if not lake.has_table(table):
        return None
    column = lake.scan(table, [S.LOGGED_AT]).column(0)
    return min(column.to_pylist()) if len(column) else None


def parse_since(since: str | timedelta | datetime | None) -> datetime | None:
    """A window start: ``"7d"``, ``"12h"``, ``"30m"``, ``"90s"``, a ``timedelta`` back from now, a
    ``datetime`` (naive means UTC), an ISO date or time, or ``None`` (everything)."""
    from kbflow.errors import ConfigError

    if since is None or isinstance(since, datetime):
        return since if since is None or since.tzinfo else since.replace(tzinfo=UTC)
    if isinstance(since, timedelta):
        return now() - since
    text = str(since).strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    if text[:-1].isdigit() and text[-1:] in units:
        return now() - timedelta(seconds=int(text[:-1]) * units[text[-1]])
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"since must be a span like 7d, 12h, 30m (s, m, h, d, w) or an ISO date/time, got {since!r}"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def read_log(lake: Lake, table: str, since: datetime | None = None):
    """The rows of a log table logged at or after ``since``, as a polars frame (empty, with the table's
    columns, where nothing was logged)."""
    pl = require("polars")
    if not lake.has_table(table):
        return pl.from_arrow(S.SCHEMAS[table].empty_table())
    where = None
    if since is not None:
        where = f"{S.LOGGED_AT} >= TIMESTAMP '{since.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    return pl.from_arrow(lake.scan(table, where=where))
