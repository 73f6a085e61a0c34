"""minisearch: BM25 + vectors + rank fusion in a few hundred lines."""

from minisearch.fusion import reciprocal_rank_fusion
from minisearch.index import Index

__all__ = ["Index", "reciprocal_rank_fusion"]
