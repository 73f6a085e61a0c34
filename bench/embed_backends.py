"""The embedding backends side by side, in one run: throughput, query latency, vectors, nDCG@10.

For ``torch`` (sentence-transformers, fp32), ``onnx`` (the same graph,
exported, on OpenVINO where installed, else onnxruntime), ``bf16`` (PyTorch
with bfloat16 products, batches sorted by token count) and ``onnx-int8``
(int8 weights, dynamic per-channel quantization, on onnxruntime), all with
the same model (``auto``, the default, is ``bf16`` or ``onnx``: name it with
``--backends`` to see which this machine picks):

1. sentences/s on the same 5,000 real chunk texts (the embed texts of the
   Cranfield and CoSQA eval lakes, seeded sample), measured slice by slice with
   the backends' order rotated per slice; the median over slices and each
   backend's speed-up over torch;
2. query-embedding latency p50/p95 (the judged queries of both sets, one at a time);
3. how far each backend's vectors are from torch's on 2,000 of the texts:
   mean and minimum cosine, top-10 neighbour overlap;
4. nDCG@10 of dense and hybrid search on Cranfield and CoSQA for each backend
   (``kbflow eval``'s path; ``torch`` and ``onnx`` share one lake's vectors,
   ``onnx-int8`` gets its own, ``bf16`` and ``auto`` a fresh lake each);

5. throughput by text length, against raw ``SentenceTransformer.encode``
   (``batch_size=32``, the model as sentence-transformers loads it): short
   code (CoSQA functions), 100-token prose (Cranfield abstracts of 80-130
   word pieces), 256-token prose (abstracts the model's window truncates) and
   PDF chunks (kbflow's chunks of the ``bench/pdfpages`` PDFs, from ``../shared/datasets/pdfs``), each backend at
   its own batch size (``--batch-sizes`` adds ONNX at others), ``onnx`` on
   both runtimes where OpenVINO runs it (``onnx [onnxruntime]``), rounds rotated,
   medians; then each one's useful model work in GFLOP/s (the FLOPs of the
   real tokens, padding not counted) as a share of this machine's fp32 matrix
   product (PyTorch, the model's widest product): how much an fp32 runtime
   could still gain; and as a share of its best product, bfloat16 where the
   CPU multiplies it natively (the measured bfloat16 peak), else fp32;

and last, the fastest backend whose nDCG@10 is within 0.005 of torch on
both sets in both modes (kbflow's default is chosen on all five eval sets:
see docs/performance.md).

    python bench/embed_backends.py [--datasets ../shared/datasets] [--texts 5000] [--threads N]
    python bench/embed_backends.py --only-lengths [--batch-sizes 8,16,32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from kbflow import schema as S  # noqa: E402
from kbflow.chunk.context import embed_keys, embed_texts  # noqa: E402
from kbflow.config import BACKENDS, DEFAULT_BACKEND, DEFAULT_MODEL, Settings  # noqa: E402
from kbflow.embed.base import get_embedder  # noqa: E402
from kbflow.embed.onnx import BATCH_SIZE  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.configs import config_for  # noqa: E402
from kbflow.evaluate.evaluate import evaluate_dataset  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets")
SETS = ("cranfield", "cosqa")
TOLERANCE = 0.005


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


#: backends that store their vectors under torch's ``model_id`` but compute them otherwise: each is scored on a fresh
#: lake of its own (on the shared eval lake it would be scored on the fp32 vectors another backend stored there)
OWN_LAKE = ("bf16", "auto")


def quality(datasets: str, backends: tuple[str, ...], settings: Settings) -> tuple[dict, list[str], list[str]]:
    """``{(set, mode, backend): ndcg}``, the chunk texts of the eval lakes, and the judged queries."""
    ndcg, texts, queries = {}, [], []
    with tempfile.TemporaryDirectory(prefix="kbflow-backends-") as work:
        for name in SETS:
            dataset = load_beir(os.path.join(datasets, name), "test")
            lakes = [(None, [b for b in backends if b not in OWN_LAKE])]
            lakes += [(os.path.join(work, f"{name}-{b}"), [b]) for b in backends if b in OWN_LAKE]
            for i, (path, group) in enumerate(lakes):
                configs = [config_for(settings, mode=m, backend=b) for b in group for m in ("dense", "hybrid")]
                runs, lake = evaluate_dataset(dataset, configs, settings, lake=path, save=False, log=print)
                for run in runs:
                    ndcg[(name, run.config["mode"], run.config["backend"])] = run.metrics["ndcg@10"]
                if i == 0:
                    rows = lake.scan(S.CHUNKS, [S.CHUNK_HASH, S.EMBED_HASH, S.CONTEXT, S.TEXT])
                    texts += list(dict(zip(embed_keys(rows).to_pylist(), embed_texts(rows))).values())
            queries += list(dataset.queries.values())
    return ndcg, texts, queries


def length_buckets(datasets: str, per_bucket: int, rng: random.Random) -> dict[str, list[str]]:
    """Real texts by length: code, 100-token and 256-token prose, PDF chunks (see the module docstring)."""
    import json

    from kbflow.chunk.base import chunk_unit
    from kbflow.config import ChunkSettings
    from kbflow.records import Source
    from kbflow.sources.base import get_loader

    def records(name: str) -> list[str]:
        with open(os.path.join(datasets, name, "corpus.jsonl"), encoding="utf-8") as fh:
            return [f"{r.get('title') or ''}\n{r.get('text') or ''}".strip() for r in map(json.loads, fh)]

    tokenizer = get_embedder(DEFAULT_MODEL, None, "torch").model.tokenizer
    prose = records("cranfield")
    pieces = [len(ids) for ids in tokenizer(prose, add_special_tokens=True)["input_ids"]]
    chunks = []
    with open(os.path.join(HERE, "pdfpages", "sources.json"), encoding="utf-8") as fh:
        pdfs = [os.path.join(HERE, "pdfpages", s["path"]) for s in json.load(fh)["sources"]]
    for path in pdfs:
        for unit in get_loader("pdf").load(Source("pdfpages", "pdf", os.path.normpath(path))):
            chunks += [c.embed_text for c in chunk_unit(unit, ChunkSettings())]
    buckets = {
        "code": records("cosqa"),
        "prose-100": [t for t, n in zip(prose, pieces, strict=True) if 80 <= n <= 130],
        "prose-256": [t for t, n in zip(prose, pieces, strict=True) if n >= 256],
        "pdf-chunks": chunks,
    }
    return {k: rng.sample(v, min(per_bucket, len(v))) for k, v in buckets.items()}


def model_flops(model, texts: list[str]) -> float:
    """The floating-point operations a BERT-style encoder spends on ``texts`` at their real token counts (the
    model's window truncating; padding not counted): per layer and token, the four ``h x h`` products of attention,
    the two ``h x ff`` of the feed-forward block, and ``2 n h`` for the scores and the weighted sum."""
    config = model[0].auto_model.config
    layers, h, ff = config.num_hidden_layers, config.hidden_size, config.intermediate_size
    window = model.max_seq_length
    counts = [min(len(ids), window) for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"]]
    return float(sum(2 * layers * (n * (4 * h * h + 2 * h * ff) + 2 * n * n * h) for n in counts))


def matmul_ceiling(model, threads: int | None, rounds: int = 7, dtype: str = "float32") -> float:
    """This machine's matrix-product speed in ``dtype``, GFLOP/s: the model's widest product (8 texts of 256 tokens
    times the ``h x ff`` weight) in PyTorch (its oneDNN/MKL kernels), median of ``rounds`` rounds of 10 but the
    first (a warm-up)."""
    import torch

    config = model[0].auto_model.config
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        a = torch.randn(8 * 256, config.hidden_size).to(getattr(torch, dtype))
        b = torch.randn(config.hidden_size, config.intermediate_size).to(getattr(torch, dtype))
        speeds = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(10):
                a @ b
            speeds.append(10 * 2 * a.shape[0] * a.shape[1] * b.shape[1] / (time.perf_counter() - t0) / 1e9)
    finally:
        torch.set_num_threads(previous)
    return statistics.median(speeds[1:])


def by_length(datasets: str, backends: tuple[str, ...], args: argparse.Namespace) -> None:
    """Texts/s per length bucket for raw sentence-transformers and each backend, and the ratio to raw; then the
    model work each achieves (GFLOP/s) against this machine's fp32 matrix-product speed."""
    buckets = length_buckets(datasets, args.per_bucket, random.Random(7))
    raw = get_embedder(DEFAULT_MODEL, None, "torch").model
    runners = {"raw st.encode": lambda xs: raw.encode(xs, batch_size=32, show_progress_bar=False)}
    for b in backends:
        embedder = get_embedder(DEFAULT_MODEL, None, b, args.threads)
        runtime = getattr(getattr(embedder, "_onnx", None), "runtime", None)
        runners[f"kbflow {b}" + (f" [{runtime}]" if runtime in ("openvino", "torch-bf16") else "")] = embedder.embed
        if runtime == "openvino":  # the same graph on onnxruntime, side by side
            runners[f"kbflow {b} [onnxruntime]"] = onnxruntime_embed(args.threads)
    for size in (int(x) for x in args.batch_sizes.split(",") if x):
        for b in backends:
            if b != "torch":
                runners[f"kbflow {b} bs{size}"] = get_embedder(DEFAULT_MODEL, size, b, args.threads).embed
    for run in runners.values():
        run(buckets["code"][:32])  # warm up
    print(f"\n== throughput by text length, texts/s (medians of {args.rounds} rounds, order rotated)")
    names = list(runners)
    speed: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for bucket, texts in buckets.items():
            for name in names[r % len(names) :] + names[: r % len(names)]:
                t0 = time.perf_counter()
                runners[name](texts)
                speed.setdefault((bucket, name), []).append(len(texts) / (time.perf_counter() - t0))
    print(f"{'':<24}" + "".join(f"{b + f' ({len(t)})':>20}" for b, t in buckets.items()))
    for name in names:
        cells = []
        for bucket in buckets:
            med = statistics.median(speed[(bucket, name)])
            ratio = statistics.median(
                [a / b for a, b in zip(speed[(bucket, name)], speed[(bucket, "raw st.encode")], strict=True)]
            )
            cells.append(f"{med:9.1f} ({ratio:4.2f}x)")
        print(f"{name:<24}" + "".join(f"{c:>20}" for c in cells))
    ceiling(raw, buckets, speed, names, args.threads)


def onnxruntime_embed(threads: int | None):
    """The default model's fp32 ONNX export on onnxruntime (the ``onnx`` backend's runtime without OpenVINO)."""
    from kbflow.embed.models import resolve_model
    from kbflow.embed.runtimes import OnnxEmbedder

    base_id, target = resolve_model(DEFAULT_MODEL)
    return OnnxEmbedder(base_id, target, quantized=False, threads=threads, runtime="onnxruntime").embed


def ceiling(raw, buckets: dict[str, list[str]], speed: dict, names: list[str], threads: int | None) -> None:
    """Each runner's useful model work, GFLOP/s (median texts/s times the mean FLOPs of a text of the bucket),
    and its share of the fp32 matrix-product speed: how far an fp32 runtime could still go on this machine."""
    peak = matmul_ceiling(raw, threads)
    half = matmul_ceiling(raw, threads, dtype="bfloat16")
    best, which = (half, "bfloat16") if half > peak else (peak, "fp32")
    work = {bucket: model_flops(raw, texts) / len(texts) / 1e9 for bucket, texts in buckets.items()}
    print(
        f"\n== model work, GFLOP/s (share of this machine's fp32 matrix product, {peak:.0f} GFLOP/s on "
        f"{threads or 'the default'} threads; then of its best product, here {which}: the same product in bfloat16 "
        f"ran at {half:.0f} GFLOP/s, {'natively' if half > peak else 'emulated, slower than fp32'})"
    )
    print(f"{'':<24}" + "".join(f"{b:>26}" for b in buckets))
    for name in names:
        cells = []
        for bucket in buckets:
            rate = statistics.median(speed[(bucket, name)]) * work[bucket]
            cells.append(f"{rate:9.0f} ({rate / peak:4.0%} / {rate / best:4.0%})")
        print(f"{name:<24}" + "".join(f"{c:>26}" for c in cells))
    fp32 = get_embedder(DEFAULT_MODEL, None, "onnx", threads)
    if getattr(fp32, "_onnx", None) is None:
        return
    long = buckets["prose-256"]
    config = raw[0].auto_model.config
    h, ff, n = config.hidden_size, config.intermediate_size, raw.max_seq_length
    per_token = {"products": h * h + 2 * h * ff, "attention": 3 * h * h + 2 * n * h}  # MatMul ops; Attention op
    total = sum(per_token.values())
    print(
        f"\nwhere the fp32 graph's time goes on {len(long)} texts of 256+ word pieces (onnxruntime's profile of the "
        f"onnx backend's export; of the model's FLOPs at {n} tokens the MatMul ops hold "
        f"{per_token['products'] / total:.1%}, the "
        f"Attention ops, their query/key/value product included, {per_token['attention'] / total:.1%}, the rest none)"
    )
    for op, share in op_split(fp32, long, threads):
        print(f"  {op:<28} {share:6.1%}")


def op_split(embedder, texts: list[str], threads: int | None, top: int = 6) -> list[tuple[str, float]]:
    """The share of an ONNX backend's kernel time each operator type takes on ``texts`` (a profiled onnxruntime
    session on the same export, options and batches as the backend's own)."""
    import collections
    import json

    import onnxruntime as ort

    onnx = embedder._onnx  # the backend's OnnxEmbedder: its export folder and tokenizer
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kbflow-embed-profile")
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(os.path.join(onnx.folder, "model.onnx"), options, providers=["CPUExecutionProvider"])
    for feeds in onnx.tokens.batches(sorted(texts, key=len), embedder.batch_size or BATCH_SIZE):
        session.run(None, feeds)
    path = session.end_profiling()
    with open(path, encoding="utf-8") as fh:
        events = json.load(fh)
    os.remove(path)
    spent: collections.Counter = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            spent[e["args"]["op_name"]] += e["dur"]
    total = sum(spent.values()) or 1
    return [(op, t / total) for op, t in spent.most_common(top)]


def throughput(embedders: dict, texts: list[str], slices: int) -> dict[str, list[float]]:
    """Sentences/s per backend and slice, the order of backends rotated per slice."""
    names = list(embedders)
    out: dict[str, list[float]] = {n: [] for n in names}
    size = max(1, len(texts) // slices)
    for i in range(slices):
        part = texts[i * size : (i + 1) * size]
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            t0 = time.perf_counter()
            embedders[name].embed(part)
            out[name].append(len(part) / (time.perf_counter() - t0))
    return out


def query_latency(embedders: dict, queries: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {n: [] for n in embedders}
    for q in queries:
        for name, embedder in embedders.items():
            t0 = time.perf_counter()
            embedder.embed_query(q)
            out[name].append((time.perf_counter() - t0) * 1000)
    return out


def agreement(reference: np.ndarray, other: np.ndarray) -> tuple[float, float, float]:
    """Mean and min cosine of matching rows, and the mean top-10 neighbour overlap within the set."""
    cos = np.sum(reference * other, axis=1)
    ref_top = np.argsort(-(reference @ reference.T), axis=1)[:, 1:11]
    oth_top = np.argsort(-(other @ other.T), axis=1)[:, 1:11]
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ref_top, oth_top, strict=True)])
    return float(cos.mean()), float(cos.min()), float(overlap)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=SHARED, help="folder with cranfield/ and cosqa/ (BEIR layout)")
    ap.add_argument("--texts", type=int, default=5000, help="chunk texts for the throughput test")
    ap.add_argument("--slices", type=int, default=5, help="slices the texts are timed in (median over slices)")
    ap.add_argument("--queries", type=int, default=300, help="queries for the latency test")
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads (default: the backend's own)")
    ap.add_argument("--backends", default=",".join(b for b in BACKENDS if b != "auto"))
    ap.add_argument("--per-bucket", type=int, default=300, help="texts per length bucket")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the by-length test")
    ap.add_argument("--batch-sizes", default="", help="also time ONNX at these batch sizes (by length)")
    ap.add_argument("--only-lengths", action="store_true", help="only the throughput by text length")
    args = ap.parse_args()
    backends = tuple(b.strip() for b in args.backends.split(","))
    if "torch" not in backends:
        ap.error("--backends must include torch (the reference)")
    if not all(os.path.isdir(os.path.join(args.datasets, n)) for n in SETS):
        sys.exit(f"{args.datasets}: needs cranfield/ and cosqa/ (see ../shared/datasets/README.md)")
    settings = Settings.coerce(None, embed_threads=args.threads)
    if args.only_lengths:
        by_length(args.datasets, backends, args)
        return

    print(f"== nDCG@10 (dense, hybrid) per backend, {', '.join(SETS)}")
    ndcg, texts, queries = quality(args.datasets, backends, settings)
    rng = random.Random(13)
    rng.shuffle(texts)
    texts = texts[: args.texts]
    rng.shuffle(queries)
    queries = queries[: args.queries]
    embedders = {b: get_embedder(settings.model, None, b, args.threads) for b in backends}
    for e in embedders.values():  # warm each up (first-call allocations, graph optimization)
        e.embed(texts[:64])

    print(f"\n== throughput: {len(texts)} chunk texts, {args.slices} slices, threads {args.threads or 'default'}")
    speed = throughput(embedders, texts, args.slices)
    print(f"{'backend':<11} {'sent/s':>8} {'min':>8} {'max':>8} {'x torch':>8}")
    for b in backends:
        ratios = [s / t for s, t in zip(speed[b], speed["torch"], strict=True)]
        med = statistics.median(speed[b])
        print(f"{b:<11} {med:8.1f} {min(speed[b]):8.1f} {max(speed[b]):8.1f} {statistics.median(ratios):8.2f}")

    print(f"\n== query embedding latency, {len(queries)} queries (ms)")
    lat = query_latency(embedders, queries)
    for b in backends:
        print(f"{b:<11} p50 {percentile(lat[b], 50):6.2f}  p95 {percentile(lat[b], 95):6.2f}")

    sample = texts[:2000]
    print(f"\n== vectors against torch on {len(sample)} chunk texts")
    reference = embedders["torch"].embed(sample)
    for b in backends:
        if b == "torch":
            continue
        mean, low, overlap = agreement(reference, embedders[b].embed(sample))
        print(f"{b:<11} mean cosine {mean:.5f}  min {low:.5f}  top-10 neighbour overlap {overlap:.3f}")

    print("\n== nDCG@10")
    print(f"{'backend':<11} " + " ".join(f"{n + ' ' + m:>16}" for n in SETS for m in ("dense", "hybrid")))
    for b in backends:
        print(f"{b:<11} " + " ".join(f"{ndcg[(n, m, b)]:16.4f}" for n in SETS for m in ("dense", "hybrid")))

    ok = [
        b
        for b in backends
        if all(abs(ndcg[(n, m, b)] - ndcg[(n, m, "torch")]) <= TOLERANCE for n in SETS for m in ("dense", "hybrid"))
    ]
    fastest = max(ok, key=lambda b: statistics.median(speed[b]))
    print(
        f"\nfastest within {TOLERANCE} nDCG@10 of torch on {' and '.join(SETS)} in both modes: {fastest}; "
        f"kbflow's default: {DEFAULT_BACKEND} (chosen on every eval set, codesearch, pdfpages and "
        "financebench-dev too: docs/performance.md, 'Embedding backends')"
    )
    by_length(args.datasets, backends, args)


if __name__ == "__main__":
    main()
