import pytest

from kbflow import Retriever
from kbflow.errors import LakeError, LakeNotFoundError, QueryError
from kbflow.retrieve.resolver import resolve


def test_modes_return_cited_hits(ingested):
    r = Retriever.open(ingested.uri)
    for mode in ("hybrid", "dense", "bm25"):
        hits = r.search("reciprocal rank fusion", k=3, mode=mode)
        assert 1 <= len(hits) <= 3
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.score >= hits[-1].score for h in hits)
        for h in hits:
            assert resolve(h.citation) == h.text
    top = r.search("reciprocal rank fusion", k=5, mode="bm25")
    assert any(h.citation.locator.symbol == "rrf" for h in top)


def test_hybrid_keeps_leg_ranks(ingested):
    hits = Retriever.open(ingested.uri).search("rank fusion", k=5)
    assert all(h.dense_rank or h.bm25_rank for h in hits)


def test_filters_are_applied(ingested):
    r = Retriever.open(ingested.uri)
    assert {h.content_kind for h in r.search("fusion bridge rivers", k=20, kinds="code")} == {"code"}
    assert {h.citation.source_id for h in r.search("fusion bridge rivers", k=20, source_ids=["recs"])} == {"recs"}
    assert {h.citation.source_type for h in r.search("fusion", k=20, source_types="docs")} == {"docs"}
    # scope "proj" matches proj sources and global ones
    scoped = {h.scope for h in r.search("fusion bridge rivers install", k=20, scope="proj")}
    assert scoped <= {"proj", "global"} and "global" in scoped


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"query": ""}, "empty"),
        ({"query": "   "}, "empty"),
        ({"query": "x" * 1001}, "limit is 1000"),
        ({"query": "x", "k": 0}, "k must be"),
        ({"query": "x", "k": 101}, "k must be"),
        ({"query": "x", "k": True}, "k must be"),
        ({"query": "x", "mode": "fuzzy"}, "unknown mode"),
        ({"query": "x", "kinds": "video"}, "unknown content kind 'video'"),
        ({"query": "x", "source_types": "ftp"}, "unknown source type 'ftp'"),
        ({"query": "x", "source_ids": ["nope"]}, "unknown source id 'nope'"),
        ({"query": "x", "scope": "other"}, "unknown scope 'other'"),
        ({"query": "x", "depth": 5}, "depth must be at least"),
        ({"query": "x", "weights": {"sparse": 1}}, "unknown legs"),
    ],
)
def test_bad_requests_get_clear_errors(ingested, kwargs, message):
    r = Retriever.open(ingested.uri)
    with pytest.raises(QueryError, match=message):
        r.search(**kwargs)


def test_odd_query_characters_are_safe(ingested):
    r = Retriever.open(ingested.uri)
    for q in ['"unbalanced', "a:b(c) AND OR NOT", "x' OR 1=1 --", "émoji 🎉"]:
        r.search(q, k=3)


def test_missing_lake_and_lake_that_is_a_file(tmp_path):
    with pytest.raises(LakeNotFoundError, match="no lake here"):
        Retriever.open(str(tmp_path / "nowhere"))
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(LakeError, match="is a file, not a lake folder"):
        Retriever.open(str(f))


def test_hits_to_polars(ingested):
    hits = Retriever.open(ingested.uri).search("bridge", k=2)
    df = hits.to_polars()
    assert df.height == len(hits) and "citation" in df.columns
    assert "<table>" in hits._repr_html_()


def test_dense_leg_is_exact_and_legs_are_kept(ingested):
    import numpy as np

    r = Retriever.open(ingested.uri)
    rows = r.dataset.to_table(columns=["chunk_id", "vector"]).to_pylist()
    q = r.embedder.embed_query("rank fusion of two legs")
    scores = {row["chunk_id"]: float(np.dot(row["vector"], q) / np.linalg.norm(row["vector"])) for row in rows}
    want = sorted(scores, key=lambda c: -scores[c])[:5]
    hits = r.search("rank fusion of two legs", k=5, mode="dense")
    assert [h.chunk_id for h in hits] == want
    assert all(abs(h.score - scores[h.chunk_id]) < 1e-5 for h in hits)
    hybrid = r.search("rank fusion of two legs", k=5)
    assert set(hybrid.legs) == {"dense", "bm25"}
    assert hybrid.legs["dense"][:5] == want


def test_search_table_of_an_older_layout_is_rebuilt(ingested, fast_settings):
    from kbflow import schema as S
    from kbflow.index.search import sync_search_table

    old = ingested.scan(S.SEARCH).drop_columns([S.HIT])  # the layout before the hit column
    old = old.replace_schema_metadata({S.SEARCH_MODEL_META: fast_settings.model.encode()})
    ingested.db.create_table(S.SEARCH, data=old, mode="overwrite")
    result = sync_search_table(ingested, fast_settings.model)
    assert result.rebuilt and S.HIT in ingested.table(S.SEARCH).schema.names
    hit = Retriever.open(ingested.uri).search("bridge", k=1)[0]
    assert resolve(hit.citation) == hit.text
    assert not sync_search_table(ingested, fast_settings.model).rebuilt


def test_ann_path_above_the_exact_limit(tmp_path, monkeypatch):
    """Past ``exact_max_rows`` the dense leg is Lance's ANN index: built in segments, kept covering new rows,
    filtered, and agreeing with the exact scan (scaled down: the index from 300 rows, segments of 100, the exact
    limit 100)."""
    import json
    import random

    from conftest import FAST_MODEL

    from kbflow import pipeline
    from kbflow.checks import run_checks
    from kbflow.index import search
    from kbflow.lake import Lake
    from kbflow.records import Source

    monkeypatch.setattr(search, "VECTOR_INDEX_MIN_ROWS", 300)
    monkeypatch.setattr(search, "VECTOR_SEGMENT_ROWS", 100)
    rng = random.Random(0)
    words = [f"w{i}" for i in range(400)]

    def write(path, start, n):
        with open(path, "w") as out:
            for i in range(start, start + n):
                out.write(json.dumps({"_id": f"r{i}", "text": " ".join(rng.choices(words, k=30))}) + "\n")

    write(tmp_path / "a.jsonl", 0, 250)
    write(tmp_path / "b.jsonl", 250, 150)
    lake = Lake(tmp_path / "lake")
    lake.register(Source("a", "jsonl", str(tmp_path / "a.jsonl")))
    lake.register(Source("b", "jsonl", str(tmp_path / "b.jsonl")))
    index = pipeline.ingest(lake, {"model": FAST_MODEL}).index
    assert index.indexes[search.VECTOR_INDEX]["indexed"] == 400
    assert index.indexes[search.VECTOR_INDEX]["unindexed"] == 0

    ann = Retriever.open(lake, settings={"retrieval": {"exact_max_rows": 100}})
    exact = Retriever.open(lake)
    assert not ann.exact and exact.exact
    query = " ".join(words[:6])
    got = [h.chunk_id for h in ann.search(query, k=10, mode="dense")]
    want = [h.chunk_id for h in exact.search(query, k=10, mode="dense")]
    assert len(set(got) & set(want)) >= 9
    only_b = ann.search(query, k=10, mode="dense", source_ids=["b"])
    assert len(only_b) == 10 and {h.citation.source_id for h in only_b} == {"b"}

    # rows added later are folded into the index, not left to a flat scan
    write(tmp_path / "b.jsonl", 250, 200)
    index = pipeline.ingest(lake, {"model": FAST_MODEL}).index
    # the result reports the optimized version (what a reader opens), every index covering all 450 rows
    assert index.version == lake.versions()["search"]
    assert {name: (v["indexed"], v["unindexed"]) for name, v in index.indexes.items()} == {
        name: (450, 0) for name in index.indexes
    }
    assert all(c.passed for c in run_checks(lake, FAST_MODEL))

    def segments():
        ds = lake.dataset("search")
        fragments = {f.fragment_id for f in ds.get_fragments()}
        segs = search._segments(ds)
        assert sorted(f for s in segs for f in s if f in fragments) == sorted(fragments)  # each fragment once
        return segs

    # the 400 rows (one fragment) and the 50 new ones (a new fragment) are two segments, not merged: 450 > 100 rows
    assert len(segments()) == 2
    # 30 more rows: the newest segment (50 rows) has room, so it is rebuilt with them rather than a third one added
    write(tmp_path / "b.jsonl", 250, 230)
    index = pipeline.ingest(lake, {"model": FAST_MODEL}).index
    assert len(segments()) == 2
    assert index.indexes[search.VECTOR_INDEX] == {**index.indexes[search.VECTOR_INDEX], "indexed": 480, "unindexed": 0}
    ann = Retriever.open(lake, settings={"retrieval": {"exact_max_rows": 100}})
    got = [h.chunk_id for h in ann.search(query, k=10, mode="dense")]
    want = [h.chunk_id for h in Retriever.open(lake).search(query, k=10, mode="dense")]
    assert len(got) == len(set(got)) == 10 and len(set(got) & set(want)) >= 9
