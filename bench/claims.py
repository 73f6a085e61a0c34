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

With ``--relations N`` (default three per claim) it then proposes N relations
between random claims (``relate_many`` batches: entails, derived_from,
contradicts, and refines from a newer claim to an older one), opens the store
again and times, side by side on the same queries: a plain recall, a recall
``as_of`` a moment halfway through the claims' history (the record-time
replay), and a recall ``valid_at`` a date. The first ``as_of`` recall reads
the log's status changes once; that is reported apart.

    python bench/claims.py                      # 100,000 claims, the default model (onnx)
    python bench/claims.py --claims 20000 --model hash:384
    python bench/claims.py --quality            # recall quality on the hand-written set only
    python bench/claims.py --model hash:384 --relations 300000   # the relations and time axes at scale

``--quality`` learns the hand-written claims of ``data/samples/claims_recall.json``
into a memory store and prints how often each question's claim comes first, and
in the top 3 (``tests/integration/test_claims.py`` holds the same set to its figures).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
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


def relate(store: Claims, count: int, batch: int = 10_000) -> float:
    """Propose ``count`` relations between random claims of ``store``; returns relations per second."""
    from kbflow import schema as S

    rng = random.Random(5)
    rows = sorted(store.tables.claims(columns=[S.CLAIM_ID, S.CREATED_AT]), key=lambda r: r[S.CREATED_AT])
    ids = [r[S.CLAIM_ID] for r in rows]
    seen: set[tuple[str, str, str]] = set()
    items = []
    while len(items) < count:
        i, j = rng.sample(range(len(ids)), 2)
        kind = rng.choice(["entails", "derived_from", "contradicts", "refines"])
        if kind == "refines" and i < j:
            i, j = j, i  # a newer claim refines an older one: no cycle
        key = (ids[i], kind, ids[j])
        if key in seen or (kind == "contradicts" and (ids[j], kind, ids[i]) in seen):
            continue
        seen.add(key)
        items.append({"source": ids[i], "type": kind, "target": ids[j], "evidence": EVIDENCE})
    t = time.perf_counter()
    for start in range(0, len(items), batch):
        store.relate_many(items[start : start + batch])
    return count / (time.perf_counter() - t)


def time_axes(lake: str, settings: dict, qs: list[str], moment) -> dict:
    """Recall p50 plain, ``as_of`` and ``valid_at``, interleaved query by query on one reopened store."""
    store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
    store.recall("warm up the model", k=5)
    t = time.perf_counter()
    store.recall("warm up the replay", k=5, as_of=moment)  # reads the log's status changes once
    first_as_of = time.perf_counter() - t
    plain, as_of, fresh, valid = [], [], [], []
    for i, q in enumerate(qs):
        kinds = [
            (plain, {}),
            (as_of, {"as_of": moment}),
            (fresh, {"as_of": moment + timedelta(microseconds=i + 1)}),  # a moment not replayed before
            (valid, {"valid_at": "2024-06-30"}),
        ]
        for out, kw in kinds[i % 4 :] + kinds[: i % 4]:  # each kind first in turn (the query's vector is cached)
            t = time.perf_counter()
            store.recall(q, k=5, **kw)
            out.append(time.perf_counter() - t)
    return {
        "relations": len(store.relations(statuses=None)),
        "first_as_of_s": first_as_of,
        "plain_p50_ms": 1000 * pct(plain, 0.5),
        "as_of_p50_ms": 1000 * pct(as_of, 0.5),
        "fresh_as_of_p50_ms": 1000 * pct(fresh, 0.5),
        "valid_at_p50_ms": 1000 * pct(valid, 0.5),
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
    parser.add_argument("--relations", type=int, default=None, help="relations to add at the end (default 3 x claims)")
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
        moment = None
        for size in sorted({min(args.first, args.claims), args.claims}):
            while done < size:
                if moment is None and done >= args.claims // 2:
                    moment = datetime.now(UTC)  # halfway through the claims' history
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
        count = 3 * args.claims if args.relations is None else args.relations
        axes = None
        if count:
            rate = relate(store, count)
            axes = time_axes(lake, settings, qs, moment or datetime.now(UTC))
            axes["relate_per_s"] = rate
    print()
    print("| claims | bulk learn (learn_many) | open | learn p50 | verify p50 | recall p50 / p95 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['claims']:,} | {r['bulk_learn_per_s']:.0f} claims/s | {r['open_s']:.2f} s | "
            f"{r['learn_p50_ms']:.1f} ms | {r['verify_p50_ms']:.1f} ms | "
            f"{r['recall_p50_ms']:.1f} / {r['recall_p95_ms']:.1f} ms |"
        )
    if axes:
        print()
        print(f"{axes['relations']:,} relations added at {axes['relate_per_s']:.0f}/s (relate_many, 10,000 a batch)")
        print("| recall on the store with relations | p50 |")
        print("| --- | --- |")
        print(f"| plain | {axes['plain_p50_ms']:.1f} ms |")
        first = f"first call {axes['first_as_of_s']:.2f} s"
        print(f"| as_of halfway, one moment ({first}) | {axes['as_of_p50_ms']:.1f} ms |")
        print(f"| as_of halfway, a new moment each query | {axes['fresh_as_of_p50_ms']:.1f} ms |")
        print(f"| valid_at a date | {axes['valid_at_p50_ms']:.1f} ms |")
        print(
            f"as_of / plain: {axes['as_of_p50_ms'] / axes['plain_p50_ms']:.2f}x one moment, "
            f"{axes['fresh_as_of_p50_ms'] / axes['plain_p50_ms']:.2f}x a new moment each query"
        )


if __name__ == "__main__":
    main()
