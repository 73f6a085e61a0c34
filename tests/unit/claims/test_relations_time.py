"""Relations between claims, valid time and record time, and conflicts, in a claims store."""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime

import pytest

from kbflow import Claims, Evidence
from kbflow import schema as S
from kbflow.errors import ClaimError, NotFoundError, QueryError
from tests.conftest import FAST_MODEL

FILING = Evidence.url(
    "https://example.com/acme-10k-2022",
    "For the fiscal year ended December 31, 2022, total revenues were $1,213 million.",
)


def _store(**kw) -> Claims:
    return Claims.memory(model=FAST_MODEL, actor=("agent", "reader"), **kw)


def _statuses(claims: Claims, rid: str) -> list[str]:
    return [f"{e.event}:{e.outcome}" for e in claims.history(rid)]


# --- relations -------------------------------------------------------------------------------------
def test_a_relation_is_proposed_then_decided_and_every_step_is_history_and_audit():
    claims = _store()
    a = claims.learn("Acme's revenue was $1.2 billion in FY2022", [FILING])
    b = claims.learn("Acme's revenue grew in FY2022", [FILING])
    rid = claims.relate(a, "entails", b, evidence=[FILING])
    rel = claims.relation(rid)
    assert (rel.source, rel.type, rel.target, rel.status) == (a, "entails", b, "proposed")
    assert rel.actor.type == "agent" and rel.evidence == (FILING,)
    claims.confirm_relation(rid, by="agent:checker", reason="the filing says so")
    assert claims.relation(rid).status == "confirmed" and str(claims.relation(rid).decided_by) == "agent:checker"
    claims.unrelate(rid, by="user:ana")
    assert claims.relation(rid).status == "withdrawn"
    assert _statuses(claims, rid) == ["relate:applied", "confirm:applied", "unrelate:applied"]
    assert [r["event"] for r in claims.audit() if r["claim_id"] == rid] == ["relate", "confirm", "unrelate"]
    assert claims.relations(a) == [] and [r.relation_id for r in claims.relations(a, statuses=None)] == [rid]
    # no relation moved either claim
    assert claims.get(a).status == claims.get(b).status == "observed"


def test_confirming_a_contradiction_is_a_persons_act_and_changes_no_claim():
    claims = _store()
    a = claims.learn("Acme's revenue was $1.2 billion in FY2022", [FILING])
    b = claims.learn("Acme's revenue was $1.5 billion in FY2022", [FILING])
    rid = claims.relate(a, "contradicts", b, evidence=[FILING])
    with pytest.raises(ClaimError, match="only a person"):
        claims.confirm_relation(rid)  # the agent
    assert claims.relation(rid).status == "proposed"
    assert _statuses(claims, rid) == ["relate:applied", "confirm:refused"]
    claims.confirm_relation(rid, by="user:ana")
    assert claims.get(a).status == claims.get(b).status == "observed"
    # superseding because of it is asked for, and recorded with the relation
    claims.supersede(b, a, by="user:ana", because=rid)
    assert claims.get(b).status == "superseded"
    assert claims.history(b)[-1].data["because"] == rid


@pytest.mark.parametrize(
    ("case", "message"),
    [("self", "cannot be related to itself"), ("missing", "no claim 'cl_missing'"), ("cycle", "cannot form a cycle")],
)
def test_a_bad_relation_is_refused_recorded_and_applies_nothing(case, message):
    claims = _store()
    a = claims.learn("Acme sells anvils", [FILING])
    b = claims.learn("Acme sells heavy anvils to coyotes", [FILING])
    claims.relate(b, "refines", a, evidence=[FILING])
    source, target = {"self": (a, a), "missing": (a, "cl_missing"), "cycle": (a, b)}[case]
    before = len(claims.relations())
    with pytest.raises(ClaimError, match=message):
        claims.relate(source, "refines", target, evidence=[FILING])
    assert len(claims.relations()) == before
    refused = [r for r in claims.audit() if r["outcome"] == "refused"]
    assert len(refused) == 1 and refused[0]["event"] == "relate"
    assert re.search(message, claims.history(refused[0]["claim_id"])[0].data["refused"])


def test_relations_across_sibling_scopes_and_duplicates_are_refused():
    claims = _store()
    a = claims.learn("Payments use sagas", [FILING], scope="acme/payments")
    b = claims.learn("Billing uses sagas", [FILING], scope="acme/billing")
    g = claims.learn("Sagas are used company-wide", [FILING])
    with pytest.raises(ClaimError, match="no reader of one scope sees both"):
        claims.relate(a, "refines", b, evidence=[FILING])
    rid = claims.relate(a, "refines", g, evidence=[FILING])
    assert claims.relation(rid).scope == "acme/payments"  # the narrower: its readers see both
    with pytest.raises(ClaimError, match=f"already proposed as {rid}"):
        claims.relate(a, "refines", g, evidence=[FILING])
    c = claims.relate(a, "contradicts", g, evidence=[FILING])
    with pytest.raises(ClaimError, match=f"already proposed as {c}"):
        claims.relate(g, "contradicts", a, evidence=[FILING])  # the same contradiction, read the other way
    assert claims.relations(scope="acme/billing") == []


def test_an_agent_relates_with_evidence_and_unknown_types_and_ids_fail_clearly():
    claims = _store()
    a = claims.learn("Acme sells anvils", [FILING])
    b = claims.learn("Acme sells rockets", [FILING])
    with pytest.raises(ClaimError, match="at least one piece of evidence"):
        claims.relate(a, "entails", b)
    claims.relate(a, "entails", b, by="user:ana")  # a person may rest on the claims' own evidence
    with pytest.raises(ClaimError, match="relation type must be one of"):
        claims.relate(a, "implies", b, evidence=[FILING])
    with pytest.raises(NotFoundError):
        claims.confirm_relation("rl_nope", by="user:ana")
    with pytest.raises(QueryError, match="unknown relation status"):
        claims.relations(statuses=["maybe"])


# --- valid time ------------------------------------------------------------------------------------
def test_valid_time_is_given_or_read_and_recall_answers_what_holds_at_a_date():
    claims = _store()
    y22 = claims.learn("Acme's revenue was $1.2 billion in FY2022", [FILING])
    y23 = claims.learn("Acme's revenue was $1.5 billion in FY2023", [FILING])
    read = claims.learn("Acme's revenue was $1.2 billion", [FILING])  # the filing names the period
    given = claims.learn("Acme's CEO is Jane Doe", [FILING], valid_from="2021-03-01")
    assert claims.get(y22).valid == (date(2022, 1, 1), date(2022, 12, 31))
    assert claims.get(read).valid == (date(2022, 1, 1), date(2022, 12, 31))
    assert claims.history(read)[0].data["valid_read_from"] == "evidence"
    assert claims.get(given).valid == (date(2021, 3, 1), None)
    at_2023 = {h.claim.claim_id for h in claims.recall("Acme revenue CEO", k=10, valid_at="2023-05-01")}
    assert at_2023 == {y23, given}
    at_2020 = {h.claim.claim_id for h in claims.recall("Acme revenue CEO", k=10, valid_at=date(2020, 1, 1))}
    assert at_2020 == set()
    with pytest.raises(QueryError, match="valid_at: cannot read"):
        claims.recall("Acme", valid_at="soon")
    # two values for two periods are no conflict
    assert [c for c in claims.conflicts() if {c.a.claim_id, c.b.claim_id} == {y22, y23}] == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"valid_from": "2023-01-01", "valid_to": "2022-12-31"}, "is before valid_from"),
        ({"valid_from": "the spring"}, "cannot read 'the spring' as a date"),
    ],
)
def test_a_bad_valid_time_is_refused_and_nothing_is_written(fields, message):
    claims = _store()
    with pytest.raises(ClaimError, match=message):
        claims.learn("Acme's revenue was $1 billion", [FILING], **fields)
    assert len(claims) == 0 and claims.tables.events() == []


# --- record time ----------------------------------------------------------------------------------
def test_recall_as_of_replays_what_the_store_believed_then():
    claims = _store()
    a = claims.learn("Acme's revenue was $1.2 billion in FY2022", [FILING])
    time.sleep(0.01)
    before = datetime.now(UTC)
    time.sleep(0.01)
    b = claims.learn("Acme's revenue was $1.3 billion in FY2022", [FILING])
    claims.verify(b, by="user:ana")
    claims.supersede(a, b, by="user:ana")
    now = {h.claim.claim_id: h.claim.status for h in claims.recall("Acme revenue", k=10)}
    then = {h.claim.claim_id: h.claim.status for h in claims.recall("Acme revenue", k=10, as_of=before)}
    assert now == {b: "verified"}
    assert then == {a: "observed"}  # b not learned yet; a not superseded yet
    hit = claims.recall("Acme revenue", k=1, as_of=before)[0]
    assert hit.claim.superseded_by is None and hit.claim.seq == 1
    # every status, replayed: the superseded claim is there as it was
    assert {h.claim.claim_id for h in claims.recall("Acme revenue", k=10, as_of=before, statuses=None)} == {a}
    with pytest.raises(QueryError, match="as_of: cannot read"):
        claims.recall("Acme", as_of="yesterday")


def test_a_lake_store_replays_and_keeps_relations_across_opens(tmp_path):
    lake = str(tmp_path / "lake")
    first = Claims.open(lake, settings={"model": FAST_MODEL}, actor="agent:reader")
    a = first.learn("Acme's revenue was $1.2 billion in FY2022", [FILING])
    b = first.learn("Acme's revenue was $1.5 billion in FY2022", [FILING])
    mark = datetime.now(UTC)
    time.sleep(0.01)
    rid = first.relate(a, "contradicts", b, evidence=[FILING])
    first.dispute(b, reason="the filing says 1,213 million", by="user:ana")
    second = Claims.open(lake, settings={"model": FAST_MODEL})
    assert second.relation(rid).status == "proposed" and second.get(a).valid_to == date(2022, 12, 31)
    assert {h.claim.claim_id for h in second.recall("Acme revenue", k=5, as_of=mark)} == {a, b}
    assert {h.claim.claim_id for h in second.recall("Acme revenue", k=5)} == {a}
    # a relation written by one process is seen by the other
    first.confirm_relation(rid, by="user:ana")
    time.sleep(1.1)  # reads pick up other writers' events at most every second
    assert second.relation(rid).status == "confirmed"
    rows = second.tables.claims(columns=[S.CLAIM_ID, S.VALID_FROM])
    assert {r[S.VALID_FROM] for r in rows} == {date(2022, 1, 1)}


# --- conflicts -------------------------------------------------------------------------------------
def test_conflicts_are_structural_candidates_with_both_sides_evidence():
    claims = _store()
    a = claims.learn("Acme's revenue was $1.2 billion in FY2022", [FILING])
    claims.learn("Acme's revenue was 1,200 million in 2022", [FILING])  # the same figure
    c = claims.learn("Acme Corp reported revenue of $1.5 billion for fiscal 2022", [FILING])
    claims.learn("Acme's revenue was $1.5 billion in FY2023", [FILING])  # another period
    claims.learn("Acme opened an office in Berlin in 2022", [FILING])  # mentions only
    claims.learn("Acme's revenue was $1.9 billion in FY2022", [FILING], scope="rival/research")
    found = claims.conflicts(scope="acme")
    assert [(x.a.claim_id, x.b.claim_id) for x in found][:1] == [(a, c)]
    assert all(x.subject.lower().startswith("acme") and x.attribute.endswith("revenue") for x in found)
    assert len(found) == 2  # $1.2 billion and 1,200 million each against $1.5 billion
    assert found[0].to_dict()["a"]["evidence"][0]["ref"] == FILING.ref
    # a person rejects one: it is not listed again; nothing changed any claim's status
    rid = claims.relate(a, "contradicts", c, by="user:ana")
    claims.reject_relation(rid, by="user:ana")
    assert len(claims.conflicts(scope="acme")) == 1
    assert {x.status for x in claims.list(statuses=None)} == {"observed"}
    # the rival's claim conflicts only where a reader sees both (global readers do not see rival/research)
    assert any(x.b.scope == "rival/research" for x in claims.conflicts())
    assert not any("rival/research" in (x.a.scope, x.b.scope) for x in claims.conflicts(scope="acme"))


def test_relate_many_checks_each_against_the_ones_before_it_in_the_batch():
    claims = _store()
    a, b, c = (claims.learn(f"Acme sells product {n}", [FILING]) for n in "abc")
    items = [
        {"source": a, "type": "refines", "target": b, "evidence": [FILING]},
        {"source": b, "type": "refines", "target": c, "evidence": [FILING]},
        {"source": a, "type": "entails", "target": c, "evidence": [FILING]},
    ]
    ids = claims.relate_many(items)
    assert [claims.relation(i).type for i in ids] == ["refines", "refines", "entails"]
    with pytest.raises(ClaimError, match="refines cannot form a cycle"):
        claims.relate_many(
            [
                {"source": c, "type": "entails", "target": a, "evidence": [FILING]},
                {"source": c, "type": "refines", "target": a, "evidence": [FILING]},  # c -> a -> b -> c
            ]
        )
    assert len(claims.relations()) == 4  # the valid one before it was written
    with pytest.raises(ClaimError, match="already proposed as"):
        claims.relate_many([{"source": b, "type": "contradicts", "target": c, "by": "user:ana"}] * 2)


def test_a_null_store_checks_and_keeps_no_relation():
    null = Claims.null()
    assert null.relations() == [] and null.conflicts() == []
    with pytest.raises(NotFoundError, match="keeps nothing"):
        null.relate("cl_a", "entails", "cl_b")
    assert null.recall("anything", valid_at="2022-01-01", as_of="2026-01-01") == []


def test_a_store_written_before_valid_time_reads_the_same_and_takes_valid_time_on(tmp_path, monkeypatch):
    import pyarrow as pa

    lake = str(tmp_path / "lake")
    old = pa.schema([f for f in S.CLAIMS_SCHEMA if f.name not in (S.VALID_FROM, S.VALID_TO)])
    with monkeypatch.context() as m:  # the claims table as an older kbflow wrote it
        m.setattr(S, "CLAIMS_SCHEMA", old)
        m.setitem(S.SCHEMAS, S.CLAIMS, old)
        first = Claims.open(lake, settings={"model": FAST_MODEL}, actor="agent:old")
        cid = first.learn("Acme's revenue was $1.2 billion", [Evidence.url("https://example.com/a")])
        first.verify(cid, by="user:ana")
        before = [e.to_dict() for e in first.history(cid)]
    import lance

    def columns() -> list[str]:
        return lance.dataset(f"{lake}/{S.CLAIMS}.lance").schema.names

    assert S.VALID_FROM not in columns()
    store = Claims.open(lake, settings={"model": FAST_MODEL})
    assert store.get(cid).valid == (None, None) and store.get(cid).status == "verified"
    assert [e.to_dict() for e in store.history(cid)] == before
    assert [h.claim.claim_id for h in store.recall("Acme revenue", valid_at="2022-01-01")] == [cid]  # open: holds
    new = store.learn("Acme's revenue was $1.5 billion in FY2023", [Evidence.url("https://example.com/b")])
    # the lake adds a column an older kbflow lacked as nulls (a metadata-only commit, as for every table)
    assert S.VALID_FROM in columns()
    again = Claims.open(lake, settings={"model": FAST_MODEL})
    assert again.get(new).valid == (date(2023, 1, 1), date(2023, 12, 31)) and again.get(cid).valid == (None, None)
