"""The ``embeddings`` table's rows of a set of texts, embedded batch by batch as a reader reads them: what the
embed step writes, in this process or on a Ray worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require

__all__ = ["embedding_batches"]


def embedding_batches(
    embedder: Any,
    texts: Callable[[int], list[str]],
    hashes: Any,
    n: int,
    size: int,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """The ``embeddings`` rows of ``n`` texts as a record-batch reader: ``texts(i)`` gives the ``size`` texts from
    ``i`` on, ``hashes`` (an Arrow array) their embed keys; each batch is embedded as the reader is read."""
    pa = require("pyarrow")

    def batches() -> Iterator[Any]:
        for i in range(0, n, size):
            chunk = texts(i)
            vectors = embedder.embed(chunk)
            flat = pa.array(vectors.reshape(-1), type=pa.float32())
            offsets = pa.array(range(0, (len(chunk) + 1) * embedder.dim, embedder.dim), type=pa.int32())
            yield pa.RecordBatch.from_arrays(
                [
                    hashes.slice(i, len(chunk)),
                    pa.array([embedder.model_id] * len(chunk), type=pa.string()),
                    pa.ListArray.from_arrays(offsets, flat),
                ],
                schema=S.EMBEDDINGS_SCHEMA,
            )
            if progress is not None:
                progress(len(chunk), n)

    return pa.RecordBatchReader.from_batches(S.EMBEDDINGS_SCHEMA, batches())
