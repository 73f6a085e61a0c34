"""Ingest throughput vs. the raw model, on the same chunk texts, in the same run, for every backend.

Builds a fresh lake per embedding backend (torch, onnx, onnx-int8) from a corpus
of >= 5,000 chunks (CoSQA from ../shared/datasets when present, else a
generated corpus), runs the full `kbflow ingest` path on it (Dagster assets,
Lance writes, indexes, checks; the model load included, the one-off ONNX
export not: it is cached before the clock starts; a warm-up ingest of three
records loads the runner's modules first, as a warm code location has them
and as ``bench/peers.py`` does, unless ``--cold``), then encodes the same
distinct chunk texts with PyTorch's `SentenceTransformer.encode` alone, before
and after the ingests (their mean is the reference). Prints chunks/s and the
ratio of wall times per backend; the target for the default backend: ingest
<= 0.8 x raw torch encode (faster than the model it wraps).

    python bench/ingest_throughput.py [--corpus corpus.jsonl] [--limit N] [--backends torch,onnx]
    python bench/ingest_throughput.py --backends onnx,onnx@onnxruntime    # onnx on each runtime

A backend named ``onnx@RUNTIME`` runs with ``$KBFLOW_ONNX_RUNTIME=RUNTIME``
(``openvino`` or ``onnxruntime``); a plain name with the variable unset.
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


def backend_of(spec: str) -> str:
    """``onnx@onnxruntime`` -> ``onnx``, with $KBFLOW_ONNX_RUNTIME set to the runtime (unset for a plain name)."""
    from kbflow.embed.openvino import RUNTIME_ENV

    backend, _, runtime = spec.partition("@")
    if runtime:
        os.environ[RUNTIME_ENV] = runtime
    else:
        os.environ.pop(RUNTIME_ENV, None)
    return backend


def runtime_of(backend: str) -> str:
    from kbflow.embed.base import get_embedder

    onnx = getattr(get_embedder(DEFAULT_MODEL, None, backend), "_onnx", None)  # the ingest's own (cached) embedder
    return f" on {onnx.runtime}" if onnx is not None else ""


def warm_up(corpus: str, folder: str, n: int = 3) -> None:
    """Ingest the corpus's first ``n`` records with the hashing embedder before any clock: the runner's
    modules (Dagster's among them), its instance and Lance are then loaded, as in a warm code location
    (``bench/peers.py`` warms kbflow alike), and every backend's ingest is timed on the same footing."""
    from kbflow.pipeline import run_ingest

    os.makedirs(folder)
    small = os.path.join(folder, "corpus.jsonl")
    with open(corpus) as src, open(small, "w") as dst:
        for _, line in zip(range(n), src):
            dst.write(line)
    lake = Lake(os.path.join(folder, "lake"))
    lake.register(Source("warm", "jsonl", small))
    run_ingest(Settings.coerce(None, lake=lake.uri, model="hash:384"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=SHARED if os.path.exists(SHARED) else None)
    ap.add_argument("--limit", type=int, default=6000, help="records to take from the corpus")
    ap.add_argument("--backends", default=None, help="comma-separated (default: every backend)")
    ap.add_argument(
        "--cold", action="store_true", help="no warm-up ingest: the first backend's clock pays the runner's imports"
    )
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kbflow-bench-")
    corpus = os.path.join(work, "corpus.jsonl")
    records = args.limit
    if args.corpus:
        with open(args.corpus) as src, open(corpus, "w") as dst:
            records = 0
            for line in src:
                if records >= args.limit:
                    break
                dst.write(line)
                records += 1
    else:
        generated_corpus(corpus, args.limit)

    from kbflow.chunk.context import embed_keys, embed_texts
    from kbflow.config import BACKENDS, DEFAULT_BACKEND
    from kbflow.embed.base import get_embedder
    from kbflow.pipeline import run_ingest

    backends = args.backends.split(",") if args.backends else list(BACKENDS)
    for spec in backends:  # exports (and OpenVINO's check) happen once per machine: outside the clock
        get_embedder(DEFAULT_MODEL, 32, backend_of(spec)).embed(["warm up"] * 8)  # a batch: OpenVINO checked
        get_embedder.cache_clear()
    model = get_embedder(DEFAULT_MODEL, 32, "torch").model
    if not args.cold:
        warm_up(corpus, os.path.join(work, "warm-up"))
    results, texts, chunks, raw = {}, None, 0, []

    def raw_encode() -> None:
        t0 = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        raw.append(time.perf_counter() - t0)

    for spec in backends:
        backend = backend_of(spec)
        lake = Lake(os.path.join(work, f"lake-{spec}"))
        lake.register(Source("bench", "jsonl", corpus))
        settings = Settings.coerce(None, lake=lake.uri, model=DEFAULT_MODEL, backend=backend)
        get_embedder.cache_clear()  # the ingest loads its model, as a fresh process would
        t0 = time.perf_counter()
        summary = run_ingest(settings)
        seconds = time.perf_counter() - t0
        label = spec if "@" in spec else spec + runtime_of(backend)
        results[label] = (seconds, all(c["passed"] for c in summary.checks))
        assert summary.sources[0].status == "new", summary
        if texts is None:
            rows = lake.scan(S.CHUNKS, [S.CHUNK_HASH, S.EMBED_HASH, S.CONTEXT, S.TEXT])
            # the texts the ingest embedded (context header + chunk text), each once
            texts = list(dict(zip(embed_keys(rows).to_pylist(), embed_texts(rows))).values())
            chunks = lake.scan(S.CHUNKS, [S.CHUNK_ID]).num_rows
            raw_encode()
    raw_encode()
    raw_s = sum(raw) / len(raw)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(
        f"corpus: {os.path.basename(args.corpus or 'generated')} ({records} records) -> {chunks} chunks, "
        f"{len(texts)} distinct texts"
    )
    print(
        f"raw SentenceTransformer.encode (torch), same texts: {raw_s:8.1f} s  {len(texts) / raw_s:7.1f} texts/s "
        f"(runs: {', '.join(f'{x:.1f}' for x in raw)} s)"
    )
    for spec, (seconds, passed) in results.items():
        mark = "  <- default" if spec.split()[0] == DEFAULT_BACKEND else ""
        print(
            f"kbflow ingest, backend {spec:<24}: {seconds:8.1f} s  {chunks / seconds:7.1f} chunks/s  "
            f"ratio to raw torch encode {seconds / raw_s:.3f}  checks {'passed' if passed else 'FAILED'}{mark}"
        )
    print(f"target: the default backend's ratio <= 0.8; peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
