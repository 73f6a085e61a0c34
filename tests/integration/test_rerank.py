"""Cross-encoder reranking: a tiny cross-encoder built and trained here, loaded by path like a real one."""

from __future__ import annotations

import numpy as np
import pytest

from kbflow import Retriever
from kbflow.errors import ConfigError, EmbedError, QueryError
from kbflow.evaluate.metrics import METRICS
from kbflow.retrieve.rerank import CrossEncoderReranker, Reranker, get_reranker

QUERY = "where are ranks fused"


def _words(texts):
    return sorted({w for t in texts for w in t.lower().replace(".", " ").replace(",", " ").split()})


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory) -> str:
    """A 1-layer, 16-dim BERT cross-encoder trained for a second to like fusion passages; saved as a folder."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    relevant = [
        "ranks from the dense and keyword legs are fused by reciprocal rank fusion",
        "reciprocal rank fusion of rankings",
    ]
    other = [
        "plain notes about bridges and rivers",
        "run pip install kbflow then run make demo",
        "a tiny repository",
        "rivers carry water to the sea",
        "the longest suspension bridge main span",
        "class index def add self doc self docs append doc",
        "name x tool",
        "repo guide install",
    ]
    queries = [QUERY, "rank fusion", "how are legs fused"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_words(relevant + other + queries)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"))
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
    )
    model = transformers.BertForSequenceClassification(config)
    pairs = [(q, p, 1.0) for q in queries for p in relevant] + [(q, p, 0.0) for q in queries for p in other]
    batch = tokenizer([q for q, _, _ in pairs], [p for _, p, _ in pairs], padding=True, return_tensors="pt")
    labels = torch.tensor([y for _, _, y in pairs])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(60):
        optimizer.zero_grad()
        logits = model(**batch).logits.squeeze(-1)
        torch.nn.functional.binary_cross_entropy_with_logits(logits, labels).backward()
        optimizer.step()
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


class ByLength:
    """A user-supplied reranker (the :class:`Reranker` protocol): longer passages first."""

    model_id = "by-length"

    def __init__(self):
        self.calls = []

    def score(self, query, texts):
        self.calls.append(list(texts))
        return [float(len(t)) for t in texts]


def test_rerank_reorders_the_head_and_keeps_the_tail(ingested):
    r = Retriever.open(ingested)
    plain = r.rank(QUERY, 6, mode="dense")
    reranker = ByLength()
    assert isinstance(reranker, Reranker)
    ranked = r.rank(QUERY, 6, mode="dense", reranker=reranker, rerank_depth=3)
    assert ranked.reranked == 3
    assert ranked.legs["fused"][:6] == plain.ids  # the order it reranked is kept for analysis
    assert sorted(ranked.ids[:3]) == sorted(plain.ids[:3])  # only the head is reordered
    assert ranked.ids[3:] == plain.ids[3:] and ranked.scores[3:] == plain.scores[3:]
    (texts,) = reranker.calls
    assert ranked.scores[:3] == sorted((float(len(t)) for t in texts), reverse=True)


def test_search_reranks_at_least_k_and_reports_fused_rank(ingested):
    r = Retriever.open(ingested)
    reranker = ByLength()
    hits = r.search(QUERY, k=4, reranker=reranker, rerank_depth=2)
    assert len(reranker.calls[0]) >= 4  # every hit gets a cross-encoder score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.score == float(len(h.text)) for h in hits)
    assert all(h.fused_rank is not None for h in hits)
    assert hits.legs["fused"] and "fused_rank" in hits.to_dicts()[0]
    assert all(h.fused_rank is None for h in r.search(QUERY, k=4))


def test_real_cross_encoder_loads_from_a_folder_and_scores_pairs(ingested, tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    reranker = CrossEncoderReranker(tiny_cross_encoder)
    texts = ["reciprocal rank fusion of rankings", "plain notes about bridges and rivers"]
    scores = reranker.score(QUERY, texts)
    expected = CrossEncoder(tiny_cross_encoder, device="cpu").predict([(QUERY, t) for t in texts])
    np.testing.assert_allclose(scores, expected, rtol=1e-5)
    assert scores[0] > scores[1]  # it learned what it was trained on
    assert get_reranker(tiny_cross_encoder) is get_reranker(tiny_cross_encoder)  # loaded once

    r = Retriever.open(ingested)
    hits = r.search(QUERY, k=5, mode="dense", reranker=tiny_cross_encoder)
    direct = CrossEncoder(tiny_cross_encoder, device="cpu").predict([(QUERY, h.text) for h in hits])
    np.testing.assert_allclose([h.score for h in hits], sorted(direct, reverse=True), rtol=1e-5)
    # the two passages about fusion (the doc section, and rrf with its file's docstring) come first,
    # wherever the hashing embedder had put them
    assert all("fusion" in h.text.lower() for h in hits[:2])
    assert [h.fused_rank for h in hits] != [h.rank for h in hits]


def test_reranker_in_settings_and_turned_off(ingested, tiny_cross_encoder):
    r = Retriever.open(ingested, settings={"lake": ingested.uri, "retrieval": {"reranker": tiny_cross_encoder}})
    assert r.search(QUERY, k=3)[0].fused_rank is not None
    assert r.search(QUERY, k=3, reranker=False)[0].fused_rank is None


def test_bad_rerankers_get_clear_errors(ingested, tmp_path):
    r = Retriever.open(ingested)
    with pytest.raises(EmbedError, match="cannot load cross-encoder"):
        r.search(QUERY, reranker=str(tmp_path))  # a folder with no model in it
    with pytest.raises(QueryError, match="reranker must be"):
        r.search(QUERY, reranker=42)
    with pytest.raises(QueryError, match="rerank_depth must be"):
        r.search(QUERY, reranker=ByLength(), rerank_depth=0)

    class Short(ByLength):
        def score(self, query, texts):
            return [1.0]

    with pytest.raises(EmbedError, match="returned 1 scores"):
        r.search(QUERY, k=3, reranker=Short())
    with pytest.raises(ConfigError, match="rerank_depth"):
        from kbflow.config import RetrievalSettings

        RetrievalSettings(rerank_depth=5000)


def test_cli_search_rerank(ingested, tiny_cross_encoder):
    from click.testing import CliRunner

    from kbflow.cli import main

    out = CliRunner().invoke(main, ["--lake", ingested.uri, "search", QUERY, "-k", "3", "--rerank", tiny_cross_encoder])
    assert out.exit_code == 0, out.output
    assert out.output.startswith(" 1.")


def test_sweep_with_and_without_reranker(tmp_path, tiny_cross_encoder):
    from support import DOCS, QRELS, QUERIES, write_beir

    from kbflow.config import Settings
    from kbflow.evaluate.beir import load_beir
    from kbflow.evaluate.evaluate import evaluate_dataset
    from kbflow.evaluate.sweep import expand_grid

    write_beir(tmp_path / "tiny", DOCS, QUERIES, QRELS)
    settings = Settings(lake=str(tmp_path / "l"), model="hash:64")
    configs = expand_grid(
        {"grid": {"mode": "hybrid", "reranker": [None, tiny_cross_encoder], "rerank_depth": 5}}, settings
    )
    assert [(c["reranker"], c["rerank_depth"]) for c in configs] == [(None, None), (tiny_cross_encoder, 5)]
    runs, _ = evaluate_dataset(load_beir(str(tmp_path / "tiny")), configs, settings, lake=str(tmp_path / "l"))
    plain, reranked = runs
    assert plain.run_id != reranked.run_id and reranked.config["reranker"] == tiny_cross_encoder
    assert reranked.queries == 3 and set(reranked.metrics) == set(METRICS)
