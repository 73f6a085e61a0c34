"""The lake: a folder (or any Lance URI) of Lance datasets, one per table.

Every write is one atomic Lance commit and so a new table version; nothing is
updated in place. The source registry is the ``sources`` table, so the lake
alone says what to ingest, from any working directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import resolve_lake
from kbflow.errors import (
    LakeError,
    LakeNotFoundError,
    SourceConflictError,
    SourceError,
    SourceNotFoundError,
    VersionNotFoundError,
)
from kbflow.lake.lease import lease
from kbflow.lake.sql import sql_in
from kbflow.lake.storage import env_storage_options
from kbflow.records import Source

__all__ = ["Lake", "env_storage_options", "now"]


#: page size (and write cache) of Lance writes: bounds the writer's buffers per column
WRITE_PAGE_BYTES = 4 << 20
#: rows per data file of :meth:`Lake.append` / :meth:`Lake.overwrite`: each file is closed before the next begins
FRAGMENT_ROWS = 16_384


def now() -> datetime:
    return datetime.now(UTC)


def _tag_version(info: Any) -> int:
    """The version a Lance tag points at (a dict or an object, by pylance version)."""
    return int(info["version"] if isinstance(info, dict) else info.version)


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


class Lake:
    """A handle on the lake at ``uri``.

    Parameters
    ----------
    uri:
        A local folder or any Lance URI; ``None`` means ``$KBFLOW_LAKE`` or ``./data/lake``.
    create:
        Create the folder (local lakes) if it does not exist. Readers pass
        ``False`` and get :class:`LakeNotFoundError` for a lake that is not there.
    """

    def __init__(
        self,
        uri: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self.uri = resolve_lake(uri)
        self.storage_options = storage_options if storage_options is not None else env_storage_options()
        if _is_local(self.uri):
            path = self.uri.removeprefix("file://")
            if os.path.exists(path) and not os.path.isdir(path):
                raise LakeError(f"{path}: is a file, not a lake folder; pass --lake a folder path (created if missing)")
            if not os.path.exists(path):
                if not create:
                    raise LakeNotFoundError(
                        f"{path}: no lake here; register sources with `kbflow add` and run `kbflow ingest`, "
                        "or pass --lake / set KBFLOW_LAKE to an existing lake"
                    )
                try:
                    os.makedirs(path, exist_ok=True)
                except OSError as exc:
                    raise LakeError(f"{path}: cannot create the lake folder ({exc.strerror or exc})") from None
        self._db = None

    def __repr__(self) -> str:
        return f"Lake({self.uri!r})"

    @property
    def is_local(self) -> bool:
        return _is_local(self.uri)

    @property
    def db(self):
        if self._db is None:
            lancedb = require("lancedb")
            try:
                self._db = lancedb.connect(self.uri, storage_options=self.storage_options or None)
            except Exception as exc:
                raise LakeError(f"{self.uri}: cannot open the lake ({exc})") from exc
        return self._db

    # --- tables -------------------------------------------------------------
    def has_table(self, name: str) -> bool:
        return name in self.table_names()

    def table_names(self) -> list[str]:
        """The tables with at least one committed version (a table whose first write was cut off by a full
        disk or a kill leaves a folder with no version: it does not exist yet)."""
        if self.is_local:  # the folder's own listing: a reader need not import LanceDB
            try:
                names = [e.removesuffix(".lance") for e in os.listdir(self._root) if e.endswith(".lance")]
            except FileNotFoundError:
                names = []
        else:
            listing = self.db.list_tables()
            names = getattr(listing, "tables", listing)
        return sorted(n for n in names if self._committed(n))

    @property
    def _root(self) -> str:
        return self.uri.removeprefix("file://")

    def _committed(self, name: str) -> bool:
        if not self.is_local:
            return True
        versions = os.path.join(self._root, f"{name}.lance", "_versions")
        try:
            return any(entry.endswith(".manifest") for entry in os.listdir(versions))
        except OSError:
            return False

    def table(self, name: str, *, create: bool = True, schema=None):
        """The Lance table ``name`` at its latest version, created empty if missing and ``create``."""
        if self.has_table(name):
            table = self.db.open_table(name)
            if name in S.SCHEMAS and schema is None:
                self._add_missing_columns(name, table)
            return table
        if not create:
            raise LakeNotFoundError(f"{self.uri}: the lake has no {name!r} table yet; run `kbflow ingest` first")
        schema = schema if schema is not None else S.SCHEMAS[name]
        if self.is_local and self._committed(name):
            # another process committed it since has_table: open it (replacing it would drop that process's rows)
            return self.db.open_table(name)
        # a folder without a committed version holds nothing anyone can read: replace it
        leftover = self.is_local and os.path.isdir(os.path.join(self._root, f"{name}.lance"))
        return self.db.create_table(name, schema=schema, mode="overwrite" if leftover else "create", exist_ok=True)

    def migrate(self) -> list[str]:
        """Bring tables written by an older kbflow to the current schemas; returns the tables rewritten.

        New columns are added as nulls (by :meth:`table`); a column whose type
        grew (a locator field added to the struct) is rewritten, batch by
        batch, as one new version (older versions stay readable). Writers
        call this first, holding the lake's lease.
        """
        pa = require("pyarrow")
        rewritten = []
        for name, want in S.SCHEMAS.items():
            if not self.has_table(name):
                continue
            have = self.table(name).schema
            if not any(f.name in have.names and have.field(f.name).type != f.type for f in want):
                continue
            target = pa.schema([want.field(n) if n in want.names else have.field(n) for n in have.names])
            ds = self.dataset(name)
            batches = (batch.cast(target) for batch in ds.to_batches(batch_size=4096))
            self.overwrite(name, pa.RecordBatchReader.from_batches(target, batches))
            rewritten.append(name)
        return rewritten

    def _add_missing_columns(self, name: str, table) -> None:
        """A table written by an older kbflow gets the columns added since, as nulls (one commit)."""
        have = set(table.schema.names)
        missing = [f for f in S.SCHEMAS[name] if f.name not in have]
        if missing:
            table.add_columns(missing)

    def append(self, name: str, reader, rows_per_fragment: int = FRAGMENT_ROWS) -> int:
        """Append a stream of record batches to table ``name`` in one commit; returns the new version.

        Written as files of at most ``rows_per_fragment`` rows, each closed
        before the next begins (see :meth:`overwrite`), then committed at once.
        """
        lance = require("lance")
        # a local table is opened by Lance alone: a process that only appends its query log never imports LanceDB
        ds = self._local_dataset(name)
        if ds is None:
            ds = self.table(name, schema=reader.schema).to_lance()
        fragments = self._write_files(ds, reader, "append", rows_per_fragment)
        if not fragments:
            return ds.version
        return lance.LanceDataset.commit(ds, lance.LanceOperation.Append(fragments), read_version=ds.version).version

    def write_fragments(self, name: str, reader, rows_per_fragment: int = FRAGMENT_ROWS) -> list:
        """Write a stream of record batches to table ``name`` (which must exist) as uncommitted data files, for
        :meth:`commit_fragments` to commit: how many workers write one table and commit once."""
        uri = self.dataset(name).uri
        return self._write_files(uri, reader, "append", rows_per_fragment, self.storage_options)

    def commit_fragments(self, name: str, fragments: list, read_version: int) -> int:
        """Append the uncommitted ``fragments`` (:meth:`write_fragments`, from any process) to table ``name`` in one
        commit on top of ``read_version``; returns the new version (``read_version`` when there are none)."""
        lance = require("lance")
        if not fragments:
            return read_version
        ds = self.dataset(name)
        return lance.LanceDataset.commit(ds, lance.LanceOperation.Append(fragments), read_version=read_version).version

    def overwrite(self, name: str, reader, rows_per_fragment: int = FRAGMENT_ROWS) -> int:
        """Replace (or create) table ``name`` with a stream of record batches, in one commit; returns its version.

        The stream is written as data files of at most ``rows_per_fragment``
        rows, each closed before the next begins, and all of them committed at
        once. Memory stays bounded by one file's worth of rows however long
        the stream (one Lance write of the whole stream grows with it), and
        readers see the old table or the new one, never a part of it.
        """
        lance = require("lance")
        uri = f"{self.uri.rstrip('/')}/{name}.lance"
        read_version = self.dataset(name).version if self.has_table(name) else None
        mode = "overwrite" if read_version is not None else "create"  # "overwrite" on nothing warns
        fragments = self._write_files(uri, reader, mode, rows_per_fragment, self.storage_options)
        operation = lance.LanceOperation.Overwrite(reader.schema, fragments)
        options = self.storage_options or None
        return lance.LanceDataset.commit(uri, operation, read_version=read_version, storage_options=options).version

    @staticmethod
    def _write_files(target, reader, mode: str, rows_per_fragment: int, storage_options=None) -> list:
        """Write ``reader`` as uncommitted Lance data files of at most ``rows_per_fragment`` rows each."""
        pa = require("pyarrow")
        from lance.fragment import write_fragments

        schema = reader.schema
        fragments: list = []
        pending: list = []
        rows = 0

        def flush() -> None:
            if pending:
                part = pa.RecordBatchReader.from_batches(schema, iter(pending))
                fragments.extend(
                    write_fragments(
                        part,
                        target,
                        schema=schema,
                        mode=mode,
                        max_page_bytes=WRITE_PAGE_BYTES,
                        data_cache_bytes=WRITE_PAGE_BYTES,
                        **({"storage_options": storage_options} if storage_options and isinstance(target, str) else {}),
                    )
                )
                pending.clear()

        for batch in reader:
            pending.append(batch)
            rows += batch.num_rows
            if rows >= rows_per_fragment:
                flush()
                rows = 0
        flush()
        return fragments

    @staticmethod
    def take(dataset, row_ids, columns: Sequence[str] | None = None):
        """Rows of a pinned Lance dataset version by Lance row id, in the order given, as an Arrow table."""
        ids = row_ids.tolist() if hasattr(row_ids, "tolist") else list(row_ids)
        return dataset._take_rows(ids, columns=list(columns) if columns is not None else None)

    def versions(self) -> dict[str, int]:
        """The latest version of every table in the lake."""
        return {name: self.db.open_table(name).version for name in self.table_names()}

    def _local_dataset(self, name: str):
        """Local table ``name`` opened by Lance alone (no LanceDB import); ``None`` where the lake is remote, the
        table has no version, or it lacks a column added since (:meth:`table` adds it)."""
        if not self.is_local or not self._committed(name):
            return None
        ds = require("lance").dataset(
            os.path.join(self._root, f"{name}.lance"), storage_options=self.storage_options or None
        )
        if name in S.SCHEMAS and not {f.name for f in S.SCHEMAS[name]} <= set(ds.schema.names):
            return None
        return ds

    def dataset(self, name: str, at: int | str | None = None):
        """The Lance dataset of table ``name``, at its latest version or at ``at`` (a version number or a tag)."""
        ds = self._local_dataset(name)
        if ds is None:
            ds = self.table(name, create=False).to_lance()
        if at is None:
            return ds
        try:
            return ds.checkout_version(at)
        except Exception:
            what = f"tag {at!r}" if isinstance(at, str) else f"version {at}"
            raise VersionNotFoundError(f"table {name!r} has no {what} (`kbflow versions` lists them)") from None

    def scan(
        self, name: str, columns: Sequence[str] | None = None, where: str | None = None, at: int | str | None = None
    ):
        """Read ``columns`` of the rows matching ``where`` as an Arrow table (empty if no table)."""
        pa = require("pyarrow")
        if not self.has_table(name):
            schema = S.SCHEMAS[name]
            if columns:
                schema = pa.schema([schema.field(c) for c in columns])
            return schema.empty_table()
        ds = self.dataset(name, at)
        return ds.to_table(columns=list(columns) if columns else None, filter=where)

    def delete_where(self, names: Sequence[str], where: str) -> dict[str, int]:
        """Delete the rows matching ``where`` from each table of ``names`` the lake has; returns the rows removed
        per table (a table with no match is not written: no new version)."""
        removed: dict[str, int] = {}
        for name in names:
            if not self.has_table(name):
                continue
            table = self.table(name)
            removed[name] = table.count_rows(where)
            if removed[name]:
                table.delete(where)
        return removed

    # --- versions and snapshots --------------------------------------------
    def history(self) -> dict[str, list[dict[str, Any]]]:
        """Every readable version of every table: ``{table: [{"version", "timestamp", "tags"}]}``."""
        out: dict[str, list[dict[str, Any]]] = {}
        for name in self.table_names():
            ds = self.dataset(name)
            tags: dict[int, list[str]] = {}
            for tag, info in ds.tags.list().items():
                tags.setdefault(_tag_version(info), []).append(tag)
            out[name] = [
                {"version": v["version"], "timestamp": v["timestamp"], "tags": sorted(tags.get(v["version"], []))}
                for v in ds.versions()
            ]
        return out

    def snapshots(self) -> dict[str, dict[str, int]]:
        """Lake snapshots made by :meth:`tag`: ``{tag: {table: version}}``."""
        out: dict[str, dict[str, int]] = {}
        for name in self.table_names():
            for tag, info in self.dataset(name).tags.list().items():
                out.setdefault(tag, {})[name] = _tag_version(info)
        return dict(sorted(out.items()))

    def tag(self, name: str, *, wait: float = 0.0) -> dict[str, int]:
        """Tag the current version of every table ``name``: one consistent snapshot of the whole lake.

        Readers open it with ``Retriever.open(lake, tag=name)``; :meth:`gc` never
        removes tagged versions. Returns ``{table: version}``.
        """
        if not name or not isinstance(name, str) or not all(c.isalnum() or c in "-_." for c in name):
            raise LakeError(f"tag names are letters, digits, '-', '_' and '.', got {name!r}")
        with lease(self.uri, f"kbflow tag {name}", wait=wait):  # no writer between the tables' versions
            if name in self.snapshots():
                raise LakeError(f"{self.uri}: tag {name!r} already exists (see `kbflow versions`)")
            tagged: dict[str, int] = {}
            for table in self.table_names():
                ds = self.dataset(table)
                ds.tags.create(name, ds.version)
                tagged[table] = ds.version
        if not tagged:
            raise LakeError(f"{self.uri}: the lake has no tables yet; run `kbflow ingest` first")
        return tagged

    def gc(
        self, keep: int | None = None, older_than: timedelta | None = None, *, wait: float = 0.0
    ) -> dict[str, dict[str, int]]:
        """Delete old table versions: keep the newest ``keep`` of each table and/or those newer than ``older_than``.

        Tagged versions are always kept, and so is every table's latest
        version. Returns ``{table: {"versions_removed", "bytes_removed"}}``.
        """
        if keep is None and older_than is None:
            raise LakeError("gc needs keep (versions per table) and/or older_than (an age)")
        if keep is not None and keep < 1:
            raise LakeError(f"keep must be >= 1 (the latest version always stays), got {keep}")
        out: dict[str, dict[str, int]] = {}
        with lease(self.uri, "kbflow gc", wait=wait):
            for name in self.table_names():
                ds = self.dataset(name)
                stats = ds.cleanup_old_versions(
                    older_than=older_than if older_than is not None else timedelta(0),
                    retain_versions=keep,
                    error_if_tagged_old_versions=False,
                )
                out[name] = {"versions_removed": int(stats.old_versions), "bytes_removed": int(stats.bytes_removed)}
        return out

    # --- the source registry ------------------------------------------------
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
