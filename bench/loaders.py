"""Per-loader figures on the real files in ../shared/datasets: units, chunks, citation round-trips, speed.

For every PDF and saved web page there: load it, chunk it, and re-read every
chunk through ``kbflow.resolve``, counting the chunks whose text comes back
exactly. PDFs also check every chunk's regions (each word of the chunk inside
one, no other word of the page wholly inside one: ``regions``), the mean
number of boxes per chunk, seconds per page and how many pages had repeated
header/footer lines dropped; web pages report word-set recall and precision
of the extracted text against the reference extractor's ``expected.html``.

Code folders (``--code DIR...``, this repo by default) report, per language
(or page, notebook, line windows), files, chunks, the word pieces to embed,
round-trips and the share of chunks named by a symbol or key path, then the
files left out by reason.

    python bench/loaders.py [--only pdf|speed|web|code] [--code DIR ...]
    python bench/loaders.py --only web --web DIR    # other saved pages: DIR/<name>/source.html + expected.html

``--only speed`` prints PDF pages/s with one worker process and with the pool
(one 300-page PDF built from the shared PDFs' pages, and the folder of
shared PDFs), and how long resolving one citation of that 300-page PDF takes
with the lake's page layout (that page alone) and without (the document).
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

from kbflow.chunk.base import chunk_unit, count_tokens  # noqa: E402
from kbflow.chunk.layout import check_regions  # noqa: E402
from kbflow.errors import SourceError  # noqa: E402
from kbflow.records import Citation, Source  # noqa: E402
from kbflow.retrieve.resolver import resolve, resolve_many  # noqa: E402
from kbflow.sources.base import get_loader  # noqa: E402


def run(source_type: str, path: str):
    source = Source("bench", source_type, path)
    t0 = time.perf_counter()
    units = list(get_loader(source_type).load(source))
    seconds = time.perf_counter() - t0
    chunks = [c for u in units for c in chunk_unit(u)]
    ok = sum(resolve(Citation(source.source_id, source_type, path, c.locator)) == c.text for c in chunks)
    return units, chunks, ok, seconds


def _region_ok(layouts, c) -> bool:
    """Page chunks: every word of the span inside a region, no other word inside one. Table chunks: every
    region is one of the table's row boxes."""
    layout = layouts[c.unit_hash]
    if c.content_kind == "table":
        rows = {tuple(r[2:6]) for r in layout["rows"]}
        return bool(c.locator.regions) and all(tuple(box) in rows for _, box in c.locator.regions)
    return check_regions(layout, c.locator.char_start, c.locator.char_end, c.locator.regions) == (0, 0)


def pdfs() -> None:
    files = sorted(glob.glob(os.path.join(SHARED, "pdfs", "*.pdf")))
    totals = [0, 0, 0, 0, 0.0, 0, 0, 0]
    print(
        f"{'pdf':44s} {'pages':>5s} {'tables':>6s} {'chunks':>6s} {'round-trip':>10s} {'regions':>9s} {'boxes':>5s} "
        f"{'s/page':>6s} {'dropped on':>10s} {'issues':>6s}"
    )
    for path in files:
        loader = get_loader("pdf")
        source = Source("bench", "pdf", path)
        t0 = time.perf_counter()
        units = _load(loader, source)
        seconds = time.perf_counter() - t0
        chunks = [c for u in units for c in chunk_unit(u)]
        ok = sum(resolve(Citation(source.source_id, "pdf", path, c.locator)) == c.text for c in chunks)
        pages = [u for u in units if u.content_kind == "pdf"]
        tables = len(units) - len(pages)
        layouts = {u.unit_hash: json.loads(u.layout) for u in units}
        dropped = sum(1 for u in pages if layouts[u.unit_hash]["dropped"])
        exact = sum(_region_ok(layouts, c) for c in chunks)
        boxes = sum(len(c.locator.regions) for c in chunks)
        issues = "; ".join(str(i) for i in loader.issues)[:60]
        print(
            f"{os.path.basename(path)[:44]:44s} {len(pages):5d} {tables:6d} {len(chunks):6d} "
            f"{ok:>5d}/{len(chunks):<4d} {exact:>4d}/{len(chunks):<4d} {boxes / max(1, len(chunks)):5.1f} "
            f"{seconds / max(1, len(pages)):6.2f} {dropped:>4d} pages {issues}"
        )
        for i, v in enumerate((len(pages), tables, len(chunks), ok, seconds, exact, boxes)):
            totals[i] += v
    pages, tables, n, ok, seconds, exact, boxes, _ = totals
    print(
        f"{len(files)} PDFs, {pages} pages, {tables} tables, {n} chunks, round-trip {ok}/{n} = {ok / max(1, n):.1%}, "
        f"regions exact {exact}/{n} = {exact / max(1, n):.1%} ({boxes / max(1, n):.2f} boxes per chunk), "
        f"{seconds / max(1, pages):.3f} s/page overall"
    )


def _load(loader, source) -> list:
    """The source's units; the encrypted sample fails by design (its issue is printed in the row)."""
    try:
        return list(loader.load(source))
    except SourceError:
        return []


def long_pdf(path: str, pages: int = 300) -> str:
    """A ``pages``-page PDF made of the shared PDFs' pages, one after another (pypdfium2), like a long filing."""
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    sources = [f for f in sorted(glob.glob(os.path.join(SHARED, "pdfs", "*.pdf"))) if "password" not in f]
    while len(out) < pages:
        for f in sources:
            src = pdfium.PdfDocument(f)
            take = min(len(src), pages - len(out))
            out.import_pages(src, list(range(take)))
            src.close()
            if len(out) >= pages:
                break
    out.save(path)
    return path


def speed(repeat: int = 3) -> None:
    """Pages/s with one worker process and with the default pool, and resolve times, in one run."""
    import tempfile

    work = tempfile.mkdtemp(prefix="kbflow-pdfbench-")
    big = long_pdf(os.path.join(work, "filing-300p.pdf"))
    parse_rates(big, repeat)
    lake, row = resolve_times(work, big)
    cli_resolve(lake, row, repeat)
    check_counts(lake)


def parse_rates(big: str, repeat: int) -> None:
    """Pages/s of the 300-page PDF and of the shared PDF folder, one worker against the default pool."""
    import statistics

    from kbflow.sources.pdf import parse as pdfparse

    folder = [f for f in sorted(glob.glob(os.path.join(SHARED, "pdfs", "*.pdf"))) if "password" not in f]
    pool = pdfparse.pdf_workers()
    print(f"\nPDF parsing: pages/s, median of {repeat} runs (workers: 1 vs {pool}, the machine's usable CPUs)")
    for name, paths in (("one 300-page PDF", [big]), (f"folder of {len(folder)} PDFs", folder)):
        rates = {}
        for workers in (1, pool):
            runs = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                n = sum(1 for p in paths for _ in pdfparse.pdf_pages(p, workers=workers, on_error=lambda *a: None))
                runs.append(n / (time.perf_counter() - t0))
            rates[workers] = statistics.median(runs)
        print(
            f"  {name:24s} {n:5d} pages: 1 worker {rates[1]:6.1f} pages/s, {pool} workers {rates[pool]:6.1f} "
            f"pages/s ({rates[pool] / rates[1]:.2f}x)"
        )


def resolve_times(work: str, big: str):
    """Ingest the 300-page PDF, then resolve one chunk of a late page with the lake (that page parsed) and
    without it (the document parsed); returns the lake and the chunk's row."""
    from kbflow import pipeline
    from kbflow.lake import Lake
    from kbflow.records import Citation as C
    from kbflow.retrieve.resolver import resolve as resolve_citation
    from kbflow.sources.pdf import parse as pdfparse

    lake = Lake(os.path.join(work, "lake"))
    lake.register(Source("filing", "pdf", big))
    pipeline.ingest(lake, {"model": "hash:64", "lake": lake.uri})
    columns = ["source_id", "source_type", "uri", "locator", "title", "content_hash", "chunk_hash", "text"]
    row = next(r for r in lake.scan("chunks", columns).to_pylist() if r["locator"]["page"] >= 250)
    citation = C.from_row(row)
    t0 = time.perf_counter()
    assert resolve_citation(citation, lake=lake) == row["text"]
    page_s = time.perf_counter() - t0
    pdfparse._whole_document.cache_clear()
    t0 = time.perf_counter()
    assert resolve_citation(citation) == row["text"]
    doc_s = time.perf_counter() - t0
    print(
        f"\nresolve one chunk of p.{row['locator']['page']} of the 300-page PDF: with the lake (parses that page) "
        f"{page_s:.2f} s; without it (parses the document) {doc_s:.2f} s"
    )
    return lake, row


def cli_resolve(lake, row: dict, repeat: int) -> None:
    """The whole ``kbflow resolve CHUNK_ID`` command on a chunk of ``row``'s page, process start included."""
    import statistics
    import subprocess

    chunk_id = next(r["chunk_id"] for r in lake.scan("chunks", ["chunk_id", "locator"]).to_pylist()
                    if r["locator"]["page"] == row["locator"]["page"])  # fmt: skip
    cli = os.path.join(os.path.dirname(sys.executable), "kbflow")
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run([cli, "--lake", lake.uri, "resolve", chunk_id], capture_output=True, text=True)
        runs.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stderr
    print(
        f"`kbflow resolve CHUNK_ID` on that chunk, the whole command (process start included): "
        f"median {statistics.median(runs):.2f} s of {repeat}"
    )


def check_counts(lake) -> None:
    """The ``locators_resolve`` check on the lake: its time, and how many pages and documents it parsed."""
    from kbflow.pipeline.checks import check_locators
    from kbflow.sources.pdf import parse as pdfparse

    pages_parsed, documents_parsed = [], []
    parse_page, whole = pdfparse.parse_page, pdfparse._whole_document

    def counting_page(doc, number, *args, **kwargs):
        pages_parsed.append(number)
        return parse_page(doc, number, *args, **kwargs)

    def counting_document(*args):
        documents_parsed.append(args[0])
        return whole(*args)

    pdfparse._pages.clear()
    pdfparse.parse_page, pdfparse._whole_document = counting_page, counting_document
    try:
        t0 = time.perf_counter()
        result = check_locators(lake)
        check_s = time.perf_counter() - t0
    finally:
        pdfparse.parse_page, pdfparse._whole_document = parse_page, whole
    print(
        f"locators_resolve check: {result.metadata['sampled']} citations in {check_s:.2f} s, passed {result.passed}; "
        f"pages parsed {len(pages_parsed)} ({len(set(pages_parsed))} distinct), "
        f"whole-document parses {len(documents_parsed)}"
    )


def words(text: str) -> set[str]:
    return set(html.unescape(re.sub(r"<[^>]+>", " ", text)).lower().split())


def web(folder: str | None = None) -> None:
    """Each ``<name>/source.html`` of ``folder`` (the shared datasets' pages by default) against its
    ``expected.html``; a page that yields no text counts recall 0 (the reason is printed)."""
    dirs = sorted(glob.glob(os.path.join(folder or os.path.join(SHARED, "html"), "*", "source.html")))
    total, total_ok, recalls, precisions, failed = 0, 0, [], [], []
    print(f"{'page':18s} {'chunks':>6s} {'round-trip':>10s} {'recall':>6s} {'precision':>9s} {'seconds':>7s}")
    for path in dirs:
        name = os.path.basename(os.path.dirname(path))
        with open(os.path.join(os.path.dirname(path), "expected.html"), encoding="utf-8", errors="replace") as fh:
            expected = words(fh.read())
        try:
            units, chunks, ok, seconds = run("web", path)
        except SourceError as exc:
            failed.append(name)
            recalls.append(0.0)
            print(f"{name:18s} no text: {str(exc).split(': ', 1)[-1][:100]}")
            continue
        got = set(units[0].text.lower().split())
        both = len(expected & got)
        recalls.append(both / max(1, len(expected)))
        precisions.append(both / max(1, len(got)))
        print(
            f"{name:18s} {len(chunks):6d} {ok:>5d}/{len(chunks):<4d} {recalls[-1]:6.2f} {precisions[-1]:9.2f} "
            f"{seconds:7.2f}"
        )
        total, total_ok = total + len(chunks), total_ok + ok
    print(f"{len(dirs)} pages, {total} chunks, round-trip {total_ok}/{total} = {total_ok / max(1, total):.1%}")
    if recalls:
        print(
            f"word-set recall: mean {sum(recalls) / len(recalls):.3f} over {len(recalls)} pages "
            f"({len(failed)} without text count 0); precision: mean {sum(precisions) / max(1, len(precisions)):.3f} "
            f"over the {len(precisions)} with text"
        )


def _kind(unit) -> str:
    """How a repository's file was read: its language, or a page, a notebook, line windows."""
    if unit.content_kind == "web":
        return "(html page)"
    if unit.unit_key.endswith(".ipynb"):
        return "(notebook)"
    return unit.language or "(line windows)"


def code(roots: list[str]) -> None:
    """Repo loader + chunkers on code folders: per language, files, chunks, word pieces to embed, round-trips,
    chunks named by a symbol or a heading/key path; then what was left out, by reason."""
    stats: dict[str, list[float]] = {}
    left_out: dict[str, int] = {}
    for root in roots:
        source = Source("bench", "repo", os.path.abspath(root))
        loader = get_loader("repo")
        units = list(loader.load(source))
        chunks = [c for u in units for c in chunk_unit(u)]
        for issue in loader.issues:
            reason = re.sub(r"\d[\d,.]*( [KMG]iB| bytes)?", "N", issue.reason)
            left_out[reason] = left_out.get(reason, 0) + 1
        texts = resolve_many([Citation(source.source_id, "repo", source.uri, c.locator) for c in chunks])
        by_unit = {u.unit_hash: u for u in units}
        for u in units:
            stats.setdefault(_kind(u), [0, 0, 0, 0, 0])[0] += 1
        for c, text in zip(chunks, texts):
            row = stats[_kind(by_unit[c.unit_hash])]
            row[1] += 1
            row[2] += count_tokens(c.text)
            row[3] += text == c.text
            row[4] += bool(c.locator.symbol or c.locator.heading_path)
    print(f"{'read as':16s} {'files':>6s} {'chunks':>6s} {'pieces':>9s} {'round-trip':>13s} {'named':>7s}")
    for lang, (files, n, pieces, ok, named) in sorted(stats.items()):
        print(f"{lang:16s} {files:6d} {n:6d} {pieces:9d} {ok:>6d}/{n:<6d} {named / max(1, n):7.1%}")
    files, n, pieces, ok = (sum(v[i] for v in stats.values()) for i in range(4))
    print(
        f"{len(roots)} folders, {files} files, {n} chunks, {pieces} word pieces, round-trip {ok}/{n} = "
        f"{ok / max(1, n):.1%} ('named': the chunk has a symbol or a key/heading path)"
    )
    for reason, count in sorted(left_out.items(), key=lambda kv: -kv[1]):
        print(f"  left out: {count:5d}  {reason}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["pdf", "speed", "web", "code"])
    ap.add_argument("--code", nargs="+", default=[ROOT], metavar="DIR", help="code folders (default: this repo)")
    ap.add_argument(
        "--web",
        metavar="DIR",
        help="saved pages to score instead of the shared ones: DIR/<name>/source.html and expected.html "
        "(the layout of mozilla/readability's test/test-pages)",
    )
    args = ap.parse_args()
    if args.only in (None, "code"):
        code(args.code)
    if args.only == "code":
        return
    if args.only == "web" and args.web:
        web(args.web)
        return
    if not os.path.isdir(SHARED):
        sys.exit(f"{SHARED}: the shared datasets are not here; nothing to measure")
    if args.only in (None, "pdf"):
        pdfs()
    if args.only in (None, "speed"):
        speed()
    if args.only in (None, "web"):
        web()


if __name__ == "__main__":
    main()
