"""Questions about SEC filings as the SEC publishes them (inline XBRL HTML), judged by the passage that answers.

    kbflow --lake LAKE add FOLDER --type web && kbflow --lake LAKE ingest
    python bench/filing_questions.py LAKE                              # bench/filings/questions.jsonl
    python bench/filing_questions.py LAKE --text-of FOLDER             # first check each answer is in its file
    python bench/filing_questions.py LAKE --document-weight 0          # without the document signal

Each line of ``bench/filings/questions.jsonl`` is ``{"id", "text", "file",
"answers", "type"}``: a question a reader of the filing asks, the file that
answers it, strings of which one appears in the passage that answers it (the
figure as the filing prints it, ``107,556``; a phrase for a prose answer),
and ``table`` or ``prose``. A hit is right where it comes from that file and
its text holds one of the answers (whitespace collapsed). For each mode the
script prints hit@1, hit@5 and MRR@10, overall and per type.

The filings are public SEC documents (2024-2025 10-K reports of Apple,
Amazon, Alphabet, Meta, Netflix, NVIDIA, Tesla, Coca-Cola, Walmart and IBM,
Apple's 10-Q for March 2025 and AEON Biopharma's 10-Q for September
2023: IBM's and Aeon's are asked nothing and stand beside the others), taken
from the test fixtures of the dgunning/edgartools repository
(``tests/fixtures/html/<ticker>/10k/``, ``tests/fixtures/attachments/aapl/``
and ``data/xbrl/datafiles/aeon/``; the files are not kept here). Questions
written by hand by the kbflow team on 2026-11-27 while reading them.

``--questions bench/filings/figures.jsonl`` asks 16 questions of the same
filings that each state a figure in another scale or rounding than the page
("$107.6 billion" for the table cell "107,556", in millions), for the figure
words of the keyword leg (``kbflow.text.figures``).

The same judging serves any site: ``--questions bench/sphinx/requests.jsonl``
asks 16 questions over the documentation of psf/requests as Sphinx builds it
(``sphinx-build docs OUT`` in a checkout, the default theme; ``add OUT --type
web``), 9 answered by its API reference and 7 by its user guide; ``file`` is
then a page's path in the site (``user/advanced.html``).
``--questions bench/docusaurus/prettier.jsonl`` asks 16 over prettier/prettier's
``docs/*.md`` built by Docusaurus (``npx create-docusaurus@latest site classic
--javascript``, its ``docs/`` replaced by prettier's with their HTML comments
removed, as MDX refuses them, broken links and images ignored, the blog off,
``npm run build``; ``file`` is ``docs/options/index.html``), two of them
answered only in a tab that is not the chosen one (the yarn and pnpm commands).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow import Retriever  # noqa: E402

_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text)


def rank(retriever: Retriever, question: dict, mode: str, **settings: float) -> int | None:
    """The 0-based rank of the first hit from the question's file holding one of its answers (None: not in 10)."""
    answers = [_norm(a) for a in question["answers"]]
    for i, hit in enumerate(retriever.search(question["text"], k=10, mode=mode, **settings)):
        path = hit.citation.locator.path or hit.citation.uri or ""
        right = question["file"] in (path, os.path.basename(path))  # a page's path in its source, or its name
        if right and any(a in _norm(hit.text) for a in answers):
            return i
    return None


def _check(questions: list[dict], folder: str) -> None:
    """Every question's answer is in its file's text as kbflow extracts it (else the set is wrong, not kbflow)."""
    from kbflow.sources.web.extract import extract

    texts: dict[str, str] = {}
    for q in questions:
        if q["file"] not in texts:
            with open(os.path.join(folder, q["file"]), encoding="utf-8", errors="replace") as f:
                texts[q["file"]] = _norm(extract(f.read()).text)
        if not any(_norm(a) in texts[q["file"]] for a in q["answers"]):
            raise SystemExit(f"{q['id']}: none of {q['answers']} is in {q['file']}")
    print(f"every answer is in its file ({len(texts)} files)")


def _line(label: str, got: list[int | None]) -> str:
    n = len(got)
    hit1 = sum(r == 0 for r in got) / n
    hit5 = sum(r is not None and r < 5 for r in got) / n
    mrr = sum(0 if r is None else 1 / (r + 1) for r in got) / n
    return f"{label:14s} {n:3d} questions  hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  MRR@10 {mrr:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake")
    ap.add_argument("--questions", default=os.path.join(HERE, "filings", "questions.jsonl"))
    ap.add_argument("--text-of", metavar="FOLDER", help="check every answer is in its file's text first")
    ap.add_argument("--misses", action="store_true", help="list the questions hybrid misses in its top 5")
    ap.add_argument(
        "--document-weight", type=float, default=None, help="the document signal's weight (0: off; default: the lake's)"
    )
    args = ap.parse_args()
    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    if args.text_of:
        _check(questions, args.text_of)
    retriever = Retriever.open(args.lake)
    settings = {} if args.document_weight is None else {"document_weight": args.document_weight}
    print(f"{len(questions)} questions, lake {args.lake}")
    for mode in ("hybrid", "dense", "bm25"):
        got = [rank(retriever, q, mode, **settings) for q in questions]
        print(_line(mode, got))
        for kind in sorted({q["type"] for q in questions}):
            print(_line(f"  {kind}", [r for r, q in zip(got, questions, strict=True) if q["type"] == kind]))
        if args.misses and mode == "hybrid":
            for r, q in zip(got, questions, strict=True):
                if r is None or r >= 5:
                    print(f"    miss {q['id']} ({q['file']}): {q['text']}")


if __name__ == "__main__":
    main()
