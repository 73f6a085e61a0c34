"""Per-loader figures on the real files in ../shared/datasets: units, chunks, citation round-trips, speed.

For every PDF and saved web page there: load it, chunk it, and re-read every
chunk through ``kbflow.resolve``, counting the chunks whose text comes back
exactly. PDFs also check every chunk's regions (each word of the chunk inside
one, no other word of the page wholly inside one: ``regions``), the mean
number of boxes per chunk, seconds per page and how many pages had repeated
header/footer lines dropped; web pages report word-set recall and precision
of the extracted text against the reference extractor's ``expected.html``.

Code folders (``--code DIR...``, this repo by default) report, per language,
files, chunks, round-trips and the share of chunks named by a symbol or key
path.

    python bench/loaders.py [--only pdf|web|code] [--code DIR ...]
"""

from __future__ import annotations

import argparse
import glob
import html
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "datasets")
sys.path.insert(0, ROOT)

from kbflow.chunk.base import chunk_unit  # noqa: E402
from kbflow.chunk.layout import check_regions  # noqa: E402
from kbflow.records import Citation, Source  # noqa: E402
from kbflow.retrieve.resolver import resolve  # noqa: E402
from kbflow.sources.base import get_loader  # noqa: E402


def run(source_type: str, path: str):
    source = Source("bench", source_type, path)
    t0 = time.perf_counter()
    units = list(get_loader(source_type).load(source))
    seconds = time.perf_counter() - t0
    chunks = [c for u in units for c in chunk_unit(u)]
    ok = sum(resolve(Citation(source.source_id, source_type, path, c.locator)) == c.text for c in chunks)
    return units, chunks, ok, seconds


def pdfs() -> None:
    files = sorted(glob.glob(os.path.join(SHARED, "pdfs", "*.pdf")))
    totals = [0, 0, 0, 0.0, 0, 0]
    print(
        f"{'pdf':44s} {'pages':>5s} {'chunks':>6s} {'round-trip':>10s} {'regions':>9s} {'boxes':>5s} "
        f"{'s/page':>6s} {'dropped on':>10s}"
    )
    for path in files:
        units, chunks, ok, seconds = run("pdf", path)
        layouts = {u.unit_hash: json.loads(u.layout) for u in units}
        dropped = sum(1 for lay in layouts.values() if lay["dropped"])
        exact = sum(
            check_regions(layouts[c.unit_hash], c.locator.char_start, c.locator.char_end, c.locator.regions) == (0, 0)
            for c in chunks
        )
        boxes = sum(len(c.locator.regions) for c in chunks)
        print(
            f"{os.path.basename(path)[:44]:44s} {len(units):5d} {len(chunks):6d} {ok:>5d}/{len(chunks):<4d} "
            f"{exact:>4d}/{len(chunks):<4d} {boxes / max(1, len(chunks)):5.1f} "
            f"{seconds / max(1, len(units)):6.2f} {dropped:>4d} pages"
        )
        for i, v in enumerate((len(units), len(chunks), ok, seconds, exact, boxes)):
            totals[i] += v
    pages, n, ok, seconds, exact, boxes = totals
    print(
        f"{len(files)} PDFs, {pages} pages, {n} chunks, round-trip {ok}/{n} = {ok / max(1, n):.1%}, "
        f"regions exact {exact}/{n} = {exact / max(1, n):.1%} ({boxes / max(1, n):.2f} boxes per chunk), "
        f"{seconds / max(1, pages):.3f} s/page overall"
    )


def words(text: str) -> set[str]:
    return set(html.unescape(re.sub(r"<[^>]+>", " ", text)).lower().split())


def web() -> None:
    dirs = sorted(glob.glob(os.path.join(SHARED, "html", "*", "source.html")))
    total, total_ok = 0, 0
    print(f"{'page':18s} {'chunks':>6s} {'round-trip':>10s} {'recall':>6s} {'precision':>9s} {'seconds':>7s}")
    for path in dirs:
        units, chunks, ok, seconds = run("web", path)
        with open(os.path.join(os.path.dirname(path), "expected.html"), encoding="utf-8", errors="replace") as fh:
            expected = words(fh.read())
        got = set(units[0].text.lower().split())
        both = len(expected & got)
        name = os.path.basename(os.path.dirname(path))
        print(
            f"{name:18s} {len(chunks):6d} {ok:>5d}/{len(chunks):<4d} {both / max(1, len(expected)):6.2f} "
            f"{both / max(1, len(got)):9.2f} {seconds:7.2f}"
        )
        total, total_ok = total + len(chunks), total_ok + ok
    print(f"{len(dirs)} pages, {total} chunks, round-trip {total_ok}/{total} = {total_ok / max(1, total):.1%}")


def code(roots: list[str]) -> None:
    """Repo loader + chunkers on code folders: per language, files, chunks, round-trips, chunks inside a unit."""
    stats: dict[str, list[float]] = {}
    for root in roots:
        units, chunks, _, _ = run("repo", os.path.abspath(root))
        source = Source("bench", "repo", os.path.abspath(root))
        by_unit = {u.unit_hash: u for u in units}
        for u in units:
            stats.setdefault(u.language or "(line windows)", [0, 0, 0, 0])[0] += 1
        for c in chunks:
            row = stats[by_unit[c.unit_hash].language or "(line windows)"]
            row[1] += 1
            row[2] += resolve(Citation(source.source_id, "repo", source.uri, c.locator)) == c.text
            row[3] += bool(c.locator.symbol or c.locator.heading_path)
    print(f"{'language':16s} {'files':>6s} {'chunks':>6s} {'round-trip':>12s} {'named':>7s}")
    for lang, (files, n, ok, named) in sorted(stats.items()):
        print(f"{lang:16s} {files:6d} {n:6d} {ok:>6d}/{n:<5d} {named / max(1, n):7.1%}")
    files, n, ok = (sum(v[i] for v in stats.values()) for i in range(3))
    print(
        f"{len(roots)} folders, {files} files, {n} chunks, round-trip {ok}/{n} = {ok / max(1, n):.1%} "
        "('named': the chunk has a symbol or a key/heading path)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["pdf", "web", "code"])
    ap.add_argument("--code", nargs="+", default=[ROOT], metavar="DIR", help="code folders (default: this repo)")
    args = ap.parse_args()
    if args.only in (None, "code"):
        code(args.code)
    if args.only == "code":
        return
    if not os.path.isdir(SHARED):
        sys.exit(f"{SHARED}: the shared datasets are not here; nothing to measure")
    if args.only in (None, "pdf"):
        pdfs()
    if args.only in (None, "web"):
        web()


if __name__ == "__main__":
    main()
