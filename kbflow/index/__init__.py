"""The search table: chunks joined with the active model's vectors, and its indexes."""

from kbflow.index.search import IndexResult, index_coverage, sync_search_table

__all__ = ["IndexResult", "index_coverage", "sync_search_table"]
