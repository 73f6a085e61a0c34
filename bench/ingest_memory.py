"""Peak memory of an ingest at several corpus sizes, to show it does not grow with the corpus.

Each size runs in a fresh process (peak RSS is per process): the first N records
of CoSQA from ../shared/datasets (or generated records) ingested by the library
pipeline's steps, printing the peak so far after each step. The default model is ``hash:384`` (same vector size as MiniLM, no
torch activations), which isolates kbflow's own memory: loading, chunking, the
streamed vector writes and the search-table sync. Pass ``--model`` to include
a real model (its activations grow with the longest batch of texts).

Past the 6,267 CoSQA records the corpus is padded with generated records.

    python bench/ingest_memory.py [--sizes 1500 6000 20000 200000] [--model hash:384]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COSQA = os.path.join(ROOT, "..", "shared", "datasets", "cosqa", "corpus.jsonl")


def child(n: int, model: str) -> None:
    sys.path.insert(0, ROOT)
    from kbflow import pipeline
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.records import Source

    tmp = tempfile.mkdtemp(prefix="kbflow-mem-")
    corpus = os.path.join(tmp, "corpus.jsonl")
    with open(corpus, "w") as out:
        written = 0
        if os.path.exists(COSQA):
            with open(COSQA) as src:
                for line in src:
                    if written >= n:
                        break
                    out.write(line)
                    written += 1
        while written < n:
            out.write(json.dumps({"_id": f"g{written}", "text": f"generated record {written} " * 20}) + "\n")
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
    index = pipeline.finish_index(lake, settings)
    steps["index"] = peak()
    print(json.dumps({"records": n, "chunks": index.rows, "peak_rss_mib": steps}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1500, 6000, 20000, 200000])
    ap.add_argument("--model", default="hash:384")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.model)
        return
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    print(f"model {args.model}; one fresh process per size")
    for n in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n), "--model", args.model], capture_output=True, text=True, env=env
        )
        if out.returncode:
            sys.exit(out.stderr[-2000:])
        row = json.loads(out.stdout.strip().splitlines()[-1])
        steps = "  ".join(f"{k} {v}" for k, v in row["peak_rss_mib"].items())
        print(f"  {row['records']:>6} records  {row['chunks']:>6} chunks  peak RSS (MiB) after each step: {steps}")


if __name__ == "__main__":
    main()
