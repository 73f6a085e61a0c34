"""Ranking one request: the keyword leg beside the dense scan ranks exactly as the legs in turn."""

import pytest

from kbflow.retrieve import ranking
from kbflow.retrieve.retriever import Retriever
from kbflow.retrieve.table import SearchTable

QUERIES = ["install the widget", "parse a record", "def main", "configuration of the retriever"]


def test_the_keyword_leg_beside_the_dense_scan_ranks_as_the_legs_in_turn(ingested, fast_settings, monkeypatch):
    r = Retriever.open(ingested.uri, settings=fast_settings)
    assert r.exact
    runs = {}
    for rows in (0, r.rows + 1):  # beside from 0 rows; in turn above this table's size
        monkeypatch.setattr(ranking, "PARALLEL_LEGS_MIN_ROWS", rows)
        runs[rows] = [
            ([h.chunk_id for h in hits], hits.legs) for hits in (r.search(q, k=5, mode="hybrid") for q in QUERIES)
        ]
    assert runs[0] == runs[r.rows + 1]
    assert any(ids for ids, _ in runs[0])


def test_an_error_of_the_keyword_leg_beside_the_scan_is_the_searchs(ingested, fast_settings, monkeypatch):
    def broken(self, *args, **kwargs):
        raise OSError("the full-text index went away")

    monkeypatch.setattr(ranking, "PARALLEL_LEGS_MIN_ROWS", 0)
    monkeypatch.setattr(SearchTable, "bm25", broken)
    r = Retriever.open(ingested.uri, settings=fast_settings)
    with pytest.raises(OSError, match="full-text index went away"):
        r.search("install the widget", k=5, mode="hybrid")
