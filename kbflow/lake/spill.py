"""Spill rows to a temporary Arrow IPC file as they are produced, and read them back as a stream.

A step that must know everything it will write before it writes (which ids are
new, which are gone) builds its rows once, spills them here in small batches,
decides, then hands Lance a :class:`pyarrow.RecordBatchReader` over the file.
Memory stays bounded by one batch however large the source is.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from typing import Any

from kbflow._lazy import require

__all__ = ["Spill"]

#: rows per spilled record batch
ROWS_PER_BATCH = 512


class Spill:
    """A temporary on-disk stream of record batches with one schema (use as a context manager).

    >>> with Spill(schema) as spill:          # doctest: +SKIP
    ...     spill.extend(rows)                # dicts, batched and written as they come
    ...     table.add(spill.reader())         # read back batch by batch
    """

    def __init__(self, schema, rows_per_batch: int = ROWS_PER_BATCH) -> None:
        pa = require("pyarrow")
        self.schema = schema
        self.rows_per_batch = rows_per_batch
        #: rows appended or written so far
        self.num_rows = 0
        fd, self.path = tempfile.mkstemp(prefix="kbflow-spill-", suffix=".arrows")
        os.close(fd)
        self._sink = pa.OSFile(self.path, "wb")
        self._writer = pa.ipc.new_stream(self._sink, schema)
        self._buffer: list[dict[str, Any]] = []

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, row: dict[str, Any]) -> None:
        self._buffer.append(row)
        self.num_rows += 1
        if len(self._buffer) >= self.rows_per_batch:
            self._flush()

    def extend(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.append(row)

    def write(self, batch) -> None:
        """Spill a ready-made record batch (after any buffered rows)."""
        self._flush()
        if batch.num_rows:
            self._writer.write_batch(batch)
            self.num_rows += batch.num_rows

    def _flush(self) -> None:
        if self._buffer:
            pa = require("pyarrow")
            self._writer.write_batch(pa.RecordBatch.from_pylist(self._buffer, schema=self.schema))
            self._buffer = []

    def _finish(self) -> None:
        if self._writer is not None:
            self._flush()
            self._writer.close()
            self._sink.close()
            self._writer = None

    def reader(self):
        """A :class:`pyarrow.RecordBatchReader` over everything spilled so far (finishes writing)."""
        pa = require("pyarrow")
        self._finish()
        return pa.ipc.open_stream(pa.OSFile(self.path, "rb"))

    def distinct(self, name: str):
        """The distinct non-null values of one column of everything spilled so far, as an Arrow array."""
        return self.distinct_columns([name])[name]

    def distinct_columns(self, names: list[str]) -> dict[str, Any]:
        """``{name: distinct non-null values}`` of several columns, in one read of the spill.

        Read batch by batch; only the distinct values are kept (copied out of
        each batch, so no batch stays alive through them).
        """
        pa, pc = require("pyarrow"), require("pyarrow.compute")
        parts: dict[str, list] = {name: [] for name in names}
        for batch in self.reader():
            for name in names:
                parts[name].append(pc.unique(batch.column(name).drop_null()))
        return {
            name: pc.unique(pa.concat_arrays(got)) if got else pa.array([], type=self.schema.field(name).type)
            for name, got in parts.items()
        }

    def column(self, name: str):
        """One column of everything spilled so far, as one Arrow array (holds the whole column)."""
        pa = require("pyarrow")
        got = [batch.column(name) for batch in self.reader()]
        return pa.concat_arrays(got) if got else pa.array([], type=self.schema.field(name).type)

    def keep_first(self, name: str) -> list[Any]:
        """Drop every row whose ``name`` value an earlier row already has; returns the dropped values in order.

        The spill is rewritten batch by batch only when something is dropped
        (the column itself is held whole, as :meth:`column` does).
        """
        pl = require("polars")
        values = pl.from_arrow(self.column(name))
        first = values.is_first_distinct()
        if first.all():
            return []
        dropped = values.filter(~first).to_list()
        del values
        pa = require("pyarrow")
        fd, path = tempfile.mkstemp(prefix="kbflow-spill-", suffix=".arrows")
        os.close(fd)
        mask, start, kept = first.to_arrow(), 0, 0
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, self.schema) as writer:
            for batch in self.reader():
                part = batch.filter(mask.slice(start, batch.num_rows))
                start += batch.num_rows
                kept += part.num_rows
                if part.num_rows:
                    writer.write_batch(part)
        os.unlink(self.path)
        self.path, self.num_rows = path, kept
        return dropped

    def close(self) -> None:
        """Finish and delete the file."""
        try:
            self._finish()
        finally:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
