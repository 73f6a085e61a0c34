"""Build and keep in step the search table and its indexes.

The search table holds every chunk row plus its vector for the active model,
with a BM25 full-text index on ``text``, scalar indexes on the filter columns
and (from :data:`VECTOR_INDEX_MIN_ROWS` rows) an ANN vector index. Below that
size the retriever's exact in-memory scan is faster than an index probe, and
building an index would only slow ingestion down.

:func:`sync_search_table` diffs the chunks table against the search table by
``(chunk_id, row_hash)`` and writes only what changed in one commit (a full
rebuild when the active model changes), then brings every index up to date,
so no row is left to the slower unindexed scan. Lance's ``optimize_indices``
is used rather than ``optimize()``, which would also prune old versions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import EXACT_MAX_ROWS
from kbflow.embed.base import model_id_of
from kbflow.errors import LakeError
from kbflow.lake.lake import Lake

__all__ = ["IndexResult", "VECTOR_INDEX_MIN_ROWS", "index_coverage", "search_model", "sync_search_table"]

#: Below this many rows the dense leg is an exact scan; at or above it an ANN index is built.
VECTOR_INDEX_MIN_ROWS = EXACT_MAX_ROWS
FTS_INDEX = "text_idx"
VECTOR_INDEX = "vector_idx"
SCALAR_INDEXES = {S.SCOPE: "Bitmap", S.CONTENT_KIND: "Bitmap", S.SOURCE_TYPE: "Bitmap", S.SOURCE_ID: "BTree"}
_BATCH = 4096


@dataclass
class IndexResult:
    rows: int = 0
    rows_upserted: int = 0
    rows_deleted: int = 0
    rebuilt: bool = False
    missing_embeddings: int = 0
    model_id: str = ""
    version: int | None = None
    indexes: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0


def search_model(table) -> str | None:
    """The model id the search table's vectors came from (schema metadata of a LanceDB table or Lance dataset)."""
    meta = table.schema.metadata or {}
    value = meta.get(S.SEARCH_MODEL_META)
    return value.decode() if value else None


def _vector_lookup(lake: Lake, model_id: str):
    """``(dataset, {chunk_hash: row offset})`` over the embeddings of ``model_id`` (one pinned version)."""
    if not lake.has_table(S.EMBEDDINGS):
        return None, {}
    ds = lake.table(S.EMBEDDINGS).to_lance()
    cols = ds.to_table(columns=[S.CHUNK_HASH, S.MODEL_ID])
    hashes = cols.column(S.CHUNK_HASH).to_pylist()
    models = cols.column(S.MODEL_ID).to_pylist()
    return ds, {h: i for i, (h, m) in enumerate(zip(hashes, models)) if m == model_id}


def _search_batches(lake: Lake, ids: set[str] | None, model_id: str, dim: int, schema, counter: dict) -> Iterator[Any]:
    """Stream search rows (chunk columns + fixed-size vector) for chunk ids ``ids`` (``None``: all)."""
    pa = require("pyarrow")
    emb, lookup = _vector_lookup(lake, model_id)
    chunks = lake.table(S.CHUNKS).to_lance()
    filt = None if ids is None else S.sql_in(S.CHUNK_ID, ids)
    for batch in chunks.to_batches(filter=filt, batch_size=_BATCH):
        hashes = batch.column(S.CHUNK_HASH).to_pylist()
        keep = [i for i, h in enumerate(hashes) if h in lookup]
        counter["missing"] += len(hashes) - len(keep)
        if not keep:
            continue
        batch = batch.take(pa.array(keep))
        vectors = emb.take([lookup[hashes[i]] for i in keep], columns=[S.VECTOR])
        flat = pa.concat_arrays([c.flatten() for c in vectors.column(S.VECTOR).chunks])
        if len(flat) != len(keep) * dim:
            raise LakeError(f"{lake.uri}: embeddings of model {model_id} are not all {dim}-dimensional")
        vec = pa.FixedSizeListArray.from_arrays(flat.cast(pa.float32()), dim)
        cols = [batch.column(f.name) for f in S.CHUNKS_SCHEMA]
        hits = pa.array([S.hit_json(row) for row in batch.select(list(S.HIT_COLUMNS)).to_pylist()], pa.string())
        counter["rows"] += len(keep)
        yield pa.RecordBatch.from_arrays([*cols, hits, vec], schema=schema)


def _dim(lake: Lake, model_id: str) -> int | None:
    if not lake.has_table(S.EMBEDDINGS):
        return None
    ds = lake.table(S.EMBEDDINGS).to_lance()
    head = ds.to_table(columns=[S.VECTOR], filter=f"{S.MODEL_ID} = {S.sql_str(model_id)}", limit=1)
    return len(head.column(0)[0]) if head.num_rows else None


def sync_search_table(lake: Lake, model: str) -> IndexResult:
    """Make the search table hold exactly the current chunks with ``model``'s vectors, fully indexed."""
    t0 = time.perf_counter()
    pa = require("pyarrow")
    model_id = model_id_of(model)
    result = IndexResult(model_id=model_id)
    counter = {"missing": 0, "rows": 0}
    if not lake.has_table(S.CHUNKS):
        return result
    dim = _dim(lake, model_id)
    if dim is None:
        # nothing embedded with this model yet: the search table cannot be built
        result.missing_embeddings = len(lake.scan(S.CHUNKS, [S.CHUNK_ID]))
        return result
    schema = S.search_schema(dim).with_metadata({S.SEARCH_MODEL_META: model_id.encode()})

    current = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.ROW_HASH])
    want = dict(zip(current.column(0).to_pylist(), current.column(1).to_pylist()))
    rebuild = True
    if lake.has_table(S.SEARCH):
        table = lake.table(S.SEARCH)
        vec_type = table.schema.field(S.VECTOR).type
        # a table written before a schema change (e.g. without the hit column) is rebuilt too
        rebuild = (
            search_model(table) != model_id
            or getattr(vec_type, "list_size", None) != dim
            or table.schema.remove_metadata() != schema.remove_metadata()
        )
    if rebuild:
        reader = pa.RecordBatchReader.from_batches(schema, _search_batches(lake, None, model_id, dim, schema, counter))
        mode = "overwrite" if lake.has_table(S.SEARCH) else "create"
        table = lake.db.create_table(S.SEARCH, data=reader, schema=schema, mode=mode)
        result.rebuilt = True
        result.rows_upserted = counter["rows"]
    else:
        have_tbl = lake.scan(S.SEARCH, [S.CHUNK_ID, S.ROW_HASH])
        have = dict(zip(have_tbl.column(0).to_pylist(), have_tbl.column(1).to_pylist()))
        upsert = {cid for cid, h in want.items() if have.get(cid) != h}
        # rows whose vector was missing last time are retried through `upsert` (not in `have`)
        delete = set(have) - set(want)
        if upsert:
            data = pa.Table.from_batches(list(_search_batches(lake, upsert, model_id, dim, schema, counter)), schema=schema)
            if data.num_rows:
                merge = table.merge_insert(S.CHUNK_ID).when_matched_update_all().when_not_matched_insert_all()
                if delete:
                    merge = merge.when_not_matched_by_source_delete(S.sql_in(S.CHUNK_ID, delete))
                merge.execute(data)
            elif delete:
                table.delete(S.sql_in(S.CHUNK_ID, delete))
        elif delete:
            table.delete(S.sql_in(S.CHUNK_ID, delete))
        result.rows_upserted = counter["rows"]
        result.rows_deleted = len(delete)
    result.missing_embeddings = counter["missing"]
    table = lake.table(S.SEARCH)
    ensure_indexes(table)
    result.rows = table.count_rows()
    result.version = table.version
    result.indexes = index_coverage(table)
    result.seconds = time.perf_counter() - t0
    return result


def ensure_indexes(table) -> None:
    """Create missing indexes and fold unindexed rows into the existing ones."""
    rows = table.count_rows()
    if rows == 0:
        return  # never build the full-text index on an empty table
    names = {ix.name for ix in table.list_indices()}
    configs = require("lancedb.index")
    if FTS_INDEX not in names:
        fts = configs.FTS(language="English", stem=True, remove_stop_words=True, lower_case=True, ascii_folding=True)
        table.create_index(S.TEXT, config=fts, name=FTS_INDEX)
    for column, kind in SCALAR_INDEXES.items():
        name = f"{column}_idx"
        if name not in names:
            table.create_index(column, config=getattr(configs, kind)(), name=name)
    if VECTOR_INDEX not in names and rows >= VECTOR_INDEX_MIN_ROWS:
        config = configs.IvfHnswSq(distance_type="cosine", num_partitions=max(1, rows // 50_000))
        table.create_index(S.VECTOR, config=config, name=VECTOR_INDEX)
    stale = [name for name, v in index_coverage(table).items() if v["unindexed"]]
    if stale:
        table.to_lance().optimize.optimize_indices(index_names=stale)


def index_coverage(table) -> dict[str, dict[str, Any]]:
    """``{index name: {"type", "indexed", "unindexed"}}`` for every index of the search table."""
    out: dict[str, dict[str, Any]] = {}
    for ix in table.list_indices():
        stats = table.index_stats(ix.name)
        out[ix.name] = {
            "type": str(stats.index_type),
            "indexed": int(stats.num_indexed_rows),
            "unindexed": int(stats.num_unindexed_rows),
        }
    return out
