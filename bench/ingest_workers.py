"""Ingest wall time of 4 sources with 1 and with 2 worker processes (`kbflow ingest --workers N`), side by side.

The 4 sources are 4 slices of the CoSQA corpus of ``../shared/datasets`` (JSONL
record sets, 1,500 records each by default), ingested into fresh lakes
through the Dagster runner with the default model (onnx), the model load
included. Runs alternate (1, 2, 1, 2, ...) and the medians are reported, with
the time the search index took to publish (serial in both) and the
per-source cost, and from them the projected wall time on W workers with W
cores each: publish + ceil(4 / W) x per-source cost.

    python bench/ingest_workers.py [--records 1500] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow.config import Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.pipeline import run_ingest  # noqa: E402
from kbflow.records import Source  # noqa: E402

CORPUS = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets", "cosqa", "corpus.jsonl")


def slices(tmp: str, records: int) -> list[str]:
    if not os.path.exists(CORPUS):
        raise SystemExit(f"{CORPUS}: not found (the shared datasets)")
    with open(CORPUS, encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(4 * records), fh, strict=False)]
    paths = []
    for n in range(4):
        path = os.path.join(tmp, f"part{n}.jsonl")
        with open(path, "w", encoding="utf-8") as out:
            for row in rows[n * records : (n + 1) * records]:
                out.write(json.dumps(row) + "\n")
        paths.append(path)
    return paths


def ingest(tmp: str, paths: list[str], workers: int, tag: str) -> tuple[float, float, int]:
    lake = Lake(os.path.join(tmp, f"lake-{tag}"))
    for n, path in enumerate(paths):
        lake.register(Source(f"part{n}", "jsonl", path))
    t = time.perf_counter()
    summary = run_ingest(Settings.coerce(None, lake=lake.uri), runner="dagster", workers=workers, checks=False)
    wall = time.perf_counter() - t
    assert summary.ok, summary.to_dict()
    chunks = sum(s.chunks_added for s in summary.sources)
    return wall, float(summary.index.seconds), chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1500, help="records per source")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, alternating")
    args = parser.parse_args()
    times: dict[int, list[float]] = {1: [], 2: []}
    publish: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kbflow-workers-") as tmp:
        paths = slices(tmp, args.records)
        for r in range(args.rounds):
            for workers in (1, 2) if r % 2 == 0 else (2, 1):
                wall, index_s, chunks = ingest(tmp, paths, workers, f"{r}-{workers}")
                times[workers].append(wall)
                publish.append(index_s)
                print(f"round {r + 1}: {workers} worker(s): {wall:.1f} s ({chunks:,} chunks, index {index_s:.1f} s)")
    one, two = statistics.median(times[1]), statistics.median(times[2])
    pub = statistics.median(publish)
    per_source = (one - pub) / 4
    print()
    print(f"4 sources x {args.records:,} records, {os.cpu_count()} cores; medians of {args.rounds} runs each")
    print(f"1 worker: {one:.1f} s; 2 workers: {two:.1f} s; speed-up {one / two:.2f}x")
    print(f"publish (search index): {pub:.1f} s; per-source cost with 1 worker: {per_source:.1f} s")
    for w in (1, 2, 4, 8):
        print(f"projected, {w} workers with {w} x these cores: {pub + math.ceil(4 / w) * per_source:.1f} s")


if __name__ == "__main__":
    main()
