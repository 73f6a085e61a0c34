"""Peak memory of an ingest at several corpus sizes, to show it does not grow with the corpus.

Each size runs in a fresh process (peak RSS is per process): the first N records
of CoSQA from ../shared/datasets (or generated records) ingested by the library
pipeline's steps, printing the peak so far after each step: load, chunk,
embed, then the search-table sync in two parts, writing its rows ("rows") and
Lance building its indexes ("index"). The default model is ``hash:384`` (same
vector size as MiniLM, no torch activations), which isolates kbflow's own
memory. Pass ``--model`` to include a real model (its activations grow with the
longest batch of texts).

Past the 6,267 CoSQA records the corpus is padded with generated records, each
two CoSQA texts joined (a different pair every time), so their chunks and
vectors are as varied as real ones. (Near-identical padding would give
near-identical vectors, a pathological input for the HNSW graph Lance builds
from 250k rows.)

From 250,000 chunks the search table also gets its ANN vector index
(kbflow.index.search.VECTOR_INDEX_MIN_ROWS), built one segment of at most
VECTOR_SEGMENT_ROWS rows at a time, so its build holds one segment's vectors,
not the table's. Like ``kbflow ingest``, each process first caps glibc's malloc
arenas (kbflow.lake.malloc); ``--default-malloc`` leaves them at glibc's
default, to compare.

    python bench/ingest_memory.py [--sizes 1500 20000 60000 200000 300000] [--model hash:384] [--default-malloc]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COSQA = os.path.join(ROOT, "..", "shared", "datasets", "cosqa", "corpus.jsonl")


def child(n: int, model: str, default_malloc: bool) -> None:
    sys.path.insert(0, ROOT)
    if not default_malloc:
        from kbflow.lake.malloc import limit_malloc_arenas

        limit_malloc_arenas()  # first, as the CLI and the Dagster code location do
    tmp = tempfile.mkdtemp(prefix="kbflow-mem-")
    try:
        _measure(tmp, n, model)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(tmp: str, n: int, model: str) -> None:
    from kbflow import pipeline
    from kbflow.config import Settings
    from kbflow.index import search
    from kbflow.lake import Lake
    from kbflow.records import Source

    corpus = os.path.join(tmp, "corpus.jsonl")
    texts: list[str] = []
    with open(corpus, "w") as out:
        if os.path.exists(COSQA):
            with open(COSQA) as src:
                for line in src:
                    if len(texts) >= n:
                        break
                    out.write(line)
                    texts.append(json.loads(line)["text"])
        written = len(texts)
        while written < n:
            if texts:  # a different pair of real texts each time
                text = texts[written % len(texts)] + "\n" + texts[(written + written // len(texts) + 1) % len(texts)]
            else:
                text = " ".join(f"w{(written * 31 + j * 17) % 5003}" for j in range(40))
            out.write(json.dumps({"_id": f"g{written}", "text": text}) + "\n")
            written += 1
    lake = Lake(os.path.join(tmp, "lake"))
    lake.register(Source("corpus", "jsonl", corpus))
    settings = Settings.coerce(None, lake=lake.uri, model=model)

    def peak() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

    # the steps of pipeline.ingest, with the peak so far after each
    steps = {"start": peak()}
    pipeline.load_source(lake, "corpus")
    steps["load"] = peak()
    pipeline.chunk_source(lake, "corpus", settings)
    steps["chunk"] = peak()
    pipeline.embed_source(lake, "corpus", settings)
    steps["embed"] = peak()
    # the search-table sync, split: writing its rows ("rows"), then Lance building the indexes ("index")
    build_indexes = search.ensure_indexes

    def timed_build(table) -> None:
        steps["rows"] = peak()
        build_indexes(table)

    search.ensure_indexes = timed_build
    index = pipeline.finish_index(lake, settings)
    steps["index"] = peak()
    print(json.dumps({"records": n, "chunks": index.rows, "peak_rss_mib": steps}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1500, 20000, 60000, 200000, 300000])
    ap.add_argument("--model", default="hash:384")
    ap.add_argument("--default-malloc", action="store_true", help="leave glibc's malloc arenas at its default")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.model, args.default_malloc)
        return
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    arenas = "glibc's default malloc arenas" if args.default_malloc else "malloc arenas capped"
    print(f"model {args.model}; {arenas}; one fresh process per size")
    for n in args.sizes:
        flags = ["--default-malloc"] if args.default_malloc else []
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n), "--model", args.model, *flags],
            capture_output=True,
            text=True,
            env=env,
        )
        if out.returncode:
            sys.exit(out.stderr[-2000:])
        row = json.loads(out.stdout.strip().splitlines()[-1])
        steps = "  ".join(f"{k} {v}" for k, v in row["peak_rss_mib"].items())
        print(f"  {row['records']:>6} records  {row['chunks']:>6} chunks  peak RSS (MiB) after each step: {steps}")


if __name__ == "__main__":
    main()
