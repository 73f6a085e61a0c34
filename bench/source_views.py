"""An API reference as its package ships it, with and without the generator's views of source files.

Javadoc writes every class's source again as a page (``src-html/``), rustdoc
writes ``src/`` beside every crate ``cargo doc`` documents, Doxygen writes
``*_source.html``, Sphinx's viewcode ``_modules/``: the code again, beside
each member's entry. kbflow leaves them out
(:mod:`kbflow.sources.web.conventions`); ``--all-pages`` keeps them. This
bench ingests one such folder twice, into two fresh lakes under ``--root``:
every page kept (``all_pages``), then as kbflow reads it by default, and
prints for each the pages loaded, the chunks, the ingest time and, where a
question set of ``bench/apisites`` is named, the gold member in the top 3
and the hits in the top 5s that are a source view.

    apt-get install libcommons-lang3-java-doc
    python bench/source_views.py /usr/share/doc/libcommons-lang3-java/api --set commons-lang3

The set's gold members are named by page and member (``ArrayUtils.html#indexOf``);
a hit counts where its page path ends with the gold's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import api_eval  # noqa: E402

from kbflow import Lake, Retriever, pipeline  # noqa: E402
from kbflow import schema as S  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.records import Source  # noqa: E402
from kbflow.sources.web.conventions import ALL_PAGES_OPTION  # noqa: E402

#: path parts of the generators' source views
SOURCE_VIEWS = ("src-html/", "src/", "_source.html", "_modules/")


def is_source_view(path: str) -> bool:
    """Whether a page's path is one of the generators' source views."""
    return any(part in path for part in SOURCE_VIEWS)


def measure(folder: str, lake_uri: str, all_pages: bool, questions) -> dict:
    """Ingest ``folder`` into a fresh lake at ``lake_uri`` (every page where ``all_pages``) and measure it."""
    shutil.rmtree(lake_uri, ignore_errors=True)
    settings = Settings.coerce(None, lake=lake_uri)
    lake = Lake(lake_uri)
    lake.register(Source("ref", "web", folder, options={ALL_PAGES_OPTION: True} if all_pages else {}))
    t0 = time.perf_counter()
    pipeline.ingest(lake, settings, progress=False)
    seconds = time.perf_counter() - t0
    quiet = replace(settings, retrieval=settings.retrieval.override(log_queries=False))
    retriever = Retriever.open(lake, settings=quiet)
    row = {"pages": lake.dataset(S.DOCUMENTS).count_rows(), "chunks": retriever.rows, "seconds": seconds}
    if questions is not None:
        queries, qrels = questions
        top3 = views = 0
        for qid, text in queries.items():
            gold = {d for d, g in qrels[qid].items() if g > 0}
            hits = retriever.search(text, k=5)
            members = [api_eval.member_of(h) for h in hits]
            right = [any(m == g or m.endswith("/" + g) for g in gold) for m in members]
            top3 += any(right[:3])
            views += sum(is_source_view(h.citation.locator.path or "") for h in hits)
        row.update(top3=top3, questions=len(queries), views=views)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="a generated API reference (a folder of HTML)")
    ap.add_argument("--set", default=None, help="a question set of bench/apisites to ask (commons-lang3, ...)")
    ap.add_argument("--root", default=os.path.join("data", "eval"), help="where the two lakes are made")
    args = ap.parse_args()
    if not os.path.isdir(args.folder):
        sys.exit(f"{args.folder}: no such folder (apt-get install libcommons-lang3-java-doc)")
    questions = api_eval.load_set(args.set)[1:] if args.set else None
    for label, all_pages in (("every page (--all-pages)", True), ("source views left out", False)):
        row = measure(args.folder, os.path.join(args.root, f"source-views-{int(all_pages)}"), all_pages, questions)
        line = f"{label:26s} {row['pages']:6,} pages {row['chunks']:8,} chunks  ingest {row['seconds']:6.1f} s"
        if questions is not None:
            line += (
                f" | gold member in top 3 {row['top3']}/{row['questions']}, source-view hits in the top 5s "
                f"{row['views']}"
            )
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
