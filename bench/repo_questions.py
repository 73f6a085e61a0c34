"""Questions about a repository nobody here wrote, judged by the file that answers them.

    python bench/repo_questions.py LAKE bench/repos/okio.jsonl

``LAKE`` holds the repository as a source (``kbflow add DIR --type repo`` then
``kbflow ingest``); each line of the questions file is ``{"text", "files"}``,
``files`` the base names of the files that answer it. For each mode the script
prints hit@1, hit@5 and MRR@10 over the first distinct files of the ranking;
``--option KEY=VALUE`` passes a search option (``--option role_weight=0``).
The question sets, and the public repositories they are about (checkouts are
not kept here):

- ``bench/repos/okio.jsonl``: 20 questions about square/okio (Kotlin);
- ``bench/repos/pdsh.jsonl``: 35 questions about the notebooks folder of
  jakevdp/PythonDataScienceHandbook.

Written by hand by the kbflow team on 2026-11-26 while reading those
repositories; only questions and file names are in this folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow import Retriever  # noqa: E402


def ranks(retriever: Retriever, questions: list[dict], mode: str, options: dict | None = None) -> list[int | None]:
    """The 0-based rank of each question's first right file among the first 10 distinct files (None: not there)."""
    out = []
    for q in questions:
        files: list[str] = []
        for hit in retriever.search(q["text"], k=50, mode=mode, **(options or {})):
            name = os.path.basename(hit.citation.locator.path or "")
            if name not in files:
                files.append(name)
        out.append(next((i for i, f in enumerate(files[:10]) if f in q["files"]), None))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake")
    ap.add_argument("questions")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a search option (a number)")
    args = ap.parse_args()
    options = {key: float(value) for key, value in (kv.split("=", 1) for kv in args.option)}
    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8") if line.strip()]
    retriever = Retriever.open(args.lake)
    print(f"{len(questions)} questions, lake {args.lake}" + "".join(f", {k}={v:g}" for k, v in options.items()))
    for mode in ("hybrid", "dense", "bm25"):
        got = ranks(retriever, questions, mode, options)
        n = len(got)
        hit1 = sum(r == 0 for r in got) / n
        hit5 = sum(r is not None and r < 5 for r in got) / n
        mrr = sum(0 if r is None else 1 / (r + 1) for r in got) / n
        print(f"{mode:7s} hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  MRR@10 {mrr:.3f}")


if __name__ == "__main__":
    main()
