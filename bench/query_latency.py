"""Query latency p50/p95 over 200 queries at 10k and 100k chunks (or 1M), query embedding included,
where the time goes, batch search throughput, and the ANN index's recall.

Synthetic lake for size: generated chunk texts (pseudo-words drawn from a
Zipfian vocabulary, 30,000 words by default, like natural text) with unit
vectors of low intrinsic dimension (a random 384 x 32 projection of Gaussian
points plus a little noise: real sentence embeddings are far from uniform on
the sphere, and uniform random vectors have no near neighbours for an ANN
index to find) written straight into the chunks/embeddings tables, then the
real search-table sync (BM25 + scalar indexes; an ANN index from 250k rows).
Queries are embedded by the real default model at query time. Prints per size:

- p50/p95 per mode, and with filters;
- the split of a hybrid query's time (``Hits.timings``: embed, dense leg,
  BM25 leg, fusion, row take; medians);
- hybrid p50 with the keyword leg in a helper thread beside the dense
  leg's scan of the vectors in memory, against the two legs in turn
  (interleaved; the default from ``kbflow.retrieve.ranking.PARALLEL_LEGS_MIN_ROWS``);
- ``Retriever.search_many`` against one ``search`` per query: queries/s;
- from 250k rows (the ANN index): recall@10 of the dense leg against an exact
  scan of every vector, for query vectors drawn like the chunks';
- the floor: hybrid p50 against the p50 of the query's own embedding, and
  against LanceDB's native hybrid search (``query_type="hybrid"``: its
  flat vector scan and FTS index, fused by its ``RRFReranker``) over the same
  chunk texts and vectors in a LanceDB table of their own, the query
  embedded by the same model for both, interleaved query by query;
- the first query of a new process: a fresh Python that opens the lake and
  answers one hybrid query, model load included (``--no-peer`` skips
  LanceDB and this).

    python bench/query_latency.py [--sizes 10000 100000] [--queries 200] [--vocab 30000] [--backend onnx]
    python bench/query_latency.py --sizes 1000000
    python bench/query_latency.py --pdf     # chunks of PDF pages (10 a page, 40 pages a file), half the
                                            # queries naming a file: the document and page signals at work
    python bench/query_latency.py --vs min_depth=200   # also hybrid p50 with these retrieval settings
                                                       # against the defaults, interleaved query by query

Below 250k rows the dense leg is exact (vectors in memory, see
kbflow.retrieve.dense); the second-and-later query timings exclude the
one-off load of those vectors, which is printed separately.
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

from kbflow import Retriever  # noqa: E402
from kbflow import schema as S  # noqa: E402
from kbflow.config import DEFAULT_MODEL  # noqa: E402
from kbflow.index import search as search_index  # noqa: E402
from kbflow.index.search import sync_search_table  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.records import ids  # noqa: E402

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


def projection(dim: int = 384, latent: int = 32) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((latent, dim)).astype(np.float32)


def vectors(rng: np.random.Generator, n: int, proj: np.ndarray) -> np.ndarray:
    """``n`` unit vectors of low intrinsic dimension: Gaussian latent points projected, plus 10% noise."""
    latent, dim = proj.shape
    vec = rng.standard_normal((n, latent)).astype(np.float32) @ proj
    vec += 0.1 * np.sqrt(latent) * rng.standard_normal((n, dim)).astype(np.float32)
    return vec / np.linalg.norm(vec, axis=1, keepdims=True)


def _locator(i: int, length: int, pdf: bool) -> dict:
    if pdf:  # 10 chunks a page, 40 pages a file
        return {
            "kind": "pdf",
            "path": f"filing{i // 400}.pdf",
            "page": (i // 10) % 40 + 1,
            "char_start": 0,
            "char_end": length,
        }
    return {"kind": "doc", "path": f"doc{i // 10}.md", "char_start": 0, "char_end": length}


def build(
    lake: Lake,
    n: int,
    vocab: tuple[list[str], list[float]],
    proj: np.ndarray,
    batch: int = 10_000,
    pdf: bool = False,
) -> None:
    """Write ``n`` synthetic chunks (Zipfian text over ``vocab``, structured unit vectors) into the lake
    (``pdf``: as chunks of PDF pages)."""
    dim = proj.shape[1]
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
                    S.CONTENT_KIND: "pdf" if pdf else "doc",
                    S.POSITION: i % 10,
                    S.TITLE: f"doc {i // 10}",
                    S.URI: "/synthetic",
                    S.CONTENT_HASH: "x",
                    S.TEXT: text,
                    S.LOCATOR: _locator(i, len(text), pdf),
                    S.CHUNKER: "synthetic",
                    S.ROW_HASH: h,
                }
            )
        chunks.add(pa.Table.from_pylist(rows, schema=S.CHUNKS_SCHEMA))
        vec = vectors(nrng, len(hashes), proj)
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


def recall_at_10(r: Retriever, proj: np.ndarray, queries: int) -> tuple[float, float]:
    """Mean recall@10 of the dense leg (the ANN index, asked for the candidates a top-10 search asks for)
    against an exact scan, and the leg's p50 in ms."""
    table = r.dataset.to_table(columns=[S.CHUNK_ID, S.VECTOR])
    ids = table.column(S.CHUNK_ID).to_pylist()
    matrix = np.stack(table.column(S.VECTOR).to_numpy(zero_copy_only=False)).astype(np.float32)
    del table
    qs = vectors(np.random.default_rng(99), queries, proj)
    depth = r.settings.retrieval.depth(10)  # the candidates a top-10 search asks the leg for
    exact = np.argsort(-(qs @ matrix.T), axis=1)[:, :10]
    found, lat = [], []
    for q, truth in zip(qs, exact, strict=True):
        t0 = time.perf_counter()
        got = r.table.dense(q, depth, {})[0][:10]
        lat.append((time.perf_counter() - t0) * 1000)
        found.append(len(set(got) & {ids[i] for i in truth}) / 10)
    return float(np.mean(found)), statistics.median(lat)


def _setting(item: str) -> tuple[str, object]:
    key, _, value = item.partition("=")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value


def versus(r: Retriever, queries: list[str], items: list[str]) -> None:
    """Hybrid p50 with the default settings against ``KEY=VALUE`` overrides, interleaved query by query."""
    overrides = dict(_setting(item) for item in items)
    for q in queries[:10]:
        r.search(q, k=10, **overrides)
    ours, theirs = [], []
    for q in queries:
        theirs.append(r.search(q, k=10, **overrides).latency_ms)
        ours.append(r.search(q, k=10).latency_ms)
    a, b = statistics.median(ours), statistics.median(theirs)
    label = ", ".join(items)
    print(f"  vs: hybrid p50 {a:6.1f} ms with the defaults, {b:6.1f} ms with {label} ({a / b:.2f}x, interleaved)")


def signals(r: Retriever, queries: list[str]) -> None:
    """Hybrid p50 with the document and page signals (the defaults) and without, interleaved query by query."""
    r.table._groups = None  # loaded by the searches above: time the one-off load of each row's document and page
    t0 = time.perf_counter()
    r.groups  # noqa: B018
    load = time.perf_counter() - t0
    on, off = [], []
    for q in queries:
        off.append(r.search(q, k=10, document_weight=0, page_weight=0).latency_ms)
        on.append(r.search(q, k=10).latency_ms)
    a, b = statistics.median(on), statistics.median(off)
    print(
        f"  signals: hybrid p50 {a:6.1f} ms with the document and page signals, {b:6.1f} ms without "
        f"({a / b:.2f}x, interleaved); their one-off load {load * 1000:.0f} ms"
    )


def legs_beside(r: Retriever, queries: list[str]) -> None:
    """Hybrid p50 with the keyword leg in a helper thread beside the dense leg's scan (the default from
    ``ranking.PARALLEL_LEGS_MIN_ROWS`` rows) and with the legs in turn, interleaved query by query."""
    from kbflow.retrieve import ranking

    default = ranking.PARALLEL_LEGS_MIN_ROWS
    beside, in_turn = [], []
    try:
        for q in queries:
            ranking.PARALLEL_LEGS_MIN_ROWS = 0
            beside.append(r.search(q, k=10).latency_ms)
            ranking.PARALLEL_LEGS_MIN_ROWS = r.rows + 1
            in_turn.append(r.search(q, k=10).latency_ms)
    finally:
        ranking.PARALLEL_LEGS_MIN_ROWS = default
    a, b = statistics.median(beside), statistics.median(in_turn)
    used = "used" if r.exact and r.rows >= default else "not used"
    print(
        f"  legs: hybrid p50 {a:6.1f} ms with the keyword leg beside the dense scan, {b:6.1f} ms in turn "
        f"({a / b:.2f}x, interleaved; {used} at {r.rows:,} rows by default, from {default:,})"
    )


def floor(r: Retriever, queries: list[str], work: str) -> None:
    """Hybrid p50 against the query's embedding alone and against LanceDB's native hybrid search on the same
    texts and vectors (a table of their own under ``work``), interleaved query by query."""
    import lancedb
    from lancedb.rerankers import RRFReranker

    rows = r.dataset.to_table(columns=[S.CHUNK_ID, S.TEXT, S.VECTOR])
    table = lancedb.connect(os.path.join(work, "lancedb")).create_table(
        "chunks", rows.rename_columns(["id", "text", "vector"])
    )
    table.create_fts_index("text", language="English", stem=True, remove_stop_words=True)
    reranker = RRFReranker()

    def peer(q: str) -> list:
        qvec = r.embedder.embed_query(q)
        return (
            table.search(query_type="hybrid").vector(qvec).text(q).rerank(reranker).select(["id"]).limit(10).to_list()
        )

    for q in queries[:10]:
        peer(q)
    ours, embed, theirs = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        r.embedder.embed_query(q)
        embed.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        r.search(q, k=10)
        ours.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        peer(q)
        theirs.append((time.perf_counter() - t0) * 1000)
    a, e, b = statistics.median(ours), statistics.median(embed), statistics.median(theirs)
    print(
        f"  floor: hybrid p50 {a:6.1f} ms, the query's embedding alone {e:6.1f} ms ({a / e:.2f}x, target <= 1.5); "
        f"LanceDB's native hybrid on the same texts and vectors {b:6.1f} ms ({a / b:.2f}x, target <= 0.25; "
        "interleaved, query embedding included in both)"
    )


def first_query(lake: Lake, backend: str | None) -> None:
    """Seconds from a new Python process's start to its first hybrid answer on ``lake`` (model load included),
    median of 3 processes, after one untimed process that leaves Python's compiled modules behind as an
    installed kbflow has them (``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment: with it,
    every start compiles kbflow's sources again)."""
    import subprocess

    code = (
        "import sys; from kbflow import Retriever; "
        "r = Retriever.open(sys.argv[1], settings=({'backend': sys.argv[2]} if sys.argv[2] else {})); "
        "r.search('a first question', k=10)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for _ in range(4):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code, lake.uri, backend or ""], check=True, cwd=os.path.dirname(HERE), env=env
        )
        times.append(time.perf_counter() - t0)
    print(
        f"  first query of a new process: {statistics.median(times[1:]):.2f} s "
        "(target < 1.5; median of 3 after one untimed start, start-up and model load included)"
    )


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--vocab",
        type=int,
        default=30_000,
        help="distinct words of the synthetic text (Zipfian); a tiny vocabulary makes every posting list huge",
    )
    ap.add_argument("--backend", default=None, help="query embedding backend (default: kbflow's default)")
    ap.add_argument("--recall-queries", type=int, default=200, help="queries for the ANN recall test")
    ap.add_argument(
        "--segment-rows",
        type=int,
        default=None,
        help="rows per vector-index segment (kbflow.index.search.VECTOR_SEGMENT_ROWS); with --lake, the index "
        "is dropped and rebuilt at this size",
    )
    ap.add_argument(
        "--lake",
        default=None,
        help="reuse the synthetic lake an earlier run left at this path (one size only; generation skipped, "
        "indexes brought up to date); without it each size gets a fresh lake in a temporary folder, kept",
    )
    ap.add_argument("--pdf", action="store_true", help="chunks of PDF pages, half the queries naming a file")
    ap.add_argument("--no-peer", action="store_true", help="skip LanceDB's native hybrid and the first-query timing")
    ap.add_argument(
        "--vs",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="retrieval settings (search() keywords) to time against the defaults, e.g. min_depth=200",
    )
    args = ap.parse_args()
    if args.lake and len(args.sizes) != 1:
        ap.error("--lake reuses one lake: give one size")
    return args


def synthetic_lake(args: argparse.Namespace, n: int, vocab, proj) -> Lake:
    """The lake of ``n`` synthetic chunks: the one ``--lake`` names (checked) or a fresh one, its vector index
    dropped where ``--segment-rows`` asks for other segments."""
    if args.lake:
        lake = Lake(args.lake, create=False)
        if lake.table(S.CHUNKS).count_rows() != n:
            sys.exit(f"{args.lake}: not a synthetic lake of {n} chunks")
    else:
        lake = Lake(os.path.join(tempfile.mkdtemp(prefix="kbflow-qbench-"), "lake"))
        build(lake, n, vocab, proj, pdf=args.pdf)
    if args.segment_rows:
        search_index.VECTOR_SEGMENT_ROWS = args.segment_rows
        if args.lake and lake.has_table(S.SEARCH):
            ds = lake.dataset(S.SEARCH)
            if any(ix["name"] == search_index.VECTOR_INDEX for ix in ds.list_indices()):
                ds.drop_index(search_index.VECTOR_INDEX)
    return lake


def modes(r: Retriever, queries: list[str], pdf: bool) -> None:
    """p50/p95 per mode (and the time per step), then hybrid with a scope and kind filter."""
    for mode in ("hybrid", "dense", "bm25"):
        for q in queries[:10]:
            r.search(q, k=10, mode=mode)
        lat, split = [], {}
        for q in queries:
            hits = r.search(q, k=10, mode=mode)
            lat.append(hits.latency_ms)
            for step, ms in hits.timings.items():
                split.setdefault(step, []).append(ms)
        steps = "  ".join(f"{step} {statistics.median(ms):.1f}" for step, ms in split.items())
        print(
            f"  {mode:<6} k=10  p50 {statistics.median(lat):6.1f} ms  p95 {pct(lat, 0.95):6.1f} ms  "
            f"({len(lat)} queries; median ms per step: {steps})"
        )
    lat = [r.search(q, k=10, scope="proj", kinds="pdf" if pdf else "doc").latency_ms for q in queries]
    print(f"  hybrid+filters    p50 {statistics.median(lat):6.1f} ms  p95 {pct(lat, 0.95):6.1f} ms")


def batch_rate(r: Retriever, queries: list[str]) -> None:
    """Queries/s of ``search_many`` against a loop of ``search``, median of 3 rounds."""
    rounds = []
    for _ in range(3):
        t0 = time.perf_counter()
        for q in queries:
            r.search(q, k=10)
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        r.search_many(queries, k=10)
        many = time.perf_counter() - t0
        rounds.append((len(queries) / one, len(queries) / many))
    loop, batch = statistics.median(x for x, _ in rounds), statistics.median(y for _, y in rounds)
    print(
        f"  batch: search_many {batch:6.1f} queries/s against {loop:6.1f} one by one "
        f"({batch / loop:.2f}x; hybrid, median of 3 rounds)"
    )


def ann_report(r: Retriever, proj, recall_queries: int) -> None:
    """The ANN index's segments and its recall@10 against an exact scan (where the lake has one)."""
    if r.exact:
        return
    from kbflow.retrieve.table import ANN_MIN_EF

    segments = sum(ix["name"] == search_index.VECTOR_INDEX for ix in r.dataset.list_indices())
    print(
        f"  ANN index: {segments} IVF_HNSW_SQ segments of <= {search_index.VECTOR_SEGMENT_ROWS} rows, "
        f"cosine; queried with ef = max({ANN_MIN_EF}, depth), no refine (kbflow.retrieve.table)"
    )
    recall, leg = recall_at_10(r, proj, recall_queries)
    print(f"  ANN recall@10 against an exact scan: {recall:.3f} ({recall_queries} queries; dense leg p50 {leg:.1f} ms)")


def main() -> None:
    args = parse_args()
    vocab = words, weights = vocabulary(args.vocab)
    proj = projection()
    print(f"synthetic text: {args.vocab} distinct words, Zipf-distributed; {args.queries} queries of 2-8 words")
    rng = random.Random(7)
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(2, 8))) for _ in range(args.queries)]
    if args.pdf:
        queries = [f"filing{i % 25} {q}" if i % 2 else q for i, q in enumerate(queries)]
    settings = {"retrieval": {"log_queries": False}}
    if args.backend:
        settings["backend"] = args.backend
    for n in args.sizes:
        t0 = time.perf_counter()
        lake = synthetic_lake(args, n, vocab, proj)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = sync_search_table(lake, DEFAULT_MODEL)
        indexed = time.perf_counter() - t0
        r = Retriever.open(lake, settings=settings)
        r.search("warm up the model", k=10, mode="bm25")
        r.embedder.embed_query("warm up the model")
        t0 = time.perf_counter()
        r.search("warm up the vectors", k=10, mode="dense")
        first = time.perf_counter() - t0
        dense_leg = r.exact_index.backend if r.exact else "ANN index (IVF_HNSW_SQ segments)"
        print(
            f"{n} chunks ({lake.uri}): generated in {built:.1f}s, search table + indexes in {indexed:.1f}s, "
            f"indexes: {sorted(result.indexes)}; query backend {r.query_backend}"
        )
        print(f"  dense leg: {dense_leg}; first dense query {first * 1000:.0f} ms")
        modes(r, queries, args.pdf)
        signals(r, queries)
        legs_beside(r, queries)
        if args.vs:
            versus(r, queries, args.vs)
        batch_rate(r, queries)
        if not args.no_peer:
            floor(r, queries, tempfile.mkdtemp(prefix="kbflow-qbench-lancedb-"))
            first_query(lake, args.backend)
        ann_report(r, proj, args.recall_queries)


if __name__ == "__main__":
    main()
