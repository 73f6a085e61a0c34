"""Candidate contradictions between claims, drawn from their structure, for a person to decide (pure).

Two claims are a candidate when they state the same attribute of the same
subject (:func:`kbflow.claims.facts.read_fact`, names normalized), with
values that differ (numbers compared after scale, unit and rounding), over
valid times that overlap (:mod:`kbflow.claims.periods`; an open end
overlaps everything) and cover the same reporting period (a quarter's figure
is not its year's; fiscal years that touch at an edge are two years; a
figure at one day is compared with any period holding that day), and a reader of one of their scopes sees both. Revenue
of $1.0 billion in FY2022 and $1.2 billion in FY2023 is not a candidate;
$1.2 billion and 1,200 million in FY2022 is not either.

Nothing here changes a claim: :meth:`Claims.conflicts
<kbflow.claims.store.Claims.conflicts>` lists candidates with both claims'
evidence, and a person confirms (``relate(a, "contradicts", b)`` then
``confirm_relation``), supersedes, disputes or rejects. A pair whose
``contradicts`` relation a person rejected is not listed again; one they
confirmed is listed with it, until one of the two claims stops standing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

from kbflow.claims import model as M
from kbflow.claims.facts import Fact, read_fact, same_value
from kbflow.claims.model import Claim
from kbflow.claims.periods import Period, overlaps
from kbflow.claims.relations import CONFIRMED, CONTRADICTS, REJECTED, Relation
from kbflow.records import scopes

__all__ = ["Conflict", "find_conflicts"]

#: the statuses of claims compared (a superseded or disputed claim no longer stands)
STANDING = (M.HYPOTHESIS, M.INFERRED, M.OBSERVED, M.VERIFIED)


@dataclass(frozen=True)
class Conflict:
    """Two claims that state different values of one subject's attribute over overlapping valid time."""

    a: Claim
    b: Claim
    subject: str
    attribute: str
    values: tuple[str, str]
    overlap: Period
    #: the ``contradicts`` relation a person confirmed between them (``None``: none yet)
    relation: Relation | None = None

    @property
    def confirmed(self) -> bool:
        return self.relation is not None and self.relation.status == CONFIRMED

    def to_dict(self) -> dict[str, Any]:
        def day(d: date | None) -> str | None:
            return d.isoformat() if d else None

        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "subject": self.subject,
            "attribute": self.attribute,
            "values": list(self.values),
            "overlap": {"from": day(self.overlap[0]), "to": day(self.overlap[1])},
            "relation": self.relation.to_dict() if self.relation else None,
            "confirmed": self.confirmed,
        }

    def render(self) -> str:
        when = f"{self.overlap[0] or '…'} .. {self.overlap[1] or '…'}"
        mark = " [confirmed]" if self.confirmed else ""
        return (
            f"{self.subject} / {self.attribute} ({when}){mark}: {self.values[0]!r} ({self.a.claim_id}) vs "
            f"{self.values[1]!r} ({self.b.claim_id})"
        )


def _shared_period(a: Period, b: Period) -> Period | None:
    """The days two claims' figures both speak for, or ``None`` when they measure different things: valid
    times that do not overlap; bounded periods of different lengths (a quarter and its year); or periods that
    only touch at an edge (a 52-week fiscal year read as twelve months overlaps the next by a few days: an
    overlap under a tenth of the shorter period is an edge). A day (a balance, a headcount) or an open end is
    compared with any period holding it."""
    shared = overlaps(a, b)
    if shared is None:
        return None
    spans = [(end - start).days for start, end in (a, b) if start and end and end != start]
    if len(spans) < 2:
        return shared
    if abs(spans[0] - spans[1]) > 31:
        return None
    assert shared[0] is not None and shared[1] is not None
    return shared if (shared[1] - shared[0]).days + 1 >= min(spans) / 10 else None


def _reach(a: str, b: str) -> bool:
    return a in scopes.visible(b) or b in scopes.visible(a)


def find_conflicts(claims: Iterable[Claim], relations: Iterable[Relation] = ()) -> list[Conflict]:
    """The candidate contradictions among ``claims`` (those that stand), oldest pair first; pairs whose
    ``contradicts`` relation was rejected are left out, confirmed ones carry it (and are listed whether or not
    their words state one attribute: a person said they contradict)."""
    decided: dict[frozenset[str], Relation] = {}
    for rel in relations:
        if rel.type == CONTRADICTS and rel.status in (CONFIRMED, REJECTED):
            decided[frozenset((rel.source, rel.target))] = rel
    groups: dict[tuple[str, str], list[tuple[Claim, Fact]]] = defaultdict(list)
    standing: dict[str, Claim] = {}
    for claim in claims:
        if claim.status not in STANDING:
            continue
        standing[claim.claim_id] = claim
        fact = read_fact(claim.text)
        if fact is not None and all(fact.key):
            groups[fact.key].append((claim, fact))
    out: list[Conflict] = []
    for members in groups.values():
        members.sort(key=lambda cf: (cf[0].created_at, cf[0].claim_id))
        for i, (a, fa) in enumerate(members):
            for b, fb in members[i + 1 :]:
                shared = _shared_period(a.valid, b.valid)
                if shared is None or not _reach(a.scope, b.scope):
                    continue
                if same_value(fa.value, fb.value) is not False:
                    continue
                known = decided.get(frozenset((a.claim_id, b.claim_id)))
                if known is not None and known.status == REJECTED:
                    continue
                out.append(Conflict(a, b, fa.subject, fa.attribute, (fa.value, fb.value), shared, known))
    # a contradiction a person confirmed stands listed while both claims do, whatever their words' structure
    listed = {frozenset((c.a.claim_id, c.b.claim_id)) for c in out}
    for pair, rel in decided.items():
        if rel.status != CONFIRMED or pair in listed or not all(cid in standing for cid in pair):
            continue
        a, b = sorted((standing[rel.source], standing[rel.target]), key=lambda c: (c.created_at, c.claim_id))
        out.append(Conflict(a, b, "", "", (a.text, b.text), overlaps(a.valid, b.valid) or (None, None), rel))
    return sorted(out, key=lambda c: (c.b.created_at, c.a.created_at, c.a.claim_id, c.b.claim_id))
