"""Hybrid query latency p50/p95 over 200 queries at 10k and 100k chunks, query embedding included.

Synthetic lake for size: generated chunk texts (pseudo-words drawn from a
Zipfian vocabulary, 30,000 words by default, like natural text) with random
unit vectors written straight into the chunks/embeddings tables, then the real
search-table sync (BM25 + scalar indexes; an ANN index only from 250k rows).
Queries are embedded by the real default model at query time. Prints p50/p95
per size and per mode.

    python bench/query_latency.py [--sizes 10000 100000] [--queries 200] [--vocab 30000]

The dense leg is exact (vectors in memory, see kbflow.retrieve.dense); the
second-and-later query timings exclude the one-off load of those vectors,
which is printed separately.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from kbflow import Retriever, ids  # noqa: E402
from kbflow import schema as S  # noqa: E402
from kbflow.config import DEFAULT_MODEL  # noqa: E402
from kbflow.index.search import sync_search_table  # noqa: E402
from kbflow.lake import Lake  # noqa: E402

SYLLABLES = "ka lo mi ne ru sa to vi ze qua bri cor dex fen gol hum ix jor lum".split()


def vocabulary(size: int) -> tuple[list[str], list[float]]:
    """``size`` pseudo-words with Zipf weights (rank ** -1.07), as in natural text."""
    words = []
    for i in range(size):
        w, j = "", i
        while True:
            w += SYLLABLES[j % len(SYLLABLES)]
            j //= len(SYLLABLES)
            if not j:
                break
        words.append(w + "x")  # a suffix no stemmer strips, so every word stays its own term
    weights = [(r + 1) ** -1.07 for r in range(size)]
    return words, weights


def build(lake: Lake, n: int, vocab: tuple[list[str], list[float]], dim: int = 384, batch: int = 10_000) -> None:
    """Write ``n`` synthetic chunks (Zipfian text over ``vocab``, random unit vectors) into the lake."""
    words, weights = vocab
    from kbflow.records import Source

    for s in range(20):  # registered, so scope filters validate
        lake.update_sources([Source(f"s{s}", "docs", "/synthetic", scope="global" if s % 2 else "proj").to_row()])
    rng = random.Random(n)
    nrng = np.random.default_rng(n)
    chunks, embeds = lake.table(S.CHUNKS), lake.table(S.EMBEDDINGS)
    for start in range(0, n, batch):
        rows, hashes = [], []
        for i in range(start, min(n, start + batch)):
            text = " ".join(rng.choices(words, weights, k=rng.randint(40, 160)))
            h = ids.text_hash(f"{i}:{text}")
            hashes.append(h)
            rows.append(
                {
                    S.CHUNK_ID: f"c{i}",
                    S.CHUNK_HASH: h,
                    S.SOURCE_ID: f"s{i % 20}",
                    S.SOURCE_TYPE: "docs",
                    S.SCOPE: "global" if (i % 20) % 2 else "proj",
                    S.UNIT_HASH: f"u{i // 10}",
                    S.CONTENT_KIND: "doc",
                    S.POSITION: i % 10,
                    S.TITLE: f"doc {i // 10}",
                    S.URI: "/synthetic",
                    S.CONTENT_HASH: "x",
                    S.TEXT: text,
                    S.LOCATOR: {"kind": "doc", "path": f"doc{i // 10}.md", "char_start": 0, "char_end": len(text)},
                    S.CHUNKER: "synthetic",
                    S.ROW_HASH: h,
                }
            )
        chunks.add(pa.Table.from_pylist(rows, schema=S.CHUNKS_SCHEMA))
        vec = nrng.standard_normal((len(hashes), dim)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        embeds.add(
            pa.Table.from_arrays(
                [
                    pa.array(hashes),
                    pa.array([DEFAULT_MODEL] * len(hashes)),
                    pa.ListArray.from_arrays(
                        pa.array(np.arange(0, (len(hashes) + 1) * dim, dim), pa.int32()), pa.array(vec.reshape(-1))
                    ),
                ],
                schema=S.EMBEDDINGS_SCHEMA,
            )
        )


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--vocab",
        type=int,
        default=30_000,
        help="distinct words of the synthetic text (Zipfian); a tiny vocabulary makes every posting list huge",
    )
    args = ap.parse_args()
    vocab = words, weights = vocabulary(args.vocab)
    print(f"synthetic text: {args.vocab} distinct words, Zipf-distributed; {args.queries} queries of 2-8 words")
    rng = random.Random(7)
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(2, 8))) for _ in range(args.queries)]
    for n in args.sizes:
        lake = Lake(os.path.join(tempfile.mkdtemp(prefix="kbflow-qbench-"), "lake"))
        t0 = time.perf_counter()
        build(lake, n, vocab)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = sync_search_table(lake, DEFAULT_MODEL)
        indexed = time.perf_counter() - t0
        r = Retriever.open(lake)
        r.search("warm up the model", k=10, mode="bm25")
        r.embedder.embed_query("warm up the model")
        t0 = time.perf_counter()
        r.search("warm up the vectors", k=10, mode="dense")
        first = time.perf_counter() - t0
        backend = r.exact_index.backend if r.exact else "ann index"
        print(
            f"{n} chunks: generated in {built:.1f}s, search table + indexes in {indexed:.1f}s, "
            f"indexes: {sorted(result.indexes)}"
        )
        print(f"  dense leg: {backend}; first dense query (loads {r.rows} vectors) {first * 1000:.0f} ms")
        for mode in ("hybrid", "dense", "bm25"):
            for q in queries[:10]:
                r.search(q, k=10, mode=mode)
            lat = []
            for q in queries:
                t0 = time.perf_counter()
                r.search(q, k=10, mode=mode)
                lat.append((time.perf_counter() - t0) * 1000)
            print(
                f"  {mode:<6} k=10  p50 {statistics.median(lat):6.1f} ms  p95 {pct(lat, 0.95):6.1f} ms  "
                f"({len(lat)} queries)"
            )
        lat = []
        for q in queries:
            t0 = time.perf_counter()
            r.search(q, k=10, scope="proj", kinds="doc")
            lat.append((time.perf_counter() - t0) * 1000)
        print(f"  hybrid+filters    p50 {statistics.median(lat):6.1f} ms  p95 {pct(lat, 0.95):6.1f} ms")


if __name__ == "__main__":
    main()
