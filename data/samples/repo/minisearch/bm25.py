"""Okapi BM25 over an in-memory inverted index."""

import math
from collections import Counter, defaultdict

from minisearch.tokenize import tokenize


class BM25:
    """Postings, document lengths and the BM25 scoring function."""

    def __init__(self, k1=1.2, b=0.75):
        self.k1 = k1
        self.b = b
        self.postings = defaultdict(dict)
        self.lengths = {}

    def add(self, doc_id, text):
        """Index one document's text under doc_id."""
        tokens = tokenize(text)
        self.lengths[doc_id] = len(tokens)
        for term, tf in Counter(tokens).items():
            self.postings[term][doc_id] = tf

    def idf(self, term):
        """Inverse document frequency with the usual +1 smoothing."""
        n = len(self.lengths)
        df = len(self.postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def search(self, query, k=10):
        """The k best (doc_id, score) pairs for the query, best first."""
        avg = sum(self.lengths.values()) / max(1, len(self.lengths))
        scores = defaultdict(float)
        for term in tokenize(query):
            idf = self.idf(term)
            for doc_id, tf in self.postings.get(term, {}).items():
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc_id] / avg)
                scores[doc_id] += idf * tf * (self.k1 + 1) / (tf + norm)
        return sorted(scores.items(), key=lambda kv: -kv[1])[:k]
