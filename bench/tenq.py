"""A second filings set, so that financebench-dev is not tuned alone: 24 questions over twenty 10-Q filings.

    git clone https://github.com/docugami/KG-RAG-datasets /tmp/kg-rag-datasets
    python bench/tenq.py --from /tmp/kg-rag-datasets     # its sec-10-q PDFs into bench/filings/tenq/pdfs
    kbflow eval bench/filings/tenq --mode all            # hit@5 by page, as for financebench-dev

The filings are the twenty quarterly reports (Form 10-Q, as PDFs) that
docugami/KG-RAG-datasets (MIT) keeps under ``sec-10-q/data/v1/docs``: Apple,
Amazon, Intel, Microsoft and NVIDIA, four quarters each from mid 2022 to late
2023. Each is copied under a FinanceBench-style name that says its company
and fiscal quarter (``NVIDIA_2024Q2_10Q``: the quarter ended July 30, 2023)
and checked against ``bench/filings/tenq/SHA256SUMS``.

``bench/filings/tenq/questions.jsonl`` is written here, in FinanceBench's
format: each question names a company and a period, four quarters of the same
company share its vocabulary, and the figures are asked as a reader asks them
("in billions", "the quarter ended March 31, 2023", "the second quarter of
fiscal 2024"). Each is judged by every page that states its answer (0-based
``evidence_page_num``): the statement, the note and the MD&A page that repeat a
figure all count. The set's questions are not docugami's (theirs are judged
by document, not page).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SET = os.path.join(HERE, "filings", "tenq")
#: where the clone keeps the PDFs
DOCS = os.path.join("sec-10-q", "data", "v1", "docs")


def sums() -> list[tuple[str, str, str]]:
    """``(sha256, name in the set, name in the clone)`` for each filing."""
    out = []
    with open(os.path.join(SET, "SHA256SUMS"), encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                digest, name, original = line.rstrip("\n").split("  ", 2)
                out.append((digest, name, original))
    return out


def build(clone: str) -> int:
    """Copy and check the filings; the number copied."""
    pdfs = os.path.join(SET, "pdfs")
    os.makedirs(pdfs, exist_ok=True)
    copied = 0
    for digest, name, original in sums():
        source = os.path.join(clone, DOCS, original)
        if not os.path.isfile(source):
            raise SystemExit(f"{source}: not found; is {clone} a clone of docugami/KG-RAG-datasets?")
        with open(source, "rb") as fh:
            found = hashlib.sha256(fh.read()).hexdigest()
        if found != digest:
            raise SystemExit(f"{source}: SHA-256 {found}, expected {digest}")
        shutil.copyfile(source, os.path.join(pdfs, name))
        copied += 1
    return copied


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="clone", required=True, help="a clone of docugami/KG-RAG-datasets")
    args = parser.parse_args()
    n = build(args.clone)
    print(f"{n} filings in {os.path.join(SET, 'pdfs')}; now: kbflow eval {os.path.relpath(SET)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
