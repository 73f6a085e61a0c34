"""Hybrid retrieval over the search table, with the citation in every hit.

Two legs each fetch candidates: the dense leg (cosine similarity of the query
vector to the chunk vectors) and the keyword leg (BM25 over Lance's full-text
indexes, English stemming and stop words: a chunk's text, plus its names, path
and symbol, weighted ``names_weight`` times more; camelCase identifiers are
split into words at index and query time, :mod:`kbflow.text.terms`). Their results
are fused by :func:`kbflow.retrieve.fusion.convex` (the default) or
:func:`kbflow.retrieve.fusion.rrf` over each leg's first ``min_depth``
candidates, the candidate depth floor (200): a leg fetched deeper for a
larger ``k`` changes no score, so the first hits never depend on ``k``. The
fused candidates' documents and pages count next (a query naming a PDF's
file lifts its chunks, the chunks of one page reinforce each other:
:mod:`kbflow.retrieve.signals`). An optional cross-encoder (:mod:`kbflow.retrieve.rerank`) rescores the first
``rerank_depth`` fused candidates. A query made only of code names
(``Sniffer.has_header``, ``json.dumps``) gets the chunks that define them
first. The hit rows (text plus citation) are fetched with one ``take``.

Every hit carries each leg's raw score (``dense_score``: cosine similarity,
``bm25_score``) and a ``relevance`` calibrated from its cosine for the lake's
model (:mod:`kbflow.retrieve.confidence`); ``Hits.confidence`` is the best
of them, and ``Hits.low_confidence`` flags a search whose lake likely holds
no answer. ``min_score`` drops hits below a relevance.

The dense leg is exact: up to ``RetrievalSettings.exact_max_rows`` rows the
vectors of the opened version are held in memory (:class:`ExactIndex`, loaded
on the first dense query); above that, a table with an ANN index is searched
through it. Filters (scope, content kind, source type, source ids) apply to
both legs before ranking: a mask over the in-memory rows, a Lance pre-filter
for the keyword leg and the ANN index.

A retriever reads one version of the search table, pinned when it is opened:
an ingest committing meanwhile never changes what it sees.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Unpack

from kbflow import schema as S
from kbflow import usage
from kbflow.config import MAX_K, OWN_SPACE, RetrievalSettings, Settings, split_space
from kbflow.embed.base import get_embedder
from kbflow.errors import LakeNotFoundError, QueryError, VersionNotFoundError
from kbflow.index.search import search_model
from kbflow.lake.lake import Lake
from kbflow.records import (
    Hit,
    Hits,
    render,  # noqa: F401  (the hits it returns draw themselves in notebooks)
    scopes,
)
from kbflow.retrieve import ranking as ranking_step
from kbflow.retrieve.assemble import flag_reason, hits_of
from kbflow.retrieve.confidence import Calibration, calibration_for, stored_curve
from kbflow.retrieve.glossary import load_glossary
from kbflow.retrieve.ranking import Ranking
from kbflow.retrieve.request import Request, SearchOptions, filters_for, min_score_for, names_within, retrieval_for
from kbflow.retrieve.rerank import Reranker, get_reranker
from kbflow.retrieve.table import SearchTable

__all__ = ["Ranking", "Retriever", "SearchOptions"]


#: the largest ``k`` of :meth:`Retriever.rank` (evaluation depth)
MAX_RANK_K = 10_000


class Retriever:
    """Search a lake. Open with :meth:`open`; query with :meth:`search`.

    Examples
    --------
    >>> r = Retriever.open("data/lake")                       # doctest: +SKIP
    >>> for hit in r.search("where are ranks fused", k=5):    # doctest: +SKIP
    ...     print(hit.score, hit.citation.render(), hit.text[:80])
    """

    def __init__(
        self, lake: Lake, dataset, settings: Settings, tag: str | None = None, origin: str | None = None
    ) -> None:
        self.lake = lake
        self.dataset = dataset
        self.settings = settings
        load_glossary(settings.retrieval.glossary)  # a bad glossary fails when the retriever opens
        #: the search-table version this retriever reads
        self.version = dataset.version
        #: the lake snapshot this retriever reads, when opened by tag
        self.tag = tag
        self.model_id = search_model(dataset) or settings.model
        #: the version's rows, vectors and legs (:mod:`kbflow.retrieve.table`)
        self.table = SearchTable(dataset, settings)
        self.rows, self.exact = self.table.rows, self.table.exact
        registered = lake.sources(at=tag) if lake.has_table(S.SOURCES) else []
        #: each registered source's scope
        self.source_scopes = {s.source_id: s.scope for s in registered}
        self.source_ids = frozenset(self.source_scopes)
        self.scopes = frozenset(self.source_scopes.values()) | {S.GLOBAL_SCOPE}
        #: where this retriever's searches come from, for the query log (``python``, ``notebook``, ``cli``, ...)
        self.origin = origin or usage.default_origin()
        self._embedder = None
        self._load_lock = threading.Lock()  # searches from several threads load the model once

    @classmethod
    def open(
        cls,
        lake: str | Lake | None = None,
        *,
        version: int | None = None,
        tag: str | None = None,
        settings: Settings | Mapping[str, Any] | None = None,
        origin: str | None = None,
    ) -> Retriever:
        """Open the lake's search table (``lake``: a path/URI, a :class:`Lake`, or ``None`` for the default).

        By default the latest version is read. ``version=N`` reads version ``N``
        of the search table; ``tag="name"`` reads the lake snapshot made by
        ``kbflow tag name`` (search table and source registry as they were).
        The query model is the one that version was built with. ``origin``
        names the surface in the query log (default ``"python"``, or
        ``"notebook"`` in a Jupyter kernel).
        """
        if version is not None and tag is not None:
            raise QueryError("pass version or tag, not both")
        lake = lake if isinstance(lake, Lake) else Lake(lake, create=False)
        settings = Settings.coerce(settings, lake=lake.uri)
        if not lake.has_table(S.SEARCH):
            raise LakeNotFoundError(f"{lake.uri}: no search table yet; run `kbflow ingest` first")
        if tag is not None and tag not in lake.snapshots():
            raise VersionNotFoundError(f"no tag {tag!r} in this lake (`kbflow versions` lists them; `kbflow tag NAME`)")
        dataset = lake.dataset(S.SEARCH, at=tag if tag is not None else version)
        return cls(lake, dataset, settings, tag=tag, origin=origin)

    def __repr__(self) -> str:
        at = f", tag={self.tag!r}" if self.tag else ""
        return f"Retriever({self.lake.uri!r}, version={self.version}{at}, rows={self.rows}, model={self.model_id!r})"

    @property
    def query_backend(self) -> str:
        """The backend that embeds queries: ``settings.backend`` where it gives this table's vectors; for a
        table of fp32 vectors and an int8 setting, ``onnx`` (the same vectors as ``torch``); a table of int8
        vectors is always queried on ``onnx-int8`` (its model id says so)."""
        backend = self.settings.backend
        space = split_space(self.model_id)[1]
        if space is not None:
            return space
        return "onnx" if backend in OWN_SPACE else backend

    @property
    def embedder(self):
        if self._embedder is None:
            with self._load_lock:
                if self._embedder is None:
                    self._embedder = get_embedder(
                        self.model_id, self.settings.embed_batch_size, self.query_backend, self.settings.embed_threads
                    )
        return self._embedder

    def share_model(self, other: Retriever) -> bool:
        """Use ``other``'s loaded model where both embed with the same one (a server re-opening the search table
        after an ingest keeps its model loaded); returns whether it did."""
        if other.model_id != self.model_id or other is self:
            return False
        with other._load_lock:
            self._embedder = other._embedder
        return self._embedder is not None

    @property
    def exact_index(self):
        """The in-memory vectors of this version (loaded on first use)."""
        return self.table.exact_index

    @property
    def groups(self):
        """Each row's document and page, and the documents' path words (:mod:`kbflow.retrieve.signals`)."""
        return self.table.groups

    # --- requests ---------------------------------------------------------------
    def _request(self, query: str, k: int, max_k: int, options: Mapping[str, Any], reach: str | None = None) -> Request:
        """Validate a request once (:mod:`kbflow.retrieve.request`): the retrieval settings with its overrides,
        its filters and its reranker."""
        settings, depth = retrieval_for(self.settings.retrieval, query, k, max_k, options)
        filters = filters_for(options, *names_within(reach, self.source_scopes))
        reranker = self._reranker(options.get("reranker"), settings)
        if reranker is not None:
            depth = max(depth, settings.rerank_depth)  # enough candidates for the reranker to choose from
        return Request(query.strip(), k, settings, depth, filters, reranker)

    def _min_score(self, min_score: Any, mode: str) -> float | None:
        return min_score_for(min_score, mode, self.calibration, self.model_id)

    @property
    def calibration(self) -> Calibration | None:
        """How hit relevance is computed: the settings' curve, else this search-table version's own (fitted at
        ingest, :mod:`kbflow.retrieve.confidence`), else the model's built-in one (``None``: not calibrated)."""
        if self.settings.retrieval.calibration is not None:
            return calibration_for(self.model_id, self.settings.retrieval.calibration)
        return calibration_for(self.model_id, stored=self._stored())

    @property
    def calibration_source(self) -> str:
        """Which curve :attr:`calibration` is: ``"settings"``, ``"lake"`` (fitted at ingest) or ``"model"``."""
        if self.settings.retrieval.calibration is not None:
            return "settings"
        return "lake" if self._stored() is not None else "model"

    def _stored(self) -> Calibration | None:
        """This search-table version's own curve, read from the lake once (``None``: it has none)."""
        if not hasattr(self, "_stored_curve"):
            self._stored_curve = stored_curve(self.lake, self.model_id, self.version)
        return self._stored_curve

    def _reranker(self, reranker: str | Reranker | bool | None, settings: RetrievalSettings) -> Reranker | None:
        """The reranker a request asks for: ``None`` the settings' one, ``False`` none, a name or an object."""
        if reranker is None:
            reranker = settings.reranker
        if reranker is None or reranker is False:
            return None
        if isinstance(reranker, str) and reranker:
            return get_reranker(reranker, self.settings.embed_batch_size or 32)
        if reranker is True or not isinstance(reranker, Reranker):
            raise QueryError(
                f"reranker must be a cross-encoder folder or model id, an object with score(query, texts), "
                f"or False; got {reranker!r}"
            )
        return reranker

    # --- ranking -------------------------------------------------------------------
    def rank(self, query: str, k: int = 10, **options: Unpack[SearchOptions]) -> Ranking:
        """The top ``k`` chunk ids and scores for ``query`` (texts are read only to show each text once, and for a
        reranker).

        What :meth:`search` ranks, for evaluation and analysis: ``k`` goes up to
        10,000 and each leg's ranked list is kept. Options as in :meth:`search`,
        except that a reranker rescores only the first ``rerank_depth`` fused
        candidates; positions after them keep their fused order (see
        :attr:`Ranking.reranked`).
        """
        if "min_score" in options:
            raise QueryError("min_score applies to search(), which reads each hit's relevance; rank() reads none")
        return self._rank(self._request(query, k, MAX_RANK_K, options))

    def _rank(self, request: Request, vector: Any = None) -> Ranking:
        """Rank one request (:func:`kbflow.retrieve.ranking.rank`); ``vector``: its query embedding where it was
        computed already (a batch)."""
        return ranking_step.rank(self.table, self._embed_query, request, vector)

    def _embed_query(self, text: str) -> Any:
        """The query's embedding by this retriever's model (loaded on the first call)."""
        return self.embedder.embed_query(text)

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        caller: str | None = None,
        origin: str | None = None,
        reach: str | None = None,
        **options: Unpack[SearchOptions],
    ) -> Hits:
        """The top ``k`` chunks for ``query``, each with its citation.

        Parameters
        ----------
        query:
            Free text, 1 to 1,000 characters.
        k:
            Number of hits, 1 to 100.
        mode:
            ``"hybrid"`` (default), ``"dense"`` or ``"bm25"``.
        fusion:
            Hybrid fusion: ``"convex"`` (default: weighted sum of min-max
            normalized leg scores) or ``"rrf"`` (Reciprocal Rank Fusion).
        scope:
            A scope path (``acme/payments``): hits from sources of that scope,
            of its ancestors (``acme``) and global sources; nothing beside or
            below it (see :mod:`kbflow.records.scopes`).
        kinds, source_types, source_ids:
            Keep only chunks of these content kinds (``code``, ``doc``,
            ``record``, ...), source types (``repo``, ``docs``, ``jsonl``, ...)
            or registered source ids.
        rrf_k, weights, depth:
            Fusion constant, per-leg weights ``{"dense": w, "bm25": w}`` and
            candidates per leg (at least ``3 * k``; never fewer than the
            fusion window, ``min_depth + 1``); defaults from the settings.
        min_depth:
            The candidate depth floor: fusion scores each leg's first
            ``min_depth`` candidates, whatever ``k`` (default 300).
        names_weight:
            How much more a keyword match in a chunk's path, symbol or heading
            path counts than one in its text (default 1.0; 0 turns it off).
        symbol_first:
            A query made only of code names gets their definitions first
            (default ``True``).
        reranker, rerank_depth:
            A cross-encoder (local folder or model id, or an object with
            ``score(query, texts)``) that rescores the first
            ``max(rerank_depth, k)`` fused candidates; ``False`` turns off one
            set in the settings. Hits then carry the cross-encoder's scores and
            their ``fused_rank``.
        min_score:
            Drop hits whose ``relevance`` is below this (0 to 1); needs a
            calibrated model and a dense leg. ``Hits.confidence`` still says
            how good the best hit was.
        distinct:
            Show each text once (default ``True``): equal texts are one hit, the
            other copies in ``Hit.also_in`` (:mod:`kbflow.retrieve.distinct`).
        document_weight, page_weight, role_weight, glossary:
            The document, page and role signals (:mod:`kbflow.retrieve.signals`), query
            expansion (:mod:`kbflow.retrieve.glossary`).
        feedback:
            Pseudo-relevance feedback on prose records (0: off; see
            :class:`~kbflow.config.RetrievalSettings` and :mod:`kbflow.retrieve.feedback`).
        caller, origin:
            Who asked and from which surface, for the query log
            (:mod:`kbflow.usage`; ``origin`` defaults to the retriever's). The
            search is logged unless ``RetrievalSettings.log_queries`` is off;
            ``Hits.query_id`` names its row.
        reach:
            The scope of the API key a server searches for: an error then names
            only the scopes and source ids a search in that scope sees. It
            filters nothing by itself (``scope`` does).

        Every option defaults to the retriever's
        :class:`~kbflow.config.RetrievalSettings`; a request is those settings
        with its options applied, validated once.

        Raises
        ------
        QueryError
            Empty or over-long query, ``k`` out of range, unknown mode, fusion or filter value,
            ``min_score`` without a relevance to compare.
        EmbedError
            The cross-encoder cannot be loaded.
        """
        t0 = time.perf_counter()
        request = self._request(query, k, MAX_K, options, reach)
        min_score = self._min_score(options.get("min_score"), request.settings.mode)
        return self._search(request, min_score, options, caller, origin, t0)

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        caller: str | None = None,
        origin: str | None = None,
        **options: Unpack[SearchOptions],
    ) -> list[Hits]:
        """:meth:`search` for each of ``queries`` (the same options for all), their embeddings computed in one
        batch: for evaluation, and agents that ask several questions at once.

        Every query is validated before any is searched (one bad query fails
        the call, naming its position). Each :class:`Hits` is what
        ``search(query, k, **options)`` returns, and each is logged as its own
        search; its ``latency_ms`` is its own search plus its share of the
        batch's embedding time.
        """
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise QueryError("search_many takes a list of query strings")
        requests = []
        for n, query in enumerate(queries):
            try:
                requests.append(self._request(query, k, MAX_K, options))
            except QueryError as exc:
                raise QueryError(f"query {n}: {exc}") from None
        min_score = self._min_score(options.get("min_score"), requests[0].settings.mode) if requests else None
        dense = [i for i, r in enumerate(requests) if r.settings.mode in ("hybrid", "dense") and self.rows]
        vectors: dict[int, Any] = {}
        share = 0.0
        if dense:
            t0 = time.perf_counter()
            embedded = self.embedder.embed_queries([ranking_step.searched_text(requests[i])[0] for i in dense])
            vectors = dict(zip(dense, embedded))
            share = (time.perf_counter() - t0) / len(dense)
        out = []
        for i, request in enumerate(requests):
            start = time.perf_counter() - (share if i in vectors else 0.0)
            hits = self._search(request, min_score, options, caller, origin, start, vectors.get(i))
            if i in vectors:
                hits.timings["embed"] = share * 1000.0
            out.append(hits)
        return out

    def _search(
        self,
        request: Request,
        min_score: float | None,
        options: Mapping[str, Any],
        caller: str | None,
        origin: str | None,
        t0: float,
        vector: Any = None,
    ) -> Hits:
        k = request.k
        if request.settings.rerank_depth < k:
            request = replace(request, settings=request.settings.override(rerank_depth=k))
        ranking = self._rank(request, vector)
        t_take = time.perf_counter()
        query_id = usage.new_id() if self.settings.retrieval.log_queries else None
        calibration = self.calibration
        hits = hits_of(self.table, ranking, calibration, query_id, request.settings.role_weight)
        confidence = max((h.relevance for h in hits if h.relevance is not None), default=None)
        flag = flag_reason(self.table, request.query, hits, confidence, calibration, self.calibration_source, ranking)
        if min_score is not None:
            kept = (h for h in hits if h.relevance is not None and h.relevance >= min_score)
            hits = [replace(h, rank=n) for n, h in enumerate(kept, 1)]
        out = Hits(hits, query=request.query, mode=request.settings.mode)
        out.legs = ranking.legs
        out.expansion = ranking.expansion
        out.confidence = confidence
        out.flag = flag
        out.timings = {**ranking.timings, "take": (time.perf_counter() - t_take) * 1000.0}
        out.latency_ms = (time.perf_counter() - t0) * 1000.0
        if query_id is not None:
            out.query_id = query_id
            self._log(out, query_id, k, options, origin, caller)
        return out

    def _log(
        self, hits: Hits, query_id: str, k: int, options: Mapping[str, Any], origin: str | None, caller: str | None
    ) -> None:
        """Add the search for ``k`` hits to the lake's query log as row ``query_id`` (buffered:
        :mod:`kbflow.usage`), with its filters."""
        filters = {name: options.get(name) for name in ("kinds", "source_types", "source_ids")}
        filters["scope"] = scopes.normalize(options["scope"]) if options.get("scope") is not None else None
        usage.log_query(
            self.lake,
            hits,
            query_id=query_id,
            origin=origin or self.origin,
            caller=caller,
            filters=filters,
            k=k,
            version=self.version,
            tag=self.tag,
        )

    def cite(
        self,
        hits: Iterable[Hit],
        *,
        turn_id: str | None = None,
        caller: str | None = None,
        origin: str | None = None,
    ) -> int:
        """Record that ``hits`` were put in front of a model (the lake's ``citation_log``); returns how many.

        Each row keeps the chunk id, its content hash, source, the search
        that returned it (``hit.query_id``), ``turn_id`` (the caller's name
        for the conversation turn, e.g. ``"conv-17#4"``) and the text as
        cited, so it is shown as it was even after its source changed.
        Buffered like the query log (:mod:`kbflow.usage`).
        """
        hits = list(hits)
        if any(not isinstance(h, Hit) for h in hits):
            raise QueryError("cite() takes the Hit objects a search returned")
        rows = usage.citation_rows(hits, origin=origin or self.origin, caller=caller, turn_id=turn_id)
        return usage.log_citations(self.lake, rows)
