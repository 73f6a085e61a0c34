"""kbflow as a LangChain retriever: ``from kbflow.integrations.langchain import KbflowRetriever``.

>>> retriever = KbflowRetriever(lake="data/lake", k=5, scope="acme")         # doctest: +SKIP
>>> docs = retriever.invoke("how are ranks fused")                          # doctest: +SKIP
>>> docs[0].metadata["citation"]["label"]                                   # doctest: +SKIP
'minisearch/fusion.py:1-27 rrf'

A ``langchain_core.retrievers.BaseRetriever`` over a lake (``lake=``) or a
``kbflow serve`` (``url=``, ``api_key=``). Each ``Document`` is one hit:
``page_content`` its text, ``id`` its chunk id, ``metadata`` its citation as a
dict, score, relevance, ``low_confidence`` and scope
(:func:`kbflow.integrations.searcher.hit_metadata`). ``invoke(query, k=N)``
overrides ``k``; any search option (``mode``, ``scope``, ``kinds``,
``source_types``, ``source_ids``, ``fusion``, ``min_score``, ``glossary``) is
a field, or goes in ``search_options``. Against a server ``ainvoke`` is truly
asynchronous. Needs ``pip install 'kbflow[langchain]'``.
"""

from __future__ import annotations

from typing import Any

from kbflow._lazy import require
from kbflow.integrations.searcher import Searcher, hit_metadata
from kbflow.records import Hits

_retrievers = require("langchain_core.retrievers")
_documents = require("langchain_core.documents")
_pydantic = require("pydantic")  # langchain-core's own dependency
ConfigDict, Field, PrivateAttr = _pydantic.ConfigDict, _pydantic.Field, _pydantic.PrivateAttr

__all__ = ["KbflowRetriever", "documents_of"]


def documents_of(hits: Hits) -> list[Any]:
    """LangChain ``Document``\\ s of ``hits``, in their order."""
    return [
        _documents.Document(page_content=hit.text, id=hit.chunk_id, metadata=hit_metadata(hit, hits)) for hit in hits
    ]


class KbflowRetriever(_retrievers.BaseRetriever):  # type: ignore[misc, name-defined]  # LangChain's, imported lazily
    """Cited hybrid search over a kbflow lake or server, as a LangChain retriever (see the module docs)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    lake: str | None = Field(None, description="A lake: a folder or any Lance URI (or give url)")
    url: str | None = Field(None, description="A kbflow serve, http(s)://host:port (or give lake)")
    api_key: str | None = Field(None, description="The server's API key (kbf_...), where it has keys")
    k: int = Field(5, ge=1, le=100, description="Documents per query")
    mode: str | None = None
    fusion: str | None = None
    scope: str | None = None
    kinds: list[str] | None = None
    source_types: list[str] | None = None
    source_ids: list[str] | None = None
    min_score: float | None = None
    glossary: str | None = None
    search_options: dict[str, Any] = Field(default_factory=dict, description="More options of Retriever.search")
    _searcher: Searcher | None = PrivateAttr(default=None)

    def _search(self) -> Searcher:
        if self._searcher is None:
            named = {name: getattr(self, name) for name in _OPTIONS}
            options = {**self.search_options, **{n: v for n, v in named.items() if v is not None}}
            self._searcher = Searcher(
                self.lake, url=self.url, api_key=self.api_key, options=options, origin="langchain"
            )
        return self._searcher

    def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int | None = None, **options: Any) -> list:
        return documents_of(self._search().search(query, k or self.k, **options))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: Any, k: int | None = None, **options: Any
    ) -> list:
        return documents_of(await self._search().asearch(query, k or self.k, **options))


#: the search options :class:`KbflowRetriever` takes as fields
_OPTIONS = ("mode", "fusion", "scope", "kinds", "source_types", "source_ids", "min_score", "glossary")
