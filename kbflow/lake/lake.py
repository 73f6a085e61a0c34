"""The lake: a folder (or any Lance URI) of Lance datasets, one per table.

:class:`Lake` is the tables (:mod:`kbflow.lake.tables`) with their versions and
tags (:mod:`kbflow.lake.snapshots`), and the source registry: the ``sources``
table, so the lake alone says what to ingest, from any working directory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.errors import SourceConflictError, SourceError, SourceNotFoundError
from kbflow.lake.snapshots import Snapshots
from kbflow.lake.sql import sql_in
from kbflow.lake.storage import env_storage_options
from kbflow.records import Source

__all__ = ["Lake", "env_storage_options", "now"]


def now() -> datetime:
    return datetime.now(UTC)


class Lake(Snapshots):
    """A handle on the lake at ``uri``: its tables, their versions and tags, and its source registry.

    Parameters
    ----------
    uri:
        A local folder or any Lance URI; ``None`` means ``$KBFLOW_LAKE`` or ``./data/lake``.
    create:
        Create the folder (local lakes) if it does not exist. Readers pass
        ``False`` and get :class:`LakeNotFoundError` for a lake that is not there.
    storage_options:
        Object-store options (S3 keys, endpoint); ``None`` reads them from the
        environment (:func:`kbflow.lake.storage.env_storage_options`).
    """

    def sources(self, ids: Iterable[str] | None = None, at: int | str | None = None) -> list[Source]:
        where = sql_in(S.SOURCE_ID, ids) if ids is not None else None
        rows = self.scan(S.SOURCES, where=where, at=at).to_pylist()
        return sorted((Source.from_row(r) for r in rows), key=lambda s: s.source_id)

    def get_source(self, source_id: str) -> Source:
        found = self.sources([source_id])
        if not found:
            known = ", ".join(s.source_id for s in self.sources()) or "none"
            raise SourceNotFoundError(f"no source {source_id!r} in {self.uri} (registered: {known})")
        return found[0]

    def register(self, source: Source) -> Source:
        """Add ``source`` to the registry (re-adding the same uri and type updates scope and title).

        The scope is checked and normalized (:func:`kbflow.records.scopes.normalize`).
        """
        from kbflow.records import scopes
        from kbflow.records.source_ids import check_source_id
        from kbflow.text.terms import LONE_HALF, escaped_halves

        for what, value in (("path", source.uri), ("source id", source.source_id), ("title", source.title)):
            if value and LONE_HALF.search(value):
                raise SourceError(
                    f"{escaped_halves(value)}: the {what} is not valid UTF-8 (a legacy encoding?); rename it to UTF-8"
                )
        normalized = scopes.normalize(source.scope)
        if normalized != source.scope:
            source = Source(**{**source.__dict__, "scope": normalized})
        existing = {s.source_id: s for s in self.sources()}
        old = existing.get(source.source_id)
        if old is None:
            check_source_id(source.source_id)  # ids of an older rule stay usable; new ones follow this one
        if old is not None and (old.uri != source.uri or old.source_type != source.source_type):
            raise SourceConflictError(
                f"source id {source.source_id!r} is already registered for {old.source_type} {old.uri}; "
                "choose another with --id"
            )
        for other in existing.values():
            if (
                other.source_id != source.source_id
                and other.uri == source.uri
                and other.source_type == source.source_type
            ):
                raise SourceConflictError(f"{source.uri} is already registered as source {other.source_id!r}")
        if old is not None:
            source = Source(
                **{**old.__dict__, "scope": source.scope, "title": source.title or old.title, "options": source.options}
            )
        elif source.added_at is None:
            source = Source(**{**source.__dict__, "added_at": now()})
        self.update_sources([source.to_row()])
        return source

    def update_sources(self, rows: Sequence[dict[str, Any]]) -> None:
        """Upsert registry rows (whole rows, keyed by ``source_id``) in one commit."""
        if not rows:
            return
        pa = require("pyarrow")
        data = pa.Table.from_pylist(
            [{f.name: r.get(f.name) for f in S.SOURCES_SCHEMA} for r in rows], schema=S.SOURCES_SCHEMA
        )
        table = self.table(S.SOURCES)
        (table.merge_insert(S.SOURCE_ID).when_matched_update_all().when_not_matched_insert_all().execute(data))

    def set_status(self, updates: dict[str, dict[str, Any]]) -> None:
        """Change fields of registered sources: ``{source_id: {column: value}}``, one commit."""
        if not updates:
            return
        rows = []
        for source in self.sources(updates):
            row = source.to_row()
            row.update(updates[source.source_id])
            rows.append(row)
        self.update_sources(rows)
