"""Who uses the lake and how: API keys (:mod:`.keys`), the query and citation logs (:mod:`.log`) and the
insights report read from them (:mod:`.insights`).

The log's functions are this package's own names (``usage.flush()``, ``usage.read_log(...)``), as every
surface that searches calls them; :mod:`.keys` and :mod:`.insights` are imported where they are used.
"""

from __future__ import annotations

from kbflow.usage.log import (
    FLUSH_ROWS,
    FLUSH_SECONDS,
    citation_rows,
    default_origin,
    flush,
    log_citations,
    log_query,
    new_id,
    now,
    oldest,
    parse_since,
    prune,
    read_log,
    write_at_once,
)

__all__ = [
    "FLUSH_ROWS",
    "FLUSH_SECONDS",
    "citation_rows",
    "default_origin",
    "flush",
    "log_citations",
    "log_query",
    "new_id",
    "now",
    "oldest",
    "parse_since",
    "prune",
    "read_log",
    "write_at_once",
]
