"""The claim page (kbflow.service.web.claims): a claim, its relations and its timeline, escaped, no server."""

from kbflow import Claims, Evidence
from kbflow.service.web.claims import claim_page
from tests.conftest import FAST_MODEL


def test_a_claims_page_shows_valid_time_relations_and_timeline_escaped():
    claims = Claims.memory(model=FAST_MODEL, actor="agent:reader")
    quote = Evidence.url("https://example.com/10k?a=1&b=<2>", "year ended December 31, 2022")
    a = claims.learn("Acme's revenue was <b>$1.2 billion</b>", [quote])
    b = claims.learn("Acme's revenue was $1.5 billion in FY2022", [quote])
    rid = claims.relate(a, "contradicts", b, evidence=[quote], reason="two <figures>")
    claims.confirm_relation(rid, by="user:ana")
    claims.dispute(b, reason="misread the <table>", by="user:ana")
    page = claim_page(
        claims.get(a).to_dict(),
        [r.to_dict() for r in claims.relations(a, statuses=None)],
        [e.to_dict() for e in claims.history(a)],
    )
    assert "&lt;b&gt;$1.2 billion&lt;/b&gt;" in page and "<b>$1.2" not in page
    assert "holds 2022-01-01 .. 2022-12-31" in page  # read from its evidence
    assert rid in page and f'href="/claims/{b}"' in page and "two &lt;figures&gt;" in page
    assert "confirmed" in page and "user:ana" in page
    assert "Timeline" in page and "learn" in page and "https://example.com/10k?a=1&amp;b=&lt;2&gt;" in page
    other = claim_page(claims.get(b).to_dict(), [], [e.to_dict() for e in claims.history(b)])
    assert "misread the &lt;table&gt;" in other and "disputed" in other and "<script" not in other
