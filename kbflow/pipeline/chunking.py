"""The chunk step: a source's rows in ``chunks`` brought in line with its rows in ``documents``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import Settings
from kbflow.lake import arrays
from kbflow.lake.lake import Lake
from kbflow.lake.malloc import releases_memory
from kbflow.lake.spill import Spill
from kbflow.lake.sql import sql_in
from kbflow.pipeline.common import records_failure, source_filter
from kbflow.pipeline.engines import Engine, open_engine
from kbflow.pipeline.results import ChunkResult

__all__ = ["chunk_source"]


def _units_in_order(lake: Lake, where: str, unit_hashes: Any, group: int = 64) -> Iterator[dict[str, Any]]:
    """The ``documents`` rows matching ``where`` whose hash is in ``unit_hashes`` (an Arrow array), in ``unit_key``
    order, read ``group`` rows at a time (only the keys of all of them are held at once).

    The hashes are matched in Arrow, not as a SQL ``IN`` list: a list of a
    whole corpus's hashes costs the SQL planner hundreds of MiB.
    """
    if not len(unit_hashes):
        return
    pc = require("pyarrow.compute")
    ds = lake.dataset(S.DOCUMENTS)
    keys = ds.to_table(columns=[S.UNIT_KEY, S.UNIT_HASH], filter=where, with_row_id=True)
    keys = keys.filter(pc.is_in(keys.column(S.UNIT_HASH), value_set=unit_hashes))
    row_ids = keys.sort_by(S.UNIT_KEY).column("_rowid").to_numpy()  # 8 bytes a unit, not a Python int each
    del keys
    for i in range(0, len(row_ids), group):
        yield from Lake.take(ds, row_ids[i : i + group]).to_pylist()


def _first_chunks(
    lake: Lake, engine: Engine, docs: Any, source: Any, chunker: str, settings: Settings, units: int, t0: float
) -> ChunkResult:
    """A source's first chunks written as fragments by ``engine``'s workers, committed here at once."""
    read_version = lake.table(S.CHUNKS).version
    fragments, ids = engine.write_chunks(lake, docs, source, chunker, settings.chunking)
    version = lake.commit_fragments(S.CHUNKS, fragments, read_version)
    pa = require("pyarrow")
    added = len(arrays.distinct(pa.array(ids, type=pa.string())))
    return ChunkResult(
        source.source_id,
        chunks=added,
        chunks_added=added,
        units_chunked=units,
        version=version,
        seconds=time.perf_counter() - t0,
        placement=engine.placement("chunk"),
    )


@releases_memory
@records_failure
def chunk_source(
    lake: Lake, source_id: str, settings: Settings | None = None, *, engine: Engine | None = None
) -> ChunkResult:
    """Bring the source's rows in ``chunks`` in line with its rows in ``documents`` (one commit).

    Only units whose hash is new are chunked; chunks of units that disappeared
    are deleted; a chunk whose text is unchanged keeps its ``chunk_id`` (and so
    its embedding). New chunk settings, a new scope or a moved source re-chunk
    every unit. The units are chunked by ``engine`` (else
    :func:`~kbflow.pipeline.engines.open_engine` from ``settings``; on Ray, a
    task per group of units), their rows committed here in unit order; a
    source's first chunks are written by the Ray workers themselves and
    committed here at once.
    """
    t0 = time.perf_counter()
    pc = require("pyarrow.compute")
    settings = Settings.coerce(settings)
    source = lake.get_source(source_id)
    chunker = settings.chunking.fingerprint()
    where = source_filter(source_id)
    # ids and hashes are compared in Arrow (tens of bytes each), not as Python sets
    doc_hashes = arrays.distinct(lake.scan(S.DOCUMENTS, [S.UNIT_HASH], where).column(0))
    old = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.UNIT_HASH, S.CHUNKER, S.SCOPE, S.URI], where)
    old_units = arrays.distinct(old.column(S.UNIT_HASH))
    stale_rows = any(
        arrays.differs(old.column(column), value)
        for column, value in ((S.CHUNKER, chunker), (S.SCOPE, source.scope), (S.URI, source.uri))
    )
    todo = doc_hashes if stale_rows else arrays.without(doc_hashes, old_units)
    gone = old_units if stale_rows else arrays.without(old_units, doc_hashes)
    if not len(todo) and not len(gone):
        return ChunkResult(source_id, chunks=old.num_rows, seconds=time.perf_counter() - t0)

    table = lake.table(S.CHUNKS)
    engine = engine or open_engine(settings, lake, source)
    if engine.writes_fragments and not old.num_rows:  # a source's first chunks: the workers write them
        docs = _units_in_order(lake, where, todo)
        return _first_chunks(lake, engine, docs, source, chunker, settings, len(todo), t0)
    with Spill(S.CHUNKS_SCHEMA) as spill:
        for row in engine.chunk_rows(_units_in_order(lake, where, todo), source, chunker, settings.chunking):
            spill.append(row)
        new_ids = spill.distinct(S.CHUNK_ID)
        old_ids = old.column(S.CHUNK_ID)
        gone_rows = old.filter(pc.is_in(old.column(S.UNIT_HASH), value_set=gone)) if len(gone) else old.slice(0, 0)
        gone_ids = arrays.without(gone_rows.column(S.CHUNK_ID), new_ids).to_pylist()
        # chunks of re-chunked units that moved to another unit version keep their id: matched and updated
        if spill.num_rows and not len(old_ids):
            lake.append(S.CHUNKS, spill.reader())
        elif spill.num_rows:
            merge = table.merge_insert(S.CHUNK_ID).when_matched_update_all().when_not_matched_insert_all()
            if gone_ids and len(todo) == len(doc_hashes):
                # every current unit was re-chunked: whatever of this source is not in the input goes
                merge = merge.when_not_matched_by_source_delete(where)
            elif gone_ids:
                merge = merge.when_not_matched_by_source_delete(f"{where} AND {sql_in(S.CHUNK_ID, gone_ids)}")
            merge.execute(spill.reader())
        elif gone_ids:
            table.delete(sql_in(S.CHUNK_ID, gone_ids))
    added = arrays.count_missing(new_ids, old_ids)
    return ChunkResult(
        source_id,
        chunks=len(old_ids) - len(gone_ids) + added,
        chunks_added=added,
        chunks_removed=len(gone_ids),
        chunks_updated=len(new_ids) - added,
        units_chunked=len(todo),
        version=lake.table(S.CHUNKS).version,
        seconds=time.perf_counter() - t0,
        placement=engine.placement("chunk"),
    )
