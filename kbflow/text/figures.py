"""Figures as the keyword leg can match them: "$1.2 billion" finds the table cell "1,187" of a page in millions.

A question states a figure in its own scale, unit and rounding ("$1.2
billion", "1,200 million", "$11,588"); a filing prints it in the scale its
table declares once in a header ("in millions"), with thousands separators
and parentheses for negatives ("(1,187)"). Lance's tokenizer cuts "1,187"
into ``1`` and ``187`` and "$1.2 billion" into ``1``, ``2`` and
``billion``: no word of the two matches where it should.

So a figure becomes a word that says its value rounded to two significant
digits (``n12x2``: 12 times ten to the 2), the same at index and at query
time:

- at index time (:func:`figure_words`), each figure of a text gives its value
  as written (a table's scale is not known from its cell, so "1,187" is
  ``n12x2``), and a figure with a scale word ("13.2 billion") its value in
  units too (``n13x9``).
- at query time (:func:`query_figure_words`), each figure the question states
  as money (a currency sign, a scale word or a thousands separator) gives its
  value in units, thousands, millions and billions: the four scales a
  filing's table prints in. "$1.2 billion" gives ``n12x8``, ``n12x5``,
  ``n12x2`` and ``n12xm1``, which match "1,200,000,000", "1,187,000" (a
  table in thousands), "1,187" (in millions) and "$1.2 billion" in prose.

One word a figure, at two digits: a rounding a question states ("$11.6
billion") still meets its cell ("11,588"), and a table's chunk grows by
one word a figure. With the digits joined (``11588``) and a three-digit word
as well, tables grew three times as much and ranked worse for questions
that state no figure (``bench/filings/figures.jsonl`` and
``questions.jsonl``, docs/evaluation.md).

Percentages ("30.8%"), years (2019), single digits ("Note 5") and numbers
inside words (``FY2022``, ``v1.2.3``) are left as the tokenizer reads them.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = ["DIGITS", "MAX_FIGURES", "TABLE_SCALES", "figure_words", "query_figure_words"]

#: figure words added to one text at most (a table of thousands of cells stays bounded)
MAX_FIGURES = 512
#: a figure's value is a word at this many significant digits
DIGITS = 2
#: the powers of ten a filing's table prints its figures in: units, thousands, millions, billions
TABLE_SCALES = (0, 3, 6, 9)
_SCALES = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "m": 6, "billion": 9, "bn": 9, "b": 9, "trillion": 12, "t": 12}
# a figure: an optional currency sign, digits (with thousands separators or a decimal part), then an optional
# percent sign or scale word; never inside a word, a dotted version or a name (FY2022, v1.2.3, 10.0.0.1, 10-K)
_FIGURE = re.compile(
    r"(?<![\w.,])(?P<cur>[$€£¥]\s?)?\(?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:(?P<suffix>[kmbt]|bn|mn)\b|(?!\w|[.,]\d|-[a-z]))\)?"
    r"(?P<pct>\s?%|\s?percent\b)?"
    r"(?:\s?(?P<scale>thousands?|millions?|billions?|trillions?|bn|mn|[kmbt])\b)?",
    re.IGNORECASE,
)


def _rounded(value: Decimal, digits: int) -> tuple[str, int] | None:
    """``value`` rounded to ``digits`` significant digits, as its digits without trailing zeros and the power
    of ten they are multiplied by (``1187``, 2 -> ``("12", 2)``); ``None`` for zero."""
    if value <= 0:
        return None
    exponent = value.adjusted() - digits + 1
    whole = int((value.scaleb(-exponent)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    if whole >= 10**digits:  # 9,996 to three digits is 1,000 times ten: one digit more
        whole //= 10
        exponent += 1
    text = str(whole)
    stripped = text.rstrip("0")
    return stripped, exponent + len(text) - len(stripped)


def _word(digits: str, exponent: int) -> str:
    """The token of a value: ``n12x2`` (12e2), ``n55xm2`` (55e-2): letters and digits only, as the index cuts."""
    return f"n{digits}x{exponent}" if exponent >= 0 else f"n{digits}xm{-exponent}"


def _figures(text: str):
    """Each figure of ``text`` that is not a percentage: its value as written, the power of ten of its scale
    word (0 for none), and whether it was written as a figure of money (a currency sign, a scale word or a
    thousands separator)."""
    for found in _FIGURE.finditer(text):
        if found.group("pct"):
            continue
        num = found.group("num")
        scale_word = (found.group("suffix") or found.group("scale") or "").lower().removesuffix("s")
        if scale_word in ("m", "b", "k", "t") and not found.group("cur"):
            scale_word = ""  # "5 m" is five metres; "$5M" is five million dollars
        scale = _SCALES.get(scale_word, 0) if scale_word else 0
        try:
            value = Decimal(num.replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the pattern admits only digits, commas and one point
            continue
        money = bool(found.group("cur") or scale or "," in num)
        if not money and ("." not in num and (value < 10 or (len(num) == 4 and 1900 <= value <= 2100))):
            continue  # a single digit ("Note 5") or a year
        yield value, scale, money


def figure_words(text: str) -> str:
    """The word of each figure's value in an indexed text (:data:`DIGITS` significant digits), as written
    and, with a scale word, in units; each word once, at most :data:`MAX_FIGURES`."""
    seen: dict[str, None] = {}
    for n, (value, scale, _money) in enumerate(_figures(text)):
        for shift in dict.fromkeys((0, scale)):
            rounded = _rounded(value.scaleb(shift), DIGITS)
            if rounded is not None:
                seen.setdefault(_word(*rounded), None)
        if len(seen) >= MAX_FIGURES or n >= 4 * MAX_FIGURES:  # bounded however many figures repeat
            break
    return " ".join(list(seen)[:MAX_FIGURES])


def query_figure_words(query: str) -> str:
    """The words of each figure a question states as money (a currency sign, a scale word or thousands
    separators): its value (:data:`DIGITS` significant digits) in each of the scales a table prints in
    (:data:`TABLE_SCALES`)."""
    seen: dict[str, None] = {}
    for value, scale, money in _figures(query):
        if not money:
            continue
        units = value.scaleb(scale)
        for table in TABLE_SCALES:
            scaled = units.scaleb(-table)
            if scaled < 1 and table:
                continue  # no table prints a figure this small in that scale
            rounded = _rounded(scaled, DIGITS)
            if rounded is not None:
                seen.setdefault(_word(*rounded), None)
    return " ".join(seen)
