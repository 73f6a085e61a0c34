"""The embed step: one vector per distinct chunk text per model, texts already embedded never again."""

from __future__ import annotations

import time

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.chunk.context import embed_keys, embed_texts
from kbflow.config import Settings
from kbflow.embed.base import get_embedder
from kbflow.embed.rows import embedding_batches
from kbflow.lake.lake import Lake
from kbflow.lake.malloc import release_memory, releases_memory
from kbflow.lake.sql import sql_str
from kbflow.pipeline.common import records_failure, source_filter
from kbflow.pipeline.engines import Engine, open_engine
from kbflow.pipeline.results import EmbedResult, Progress

__all__ = ["embed_source"]


def _missing_embeddings(lake: Lake, model_id: str, where: str | None):
    """``(chunks dataset, Arrow table of chunk_hash, _rowid_min, length_min)``: one row per distinct embedded
    text (matching ``where``) with no vector for ``model_id``, found batch by batch; texts are not kept."""
    pa, pc = require("pyarrow"), require("pyarrow.compute")
    have = lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH], f"{S.MODEL_ID} = {sql_str(model_id)}").column(0)
    have = have.combine_chunks()
    ds = lake.dataset(S.CHUNKS)
    parts = []
    columns = [S.CHUNK_HASH, S.EMBED_HASH, S.TEXT]
    for batch in ds.to_batches(columns=columns, filter=where, with_row_id=True, batch_size=4096):
        keys = embed_keys(batch)
        need = pc.invert(pc.is_in(keys, value_set=have))
        batch, keys = batch.filter(need), keys.filter(need)
        if batch.num_rows:
            parts.append(
                pa.table(
                    {
                        S.CHUNK_HASH: keys,
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


def _complete(lake: Lake, source_id: str | None) -> None:
    """Record that the source's rows are complete: what was loaded is now chunked and embedded.

    Only now does ``content_hash`` (what :func:`kbflow.stale_sources` compares
    against) take the loaded fingerprint: an ingest killed before this point
    leaves the source listed as stale.
    """
    if source_id is None:
        return
    source = lake.get_source(source_id)
    if source.loaded_hash and source.loaded_hash != source.content_hash:
        lake.set_status({source_id: {S.CONTENT_HASH: source.loaded_hash}})


@releases_memory
@records_failure
def embed_source(
    lake: Lake,
    source_id: str | None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    *,
    engine: Engine | None = None,
) -> EmbedResult:
    """Embed the chunk texts of a source (``None``: of every source) that have no vector yet.

    Texts are read from the pinned chunks version one write batch at a time
    and their vectors streamed to the ``embeddings`` table in batches of
    ``settings.write_batch_size`` within one commit: peak memory grows with the
    batch size, not with the number of chunks. On the Ray engine (``engine``,
    else :func:`~kbflow.pipeline.engines.open_engine` from ``settings``) the
    cluster's embedding workers write the vectors as fragments, committed here
    at once.
    """
    t0 = time.perf_counter()
    settings = Settings.coerce(settings)
    model_id = settings.vector_space
    where = source_filter(source_id) if source_id is not None else None
    total = lake.table(S.CHUNKS).count_rows(where) if lake.has_table(S.CHUNKS) else 0
    if not total:
        _complete(lake, source_id)
        return EmbedResult(source_id or "*", model_id, 0, 0, seconds=time.perf_counter() - t0)
    chunks, todo = _missing_embeddings(lake, model_id, where)
    if todo is None:
        _complete(lake, source_id)
        return EmbedResult(source_id or "*", model_id, 0, total, seconds=time.perf_counter() - t0)
    hashes = todo.column(S.CHUNK_HASH).combine_chunks()
    row_ids = todo.column("_rowid_min").to_numpy()  # 8 bytes a text, not a Python int each
    n = len(row_ids)
    engine = engine or open_engine(settings, lake, lake.get_source(source_id) if source_id else None)
    if engine.writes_fragments:
        read_version = lake.table(S.EMBEDDINGS).version
        fragments = engine.write_embeddings(lake, chunks, todo, settings, progress)
        version = lake.commit_fragments(S.EMBEDDINGS, fragments, read_version)
    else:
        size = settings.write_batch_size

        def texts(i: int) -> list[str]:
            return embed_texts(Lake.take(chunks, row_ids[i : i + size], columns=[S.CONTEXT, S.TEXT]))

        embedder = get_embedder(settings.model, settings.embed_batch_size, settings.backend, settings.embed_threads)
        version = lake.append(S.EMBEDDINGS, embedding_batches(embedder, texts, hashes, n, size, progress))
    _complete(lake, source_id)
    return EmbedResult(
        source_id or "*",
        model_id,
        chunks_embedded=n,
        chunks_reused=max(0, total - n),
        version=version,
        seconds=time.perf_counter() - t0,
        placement=engine.placement("embed"),
    )
