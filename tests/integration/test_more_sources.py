"""PDF, web and ticket loaders: text, locators, citation round-trips and clear errors."""

import json
import os

import pytest
from conftest import REPO

from kbflow.chunk.base import chunk_unit
from kbflow.chunk.layout import check_regions, pdf_regions
from kbflow.errors import SourceError
from kbflow.records import Citation, Source
from kbflow.retrieve.resolver import resolve
from kbflow.sources.base import get_loader

ROOT = str(REPO)
SAMPLES = os.path.join(ROOT, "data", "samples")


def units_and_chunks(source_type, uri):
    source = Source("s", source_type, str(uri))
    units = list(get_loader(source_type).load(source))
    return source, units, [c for u in units for c in chunk_unit(u)]


def assert_round_trips(source, chunks):
    for c in chunks:
        assert resolve(Citation(source.source_id, source.source_type, source.uri, c.locator)) == c.text


def test_pdf_pages_words_regions_and_round_trip():
    source, units, chunks = units_and_chunks("pdf", os.path.join(SAMPLES, "pdf"))
    assert [u.locator.page for u in units] == [1, 2]
    assert units[0].text.startswith("kbflow operations guide\n\nRetries and backoff\nWhen a source cannot be read")
    layout = json.loads(units[0].layout)
    for c in chunks:
        assert c.locator.regions and c.locator.bbox == c.locator.regions[0][1]
        # every word of the chunk lies inside one of its regions, and no other word of the page does
        unit_layout = json.loads([u for u in units if u.unit_hash == c.unit_hash][0].layout)
        assert check_regions(unit_layout, c.locator.char_start, c.locator.char_end, c.locator.regions) == (0, 0)
    assert layout["page"] == 1
    assert_round_trips(source, chunks)
    assert chunks[0].locator.to_dict()["regions"][0]["page"] == 1


def test_regions_split_where_a_chunk_starts_mid_line():
    # two lines of one block; the chunk starts at "c" on the first line
    words = [[0, 1, 10, 10, 20, 20, 0], [2, 3, 30, 10, 40, 20, 0], [4, 5, 10, 30, 20, 40, 0], [6, 7, 30, 30, 40, 40, 0]]
    layout = {"page": 3, "words": words}
    regions = pdf_regions(layout, 2, 7)
    assert regions == ((3, (30, 10, 40, 20)), (3, (10, 30, 40, 40)))
    assert check_regions(layout, 2, 7, regions) == (0, 0)
    # a whole block stays one box; one box over the lot would take in the word before the span
    assert pdf_regions(layout, 0, 7) == ((3, (10, 10, 40, 40)),)
    assert check_regions(layout, 2, 7, ((3, (10, 10, 40, 40)),)) == (0, 1)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not a pdf at all", "not a readable PDF"),
        (
            b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
            b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
            b"trailer\n<< /Root 1 0 R >>\n%%EOF\n",
            "the PDF has no pages",
        ),
    ],
)
def test_pdf_bad_files_fail_clearly(tmp_path, content, message):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(content)
    with pytest.raises(SourceError, match=rf"left out: bad\.pdf \(({message})"):
        units_and_chunks("pdf", bad)


def test_pdf_without_text_layer_says_so(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_pdf", os.path.join(SAMPLES, "make_pdf.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = tmp_path / "scan.pdf"
    path.write_bytes(mod.build(pages=[[(11, "")], [(11, "")]], footer=None))
    with pytest.raises(SourceError, match=r"scan\.pdf \(no text layer"):
        units_and_chunks("pdf", path)


@pytest.mark.parametrize("name", ["issue-33-lorem-ipsum.pdf", "scotus-transcript-p1.pdf"])
def test_real_pdfs_round_trip_columns_and_spacing(name):
    source, units, chunks = units_and_chunks("pdf", os.path.join(ROOT, "tests", "pdfs", name))
    assert chunks
    assert_round_trips(source, chunks[:30])
    layouts = {u.unit_hash: json.loads(u.layout) for u in units}
    for c in chunks:
        if c.content_kind == "pdf":  # tables: see test_pdf's
            lay = layouts[c.unit_hash]
            assert check_regions(lay, c.locator.char_start, c.locator.char_end, c.locator.regions) == (0, 0)


def test_web_page_strips_boilerplate_and_keeps_headings():
    source, units, chunks = units_and_chunks("web", os.path.join(SAMPLES, "web"))
    (unit,) = units
    assert unit.title == "Lake snapshots — kbflow"
    assert unit.locator.url == "https://kbflow.example/docs/snapshots.html"
    assert unit.text.startswith("# Lake snapshots\n\nA snapshot pins one version")
    for junk in ("ignore me", "hidden paragraph", "Privacy", "Home"):
        assert junk not in unit.text
    assert "## Reading an older version" in unit.text
    assert all(c.locator.css_path.startswith("html > body > main#content > article") for c in chunks)
    assert_round_trips(source, chunks)


def test_tickets_one_unit_per_post_and_round_trip():
    source, units, chunks = units_and_chunks("ticket", os.path.join(SAMPLES, "tickets"))
    assert [(u.locator.ticket_id, u.locator.comment_id) for u in units] == [("42", "body"), ("42", "1001")]
    assert units[1].title == "#42 Search returns stale results after an edit (maintainer)"
    assert Citation("s", "ticket", source.uri, chunks[1].locator).render() == "ticket 42 comment 1001"
    assert_round_trips(source, chunks)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", r"t\.json \(invalid JSON at line 1"),
        ('[{"title": "no number"}]', r't\.json \(issue #1 of the file\) \(has no "number"'),
        ('{"number": 7, "comments": [{"body": "x"}]}', r't\.json \(issue 7\) \(comment 1 has no "id"'),
    ],
)
def test_ticket_bad_exports_fail_clearly(tmp_path, content, message):
    (tmp_path / "t.json").write_text(content)
    with pytest.raises(SourceError, match=message):
        units_and_chunks("ticket", tmp_path / "t.json")


def test_ticket_bad_issue_is_reported_and_the_rest_of_the_file_loaded(tmp_path):
    issues = [
        {"number": 1, "title": "Good one", "body": "Works.", "comments": [{"id": 5, "body": "ok"}, {"body": "no id"}]},
        {"title": "no number"},
        {"number": 3, "title": "Null body keeps its title", "body": None},
    ]
    (tmp_path / "t.json").write_text(json.dumps(issues))
    loader = get_loader("ticket")
    units = list(loader.load(Source("s", "ticket", str(tmp_path / "t.json"))))
    assert [(u.locator.ticket_id, u.locator.comment_id) for u in units] == [("1", "body"), ("1", "5"), ("3", "body")]
    assert units[0].text == "Good one\n\nWorks." and units[2].text == "Null body keeps its title"
    assert [str(i) for i in loader.issues] == [
        't.json (issue 1) (comment 2 has no "id" (a number or a string))',
        't.json (issue #2 of the file) (has no "number"; ticket exports need GitHub\'s issue shape)',
    ]
    assert all(i.failed for i in loader.issues)
