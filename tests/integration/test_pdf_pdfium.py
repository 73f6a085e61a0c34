"""Words from pdfium's characters: the grouping rules, and which pages need each character's angle."""

import importlib.util
import random

import numpy as np
from conftest import SAMPLES

from kbflow.sources.pdf import parse as pdfparse
from kbflow.sources.pdf import pdfium
from kbflow.sources.pdf.pdfium import X_TOLERANCE_RATIO, Y_TOLERANCE

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)


def _by_the_rules(chars):
    """The grouping rules, one character at a time: lines by top (a chain within the tolerance), each
    sorted by x; a word ends after a blank in the text or before a gap wider than a share of the height."""
    visible = [dict(c, after_blank=i > 0 and chars[i - 1]["text"] == " ") for i, c in enumerate(chars)]
    visible = sorted((c for c in visible if c["text"] != " "), key=lambda c: c["top"])
    lines, last = [], None
    for ch in visible:
        if last is None or ch["top"] - last > Y_TOLERANCE:
            lines.append([])
        lines[-1].append(ch)
        last = ch["top"]
    words = []
    for line in lines:
        current = []
        for ch in sorted(line, key=lambda c: c["x0"]):
            if current and (ch["after_blank"] or ch["x0"] - current[-1]["x1"] > X_TOLERANCE_RATIO * ch["size"]):
                words.append(current)
                current = []
            current.append(ch)
        words.append(current)
    return [
        {
            "text": "".join(c["text"] for c in w),
            "x0": w[0]["x0"],
            "x1": max(c["x1"] for c in w),
            "top": min(c["top"] for c in w),
            "bottom": max(c["bottom"] for c in w),
        }
        for w in words
    ]


def test_words_are_grouped_exactly_as_the_rules_say_one_character_at_a_time():
    rng = random.Random(7)
    for _ in range(200):
        chars = []
        for _ in range(rng.randint(0, 120)):
            if rng.random() < 0.15:
                chars.append({"text": " "})
                continue
            top = rng.choice([100.0, 101.5, 103.0, 104.2, 130.0, 131.0]) + rng.choice([0.0, 0.0, rng.random()])
            x0 = rng.choice([10.0, 20.0, 20.0, 35.5]) + rng.randint(0, 40) * rng.choice([1.0, 2.5, 6.0])
            size = rng.choice([6.0, 10.0, 12.0])
            chars.append({"text": rng.choice("abcXYZ19$%"), "x0": x0, "x1": x0 + rng.choice([3.0, 5.5]), "top": top})
            chars[-1].update(bottom=top + size, size=size)
        texts = "".join(c["text"] for c in chars)
        blanks = np.array([c["text"] == " " for c in chars], dtype=bool)
        boxes = np.array([[c.get(k, 0.0) for k in ("x0", "top", "x1", "bottom")] for c in chars]).reshape(-1, 4)
        assert pdfium._grouped(texts, blanks, boxes) == _by_the_rules(chars)


def test_an_unrotated_page_with_a_turned_line_checks_every_characters_angle(tmp_path):
    turned = "BT /F1 12 Tf 0 1 -1 0 300 300 Tm (Sideways margin note) Tj ET"
    plain, with_turned = tmp_path / "plain.pdf", tmp_path / "turned.pdf"
    plain.write_bytes(make_pdf.build(pages=[[(12, "Level text only")]], footer=None))
    with_turned.write_bytes(make_pdf.build(pages=[[(12, "Level text only")]], footer=None, drawing=(turned,)))
    seen = {}
    for path in (plain, with_turned):
        doc = pdfparse.Document(str(path))
        seen[path.name] = (pdfium._objects_upright(doc.pdfium[0]), pdfparse.parse_page(doc, 1)["words"])
        doc.close()
    assert seen["plain.pdf"][0] is True and seen["turned.pdf"][0] is False
    texts = [w["text"] for w in seen["turned.pdf"][1]]
    assert texts == ["Level", "text", "only"]  # the sideways note left out, as before
    assert texts == [w["text"] for w in seen["plain.pdf"][1]]


def test_unchecked_calls_give_what_pypdfium2s_bindings_give(tmp_path):
    import ctypes

    import pypdfium2
    import pypdfium2.raw as raw

    path = tmp_path / "p.pdf"
    path.write_bytes(make_pdf.build(pages=[[(11, "Quarter  Revenue  Cost"), (9, "naïve: 12.5% (in millions)")]]))
    pdf = pypdfium2.PdfDocument(str(path))
    textpage = pdf[0].get_textpage()
    unicode, box = pdfium.unchecked("FPDFText_GetUnicode"), pdfium.unchecked("FPDFText_GetLooseCharBox")
    theirs, ours = raw.FS_RECTF(), raw.FS_RECTF()
    count = textpage.count_chars()
    assert count > 30
    for i in range(count):
        assert unicode(textpage.raw, i) == raw.FPDFText_GetUnicode(textpage.raw, i)
        assert box(textpage.raw, i, ctypes.byref(ours)) == raw.FPDFText_GetLooseCharBox(textpage.raw, i, theirs)
        assert (ours.left, ours.top, ours.right, ours.bottom) == (theirs.left, theirs.top, theirs.right, theirs.bottom)
    textpage.close()
    pdf.close()


def test_utf16_halves_join_and_codes_no_character_has_become_replacement_characters(tmp_path, monkeypatch):
    """pdfium gives a character beyond the BMP (a LaTeX math letter) as two UTF-16 halves with one box, and a
    broken font's map can give a lone half or a code past U+10FFFF: one character each, never a lone surrogate
    (which no UTF-8 column can hold) or a failed page."""
    import pypdfium2

    assert pdfium.code_point(0xD835, 0xDC65) == (0x1D465, True)  # 𝑥, MATHEMATICAL ITALIC SMALL X
    assert pdfium.code_point(0xD835, 0x41) == (0xFFFD, False)  # a high half without its low half
    assert pdfium.code_point(0xDC65, 0xDC65) == (0xFFFD, False)  # a low half alone
    assert pdfium.code_point(0x110000, 0) == (0xFFFD, False)
    assert pdfium.code_point(0xE000, 0xDC00) == (0xE000, False)  # a private-use glyph is itself
    path = tmp_path / "p.pdf"
    path.write_bytes(make_pdf.build(pages=[[(11, "abcdefgh")]], footer=None))
    real = pdfium.unchecked

    def broken_font(name: str):
        call = real(name)
        if name != "FPDFText_GetUnicode":
            return call
        codes = {0: 0xD835, 1: 0xDC65, 3: 0xDFFF, 5: 0x7FFFFFFF}  # "ab" one character; "d" and "f" none

        def unicode(textpage, i):
            return codes.get(i, call(textpage, i))

        return unicode

    monkeypatch.setattr(pdfium, "unchecked", broken_font)
    pdf = pypdfium2.PdfDocument(str(path))
    textpage = pdf[0].get_textpage()
    texts, blanks, boxes, _, _ = pdfium._chars(pdf[0], textpage)
    assert texts == "\U0001d465c\ufffde\ufffdgh" and len(boxes) == len(texts) == len(blanks)
    texts.encode("utf-8")
    textpage.close()
    pdf.close()
