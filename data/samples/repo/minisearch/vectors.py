"""A brute-force vector store with cosine similarity."""

import math


def cosine(a, b):
    """Cosine similarity of two equal-length vectors."""
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class VectorStore:
    """Keeps one embedding per document and scans them all per query."""

    def __init__(self, embed):
        self.embed = embed
        self.rows = {}

    def add(self, doc_id, text):
        self.rows[doc_id] = self.embed(text)

    def remove(self, doc_id):
        self.rows.pop(doc_id, None)

    def search(self, query, k=10):
        """The k most similar documents to the query, best first."""
        q = self.embed(query)
        scored = [(doc_id, cosine(q, v)) for doc_id, v in self.rows.items()]
        return sorted(scored, key=lambda kv: -kv[1])[:k]
