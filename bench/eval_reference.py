"""kbflow's legs next to reference implementations, on BEIR datasets, in one run.

For each dataset: evaluate kbflow's ``bm25`` and ``dense`` modes (``kbflow
eval``'s code path, on the dataset's eval lake), then

- a reference BM25: bm25s over the same chunk texts with the same
  tokenization as the Lance index: runs of letters and digits (so
  ``get_file_name`` is three tokens), lowercase, English Snowball stemming,
  and the English stop words the Lance index drops (found by probing a
  scratch index with bm25s's 179-word English list); and ``rank_bm25.BM25Okapi``
  (k1 1.2 and b 0.75, Lance's) over the same tokens;
- exact cosine search: every chunk vector of the search table against the
  query vector in numpy (float32), no candidate selection;

rank documents the same way (a document ranks where its best chunk does) and
print nDCG@10 of each with the differences. The issue's bars: BM25 within
0.01, dense within 0.005.

    python bench/eval_reference.py ../shared/datasets/cranfield ../shared/datasets/cosqa
"""

from __future__ import annotations

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from kbflow import schema as S  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.configs import config_for  # noqa: E402
from kbflow.evaluate.evaluate import DOCS_PER_QUERY, as_run, evaluate, ranked_docs  # noqa: E402
from kbflow.evaluate.lakes import eval_lake_uri, ingest_dataset  # noqa: E402
from kbflow.evaluate.metrics import score_run  # noqa: E402
from kbflow.index.search import index_stopwords  # noqa: E402
from kbflow.retrieve.retriever import Retriever  # noqa: E402
from kbflow.text.terms import TOKEN_PATTERN  # noqa: E402


def bm25s_run(texts, cids, doc_of, queries: dict[str, str], depth: int, stemmer, stopwords) -> dict:
    """bm25s's ranking of the chunk texts for each query, as documents."""
    import bm25s

    def tokenize(items):
        return bm25s.tokenize(
            items, lower=True, token_pattern=TOKEN_PATTERN, stopwords=stopwords, stemmer=stemmer, show_progress=False
        )

    retr = bm25s.BM25()
    retr.index(tokenize(texts), show_progress=False)
    idx, _ = retr.retrieve(tokenize(list(queries.values())), k=depth, show_progress=False)
    return {q: as_run(ranked_docs((cids[i] for i in row), doc_of)) for q, row in zip(queries, idx)}


def okapi_run(texts, cids, doc_of, queries: dict[str, str], depth: int, tokens) -> dict:
    """rank_bm25's Okapi BM25 (k1 1.2, b 0.75) ranking for each query, as documents."""
    import rank_bm25

    okapi = rank_bm25.BM25Okapi([tokens(t) for t in texts], k1=1.2, b=0.75)
    run = {}
    for q, text in queries.items():
        top = np.argsort(-okapi.get_scores(tokens(text)), kind="stable")[:depth]
        run[q] = as_run(ranked_docs((cids[i] for i in top), doc_of))
    return run


def exact_dense_run(table, retriever, cids, doc_of, queries: dict[str, str], depth: int) -> dict:
    """An exact cosine scan of the lake's vectors for each query, as documents."""
    vectors = np.stack(table.column(S.VECTOR).to_numpy(zero_copy_only=False)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    qvec = np.stack([retriever.embedder.embed_query(text) for text in queries.values()]).astype(np.float32)
    order = np.argsort(-(qvec @ vectors.T), axis=1, kind="stable")[:, :depth]
    return {q: as_run(ranked_docs((cids[i] for i in row), doc_of)) for q, row in zip(queries, order)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--eval-home", default=None, help="where the eval lakes live (default: ./data/eval)")
    args = ap.parse_args()
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    stemmer = Stemmer.Stemmer("english")
    stopwords = index_stopwords(sorted(STOPWORDS_EN_PLUS))
    stops = set(stopwords)

    def tokens(text: str) -> list[str]:
        return [stemmer.stemWord(w) for w in re.findall(TOKEN_PATTERN, text.lower()) if w not in stops]

    print(f"reference tokenization: pattern {TOKEN_PATTERN}, {len(stopwords)} stop words, Snowball English stemming")
    print(
        f"{'dataset':10s} {'kbflow bm25':>11s} {'bm25s':>7s} {'diff':>7s} {'rank_bm25':>9s} {'diff':>7s} "
        f"{'kbflow dense':>12s} {'exact':>7s} {'diff':>7s}"
    )
    for root in args.datasets:
        ds = load_beir(root)
        settings = Settings.coerce(None, lake=eval_lake_uri(ds, args.eval_home))
        lake, _ = ingest_dataset(ds, settings)
        ours = {
            r.mode: r.metrics["ndcg@10"]
            for r in evaluate(ds, lake, [config_for(settings, mode=m) for m in ("bm25", "dense")], settings)
        }
        retriever = Retriever.open(lake, settings=settings)
        table = retriever.dataset.to_table(columns=[S.CHUNK_ID, S.TEXT, S.LOCATOR, S.VECTOR])
        cids = table.column(S.CHUNK_ID).to_pylist()
        texts = table.column(S.TEXT).to_pylist()
        doc_of = dict(zip(cids, table.column(S.LOCATOR).combine_chunks().field("record_id").to_pylist()))
        depth = min(len(cids), 3 * DOCS_PER_QUERY)
        queries = dict(ds.queries)
        ref_bm25 = score_run(ds.qrels, bm25s_run(texts, cids, doc_of, queries, depth, stemmer, stopwords))[0]
        ref_okapi = score_run(ds.qrels, okapi_run(texts, cids, doc_of, queries, depth, tokens))[0]
        ref_dense = score_run(ds.qrels, exact_dense_run(table, retriever, cids, doc_of, queries, depth))[0]
        ref_bm25, ref_okapi, ref_dense = ref_bm25["ndcg@10"], ref_okapi["ndcg@10"], ref_dense["ndcg@10"]
        print(
            f"{ds.name:10s} {ours['bm25']:11.4f} {ref_bm25:7.4f} {ours['bm25'] - ref_bm25:+7.4f} "
            f"{ref_okapi:9.4f} {ours['bm25'] - ref_okapi:+7.4f} "
            f"{ours['dense']:12.4f} {ref_dense:7.4f} {ours['dense'] - ref_dense:+7.4f}"
        )


if __name__ == "__main__":
    main()
