"""Write data/samples/pdf/kbflow-guide.pdf: a two-page PDF of kbflow's retry and lake notes.

Plain PDF syntax with the standard Helvetica font, so no PDF library is needed.
The file is committed; re-run this script after editing PAGES.

    python data/samples/make_pdf.py
"""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "pdf", "kbflow-guide.pdf")

PAGES = [
    [
        (18, "kbflow operations guide"),
        (11, ""),
        (13, "Retries and backoff"),
        (11, "When a source cannot be read, kbflow marks it failed and records the error."),
        (11, "The next ingest retries every failed source from the start; nothing is"),
        (11, "retried inside one run, so a broken file never blocks the other sources."),
        (11, "Dagster runs may add their own retry policy on top of this behaviour."),
    ],
    [
        (13, "Garbage collection of old versions"),
        (11, "Every write to the lake is a new Lance version. Run kbflow gc with keep"),
        (11, "and older-than to delete old versions; tagged versions are always kept,"),
        (11, "and so is the latest version of every table."),
    ],
]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def build(
    pages: list[list[tuple[int, str]]] = PAGES,
    footer: str | None = "kbflow sample document",
    padding: int = 0,
    drawing: tuple[str, ...] = (),
) -> bytes:
    """The PDF's bytes: one page per entry of ``pages`` ((font size, line) pairs), ``footer`` on each page.

    ``padding`` bytes of content-stream comment on the first page make a file of any size (size-limit tests);
    ``drawing``: content-stream operators added to every page (lines and rectangles of table tests).
    """
    objects: list[bytes] = []
    kids = []
    font_id = 3
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(b"")  # pages, filled below
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for lines in pages:
        y, ops = 740, []
        for size, text in lines:
            if text:
                ops.append(f"BT /F1 {size} Tf 72 {y} Td ({_escape(text)}) Tj ET")
            y -= int(size * 1.6)
        if footer:
            ops.append(f"BT /F1 9 Tf 72 40 Td ({_escape(footer)}) Tj ET")
        else:  # a page with a drawing and no text, as a scan without OCR reads
            ops.append("0 0 m 100 100 l S")
        ops.extend(drawing)
        if padding and not kids:
            ops.append("%" + "x" * padding)
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_id = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (font_id, content_id)
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


if __name__ == "__main__":
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as fh:
        fh.write(build())
    print(OUT)
