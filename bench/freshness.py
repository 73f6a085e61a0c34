"""Re-ingest cost after a one-line edit, next to the full ingest, in the same run.

Writes a folder of >= 1,000 Markdown documents (Cranfield abstracts from
../shared/datasets when present, else generated text), registers it as a docs
source, ingests it through the Dagster assets (`kbflow ingest`'s path, default
model), edits one line of one document, re-ingests, and prints the chunks
re-embedded, both wall times and their ratio (target: re-ingest <= 5% of the
full ingest, and only the changed chunk embedded). Then re-ingests with no
change at all (the fingerprint short-circuit).

    python bench/freshness.py [--docs 1000] [--repeat 5] [--model MODEL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow.config import DEFAULT_MODEL, Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.records import Source  # noqa: E402

CRANFIELD = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets", "cranfield", "corpus.jsonl")


def write_corpus(folder: str, n: int) -> None:
    records = []
    if os.path.exists(CRANFIELD):
        with open(CRANFIELD) as fh:
            records = [json.loads(line) for line in fh if line.strip()][:n]
    words = "lake chunk vector index query rank fusion model token embed source table version citation".split()
    while len(records) < n:
        i = len(records)
        records.append({"title": f"Doc {i}", "text": " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(120))})
    for i, rec in enumerate(records):
        title = (rec.get("title") or f"Document {i}").strip() or f"Document {i}"
        text = rec["text"].strip()
        half = len(text) // 2
        cut = text.find(" ", half)
        first, second = (text[:cut], text[cut + 1 :]) if cut > 0 else (text, "")
        body = f"# {title}\n\n## Abstract\n\n{first}\n\n## Discussion\n\n{second or first}\n"
        with open(os.path.join(folder, f"doc{i:05d}.md"), "w") as fh:
            fh.write(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--repeat", type=int, default=5, help="one-line edits to time (median reported)")
    args = ap.parse_args()
    from kbflow.pipeline import run_ingest

    root = tempfile.mkdtemp(prefix="kbflow-fresh-")
    folder = os.path.join(root, "docs")
    os.makedirs(folder)
    write_corpus(folder, args.docs)
    lake = Lake(os.path.join(root, "lake"))
    lake.register(Source("corpus", "docs", folder))
    settings = Settings.coerce(None, lake=lake.uri, model=args.model)

    t0 = time.perf_counter()
    full = run_ingest(settings).to_dict()
    full_s = time.perf_counter() - t0
    chunks = full["sources"][0]["chunks_added"]

    edits, embedded = [], []
    for n in range(args.repeat):  # one line of a different document each time
        path = os.path.join(folder, f"doc{(args.docs // 2 + 37 * n) % args.docs:05d}.md")
        with open(path) as fh:
            lines = fh.read().split("\n")
        lines[4] = lines[4] + f" This one line was edited ({n})."
        with open(path, "w") as fh:
            fh.write("\n".join(lines))
        t0 = time.perf_counter()
        again = run_ingest(settings).to_dict()
        edits.append(time.perf_counter() - t0)
        embedded.append(again["sources"][0]["chunks_embedded"])
    edit_s = statistics.median(edits)
    t0 = time.perf_counter()
    noop = run_ingest(settings).to_dict()
    noop_s = time.perf_counter() - t0

    src = again["sources"][0]
    print(f"corpus: {args.docs} documents -> {chunks} chunks (model {args.model})")
    print(f"full ingest:                  {full_s:8.2f} s")
    print(
        f"re-ingest after 1-line edit:  {edit_s:8.2f} s   (median of {len(edits)} edits; chunks embedded per edit "
        f"{embedded}; last: added {src['chunks_added']}, removed {src['chunks_removed']}, status {src['status']})"
    )
    print(f"re-ingest, nothing changed:   {noop_s:8.2f} s   status {noop['sources'][0]['status']}")
    print(f"ratio edit / full: {edit_s / full_s:.3f}  (target <= 0.05)")
    checks = all(c["passed"] for c in again["checks"]) and all(c["passed"] for c in noop["checks"])
    print(f"checks passed: {checks}")


if __name__ == "__main__":
    main()
