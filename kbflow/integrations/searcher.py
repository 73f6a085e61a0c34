"""What every framework adapter shares: one search over a lake or a server, and one shape of a hit's metadata.

A :class:`Searcher` searches a lake (``lake=``: a :class:`~kbflow.Retriever`,
opened on first use and kept) or a ``kbflow serve`` (``url=`` and
``api_key=``: a :class:`~kbflow.Client`, with a truly asynchronous
:meth:`asearch`). The options a framework passes by name (``mode``,
``scope``, ``kinds``, ``source_types``, ``source_ids``, ``fusion``,
``min_score``, ``glossary``...) are :class:`~kbflow.SearchOptions`; a search
is logged as coming from ``origin`` (the framework's name).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from kbflow.errors import ConfigError
from kbflow.records import Citation, Hit, Hits

__all__ = ["Searcher", "citation_from_metadata", "citation_of", "hit_metadata"]


class Searcher:
    """Search a lake or a server with fixed options (see the module docs)."""

    def __init__(
        self,
        lake: str | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        options: Mapping[str, Any] | None = None,
        origin: str = "python",
    ) -> None:
        if (lake is None) == (url is None):
            raise ConfigError("give a lake (a path or URI) or the url of a kbflow serve, and not both")
        self.lake, self.url, self.api_key = lake, url, api_key
        self.options = {name: value for name, value in (options or {}).items() if value is not None}
        self.origin = origin
        self._lock = threading.Lock()
        self._backend: Any = None

    def _open(self) -> Any:
        with self._lock:
            if self._backend is None:
                if self.url is not None:
                    from kbflow.service.client import Client

                    self._backend = Client(self.url, api_key=self.api_key)
                else:
                    from kbflow.retrieve.retriever import Retriever

                    self._backend = Retriever.open(self.lake, origin=self.origin)
            return self._backend

    def search(self, query: str, k: int, **overrides: Any) -> Hits:
        """The top ``k`` hits of ``query`` with the searcher's options and ``overrides`` (``None`` ignored)."""
        return self._open().search(query, k, **self._merged(overrides))

    async def asearch(self, query: str, k: int, **overrides: Any) -> Hits:
        """:meth:`search` without blocking the event loop: over HTTP with an asynchronous client; on a lake in a
        worker thread (the search is CPU work)."""
        backend = self._open()
        if self.url is not None:
            return await backend.asearch(query, k, **self._merged(overrides))
        return await asyncio.to_thread(backend.search, query, k, **self._merged(overrides))

    def _merged(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.options, **{name: value for name, value in overrides.items() if value is not None}}


def citation_of(hit: Hit) -> dict[str, Any]:
    """A hit's citation as a dict: ``label``, ``uri``, ``locator`` and the rest (:meth:`Citation.to_dict`), which
    :func:`kbflow.resolve` takes back through :meth:`Citation.from_dict`."""
    return hit.citation.to_dict()


def hit_metadata(hit: Hit, hits: Hits) -> dict[str, Any]:
    """The metadata every framework's document carries: the citation, the scores, and whether the search found
    no good match (``low_confidence``, with the list's ``confidence``)."""
    return {
        "chunk_id": hit.chunk_id,
        "citation": citation_of(hit),
        "label": hit.citation.label(),
        "score": hit.score,
        "relevance": hit.relevance,
        "rank": hit.rank,
        "scope": hit.scope,
        "content_kind": hit.content_kind,
        "role": hit.role,
        "low_confidence": hits.low_confidence,
        "confidence": hits.confidence,
        "query_id": hits.query_id,
    }


def citation_from_metadata(metadata: Mapping[str, Any]) -> Citation:
    """The :class:`~kbflow.records.Citation` a framework document's metadata carries (for :func:`kbflow.resolve`)."""
    return Citation.from_dict(metadata["citation"])
