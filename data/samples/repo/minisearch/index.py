"""The Index: keyword and vector retrieval over the same documents."""

from minisearch.bm25 import BM25
from minisearch.fusion import reciprocal_rank_fusion
from minisearch.vectors import VectorStore


class Index:
    """Documents searchable by keywords, by vectors, or by both fused."""

    def __init__(self, embed):
        self.bm25 = BM25()
        self.vectors = VectorStore(embed)
        self.docs = {}

    def add(self, doc_id, text):
        """Add a document to both the keyword postings and the vector store."""
        self.docs[doc_id] = text
        self.bm25.add(doc_id, text)
        self.vectors.add(doc_id, text)

    def delete(self, doc_id):
        """Remove a document everywhere; unknown ids raise KeyError."""
        text = self.docs.pop(doc_id)
        for term in set(text.lower().split()):
            self.bm25.postings.get(term, {}).pop(doc_id, None)
        self.bm25.lengths.pop(doc_id, None)
        self.vectors.remove(doc_id)

    def search(self, query, k=10):
        """Hybrid search: BM25 and vector rankings fused by rank."""
        keyword = [doc for doc, _ in self.bm25.search(query, k=3 * k)]
        dense = [doc for doc, _ in self.vectors.search(query, k=3 * k)]
        return reciprocal_rank_fusion([keyword, dense])[:k]
