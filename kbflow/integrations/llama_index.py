"""kbflow as a LlamaIndex retriever: ``from kbflow.integrations.llama_index import KbflowRetriever``.

>>> retriever = KbflowRetriever(lake="data/lake", similarity_top_k=5)       # doctest: +SKIP
>>> nodes = retriever.retrieve("how are ranks fused")                       # doctest: +SKIP
>>> nodes[0].node.metadata["citation"]["label"]                             # doctest: +SKIP

A ``llama_index.core.retrievers.BaseRetriever`` over a lake (``lake=``) or a
``kbflow serve`` (``url=``, ``api_key=``). Each hit is a ``NodeWithScore``
whose ``TextNode`` has ``node_id`` = the chunk id, the hit's text, and
``metadata`` with its citation as a dict, score, relevance, ``low_confidence``
and scope (:func:`kbflow.integrations.searcher.hit_metadata`); the citation is
kept out of what the LLM and the embedder read. Search options (``mode``,
``scope``, ``kinds``, ...) are keyword arguments. It works inside a
``RetrieverQueryEngine``. Needs ``pip install 'kbflow[llamaindex]'``.
"""

from __future__ import annotations

from typing import Any

from kbflow._lazy import require
from kbflow.integrations.searcher import Searcher, hit_metadata
from kbflow.records import Hits

_retrievers = require("llama_index.core.retrievers")
_schema = require("llama_index.core.schema")

__all__ = ["KbflowRetriever", "nodes_of"]

#: metadata the node keeps out of the text an LLM or an embedder reads (they are for people and code)
_HIDDEN = ["citation", "chunk_id", "score", "relevance", "rank", "low_confidence", "confidence", "query_id"]


def nodes_of(hits: Hits) -> list[Any]:
    """LlamaIndex ``NodeWithScore``\\ s of ``hits``, in their order."""
    out = []
    for hit in hits:
        node = _schema.TextNode(
            id_=hit.chunk_id,
            text=hit.text,
            metadata=hit_metadata(hit, hits),
            excluded_llm_metadata_keys=list(_HIDDEN),
            excluded_embed_metadata_keys=list(_HIDDEN),
        )
        out.append(_schema.NodeWithScore(node=node, score=hit.score))
    return out


class KbflowRetriever(_retrievers.BaseRetriever):  # type: ignore[misc, name-defined]  # LlamaIndex's, imported lazily
    """Cited hybrid search over a kbflow lake or server, as a LlamaIndex retriever (see the module docs)."""

    def __init__(
        self,
        lake: str | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        similarity_top_k: int = 5,
        callback_manager: Any = None,
        **options: Any,
    ) -> None:
        self.similarity_top_k = similarity_top_k
        self._searcher = Searcher(lake, url=url, api_key=api_key, options=options, origin="llamaindex")
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: Any) -> list[Any]:
        return nodes_of(self._searcher.search(query_bundle.query_str, self.similarity_top_k))

    async def _aretrieve(self, query_bundle: Any) -> list[Any]:
        return nodes_of(await self._searcher.asearch(query_bundle.query_str, self.similarity_top_k))
