"""kbflow against the tools it replaces, on one BEIR dataset, in one run, with one embedding model.

Indexes the same corpus and runs the same judged queries, one at a time, with

- ``kbflow``: ``kbflow eval``'s path on a fresh lake (load, chunk, embed,
  search table and indexes), hybrid with the default settings, on kbflow's
  default embedding backend (and, for comparison, on ``torch``);
- ``lancedb``: LanceDB's native hybrid search (``query_type="hybrid"``:
  a flat vector scan plus its FTS index with English stemming and stop
  words, fused by its ``RRFReranker``), one row per document, query
  vectors from sentence-transformers as its embedding registry would make them;
- ``txtai``: a txtai ``Embeddings`` index with ``hybrid=True`` (Faiss plus
  its BM25 terms index), one row per document, its own sentence-transformers
  vectors;
- ``bm25s``: BM25 alone (English stemming and stop words).

Every dense leg uses the same model (all-MiniLM-L6-v2 from the installed
weights). Each system has its model loaded and first indexes the corpus's
first 3 documents off the clock, so no clock counts imports or first-call
setup (the script prints what importing LanceDB's library costs, which
kbflow's lake does on first use). For each: index time (embedding the
corpus included), the texts it embedded, query p50 and p95 (query
embedding included) and nDCG@10 over the dataset's judged queries; documents are ranked by their best chunk where a
tool chunks. Last, for each kbflow backend run, kbflow's index time as a
share of the fastest hybrid peer's (the target: at most 0.8), and the word
pieces the model read for kbflow and for each peer. ``--profile`` then
ingests once more per kbflow backend under cProfile and prints where the
time goes (the model, tokenizing, chunking, the search table, calibration).

``--peer-precision bf16`` runs the peers at their best as well: each
loads the model with bfloat16 weights, as sentence-transformers documents
(``model_kwargs={"torch_dtype": torch.bfloat16}``; txtai passes its
``vectors`` settings through to it), where this CPU multiplies bfloat16
natively. Where it does not (PyTorch emulates bfloat16, far slower than
fp32), the script says so, times the two products, and runs the peers in
fp32, their best here. ``--peer-threads N`` sets PyTorch's threads for the
peers (default: PyTorch's own, every core); kbflow's rows use its own
settings.

The peers live in the optional ``bench`` extra (``pip install -e '.[bench]'``),
never in kbflow's default install.

    python bench/peers.py ../shared/datasets/cranfield [--queries N] [--peers lancedb,txtai,bm25s]
    python bench/peers.py ../shared/datasets/cranfield --peers lancedb --backends onnx,onnx-int8 --profile
    python bench/peers.py ../shared/datasets/cranfield --peer-precision fp32,bf16 [--peer-threads N]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.append(HERE)  # the other bench scripts (ingest_throughput's backend specs), after every package
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")  # LanceDB's hybrid query warns on stderr per query otherwise

import numpy as np  # noqa: E402

from kbflow import schema as S  # noqa: E402
from kbflow.chunk.context import embed_keys, embed_texts  # noqa: E402
from kbflow.config import DEFAULT_BACKEND, DEFAULT_MODEL, Settings  # noqa: E402
from kbflow.embed.base import get_embedder  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.configs import config_for, settings_for  # noqa: E402
from kbflow.evaluate.evaluate import as_run, evaluate_dataset  # noqa: E402
from kbflow.evaluate.lakes import ingest_dataset  # noqa: E402
from kbflow.evaluate.metrics import score_run  # noqa: E402
from kbflow.lake import Lake  # noqa: E402

PEERS = ("lancedb", "txtai", "bm25s")


def corpus(dataset) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(dataset.corpus, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            ids.append(str(row["_id"]))
            texts.append(f"{row.get('title') or ''}\n{row.get('text') or ''}".strip())
    return ids, texts


def word_pieces(texts: list[str], cut: bool = True) -> int:
    """Word pieces the model reads of ``texts``: each text's tokens, cut at the model's window as it cuts them
    (``cut=False``: every piece of each text, as if the window had no end)."""
    model, _ = st_model()
    window = int(model.max_seq_length) if cut else sys.maxsize
    return sum(min(len(ids), window) for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"])


def lake_texts(lake: str) -> list[str]:
    """The distinct texts a kbflow lake embedded (context header and chunk text)."""
    rows = Lake(lake).scan(S.CHUNKS, [S.CHUNK_HASH, S.EMBED_HASH, S.CONTEXT, S.TEXT])
    return list(dict(zip(embed_keys(rows).to_pylist(), embed_texts(rows))).values())


def warm_dataset(dataset, work: str, n: int = 3):
    """A BEIR dataset of the corpus's first ``n`` documents (and one query judged against the first), written
    under ``work``: what each system indexes once before its clock, so no clock counts imports or first-call
    setup (the peers' imports happen before theirs; kbflow loads its storage libraries lazily)."""
    root = os.path.join(work, "warm-up")
    os.makedirs(os.path.join(root, "qrels"), exist_ok=True)
    with open(dataset.corpus, encoding="utf-8") as fh:
        lines = [fh.readline() for _ in range(n)]
    with open(os.path.join(root, "corpus.jsonl"), "w", encoding="utf-8") as out:
        out.writelines(lines)
    first = str(json.loads(lines[0])["_id"])
    with open(os.path.join(root, "queries.jsonl"), "w", encoding="utf-8") as out:
        out.write(json.dumps({"_id": "q", "text": "warm up"}) + "\n")
    with open(os.path.join(root, "qrels", "test.tsv"), "w", encoding="utf-8") as out:
        out.write(f"query-id\tcorpus-id\tscore\nq\t{first}\t1\n")
    return load_beir(root, "test")


#: the parts of an ingest ``--profile`` reports: (label, file name ends with, function name)
PARTS = (
    ("onnxruntime's run (the model)", "onnxruntime_inference_collection.py", "run"),
    ("tokenizing", "~", "<method 'encode_batch' of 'tokenizers.Tokenizer' objects>"),
    ("chunking", "pipeline/chunking.py", "chunk_source"),
    ("search table and indexes", "pipeline/run.py", "finish_index"),
    ("the lake's calibration", "pipeline/run.py", "calibrate"),
)


def profile_ingest(dataset, settings, config, lake: str) -> None:
    """One more ingest of ``dataset`` into a fresh ``lake`` under cProfile (its clock is not the table's):
    the whole time and the cumulative seconds of :data:`PARTS`."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.runcall(ingest_dataset, dataset, settings_for(replace(settings, lake=lake), config))
    whole = time.perf_counter() - t0
    stats = pstats.Stats(profiler).stats  # (file, line, function) -> (calls, calls, own s, cumulative s, callers)
    parts = []
    for label, path, function in PARTS:
        seconds = sum(v[3] for (f, _, fn), v in stats.items() if fn == function and f.endswith(path))
        parts.append(f"{label} {seconds:.1f} s")
    print(f"kbflow ({settings.backend}) ingest under cProfile: {whole:.1f} s; " + ", ".join(parts))


def timed(search, queries: dict[str, str]) -> tuple[dict[str, dict[str, float]], list[float]]:
    """Run ``search(text) -> [doc ids]`` on every query; the run and per-query latencies in ms."""
    run, lat = {}, []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        docs = search(text)
        lat.append((time.perf_counter() - t0) * 1000.0)
        run[qid] = as_run(docs)
    return run, lat


@functools.lru_cache(maxsize=2)
def st_model(precision: str = "fp32"):
    """The model the peers use, loaded once per precision (``"bf16"``: bfloat16 weights, as
    sentence-transformers documents), and the folder it was loaded from."""
    from kbflow.embed.models import load_model, resolve_model

    model_id, target = resolve_model(DEFAULT_MODEL)
    if precision == "fp32":
        return load_model("SentenceTransformer", model_id, target, "embedding model"), target
    import torch
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(target, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16}), target


def peer_precisions(asked: str) -> list[str]:
    """The precisions the peers run at: those asked for, less ``bf16`` where this CPU only emulates bfloat16
    (then said, with both products' speed: fp32 is the peers' best on such a CPU)."""
    wanted = [p.strip() for p in asked.split(",") if p.strip()]
    unknown = set(wanted) - {"fp32", "bf16"}
    if unknown or not wanted:
        raise SystemExit(f"--peer-precision takes fp32 and/or bf16, got {asked!r}")
    if "bf16" in wanted:
        from kbflow.embed.bf16 import fast

        rates = product_rates()
        if fast():
            print(f"bfloat16 is native on this CPU: {rates}; the peers also run with bfloat16 weights")
        else:
            print(f"this CPU emulates bfloat16 ({rates}): the peers run in fp32, their best here")
            wanted = [p for p in wanted if p != "bf16"] or ["fp32"]
    return wanted


def product_rates() -> str:
    """The speed of one product of the model's widest shape in fp32 and in bfloat16 (the timing ``auto`` decides
    by, :func:`kbflow.embed.bf16.product_seconds`), as a phrase."""
    from kbflow.embed.bf16 import WIDEST_PRODUCT, product_seconds

    m, k, n = WIDEST_PRODUCT
    fp32, bf16 = (2 * m * k * n / s / 1e9 for s in product_seconds())
    return f"{fp32:.0f} GFLOP/s in fp32, {bf16:.0f} in bfloat16"


def peer_lancedb(ids, texts, work, model):
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    t0 = time.perf_counter()
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    table = lancedb.connect(os.path.join(work, "lancedb")).create_table(
        "docs",
        pa.table(
            {
                "id": ids,
                "text": texts,
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1)), vectors.shape[1]
                ),
            }
        ),
    )
    table.create_fts_index("text", language="English", stem=True, remove_stop_words=True)
    built = time.perf_counter() - t0
    reranker = RRFReranker()

    def search(text: str) -> list[str]:
        qvec = model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0]
        rows = (
            table.search(query_type="hybrid")
            .vector(qvec)
            .text(text)
            .rerank(reranker)
            .select(["id"])
            .limit(100)
            .to_list()
        )
        return [r["id"] for r in rows]

    return built, search


def peer_txtai(ids, texts, work, model_path, precision="fp32"):
    from txtai import Embeddings

    vectors = {}
    if precision == "bf16":  # txtai hands its vectors settings to SentenceTransformer(...)
        import torch

        vectors = {"model_kwargs": {"torch_dtype": torch.bfloat16}}
    t0 = time.perf_counter()
    emb = Embeddings(path=model_path, method="sentence-transformers", hybrid=True, content=False, vectors=vectors)
    emb.index([(i, t, None) for i, t in zip(ids, texts, strict=True)])
    built = time.perf_counter() - t0

    def search(text: str) -> list[str]:
        return [str(i) for i, _ in emb.search(text, 100)]

    return built, search


def peer_bm25s(ids, texts, work, _model):
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    built = time.perf_counter() - t0

    def search(text: str) -> list[str]:
        tokens = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = retriever.retrieve(tokens, k=min(100, len(ids)), show_progress=False)
        return [ids[i] for i in docs[0]]

    return built, search


def run_kbflow(dataset, spec: str, work: str, warm, args: argparse.Namespace) -> tuple:
    """kbflow's row on backend ``spec`` (``onnx@onnxruntime``: a backend on a runtime): the whole ingest timed
    (the model loaded and the warm-up corpus ingested before the clock, as the peers' are), then the judged
    queries (and the profiled ingest, with ``--profile``)."""
    from ingest_throughput import backend_of, runtime_of

    backend = backend_of(spec)
    get_embedder.cache_clear()
    settings = Settings.coerce({"backend": backend, "retrieval": {"log_queries": False}})
    lake = os.path.join(work, f"kbflow-{spec}")
    config = config_for(settings, mode="hybrid")
    embedder = get_embedder(settings.model, settings.embed_batch_size, settings.backend, settings.embed_threads)
    embedder.embed(["warm up"] * 8)  # a batch: OpenVINO compiles now, before the clock, as the peers load theirs
    ingest_dataset(warm, settings_for(replace(settings, lake=os.path.join(work, f"warm-{spec}")), config))
    t0 = time.perf_counter()
    ingest_dataset(dataset, settings_for(replace(settings, lake=lake), config))
    built = time.perf_counter() - t0
    runs, _ = evaluate_dataset(dataset, [config], settings, lake=lake, limit=args.queries, save=False)
    run = runs[0]
    embedded = Lake(lake).table(S.EMBEDDINGS).count_rows()
    print(f"  kbflow ({spec}) done", file=sys.stderr)
    if args.profile:
        profile_ingest(dataset, settings, config, os.path.join(work, f"profile-{spec}"))
    return (
        f"kbflow ({spec if '@' in spec else spec + runtime_of(backend)})",
        built,
        run.latency_ms["p50"],
        run.latency_ms["p95"],
        run.metrics["ndcg@10"],
        embedded,
    )


def report(rows: list[tuple], pieces: dict[str, int], texts: list[str]) -> None:
    """The table, each kbflow backend against the hybrid peers, and the word pieces each side read."""
    print(f"\n{'system':<36} {'index s':>8} {'texts':>7} {'p50 ms':>8} {'p95 ms':>8} {'nDCG@10':>8}")
    for name, built, p50, p95, ndcg, embedded in rows:
        print(f"{name:<36} {built:8.1f} {embedded:7d} {p50:8.1f} {p95:8.1f} {ndcg:8.4f}")
    hybrid = [r for r in rows if r[0].split(" ")[0] in ("lancedb", "txtai")]
    if hybrid:
        fastest = min(hybrid, key=lambda r: r[2])
        quickest = min(hybrid, key=lambda r: r[1])
        best = max(hybrid, key=lambda r: r[4])
        print()
        for ours in (r for r in rows if r[0].startswith("kbflow")):
            print(
                f"{ours[0]} against the hybrid peers: index {ours[1]:.1f} s vs the fastest's {quickest[1]:.1f} "
                f"({quickest[0]}), {ours[1] / quickest[1]:.2f}x (target <= 0.8); "
                f"p50 {ours[2]:.1f} ms vs the fastest's {fastest[2]:.1f} ({fastest[0]}), {ours[2] / fastest[2]:.2f}x; "
                f"nDCG@10 {ours[4]:.4f} vs the best's {best[4]:.4f} ({best[0]}), {ours[4] - best[4]:+.4f}"
            )
    if pieces:
        pieces["peers"], whole = word_pieces(texts), word_pieces(texts, cut=False)
        print(
            f"word pieces the model read: kbflow {pieces['kbflow']:,} (every chunk, context header included), "
            f"each peer {pieces['peers']:,} (each document once, cut at the model's window); "
            f"{pieces['kbflow'] / pieces['peers']:.2f}x. The documents hold {whole:,} uncut "
            f"(kbflow {pieces['kbflow'] / whole:.2f}x that)"
        )
    for r in rows:
        if r[0] == "bm25s":
            print(f"bm25s (keywords only, no model): p50 {r[2]:.2f} ms, nDCG@10 {r[4]:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="a BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
    ap.add_argument("--queries", type=int, default=None, help="the first N judged queries (default: all)")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument(
        "--backends",
        default=None,
        help=f"kbflow backends to run, onnx@onnxruntime for one on a runtime (default: {DEFAULT_BACKEND},torch)",
    )
    ap.add_argument(
        "--peer-precision",
        default="fp32",
        help="the peers' weights: fp32 (as shipped), bf16 (where the CPU multiplies bfloat16 natively), or both",
    )
    ap.add_argument("--peer-threads", type=int, default=None, help="PyTorch threads for the peers (default: its own)")
    ap.add_argument(
        "--profile", action="store_true", help="then ingest once more per backend under cProfile: where the time goes"
    )
    args = ap.parse_args()
    dataset = load_beir(args.dataset, "test")
    queries = dict(list(dataset.queries.items())[: args.queries or None])
    qrels = {q: dataset.qrels[q] for q in queries}
    work = tempfile.mkdtemp(prefix="kbflow-peers-")
    ids, texts = corpus(dataset)
    warm = warm_dataset(dataset, work)
    print(f"{dataset.name}: {len(ids)} documents, {len(queries)} judged queries; model {DEFAULT_MODEL}")
    t0 = time.perf_counter()
    import lancedb  # noqa: F401  (kbflow's lake imports it on first use; the warm-ups keep that off the clocks)

    print(f"LanceDB's Python library imported in {time.perf_counter() - t0:.2f} s, before any clock")
    rows = []
    pieces: dict[str, int] = {}
    try:
        backends = (args.backends or ",".join(dict.fromkeys([DEFAULT_BACKEND, "torch"]))).split(",")
        for spec in backends:
            rows.append(run_kbflow(dataset, spec, work, warm, args))
            if spec == backends[0]:
                pieces["kbflow"] = word_pieces(lake_texts(os.path.join(work, f"kbflow-{spec}")))
        if args.peer_threads:
            import torch

            torch.set_num_threads(args.peer_threads)
        for precision in peer_precisions(args.peer_precision):
            model, model_path = st_model(precision)
            for name in args.peers.split(","):
                if precision != "fp32" and name == "bm25s":
                    continue  # no model
                build = {"lancedb": peer_lancedb, "txtai": peer_txtai, "bm25s": peer_bm25s}[name]
                extra = (precision,) if name == "txtai" else ()
                peer_model = model_path if name == "txtai" else model
                build(ids[:3], texts[:3], tempfile.mkdtemp(dir=work), peer_model, *extra)  # warm-up, as kbflow's
                built, search = build(ids, texts, tempfile.mkdtemp(dir=work), peer_model, *extra)
                for text in list(queries.values())[:5]:  # warm up
                    search(text)
                run, lat = timed(search, queries)
                ndcg = score_run(qrels, run)[0]["ndcg@10"]
                embedded = len(texts) if name != "bm25s" else 0
                label = name if precision == "fp32" else f"{name} ({precision})"
                rows.append((label, built, statistics.median(lat), float(np.percentile(lat, 95)), ndcg, embedded))
                print(f"  {label} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(rows, pieces, texts)


if __name__ == "__main__":
    main()
