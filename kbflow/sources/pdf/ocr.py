"""Scanned pages read by OCR: Tesseract over the page as pdfium renders it, every word with its box.

A page whose text layer is empty, or garbage (mostly characters no reader
would type: replacement characters, private-use glyphs, control codes), is
rendered at :data:`OCR_DPI` (coarser for a page over :data:`OCR_MAX_PIXELS`
pixels; one too large to read even so fails alone) and, unless it is blank
(under :data:`OCR_MIN_INK` dark pixels), read by Tesseract (Debian's ``tesseract-ocr``
with its English data, run offline as a subprocess: ``tesseract - - tsv``).
Its words come back with pixel boxes, scaled to PDF points from the top-left
of the crop box, the same space as pdfium's words, so lines, columns,
chunks, regions on the page picture and citations work as on born-digital
pages. Each word keeps Tesseract's confidence; the page's confidence is their
mean (0-1), stored in its layout and on every chunk's locator
(``ocr_confidence``; hits from OCR say so).

A missing or failing engine fails only the scanned pages that hold ink, with
a message that says how to install it (a blank page, "no ink", needs no
engine and is no failure); ``$KBFLOW_TESSERACT`` names another binary and
``$KBFLOW_OCR_LANG`` other languages (``eng+deu``, their data installed).
"""

from __future__ import annotations

import collections
import io
import math
import os
import re
import shutil
import subprocess
import unicodedata
from functools import cache
from typing import Any

from kbflow.config.env import env
from kbflow.errors import SourceError

__all__ = ["OCR_DPI", "engine", "inked", "needs_ocr", "ocr_dpi", "ocr_page", "parse_tsv", "word_recall"]

#: render resolution for OCR (Tesseract reads 300 dpi scans best)
OCR_DPI = 300
#: seconds one page may take
OCR_TIMEOUT = 120
#: the most pixels a page is rendered with (a letter page at 300 dpi has 8.4 million; an A0 poster gets ~150 dpi)
OCR_MAX_PIXELS = 64_000_000
#: the most pixels a side (Tesseract reads images up to 32,767)
OCR_MAX_SIDE = 32_000
#: a page that would be rendered coarser than this to stay within those bounds is too large to read
OCR_MIN_DPI = 50
#: a rendered page with fewer dark pixels than this (at 300 dpi; a letter of 10-point text has about 250) holds
#: no text: it is not sent to Tesseract (a scan's blank backs, each about 0.6 s of Tesseract's time)
OCR_MIN_INK = 50
INSTALL_HINT = "install it with `apt-get install tesseract-ocr tesseract-ocr-eng` (or set $KBFLOW_TESSERACT)"


def _binary() -> str | None:
    return env("KBFLOW_TESSERACT") or shutil.which("tesseract")


@cache
def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return "tesseract"
    first = (out.stdout or out.stderr).splitlines()[:1]
    return first[0].strip() if first else "tesseract"


def engine() -> str | None:
    """The OCR engine and version (``"tesseract 5.3.0"``), ``None`` when none is installed."""
    binary = _binary()
    return _version(binary) if binary else None


def needs_ocr(words: list[dict[str, Any]]) -> bool:
    """Whether a page's text layer is empty or garbage (under a third of its characters letters or digits,
    or a fifth replacement, private-use or control characters)."""
    text = "".join(w["text"] for w in words)
    if not text.strip():
        return True
    counts = collections.Counter(text)  # each distinct character judged once: a page has thousands, of a hundred kinds
    letters = sum(n for ch, n in counts.items() if ch.isalnum())
    junk = sum(n for ch, n in counts.items() if ch == "\ufffd" or unicodedata.category(ch) in ("Co", "Cc", "Cn"))
    return letters < len(text) / 3 or junk > len(text) / 5


def parse_tsv(tsv: str, scale: float) -> tuple[list[dict[str, Any]], float | None]:
    """Tesseract's TSV as words ``{"text", "x0", "x1", "top", "bottom", "conf"}`` (pixels times ``scale``) and
    their mean confidence (0-1; ``None`` without a word)."""
    words: list[dict[str, Any]] = []
    lines = tsv.splitlines()
    for line in lines[1:]:
        cols = line.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        try:
            left, top, width, height, conf = (float(c) for c in cols[6:11])
        except ValueError:
            continue
        if conf < 0:
            continue
        words.append(
            {
                "text": cols[11].strip(),
                "x0": left * scale,
                "x1": (left + width) * scale,
                "top": top * scale,
                "bottom": (top + height) * scale,
                "conf": conf / 100.0,
            }
        )
    mean = sum(w["conf"] for w in words) / len(words) if words else None
    return words, mean


def _environment() -> dict[str, str]:
    """Tesseract's environment: one OpenMP thread unless ``$OMP_THREAD_LIMIT`` says otherwise (pages are read
    by one worker process per CPU already: more threads would only compete with them)."""
    env = dict(os.environ)
    env.setdefault("OMP_THREAD_LIMIT", "1")
    return env


def ocr_dpi(width: float, height: float, dpi: float = OCR_DPI) -> float:
    """The resolution a page of ``width`` x ``height`` points is rendered at for OCR: ``dpi``, lowered where
    the picture would hold over :data:`OCR_MAX_PIXELS` pixels or :data:`OCR_MAX_SIDE` a side (0 for a page
    with no area)."""
    inches_w, inches_h = max(0.0, width) / 72, max(0.0, height) / 72
    if inches_w * inches_h <= 0:
        return 0.0
    return min(float(dpi), math.sqrt(OCR_MAX_PIXELS / (inches_w * inches_h)), OCR_MAX_SIDE / max(inches_w, inches_h))


def inked(gray: Any, dpi: float = OCR_DPI) -> bool:
    """Whether a grayscale page rendered at ``dpi`` holds ink: :data:`OCR_MIN_INK` dark pixels (under 128 of
    255) at 300 dpi, fewer at a coarser resolution."""
    dark = sum(gray.histogram()[:128])
    return dark >= OCR_MIN_INK * (dpi / OCR_DPI) ** 2


def ocr_page(page: Any, path: str, number: int, dpi: float = OCR_DPI) -> tuple[list[dict[str, Any]], float | None]:
    """OCR one pdfium page: its words in PDF points (crop box, rotation applied) and their mean confidence.

    Raises
    ------
    SourceError
        The page is too large to render for OCR, no engine is installed, or it failed on this page (the
        message says which, and how to install one).
    """
    width, height = page.get_size()
    dpi = ocr_dpi(width, height, dpi)
    if dpi < OCR_MIN_DPI:
        raise SourceError(
            f"{path}: p.{number}: a scanned page too large to OCR ({width / 72:,.0f} x {height / 72:,.0f} inches: "
            f"within {OCR_MAX_PIXELS:,} pixels, {OCR_MAX_SIDE:,} a side, it would be read at {dpi:.1f} dpi, under "
            f"{OCR_MIN_DPI})"
        )
    bitmap = page.render(scale=dpi / 72)
    try:
        image = bitmap.to_pil()
    finally:
        bitmap.close()
    # an uncompressed BMP: Tesseract reads the same pixels as from a PNG, without the time a 300 dpi page takes to
    # compress (pages/s before and after: docs/performance.md, python bench/ocr.py)
    gray = image.convert("L")
    if not inked(gray, dpi):  # a blank page needs no engine: it is no failure where none is installed
        return [], None
    binary = _binary()
    if binary is None:
        raise SourceError(f"{path}: p.{number} is a scanned page and no OCR engine is installed; {INSTALL_HINT}")
    picture = io.BytesIO()
    gray.save(picture, format="BMP")
    lang = env("KBFLOW_OCR_LANG", "eng")
    command = [binary, "-", "-", "-l", lang, "--dpi", str(round(dpi)), "tsv"]
    try:
        done = subprocess.run(
            command, input=picture.getvalue(), capture_output=True, timeout=OCR_TIMEOUT, check=False, env=_environment()
        )
    except subprocess.TimeoutExpired:
        raise SourceError(f"{path}: p.{number}: OCR took over {OCR_TIMEOUT} s") from None
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise SourceError(f"{path}: p.{number}: the OCR engine {binary} cannot run ({why}); {INSTALL_HINT}") from None
    if done.returncode != 0:
        detail = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        raise SourceError(f"{path}: p.{number}: OCR failed (exit status {done.returncode}: {detail}); {INSTALL_HINT}")
    return parse_tsv(done.stdout.decode("utf-8", "replace"), 72 / dpi)


def _words_of(text: str) -> list[str]:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u2014", " ").replace("\u2013", " ")
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)  # a word hyphenated at a line end is one word
    out = []
    for token in text.lower().split():
        token = token.strip(".,;:!?\"'()[]*")
        if token:
            out.append(token)
    return out


def word_recall(truth: str, text: str) -> float:
    """The share of ``truth``'s words (lower case, punctuation around them stripped, line-end hyphens joined)
    found in ``text``, each as often as it occurs: OCR word accuracy against a transcript."""
    want = collections.Counter(_words_of(truth))
    got = collections.Counter(_words_of(text))
    total = sum(want.values())
    return sum(min(n, got[w]) for w, n in want.items()) / total if total else 1.0
