"""What runs on the Ray cluster's workers: a node's check, a file's units, a group's chunks, an embedding worker.

Plain functions and one class, made remote by :mod:`.ray_engine`; each
returns the node it ran on, so an ingest can say where its work went.
Nothing here commits: rows go back to the step that asked for them, and
vectors are written as uncommitted Lance fragments the step commits once.
"""

from __future__ import annotations

import os
from typing import Any, cast

from kbflow import schema as S
from kbflow.config import ChunkSettings, Settings
from kbflow.errors import KbflowError
from kbflow.records import Source

__all__ = [
    "PROBE_SECONDS",
    "EmbedWorker",
    "check_node",
    "chunk_group",
    "chunk_write",
    "first_line",
    "load_file",
    "load_whole",
    "node_id",
]

#: how long every node has to answer the start-up check (and an embedding worker to load its model)
PROBE_SECONDS = 180.0


def first_line(exc: BaseException) -> str:
    """The line of a Ray error that says what went wrong (its last non-empty one: Ray puts the cause last)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def node_id() -> str:
    """The Ray node this code runs on."""
    import ray

    return ray.get_runtime_context().get_node_id()


def check_node(lake_uri: str, token: str | None, settings: Settings) -> tuple[str, list[str]]:
    """``(node, problems)``: whether this node reads the lake (a local lake: the probe file ``token`` the
    driver wrote there) and finds the model, and can import what the steps need."""
    problems = []
    if token is not None:
        probe = os.path.join(lake_uri.removeprefix("file://"), f".kbflow-probe-{token}")
        try:
            with open(probe, encoding="utf-8") as fh:
                if fh.read() != token:
                    raise OSError("another lake by the same path")
        except OSError:
            problems.append(
                f"cannot read the lake at {lake_uri} (a local path is one machine's: put the lake on storage every "
                "node reads, such as s3://... or a shared mount)"
            )
    prefix, sep, _ = settings.model.partition(":")
    if not (sep and prefix == "hash"):
        from kbflow.embed.models import resolve_model

        try:
            _, target = resolve_model(settings.model)
            # a path (not a hub id, which the node's own cache may hold) that the node does not have
            named_path = os.path.isabs(target) or target.startswith((".", "~"))
            if named_path and not os.path.exists(os.path.expanduser(target)):
                problems.append(f"the model {settings.model!r} is not installed here ({target} is missing)")
        except (KbflowError, ImportError) as exc:
            problems.append(f"the model {settings.model!r} is not installed here ({exc})")
    return node_id(), problems


def _loader(source: Source, lake_uri: str) -> Any:
    from kbflow.sources.base import get_loader

    loader = get_loader(source.source_type)
    loader.lake_uri = lake_uri
    return loader


def load_file(source: Source, rel: str, path: str, lake_uri: str) -> tuple[list[dict[str, Any]], list, str]:
    """``(documents rows, issues, node)`` of one file of a file-set source (a failed file is an issue). A PDF
    is parsed in the task's own process: the cluster runs the files side by side."""
    os.environ["KBFLOW_PDF_WORKERS"] = "1"
    loader = _loader(source, lake_uri)
    rows = [unit.to_row() for unit in loader.load_one(source, rel, path)]
    return rows, loader.issues, node_id()


def load_whole(source: Source, lake_uri: str) -> tuple[list[dict[str, Any]], list, str | None, str]:
    """``(documents rows, issues, error, node)`` of a source its loader reads as one (a crawl, a JSONL file)."""
    loader = _loader(source, lake_uri)
    rows: list[dict[str, Any]] = []
    try:
        rows.extend(unit.to_row() for unit in loader.load(source))
    except KbflowError as exc:
        return [], loader.issues, str(exc), node_id()
    return rows, loader.issues, None, node_id()


def chunk_group(
    docs: list[dict[str, Any]], source: Source, chunker: str, chunking: ChunkSettings
) -> tuple[list[dict[str, Any]], str]:
    """``(chunks rows, node)`` of a group of ``documents`` rows, in their order."""
    from kbflow.pipeline.engines import chunk_document

    return [row for doc in docs for row in chunk_document(doc, source, chunker, chunking)], node_id()


def chunk_write(
    docs: list[dict[str, Any]], source: Source, chunker: str, chunking: ChunkSettings, lake_uri: str, storage: dict
) -> tuple[list, list[str], str]:
    """``(uncommitted fragments, chunk ids, node)``: a group of ``documents`` rows chunked and written to the lake's
    ``chunks`` table by this worker."""
    import pyarrow as pa

    from kbflow.lake.lake import Lake

    rows, node = chunk_group(docs, source, chunker, chunking)
    if not rows:
        return [], [], node
    table = pa.Table.from_pylist(rows, schema=S.CHUNKS_SCHEMA)
    lake = Lake(lake_uri, create=False, storage_options=storage)
    fragments = lake.write_fragments(S.CHUNKS, pa.RecordBatchReader.from_batches(table.schema, table.to_batches()))
    return fragments, table.column(S.CHUNK_ID).to_pylist(), node


class EmbedWorker:
    """One embedding worker: loads the model once, then embeds spans of the texts to embed.

    Each :meth:`embed` reads its texts from the pinned ``chunks`` version by
    row id and writes their vectors to the ``embeddings`` table as
    uncommitted fragments, returned to the step, which commits every
    worker's fragments at once.
    """

    def __init__(self, settings: Settings, storage_options: dict[str, str], threads: int | None) -> None:
        import ray

        from kbflow.embed.base import get_embedder

        self.settings, self.storage_options = settings, storage_options
        # a GPU worker runs the torch model on its GPU (fp32 ONNX stores the same vectors); int8 keeps its own
        gpu = bool(ray.get_gpu_ids()) and settings.backend != "onnx-int8" and not settings.model.startswith("hash:")
        backend = "torch" if gpu else settings.backend
        self.embedder = get_embedder(settings.model, settings.embed_batch_size, backend, threads)
        if gpu:
            cast(Any, self.embedder).model.to("cuda")  # the sentence-transformers embedder, on torch
        self.device = "cuda" if gpu else "cpu"
        self.embedder.embed(["warm up"])  # the model loads here, not in the first span

    def ready(self) -> str:
        """The node this worker runs on, once its model is loaded."""
        return node_id()

    def embed(self, lake_uri: str, chunks_uri: str, version: int, row_ids: Any, hashes: Any) -> tuple[list, int, str]:
        """``(fragments, texts, node)``: the vectors of the chunk rows ``row_ids`` (their embed keys ``hashes``)
        written to the lake's ``embeddings`` table, uncommitted."""
        import lance

        from kbflow.chunk.context import embed_texts
        from kbflow.embed.rows import embedding_batches
        from kbflow.lake.lake import Lake

        chunks = lance.dataset(chunks_uri, version=version, storage_options=self.storage_options or None)
        size = self.settings.write_batch_size

        def texts(i: int) -> list[str]:
            return embed_texts(Lake.take(chunks, row_ids[i : i + size], columns=[S.CONTEXT, S.TEXT]))

        reader = embedding_batches(self.embedder, texts, hashes, len(row_ids), size)
        fragments = Lake(lake_uri, create=False, storage_options=self.storage_options).write_fragments(
            S.EMBEDDINGS, reader
        )
        return fragments, len(row_ids), node_id()
