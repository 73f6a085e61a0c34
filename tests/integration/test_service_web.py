"""The web page of kbflow serve: over HTTP for every page, and in a real browser (Playwright driving Debian's
Chromium) for search, the PDF citation view's outlined regions, sources, refresh, escaping and isolation."""

from __future__ import annotations

import html
import re
import time
import urllib.parse

import httpx
import pytest
from conftest import FAST_MODEL, REPO, SAMPLES
from support import CHROMIUM, Server, _browser, csrf_of

from kbflow import Retriever
from kbflow.config import Settings
from kbflow.lake import Lake
from kbflow.pipeline import ingest
from kbflow.records import Source
from kbflow.records.render import DEFAULT_SCALE, page_regions
from kbflow.service.core import Service

#: where the browser tests leave a screenshot of each page (docs/serving.md shows two, copied to docs/screenshots/)
SHOTS = REPO / "build" / "screenshots"
PDF_QUERY = "how are failed sources retried"


@pytest.fixture(scope="module")
def web_lake(tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("web")
    lake = Lake(str(root / "lake"))
    lake.register(Source("guide-pdf", "pdf", str(SAMPLES / "pdf"), scope="kbflow"))
    lake.register(Source("docs", "docs", str(SAMPLES / "docs"), scope="kbflow"))
    lake.register(Source("code", "repo", str(SAMPLES / "repo" / "minisearch"), scope="kbflow"))
    lake.register(Source("tickets", "ticket", str(SAMPLES / "tickets"), scope="kbflow"))
    lake.register(Source("pages", "web", str(SAMPLES / "web"), scope="kbflow"))
    broken = root / "broken"
    broken.mkdir()
    (broken / "issues.json").write_text("{ this is not json")
    lake.register(Source("broken-tickets", "ticket", str(broken)))
    ingest(lake, Settings.coerce(None, lake=lake.uri))  # the real model: the screenshots show real rankings
    later = root / "later"
    later.mkdir()
    (later / "later.md").write_text("# Later\n\nA page registered after the first ingest, about lighthouses.\n")
    lake.register(Source("later", "docs", str(later)))
    return lake


@pytest.fixture(scope="module")
def web(web_lake):
    service = Service(web_lake, Settings.coerce(None, lake=web_lake.uri))
    with Server(service) as server:
        server.lake = web_lake
        yield server


def _get(server, path, **params):
    return httpx.get(server.url + path, params=params, timeout=60)


def _pdf_hit(lake):
    hits = Retriever.open(lake).search(PDF_QUERY, k=10)
    return next(h for h in hits if h.citation.locator.kind == "pdf")


# --- over HTTP ---------------------------------------------------------------------------------------
def test_the_search_page_shows_the_same_hits_as_the_api(web):
    page = _get(web, "/", q=PDF_QUERY, k=5)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    api = _get(web, "/v1/search", q=PDF_QUERY, k=5).json()["hits"]
    shown = re.findall(r"href='/chunks/([^?']+)\?", page.text)
    assert shown == [urllib.parse.quote(h["chunk_id"]) for h in api]
    assert "<mark>" in page.text  # the query's words are marked in the texts
    assert "id=expansion" not in page.text  # the query names no glossary term


def test_the_search_page_and_the_api_say_what_the_glossary_added(web):
    page = _get(web, "/", q="What was the capex?", k=3)
    assert "searched with the glossary's words: capital expenditures purchases of property" in page.text
    assert _get(web, "/v1/search", q="What was the capex?", k=3).json()["expansion"].startswith("capital expenditures")


@pytest.mark.parametrize(
    "path",
    ["/", "/sources", "/sources/guide-pdf", "/versions", "/insights", "/login"],
)
def test_every_page_renders_and_links_only_to_this_server(web, path):
    page = _get(web, path)
    assert page.status_code == 200, page.text
    for url in re.findall(r"""(?:src|href|action)=['"]?([^'" >]+)""", page.text):
        assert url.startswith(("/", "#", "?", "data:")), f"{path} refers to {url}"


def test_the_citation_views_of_each_kind(web, web_lake):
    pdf = _pdf_hit(web_lake)
    view = _get(web, f"/chunks/{pdf.chunk_id}")
    assert view.status_code == 200 and f"/chunks/{pdf.chunk_id}/page.png" in view.text
    assert view.text.count('class="region"') == len(page_regions(pdf.citation)) >= 1
    assert f"/chunks/{pdf.chunk_id}/file#page={pdf.citation.locator.page}" in view.text
    image = _get(web, f"/chunks/{pdf.chunk_id}/page.png")
    assert image.status_code == 200 and image.content[:8] == b"\x89PNG\r\n\x1a\n"
    original = _get(web, f"/chunks/{pdf.chunk_id}/file")
    assert original.headers["content-type"] == "application/pdf" and original.content[:4] == b"%PDF"
    r = Retriever.open(web_lake)
    code = next(h for h in r.search("bm25 score", k=20, kinds=["code"]))
    page = _get(web, f"/chunks/{code.chunk_id}").text
    assert 'class="cited"' in page and f'<td class="ln">{code.citation.locator.line_start}</td>' in page
    ticket = next(h for h in r.search("ingest", k=20, source_types=["ticket"]))
    page = _get(web, f"/chunks/{ticket.chunk_id}").text
    assert "post cited" in page and f"ticket <b>{ticket.citation.locator.ticket_id}</b>" in page
    doc = next(h for h in r.search("install", k=20, source_types=["docs"]))
    assert '<mark id="cited">' in _get(web, f"/chunks/{doc.chunk_id}").text
    webpage = next(h for h in r.search("snapshot", k=20, source_types=["web"]))
    page = _get(web, f"/chunks/{webpage.chunk_id}").text
    assert (
        '<mark id="cited">' in page and f"element <code>{html.escape(webpage.citation.locator.css_path)}</code>" in page
    )


def test_unknown_ids_get_a_404_page_not_a_stack_trace(web):
    for path in ("/chunks/nope", "/chunks/nope/page.png", "/chunks/nope/file", "/sources/nope"):
        page = _get(web, path)
        assert page.status_code == 404 and "<h1>Not found</h1>" in page.text and "Traceback" not in page.text


def test_html_in_queries_and_errors_is_escaped(web):
    page = _get(web, "/", q="<script>alert(1)</script>")
    assert "<script>alert(1)</script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    too_long = _get(web, "/", q="x" * 1001)
    assert too_long.status_code == 400 and "id=error" in too_long.text and "limit is 1000" in too_long.text
    assert "<script" not in _get(web, "/sources", error="<script>x</script>").text


def test_the_sources_page_shows_status_errors_and_left_out_files(web):
    page = _get(web, "/sources").text
    broken = page[page.index("id='source-broken-tickets'") :].split("</tr>")[0]
    assert '<span class="pill failed">failed</span>' in broken and "json" in broken.lower()
    assert '<span class="pill indexed">indexed</span>' in page
    assert '<span class="pill pending">pending</span>' in page[page.index("id='source-later'") :]


def test_pages_need_a_key_when_the_lake_has_keys(tmp_path):
    from kbflow.usage.keys import create_key

    lake = Lake(str(tmp_path / "lake"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nAbout keys.\n")
    lake.register(Source("d", "docs", str(tmp_path / "d")))
    ingest(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL))
    _, token = create_key(lake, "global", "reader")
    with Server(Service(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL))) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            first = client.get("/sources")
            assert first.status_code == 303 and first.headers["location"].startswith("/login?")
            csrf = csrf_of(client.get("/login").text)
            assert client.post("/login", data={"key": token, "next": "/sources"}).status_code == 403  # no token
            bad = client.post("/login", data={"key": "kbf_nope_nope", "next": "/sources", "csrf": csrf})
            assert bad.status_code == 303 and "error=" in bad.headers["location"]
            signed = client.post("/login", data={"key": token, "next": "/sources", "csrf": csrf})
            assert signed.status_code == 303 and signed.headers["location"] == "/sources"
            page = client.get("/sources")
            assert page.status_code == 200 and "id='source-d'" in page.text
            assert "<form class=inline method=post" not in page.text  # a reader gets no edit buttons
            refused = client.post("/sources/d/refresh", data={"csrf": csrf})
            assert refused.headers["location"].startswith("/sources?error=")
            (tmp_path / "d" / "a.md").write_text("# A\n\nAbout keys, changed.\n")  # changed since indexed
            assert '<span class="pill stale">stale</span>' in client.get("/sources").text


# --- in a real browser ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(web):
    sync_api = _browser()
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, web):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.requests = []
    page.dialogs = []
    page.on("request", lambda request: page.requests.append(request.url))
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    assert all(u.startswith((web.url, "data:")) for u in page.requests), page.requests  # nothing from outside
    context.close()


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _wait_for_image(page, selector: str, seconds: float = 30.0) -> None:
    """Until the image has loaded. Polled with ``evaluate`` (the DevTools protocol): the page's policy allows no
    script, so ``wait_for_function``, which evaluates its predicate inside the page, is refused there."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(f"document.querySelector({selector!r}).complete"):
        assert time.monotonic() < deadline, f"{selector} did not load in {seconds} s"
        time.sleep(0.05)


def test_search_then_open_a_pdf_hit_whose_outline_covers_its_words(page, web, web_lake):
    page.goto(web.url + "/")
    page.fill("input[name=q]", PDF_QUERY)
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("#hits tr.hit")
    assert page.locator("#hits tr.hit").count() >= 3
    assert urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["q"] == [PDF_QUERY]  # a search is a link
    _shot(page, "search")
    hit = _pdf_hit(web_lake)
    page.click(f"a[href^='/chunks/{hit.chunk_id}']")
    page.wait_for_selector("div.page img")
    _wait_for_image(page, "div.page img")
    _shot(page, "citation-pdf")
    image = page.locator("div.page img").bounding_box()
    drawn = [r.bounding_box() for r in page.locator("div.region").all()]
    boxes = page_regions(hit.citation)
    assert len(drawn) == len(boxes) >= 1
    for got, (x0, top, x1, bottom) in zip(drawn, boxes, strict=True):
        want = (x0 * DEFAULT_SCALE, top * DEFAULT_SCALE, (x1 - x0) * DEFAULT_SCALE, (bottom - top) * DEFAULT_SCALE)
        have = (got["x"] - image["x"], got["y"] - image["y"], got["width"], got["height"])
        assert all(abs(a - b) <= 1.5 for a, b in zip(have, want, strict=True)), (have, want)
    # and the rendered page holds the chunk's words inside the outline: dark pixels there, on the image itself
    from io import BytesIO

    from PIL import Image

    png = Image.open(BytesIO(httpx.get(f"{web.url}/chunks/{hit.chunk_id}/page.png").content)).convert("L")
    x0, top, x1, bottom = (v * DEFAULT_SCALE for v in boxes[0])
    inside = png.crop((int(x0), int(top), int(x1), int(bottom)))
    assert min(inside.getdata()) < 100  # text is drawn where the outline is


def test_sources_show_a_failed_source_and_refresh_changes_a_status(page, web):
    page.goto(web.url + "/sources")
    broken = page.locator("#source-broken-tickets")
    assert broken.locator(".pill").inner_text() == "failed" and "json" in broken.inner_text().lower()
    later = page.locator("#source-later")
    assert later.locator(".pill").inner_text() == "pending"
    _shot(page, "sources")
    later.locator("form[action$='/refresh'] button").click()
    page.wait_for_selector("#done")
    assert page.locator("#source-later .pill").inner_text() == "indexed"
    page.goto(web.url + "/versions")
    _shot(page, "versions")
    page.goto(web.url + "/insights")
    page.wait_for_selector("h1")
    _shot(page, "insights")


def test_a_script_in_a_query_never_runs(page, web):
    page.goto(web.url + "/?" + urllib.parse.urlencode({"q": "<script>alert(1)</script><img src=x onerror=alert(2)>"}))
    page.wait_for_selector("#summary, #error")
    assert page.dialogs == [] and page.locator("input[name=q]").input_value().startswith("<script>")
    page.goto(web.url + "/?" + urllib.parse.urlencode({"q": "x" * 1001}))
    assert "limit is 1000" in page.locator("#error").inner_text()


def test_versions_lists_tags_and_searches_a_snapshot(web, web_lake):
    if "web-v1" not in web_lake.snapshots():
        web_lake.tag("web-v1")
    page = _get(web, "/versions").text
    assert "<b>web-v1</b>" in page and "href='/?tag=web-v1'" in page and "<td>search</td>" in page
    snapshot = _get(web, "/", q=PDF_QUERY, tag="web-v1")
    assert snapshot.status_code == 200 and "searching the snapshot <b>web-v1</b>" in snapshot.text
    assert "id=hits" in snapshot.text
    assert _get(web, "/", q=PDF_QUERY, tag="nope").status_code == 400  # an unknown tag: the error by the box
