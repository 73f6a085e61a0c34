"""What a claim states, read from its words: a subject, an attribute and a value (pure functions).

Conflicts (:mod:`kbflow.claims.conflicts`) compare claims that state the
same attribute of the same subject. :func:`read_fact` reads the forms
analysts write:

- ``Acme's revenue was $1.2 billion in FY2022`` (``'s``, then a verb:
  was, is, were, are, stood at, totaled, amounted to, reached, came to, of);
- ``The revenue of Acme Corp for 2022 was 1,200 million``;
- ``Acme reported revenue of $1.2 billion for fiscal 2022``;
- ``Acme had 12,000 employees at December 31, 2022``;
- ``Revenue (Acme, FY2022): $1.2 billion``.

Names are compared normalized (:func:`subject_key`: case, ``the``,
company suffixes such as ``Inc.`` or ``Corporation``; :func:`attribute_key`:
case, ``total``, plurals, and a few synonyms of one line item). Numbers are
compared after their scale and unit are read (:class:`Quantity`): "$1.2
billion" equals "1,200 million" and "$1,213 million" (the same figure at
the first's rounding); "(1,200)" is negative.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from kbflow.claims.periods import strip_periods

__all__ = ["Fact", "Quantity", "attribute_key", "quantity", "read_fact", "same_value", "subject_key"]

_SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "m": 1e6,
    "millions": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "billions": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
    "thousands": 1e3,
}
_CURRENCIES = {
    "$": "USD",
    "usd": "USD",
    "us$": "USD",
    "€": "EUR",
    "eur": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "¥": "JPY",
    "jpy": "JPY",
    "dollars": "USD",
    "euros": "EUR",
    "pounds": "GBP",
}
_NUMBER = re.compile(
    r"(?P<neg>[-−(])?\s*(?P<cur>US\$|\$|€|£|¥|USD|EUR|GBP|JPY)?\s*(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<close>\))?\s*(?P<scale>thousands?|millions?|billions?|trillion|mn|mm|bn|tn|[kmb]\b)?\s*(?P<pct>%|percent\b)?"
    r"\s*(?P<cur2>USD|EUR|GBP|JPY|dollars|euros|pounds)?\)?",
    re.I,
)
_VERB = r"(?:was|were|is|are|stood\s+at|totall?ed|amounted\s+to|reached|came\s+to|equall?ed|of|:|=)"
_FORMS = [
    re.compile(rf"^(?P<subject>.+?)['’]s?\s+(?P<attribute>[^:=]+?)\s+{_VERB}\s+(?P<value>.+)$", re.I),
    re.compile(
        r"^(?:the\s+)?(?P<attribute>.+?)\s+(?:of|for|at)\s+(?P<subject>[A-Z][\w&.,'’\- ]*?)\s+"
        r"(?:was|were|is|are|stood\s+at|totall?ed|amounted\s+to|reached|came\s+to)\s+(?P<value>.+)$"
    ),
    re.compile(
        r"^(?P<subject>.+?)\s+(?:reported|recorded|posted|had|has|employed|employs)\s+(?:an?\s+|total\s+)?"
        r"(?P<attribute>[a-z][\w\s&-]*?)\s+of\s+(?P<value>.+)$",
        re.I,
    ),
    re.compile(
        r"^(?P<subject>.+?)\s+(?:had|has|employed|employs)\s+(?P<value>[$€£]?[\d.,]+\s*\w*?)\s+"
        r"(?P<attribute>[a-z][\w\s-]*)$",
        re.I,
    ),
    re.compile(r"^(?P<attribute>[^()]+?)\s*\((?P<subject>[^,()]+)(?:,[^()]*)?\)\s*[:=]\s*(?P<value>.+)$"),
]
_SUFFIXES = re.compile(
    r"\b(?:inc|incorporated|corp|corporation|co|company|ltd|limited|plc|llc|lp|ag|sa|nv|se|group|holdings?)\b\.?",
    re.I,
)
#: line items written more than one way (compared as the first)
SYNONYMS = {
    "revenue": ("revenue", "revenues", "net revenue", "net revenues", "net sales", "sales", "turnover"),
    "net income": ("net income", "net earnings", "profit", "net profit"),
    "employees": ("employees", "headcount", "staff", "full-time employees", "workforce"),
    "chief executive officer": ("chief executive officer", "ceo", "chief executive"),
    "headquarters": ("headquarters", "head office", "hq"),
}
_SYNONYM = {variant: key for key, variants in SYNONYMS.items() for variant in variants}
_FILLER = re.compile(r"\b(?:the|its|their|total|annual|reported|a|an)\b", re.I)


@dataclass(frozen=True)
class Quantity:
    """A number as written: its ``value`` at scale, its ``unit`` (``USD``, ``%``, ``None``) and ``step``, the
    size of the last digit written (``1.2 billion``: 0.1 billion), which says how it was rounded."""

    value: float
    unit: str | None
    step: float


@dataclass(frozen=True)
class Fact:
    """What a claim states: ``subject``'s ``attribute`` is ``value`` (as written, periods left out)."""

    subject: str
    attribute: str
    value: str

    @property
    def key(self) -> tuple[str, str]:
        """``(subject, attribute)`` normalized: claims of one key state the same thing."""
        return subject_key(self.subject), attribute_key(self.attribute)


def quantity(text: str) -> Quantity | None:
    """The one number ``text`` states, read with its scale and unit (``None``: none, or more than one)."""
    found = [m for m in _NUMBER.finditer(text) if m.group("num")]
    if len(found) != 1:
        return None
    m = found[0]
    digits = m.group("num").replace(",", "")
    scale = _SCALES.get((m.group("scale") or "").lower(), 1.0)
    decimals = len(digits.partition(".")[2])
    value = float(digits) * scale
    negative = m.group("neg") in ("-", "−") or (m.group("neg") == "(" and ")" in m.group(0))
    currency = (m.group("cur") or m.group("cur2") or "").lower()
    unit = "%" if m.group("pct") else _CURRENCIES.get(currency)
    return Quantity(-value if negative else value, unit, scale / 10**decimals)


def same_value(a: str, b: str) -> bool | None:
    """Whether two values as written are the same: numbers at the coarser one's rounding, words as words;
    ``None`` when they cannot be compared (a number and words, or two units)."""
    qa, qb = quantity(a), quantity(b)
    if qa is not None and qb is not None:
        if qa.unit and qb.unit and qa.unit != qb.unit:
            return None
        return abs(qa.value - qb.value) <= max(qa.step, qb.step) / 2 + 1e-9 * max(abs(qa.value), abs(qb.value))
    if (qa is None) != (qb is None):
        return None
    return _words(a) == _words(b)


def _words(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", _FILLER.sub(" ", text.lower())))


def subject_key(subject: str) -> str:
    """A subject normalized: lower case, without ``the``, possessives and company suffixes."""
    text = re.sub(r"['’]s\b", "", subject)
    text = _SUFFIXES.sub(" ", text)
    text = re.sub(r"^\s*the\b", " ", text, flags=re.I)
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def attribute_key(attribute: str) -> str:
    """An attribute normalized: lower case, without filler words; a plural read as its singular; one name per
    line item of :data:`SYNONYMS`."""
    text = " ".join(re.findall(r"[\w&-]+", attribute.lower()))
    if text in _SYNONYM:
        return _SYNONYM[text]
    text = " ".join(_FILLER.sub(" ", text).split())
    if text in _SYNONYM:
        return _SYNONYM[text]
    words = text.split()
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    text = " ".join(words)
    return _SYNONYM.get(text, text)


def _clean(text: str) -> str:
    text = strip_periods(text)
    text = re.sub(r"(?:\s+(?:in|for|during|at|as\s+of|on|of|by|the))+\s*$", "", text.strip(" .;,"), flags=re.I)
    return text.strip(" .;,")


@functools.lru_cache(maxsize=1 << 18)  # a claim's text never changes: each is read once per process
def read_fact(text: str) -> Fact | None:
    """The fact a claim's ``text`` states (``None``: none of the forms this module reads)."""
    sentence = " ".join(text.split()).rstrip(".")
    sentence = re.split(r"[;]|,\s+(?:up|down|compared|an?\s+(?:increase|decrease))\b", sentence, maxsplit=1)[0]
    body = _clean(sentence)
    for form in _FORMS:
        m = form.match(body)
        if m is None:
            continue
        subject, attribute, value = (_clean(m.group(g)) for g in ("subject", "attribute", "value"))
        if not subject or not attribute or not value or len(attribute.split()) > 6 or len(subject.split()) > 8:
            continue
        return Fact(subject, attribute, value)
    return None
