"""When a claim holds in the world: dates and periods read from what people write (pure functions).

A claim's valid time is ``valid_from`` .. ``valid_to`` (dates, both ends
included; ``None`` is open). It is given to ``Claims.learn``, or read from
the claim's text, or else from its evidence where the evidence names one
period only:

- ``fiscal year ended December 31, 2022``, ``for the year ended ...``:
  the twelve months ending that day;
- ``three months ended ...``, ``quarter ended ...``, ``six months ended ...``,
  ``nine months ended ...``: those months, ending that day;
- ``Q3 2023``, ``2023 Q3``, ``third quarter of 2023``: that calendar quarter;
- ``FY2022``, ``fiscal 2022``, ``in 2022``, ``for 2022``: that calendar year
  (a fiscal year that ends in another month needs the ``year ended`` form,
  or ``valid_from`` / ``valid_to`` given);
- ``as of September 30, 2023``, ``at December 31, 2022``, ``on 2023-09-30``:
  that one day.

:func:`parse_date` reads the dates a caller gives: ``2022-12-31``,
``2022-12``, ``2022``, ``December 31, 2022``, ``31 December 2022``, or a
:class:`~datetime.date`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from kbflow.errors import ClaimError

__all__ = ["Period", "check_valid", "holds_at", "overlaps", "parse_date", "period_in", "period_of", "strip_periods"]

#: a claim's valid time: (valid_from, valid_to), ``None`` an open end
Period = tuple[date | None, date | None]

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?:19|20)\d\d"
#: a written date: "December 31, 2022", "31 December 2022", "2022-12-31"
_DATE = rf"(?:{_MONTH}\s+\d{{1,2}},?\s+{_YEAR}|\d{{1,2}}\s+{_MONTH},?\s+{_YEAR}|{_YEAR}-\d\d-\d\d)"
_SPAN_MONTHS = {"three": 3, "3": 3, "six": 6, "6": 6, "nine": 9, "9": 9, "twelve": 12, "12": 12}
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "ended",
        re.compile(
            rf"\b(?:(?:fiscal\s+)?year|(?P<span>three|six|nine|twelve|3|6|9|12)[\s-]+months?|"
            rf"(?P<quarter>quarter))\s+end(?:ed|ing)\s+(?P<date>{_DATE})",
            re.I,
        ),
    ),
    (
        "quarter",
        re.compile(
            rf"\b(?:Q(?P<q>[1-4])\s*(?:FY\s*)?(?P<y>{_YEAR})|(?P<y2>{_YEAR})\s*Q(?P<q2>[1-4])|"
            rf"(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\s+(?:of\s+)?"
            rf"(?:fiscal\s+(?:year\s+)?)?(?P<y3>{_YEAR}))\b",
            re.I,
        ),
    ),
    ("instant", re.compile(rf"\b(?:as\s+of|as\s+at|at|on)\s+(?P<date>{_DATE})", re.I)),
    (
        "year",
        re.compile(
            rf"\b(?:FY\s*'?(?P<fy>{_YEAR}|\d\d)|fiscal\s+(?:year\s+)?(?P<fiscal>{_YEAR})|"
            rf"(?:in|for|during|throughout|as\s+of)\s+(?:calendar\s+(?:year\s+)?)?(?P<y>{_YEAR}))\b",
            re.I,
        ),
    ),
]


def _month_day(text: str) -> date:
    """A date written ``December 31, 2022``, ``31 December 2022`` or ``2022-12-31``."""
    text = " ".join(text.replace(",", " ").split())
    if re.fullmatch(rf"{_YEAR}-\d\d-\d\d", text):
        return date.fromisoformat(text)
    parts = text.split()
    if parts[0][0].isdigit():  # 31 December 2022
        day, month, year = parts
    else:
        month, day, year = parts
    return date(int(year), MONTHS[month.rstrip(".").lower()], int(day))


def parse_date(value: Any, what: str = "date") -> date:
    """A date from a :class:`date`, ``YYYY-MM-DD``, ``YYYY-MM`` (its first day), ``YYYY`` (January 1) or a
    written date (``December 31, 2022``); a :class:`~kbflow.errors.ClaimError` naming ``what`` otherwise."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ClaimError(f"{what} must be a date (YYYY-MM-DD), got {value!r}")
    text = value.strip()
    try:
        if re.fullmatch(_YEAR, text):
            return date(int(text), 1, 1)
        if re.fullmatch(rf"{_YEAR}-\d\d", text):
            return date(int(text[:4]), int(text[5:]), 1)
        if re.fullmatch(_DATE, text, re.I):
            return _month_day(text)
        return date.fromisoformat(text)
    except (ValueError, KeyError):
        pass
    raise ClaimError(
        f"{what}: cannot read {value!r} as a date; write YYYY-MM-DD (e.g. 2022-12-31), YYYY-MM, YYYY or "
        "'December 31, 2022'"
    )


def check_valid(valid_from: Any, valid_to: Any) -> Period:
    """``(valid_from, valid_to)`` parsed (``None`` stays open); :class:`ClaimError` when the end is before the
    start or a date cannot be read."""
    start = parse_date(valid_from, "valid_from") if valid_from is not None else None
    end = parse_date(valid_to, "valid_to") if valid_to is not None else None
    if start is not None and end is not None and end < start:
        raise ClaimError(f"valid_to {end.isoformat()} is before valid_from {start.isoformat()}")
    return start, end


def _months_back(end: date, months: int) -> date:
    """The first day of the ``months`` months that end on ``end``."""
    if end.day == calendar.monthrange(end.year, end.month)[1]:  # ends on a month's last day: starts on a first
        year, month = divmod(end.year * 12 + end.month - months, 12)
        return date(year, month + 1, 1)
    year, month = divmod(end.year * 12 + end.month - 1 - months, 12)
    day = min(end.day, calendar.monthrange(year, month + 1)[1])
    return date.fromordinal(date(year, month + 1, day).toordinal() + 1)


def _quarter(year: int, q: int) -> tuple[date, date]:
    first = 3 * (q - 1) + 1
    return date(year, first, 1), date(year, first + 2, calendar.monthrange(year, first + 2)[1])


def _year(text: str) -> int:
    year = int(text)
    return year + 2000 if year < 100 else year


def _found(kind: str, m: re.Match[str]) -> tuple[date, date]:
    groups = m.groupdict()
    if kind == "ended":
        end = _month_day(groups["date"])
        months = 3 if groups.get("quarter") else _SPAN_MONTHS.get((groups.get("span") or "").lower(), 12)
        return _months_back(end, months), end
    if kind == "quarter":
        if groups.get("q"):
            return _quarter(int(groups["y"]), int(groups["q"]))
        if groups.get("q2"):
            return _quarter(int(groups["y2"]), int(groups["q2"]))
        return _quarter(int(groups["y3"]), _ORDINAL_QUARTER[groups["ord"].lower()])
    if kind == "instant":
        day = _month_day(groups["date"])
        return day, day
    year = _year(groups.get("fy") or groups.get("fiscal") or groups["y"])
    return date(year, 1, 1), date(year, 12, 31)


def _periods(text: str) -> list[tuple[int, tuple[date, date]]]:
    """Every period ``text`` names, by where it starts; a span already read by an earlier pattern is not read
    again (``year ended December 31, 2022`` is not also ``2022``)."""
    taken: list[tuple[int, int]] = []
    out: list[tuple[int, tuple[date, date]]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            try:
                out.append((m.start(), _found(kind, m)))
            except (ValueError, KeyError):  # "February 30, 2022": not a date
                continue
            taken.append(m.span())
    return sorted(out)


def period_in(text: str, *, only: bool = False) -> Period | None:
    """The period ``text`` names: its first (``only``: ``None`` unless every period it names is the same)."""
    found = _periods(text or "")
    if not found:
        return None
    if only and len({p for _, p in found}) > 1:
        return None
    return found[0][1]


def period_of(text: str, evidence_texts: Iterable[str | None] = ()) -> tuple[Period, str] | None:
    """A claim's valid time as its words say: from its ``text`` (the first period named), else from its
    evidence where all of it names one period; with where it was read (``"text"`` or ``"evidence"``)."""
    found = period_in(text)
    if found is not None:
        return found, "text"
    periods = {p for t in evidence_texts if t for p in [period_in(t, only=True)] if p is not None}
    if len(periods) == 1:
        return periods.pop(), "evidence"
    return None


def strip_periods(text: str) -> str:
    """``text`` without the periods it names (``revenue in FY2022`` -> ``revenue``)."""
    for _, pattern in _PATTERNS:
        text = pattern.sub(" ", text)
    return " ".join(text.split())


def holds_at(period: Period, day: date) -> bool:
    """Whether a claim valid over ``period`` holds on ``day`` (open ends hold)."""
    start, end = period
    return (start is None or start <= day) and (end is None or day <= end)


def overlaps(a: Period, b: Period) -> Period | None:
    """The days two valid times share (``None``: none)."""
    starts = [d for d in (a[0], b[0]) if d is not None]
    ends = [d for d in (a[1], b[1]) if d is not None]
    start, end = (max(starts) if starts else None), (min(ends) if ends else None)
    if start is not None and end is not None and end < start:
        return None
    return start, end
