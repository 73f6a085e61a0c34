"""The web page's pages as pure functions (kbflow.service.web.pages): records in, escaped HTML out, no server."""

from kbflow.errors import NotFoundError, QueryError
from kbflow.service.web import pages

SOURCE = {
    "source_id": "docs<1>", "source_type": "docs", "uri": "/data/<docs>", "scope": "acme", "status": "indexed",
    "pill": "stale", "chunk_count": 12, "last_indexed": "2026-11-25T10:00:00.123456+00:00", "last_error": None,
    "skipped": [{"path": "big.txt", "reason": "over the size limit"}], "failed_files": [],
}  # fmt: skip


def test_every_value_is_escaped_and_the_page_loads_nothing_from_outside():
    page = pages.login_page("/<script>", "bad <key>", "<input type=hidden name=csrf value='t'>")
    assert "&lt;script&gt;" in page and "bad &lt;key&gt;" in page and "<script" not in page
    assert "http://" not in page and "https://" not in page


def test_an_error_page_answers_with_the_status_of_its_error():
    html, status = pages.error_page(NotFoundError("no chunk 'x<y'"))
    assert status == 404 and "<h1>Not found</h1>" in html and "x&lt;y" in html
    assert pages.error_page(QueryError("k must be 1-100"))[1] == 400


def test_sources_show_forms_to_an_editor_only():
    for_reader = pages.sources_page([dict(SOURCE)], editor=False, csrf="CSRF", error=None, done="added")
    assert "docs&lt;1&gt;" in for_reader and "/data/&lt;docs&gt;" in for_reader and "stale" in for_reader
    assert "big.txt: over the size limit" in for_reader and "<form" not in for_reader and "id=done" in for_reader
    assert "2026-11-25T10:00:00" in for_reader and ".123456" not in for_reader
    for_editor = pages.sources_page([dict(SOURCE)], editor=True, csrf="CSRF", error="refused", done=None)
    assert for_editor.count("CSRF") == 3 and "action='/sources/add'" in for_editor and "id=error" in for_editor


def test_versions_and_insights_render_their_records():
    html = pages.versions_page(
        {"before": {"chunks": 3}}, {"chunks": [{"version": 3, "timestamp": "2026-11-25 10:00:00"}]}
    )
    assert "chunks v3" in html and "search this snapshot" in html and "?tag=before" in html
    assert "no tags yet" in pages.versions_page({}, {})
    report = {
        "queries": 2, "citations": 1, "since": None, "top_queries": [{"query": "rrf <k>", "count": 2}],
        "content_gaps": [{"query": "nothing", "reason": "no hits"}], "cited_sources": [], "never_cited": [],
        "by_origin": [{"origin": "web", "count": 2}],
    }  # fmt: skip
    html = pages.insights_page({"report": report, "latency": [("2026-11-25 10:00", 12.5)]})
    assert "rrf &lt;k&gt;" in html and "<svg id=latency" in html and "id=cited-sources>none" in html
    assert "<td>nothing</td>" in html.split("Zero-result queries")[1].split("</table>")[0]
