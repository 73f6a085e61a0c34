"""Pictures of citations: PDF pages rendered with a chunk's regions outlined, text with the cited part marked.

Used by the web page of ``kbflow serve`` (:mod:`kbflow.service.web`) and by
notebooks (:meth:`Hit._repr_html_ <kbflow.records.Hit._repr_html_>`,
``hit.show()``). Page images are rendered with pypdfium2 (which pdfplumber
already uses) and cached on disk by (file hash, page, scale) under
``$KBFLOW_CACHE/pages`` (default ``~/.cache/kbflow/pages``).

Coordinates: a PDF locator's boxes are ``(x0, top, x1, bottom)`` in PDF
points from the page's top-left corner, so at ``scale`` pixels per point a
box is ``(x0 * scale, top * scale, x1 * scale, bottom * scale)`` on the image.
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kbflow._lazy import require
from kbflow.errors import ResolveError
from kbflow.records.hits import FIGURES

if TYPE_CHECKING:
    from kbflow.records import Citation, Hit

__all__ = ["highlight", "mark_span", "page_png", "page_regions", "pdf_file", "region_boxes"]

#: pixels per PDF point of the page images (1.5: 108 dpi, a US Letter page 918 x 1188 pixels)
DEFAULT_SCALE = 1.5
MAX_SCALE = 4.0
_render_lock = threading.Lock()  # pdfium is not thread-safe


def pdf_file(citation: Citation) -> str:
    """The PDF file a citation points into (as the resolver finds it)."""
    return citation.file_path()


#: (path, size, mtime) -> the file's hash: a page view renders and serves the same file several times
_digests: dict[tuple[str, int, int], str] = {}


def _file_digest(path: str) -> str:
    from kbflow.records import ids

    try:
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in _digests:
            if len(_digests) > 1024:
                _digests.clear()
            with open(path, "rb") as fh:
                _digests[key] = ids.bytes_hash(fh.read())
        return _digests[key]
    except OSError as exc:
        raise ResolveError(f"{path}: cannot read the PDF ({exc.strerror or exc})") from None


def page_png(path: str, page: int, scale: float = DEFAULT_SCALE) -> tuple[bytes, tuple[int, int]]:
    """Page ``page`` (1-based) of the PDF at ``path`` as PNG bytes, and its size in pixels (cached)."""
    from kbflow.config import cache_dir

    if not 0.25 <= scale <= MAX_SCALE:
        raise ResolveError(f"scale must be in 0.25..{MAX_SCALE}, got {scale}")
    pages = cache_dir("pages")
    cached = os.path.join(pages, f"{_file_digest(path)}-{page}-{scale:g}.png")
    if os.path.exists(cached):
        with open(cached, "rb") as fh:
            data = fh.read()
        return data, _png_size(data)
    pdfium = require("pypdfium2")
    with _render_lock:
        try:
            pdf = pdfium.PdfDocument(path)
        except Exception as exc:
            raise ResolveError(f"{path}: cannot open the PDF ({exc})") from None
        try:
            if not 1 <= page <= len(pdf):
                raise ResolveError(f"{path}: has {len(pdf)} pages, not a page {page}")
            image = pdf[page - 1].render(scale=scale).to_pil()
        finally:
            pdf.close()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    data = buffer.getvalue()
    try:
        os.makedirs(pages, exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, cached)
    except OSError:
        pass  # a read-only cache: render again next time
    return data, image.size


def _png_size(data: bytes) -> tuple[int, int]:
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def page_regions(citation: Citation) -> list[tuple[float, float, float, float]]:
    """The boxes of a PDF citation on its page, in PDF points (its regions there, else its bbox)."""
    loc = citation.locator
    boxes = [tuple(b) for p, b in (loc.regions or ()) if p == loc.page]
    if not boxes and loc.bbox:
        boxes = [tuple(loc.bbox)]
    return boxes  # type: ignore[return-value]  # boxes of four, as the locator stores them


def region_boxes(citation: Citation, scale: float) -> list[tuple[float, float, float, float]]:
    """:func:`page_regions` in pixels of a page image rendered at ``scale``: ``(left, top, width, height)``."""
    return [
        (x0 * scale, top * scale, (x1 - x0) * scale, (bottom - top) * scale)
        for x0, top, x1, bottom in page_regions(citation)
    ]


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking in a text (two letters or more, not a function word)."""
    from kbflow.text.terms import ENGLISH_STOPWORDS

    words = {w.lower() for w in re.findall(r"[^\W_]{2,}", query or "")} - ENGLISH_STOPWORDS
    return sorted(words, key=len, reverse=True)


def highlight(text: str, query: str) -> str:
    """``text`` as HTML (escaped) with the query's words wrapped in ``<mark>``."""
    terms = query_terms(query)
    if not terms:
        return html.escape(text)
    pattern = re.compile(r"(?i)\b(" + "|".join(re.escape(t) for t in terms) + r")")
    out, last = [], 0
    for match in pattern.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        out.append(f"<mark>{html.escape(match.group())}</mark>")
        last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def mark_span(text: str, start: int, end: int, *, tag: str = "mark", attrs: str = 'id="cited"') -> str:
    """``text`` as HTML with ``text[start:end]`` wrapped in ``<tag attrs>`` (offsets clamped)."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    return (
        html.escape(text[:start]) + f"<{tag} {attrs}>{html.escape(text[start:end])}</{tag}>" + html.escape(text[end:])
    )


def mark_lines(text: str, first: int, last: int, *, first_line: int = 1) -> str:
    """Numbered lines of ``text`` (its first line is line ``first_line``) as HTML, lines ``first..last``
    (inclusive) marked."""
    rows = []
    for n, line in enumerate(text.splitlines(), start=first_line):
        cls = ' class="cited"' if first <= n <= last else ""
        anchor = ' id="cited"' if n == first else ""
        rows.append(f'<tr{cls}{anchor}><td class="ln">{n}</td><td><pre>{html.escape(line)}</pre></td></tr>')
    return '<table class="code">' + "".join(rows) + "</table>"


def overlay_html(
    image_src: str, size: tuple[int, int], boxes: Iterable[Sequence[float]], *, width: int | None = None
) -> str:
    """An image with absolutely positioned outlines over it (``width``: shown that many pixels wide)."""
    w, h = size
    shown = width or w
    k = shown / w
    outlines = "".join(
        f'<div class="region" style="position:absolute;left:{x * k:.1f}px;top:{y * k:.1f}px;'
        f"width:{bw * k:.1f}px;height:{bh * k:.1f}px;border:2px solid #e8590c;box-sizing:border-box;"
        f'background:rgba(255,200,0,.18)"></div>'
        for x, y, bw, bh in boxes
    )
    return (
        f'<div class="page" style="position:relative;display:inline-block;width:{shown}px;height:{h * k:.0f}px">'
        f'<img src="{html.escape(image_src)}" width="{shown}" height="{h * k:.0f}" alt="page" '
        f'style="display:block">{outlines}</div>'
    )


def hit_figure(hit: Hit, *, width: int = 480, scale: float = DEFAULT_SCALE) -> str:
    """A hit as HTML for a notebook: the page with its regions outlined (PDF), the lines marked (code), else
    the text; always with the citation above."""
    cite = html.escape(hit.citation.render())
    head = f'<div style="font:13px sans-serif;margin:4px 0"><b>{hit.rank}.</b> <code>{cite}</code></div>'
    loc = hit.citation.locator
    if loc.kind == "pdf" and loc.page:
        try:
            data, size = page_png(pdf_file(hit.citation), loc.page, scale)
        except ResolveError as exc:
            return head + f"<p><i>page not rendered: {html.escape(str(exc))}</i></p><pre>{html.escape(hit.text)}</pre>"
        src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        return head + overlay_html(src, size, region_boxes(hit.citation, scale), width=width)
    if loc.kind == "code" and loc.line_start:
        lines = hit.text.splitlines()
        rows = "".join(
            f'<tr style="background:#fff3bf"><td style="color:#868e96;padding-right:8px;text-align:right">{n}</td>'
            f"<td><pre style='margin:0'>{html.escape(line)}</pre></td></tr>"
            for n, line in enumerate(lines, start=loc.line_start)
        )
        return head + f"<table style='font:12px monospace;border-collapse:collapse'>{rows}</table>"
    return head + f"<pre style='white-space:pre-wrap;background:#fff3bf;padding:6px'>{html.escape(hit.text)}</pre>"


def thumbnail(hit: Hit, *, width: int = 120, scale: float = 0.5) -> str:
    """A small page image with the regions outlined, for a PDF hit ("" for other hits or an unreadable page)."""
    loc = hit.citation.locator
    if loc.kind != "pdf" or not loc.page:
        return ""
    try:
        data, size = page_png(pdf_file(hit.citation), loc.page, scale)
    except ResolveError:
        return ""
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return overlay_html(src, size, region_boxes(hit.citation, scale), width=width)


FIGURES.update(figure=hit_figure, thumbnail=thumbnail)  # hits draw themselves in notebooks with these
