"""Scanned PDF pages read by OCR (kbflow.sources.pdf.ocr): words with boxes, cited and resolved like any page."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import FAST_MODEL, REPO, SAMPLES

from kbflow import Retriever, pipeline, resolve
from kbflow.errors import StaleCitationError
from kbflow.lake import Lake
from kbflow.records import Source
from kbflow.sources.base import get_loader
from kbflow.sources.pdf.ocr import OCR_DPI, OCR_MAX_PIXELS, OCR_MAX_SIDE, needs_ocr, ocr_dpi, parse_tsv, word_recall

SCANS = REPO / "tests" / "scans"
BORN_DIGITAL = SAMPLES / "pdf" / "kbflow-guide.pdf"
LINES = [
    "Turbine blades are inspected every",
    "two hundred flight hours for cracks",
    "near the root of each blade.",
]


def _tesseract() -> None:
    if shutil.which("tesseract") is None:
        if os.environ.get("KBFLOW_OCR_TESTS") == "require":
            pytest.fail("tesseract is not installed; `make test` installs it (apt-get install tesseract-ocr)")
        pytest.skip("no tesseract (make test installs it)")


def _scan(path: Path, lines: list[str], pages: int = 1, text_page: bool = False) -> Path:
    """An image-only PDF: ``lines`` drawn on a 150 dpi page (``pages`` of them), optionally after a page that
    has a real text layer."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=36)
    images = []
    for _ in range(pages):
        image = Image.new("L", (1275, 1650), 255)  # US letter at 150 dpi
        draw = ImageDraw.Draw(image)
        for i, line in enumerate(lines):
            draw.text((150, 200 + 60 * i), line, fill=0, font=font)
        images.append(image.convert("RGB"))
    images[0].save(path, "PDF", resolution=150, save_all=True, append_images=images[1:])
    if text_page:  # a born-digital page first
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(path))
        doc.import_pages(pdfium.PdfDocument(str(BORN_DIGITAL)), [0], index=0)
        doc.save(str(path) + ".tmp")  # never over the file pdfium reads from
        doc.close()
        os.replace(str(path) + ".tmp", path)
    return path


def test_a_text_layer_that_needs_ocr():
    assert needs_ocr([]) and needs_ocr([{"text": "  "}])
    assert needs_ocr([{"text": "\ufffd\ufffd\ufffd"}, {"text": "ab"}])
    assert not needs_ocr([{"text": "Revenue"}, {"text": "2022:"}, {"text": "$4.2bn"}])


def test_tesseract_tsv_becomes_words_in_points():
    tsv = (
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
        "1\t1\t0\t0\t0\t0\t0\t0\t2550\t3300\t-1\t\n"
        "5\t1\t1\t1\t1\t1\t300\t600\t150\t50\t96.5\tHello\n"
        "5\t1\t1\t1\t1\t2\t480\t600\t200\t50\t80\tworld\n"
        "5\t1\t1\t1\t1\t3\t700\t600\t20\t50\t-1\t \n"
    )
    words, confidence = parse_tsv(tsv, 72 / 300)
    assert [w["text"] for w in words] == ["Hello", "world"]
    assert words[0]["x0"] == pytest.approx(72.0) and words[0]["bottom"] == pytest.approx(156.0)
    assert confidence == pytest.approx(0.8825)
    assert parse_tsv("level\n", 1.0) == ([], None)


def test_word_recall():
    assert word_recall("min-\nutes and Minutes", "minutes, and minutes.") == 1.0
    assert word_recall("a b c d", "a b") == 0.5


def test_a_generated_scan_is_read_with_boxes(tmp_path):
    _tesseract()
    pdf = _scan(tmp_path / "scan.pdf", LINES)
    loader = get_loader("pdf")
    (unit,) = list(loader.load(Source("s", "pdf", str(pdf))))
    assert word_recall(" ".join(LINES), unit.text) >= 0.9
    assert 0.5 < unit.locator.ocr_confidence <= 1.0
    assert unit.locator.to_dict()["ocr"] is True
    import json

    layout = json.loads(unit.layout)
    assert layout["ocr"]["engine"].startswith("tesseract") and layout["words"]
    # boxes in points on a 612 x 792 page: the first line sits about 100 points from the top (200 px at 150 dpi)
    first = layout["words"][0]
    assert 60 < first[2] < 100 and 85 < first[3] < 115 and first[5] < 792


def test_a_short_scan_is_read_on_the_workers_a_page_a_task(tmp_path):
    _tesseract()
    from kbflow.sources.pdf import parse as pdfparse
    from kbflow.sources.pdf import pool

    scan = str(_scan(tmp_path / "three.pdf", LINES, pages=3))
    assert pdfparse._plan(scan, 3, 2, ocr=True) == [[1], [2], [3]]  # under POOL_MIN_PAGES, but a second a page
    assert pdfparse._plan(scan, 3, 2, ocr=False) is None  # OCR off: its pages are empty and quick
    assert pdfparse._plan(scan, 3, 1, ocr=True) is None
    mixed = str(_scan(tmp_path / "mixed.pdf", LINES, pages=2, text_page=True))
    assert pdfparse._plan(mixed, 3, 2, ocr=True) is None  # a text layer on its first page: a born-digital file
    pooled = [(page.page, page.text, page.ocr) for page, _ in pdfparse.pdf_pages(scan, workers=2)]
    assert pool.running() >= 2
    alone = [(page.page, page.text, page.ocr) for page, _ in pdfparse.pdf_pages(scan, workers=1)]
    assert pooled == alone and [p[0] for p in pooled] == [1, 2, 3] and all(p[2] for p in pooled)


def test_a_real_scan_reads_its_words():
    _tesseract()
    (unit,) = list(get_loader("pdf").load(Source("s", "pdf", str(SCANS / "c02-22.pdf"))))
    assert word_recall((SCANS / "c02-22.txt").read_text(), unit.text) >= 0.95
    assert unit.locator.ocr_confidence > 0.7


def test_scanned_pages_are_searched_cited_and_resolved_from_the_lake(tmp_path, monkeypatch):
    _tesseract()
    folder = tmp_path / "scans"
    folder.mkdir()
    pdf = _scan(folder / "manual.pdf", LINES)
    lake = Lake(str(tmp_path / "lake"))
    lake.register(Source("scans", "pdf", str(folder)))
    settings = {"lake": lake.uri, "model": FAST_MODEL}
    (report,) = pipeline.ingest(lake, settings).sources
    assert report.status == "new", report
    hit = Retriever.open(lake.uri).search("turbine blades cracks", k=1)[0]
    assert hit.citation.label() == "manual.pdf p.1 (OCR)"
    assert hit.citation.locator.regions  # the chunk's boxes, drawn on the page picture like any page
    monkeypatch.setenv("KBFLOW_TESSERACT", str(tmp_path / "no-such-tesseract"))
    assert resolve(hit.citation, lake=lake) == hit.text  # the text OCR read at ingest: no second OCR
    pdf.write_bytes(pdf.read_bytes() + b"\n% changed\n")
    with pytest.raises(StaleCitationError):
        resolve(hit.citation, lake=lake)


def test_with_ocr_off_scanned_pages_are_listed_as_left_out(tmp_path):
    pdf = _scan(tmp_path / "scan.pdf", LINES, pages=3)
    loader = get_loader("pdf")
    with pytest.raises(Exception, match="OCR is off"):
        list(loader.load(Source("s", "pdf", str(pdf), options={"ocr": False})))
    folder = tmp_path / "mixed"
    folder.mkdir()
    _scan(folder / "mixed.pdf", LINES, pages=2, text_page=True)
    units = list(loader.load(Source("m", "pdf", str(folder), options={"ocr": False})))
    assert units and all(u.locator.page == 1 for u in units)
    (issue,) = loader.issues
    assert issue.path == "mixed.pdf p.2-3" and "OCR is off" in issue.reason and not issue.failed


def test_a_missing_engine_fails_only_the_scanned_pages(tmp_path, monkeypatch):
    monkeypatch.setenv("KBFLOW_TESSERACT", str(tmp_path / "no-such-tesseract"))
    monkeypatch.setenv("KBFLOW_PDF_WORKERS", "1")
    folder = tmp_path / "mixed"
    folder.mkdir()
    _scan(folder / "mixed.pdf", LINES, pages=1, text_page=True)
    loader = get_loader("pdf")
    units = list(loader.load(Source("m", "pdf", str(folder))))
    assert units and all(u.locator.page == 1 for u in units)
    (issue,) = loader.issues
    assert issue.path == "mixed.pdf p.2" and issue.failed
    assert "apt-get install tesseract-ocr" in issue.reason


def test_a_blank_page_is_no_failure_without_an_engine(tmp_path, monkeypatch):
    """A page with no text layer and no ink (a filing's "intentionally left blank" back) is listed as blank,
    not failed, where no OCR engine is installed: the source is complete, not partial."""
    import pypdfium2 as pdfium

    monkeypatch.delenv("KBFLOW_TESSERACT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on it: no engine at all
    monkeypatch.setenv("KBFLOW_PDF_WORKERS", "1")
    folder = tmp_path / "filing"
    folder.mkdir()
    doc = pdfium.PdfDocument(str(BORN_DIGITAL))
    doc.new_page(612, 792)
    pages = len(doc)
    doc.save(str(folder / "10-k.pdf"))
    doc.close()
    loader = get_loader("pdf")
    units = list(loader.load(Source("f", "pdf", str(folder))))
    assert units and {u.locator.page for u in units} == set(range(1, pages))
    (issue,) = loader.issues
    assert issue.path == f"10-k.pdf p.{pages}" and not issue.failed and "blank" in issue.reason


def test_ocr_renders_a_large_page_coarser_and_fails_one_too_large_alone(tmp_path, monkeypatch):
    """A poster is read at a lower resolution, within the pixel bounds; a page too large to read even so (a
    broken PDF's 2,000,000-point page: 300 dpi would need terabytes) fails alone, with its reason, and the
    document's other pages load."""
    assert ocr_dpi(612, 792) == OCR_DPI  # US letter
    a0 = ocr_dpi(2384, 3370)  # an A0 poster, in points
    assert 100 < a0 < OCR_DPI and (2384 / 72 * a0) * (3370 / 72 * a0) <= OCR_MAX_PIXELS * 1.0001
    assert ocr_dpi(612, 200 * 72) == pytest.approx(OCR_MAX_SIDE / 200)  # a strip 200 inches long: its side
    assert ocr_dpi(0, 792) == 0
    import pypdfium2 as pdfium

    monkeypatch.setenv("KBFLOW_PDF_WORKERS", "1")
    folder = tmp_path / "huge"
    folder.mkdir()
    doc = pdfium.PdfDocument(str(BORN_DIGITAL))
    doc.new_page(595, 2_000_000)  # a blank page, so one OCR would read
    pages = len(doc)
    doc.save(str(folder / "huge.pdf"))
    doc.close()
    loader = get_loader("pdf")
    units = list(loader.load(Source("h", "pdf", str(folder))))
    assert units and {u.locator.page for u in units} <= set(range(1, pages))
    (issue,) = loader.issues
    assert issue.path == f"huge.pdf p.{pages}" and issue.failed
    assert "too large to OCR (8 x 27,778 inches" in issue.reason


def test_a_blank_scanned_page_is_not_sent_to_tesseract(tmp_path, monkeypatch):
    """A scan's blank back costs no OCR; a page with one short word on it still goes to Tesseract."""
    import subprocess

    import pypdfium2 as pdfium

    from kbflow.sources.pdf import ocr

    blank, word = tmp_path / "blank.pdf", tmp_path / "word.pdf"
    _scan(blank, [])
    _scan(word, ["Yes"])
    sent = []

    def run(command, **kwargs):
        sent.append(command)
        return subprocess.CompletedProcess(command, 0, b"", b"")

    monkeypatch.setattr(ocr, "_binary", lambda: "tesseract")
    monkeypatch.setattr(ocr.subprocess, "run", run)
    for path in (blank, word):
        doc = pdfium.PdfDocument(str(path))
        assert ocr.ocr_page(doc[0], str(path), 1) == ([], None)
        doc.close()
    assert len(sent) == 1  # the word's page only
