"""Hybrid search over claim texts, in memory: cosine similarity and BM25, fused as chunk searches are.

Claims are short and few next to chunks (a hundred thousand is a large
store), so their index lives in the process: a matrix of unit vectors and an
inverted index of terms, grown as claims are learned. Filters (status, scope,
domain, tag, valid time) are masks applied before each leg ranks, so a
filtered recall still returns ``k`` hits when ``k`` match.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import date

import numpy as np

from kbflow.retrieve.dense import top_k
from kbflow.retrieve.fusion import FUSIONS
from kbflow.text.terms import ENGLISH_STOPWORDS, split_identifier

__all__ = ["ClaimIndex", "tokens"]

_WORD = re.compile(r"[^\W_]+")
STOPWORDS = ENGLISH_STOPWORDS
K1, B = 1.2, 0.75
#: a valid time's open ends, as day ordinals
OPEN_START, OPEN_END = 0, np.iinfo(np.int32).max


def _ordinals(days: Sequence[date | None] | None, n: int, open_end: int) -> np.ndarray:
    if days is None:
        return np.full(n, open_end, np.int32)
    return np.asarray([d.toordinal() if d is not None else open_end for d in days], np.int32)


def tokens(text: str) -> list[str]:
    """The BM25 terms of ``text``: lower-cased words, camelCase split too, stop words left out."""
    out = []
    for word in _WORD.findall(text):
        lower = word.lower()
        if lower not in STOPWORDS:
            out.append(lower)
        if word != lower and not word.isupper() and word[1:] != lower[1:]:  # a case change inside the word
            out.extend(p for p in split_identifier(word) if p not in STOPWORDS)
    return out


class ClaimIndex:
    """Rows of (claim id, text, vector), with each row's status and scope as codes and its valid time as day
    ordinals, for vectorized filters."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self._matrix = np.zeros((64, dim), np.float32)  # grown by doubling; rows past len(self) are unused
        self._status = np.zeros(64, np.int8)
        self._scope = np.zeros(64, np.int32)
        self._vfrom = np.full(64, OPEN_START, np.int32)
        self._vto = np.full(64, OPEN_END, np.int32)
        self._codes: dict[str, int] = {}  # status or scope -> its code
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lengths: list[int] = []  # terms per row, for the rows whose terms are indexed
        self._texts: list[str] = []
        self._length_cache: tuple[np.ndarray, float] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def code(self, value: str) -> int:
        """The code of a status or scope (0 is no status: a claim not learned yet, in a replay)."""
        return self._codes.setdefault(value, len(self._codes) + 1)

    def status_codes(self) -> np.ndarray:
        """Each row's status code now."""
        return self._status[: len(self.ids)]

    def add(
        self,
        claim_ids: Sequence[str],
        texts: Sequence[str],
        vectors: np.ndarray,
        statuses: Sequence[str],
        scopes: Sequence[str],
        valid_from: Sequence[date | None] | None = None,
        valid_to: Sequence[date | None] | None = None,
    ) -> None:
        """Index new claims (a claim already indexed keeps its row: its text and valid time never change)."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(claim_ids), self.dim)
        need = len(self.ids) + len(claim_ids)
        if need > len(self._matrix):
            size = max(need, 2 * len(self._matrix))
            for name in ("_matrix", "_status", "_scope", "_vfrom", "_vto"):
                old = getattr(self, name)
                grown = np.full((size, *old.shape[1:]), OPEN_END if name == "_vto" else 0, old.dtype)
                grown[: len(self.ids)] = old[: len(self.ids)]
                setattr(self, name, grown)
        starts = _ordinals(valid_from, len(claim_ids), OPEN_START)
        ends = _ordinals(valid_to, len(claim_ids), OPEN_END)
        rows = zip(claim_ids, texts, vectors, statuses, scopes, starts, ends, strict=True)
        for claim_id, text, vector, status, scope, start, end in rows:
            if claim_id in self.row:
                continue
            r = len(self.ids)
            self.ids.append(claim_id)
            self.row[claim_id] = r
            self._matrix[r] = vector
            self._status[r] = self.code(status)
            self._scope[r] = self.code(scope)
            self._vfrom[r], self._vto[r] = start, end
            self._texts.append(text)

    def _build(self) -> None:
        """Index the terms of the rows added since the last keyword search (done on first need: a store
        opened only to write never tokenizes its claims)."""
        for r in range(len(self._lengths), len(self._texts)):
            terms = Counter(tokens(self._texts[r]))
            self._lengths.append(sum(terms.values()))
            for term, tf in terms.items():
                self._postings.setdefault(term, []).append((r, tf))
                self._arrays.pop(term, None)

    def set_status(self, claim_id: str, status: str) -> None:
        r = self.row.get(claim_id)
        if r is not None:
            self._status[r] = self.code(status)

    def vector(self, claim_id: str) -> np.ndarray:
        return self._matrix[self.row[claim_id]]

    def _mat(self) -> np.ndarray:
        return self._matrix[: len(self.ids)]

    def filter_mask(
        self,
        statuses: Sequence[str] | None,
        scopes: Sequence[str] | None,
        *,
        status_codes: np.ndarray | None = None,
        day: date | None = None,
    ) -> np.ndarray:
        """Rows whose status is one of ``statuses`` and scope one of ``scopes`` (``None``: any), valid on
        ``day`` (``None``: any). ``status_codes``: each row's status as of another moment (a replay; 0 for a
        claim not learned then) in place of its status now."""
        n = len(self.ids)
        status = self._status[:n] if status_codes is None else status_codes
        mask = np.ones(n, bool) if status_codes is None else status > 0
        for values, codes in ((statuses, status), (scopes, self._scope[:n])):
            if values is not None:
                wanted = [self._codes[v] for v in values if v in self._codes]
                mask &= np.isin(codes, np.asarray(wanted, codes.dtype))
        if day is not None:
            mask &= (self._vfrom[:n] <= day.toordinal()) & (self._vto[:n] >= day.toordinal())
        return mask

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        found = self._arrays.get(term)
        if found is None:
            plist = self._postings.get(term)
            if not plist:
                return None
            rows, tfs = zip(*plist, strict=True)
            found = self._arrays[term] = (np.asarray(rows, np.int64), np.asarray(tfs, np.float32))
        return found

    def dense(self, query: np.ndarray, mask: np.ndarray, depth: int) -> tuple[list[str], list[float]]:
        """The ``depth`` best rows under ``mask`` by cosine similarity, best first."""
        mat = self._mat()
        if not len(mat) or not mask.any():
            return [], []
        scores = mat @ np.asarray(query, np.float32)
        scores = np.where(mask, scores, -np.inf)
        return self._top(scores, depth)

    def bm25(self, query: str, mask: np.ndarray, depth: int) -> tuple[list[str], list[float]]:
        """The ``depth`` best rows under ``mask`` by BM25 (rows sharing no term with the query left out)."""
        n = len(self.ids)
        terms = set(tokens(query))
        if not n or not terms:
            return [], []
        self._build()
        lengths, avg = self._length_stats()
        scores = np.zeros(n, np.float32)
        matched = np.zeros(n, bool)
        for term in terms:
            posting = self._posting(term)
            if posting is None:
                continue
            rows, tf = posting
            idf = math.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = tf + K1 * (1 - B + B * lengths[rows] / avg)
            scores[rows] += idf * tf * (K1 + 1) / norm
            matched[rows] = True
        scores = np.where(matched & mask, scores, -np.inf)
        return self._top(scores, depth)

    def _length_stats(self) -> tuple[np.ndarray, float]:
        """Terms per row as an array and their mean (kept until rows are added: not rebuilt per query)."""
        if self._length_cache is None or len(self._length_cache[0]) != len(self._lengths):
            lengths = np.asarray(self._lengths, np.float32)
            self._length_cache = (lengths, float(lengths.mean()) or 1.0)
        return self._length_cache

    def _top(self, scores: np.ndarray, depth: int) -> tuple[list[str], list[float]]:
        top = top_k(scores, depth)
        return [self.ids[i] for i in top], [float(scores[i]) for i in top]

    def mask(self, keep: Callable[[str], bool], within: np.ndarray) -> np.ndarray:
        """The rows of ``within`` whose claim ``keep`` accepts (``keep`` is asked only for those)."""
        out = np.zeros(len(self.ids), bool)
        for r in np.flatnonzero(within):
            out[r] = keep(self.ids[r])
        return out

    def search(
        self,
        query: str,
        vector: np.ndarray | None,
        mask: np.ndarray,
        k: int,
        *,
        fusion: str = "convex",
        weights: dict[str, float] | None = None,
        rrf_k: int = 60,
        depth: int = 50,
    ) -> list[tuple[str, float, int | None, int | None]]:
        """``(claim id, fused score, dense rank, bm25 rank)`` of the ``k`` best claims under ``mask``, the legs
        fused as the lake's searches fuse theirs (:data:`kbflow.retrieve.fusion.FUSIONS`)."""
        depth = max(depth, k)
        legs: dict[str, tuple[list[str], list[float]]] = {}
        if vector is not None:
            legs["dense"] = self.dense(vector, mask, depth)
        legs["bm25"] = self.bm25(query, mask, depth)
        fused = FUSIONS[fusion]({n: leg for n, leg in legs.items() if leg[0]}, weights=weights, rrf_k=rrf_k)
        rank = {name: {cid: r for r, cid in enumerate(ids, 1)} for name, (ids, _) in legs.items()}
        return [(cid, score, rank.get("dense", {}).get(cid), rank["bm25"].get(cid)) for cid, score in fused[:k]]
