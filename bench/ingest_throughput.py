"""Ingest throughput vs. the raw model, on the same chunk texts, in the same run.

Builds a fresh lake from a corpus of >= 5,000 chunks (CoSQA from ../shared/datasets
when present, else a generated corpus), runs the full `kbflow ingest` path (Dagster
assets, Lance writes, indexes, checks; the model load included), then encodes the
same distinct chunk texts with `SentenceTransformer.encode` alone. Prints chunks/s
for both and the ratio of wall times (target: ingest <= 1.25 x raw encode).

    python bench/ingest_throughput.py [--corpus corpus.jsonl] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow import schema as S  # noqa: E402
from kbflow.config import DEFAULT_MODEL, Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.records import Source  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets", "cosqa", "corpus.jsonl")


def generated_corpus(path: str, n: int) -> None:
    words = (
        "lake chunk vector index query rank fusion model token embed source table version citation page line".split()
    )
    with open(path, "w") as fh:
        for i in range(n):
            body = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(40 + i % 60))
            fh.write(json.dumps({"_id": f"g{i}", "title": f"Doc {i}", "text": body}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=SHARED if os.path.exists(SHARED) else None)
    ap.add_argument("--limit", type=int, default=6000, help="records to take from the corpus")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kbflow-bench-")
    corpus = os.path.join(work, "corpus.jsonl")
    if args.corpus:
        with open(args.corpus) as src, open(corpus, "w") as dst:
            for i, line in enumerate(src):
                if i >= args.limit:
                    break
                dst.write(line)
    else:
        generated_corpus(corpus, args.limit)

    from kbflow.pipeline import run_ingest

    lake = Lake(os.path.join(work, "lake"))
    lake.register(Source("bench", "jsonl", corpus))
    settings = Settings.coerce(None, lake=lake.uri, model=DEFAULT_MODEL)
    t0 = time.perf_counter()
    summary = run_ingest(settings)
    ingest_s = time.perf_counter() - t0
    assert summary.sources[0].status == "new", summary
    from kbflow.chunk.context import embed_keys, embed_texts

    rows = lake.scan(S.CHUNKS, [S.CHUNK_HASH, S.EMBED_HASH, S.CONTEXT, S.TEXT])
    # the texts the ingest embedded (context header + chunk text), each once
    texts = list(dict(zip(embed_keys(rows).to_pylist(), embed_texts(rows))).values())
    chunks = lake.scan(S.CHUNKS, [S.CHUNK_ID]).num_rows
    rss_ingest = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    from kbflow.embed.base import get_embedder

    model = get_embedder(DEFAULT_MODEL).model  # already loaded: raw encode excludes the load, ingest included it
    t0 = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    raw_s = time.perf_counter() - t0

    print(
        f"corpus: {os.path.basename(args.corpus or 'generated')} ({args.limit} records) -> {chunks} chunks, "
        f"{len(texts)} distinct texts"
    )
    print(f"ingest (kbflow ingest path, model load included): {ingest_s:8.1f} s  {chunks / ingest_s:7.1f} chunks/s")
    print(f"raw SentenceTransformer.encode, same texts:       {raw_s:8.1f} s  {len(texts) / raw_s:7.1f} chunks/s")
    print(f"ratio ingest / raw encode: {ingest_s / raw_s:.3f}  (target <= 1.25)")
    print(f"peak RSS after ingest: {rss_ingest:.0f} MiB; checks passed: {all(c['passed'] for c in summary.checks)}")


if __name__ == "__main__":
    main()
