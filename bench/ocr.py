"""OCR of scanned PDF pages: pages per second and word accuracy, on a real scan and on generated ones.

    python bench/ocr.py              # tests/scans/c02-22.pdf, 8 generated pages, and with blank backs; 3 rounds
    python bench/ocr.py --rounds 5

- ``tests/scans/c02-22.pdf``: a real scanned book page (public domain; see
  tests/scans/README.md), scored against the hand-typed transcript of three
  of its passages (``c02-22.txt``);
- 8 generated pages: prose lines drawn at 150 dpi in Pillow's bundled font and
  saved as an image-only PDF, scored against the lines drawn;
- the same 8 pages as a duplex scan: each followed by a blank back (16 pages;
  a blank page is not sent to Tesseract).

Each round loads both PDFs with kbflow's PDF loader (pdfium renders each page at
300 dpi, Tesseract reads it; one worker process per CPU for the 8-page file)
and prints the median pages/s over the rounds, and the word accuracy
(:func:`kbflow.sources.pdf.ocr.word_recall`: the share of the transcript's
words found in the page text) with Tesseract's mean confidence.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from kbflow.records import Source  # noqa: E402
from kbflow.sources.base import get_loader  # noqa: E402
from kbflow.sources.pdf.ocr import engine, word_recall  # noqa: E402

PROSE = [
    "The annual inspection found no cracks in the turbine blades,",
    "but the seals of the second stage showed wear beyond the limit",
    "set by the manufacturer. They were replaced in March, and the",
    "engine returned to service after a ground run of two hours.",
    "Fuel consumption fell by three percent over the next quarter.",
]


def generated(path: str, pages: int, blank_backs: bool = False) -> str:
    """An image-only PDF of ``pages`` pages of :data:`PROSE` (each followed by a blank page where
    ``blank_backs``); returns the text drawn."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=30)
    images = []
    for _ in range(pages):
        image = Image.new("L", (1275, 1650), 255)
        draw = ImageDraw.Draw(image)
        for i, line in enumerate(PROSE * 4):
            draw.text((120, 150 + 50 * i), line, fill=0, font=font)
        images.append(image.convert("RGB"))
        if blank_backs:
            images.append(Image.new("RGB", (1275, 1650), (255, 255, 255)))
    images[0].save(path, "PDF", resolution=150, save_all=True, append_images=images[1:])
    return " ".join(PROSE * 4 * pages)


def measure(path: str, truth: str, rounds: int) -> tuple[float, float, float, int]:
    """(median pages/s, word accuracy, mean confidence, pages) of loading ``path`` ``rounds`` times (pages:
    the document's, blank ones included)."""
    import pypdfium2

    doc = pypdfium2.PdfDocument(path)
    pages = len(doc)
    doc.close()
    rates, units = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        units = list(get_loader("pdf").load(Source("bench", "pdf", path)))
        rates.append(pages / (time.perf_counter() - t0))
    text = "\n".join(u.text for u in units)
    confidence = statistics.mean(u.locator.ocr_confidence or 0.0 for u in units)
    return statistics.median(rates), word_recall(truth, text), confidence, pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=8, help="generated pages")
    args = parser.parse_args()
    if engine() is None:
        sys.exit("no OCR engine: apt-get install tesseract-ocr tesseract-ocr-eng")
    print(f"engine: {engine()}; {os.cpu_count()} CPUs")
    scans = os.path.join(ROOT, "tests", "scans")
    with open(os.path.join(scans, "c02-22.txt"), encoding="utf-8") as fh:
        truth = fh.read()
    with tempfile.TemporaryDirectory() as tmp:
        made, duplex = os.path.join(tmp, "generated.pdf"), os.path.join(tmp, "duplex.pdf")
        drawn = generated(made, args.pages)
        generated(duplex, args.pages, blank_backs=True)
        for name, path, text in (("real scan c02-22.pdf", os.path.join(scans, "c02-22.pdf"), truth),
                                 (f"generated, {args.pages} pages", made, drawn),
                                 ("with blank backs", duplex, drawn)):  # fmt: skip
            rate, accuracy, confidence, pages = measure(path, text, args.rounds)
            print(
                f"{name:24s} {pages} pages: {rate:.2f} pages/s (median of {args.rounds}), "
                f"word accuracy {accuracy:.3f}, mean confidence {confidence:.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
