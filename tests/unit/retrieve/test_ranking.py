"""Ranking one request: the keyword leg beside the dense scan ranks exactly as the legs in turn."""

from dataclasses import replace

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


ABSTRACTS = [
    "The boundary layer on a flat plate at supersonic speed thickens where heat is transferred to the wall.",
    "Heat transfer to a hemisphere in hypersonic flow was measured and compared with laminar boundary layer theory.",
    "Skin friction of a turbulent boundary layer falls as the wall is cooled at high Mach numbers.",
    "Flutter of thin wings is predicted by piston theory at supersonic speeds and checked in a wind tunnel.",
    "The buckling of thin cylindrical shells under axial compression depends on their initial imperfections.",
    "Shock waves ahead of blunt bodies stand off the nose by a distance that grows with the body radius.",
    "Transition from laminar to turbulent flow on a cone is delayed by cooling the surface.",
    "Stresses in pressurized shells of revolution are found from membrane theory away from their edges.",
]
FUNCTIONS = [
    'def load(path):\n    with open(path) as fh:\n        return json.load(fh)["rows"][0]\n',
    "def save(obj, path):\n    with open(path, 'w') as fh:\n        json.dump({'rows': [obj]}, fh)\n",
    "def merge(a, b):\n    return {**a, **b, 'n': len(a) + len(b)}\n",
    "def flat(xs):\n    return [x for ys in xs for x in ys if x[0] != '_']\n",
]


def _records_lake(tmp_path, texts, settings):
    import json

    from kbflow import pipeline
    from kbflow.lake import Lake
    from kbflow.records import Source

    corpus = tmp_path / "records.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    lake = Lake(settings.lake)
    lake.register(Source("recs", "jsonl", str(corpus)))
    pipeline.ingest(lake, settings, progress=False)
    return Retriever.open(lake.uri, settings=settings)


def test_feedback_reorders_prose_records_behind_the_first_hit_and_keeps_the_querys_own_cosines(tmp_path, fast_settings):
    r = _records_lake(tmp_path, ABSTRACTS, fast_settings)
    query = "heat transfer in a laminar boundary layer at supersonic speed"
    plain = r.search(query, k=6, feedback=0)
    moved = r.search(query, k=6)
    assert "feedback" not in plain.legs and "feedback" in moved.legs
    assert moved[0].chunk_id == plain[0].chunk_id  # the first hit stays first
    assert [h.score for h in moved] == sorted((h.score for h in moved), reverse=True)
    # every hit's cosine, relevance and the flag read the question, not the moved query
    cosine = r.rank(query, k=len(ABSTRACTS), feedback=0).leg_scores["dense"]
    for hit in moved:
        assert hit.dense_score == pytest.approx(cosine[hit.chunk_id])
    assert moved.confidence == plain.confidence


def test_feedback_leaves_code_records_and_other_kinds_as_they_rank(tmp_path, fast_settings, ingested):
    (tmp_path / "code").mkdir()
    code = _records_lake(tmp_path / "code", FUNCTIONS, replace(fast_settings, lake=str(tmp_path / "code-lake")))
    assert "feedback" not in code.search("load the rows of a json file", k=3).legs
    docs = Retriever.open(ingested.uri, settings=fast_settings)
    for query in QUERIES:
        hits = docs.search(query, k=5)
        assert "feedback" not in hits.legs
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in docs.search(query, k=5, feedback=0)]
