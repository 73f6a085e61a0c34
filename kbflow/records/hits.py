"""A search's hits: each :class:`Hit` with its text, scores and :class:`~kbflow.records.core.Citation`, and the
:class:`Hits` list with the search's confidence."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kbflow.records.core import Citation

__all__ = ["LOW_CONFIDENCE", "FlagReason", "Hit", "Hits"]


#: how hits are drawn in a notebook: ``"figure"`` ``(hit, width=) -> HTML`` (the page with the chunk's regions
#: outlined, the cited lines, or the text) and ``"thumbnail"`` ``(hit) -> HTML``. :mod:`kbflow.records.render` fills it
#: when it is imported (the records know nothing of pages and pictures; the retriever and the client import it);
#: until then a hit is drawn as its citation and text.
FIGURES: dict[str, Callable[..., str]] = {}


def _figure(hit: Hit, width: int) -> str:
    draw = FIGURES.get("figure")
    if draw is not None:
        return draw(hit, width=width)
    return f"<p><code>{html.escape(hit.citation.render())}</code></p><pre>{html.escape(hit.text)}</pre>"


@dataclass(frozen=True)
class Hit:
    """One search result: the chunk text, its score and its citation, in one row.

    ``score`` orders the hits of one search (the fused score: comparable
    within a result list, not across queries). ``dense_score`` is the cosine
    similarity of the query to the chunk (``None`` in ``bm25`` mode) and
    ``bm25_score`` its raw BM25 score (``None`` where the keyword leg did not
    return it). ``dense_rank`` and ``bm25_rank`` keep each leg's 1-based rank
    (``None`` where the leg did not return the chunk) for analysis;
    ``fused_rank`` is the rank before a cross-encoder reranked the hits
    (``None`` without one).
    """

    rank: int
    score: float
    chunk_id: str
    text: str
    citation: Citation
    content_kind: str
    scope: str
    dense_rank: int | None = None
    bm25_rank: int | None = None
    fused_rank: int | None = None
    dense_score: float | None = None
    bm25_score: float | None = None
    #: how likely this is a real match, 0..1, calibrated from ``dense_score`` for the lake's model
    #: (:mod:`kbflow.retrieve.confidence`); ``None`` without a calibration or in ``bm25`` mode
    relevance: float | None = None
    #: the ``query_log`` row of the search that returned this hit (``None`` when the search was not logged)
    query_id: str | None = None
    #: the other places the same text appears (after whitespace normalization): copies of this hit that the
    #: search did not show again (:mod:`kbflow.retrieve.distinct`), best-ranked first
    also_in: tuple[Citation, ...] = ()
    #: where the hit's file stands around the code of its source, which ranks it a little below the code
    #: (:mod:`kbflow.retrieve.roles`): ``"prose"`` (a README, ``docs/``), ``"test"``, ``"typings"`` (``.d.ts``,
    #: ``.pyi``), ``"build"`` (a ``dist/`` file beside the sources it was built from) or ``"translations"``;
    #: or ``"pointer"``: an API reference's chunk that only names members documented elsewhere, ranked a
    #: little below the page's own text (:mod:`kbflow.retrieve.pointers`); ``None`` for the code itself, for
    #: every other chunk of a source that holds no code, and where the search ran with ``role_weight=0``
    role: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``kbflow search --json`` object (and a REST hit): :meth:`from_dict` reads it back."""
        return {
            "rank": self.rank,
            "score": self.score,
            "relevance": self.relevance,
            "dense_score": self.dense_score,
            "bm25_score": self.bm25_score,
            "dense_rank": self.dense_rank,
            "bm25_rank": self.bm25_rank,
            "fused_rank": self.fused_rank,
            "chunk_id": self.chunk_id,
            "content_kind": self.content_kind,
            "scope": self.scope,
            "query_id": self.query_id,
            "text": self.text,
            "citation": self.citation.to_dict(),
            "also_in": [c.to_dict() for c in self.also_in],
            "role": self.role,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        """The hit of a :meth:`to_dict` object (what :class:`kbflow.Client` receives)."""
        return cls(
            rank=data["rank"],
            score=data["score"],
            chunk_id=data["chunk_id"],
            text=data["text"],
            citation=Citation.from_dict(data["citation"]),
            content_kind=data["content_kind"],
            scope=data["scope"],
            also_in=tuple(Citation.from_dict(c) for c in data.get("also_in") or ()),
            **{name: data.get(name) for name in _OPTIONAL_HIT_FIELDS},
        )

    def _repr_html_(self) -> str:
        """In a notebook: the citation, then the page with the chunk's regions outlined (PDF hits), the cited
        lines (code hits), or the text (:data:`FIGURES`)."""
        return _figure(self, 480)

    def show(self, width: int = 640) -> str | None:
        """Display the hit's picture in a notebook (``width`` pixels wide for PDF pages); outside IPython,
        return its HTML instead."""
        markup = _figure(self, width)
        try:
            from IPython.display import HTML, display
        except ImportError:
            return markup
        display(HTML(markup))
        return None

    def as_prompt(self, boundary: str | None = None) -> str:
        """The hit's text wrapped as untrusted content, for an agent.

        Text from a source may carry instructions, and may imitate the markup
        around it: the block is delimited by a random boundary the content
        cannot know, named in a preamble (see :mod:`kbflow.records.prompt`).
        With ``boundary``, only the block is returned (no preamble). The
        stored text is never altered; only this rendering wraps it.
        """
        from kbflow.records import prompt

        if boundary is not None:
            return prompt.render_block(self, boundary)
        return prompt.render_prompt([self])


_OPTIONAL_HIT_FIELDS = (
    "dense_rank", "bm25_rank", "fused_rank", "dense_score", "bm25_score", "relevance", "query_id", "role"
)  # fmt: skip


#: below this confidence a result list is flagged "no good match" (:mod:`kbflow.retrieve.confidence`)
LOW_CONFIDENCE = 0.5
#: where a relevance curve comes from: the retrieval settings, the lake's own (fitted at ingest), the model's
CURVES = ("settings", "lake", "model")


@dataclass(frozen=True)
class FlagReason:
    """Why a result list is, or is not, flagged "no good match": its best hit's relevance (``confidence``)
    against :data:`LOW_CONFIDENCE`, read off a curve (``curve``: ``"settings"``, ``"lake"`` or ``"model"``)
    whose ``midpoint`` is the cosine at which relevance is 0.5; ``best_cosine`` is that hit's cosine
    (``None`` for an exact code-name match, certain whatever its cosine). ``unknown`` holds the names the
    question gives that the documents of its first hits never mention, wherever else the lake may
    (:mod:`kbflow.retrieve.unnamed`): any flags the list, whatever its relevance."""

    confidence: float
    midpoint: float
    curve: str
    best_cosine: float | None = None
    unknown: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        return self.confidence < LOW_CONFIDENCE or bool(self.unknown)

    def to_dict(self) -> dict[str, Any]:
        return {
            "flagged": self.flagged,
            "confidence": self.confidence,
            "threshold": LOW_CONFIDENCE,
            "best_cosine": self.best_cosine,
            "midpoint": self.midpoint,
            "curve": self.curve,
            "unknown_names": list(self.unknown),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FlagReason:
        cosine = data.get("best_cosine")
        return cls(
            float(data["confidence"]),
            float(data["midpoint"]),
            str(data["curve"]),
            None if cosine is None else float(cosine),
            tuple(str(name) for name in data.get("unknown_names") or ()),
        )

    def sentence(self) -> str:
        """The reason in words: ``relevance 0.31 < 0.5: the best hit's cosine 0.41 is under the midpoint 0.52
        of the lake's curve``."""
        if self.unknown:
            names = ", ".join(self.unknown)
            found = f"no document found mentions {names}, which the question names"
            return f"{found} (relevance {self.confidence:.2f})"
        whose = {"settings": "the settings' curve", "lake": "the lake's curve", "model": "the model's curve"}
        curve = whose.get(self.curve, f"the {self.curve} curve")
        sign = "<" if self.flagged else ">="
        where = "under" if self.flagged else "at or over"
        if self.best_cosine is None:
            return f"relevance {self.confidence:.2f} {sign} {LOW_CONFIDENCE}: an exact match of a name the query gives"
        return (
            f"relevance {self.confidence:.2f} {sign} {LOW_CONFIDENCE}: the best hit's cosine {self.best_cosine:.2f} "
            f"is {where} the midpoint {self.midpoint:.2f} of {curve}"
        )


class Hits(list):
    """A ranked list of :class:`Hit` with tabular views for notebooks (a slice is a ``Hits`` too)."""

    def __init__(self, hits: Iterable[Hit] = (), *, query: str = "", mode: str = "") -> None:
        super().__init__(hits)
        self.query = query
        self.mode = mode
        #: wall time of the search that produced these hits, query embedding included
        self.latency_ms = 0.0
        #: each leg's ranked chunk ids before fusion (``{"dense": [...], "bm25": [...]}``), for analysis;
        #: with a reranker, also ``"fused"``: the fused order it reranked; for a query of code names,
        #: ``"symbol"``: the chunks that define them; where feedback on prose records applied, ``"feedback"``:
        #: the candidates rescored with the moved query
        self.legs: dict[str, list[str]] = {}
        #: the best relevance of the search's hits (before ``min_score`` dropped any): how likely the lake
        #: holds a good match at all; ``None`` where no relevance is known (see :attr:`Hit.relevance`)
        self.confidence: float | None = None
        #: why the list is or is not flagged "no good match" (the best relevance, the curve and its
        #: midpoint); ``None`` where no relevance is known
        self.flag: FlagReason | None = None
        #: the ``query_log`` row of this search (``None`` when it was not logged)
        self.query_id: str | None = None
        #: milliseconds per step of the search: ``embed`` (the query embedding), ``dense`` and ``bm25``
        #: (each leg; where the keyword leg ran beside the dense scan, a large table's hybrid search,
        #: ``bm25`` is what was left to wait for after it), ``fuse`` (fusion, reranking, code-name lookup),
        #: ``take`` (reading the hits' rows)
        self.timings: dict[str, float] = {}
        #: the words the glossary added to the query both legs searched ("" where the query named no
        #: glossary term; :mod:`kbflow.retrieve.glossary`)
        self.expansion = ""

    def __getitem__(self, index):
        item = super().__getitem__(index)
        if isinstance(index, slice):
            out = Hits(item, query=self.query, mode=self.mode)
            out.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("query", "mode")})
            return out
        return item

    @property
    def low_confidence(self) -> bool:
        """Whether the search found no good match: its confidence is below 0.5, or it names what the documents
        it found never mention (:attr:`flag`; ``False`` when no relevance is known)."""
        if self.flag is not None:
            return self.flag.flagged
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE

    def as_prompt(self) -> str:
        """Every hit as an untrusted block under one fresh boundary, after a preamble naming it
        (what ``kbflow search --prompt`` prints; see :mod:`kbflow.records.prompt`)."""
        from kbflow.records import prompt

        return prompt.render_prompt(self)

    def to_dicts(self) -> list[dict[str, Any]]:
        return [
            {
                "rank": h.rank,
                "score": h.score,
                "relevance": h.relevance,
                "citation": h.citation.render(),
                "source_id": h.citation.source_id,
                "content_kind": h.content_kind,
                "dense_score": h.dense_score,
                "bm25_score": h.bm25_score,
                "dense_rank": h.dense_rank,
                "bm25_rank": h.bm25_rank,
                "fused_rank": h.fused_rank,
                "chunk_id": h.chunk_id,
                "text": h.text,
                "also_in": [c.render() for c in h.also_in],
                "role": h.role,
            }
            for h in self
        ]

    def to_polars(self):
        import polars as pl

        return pl.DataFrame(self.to_dicts())

    def to_arrow(self):
        import pyarrow as pa

        return pa.Table.from_pylist(self.to_dicts())

    def _repr_html_(self) -> str:
        def rel(h: Hit) -> str:
            return "" if h.relevance is None else f"{h.relevance:.2f}"

        def also(h: Hit) -> str:
            places = "; ".join(c.render() for c in h.also_in)
            return f"<br><small>also in: {html.escape(places)}</small>" if places else ""

        thumbnail = FIGURES.get("thumbnail", lambda hit: "")
        rows = "".join(
            f"<tr><td>{h.rank}</td><td>{h.score:.4f}</td><td>{rel(h)}</td>"
            f"<td><code>{html.escape(h.citation.render())}</code>{also(h)}</td><td>{html.escape(h.text[:160])}</td>"
            f"<td>{thumbnail(h)}</td></tr>"
            for h in self
        )
        confidence = "" if self.confidence is None else f", confidence {self.confidence:.2f}"
        flag = " <b>no good match</b>" if self.low_confidence else ""
        return (
            f"<p>{len(self)} hits for <b>{html.escape(self.query)}</b> ({self.mode}{confidence}){flag}</p>"
            "<table><tr><th>rank</th><th>score</th><th>relevance</th><th>citation</th><th>text</th><th>page</th></tr>"
            f"{rows}</table>"
        )
