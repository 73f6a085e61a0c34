"""A whole PDF ingest against embedding its chunk texts alone: is the model the only slow part?

    python bench/pdf_ingest.py                        # ../shared/datasets/financebench-dev/pdfs (16 filings)
    python bench/pdf_ingest.py --pdfs DIR --backend torch
    python bench/pdf_ingest.py --lake data/eval/financebench-dev-<hash>   # then `kbflow eval` reuses that lake

In one process, on the same machine state:

1. the parser alone: every page of every PDF read as kbflow reads it
   (pdfium, ruled tables, layout; worker processes), pages per second;
2. ``kbflow ingest`` of the folder as one ``pdf`` source into a fresh lake
   (library runner: load, chunk, embed, index, checks), the model loaded before
   the clock starts, as a warm process has it;
3. embedding the same distinct chunk texts (context header and text, as the
   ingest embedded them) with the same embedder and batch size, nothing else.

Prints pages, chunks, the three times, the ratio ingest / embedding alone (goal
<= 1.25) and the peak RSS of this process and of its PDF workers.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow import schema as S  # noqa: E402
from kbflow.config import DEFAULT_BACKEND, DEFAULT_MODEL, Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.records import Source  # noqa: E402
from kbflow.sources.pdf import pool  # noqa: E402

FILINGS = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets", "financebench-dev", "pdfs")


def _peak_mib(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), MiB; 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def parse_alone(folder: str) -> tuple[int, float]:
    """(pages, seconds) of reading every page of every PDF under ``folder`` as the loader does."""
    from kbflow.sources.pdf import pdf_pages

    paths = [os.path.join(folder, name) for name in sorted(os.listdir(folder)) if name.lower().endswith(".pdf")]
    t0, pages = time.perf_counter(), 0
    for path, then in zip(paths, [*paths[1:], None]):  # the next file started early, as the loader does
        pages += sum(1 for _ in pdf_pages(path, on_error=lambda n, e: None, then=then))
    return pages, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdfs", default=FILINGS, help="a folder of PDFs")
    ap.add_argument("--backend", default=DEFAULT_BACKEND)
    ap.add_argument("--lake", default=None, help="a new lake folder to ingest into [a temporary one]")
    args = ap.parse_args()
    if args.lake and os.path.exists(args.lake):
        sys.exit(f"{args.lake}: exists; the ingest is timed into a new lake")
    if not os.path.isdir(args.pdfs):
        sys.exit(f"{args.pdfs}: no such folder (pass --pdfs)")

    from kbflow import pipeline
    from kbflow.chunk.context import embed_keys, embed_texts
    from kbflow.embed.base import get_embedder

    settings = Settings.coerce(None, model=DEFAULT_MODEL, backend=args.backend)
    embedder = get_embedder(DEFAULT_MODEL, settings.embed_batch_size, args.backend, settings.embed_threads)
    embedder.embed(["warm up"] * 8)  # the model loaded and a batch run (OpenVINO compiles), outside every clock

    pages, parse_s = parse_alone(args.pdfs)
    print(f"parser alone: {pages} pages in {parse_s:.1f} s, {pages / parse_s:.1f} pages/s", flush=True)

    lake = Lake(args.lake or os.path.join(tempfile.mkdtemp(prefix="kbflow-pdf-bench-"), "lake"))
    lake.register(Source("filings", "pdf", os.path.abspath(args.pdfs)))
    t0 = time.perf_counter()
    summary = pipeline.ingest(lake, Settings.coerce(settings, lake=lake.uri), checks=True)
    ingest_s = time.perf_counter() - t0
    report = summary.sources[0]
    print(f"kbflow ingest: {report.status}, {ingest_s:.1f} s", flush=True)

    rows = lake.scan(S.CHUNKS, [S.CHUNK_HASH, S.EMBED_HASH, S.CONTEXT, S.TEXT])
    texts = list(dict(zip(embed_keys(rows).to_pylist(), embed_texts(rows))).values())
    t0 = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = max((_peak_mib(w.proc.pid) for w in pool._workers), default=0.0)
    print(
        f"{pages} pages -> {rows.num_rows} chunks, {len(texts)} distinct texts embedded (backend {args.backend})\n"
        f"embedding those texts alone: {embed_s:.1f} s, {len(texts) / embed_s:.1f} texts/s\n"
        f"ratio ingest / embedding alone: {ingest_s / embed_s:.2f} (goal <= 1.25)\n"
        f"peak RSS: this process {rss:.0f} MiB, largest PDF worker {workers:.0f} MiB"
    )


if __name__ == "__main__":
    main()
