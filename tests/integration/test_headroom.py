"""Fusion headroom: each query ranked once, its legs fused again; each variant's scores are those of a real run."""

from __future__ import annotations

import pytest
from conftest import FAST_MODEL
from support import write_beir

from kbflow.config import RetrievalSettings, Settings
from kbflow.errors import ConfigError
from kbflow.evaluate.beir import load_beir
from kbflow.evaluate.configs import config_for
from kbflow.evaluate.evaluate import evaluate
from kbflow.evaluate.headroom import DEFAULT, LEGS, fusion_headroom, fusion_variants
from kbflow.evaluate.lakes import ingest_dataset

DOCS = [
    ("d1", "Rank fusion", "Reciprocal rank fusion adds one over k plus rank for every leg of a hybrid search."),
    ("d2", "Lance tables", "Every write to a Lance table commits a new version of the dataset on disk."),
    ("d3", "Word boxes", "PDF citations carry the page and the union of word boxes in points."),
    ("d4", "Tickets", "Each comment of an issue thread becomes its own unit with a ticket locator."),
    ("d5", "Score fusion", "Convex fusion normalizes each leg's scores and adds them with weights per leg."),
    ("d6", "Versions", "A tag pins one version of a table, so a search reads the same rows twice."),
    ("d7", "Pages", "A page of a PDF is split into chunks by its headings and paragraphs."),
]
QUERIES = [
    ("q1", "how are the ranks of two legs fused"),
    ("q2", "which version of the table does a search read"),
    ("q3", "pdf page box citation"),
    ("q4", "weights of each leg in fusion"),
]
QRELS = [("q1", "d1", 1), ("q1", "d5", 1), ("q2", "d6", 2), ("q2", "d2", 1), ("q3", "d3", 1), ("q4", "d5", 1)]


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    root = tmp_path_factory.mktemp("headroom")
    write_beir(root / "tiny", DOCS, QUERIES, QRELS)
    dataset = load_beir(str(root / "tiny"))
    settings = Settings.coerce(None, lake=str(root / "lake"), model=FAST_MODEL)
    lake, _ = ingest_dataset(dataset, settings)
    return dataset, lake, settings


def test_variants_are_each_leg_the_settings_and_each_fusion_at_each_weight():
    base = RetrievalSettings(bm25_weight=0.5)
    variants = fusion_variants(base, [0.25, 1], ["convex", "rrf"])
    assert list(variants)[:3] == [*LEGS, DEFAULT]
    assert [v.mode for v in variants.values()] == ["dense", "bm25"] + ["hybrid"] * 5
    assert variants["rrf, keyword weight 0.25"].fusion == "rrf"
    assert variants["convex, keyword weight 1"].bm25_weight == 1.0 and variants[DEFAULT] == base
    assert "convex, keyword weight 0.5" not in fusion_variants(base, [0.5])  # the settings themselves, once
    with pytest.raises(ConfigError, match="unknown fusion"):
        fusion_variants(base, [0.5], ["borda"])
    with pytest.raises(ConfigError, match="leg weights"):
        fusion_variants(base, [-1])


def test_each_variant_scores_as_kbflow_eval_ranks_it(judged):
    """The legs fused again give, per query, the scores a run of those settings gets from ``kbflow eval``."""
    dataset, lake, settings = judged
    variants = fusion_variants(settings.retrieval, [0.1, 2.0])
    room = fusion_headroom(dataset, lake, settings, variants)
    configs = {
        "dense": config_for(settings, mode="dense"),
        "bm25": config_for(settings, mode="bm25"),
        DEFAULT: config_for(settings, mode="hybrid"),
        "convex, keyword weight 2": config_for(settings, mode="hybrid", bm25_weight=2.0),
    }
    runs = evaluate(dataset, lake, list(configs.values()), settings)
    for name, run in zip(configs, runs):
        assert room.scores[name] == pytest.approx({q: s["ndcg@10"] for q, s in run.per_query.items()}), name
    assert set(room.scores) == set(variants)


def test_the_oracle_takes_each_querys_best_variant(judged):
    dataset, lake, settings = judged
    room = fusion_headroom(dataset, lake, settings, fusion_variants(settings.retrieval, [0.1, 2.0]), limit=3)
    assert all(len(scores) == 3 for scores in room.scores.values())
    best = [max(scores[q] for scores in room.scores.values()) for q in ("q1", "q2", "q3")]
    assert room.oracle == pytest.approx(sum(best) / 3)
    assert all(room.oracle >= room.mean(name) for name in room.scores)
    assert room.better_leg == max(LEGS, key=room.mean)
    lines = room.lines()
    assert lines[0].startswith("tiny (test, 3 queries): ndcg@10")
    assert any(line.split()[:1] == ["bm25"] for line in lines)
    assert "an oracle" in lines[-2] and f"{DEFAULT} against {room.better_leg} alone: A - B:" in lines[-1]


def test_a_fixed_variant_is_chosen_on_the_queries_it_is_not_scored_on():
    from kbflow.evaluate.headroom import Headroom

    # q1, q3 (fold 0) favour "a"; q2, q4 (fold 1) favour "b": each fold gets the other fold's choice
    scores = {
        "dense": {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5},
        "bm25": {"q1": 0.0, "q2": 0.0, "q3": 0.0, "q4": 0.0},
        DEFAULT: {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5},
        "a": {"q1": 1.0, "q2": 0.2, "q3": 1.0, "q4": 0.2},
        "b": {"q1": 0.1, "q2": 1.0, "q3": 0.1, "q4": 1.0},
    }
    room = Headroom("set", "test", "ndcg@10", scores)
    mean, picks = room.chosen()
    assert picks == ["b", "a"] and mean == pytest.approx((0.1 + 0.1 + 0.2 + 0.2) / 4)
    assert room.oracle == pytest.approx(1.0) and room.mean("a") == pytest.approx(0.6)
    with pytest.raises(ConfigError, match="folds"):
        room.chosen(1)
    assert any(line.split()[:5] == ["chosen", "on", "the", "other", "half"] for line in room.lines())


def test_a_query_that_cannot_be_searched_is_named(judged, monkeypatch):
    from kbflow.errors import DatasetError, QueryError
    from kbflow.retrieve.retriever import Retriever

    dataset, lake, settings = judged

    def refuse(self, query, k=10, **options):
        raise QueryError("query too odd")

    monkeypatch.setattr(Retriever, "rank", refuse)
    with pytest.raises(DatasetError, match=r"query 'q1': query too odd"):
        fusion_headroom(dataset, lake, settings, fusion_variants(settings.retrieval))
