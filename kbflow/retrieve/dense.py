"""The exact dense leg: one search-table version's vectors in memory.

A flat cosine scan over a contiguous float32 matrix is exact and, up to a few
hundred thousand chunks, faster on a CPU than an ANN index probe: one
matrix-vector product is bound by memory bandwidth (about 5 ms for 100k x 384
on a 2-core machine). Where the CPU multiplies bfloat16 faster (AVX512-BF16,
AMX), a bfloat16 copy picks a generous candidate set that is then re-scored
exactly in float32, so the ranking is still that of the exact scan; which
path is faster is measured once at load, on the matrix itself.

When torch is already loaded (the query model is a torch model), the scan runs
on torch's thread pool: numpy's OpenBLAS pool busy-waits after each call and
would fight the model's threads for the same cores.

Filters become a boolean mask built from the dictionary-encoded filter
columns held beside the matrix, so a filtered query is as exact as an
unfiltered one. Above ``RetrievalSettings.exact_max_rows`` rows the
retriever leaves the dense leg to Lance's ANN index instead.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kbflow import schema as S
from kbflow._lazy import require

__all__ = ["ChunkIds", "ExactIndex", "FILTER_COLUMNS", "top_k"]


def top_k(scores: np.ndarray, depth: int) -> np.ndarray:
    """The rows of the ``depth`` highest finite ``scores``, best first, ties by row (a masked-out row scores
    ``-inf``): the one masked top-k of the chunk search's dense leg and the claims' recall."""
    finite = np.isfinite(scores)
    depth = min(depth, int(finite.sum()))
    if depth <= 0:
        return np.zeros(0, np.int64)
    kth = -np.partition(-scores, depth - 1)[depth - 1]  # the depth-th best score; rows tied with it compete by row
    top = np.flatnonzero(scores >= kth)
    return top[np.lexsort((top, -scores[top]))][:depth]


#: Columns a request may filter on, held dictionary-encoded beside the matrix.
FILTER_COLUMNS = (S.SCOPE, S.CONTENT_KIND, S.SOURCE_TYPE, S.SOURCE_ID)


@dataclass
class _Codes:
    codes: np.ndarray  # int32 per row
    values: dict[str, int]  # value -> code


class ChunkIds:
    """Lance row id -> chunk id for one pinned version, held in memory (for the ANN path, which has no
    :class:`ExactIndex`): a leg then reads only row ids and scores from Lance, never the string column
    (reading 200 chunk ids at random from a million-row table cost about 7 ms a leg)."""

    def __init__(self, chunk_ids, row_ids: np.ndarray) -> None:
        order = np.argsort(row_ids, kind="stable")
        self.sorted_rows = row_ids[order]
        self.positions = order
        self.chunk_ids = chunk_ids  # pyarrow StringArray, in scan order

    @classmethod
    def load(cls, ds) -> ChunkIds:
        table = ds.to_table(columns=[S.CHUNK_ID], with_row_id=True)
        return cls(table.column(S.CHUNK_ID).combine_chunks(), table.column("_rowid").to_numpy().astype(np.uint64))

    def of(self, row_ids: Sequence[int]) -> list[str]:
        if not len(row_ids):
            return []
        rows = np.asarray(row_ids, dtype=np.uint64)
        where = np.searchsorted(self.sorted_rows, rows)
        where = np.minimum(where, len(self.sorted_rows) - 1)
        if not np.array_equal(self.sorted_rows[where], rows):
            raise KeyError("a row id that is not in this version")
        pa = require("pyarrow")
        return self.chunk_ids.take(pa.array(self.positions[where], type="int64")).to_pylist()


class ExactIndex:
    """Exact cosine top-k over every row of one pinned search-table version.

    Row ``i`` of the matrix is row ``i`` of the dataset in scan order, and
    carries its ``chunk_id`` and Lance row id, so hits can be fetched with one
    ``take`` and fused on chunk ids.
    """

    def __init__(self, vectors: np.ndarray, chunk_ids, row_ids: np.ndarray, columns: Mapping[str, _Codes]) -> None:
        self.vectors = vectors
        self.chunk_ids = chunk_ids  # pyarrow StringArray
        self.row_ids = row_ids
        self.columns = dict(columns)
        self._position: dict[int, int] | None = None
        #: how the scan runs: "numpy", "torch-float32" or "torch-bfloat16" (+ exact re-scoring)
        self.backend = "numpy"
        self._scan = None
        torch = sys.modules.get("torch")
        if torch is not None and len(vectors):
            self._scan = torch.from_numpy(vectors.copy() if not vectors.flags.writeable else vectors)
            self.backend = "torch-float32"
            if len(vectors) >= 20_000:
                from kbflow.embed.bf16 import best_time

                half = self._scan.to(torch.bfloat16)
                probe = torch.from_numpy(vectors[0].copy())
                slow = best_time(lambda: self._scan @ probe, 3)
                if best_time(lambda: half @ probe.to(torch.bfloat16), 3) < 0.7 * slow:
                    self._scan, self.backend = half, "torch-bfloat16"

    def __len__(self) -> int:
        return len(self.row_ids)

    @classmethod
    def load(cls, ds) -> ExactIndex:
        """Read the vector, id and filter columns of the Lance dataset ``ds`` (one version)."""
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        table = ds.to_table(columns=[S.CHUNK_ID, S.VECTOR, *FILTER_COLUMNS], with_row_id=True)
        n = table.num_rows
        vec_col = table.column(S.VECTOR).combine_chunks()
        dim = vec_col.type.list_size
        flat = vec_col.flatten() if n else pa.array([], pa.float32())
        vectors = np.ascontiguousarray(flat.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, dim)
        # the rows' norms as one fused multiply-add pass (np.linalg.norm's squares fill a copy of the matrix:
        # 0.24 s against 0.013 s for 100k x 384, a new process's first search waits for it)
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
        if n and not np.allclose(norms, 1.0, atol=1e-4):
            # cosine needs unit rows; zero rows stay zero (they score 0 against any query)
            vectors = (vectors / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32, copy=False)
        columns = {}
        for name in FILTER_COLUMNS:
            enc = pc.dictionary_encode(table.column(name).combine_chunks())
            codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)
            columns[name] = _Codes(codes, {v: i for i, v in enumerate(enc.dictionary.to_pylist())})
        row_ids = table.column("_rowid").to_numpy().astype(np.uint64)
        return cls(vectors, table.column(S.CHUNK_ID).combine_chunks(), row_ids, columns)

    def chunk_id_of(self, row_ids: Sequence[int]) -> list[str]:
        """The chunk ids of Lance row ids of this version."""
        pos = self.positions(row_ids)
        return self.chunk_ids.take(require("pyarrow").array(pos, type="int64")).to_pylist() if pos else []

    def positions(self, row_ids: Sequence[int]) -> list[int]:
        """The matrix rows of these Lance row ids."""
        if self._position is None:
            self._position = {rid: i for i, rid in enumerate(self.row_ids.tolist())}
        return [self._position[r] for r in row_ids]

    def rows(self, row_ids: Sequence[int]) -> np.ndarray:
        """The unit vectors of the rows with these Lance row ids, one matrix row each."""
        return self.vectors[self.positions(row_ids)]

    def cosine(self, query: np.ndarray, row_ids: Sequence[int]) -> list[float]:
        """The cosine similarity of ``query`` to the rows with these Lance row ids."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        return [float(x) for x in self.rows(row_ids) @ q]

    def mask(self, filters: Mapping[str, Sequence[str]]) -> np.ndarray | None:
        """Rows that pass every ``{column: allowed values}`` filter (``None``: no filter)."""
        out = None
        for column, allowed in filters.items():
            col = self.columns[column]
            codes = [col.values[v] for v in allowed if v in col.values]
            keep = np.isin(col.codes, np.asarray(codes, dtype=np.int32))
            out = keep if out is None else out & keep
        return out

    def search(
        self, query: np.ndarray, depth: int, mask: np.ndarray | None = None
    ) -> tuple[list[str], list[int], list[float]]:
        """``(chunk_ids, row_ids, cosine similarities)`` of the ``depth`` nearest rows, best first.

        Ties are broken by scan position, so results are deterministic.
        """
        if len(self) == 0 or depth < 1:
            return [], [], []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.vectors.shape[1]:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, the index {self.vectors.shape[1]}")
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        n = len(self)
        if mask is not None:
            allowed = int(mask.sum())
            if allowed == 0:
                return [], [], []
            depth = min(depth, allowed)
        depth = min(depth, n)
        if self._scan is None:
            scores = self.vectors @ q
            top = top_k(np.where(mask, scores, -np.inf) if mask is not None else scores, depth)
        else:
            torch = sys.modules["torch"]
            tq = torch.from_numpy(q).to(self._scan.dtype)
            scores_t = (self._scan @ tq).float()
            if mask is not None:
                scores_t.masked_fill_(~torch.from_numpy(mask), float("-inf"))
            # bfloat16 scores only choose candidates; a wide margin keeps every true top-depth row in
            pool = depth if self.backend == "torch-float32" else min(n, 4 * depth + 64)
            top = torch.topk(scores_t, pool, sorted=False).indices.numpy()
            if mask is not None:
                top = top[mask[top]]
        # re-score the candidates exactly (einsum: no BLAS thread pool for a few hundred rows)
        exact = np.einsum("ij,j->i", self.vectors[top], q)
        order = np.lexsort((top, -exact))[:depth]
        top, exact = top[order], exact[order]
        ids = self.chunk_ids.take(require("pyarrow").array(top, type="int64")).to_pylist()
        return ids, self.row_ids[top].tolist(), exact.astype(float).tolist()
