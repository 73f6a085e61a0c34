"""PDF parsing alone, pages per second: kbflow's parser (pdfium words and the paths of ruled tables) against
pdfplumber on every page (its words and its table finder over pdfminer, what kbflow did before), side by side.

    python bench/pdf_parse.py                                   # the PDFs of bench/pdfpages, 3 rounds
    python bench/pdf_parse.py ../shared/datasets/financebench-dev/pdfs --pages 40 --rounds 1

Both sides parse the same pages in this process, one after the other, each
round; medians over the rounds are printed with their ratio, and the tables
each side found.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow.sources.pdf.parse import Document, parse_page  # noqa: E402
from kbflow.sources.pdf.pdfium import X_TOLERANCE_RATIO  # noqa: E402


def _default_files() -> list[str]:
    spec = json.load(open(os.path.join(HERE, "pdfpages", "sources.json")))
    return [os.path.normpath(os.path.join(HERE, "pdfpages", s["path"])) for s in spec["sources"]]


def pdfplumber_pages(path: str, pages: int) -> tuple[int, int]:
    """The parser before: pdfplumber's words and table finder on every page; (pages, tables)."""
    import pdfplumber

    tables = 0
    with pdfplumber.open(path) as pdf:
        for page in pdf.pages[:pages]:
            page.extract_words(x_tolerance_ratio=X_TOLERANCE_RATIO, y_tolerance=3)
            tables += len(page.find_tables())
            page.flush_cache()
        return min(pages, len(pdf.pages)), tables


def kbflow_pages(path: str, pages: int) -> tuple[int, int]:
    """The parser now; (pages, tables)."""
    doc = Document(path)
    try:
        n = min(pages, len(doc))
        return n, sum(len(parse_page(doc, number)["tables"]) for number in range(1, n + 1))
    finally:
        doc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="PDF files or folders (default: the PDFs of bench/pdfpages)")
    parser.add_argument("--pages", type=int, default=60, help="first N pages of each file [60]")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files: list[str] = []
    for p in args.paths or _default_files():
        files += sorted(glob.glob(os.path.join(p, "*.pdf"))) if os.path.isdir(p) else [p]
    files = [f for f in files if os.path.exists(f)]
    if not files:
        sys.exit("no PDFs found; pass PDF files or folders")
    before, after = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        now = [kbflow_pages(f, args.pages) for f in files]
        after.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        then = [pdfplumber_pages(f, args.pages) for f in files]
        before.append(time.perf_counter() - t0)
    pages = sum(n for n, _ in now)
    b, a = statistics.median(before), statistics.median(after)
    print(f"{len(files)} PDFs, {pages} pages (first {args.pages} of each), {args.rounds} rounds, one process")
    print(f"pdfplumber (words + table finder over pdfminer): {pages / b:7.1f} pages/s  median {b:6.2f} s  "
          f"{sum(t for _, t in then)} tables")  # fmt: skip
    print(f"kbflow (pdfium words + ruled tables from paths): {pages / a:7.1f} pages/s  median {a:6.2f} s  "
          f"{sum(t for _, t in now)} tables")  # fmt: skip
    print(f"speed-up: {b / a:.1f}x")


if __name__ == "__main__":
    main()
