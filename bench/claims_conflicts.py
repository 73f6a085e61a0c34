"""Candidate contradictions on a generated store: precision, recall, the hardest misses, and no status changed.

The generator writes claims about made-up companies the way analysts write
them, and knows what each one means (company, line item, period, value,
scope), so the true contradictions are computed from that meaning, never
from the text ``Claims.conflicts`` reads:

- figures per company, line item and fiscal year, in several phrasings
  (``Acme's revenue was $1.2 billion in FY2022``, ``Revenue (Acme, FY2022):
  1,200 million``, ``Acme Corp reported net sales of ...``), so a line item
  changes from year to year (not a contradiction);
- planted contradictions: the same company, line item and year with another
  value, in another phrasing, scale or company suffix, some with no year at
  all (an open valid time overlaps every year);
- restatements of the same figure at another scale or rounding
  (``$1.2 billion`` and ``$1,213 million``: not a contradiction);
- quarterly figures inside a fiscal year (another reporting period: not a
  contradiction of the year's figure);
- a quarter of the companies on 52/53-week fiscal years (``the fiscal year
  ended October 1, 2022``), whose consecutive years, read as twelve months,
  overlap by a few days (not a contradiction);
- claims that only mention a company (``Acme opened an office in Lyon in
  2022``), and the same line item in a sibling team's scope, which no one
  reader sees beside the first (not a candidate);
- a share of claims in free word orders the reader does not parse
  (``In FY2022, Acme brought in $1.5 billion in revenue``): the misses these
  cause are real, and counted.

    python bench/claims_conflicts.py              # 1,000+ claims, seed 7
    python bench/claims_conflicts.py --companies 80 --seed 3

A pair counts as found when ``conflicts()`` lists it; precision is the share
of listed pairs that are true, recall the share of true pairs listed. It
prints both, the three hardest misses (false negatives first, then false
positives), and checks that no claim's status changed.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from dataclasses import dataclass
from datetime import date

from kbflow import Claims, Evidence

COMPANIES = [
    "Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne",
    "Soylent", "Wonka", "Gringotts", "Oscorp", "Nakatomi", "Monarch", "Aperture", "Massive Dynamic", "Dunder",
    "Pied Piper", "Prestige", "Virtucon", "Zorg", "Blue Sun", "Weyland", "Ollivander", "Krusty", "Duff",
    "Sterling Cooper", "Los Pollos", "Bluth", "Gekko", "Rekall", "Omni", "Buy More", "Big Kahuna", "Strickland",
    "Paper Street", "Frobozz", "Yoyodyne", "Spacely", "Cogswell", "Sirius", "Ajax", "Brawndo", "Planet Express",
]  # fmt: skip
SUFFIXES = ["", " Inc.", " Corp", " Corporation", " plc", " Group"]
ITEMS = {
    "revenue": ["revenue", "total revenues", "net sales", "revenues"],
    "net income": ["net income", "net earnings"],
    "operating income": ["operating income"],
    "total assets": ["total assets"],
    "employees": ["employees", "headcount"],
}
YEARS = [2020, 2021, 2022, 2023]
PEOPLE = ["Jane Doe", "John Roe", "Ana Lima", "Wei Chen", "Omar Haddad", "Lena Berg", "Kofi Mensah", "Ines Ruiz"]
CITIES = ["Lyon", "Austin", "Osaka", "Porto", "Leeds", "Perth", "Quito", "Graz"]
EVIDENCE = [Evidence.url("https://example.com/filings", "an annual report")]


@dataclass(frozen=True)
class Meant:
    """What a generated claim means: the truth the benchmark scores against."""

    company: str
    item: str | None  # None: the claim only mentions the company
    start: date | None
    end: date | None
    value: float | str | None  # the figure itself, before any rounding in the text
    scope: str
    parsed: bool  # written in a form the reader is meant to parse


def money(value: float, rng: random.Random, exact: bool = False) -> str:
    """A figure in one of the ways filings and analysts write it."""
    if value >= 1e9 and not exact and rng.random() < 0.5:
        return f"${value / 1e9:.1f} billion"
    style = rng.randrange(3)
    if style == 0:
        return f"${value / 1e6:,.0f} million"
    if style == 1:
        return f"{value / 1e6:,.0f} million"
    return f"USD {value / 1e6:,.0f} million"


def phrase(company: str, item: str, value: str, period: str, rng: random.Random, free: bool) -> str:
    words = rng.choice(ITEMS[item])
    if free:
        return rng.choice(
            [
                f"In {period}, {company} brought in {value} in {words}",
                f"{value} of {words} was booked by {company} in {period}",
            ]
        )
    forms = [
        f"{company}'s {words} was {value} in {period}",
        f"{words.capitalize()} ({company}, {period}): {value}",
        f"{company} reported {words} of {value} for {period}",
        f"The {words} of {company} for {period} was {value}",
    ]
    return rng.choice(forms)


def fy(year: int, rng: random.Random, ends: dict[int, date] | None = None) -> str:
    """A fiscal year as written; a company on a 52/53-week year (``ends``) always names the day it ended."""
    if ends:
        return f"the fiscal year ended {ends[year]:%B} {ends[year].day}, {year}"
    return rng.choice([f"FY{year}", f"fiscal {year}", f"the fiscal year ended December 31, {year}"])


def week_years(rng: random.Random) -> dict[int, date]:
    """The end days of 52/53-week fiscal years (the Saturday nearest September 30): each year starts the day
    after the last ended, so twelve-month readings of two years overlap by a few days."""
    out = {}
    for year in [YEARS[0] - 1, *YEARS]:
        day = date(year, 9, 30)
        out[year] = date.fromordinal(day.toordinal() + (5 - day.weekday() + 3) % 7 - 3)
    return out


def generate(companies: int, seed: int) -> tuple[list[dict], list[Meant]]:
    rng = random.Random(seed)
    items, meant = [], []

    def add(text: str, m: Meant) -> None:
        items.append({"text": text, "evidence": EVIDENCE, "scope": m.scope})
        meant.append(m)

    for name in COMPANIES[:companies]:
        scope = f"research/{name.lower().replace(' ', '-')}"
        ends = week_years(rng) if rng.random() < 0.25 else None
        base = rng.uniform(0.4e9, 9e9)
        for item, year in itertools.product(ITEMS, YEARS):
            if item == "employees":
                count = int(base / 2e5) * 10 + year
                value: float | str = float(count)
                written = f"{count:,}"
            else:
                share = {"revenue": 1.0, "net income": 0.11, "operating income": 0.16, "total assets": 2.3}[item]
                value = base * share * (1.06 ** (year - 2020))
                written = money(value, rng)
            free = rng.random() < 0.04
            company = name + rng.choice(SUFFIXES)
            start, end = date(year, 1, 1), date(year, 12, 31)
            if ends:
                start, end = date.fromordinal(ends[year - 1].toordinal() + 1), ends[year]
            if item == "employees":
                text = rng.choice(
                    [
                        f"{company} had {written} employees at December 31, {year}",
                        f"{company}'s headcount was {written} at December 31, {year}",
                    ]
                )
                start = end
            else:
                text = phrase(company, item, written, fy(year, rng, ends), rng, free)
            add(text, Meant(name, item, start, end, value, scope, not free))
            roll = rng.random()
            if roll < 0.13 and item != "employees":  # a planted contradiction
                other = value * rng.choice([0.7, 0.8, 1.25, 1.4])
                written2 = money(other, rng)
                open_year = rng.random() < 0.2
                period = fy(year, rng, ends)
                text2 = phrase(name + rng.choice(SUFFIXES), item, written2, period, rng, rng.random() < 0.04)
                if open_year:
                    text2 = f"{name}'s {rng.choice(ITEMS[item])} was {written2}"
                s2, e2 = (None, None) if open_year else (start, end)
                add(text2, Meant(name, item, s2, e2, other, scope, True))
            elif roll < 0.25 and item != "employees":  # a restatement of the same figure
                exact = f"${value / 1e6:,.0f} million"
                meant_same = Meant(name, item, start, end, value, scope, True)
                add(phrase(name, item, exact, fy(year, rng, ends), rng, False), meant_same)
            elif roll < 0.33 and item == "revenue":  # a quarter of the year: another reporting period
                q = rng.randrange(1, 5)
                qs, qe = date(year, 3 * q - 2, 1), date(year, 3 * q, 28)
                figure = value / 4 * rng.uniform(0.9, 1.1)
                quarter = money(figure, rng, exact=True)
                add(
                    f"{name}'s revenue was {quarter} in Q{q} {year}",
                    Meant(name, item, qs, qe, figure, scope, True),
                )
            elif roll < 0.40 and item == "net income":  # a sibling team's figure: out of reach
                other = money(value * 1.5, rng)
                add(
                    f"{name}'s net income was {other} in FY{year}",
                    Meant(name, item, start, end, value * 1.5, scope + "-peer", True),
                )
        for year in YEARS:  # mentions only
            city = rng.choice(CITIES)
            add(f"{name} opened an office in {city} in {year}", Meant(name, None, None, None, None, scope, True))
        ceo_years = rng.sample(YEARS, 2)
        first, second = rng.sample(PEOPLE, 2)
        add(
            f"{name}'s CEO was {first} in {min(ceo_years)}",
            Meant(name, "ceo", date(min(ceo_years), 1, 1), date(min(ceo_years), 12, 31), first, scope, True),
        )
        add(
            f"{name}'s CEO was {second} in {max(ceo_years)}",
            Meant(name, "ceo", date(max(ceo_years), 1, 1), date(max(ceo_years), 12, 31), second, scope, True),
        )
        if rng.random() < 0.3:  # a planted contradiction of a name
            add(
                f"{name}'s chief executive officer was {second} in {min(ceo_years)}",
                Meant(name, "ceo", date(min(ceo_years), 1, 1), date(min(ceo_years), 12, 31), second, scope, True),
            )
    return items, meant


def _reach(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def true_conflict(a: Meant, b: Meant) -> bool:
    """Whether two claims contradict, by what they mean."""
    if a.item is None or a.company != b.company or a.item != b.item or not _reach(a.scope, b.scope):
        return False
    lo = max(d for d in (a.start, b.start, date.min) if d is not None)
    hi = min(d for d in (a.end, b.end, date.max) if d is not None)
    if hi < lo:
        return False
    spans = [(m.end - m.start).days for m in (a, b) if m.start and m.end and m.end != m.start]
    if len(spans) == 2 and abs(spans[0] - spans[1]) > 31:
        return False  # a quarter inside a year: another reporting period
    if isinstance(a.value, str) or isinstance(b.value, str):
        return a.value != b.value
    return abs(a.value - b.value) > 1e-6 * max(abs(a.value), abs(b.value))  # two figures, however written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--companies", type=int, default=len(COMPANIES))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    items, meant = generate(min(args.companies, len(COMPANIES)), args.seed)
    claims = Claims.memory(model="hash:64", actor="agent:bench")
    ids = claims.learn_many(items)
    by_id = dict(zip(ids, meant, strict=True))
    text = {i: it["text"] for i, it in zip(ids, items, strict=True)}
    before = {c.claim_id: c.status for c in claims.list(statuses=None)}
    start = time.perf_counter()
    found = claims.conflicts()
    took = time.perf_counter() - start
    after = {c.claim_id: c.status for c in claims.list(statuses=None)}
    truth = {frozenset(p) for p in itertools.combinations(ids, 2) if true_conflict(by_id[p[0]], by_id[p[1]])}
    listed = {frozenset((c.a.claim_id, c.b.claim_id)) for c in found}
    hits = listed & truth
    precision = len(hits) / len(listed) if listed else 0.0
    recall = len(hits) / len(truth) if truth else 0.0
    print(f"claims: {len(ids):,}  true contradictions: {len(truth)}  listed: {len(listed)}  ({took * 1000:.0f} ms)")
    print(f"precision: {precision:.3f}  recall: {recall:.3f}")
    changed = [i for i in ids if before[i] != after[i]]
    print(f"claims whose status changed: {len(changed)}")
    misses = [("missed", p) for p in sorted(truth - listed, key=sorted)]
    misses += [("listed, not a contradiction", p) for p in sorted(listed - truth, key=sorted)]
    print("hardest misses:")
    for kind, pair in misses[:3]:
        a, b = sorted(pair, key=ids.index)
        print(f"  {kind}:\n    {text[a]!r}\n    {text[b]!r}")
    if changed:
        raise SystemExit("a claim's status changed")


if __name__ == "__main__":
    main()
