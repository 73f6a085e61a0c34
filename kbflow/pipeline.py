"""The ingest steps: load → chunk → embed per source, then the search index.

Each step reads what it needs from the lake and writes its table in one
atomic commit, so a step can be re-run at any time and converges: a crash
between steps leaves every table at a committed version, and the next run
finishes the work. Dagster assets call these functions one per asset;
:func:`ingest` runs them in-process without Dagster.

What each step skips:

- :func:`load_source`: a source whose fingerprint equals the one last loaded
  is not parsed at all (``status="unchanged"``).
- :func:`chunk_source`: only units whose hash is new are chunked; chunks of
  units that disappeared are deleted; a chunk whose text is unchanged keeps
  its ``chunk_id`` (and so its embedding).
- :func:`embed_source`: only chunk texts without a vector for the model are
  embedded, streamed in batches into one commit.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.chunk.base import chunk_unit
from kbflow.config import Settings
from kbflow.embed.base import get_embedder
from kbflow.errors import KbflowError, SourceError
from kbflow.lake.lake import Lake, now
from kbflow.lake.malloc import limit_malloc_arenas, release_memory, releases_memory
from kbflow.lake.spill import Spill
from kbflow.records import Chunk, Locator, RawUnit, Source
from kbflow.sources.base import get_loader
from kbflow import ids

log = logging.getLogger(__name__)

__all__ = [
    "ChunkResult",
    "EmbedResult",
    "LoadResult",
    "RemoveResult",
    "SourceReport",
    "StaleSource",
    "chunk_source",
    "embed_source",
    "ingest",
    "load_source",
    "remove_source",
    "stale_sources",
]

#: ``progress(done_now, total)``: called after each batch of work
Progress = Callable[[int, int], None]


@dataclass
class LoadResult:
    source_id: str
    status: str  # new | updated | unchanged | failed
    units: int = 0
    units_added: int = 0
    units_removed: int = 0
    skipped_files: list[str] = field(default_factory=list)
    error: str | None = None
    version: int | None = None
    seconds: float = 0.0


@dataclass
class ChunkResult:
    source_id: str
    chunks: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_updated: int = 0
    units_chunked: int = 0
    version: int | None = None
    seconds: float = 0.0


@dataclass
class EmbedResult:
    source_id: str
    model_id: str
    chunks_embedded: int = 0
    chunks_reused: int = 0
    version: int | None = None
    seconds: float = 0.0


@dataclass
class SourceReport:
    """One source's line in the ``kbflow ingest --json`` summary."""

    source_id: str
    status: str
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _eq(column: str, value: str) -> str:
    return f"{column} = {S.sql_str(value)}"


def _array(values):
    """An Arrow array from an array or chunked array."""
    return values.combine_chunks() if hasattr(values, "combine_chunks") else values


def _distinct(values):
    """The distinct non-null values of an Arrow (chunked) array, as one array."""
    return require("pyarrow.compute").unique(_array(values).drop_null())


def _without(values, exclude):
    """The values of Arrow array ``values`` that are not in ``exclude``."""
    values = _array(values)
    if not len(exclude) or not len(values):
        return values
    pc = require("pyarrow.compute")
    return values.filter(pc.invert(pc.is_in(values, value_set=_array(exclude))))


def _differs(values, value) -> bool:
    """Whether any of Arrow array ``values`` is not ``value`` (nulls compared as Python compares None)."""
    pc = require("pyarrow.compute")
    if value is None:
        return bool(pc.any(pc.is_valid(values)).as_py())
    same = pc.fill_null(pc.equal(values, value), False)
    return bool(len(values)) and not pc.all(same).as_py()


def _count_missing(values, exclude) -> int:
    """How many of ``values`` are not in ``exclude``."""
    return len(_without(values, exclude))


# --- load -------------------------------------------------------------------------
def _first_repeat(values) -> str:
    """The first value of Arrow array ``values`` that occurs more than once."""
    pc = require("pyarrow.compute")
    counts = pc.value_counts(values)  # in order of first occurrence
    repeated = counts.filter(pc.greater(counts.field("counts"), 1))
    return repeated.field("values")[0].as_py()


def _unit_row(unit: RawUnit) -> dict[str, Any]:
    return {
        S.SOURCE_ID: unit.source_id,
        S.UNIT_HASH: unit.unit_hash,
        S.UNIT_KEY: unit.unit_key,
        S.FILE_HASH: unit.file_hash,
        S.CONTENT_KIND: unit.content_kind,
        S.TITLE: unit.title,
        S.TEXT: unit.text,
        S.LOCATOR: unit.locator.to_row(),
        S.LANGUAGE: unit.language,
        S.LAYOUT: unit.layout,
    }


@releases_memory
def load_source(lake: Lake, source_id: str) -> LoadResult:
    """Load one source into ``documents`` (one commit), unless its bytes are unchanged.

    Units are spilled to a temporary Arrow stream as the loader yields them and
    committed from there, so memory does not grow with the size of the source.
    On a load error the source is marked ``failed`` with the error, the
    :class:`SourceError` is raised, and no table but the registry is touched.
    """
    t0 = time.perf_counter()
    source = lake.get_source(source_id)
    loader = get_loader(source.source_type)
    with Spill(S.DOCUMENTS_SCHEMA) as spill:
        try:
            fingerprint = loader.fingerprint(source)
            if fingerprint == source.content_hash:
                if source.status == "failed":
                    lake.set_status({source_id: {S.STATUS: "pending", S.LAST_ERROR: None}})
                return LoadResult(source_id, "unchanged", seconds=time.perf_counter() - t0)
            for unit in loader.load(source):
                spill.append(_unit_row(unit))
            # unit hashes and keys checked in Arrow (tens of bytes each), not as Python sets
            distinct = spill.distinct_columns([S.UNIT_HASH, S.UNIT_KEY])
            if len(distinct[S.UNIT_KEY]) != spill.num_rows:
                raise SourceError(loader.duplicate_key_error(source, _first_repeat(spill.column(S.UNIT_KEY))))
        except KbflowError as exc:
            message = str(exc)
            lake.set_status({source_id: {S.STATUS: "failed", S.LAST_ERROR: message}})
            raise SourceError(f"source {source_id!r}: {message}") from exc
        skipped = [f"{s.path} ({s.reason})" for s in getattr(loader, "skipped", [])]

        new = distinct[S.UNIT_HASH]
        old = _distinct(lake.scan(S.DOCUMENTS, [S.UNIT_HASH], _eq(S.SOURCE_ID, source_id)).column(0))
        added, removed = _count_missing(new, old), _count_missing(old, new)
        table = lake.table(S.DOCUMENTS)
        if not len(old) and len(new):
            lake.append(S.DOCUMENTS, spill.reader())
        elif added or removed:
            (
                table.merge_insert([S.SOURCE_ID, S.UNIT_HASH])
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(_eq(S.SOURCE_ID, source_id))
                .execute(spill.reader())
            )
    lake.set_status({source_id: {S.CONTENT_HASH: fingerprint, S.LAST_ERROR: None, S.STATUS: "pending"}})
    return LoadResult(
        source_id,
        "new" if source.content_hash is None else "updated",
        units=len(new),
        units_added=added,
        units_removed=removed,
        skipped_files=skipped,
        version=lake.table(S.DOCUMENTS).version,
        seconds=time.perf_counter() - t0,
    )


# --- chunk ------------------------------------------------------------------------
def _chunk_row(chunk: Chunk, source: Source, file_hash: str | None, chunker: str) -> dict[str, Any]:
    row = {
        S.CHUNK_ID: chunk.chunk_id,
        S.CHUNK_HASH: chunk.chunk_hash,
        S.SOURCE_ID: source.source_id,
        S.SOURCE_TYPE: source.source_type,
        S.SCOPE: source.scope,
        S.UNIT_HASH: chunk.unit_hash,
        S.CONTENT_KIND: chunk.content_kind,
        S.POSITION: chunk.position,
        S.TITLE: chunk.title,
        S.URI: source.uri,
        S.CONTENT_HASH: file_hash,
        S.TEXT: chunk.text,
        S.LOCATOR: chunk.locator.to_row(),
        S.CHUNKER: chunker,
    }
    row[S.ROW_HASH] = ids.digest(
        *(str(row[k]) for k in (S.CHUNK_ID, S.SOURCE_TYPE, S.SCOPE, S.UNIT_HASH, S.POSITION, S.TITLE, S.URI, S.CONTENT_HASH, S.CHUNKER)),
        repr(sorted(row[S.LOCATOR].items())),
    )
    return row


def _unit_from_row(row: dict[str, Any]) -> RawUnit:
    return RawUnit(
        source_id=row[S.SOURCE_ID],
        unit_key=row[S.UNIT_KEY],
        text=row[S.TEXT],
        content_kind=row[S.CONTENT_KIND],
        locator=Locator.from_row(row[S.LOCATOR]),
        title=row[S.TITLE],
        file_hash=row[S.FILE_HASH],
        language=row[S.LANGUAGE],
        layout=row.get(S.LAYOUT),
    )


def _units_in_order(lake: Lake, where: str, unit_hashes, group: int = 64) -> Iterator[dict[str, Any]]:
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
        yield from ds._take_rows(row_ids[i : i + group].tolist()).to_pylist()


@releases_memory
def chunk_source(lake: Lake, source_id: str, settings: Settings | None = None) -> ChunkResult:
    """Bring the source's rows in ``chunks`` in line with its rows in ``documents`` (one commit)."""
    t0 = time.perf_counter()
    pc = require("pyarrow.compute")
    settings = Settings.coerce(settings)
    source = lake.get_source(source_id)
    chunker = settings.chunking.fingerprint()
    where = _eq(S.SOURCE_ID, source_id)
    # ids and hashes are compared in Arrow (tens of bytes each), not as Python sets
    doc_hashes = _distinct(lake.scan(S.DOCUMENTS, [S.UNIT_HASH], where).column(0))
    old = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.UNIT_HASH, S.CHUNKER, S.SCOPE, S.URI], where)
    old_units = _distinct(old.column(S.UNIT_HASH))
    stale_rows = any(
        _differs(old.column(column), value)
        for column, value in ((S.CHUNKER, chunker), (S.SCOPE, source.scope), (S.URI, source.uri))
    )
    todo = doc_hashes if stale_rows else _without(doc_hashes, old_units)
    gone = old_units if stale_rows else _without(old_units, doc_hashes)
    if not len(todo) and not len(gone):
        return ChunkResult(source_id, chunks=old.num_rows, seconds=time.perf_counter() - t0)

    table = lake.table(S.CHUNKS)
    with Spill(S.CHUNKS_SCHEMA) as spill:
        for doc in _units_in_order(lake, where, todo):
            unit = _unit_from_row(doc)
            for chunk in chunk_unit(unit, settings.chunking):
                spill.append(_chunk_row(chunk, source, unit.file_hash, chunker))
        new_ids = spill.distinct(S.CHUNK_ID)
        old_ids = old.column(S.CHUNK_ID)
        gone_rows = old.filter(pc.is_in(old.column(S.UNIT_HASH), value_set=gone)) if len(gone) else old.slice(0, 0)
        gone_ids = _without(gone_rows.column(S.CHUNK_ID), new_ids).to_pylist()
        # chunks of re-chunked units that moved to another unit version keep their id: matched and updated
        if spill.num_rows and not len(old_ids):
            lake.append(S.CHUNKS, spill.reader())
        elif spill.num_rows:
            merge = table.merge_insert(S.CHUNK_ID).when_matched_update_all().when_not_matched_insert_all()
            if gone_ids and len(todo) == len(doc_hashes):
                # every current unit was re-chunked: whatever of this source is not in the input goes
                merge = merge.when_not_matched_by_source_delete(where)
            elif gone_ids:
                merge = merge.when_not_matched_by_source_delete(f"{where} AND {S.sql_in(S.CHUNK_ID, gone_ids)}")
            merge.execute(spill.reader())
        elif gone_ids:
            table.delete(S.sql_in(S.CHUNK_ID, gone_ids))
    added = _count_missing(new_ids, old_ids)
    return ChunkResult(
        source_id,
        chunks=len(old_ids) - len(gone_ids) + added,
        chunks_added=added,
        chunks_removed=len(gone_ids),
        chunks_updated=len(new_ids) - added,
        units_chunked=len(todo),
        version=lake.table(S.CHUNKS).version,
        seconds=time.perf_counter() - t0,
    )


# --- embed ------------------------------------------------------------------------
def _missing_embeddings(lake: Lake, model_id: str, where: str | None):
    """``(chunks dataset, Arrow table of chunk_hash, _rowid_min, length_min)``: one row per distinct chunk
    text (matching ``where``) with no vector for ``model_id``, found batch by batch; texts are not kept."""
    pa, pc = require("pyarrow"), require("pyarrow.compute")
    have = lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH], _eq(S.MODEL_ID, model_id)).column(0).combine_chunks()
    ds = lake.dataset(S.CHUNKS)
    parts = []
    for batch in ds.to_batches(columns=[S.CHUNK_HASH, S.TEXT], filter=where, with_row_id=True, batch_size=4096):
        need = pc.invert(pc.is_in(batch.column(S.CHUNK_HASH), value_set=have))
        batch = batch.filter(need)
        if batch.num_rows:
            parts.append(
                pa.table(
                    {
                        S.CHUNK_HASH: batch.column(S.CHUNK_HASH),
                        "_rowid": batch.column("_rowid"),
                        "length": pc.utf8_length(batch.column(S.TEXT)),
                    }
                )
            )
    if not parts:
        return ds, None
    # one row per distinct text, shortest first: similar lengths share a batch (less padding)
    todo = pa.concat_tables(parts).group_by(S.CHUNK_HASH).aggregate([("_rowid", "min"), ("length", "min")])
    todo = todo.select([S.CHUNK_HASH, "_rowid_min", "length_min"]).sort_by("length_min")
    del parts, have
    release_memory()  # the scan's and the grouping's buffers, before the model's batches
    return ds, todo


@releases_memory
def embed_source(
    lake: Lake, source_id: str | None, settings: Settings | None = None, progress: Progress | None = None
) -> EmbedResult:
    """Embed the chunk texts of a source (``None``: of every source) that have no vector yet.

    Texts are read from the pinned chunks version one write batch at a time
    and their vectors streamed to the ``embeddings`` table in batches of
    ``settings.write_batch_size`` within one commit: peak memory grows with the
    batch size, not with the number of chunks.
    """
    t0 = time.perf_counter()
    settings = Settings.coerce(settings)
    embedder = get_embedder(settings.model, settings.embed_batch_size)
    where = _eq(S.SOURCE_ID, source_id) if source_id is not None else None
    total = lake.table(S.CHUNKS).count_rows(where) if lake.has_table(S.CHUNKS) else 0
    if not total:
        return EmbedResult(source_id or "*", embedder.model_id, 0, 0, seconds=time.perf_counter() - t0)
    chunks, todo = _missing_embeddings(lake, embedder.model_id, where)
    if todo is None:
        return EmbedResult(source_id or "*", embedder.model_id, 0, total, seconds=time.perf_counter() - t0)
    pa = require("pyarrow")
    hashes = todo.column(S.CHUNK_HASH)
    row_ids = todo.column("_rowid_min").to_numpy()  # 8 bytes a text, not a Python int each
    n = len(row_ids)

    def batches() -> Iterator[Any]:
        size = settings.write_batch_size
        for i in range(0, n, size):
            texts = chunks._take_rows(row_ids[i : i + size].tolist(), columns=[S.TEXT]).column(0).to_pylist()
            vectors = embedder.embed(texts)
            flat = pa.array(vectors.reshape(-1), type=pa.float32())
            offsets = pa.array(range(0, (len(texts) + 1) * embedder.dim, embedder.dim), type=pa.int32())
            yield pa.RecordBatch.from_arrays(
                [
                    hashes.slice(i, len(texts)).combine_chunks(),
                    pa.array([embedder.model_id] * len(texts), type=pa.string()),
                    pa.ListArray.from_arrays(offsets, flat),
                ],
                schema=S.EMBEDDINGS_SCHEMA,
            )
            if progress is not None:
                progress(len(texts), n)

    version = lake.append(S.EMBEDDINGS, pa.RecordBatchReader.from_batches(S.EMBEDDINGS_SCHEMA, batches()))
    return EmbedResult(
        source_id or "*",
        embedder.model_id,
        chunks_embedded=n,
        chunks_reused=max(0, total - n),
        version=version,
        seconds=time.perf_counter() - t0,
    )


# --- removal and staleness ------------------------------------------------------------
@dataclass
class RemoveResult:
    source_id: str
    registered: bool
    rows_removed: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)


def remove_source(lake: Lake, source_id: str) -> RemoveResult:
    """Delete a source's rows from ``documents``, ``chunks`` and the search table, then unregister it.

    Idempotent: removing a source that is already gone (or half gone, after a
    crash) finishes the job. Data goes first and the registry row last, so no
    crash leaves rows the registry does not know about. Vectors stay in
    ``embeddings`` (keyed by text hash, they may serve other sources, and a
    re-added source re-uses them).
    """
    where = _eq(S.SOURCE_ID, source_id)
    registered = bool(lake.sources([source_id]))
    result = RemoveResult(source_id, registered)
    for name in (S.DOCUMENTS, S.CHUNKS, S.SEARCH, S.SOURCES):
        if not lake.has_table(name):
            continue
        table = lake.table(name)
        n = table.count_rows(where)
        if n:
            table.delete(where)
            result.versions[name] = lake.table(name).version
        result.rows_removed[name] = n
    return result


@dataclass
class StaleSource:
    source_id: str
    reason: str  # "changed" | "never indexed" | "failed" | "unreadable"
    detail: str | None = None


def stale_sources(lake: Lake, source_ids: Iterable[str] | None = None) -> list[StaleSource]:
    """Sources whose bytes no longer match what was indexed, found by fingerprinting only (nothing is parsed or written)."""
    out = []
    for source in lake.sources(source_ids):
        if source.content_hash is None:
            out.append(StaleSource(source.source_id, "never indexed"))
            continue
        try:
            fingerprint = get_loader(source.source_type).fingerprint(source)
        except KbflowError as exc:
            out.append(StaleSource(source.source_id, "unreadable", str(exc)))
            continue
        if fingerprint != source.content_hash:
            out.append(StaleSource(source.source_id, "changed"))
        elif source.status == "failed":
            out.append(StaleSource(source.source_id, "failed", source.last_error))
    return out


# --- the whole flow without an orchestrator -----------------------------------------
def source_report(
    source_id: str, status: str, chunks_added: int = 0, chunks_removed: int = 0, chunks_embedded: int = 0
) -> SourceReport:
    """One source's summary line; an unchanged source whose chunks still changed (new chunk settings) was updated."""
    if status == "unchanged" and (chunks_added or chunks_removed or chunks_embedded):
        status = "updated"
    return SourceReport(source_id, status, chunks_added, chunks_removed, chunks_embedded)


def finish_index(lake: Lake, settings: Settings):
    """Sync the search table, then mark every source that did not fail as indexed (one registry commit)."""
    from kbflow.index.search import sync_search_table

    result = sync_search_table(lake, settings.model)
    pc = require("pyarrow.compute")
    counted = pc.value_counts(lake.scan(S.CHUNKS, [S.SOURCE_ID]).column(0))
    counts = dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()))
    stamp = now()
    updates = {
        s.source_id: {S.STATUS: "indexed", S.CHUNK_COUNT: counts.get(s.source_id, 0), S.LAST_INDEXED: stamp}
        for s in lake.sources()
        if s.status != "failed"
    }
    lake.set_status(updates)
    return result


def ingest(
    lake: Lake | str | None = None,
    settings: Settings | None = None,
    source_ids: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> tuple[list[SourceReport], Any]:
    """Run load → chunk → embed for each source, then the search index, in this process.

    This is what the Dagster assets do, minus Dagster. A failing source is
    reported (``status="failed"``) and the others go on. It first caps glibc's
    malloc arenas (:func:`kbflow.lake.malloc.limit_malloc_arenas`), which keeps
    a long ingest's memory flat; call that yourself, or set
    ``MALLOC_ARENA_MAX=2``, before other work where you want it from the start.

    Returns
    -------
    (reports, index result)
    """
    limit_malloc_arenas()
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    settings = Settings.coerce(settings, lake=lake.uri)
    ids_ = list(source_ids) if source_ids is not None else [s.source_id for s in lake.sources()]
    reports = []
    for sid in ids_:
        try:
            load = load_source(lake, sid)
            chunk = chunk_source(lake, sid, settings)
            embed = embed_source(lake, sid, settings, progress)
            reports.append(
                source_report(sid, load.status, chunk.chunks_added, chunk.chunks_removed, embed.chunks_embedded)
            )
        except SourceError as exc:
            reports.append(SourceReport(sid, "failed", error=str(exc)))
    return reports, finish_index(lake, settings)
