"""PDFs at real size: tables as their own cited units, bad files and pages reported alone, pages parsed in
parallel, and a citation resolved by parsing its page only."""

import importlib.util
import json

import pytest
from conftest import REPO, SAMPLES
from support import encrypted_pdf

from kbflow import pipeline, resolve
from kbflow import schema as S
from kbflow.chunk.base import chunk_unit
from kbflow.lake import Lake
from kbflow.records import Citation, Source
from kbflow.sources import pdf as pdfmod
from kbflow.sources.base import get_loader
from kbflow.sources.pdf import parse as pdfparse

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)
#: real public PDFs kept in the repo (tests/pdfs/README.md says where each comes from)
PDFS = REPO / "tests" / "pdfs"


TOPICS = "pumps valves seals bearings gaskets filters hoses clamps nozzles fittings".split()


def _long_pdf(pages: int) -> bytes:
    """Pages whose headings differ (not only by a number: that would be a repeated header) and a footer."""
    return make_pdf.build(
        pages=[
            [
                (13, f"{TOPICS[i % 10].title()} of unit {TOPICS[(i // 10) % 10]}"),
                (11, f"Paragraph {i} says the valve number {i * 7} is checked weekly."),
            ]
            for i in range(1, pages + 1)
        ]
    )


def _load(path):
    loader = get_loader("pdf")
    source = Source("s", "pdf", str(path))
    return loader, source, list(loader.load(source))


def test_tables_are_units_of_markdown_rows_cited_by_table_and_row_boxes():
    loader, source, units = _load(PDFS / "nics-background-checks-2015-11.pdf")
    tables = [u for u in units if u.content_kind == "table"]
    pages = {u.locator.page: u for u in units if u.content_kind == "pdf"}
    assert tables and not loader.issues
    first = tables[0]
    lines = first.text.split("\n")
    assert lines[0].startswith("| NICS Firearm Background Checks November - 2015 |") and lines[1].startswith("| --- |")
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines)
    assert first.unit_key.endswith("#page=00001#table=1") and first.locator.table == 1
    # the table's rows are not repeated in the page's prose
    assert "Georgia" in first.text and "Georgia" not in pages[1].text
    chunks = chunk_unit(first)
    assert len(chunks) > 1  # a long table is cut between rows
    layout = json.loads(first.layout)
    row_boxes = {tuple(r[2:6]) for r in layout["rows"]}
    for c in chunks:
        assert c.locator.bbox == tuple(layout["bbox"])  # the table's box
        assert c.locator.regions and all(box in row_boxes for _, box in c.locator.regions)  # each row's box
        assert c.text.startswith("| ") and c.text.endswith(" |")  # whole rows only
        assert resolve(Citation("s", "pdf", source.uri, c.locator, chunk_hash=None)) == c.text
    assert chunks[0].text.startswith(lines[0]) and not chunks[1].text.startswith(lines[0])
    label = Citation("s", "pdf", source.uri, chunks[0].locator).render()
    assert label == "nics-background-checks-2015-11.pdf p.1 table 1"


def test_a_ruled_box_around_text_is_not_a_table(tmp_path):
    path = tmp_path / "boxed.pdf"
    box = ("0.5 w", "60 640 480 60 re S")  # one rectangle around a paragraph: a frame, not a table
    text = "A framed note about the quarter, not a table at all."
    path.write_bytes(make_pdf.build(pages=[[(11, text)]], drawing=box))
    _, _, units = _load(path)
    tables = [u for u in units if u.content_kind == "table"]
    assert all(len(json.loads(t.layout)["rows"]) >= 2 for t in tables)


def test_every_bad_pdf_fails_its_own_file_and_the_good_one_loads(tmp_path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    good = _long_pdf(4)
    (folder / "good.pdf").write_bytes(good)
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf body\n")
    (folder / "truncated.pdf").write_bytes(good[: len(good) // 3])
    (folder / "zero-pages.pdf").write_bytes(
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>"
        b"\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
    )
    (folder / "scan.pdf").write_bytes(make_pdf.build(pages=[[(11, "")], [(11, "")]], footer=None))
    (folder / "locked.pdf").write_bytes(encrypted_pdf(good))
    loader, _, units = _load(folder)
    assert {u.unit_key.split("#")[0] for u in units} == {"good.pdf"}
    reasons = {i.path: i.reason for i in loader.issues}
    assert all(i.failed for i in loader.issues)
    assert "no text layer" in reasons.pop("scan.pdf")
    assert "the PDF has no pages" in reasons.pop("zero-pages.pdf")
    assert reasons.pop("corrupt.pdf").startswith("not a readable PDF")
    assert reasons.pop("truncated.pdf")  # unreadable, for whatever reason pdfminer gives
    assert reasons.pop("locked.pdf") == "the PDF is encrypted; decrypt it first (qpdf --decrypt)"
    assert reasons == {}


def test_one_bad_page_never_loses_the_others(tmp_path, monkeypatch):
    path = tmp_path / "doc.pdf"
    path.write_bytes(_long_pdf(5))
    real = pdfparse.parse_page

    def broken(doc, number, tables=True, ocr=True):
        if number == 3:
            raise ValueError("a broken content stream")
        return real(doc, number, tables, ocr)

    monkeypatch.setattr(pdfparse, "parse_page", broken)
    loader, _, units = _load(path)
    assert [u.locator.page for u in units] == [1, 2, 4, 5]
    (issue,) = loader.issues
    assert issue.path == "doc.pdf p.3" and issue.failed and "a broken content stream" in issue.reason


def test_worker_processes_read_pages_exactly_as_one_process_does(tmp_path):
    path = tmp_path / "long.pdf"
    path.write_bytes(_long_pdf(30))
    alone = [(p.page, p.text, p.words) for p, _ in pdfparse.pdf_pages(str(path), workers=1)]
    pooled = [(p.page, p.text, p.words) for p, _ in pdfparse.pdf_pages(str(path), workers=2)]
    assert alone == pooled and len(alone) == 30
    seen = []
    list(pdfparse.pdf_pages(str(path), workers=2, on_page=lambda done, total: seen.append((done, total))))
    assert seen[-1] == (30, 30)


def test_the_next_file_parsed_ahead_reads_as_it_would_alone_and_an_unused_look_ahead_is_given_up(tmp_path):
    from kbflow.sources.pdf import pool

    paths = []
    for name, pages in (("a.pdf", 20), ("b.pdf", 24), ("c.pdf", 16)):
        (tmp_path / name).write_bytes(_long_pdf(pages))
        paths.append(str(tmp_path / name))
    a, b, c = paths

    def read(path, **kw):
        return [(p.page, p.text, p.words) for p, _ in pdfparse.pdf_pages(path, workers=2, **kw)]

    alone = {path: read(path) for path in paths}
    assert read(a, then=b) == alone[a]
    assert pool._ahead and pool._ahead[0].key[0] == b and pool._ahead[0].pending  # b's first pages under way
    assert read(b, then=c) == alone[b]
    # c was started ahead but a is read instead: c's pages are taken off the workers, a reads as itself
    assert read(a) == alone[a] and not pool._ahead
    # a run given up half-way leaves no page of its own behind for the next
    pages = pdfparse.parse_document(b, 24, workers=2)
    next(pages)
    pages.close()
    assert read(c) == alone[c]


def test_a_killed_worker_fails_its_own_pages_only_and_the_next_document_reads_whole(tmp_path):
    from kbflow.sources.pdf import pool

    path = tmp_path / "long.pdf"
    path.write_bytes(_long_pdf(24))
    pages = pdfparse.parse_document(str(path), 24, workers=2)
    first = next(pages)  # the workers hold the next tasks now
    victim = pool._workers[1]
    victim.proc.kill()
    victim.proc.wait()
    got = [first, *pages]
    assert [n for n, *_ in got] == list(range(1, 25))
    died = [n for n, body, error, _ in got if body is None]
    assert died and all("worker process died" in error for _, body, error, _ in got if body is None)
    assert len(died) < 24  # the other worker's pages are read
    again = [(p.page, p.text) for p, _ in pdfparse.pdf_pages(str(path), workers=2)]
    assert [n for n, _ in again] == list(range(1, 25)) and victim not in pool._workers


def test_a_worker_out_of_step_with_its_tasks_fails_their_pages_and_is_replaced(tmp_path):
    from kbflow.sources.pdf import pool

    path = tmp_path / "long.pdf"
    path.write_bytes(_long_pdf(12))
    worker = pool._pool(1)[0]
    worker.send(str(path), [1, 2], False, True)
    got = worker.receive([5, 6])  # it answers pages 1 and 2: not what was asked
    assert [(n, body) for n, body, _, _ in got] == [(5, None), (6, None)]
    assert [error for _, _, error, _ in got] == [
        "the PDF worker process was stopped: it answered page 1 when asked for page 5"
    ] * 2
    assert not worker.alive()
    assert [p.page for p, _ in pdfparse.pdf_pages(str(path), workers=2)] == list(range(1, 13))
    assert worker not in pool._workers


def test_what_a_library_prints_in_a_worker_goes_to_stderr_not_into_the_pages(tmp_path):
    import pickle
    import subprocess
    import sys

    path = tmp_path / "doc.pdf"
    path.write_bytes(_long_pdf(2))
    noisy = (
        "from kbflow.sources.pdf import parse, worker\n"
        "real = parse._parse_task\n"
        "parse._parse_task = lambda *a: (print('noise from a library'), real(*a))[1]\n"
        "worker.main()\n"
    )
    task = json.dumps({"path": str(path), "pages": [1, 2], "ocr": False, "tables": True}) + "\n"
    done = subprocess.run([sys.executable, "-c", noisy], input=task.encode(), capture_output=True, timeout=120)
    assert done.returncode == 0 and b"noise from a library" in done.stderr
    out, pages = done.stdout, []
    while out:
        head, _, out = out.partition(b"\n")
        number, error, _, size = json.loads(head)
        pages.append((number, error, pickle.loads(out[:size])["words"][0]["text"]))
        out = out[size:]
    assert pages == [(1, None, "Valves"), (2, None, "Seals")]


def test_pages_prefetched_by_the_running_workers_are_the_pages_parsed_here(tmp_path, monkeypatch):
    from kbflow.sources.pdf import pool

    path = tmp_path / "long.pdf"
    path.write_bytes(_long_pdf(20))
    list(pdfparse.pdf_pages(str(path), workers=2))  # an ingest leaves its workers up
    assert pool.running() >= 2
    wanted = {3: [], 7: ["kbflow sample document"], 12: [], 99: []}  # page 99 does not exist

    def prefetched():
        pdfparse._pages.clear()
        pdfparse.prefetch_pages(str(path), wanted)
        return {key[3]: page for key, page in pdfparse._pages.items()}

    by_workers = prefetched()
    monkeypatch.setattr(pool, "running", lambda: 0)
    here = prefetched()
    assert sorted(by_workers) == sorted(here) == [3, 7, 12]
    assert by_workers == here and here[7].dropped == ["kbflow sample document"]


def test_a_citation_is_resolved_by_parsing_its_page_only(tmp_path, fast_settings, lake_path, monkeypatch):
    folder = tmp_path / "manuals"
    folder.mkdir()
    (folder / "manual.pdf").write_bytes(_long_pdf(40))
    lake = Lake(lake_path)
    lake.register(Source("manuals", "pdf", str(folder)))
    pipeline.ingest(lake, fast_settings)
    row = lake.scan(S.CHUNKS, None, "source_id = 'manuals'").to_pylist()
    row = next(r for r in row if r[S.LOCATOR]["page"] == 33)
    citation = Citation.from_row(row)
    calls = []
    real = pdfparse.parse_page

    def counting(doc, number, tables=True, ocr=True):
        calls.append(number)
        return real(doc, number, tables, ocr)

    monkeypatch.setattr(pdfparse, "parse_page", counting)
    assert resolve(citation, lake=lake) == row[S.TEXT]
    assert calls == [33]  # one page, not the document
    pdfparse._whole_document.cache_clear()
    monkeypatch.setenv("KBFLOW_PDF_WORKERS", "1")  # parsed here, so the count sees it
    assert resolve(citation) == row[S.TEXT]  # without the lake: the whole document, once
    assert len(calls) == 41


def test_headers_and_footers_dropped_from_the_document_are_dropped_from_the_page_alone(tmp_path):
    path = tmp_path / "footers.pdf"
    path.write_bytes(_long_pdf(6))  # every page carries the sample footer line
    pages = list(pdfparse.pdf_pages(str(path), workers=1))
    assert all(p.dropped == ["kbflow sample document"] for p, _ in pages)
    for page, _ in pages:
        alone = pdfmod.resolve_page(str(path), page.page, page.dropped)
        assert alone.text == page.text and "kbflow sample document" not in alone.text


def test_a_long_load_reports_files_and_pages_as_it_goes(tmp_path, fast_settings, lake_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(3):
        (folder / f"doc{i}.pdf").write_bytes(_long_pdf(5))
    lake = Lake(lake_path)
    lake.register(Source("many", "pdf", str(folder)))
    seen = []
    pipeline.load_source(lake, "many", lambda files, total, pages, ocr: seen.append((files, total, pages, ocr)))
    assert seen[0] == (0, 3, 0, 0) and seen[-1] == (3, 3, 15, 0)  # no page needed OCR
    assert [p for _, _, p, _ in seen] == sorted(p for _, _, p, _ in seen)  # pages only ever go up


def test_a_page_of_100000_characters_loads_and_is_chunked_under_the_budget(tmp_path, fast_settings):
    # 240 lines of 420 characters in 2-pt type: one page holding 100,800 characters
    words = " ".join(f"w{i:03d}" for i in range(84))
    path = tmp_path / "dense.pdf"
    path.write_bytes(make_pdf.build(pages=[[(2, words) for _ in range(240)], [(11, "A short second page.")]]))
    loader, _, units = _load(path)
    assert not loader.issues
    first = next(u for u in units if u.locator.page == 1)
    assert len(first.text) >= 100_000
    chunks = chunk_unit(first, fast_settings.chunking)
    assert len(chunks) > 100 and all(first.text[c.locator.char_start : c.locator.char_end] == c.text for c in chunks)


def test_a_1000_page_pdf_streams_its_pages_in_order_with_bounded_memory(tmp_path):
    import tracemalloc

    path = tmp_path / "thousand.pdf"
    lines = [
        [(11, f"Page {i}, line {j} of the long manual, with a few words.") for j in range(8)] for i in range(1, 1001)
    ]
    path.write_bytes(make_pdf.build(pages=lines))
    tracemalloc.start()
    try:
        numbers = []
        for page, _ in pdfparse.pdf_pages(str(path), workers=2):
            numbers.append(page.page)
            del page
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert numbers == list(range(1, 1001))
    # pages are spilled to a temporary file and built one at a time: the parent never holds them all
    # (holding these 1,000 pages took 16.6 MiB here; streaming them 2.5 MiB)
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"


# --- pdfium: words, boxes and ruled tables --------------------------------------------------------
GRID = (
    "q 1 0 0 1 0 -100 cm",  # a transformed grid: 3 rows x 3 columns of lines
    *(f"72 {y} m 372 {y} l S" for y in (700, 680, 660, 640)),
    *(f"{x} 640 m {x} 700 l S" for x in (72, 172, 272, 372)),
    "Q",
    "400 300 80 30 re S 480 300 80 30 re S",  # two rectangles side by side: a table of two cells
    "420 100 m 500 160 l S",  # a slanted line is no edge
)


def _plumber_tables(path, number):
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return sorted(tuple(round(v, 1) for v in t.bbox) for t in pdf.pages[number - 1].find_tables())


def _our_tables(path, number):
    doc = pdfparse.Document(str(path))
    try:
        tables = pdfparse.parse_page(doc, number)["tables"]
        return sorted(tuple(round(v, 1) for v in t["bbox"]) for t in tables if t.get("ruled", True))
    finally:
        doc.close()


def test_ruled_tables_from_pdfium_paths_are_pdfplumbers_own(tmp_path):
    path = tmp_path / "grid.pdf"
    path.write_bytes(make_pdf.build(pages=[[(11, "Quarter  Revenue  Cost")]], drawing=GRID))
    ours = _our_tables(path, 1)
    assert ours == _plumber_tables(path, 1) and len(ours) == 2
    assert (72.0, 192.0, 372.0, 252.0) in ours  # the grid, moved by its cm matrix, in top-left coordinates


@pytest.mark.parametrize("name", ["senate-expenditures.pdf", "nics-background-checks-2015-11.pdf"])
def test_ruled_tables_match_pdfplumber_on_real_pdfs(name):
    assert _our_tables(PDFS / name, 1) == _plumber_tables(PDFS / name, 1), name


def test_words_and_boxes_from_pdfium_agree_with_pdfplumber_where_it_reads_words_whole():
    import pdfplumber

    from kbflow.sources.pdf.pdfium import X_TOLERANCE_RATIO

    for name, number in [("scotus-transcript-p1.pdf", 1), ("senate-expenditures.pdf", 1)]:
        doc = pdfparse.Document(str(PDFS / name))
        ours = pdfparse.parse_page(doc, number)["words"]
        doc.close()
        with pdfplumber.open(PDFS / name) as pdf:
            theirs = pdf.pages[number - 1].extract_words(x_tolerance_ratio=X_TOLERANCE_RATIO, y_tolerance=3)
        theirs = [w for w in theirs if w["upright"]]
        assert [w["text"] for w in ours] == [w["text"] for w in theirs]  # same words, same reading order
        for a, b in zip(ours, theirs):
            assert abs(a["x0"] - b["x0"]) < 1.5 and abs(a["x1"] - b["x1"]) < 1.5, (a, b)
            assert abs(a["top"] - b["top"]) < 3 and abs(a["bottom"] - b["bottom"]) < 3, (a, b)  # font box vs glyph size


def test_a_rotated_page_reads_upright_in_its_display_coordinates(tmp_path):
    import pdfplumber

    # text turned a quarter left on a page shown turned a quarter right: upright on screen, as a landscape table is
    upright = "BT /F1 12 Tf 0 1 -1 0 100 100 Tm (Landscape ledger page) Tj ET"
    upside_down = "BT /F1 12 Tf 0 -1 1 0 100 700 Tm (Mirror writing) Tj ET"
    data = make_pdf.build(pages=[[(12, "")]], footer=None, drawing=(upright, upside_down))
    path = tmp_path / "rotated.pdf"
    path.write_bytes(data.replace(b"/MediaBox [0 0 612 792]", b"/MediaBox [0 0 612 792] /Rotate 90"))
    doc = pdfparse.Document(str(path))
    raw = pdfparse.parse_page(doc, 1)
    doc.close()
    assert (raw["width"], raw["height"]) == (792.0, 612.0)
    assert [w["text"] for w in raw["words"]] == ["Landscape", "ledger", "page"]  # not the upside-down line
    with pdfplumber.open(path) as pdf:
        theirs = [w for w in pdf.pages[0].extract_words() if w["text"] in ("Landscape", "ledger", "page")]
    for a, b in zip(raw["words"], theirs, strict=True):
        assert a["text"] == b["text"] and abs(a["x0"] - b["x0"]) < 1.5 and abs(a["top"] - b["top"]) < 3
