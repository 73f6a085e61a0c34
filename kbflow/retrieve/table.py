"""The search table of one version as the retriever reads it: its row count, its in-memory vectors, chunk ids
and document groups (each loaded once, on first use, whatever the thread, or started in the background by
:meth:`SearchTable.warm` while a first query is embedded), the two legs that search it, and its hit rows read by
chunk id (:meth:`SearchTable.read`).

- :meth:`SearchTable.dense`: the nearest vectors, exact (in memory, up to
  ``settings.retrieval.exact_max_rows`` rows or without an ANN index) or by
  the Lance ANN index;
- :meth:`SearchTable.bm25`: Lance's full-text index over the text, plus the
  names field (paths, symbols, titles) weighted ``names_weight``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import Settings
from kbflow.index.search import VECTOR_INDEX
from kbflow.lake.sql import sql_in
from kbflow.retrieve.dense import ChunkIds, ExactIndex
from kbflow.retrieve.signals import Groups
from kbflow.text.figures import query_figure_words
from kbflow.text.terms import identifier_words

__all__ = ["ANN_MIN_EF", "Leg", "SearchTable"]

#: the least HNSW search breadth of the ANN dense leg (it is never below the candidates asked for)
ANN_MIN_EF = 100

# a leg's result: chunk ids, Lance row ids and scores, best first
Leg = tuple[list[str], list[int], list[float]]


#: how many chunks writing a name :meth:`SearchTable.holds` reads to find where they stand (more: the name is
#: written everywhere)
HOLDS_SCAN = 4096


class SearchTable:
    """One version of the search table (a pinned Lance dataset) and what searching it loads."""

    def __init__(self, dataset, settings: Settings) -> None:
        self.dataset = dataset
        self.rows = dataset.count_rows()
        has_ann = any(ix["name"] == VECTOR_INDEX for ix in dataset.list_indices())
        #: whether the dense leg scans the vectors in memory (small tables, or no ANN index)
        self.exact = self.rows <= settings.retrieval.exact_max_rows or not has_ann
        self._exact_index: ExactIndex | None = None
        self._chunk_ids: ChunkIds | None = None
        self._groups: Groups | None = None
        # one lock per part, so searches from several threads load each part once and two parts can load at once
        self._locks = {part: threading.Lock() for part in ("exact_index", "chunk_ids", "groups")}

    def read(self, chunk_ids: Sequence[str], row_of: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """``{chunk id: decoded hit row}`` (its text and hit payload) of ``chunk_ids``, in one take; ``row_of``
        maps them to their Lance row ids in this version."""
        from kbflow.lake.lake import Lake
        from kbflow.retrieve.distinct import decode

        rows = Lake.take(self.dataset, [row_of[c] for c in chunk_ids], columns=[S.TEXT, S.HIT]).to_pylist()
        return dict(zip(chunk_ids, decode(rows)))

    def cosines(self, vector: Any, row_ids: Sequence[int]) -> list[float]:
        """The cosine similarity of ``vector`` to the rows ``row_ids``: from the in-memory vectors where this
        version is searched exactly, else read from the table."""
        if self.exact:
            return [float(v) for v in self.exact_index.cosine(vector, row_ids)]
        from kbflow.lake.lake import Lake

        np = require("numpy")
        vectors = Lake.take(self.dataset, list(row_ids), columns=[S.VECTOR]).column(S.VECTOR)
        matrix = np.stack(vectors.to_numpy(zero_copy_only=False)).astype(np.float32)
        q = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(q)), 1e-12)
        return [float(v) for v in (matrix @ q / np.where(norms > 0, norms, 1.0))]

    def vectors_of(self, row_ids: Sequence[int]) -> Any:
        """The stored vectors of the rows ``row_ids`` (a float32 matrix, one row each): from memory where this
        version is searched exactly, else read from the table."""
        if self.exact:
            return self.exact_index.rows(row_ids)
        from kbflow.lake.lake import Lake

        np = require("numpy")
        vectors = Lake.take(self.dataset, list(row_ids), columns=[S.VECTOR]).column(S.VECTOR)
        return np.stack(vectors.to_numpy(zero_copy_only=False)).astype(np.float32)

    def chunk_ids_of(self, row_ids: Sequence[int]) -> list[str]:
        """Chunk ids of Lance row ids of this version, from memory (the exact index's where it is loaded, else an
        id map: a keyword-only search never loads the vectors)."""
        if self._exact_index is not None:
            return self._exact_index.chunk_id_of(row_ids)
        if self._chunk_ids is None:
            with self._locks["chunk_ids"]:
                if self._chunk_ids is None:
                    self._chunk_ids = ChunkIds.load(self.dataset)
        return self._chunk_ids.of(row_ids)

    @property
    def exact_index(self) -> ExactIndex:
        """The in-memory vectors of this version (loaded on first use)."""
        if self._exact_index is None:
            with self._locks["exact_index"]:
                if self._exact_index is None:
                    self._exact_index = ExactIndex.load(self.dataset)
        return self._exact_index

    @property
    def groups(self) -> Groups:
        """Each row's document, page and code unit, and the documents' path words (loaded on first use of a
        signal, :mod:`kbflow.retrieve.signals`, or of a hybrid fusion, :mod:`kbflow.retrieve.units`)."""
        if self._groups is None:
            with self._locks["groups"]:
                if self._groups is None:
                    self._groups = Groups.load(self.dataset)
        return self._groups

    def warm(self, groups: bool) -> None:
        """Start loading, each in a thread of its own, what a search with a dense leg is about to read and this
        version has not loaded: the in-memory vectors where the dense leg is exact, and the groups where
        ``groups`` (the search fuses or weighs a signal). They then load while the query is embedded, so a new
        process's first search waits for the slowest of the three, not for their sum. The parts' properties
        wait for a load in flight."""
        parts = (["exact_index"] if self.exact else []) + (["groups"] if groups else [])
        for part in parts:
            if getattr(self, f"_{part}") is None and not self._locks[part].locked():
                loader = threading.Thread(target=self._load_quietly, args=(part,), name=f"kbflow-load-{part}")
                loader.daemon = True  # a process that exits before its search reads the part does not wait for it
                loader.start()

    def _load_quietly(self, part: str) -> None:
        """Load ``part`` (a property's name); an error is left for the search that reads it to raise."""
        try:
            getattr(self, part)
        except Exception:  # the search's own read of the part raises it again, in its own thread
            pass

    @staticmethod
    def where(filters: Mapping[str, Sequence[str]]) -> str | None:
        parts = [sql_in(column, values) for column, values in filters.items()]
        return " AND ".join(parts) if parts else None

    def dense(self, vector, depth: int, filters: Mapping[str, Sequence[str]]) -> Leg:
        if self.exact:
            index = self.exact_index
            return index.search(vector, depth, index.mask(filters) if filters else None)
        # ef: the HNSW search breadth, at least the candidates asked for; no refine step (it re-reads the raw
        # vector of every candidate: recall@10 is 0.973 without it at 1M rows, bench/query_latency.py)
        nearest = {"column": S.VECTOR, "q": vector, "k": depth, "metric": "cosine", "ef": max(ANN_MIN_EF, depth)}
        where = self.where(filters)
        table = self.dataset.to_table(
            columns=["_distance"], nearest=nearest, filter=where, prefilter=bool(where), with_row_id=True
        )
        row_ids = table.column("_rowid").to_pylist()
        return self.chunk_ids_of(row_ids), row_ids, [1.0 - d for d in table.column("_distance").to_pylist()]

    def holds(self, words: str, within: Sequence[int] | None = None) -> bool:
        """Whether one chunk of the keyword index holds every word of ``words`` (in its text, or in its names
        field); with ``within`` (Lance row ids: a search's first hits), one chunk of what they stand for (their
        documents, a file of code's whole source: :meth:`Groups.mentioned`)."""
        fts = require("lance.query")
        every = fts.FullTextOperator.AND
        limit = 1 if within is None else HOLDS_SCAN
        for column in (S.SEARCH_TEXT, S.SEARCH_NAMES):
            query = fts.MatchQuery(words, column, operator=every)
            found = self.dataset.to_table(columns=["_score"], full_text_query=query, limit=limit, with_row_id=True)
            if not found.num_rows:
                continue
            if within is None or found.num_rows >= limit:  # a name this common is written everywhere
                return True
            if self.groups.mentioned(sorted(found.column("_rowid").to_pylist()), within):
                return True
        return False

    def bm25(self, query: str, depth: int, filters: Mapping[str, Sequence[str]], names_weight: float) -> Leg:
        where = self.where(filters)
        # chunk ids come from row ids in memory (no string column read)
        # identifiers' words and figures' values, as the index has them (kbflow.text.terms, kbflow.text.figures)
        words = " ".join(w for w in (identifier_words(query), query_figure_words(query)) if w)
        terms = f"{query} {words}" if words else query
        fts = require("lance.query")

        def match(column: str) -> tuple[list[int], list[float]]:
            table = self.dataset.to_table(
                columns=["_score"],
                full_text_query=fts.MatchQuery(terms, column),
                filter=where,
                prefilter=bool(where),
                limit=depth,
                with_row_id=True,
            )
            return table.column("_rowid").to_pylist(), table.column("_score").to_pylist()

        row_ids, scores = match(S.SEARCH_TEXT)
        if names_weight > 0:
            # a match in the path, symbol or title counts names_weight times more: the two fields' scores are
            # summed per chunk, as a boolean SHOULD query would, but each field is searched on its own (its
            # top-k pruning intact: a boolean query over both kept Lance from pruning, bench/query_latency.py)
            n_rows, n_scores = match(S.SEARCH_NAMES)
            if n_rows:
                total = dict(zip(row_ids, scores))
                for rid, score in zip(n_rows, n_scores):
                    total[rid] = total.get(rid, 0.0) + names_weight * score
                best = sorted(total.items(), key=lambda item: -item[1])[:depth]
                row_ids, scores = [rid for rid, _ in best], [score for _, score in best]
        return self.chunk_ids_of(row_ids), row_ids, scores
