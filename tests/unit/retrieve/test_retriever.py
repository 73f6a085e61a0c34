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
        ({"query": "pump \ud83d seals"}, "half of a UTF-16 surrogate pair \\(U\\+D83D at character 5\\)"),
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
    want = sorted(scores, key=lambda c: (-round(scores[c], 5), c))[:5]  # equal scores in chunk-id order
    hits = r.search("rank fusion of two legs", k=5, mode="dense", role_weight=0)  # the leg alone, no signal
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
    from kbflow.index import search
    from kbflow.lake import Lake
    from kbflow.pipeline.checks import run_checks
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


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_the_first_hits_do_not_depend_on_k(tmp_path, fusion):
    """The legs fetch more candidates for a larger k, but fusion scores each leg's first ``min_depth``
    only: search(q, k=3) is the first three of search(q, k=50), for random queries over 500 records
    (of varied lengths: exact score ties across the floor could fall either way)."""
    import json
    import random

    from conftest import FAST_MODEL

    from kbflow import pipeline
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.records import Source

    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    path = tmp_path / "recs.jsonl"
    with open(path, "w") as out:
        for i in range(500):
            text = " ".join(rng.choices(words, k=rng.randint(10, 60)))
            out.write(json.dumps({"_id": f"r{i}", "text": text}) + "\n")
    settings = Settings.coerce({"retrieval": {"min_depth": 20}}, lake=str(tmp_path / "lake"), model=FAST_MODEL)
    lake = Lake(settings.lake)
    lake.register(Source("recs", "jsonl", str(path)))
    assert pipeline.ingest(lake, settings=settings).ok
    r = Retriever.open(lake, settings=settings)
    for _ in range(25):
        query = " ".join(rng.choices(words, k=rng.randint(1, 6)))
        few, many = r.search(query, k=3, fusion=fusion), r.search(query, k=50, fusion=fusion)
        assert len(many) == 50
        assert [h.chunk_id for h in few] == [h.chunk_id for h in many][:3], query
        assert [h.score for h in few] == [h.score for h in many][:3]


def test_a_query_of_code_names_finds_their_definition_first(ingested):
    r = Retriever.open(ingested.uri)
    for mode in ("hybrid", "dense", "bm25"):
        hits = r.search("Index.add", k=3, mode=mode)  # the class is one chunk: that chunk holds `def add`
        assert hits[0].citation.locator.symbol == "Index" and hits[0].relevance == 1.0, mode
        assert hits.legs["symbol"] == [hits[0].chunk_id]
    assert r.search("rrf", k=3, mode="dense")[0].citation.locator.symbol == "rrf"
    assert r.search("fuse.rrf()", k=3, mode="dense")[0].citation.locator.symbol == "rrf"  # file.name
    assert "symbol" not in r.search("Other.add", k=3).legs  # a scope it is not in
    assert "symbol" not in r.search("how does reciprocal rank fusion add scores", k=3).legs  # prose
    off = r.search("Index.add", k=3, mode="dense", symbol_first=False)
    assert "symbol" not in off.legs


def test_the_keyword_leg_weighs_path_and_symbol(tmp_path):
    """A word in a chunk's path or symbol counts more than the same word in another chunk's text."""
    from conftest import FAST_MODEL

    from kbflow import pipeline
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.records import Source

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "rollover.py").write_text("def should_rotate(size, limit):\n    return size >= limit\n")
    (repo / "other.py").write_text(
        "def helper(x):\n    # rollover rollover happens elsewhere\n    return x + 1\n\n\n"
        "def makeRecord(name):\n    return {'name': name}\n"
    )
    settings = Settings.coerce(None, lake=str(tmp_path / "lake"), model=FAST_MODEL)
    lake = Lake(settings.lake)
    lake.register(Source("repo", "repo", str(repo)))
    assert pipeline.ingest(lake, settings=settings).ok
    r = Retriever.open(lake, settings=settings)
    assert r.search("rollover", k=1, mode="bm25")[0].citation.locator.path == "rollover.py"
    plain = r.search("rollover", k=1, mode="bm25", names_weight=0)
    assert plain[0].citation.locator.path == "other.py"  # without the names: the text with the word twice
    # camelCase is split at index and query time alike: "make record" finds makeRecord
    assert r.search("make record", k=1, mode="bm25")[0].citation.locator.symbol == "makeRecord"


def test_hits_carry_raw_leg_scores_and_a_calibrated_relevance(ingested):
    import math

    import numpy as np

    from kbflow.config import Settings

    r = Retriever.open(ingested.uri)
    hits = r.search("reciprocal rank fusion of scores", k=5)
    vectors = {
        row["chunk_id"]: np.asarray(row["vector"])
        for row in r.dataset.to_table(columns=["chunk_id", "vector"]).to_pylist()
    }
    q = np.asarray(r.embedder.embed_query("reciprocal rank fusion of scores"))
    for h in hits:  # every hit has its cosine, whichever leg found it
        v = vectors[h.chunk_id]
        assert h.dense_score == pytest.approx(float(v @ q / np.linalg.norm(v) / np.linalg.norm(q)), abs=1e-5)
    assert any(h.bm25_score and h.bm25_score > 0 for h in hits)
    # the hashing test model has no calibration: no relevance, no confidence, and min_score says why
    assert hits.confidence is None and not hits.low_confidence and all(h.relevance is None for h in hits)
    with pytest.raises(QueryError, match="hash:64 has no calibration"):
        r.search("fusion", min_score=0.5)
    calibrated = Retriever.open(
        ingested.uri, settings=Settings.coerce({"retrieval": {"calibration": [-2.0, 10.0]}}, model="hash:64")
    )
    hits = calibrated.search("reciprocal rank fusion of scores", k=5)
    for h in hits:
        assert h.relevance == pytest.approx(1 / (1 + math.exp(-(-2.0 + 10.0 * h.dense_score))))
    assert hits.confidence == max(h.relevance for h in hits)
    cut = sorted(h.relevance for h in hits)[2]
    kept = calibrated.search("reciprocal rank fusion of scores", k=5, min_score=cut)
    assert [h.chunk_id for h in kept] == [h.chunk_id for h in hits if h.relevance >= cut]
    assert [h.rank for h in kept] == list(range(1, len(kept) + 1)) and kept.confidence == hits.confidence
    with pytest.raises(QueryError, match="bm25 mode"):
        calibrated.search("fusion", mode="bm25", min_score=0.5)
    with pytest.raises(QueryError, match="min_score must be a relevance"):
        calibrated.search("fusion", min_score=2)
    with pytest.raises(QueryError, match="rank"):
        calibrated.rank("fusion", min_score=0.5)


def test_a_search_of_a_local_lake_never_imports_lancedb(ingested):
    """Readers open local tables with Lance alone, and the query log is appended the same way: LanceDB's import
    (seconds) was most of a shell search's start-up, and then again its exit, when the log row was written."""
    import subprocess
    import sys

    from kbflow import schema as S

    ingested.table(S.QUERY_LOG)  # the log exists, as after a lake's first search
    before = ingested.dataset(S.QUERY_LOG).count_rows()
    settings = f"Settings.coerce(None, lake={ingested.uri!r}, model='hash:64')"
    code = (
        "import sys; from kbflow import Retriever; from kbflow.config import Settings; "
        "from kbflow.usage.log import flush; "
        f"r = Retriever.open({ingested.uri!r}, settings={settings}); "
        "hits = r.search('rank fusion', k=3); assert hits; print('lancedb' in sys.modules); "
        "print(flush(), 'lancedb' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "1", "False"], out.stderr
    assert ingested.dataset(S.QUERY_LOG).count_rows() == before + 1


def test_a_table_from_an_older_kbflow_gets_its_new_columns_when_read(tmp_path):
    """A table lacking a column added since is opened through LanceDB, which adds the column (as nulls)."""
    import lance
    import pyarrow as pa

    from kbflow import schema as S
    from kbflow.lake import Lake

    lake = Lake(str(tmp_path / "lake"))
    old = pa.schema([f for f in S.SCHEMAS[S.CHUNKS] if f.name != S.EMBED_HASH])
    lance.write_dataset(old.empty_table(), str(tmp_path / "lake" / f"{S.CHUNKS}.lance"))
    assert S.EMBED_HASH not in lance.dataset(str(tmp_path / "lake" / f"{S.CHUNKS}.lance")).schema.names
    assert S.EMBED_HASH in lake.dataset(S.CHUNKS).schema.names
    assert S.EMBED_HASH in lake.dataset(S.CHUNKS).schema.names  # added once, now read by Lance alone
