"""Claims store throughput: learn and recall at 1,000 and at 100,000 claims, on a real lake.

Claim texts are real sentences: the Cranfield abstracts and the CoSQA code
queries of ``../shared/datasets`` (split, deduplicated; past the pool's size
a sentence comes back with a numbered suffix). Queries are the datasets'
own queries. The store is filled in ``learn_many`` batches (the bulk path:
one embedding batch and three commits per batch); at each measured size it
times, on that store:

- ``open``: a cold ``Claims.open`` (reads every claim and its vector);
- ``learn``: one ``learn`` (embed one text, three commits), median of 30;
- ``verify``: one transition (two commits, no model), median of 30;
- ``recall``: one ``recall(q, k=5)`` (embed the query, both legs, fusion), p50 / p95 of 200.

    python bench/claims.py                      # 100,000 claims, the default model (onnx)
    python bench/claims.py --claims 20000 --model hash:384
    python bench/claims.py --quality            # recall quality on the hand-written set only

``--quality`` learns the hand-written claims of ``data/samples/claims_recall.json``
into a memory store and prints how often each question's claim comes first, and
in the top 3 (``tests/integration/test_claims.py`` holds the same set to its figures).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from kbflow import Claims, Evidence

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
EVIDENCE = [Evidence.url("https://example.com/source", "a quote")]


def sentences(limit: int) -> tuple[list[str], int]:
    """``limit`` claim texts (and how many distinct sentences the pool held)."""
    pool: dict[str, None] = {}
    cran = DATASETS / "cranfield" / "corpus.jsonl"
    if cran.exists():
        for line in cran.open():
            for s in re.split(r"(?<=[.;])\s+", json.loads(line)["text"]):
                s = " ".join(s.split())
                if 30 <= len(s) <= 300:
                    pool[s] = None
    for name in ("cosqa/queries.jsonl", "cosqa/queries.dev.jsonl"):
        path = DATASETS / name
        if path.exists():
            for line in path.open():
                s = json.loads(line)["text"].strip()
                if len(s) >= 15:
                    pool[s] = None
    if not pool:
        raise SystemExit(f"no sentences found under {DATASETS}")
    distinct = list(pool)
    out = [distinct[i % len(distinct)] + (f" (finding {i // len(distinct)})" if i >= len(distinct) else "")
           for i in range(limit)]  # fmt: skip
    return out, len(distinct)


def queries(n: int) -> list[str]:
    out: list[str] = []
    for name in ("cranfield/queries.jsonl", "cosqa/queries.jsonl"):
        path = DATASETS / name
        if path.exists():
            out.extend(json.loads(line)["text"] for line in list(path.open())[: n // 2])
    return out[:n]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(lake: str, settings: dict, qs: list[str], size: int) -> dict:
    t = time.perf_counter()
    store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
    opened = time.perf_counter() - t
    assert len(store) == size, (len(store), size)
    store.recall("warm up the model", k=5)
    learn, verify = [], []
    for i in range(30):
        t = time.perf_counter()
        cid = store.learn(f"a single claim learned at {size} claims, number {i}", EVIDENCE)
        learn.append(time.perf_counter() - t)
        t = time.perf_counter()
        store.verify(cid, by=("user", "bench"))
        verify.append(time.perf_counter() - t)
    recall = []
    for q in qs:
        t = time.perf_counter()
        store.recall(q, k=5)
        recall.append(time.perf_counter() - t)
    return {
        "claims": size,
        "open_s": opened,
        "learn_p50_ms": 1000 * statistics.median(learn),
        "verify_p50_ms": 1000 * statistics.median(verify),
        "recall_p50_ms": 1000 * pct(recall, 0.5),
        "recall_p95_ms": 1000 * pct(recall, 0.95),
    }


def quality(model: str | None) -> None:
    data = json.loads((Path(__file__).resolve().parents[1] / "data" / "samples" / "claims_recall.json").read_text())
    store = Claims.memory(model=model, actor=("agent", "bench"))
    ids = {key: store.learn(text, EVIDENCE) for key, text in data["claims"].items()}
    top1 = top3 = 0
    for query, key in data["queries"].items():
        found = [h.claim.claim_id for h in store.recall(query, k=3)]
        top1 += found[:1] == [ids[key]]
        top3 += ids[key] in found
    n = len(data["queries"])
    print(f"recall on the hand-written set ({store.model_id}): first {top1}/{n}, top 3 {top3}/{n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=100_000, help="the store's final size")
    parser.add_argument("--first", type=int, default=1_000, help="the smaller size measured on the way")
    parser.add_argument("--batch", type=int, default=1_000, help="claims per learn_many call")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model", default=None, help="embedding model (default: kbflow's default, on onnx)")
    parser.add_argument("--quality", action="store_true", help="only the recall quality on the hand-written set")
    args = parser.parse_args()
    if args.quality:
        quality(args.model)
        return

    settings = {"model": args.model} if args.model else {}
    texts, distinct = sentences(args.claims)
    qs = queries(args.queries)
    print(f"{args.claims:,} claim texts ({distinct:,} distinct sentences), {len(qs)} queries")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kbflow-claims-bench-") as tmp:
        lake = str(Path(tmp) / "lake")
        store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
        print(f"model {store.model_id}")
        done, bulk_s, extra = 0, 0.0, 0
        for size in sorted({min(args.first, args.claims), args.claims}):
            while done < size:
                part = texts[done : min(size, done + args.batch)]
                t = time.perf_counter()
                store.learn_many({"text": text, "evidence": EVIDENCE} for text in part)
                bulk_s += time.perf_counter() - t
                done += len(part)
            row = measure(lake, settings, qs, size + extra)
            extra += 30  # the single learns measured stay in the store
            row["bulk_learn_per_s"] = done / bulk_s
            rows.append(row)
            store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
    print()
    print("| claims | bulk learn (learn_many) | open | learn p50 | verify p50 | recall p50 / p95 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['claims']:,} | {r['bulk_learn_per_s']:.0f} claims/s | {r['open_s']:.2f} s | "
            f"{r['learn_p50_ms']:.1f} ms | {r['verify_p50_ms']:.1f} ms | "
            f"{r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f} ms |"
        )


if __name__ == "__main__":
    main()
