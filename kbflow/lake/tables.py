"""A lake's tables: each a Lance dataset, opened, created, migrated, read and written.

Every write is one atomic Lance commit and so a new table version; nothing is
updated in place. A local table is read by Lance alone, so a process that only
reads (or only appends its query log) never imports LanceDB.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import resolve_lake
from kbflow.errors import LakeError, LakeNotFoundError, VersionNotFoundError
from kbflow.lake.storage import env_storage_options

__all__ = ["FRAGMENT_ROWS", "WRITE_PAGE_BYTES", "Tables"]


#: page size (and write cache) of Lance writes: bounds the writer's buffers per column
WRITE_PAGE_BYTES = 4 << 20
#: rows per data file of :meth:`Tables.append` / :meth:`Tables.overwrite`: each file is closed before the next begins
FRAGMENT_ROWS = 16_384


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


class Tables:
    """The lake's tables at ``uri``: opened, created, migrated, read and written.

    :class:`~kbflow.lake.lake.Lake` is this with its versions, tags and source
    registry on top; its docstring describes the parameters.
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
        return f"{type(self).__name__}({self.uri!r})"

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
