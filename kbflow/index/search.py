"""Build and keep in step the search table and its indexes.

The search table holds every chunk row plus its vector for the active model,
with a BM25 full-text index on ``text``, scalar indexes on the filter columns
and (from :data:`VECTOR_INDEX_MIN_ROWS` rows) an ANN vector index. Below that
size the retriever's exact in-memory scan is faster than an index probe, and
building an index would only slow ingestion down.

The vector index is one logical Lance index made of segments, each an HNSW
graph (``IVF_HNSW_SQ`` with one partition) over a group of whole fragments of
at most :data:`VECTOR_SEGMENT_ROWS` rows. Building it one group at a time keeps
the vectors in memory to one group's, however large the table; Lance searches
every segment and merges their hits. New rows get new segments, and the last
segment, while it is smaller than a group, is rebuilt with them, so the
segments stay few and full.

:func:`sync_search_table` diffs the chunks table against the search table by
``(chunk_id, row_hash)`` and writes only what changed in one commit (a full
rebuild when the active model changes), then brings every index up to date,
so no row is left to the slower unindexed scan. Lance's ``optimize_indices``
is used rather than ``optimize()``, which would also prune old versions.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.chunk.context import SEARCH_TEXT_REVISION, embed_keys, search_names, search_texts
from kbflow.config import EXACT_MAX_ROWS
from kbflow.embed.base import model_id_of
from kbflow.errors import LakeError
from kbflow.lake.lake import Lake
from kbflow.lake.malloc import release_memory, releases_memory
from kbflow.lake.spill import Spill
from kbflow.lake.sql import sql_in, sql_str
from kbflow.records import StepResult
from kbflow.text.terms import symbol_name

__all__ = [
    "VECTOR_INDEX_MIN_ROWS",
    "VECTOR_SEGMENT_ROWS",
    "IndexResult",
    "index_coverage",
    "index_stopwords",
    "plan_vector_segments",
    "search_model",
    "sync_search_table",
    "sync_vector_index",
]

#: Below this many rows the dense leg is an exact scan; at or above it an ANN index is built.
VECTOR_INDEX_MIN_ROWS = EXACT_MAX_ROWS
FTS_INDEX = "text_idx"
NAMES_INDEX = "names_idx"
VECTOR_INDEX = "vector_idx"
#: Rows per vector-index segment: the vectors one segment build holds (32 fragments of 16,384 rows, 768 MiB
#: of 384-dimension vectors). Query time grows with the number of segments far more than with their size:
#: at 1M rows 2 segments answer a hybrid query in 23.3 ms p50, 16 took 62.4
#: (bench/query_latency.py --sizes 1000000 [--segment-rows N])
VECTOR_SEGMENT_ROWS = 524_288
SCALAR_INDEXES = {
    S.SCOPE: "Bitmap",
    S.CONTENT_KIND: "Bitmap",
    S.SOURCE_TYPE: "Bitmap",
    S.SOURCE_ID: "BTree",
    S.SYMBOL_NAME: "BTree",
}
_BATCH = 4096
#: id sets up to this size are pushed to Lance as ``IN (...)``; larger ones are matched in Arrow
_SQL_IN_MAX = 2048
#: characters of a chunk hash (:func:`kbflow.records.ids.text_hash`: 16 bytes as hex)
HASH_CHARS = 32


@dataclass
class IndexResult(StepResult):
    """What :func:`sync_search_table` did: rows written and deleted, the version, each index's coverage."""

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


def _hash_keys(hashes) -> Any:
    """Chunk hashes (an Arrow string array) as a compact numpy bytes array (no Python string per row)."""
    np, pa = require("numpy"), require("pyarrow")
    hashes = hashes.combine_chunks() if isinstance(hashes, pa.ChunkedArray) else hashes
    try:
        fixed = hashes.cast(pa.binary(HASH_CHARS))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # hashes of another length: slower, still exact
        return np.array(hashes.to_pylist(), dtype=object).astype(bytes)
    return np.frombuffer(fixed.buffers()[1], dtype=f"S{HASH_CHARS}", count=len(fixed), offset=fixed.offset * HASH_CHARS)


class _VectorLookup:
    """Row ids of ``model_id``'s vectors in one pinned ``embeddings`` version, by chunk hash.

    Held as a sorted numpy array of hashes plus their row ids (about 40 bytes a
    vector), not a Python dict, so a large lake's sync stays small.
    """

    def __init__(self, lake: Lake, model_id: str) -> None:
        np = require("numpy")
        self.dataset = lake.dataset(S.EMBEDDINGS)
        keys = self.dataset.to_table(
            columns=[S.CHUNK_HASH], filter=f"{S.MODEL_ID} = {sql_str(model_id)}", with_row_id=True
        )
        hashes = _hash_keys(keys.column(S.CHUNK_HASH))
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        self.row_ids = keys.column("_rowid").to_numpy()[order]

    def find(self, hashes) -> tuple[Any, Any]:
        """``(positions in hashes that have a vector, their embeddings row ids)``."""
        np = require("numpy")
        wanted = _hash_keys(hashes)
        if not len(self.hashes):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
        at = np.minimum(np.searchsorted(self.hashes, wanted), len(self.hashes) - 1)
        found = np.flatnonzero(self.hashes[at] == wanted)
        return found, self.row_ids[at[found]]


def _search_batches(
    lake: Lake, ids: Collection[str] | None, model_id: str, dim: int, schema, counter: dict
) -> Iterator[Any]:
    """Stream search rows (chunk columns + fixed-size vector) for chunk ids ``ids`` (``None``: all)."""
    pa = require("pyarrow")
    lookup = _VectorLookup(lake, model_id)
    pc = require("pyarrow.compute")
    chunks = lake.dataset(S.CHUNKS)
    # a few ids go to Lance as a filter; many are matched in Arrow (a huge SQL IN list costs more than a scan)
    few = ids is not None and len(ids) <= _SQL_IN_MAX
    wanted = pa.array(sorted(ids), pa.string()) if ids is not None and not few else None
    for batch in chunks.to_batches(filter=sql_in(S.CHUNK_ID, ids) if few else None, batch_size=_BATCH):
        if wanted is not None:
            batch = batch.filter(pc.is_in(batch.column(S.CHUNK_ID), value_set=wanted))
        keep, row_ids = lookup.find(embed_keys(batch))
        counter["missing"] += batch.num_rows - len(keep)
        if not len(keep):
            continue
        batch = batch.take(pa.array(keep))
        vectors = Lake.take(lookup.dataset, row_ids, columns=[S.VECTOR])
        flat = pa.concat_arrays([c.flatten() for c in vectors.column(S.VECTOR).chunks])
        if len(flat) != len(keep) * dim:
            raise LakeError(f"{lake.uri}: embeddings of model {model_id} are not all {dim}-dimensional")
        vec = pa.FixedSizeListArray.from_arrays(flat.cast(pa.float32()), dim)
        cols = [batch.column(f.name) for f in S.CHUNKS_SCHEMA]
        search_text = pa.array(search_texts(batch), pa.string())
        names = pa.array(search_names(batch), pa.string())
        symbols = pa.array(
            [
                (symbol_name((loc or {}).get("symbol")) or "").lower() or None if kind == "code" else None
                for kind, loc in zip(batch.column(S.CONTENT_KIND).to_pylist(), batch.column(S.LOCATOR).to_pylist())
            ],
            pa.string(),
        )
        hits = pa.array([S.hit_json(row) for row in batch.select(list(S.HIT_COLUMNS)).to_pylist()], pa.string())
        counter["rows"] += len(keep)
        yield pa.RecordBatch.from_arrays([*cols, search_text, names, symbols, hits, vec], schema=schema)


def _diff(want, have) -> tuple[list[str], list[str]]:
    """``(chunk ids to upsert, chunk ids to delete)`` between the chunks' and the search table's
    ``(chunk_id, row_hash)`` columns, computed in Arrow."""
    pc = require("pyarrow.compute")

    def keys(t):
        return pc.binary_join_element_wise(t.column(S.CHUNK_ID), t.column(S.ROW_HASH), "\x00")

    upsert = want.column(S.CHUNK_ID).filter(pc.invert(pc.is_in(keys(want), value_set=keys(have).combine_chunks())))
    delete = have.column(S.CHUNK_ID).filter(
        pc.invert(pc.is_in(have.column(S.CHUNK_ID), value_set=want.column(S.CHUNK_ID).combine_chunks()))
    )
    return upsert.to_pylist(), delete.to_pylist()


def _dim(lake: Lake, model_id: str) -> int | None:
    if not lake.has_table(S.EMBEDDINGS):
        return None
    ds = lake.table(S.EMBEDDINGS).to_lance()
    head = ds.to_table(columns=[S.VECTOR], filter=f"{S.MODEL_ID} = {sql_str(model_id)}", limit=1)
    return len(head.column(0)[0]) if head.num_rows else None


@releases_memory
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
        result.missing_embeddings = lake.table(S.CHUNKS).count_rows()
        return result
    schema = S.search_schema(dim).with_metadata(
        {S.SEARCH_MODEL_META: model_id.encode(), S.SEARCH_TEXT_META: SEARCH_TEXT_REVISION.encode()}
    )

    rebuild = True
    if lake.has_table(S.SEARCH):
        table = lake.table(S.SEARCH)
        vec_type = table.schema.field(S.VECTOR).type
        # a table written before a schema change (e.g. without the hit column) is rebuilt too
        rebuild = (
            search_model(table) != model_id
            or getattr(vec_type, "list_size", None) != dim
            or table.schema.remove_metadata() != schema.remove_metadata()
            or (table.schema.metadata or {}).get(S.SEARCH_TEXT_META) != SEARCH_TEXT_REVISION.encode()
        )
    if rebuild:
        reader = pa.RecordBatchReader.from_batches(schema, _search_batches(lake, None, model_id, dim, schema, counter))
        lake.overwrite(S.SEARCH, reader)  # bounded memory, one commit
        result.rebuilt = True
        result.rows_upserted = counter["rows"]
    else:
        upsert, delete = _diff(
            lake.scan(S.CHUNKS, [S.CHUNK_ID, S.ROW_HASH]), lake.scan(S.SEARCH, [S.CHUNK_ID, S.ROW_HASH])
        )
        # rows whose vector was missing last time are retried through `upsert` (not in the search table)
        with Spill(schema) as spill:
            if upsert:
                for batch in _search_batches(lake, upsert, model_id, dim, schema, counter):
                    spill.write(batch)
            if spill.num_rows:
                merge = table.merge_insert(S.CHUNK_ID).when_matched_update_all().when_not_matched_insert_all()
                if delete:
                    merge = merge.when_not_matched_by_source_delete(sql_in(S.CHUNK_ID, delete))
                merge.execute(spill.reader())
            elif delete:
                table.delete(sql_in(S.CHUNK_ID, delete))
        result.rows_upserted = counter["rows"]
        result.rows_deleted = len(delete)
    result.missing_embeddings = counter["missing"]
    release_memory()  # the vector lookup and the written batches, before Lance builds the indexes
    ensure_indexes(lake.table(S.SEARCH))
    table = lake.table(S.SEARCH)  # reopened: folding rows into the indexes commits through Lance, not this handle
    result.rows = table.count_rows()
    result.version = table.version
    result.indexes = index_coverage(table)
    result.seconds = time.perf_counter() - t0
    return result


def fts_config():
    """How the keyword leg's full-text indexes tokenize: runs of letters and digits, lower-cased, ASCII-folded,
    English stop words dropped, Snowball English stemming (BM25 with Lance's k1 1.2 and b 0.75)."""
    return require("lancedb.index").FTS(
        language="English", stem=True, remove_stop_words=True, lower_case=True, ascii_folding=True
    )


def index_stopwords(candidates: list[str]) -> list[str]:
    """The words of ``candidates`` that the keyword index (:func:`kbflow.index.search.fts_config`) drops as
    stop words, found by probing a scratch index: for reference BM25 implementations that must tokenize
    exactly as the index does (``bench/eval_reference.py``, the tests)."""
    import tempfile

    pa, lancedb = require("pyarrow"), require("lancedb")
    with tempfile.TemporaryDirectory() as tmp:
        table = lancedb.connect(tmp).create_table("probe", pa.table({"text": [f"{w} zebra" for w in candidates]}))
        table.create_index("text", config=fts_config())
        ds = table.to_lance()
        stopped = []
        for word in candidates:
            found = (
                ds.to_table(columns=["text", "_score"], full_text_query={"query": word, "columns": ["text"]}, limit=3)
                .column("text")
                .to_pylist()
            )
            if not any(text.split()[0] == word for text in found):
                stopped.append(word)
    return stopped


def ensure_indexes(table) -> None:
    """Create missing indexes and fold unindexed rows into the existing ones."""
    rows = table.count_rows()
    if rows == 0:
        return  # never build the full-text index on an empty table
    names = {ix.name for ix in table.list_indices()}
    configs = require("lancedb.index")
    for column, name in ((S.SEARCH_TEXT, FTS_INDEX), (S.SEARCH_NAMES, NAMES_INDEX)):
        if name not in names:
            table.create_index(column, config=fts_config(), name=name)
    for column, kind in SCALAR_INDEXES.items():
        name = f"{column}_idx"
        if name not in names:
            table.create_index(column, config=getattr(configs, kind)(), name=name)
    if VECTOR_INDEX in names or rows >= VECTOR_INDEX_MIN_ROWS:
        sync_vector_index(table.to_lance())
    stale = [name for name, v in index_coverage(table).items() if v["unindexed"] and name != VECTOR_INDEX]
    if stale:
        table.to_lance().optimize.optimize_indices(index_names=stale)


def _segments(ds) -> list[set[int]]:
    """The fragment ids each segment of the vector index covers."""
    for ix in ds.describe_indices():
        if ix.name == VECTOR_INDEX:
            return [set(seg.fragment_ids) for seg in ix.segments]
    return []


def plan_vector_segments(
    fragments: list[tuple[int, int]], segments: list[set[int]], group_rows: int
) -> list[list[int]]:
    """Fragment groups to build vector-index segments from; pure, so it is tested on its own.

    ``fragments`` are the table's ``(fragment id, rows)`` in order, ``segments``
    the fragment sets of the existing segments. Fragments no segment covers are
    grouped in order into groups of at most ``group_rows`` rows (a fragment
    larger than that is a group alone). The newest segment (the one holding the
    newest fragment) joins the first group while the two fit in ``group_rows``
    together: a segment built over all its remaining fragments and more replaces
    it in the commit, so small segments do not pile up one per ingest. (Lance
    refuses a commit that would leave part of a replaced segment's fragments
    unindexed.)
    """
    covered = set().union(*segments)
    todo = [(fid, n) for fid, n in fragments if fid not in covered]
    if not todo:
        return []
    rows = dict(fragments)
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    if segments:
        last = max(segments, key=lambda seg: max(seg, default=-1))
        last_rows = sum(rows.get(fid, 0) for fid in last)
        if last_rows + todo[0][1] <= group_rows:
            current, size = sorted(fid for fid in last if fid in rows), last_rows
    for fid, n in todo:
        if current and size + n > group_rows:
            groups.append(current)
            current, size = [], 0
        current.append(fid)
        size += n
    groups.append(current)
    return groups


def sync_vector_index(ds) -> int:
    """Build vector-index segments for every fragment no segment covers yet; commit them at once.

    Returns the number of segments built. Each segment is built from at most
    :data:`VECTOR_SEGMENT_ROWS` rows, so the build's memory does not grow with
    the table.
    """
    fragments = [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()]
    segments = _segments(ds)
    groups = plan_vector_segments(fragments, segments, VECTOR_SEGMENT_ROWS)
    if not groups:
        return 0
    built = [
        ds.create_index_uncommitted(
            S.VECTOR,
            "IVF_HNSW_SQ",
            name=VECTOR_INDEX,
            metric="cosine",
            num_partitions=1,
            fragment_ids=group,
            replace=bool(segments),
        )
        for group in groups
    ]
    ds.commit_existing_index_segments(VECTOR_INDEX, S.VECTOR, built)
    return len(built)


def index_coverage(table) -> dict[str, dict[str, Any]]:
    """``{index name: {"type", "indexed", "unindexed"}}`` for every index of the search table."""
    # row counts only: without this, Lance's vector index statistics also carry (and warn about) the centroids
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    out: dict[str, dict[str, Any]] = {}
    for ix in table.list_indices():
        stats = table.index_stats(ix.name)
        out[ix.name] = {
            "type": str(stats.index_type),
            "indexed": int(stats.num_indexed_rows),
            "unindexed": int(stats.num_unindexed_rows),
        }
    return out
