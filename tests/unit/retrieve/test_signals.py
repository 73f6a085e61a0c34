"""The document and page signals (kbflow.retrieve.signals): pure scoring, and a search over real PDFs."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import SAMPLES

from kbflow import Retriever, pipeline
from kbflow import schema as S
from kbflow.config import RetrievalSettings
from kbflow.errors import ConfigError
from kbflow.evaluate.configs import config_for
from kbflow.lake import Lake
from kbflow.records import Source
from kbflow.retrieve.signals import date_words, name_words, reinforce

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)


def test_name_words_split_paths_and_questions_alike():
    assert name_words("filings/AMAZON_2017_10K.pdf") == ["filings", "amazon", "2017", "10", "k", "pdf"]
    assert name_words("What was Amazon's FY22 10-K capex?") == ["amazon", "s", "2022", "fy", "22", "10", "k", "capex"]
    assert name_words("the of and") == []


def test_a_full_date_is_one_word_and_a_quarter_in_words_is_its_number():
    assert date_words("the quarter ended Sept. 30, 2023 and 1 July 2023, not March 2023") == [
        "d20230930",
        "d20230701",
    ]
    assert date_words("February 30, 2023") == ["d20230230"] and date_words("May 45, 2023") == []
    words = name_words("NVIDIA's revenue in the second quarter of fiscal 2024, at October 29, 2023")
    assert words[:3] == ["d20231029", "q", "2"] and "2024" in words
    assert "q" not in name_words("the first nine months of 2023")


def test_a_named_document_lifts_its_chunks_and_the_others_keep_their_scores():
    fused = [("a", 1.0), ("b", 0.9), ("c", 0.5), ("d", 0.0)]
    docs, pages = [0, 1, 1, 0], [-1, -1, -1, -1]
    out = reinforce(fused, docs, pages, {1: 0.6}, document_weight=0.5, page_weight=0.0)
    # b and c gain 0.5 * 0.6 of the best score (1.0); a and d keep theirs
    assert out == [("b", pytest.approx(1.2)), ("a", 1.0), ("c", pytest.approx(0.8)), ("d", 0.0)]
    assert reinforce(fused, docs, pages, {}, 0.5, 0.0) == fused  # nothing named: the order and scores as fused


def test_the_chunks_of_one_page_reinforce_each_other():
    # e and f share a page; g is alone on its page and h has none
    fused = [("g", 2.0), ("e", 1.8), ("f", 1.6), ("h", 1.0), ("i", 0.0)]
    docs = [0, 0, 0, 1, 1]
    pages = [7, 5, 5, -1, 9]
    out = dict(reinforce(fused, docs, pages, {}, 0.0, 0.5))
    span = 2.0
    assert out["e"] == pytest.approx(1.8 + span * 0.5 * 0.8)  # plus half f's normalized score, 1.6 / 2
    assert out["f"] == pytest.approx(1.6 + span * 0.5 * 0.9)  # plus half e's, 1.8 / 2
    assert out["g"] == 2.0 and out["h"] == 1.0 and out["i"] == 0.0
    # the page of two good chunks now leads the page of one better chunk
    assert [c for c, _ in reinforce(fused, docs, pages, {}, 0.0, 0.5)][:3] == ["e", "f", "g"]


def test_the_files_around_the_code_lose_a_share_of_the_best_score():
    fused = [("readme", 2.0), ("fn", 1.6), ("test", 1.5), ("other", 0.4)]
    around = [True, False, True, False]
    out = reinforce(fused, [0, 1, 2, 3], [-1] * 4, {}, 0.0, 0.0, around=around, role_weight=0.3)
    assert dict(out) == {"readme": pytest.approx(1.4), "fn": 1.6, "test": pytest.approx(0.9), "other": 0.4}
    assert [c for c, _ in out] == ["fn", "readme", "test", "other"]
    assert reinforce(fused, [0, 1, 2, 3], [-1] * 4, {}, 0.0, 0.0, around=around, role_weight=0.0) == fused


def test_the_signal_weights_are_settings_checked_and_swept():
    assert RetrievalSettings().document_weight > 0 and RetrievalSettings().page_weight > 0
    with pytest.raises(ConfigError, match="document_weight"):
        RetrievalSettings(document_weight=-1)
    with pytest.raises(ConfigError, match="page_weight"):
        RetrievalSettings(page_weight="a lot")
    with pytest.raises(ConfigError, match="role_weight"):
        RetrievalSettings(role_weight=11)
    from kbflow.config import Settings

    config = config_for(Settings.coerce(None, lake="/tmp/x"), document_weight=0.0, page_weight=0.2, role_weight=0)
    assert config["document_weight"] == 0.0 and config["page_weight"] == 0.2 and config["role_weight"] == 0


def _filing(path, lines: list[str]) -> None:
    path.write_bytes(make_pdf.build(pages=[[(13, "ACME Corp annual report"), *((11, t) for t in lines)]]))


def test_a_question_naming_a_filing_prefers_it_and_the_signal_can_be_turned_off(tmp_path, fast_settings):
    folder = tmp_path / "filings"
    folder.mkdir()
    _filing(folder / "ACME_2021_10K.pdf", ["Revenue for the year was 5 million dollars from pumps."])
    _filing(folder / "ACME_2022_10K.pdf", ["Sales of valves reached 6 million dollars in the year."])
    lake = Lake(fast_settings.lake)
    lake.update_sources([Source("f", "pdf", str(folder)).to_row()])
    pipeline.ingest(lake, fast_settings)
    r = Retriever.open(lake, settings=fast_settings)
    question = "What was the revenue or the sales in FY22?"
    off = r.search(question, k=2, mode="bm25", document_weight=0, page_weight=0)
    assert off[0].citation.locator.path == "ACME_2021_10K.pdf"  # the words alone favour the other year
    on = r.search(question, k=2, mode="bm25")
    assert on[0].citation.locator.path == "ACME_2022_10K.pdf"
    assert on[0].score == pytest.approx(off[1].score + 0.5 * off[0].score)  # half the best score: its name matched
    no_year = r.search("What was the revenue or the sales?", k=2, mode="bm25")
    assert no_year[0].citation.locator.path == "ACME_2021_10K.pdf"


def test_a_question_naming_the_date_a_filings_period_ended_prefers_that_filing(tmp_path, fast_settings):
    """A filing's file may name its fiscal quarter (``2023 Q3 MSFT.pdf`` is Microsoft's fiscal 2024 first
    quarter); the period its cover states is a word of its name, matched whole."""
    folder = tmp_path / "filings"
    folder.mkdir()
    for name, ended, figure in (("ACME_2023Q3_10Q", "September 30, 2022", 5), ("ACME_2024Q1_10Q", "March 31, 2023", 6)):
        (folder / f"{name}.pdf").write_bytes(
            make_pdf.build(
                pages=[
                    [(13, "FORM 10-Q"), (11, f"For the quarterly period ended {ended}"), (11, "ACME Corp")],
                    [(11, f"Unearned revenue was {figure} million dollars at the end of the quarter.")],
                ]
            )
        )
    lake = Lake(fast_settings.lake)
    lake.update_sources([Source("f", "pdf", str(folder)).to_row()])
    pipeline.ingest(lake, fast_settings)
    r = Retriever.open(lake, settings=fast_settings)
    for ended, path in (("March 31, 2023", "ACME_2024Q1_10Q.pdf"), ("September 30, 2022", "ACME_2023Q3_10Q.pdf")):
        hits = r.search(f"What was the unearned revenue at {ended}?", k=2, mode="bm25", page_weight=0)
        assert hits[0].citation.locator.path == path, ended
        off = r.search(f"What was the unearned revenue at {ended}?", k=4, mode="bm25", page_weight=0, document_weight=0)
        before = next(h.score for h in off if h.chunk_id == hits[0].chunk_id)
        assert hits[0].score > before  # lifted by its cover's date, a word the question names


def test_a_question_naming_a_filings_registrant_prefers_that_web_page(tmp_path, fast_settings):
    """An inline XBRL filing's page is named by its title (its registrant, form and year, taken from its cover
    page), not by its file's stem: a question naming the company lifts that filing's chunks. (Other web pages
    are not named by their titles.)"""
    pytest.importorskip("html5lib")
    folder = tmp_path / "edgar"
    folder.mkdir()
    cover = (
        '<ix:nonNumeric name="dei:EntityRegistrantName">{name}</ix:nonNumeric>'
        '<ix:nonNumeric name="dei:DocumentType">10-K</ix:nonNumeric>'
    )
    for stem, name, text in [
        ("abc-20241231", "ALPHA BEVERAGE CO", "We had approximately 9,000 employees at the end of the year."),
        ("xyz-20241231", "ZETA MOTORS INC", "Our company had approximately 12,000 employees and contractors."),
    ]:
        html = f"<html><head><title>{stem}</title></head><body><div>{cover.format(name=name)}</div><p>{text}</p>"
        (folder / f"{stem}.htm").write_text(html + "</body></html>")
    lake = Lake(fast_settings.lake)
    lake.update_sources([Source("e", "web", str(folder)).to_row()])
    pipeline.ingest(lake, fast_settings)
    r = Retriever.open(lake, settings=fast_settings)
    question = "How many employees did Alpha Beverage have?"
    on = r.search(question, k=2, mode="bm25")
    off = r.search(question, k=2, mode="bm25", document_weight=0)
    assert on[0].citation.locator.path == "abc-20241231.htm"
    named = next(h.score for h in off if h.citation.locator.path == "abc-20241231.htm")
    assert on[0].score == pytest.approx(named + 0.5 * off[0].score)  # half the best score: its registrant matched
    other = next(h.score for h in on if h.citation.locator.path == "xyz-20241231.htm")
    assert other == pytest.approx(next(h.score for h in off if h.citation.locator.path == "xyz-20241231.htm"))


def test_a_question_about_code_gets_the_function_before_the_readme_that_names_it(tmp_path, fast_settings):
    """In a repository the README, tests and typings share the function's words; the role signal ranks them
    below the code (kbflow.retrieve.roles), and ``role_weight=0`` turns it off. A folder of documents alone is
    not touched."""
    repo = tmp_path / "pkg"
    (repo / "lib").mkdir(parents=True)
    (repo / "test").mkdir()
    (repo / "lib" / "check.js").write_text(
        "function satisfies(version, range) {\n  return parseRange(range).test(version)\n}\n"
        "module.exports = satisfies\n"
    )
    (repo / "test" / "range.js").write_text(
        "test('satisfies a version range', () => {\n  ok(satisfies('1.2.3', '^1'))\n})\n"
    )
    readme = "Check whether a version is in a version range: a version satisfies a version range when {}.\n"
    (repo / "README.md").write_text("# Ranges\n\n" + readme.format("the range holds it"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("# Ranges\n\n" + readme.format("the range contains it"))
    lake = Lake(fast_settings.lake)
    lake.update_sources([Source("pkg", "repo", str(repo)).to_row(), Source("docs", "docs", str(docs)).to_row()])
    pipeline.ingest(lake, fast_settings)
    r = Retriever.open(lake, settings=fast_settings)
    question = "check whether a version is in a version range"
    off = [(h.citation.source_id, h.citation.locator.path) for h in r.search(question, k=4, mode="bm25", role_weight=0)]
    on = [(h.citation.source_id, h.citation.locator.path) for h in r.search(question, k=4, mode="bm25")]
    assert off.index(("pkg", "README.md")) < off.index(("pkg", "lib/check.js"))
    assert on.index(("pkg", "lib/check.js")) < on.index(("pkg", "README.md"))
    assert on.index(("pkg", "lib/check.js")) < on.index(("pkg", "test/range.js"))
    assert on[0] == ("docs", "README.md")  # the documents' own README keeps its score
    # each hit says where its file stands: the code and a folder of documents say nothing
    roles = {(h.citation.source_id, h.citation.locator.path): h.role for h in r.search(question, k=4, mode="bm25")}
    assert roles == {
        ("docs", "README.md"): None,
        ("pkg", "lib/check.js"): None,
        ("pkg", "README.md"): "prose",
        ("pkg", "test/range.js"): "test",
    }
    assert all(h.role is None for h in r.search(question, k=4, mode="bm25", role_weight=0))  # not ranked by it


def test_the_chunks_of_one_split_function_are_one_code_unit(tmp_path, fast_settings):
    """Groups reads each row's code unit (its file and symbol): the chunks of a function cut in several share one;
    another function has its own; prose and a file's code outside any definition have none (-1)."""
    repo = tmp_path / "pkg"
    repo.mkdir()
    body = "".join(f"  total = total + step({i}) * weigh('item number {i}', options)\n" for i in range(120))
    (repo / "long.js").write_text(
        "const limits = { low: 1, high: 9 }\n\n"
        f"function long(options) {{\n  let total = 0\n{body}  return total\n}}\n\n"
        "function short(a, b) {\n  return a + b\n}\n"
    )
    (repo / "README.md").write_text("# pkg\n\nAdds up the weighed steps of every item.\n")
    lake = Lake(fast_settings.lake)
    lake.update_sources([Source("pkg", "repo", str(repo)).to_row()])
    pipeline.ingest(lake, fast_settings)
    r = Retriever.open(lake, settings=fast_settings)
    table = r.dataset.to_table(columns=[S.LOCATOR], with_row_id=True)
    rows = table.column("_rowid").to_pylist()
    where = [(loc.get("path"), loc.get("symbol")) for loc in table.column(S.LOCATOR).to_pylist()]
    units = dict(zip(rows, r.table.groups.units_of(rows)))
    by_place: dict = {}
    for row, place in zip(rows, where):
        by_place.setdefault(place, set()).add(units[row])
    long_units = by_place[("long.js", "long")]
    assert len(long_units) == 1 and next(iter(long_units)) >= 0
    assert sum(place == ("long.js", "long") for place in where) > 1  # the function was cut
    assert by_place[("long.js", "short")] != long_units and -1 not in by_place[("long.js", "short")]
    assert by_place[("README.md", None)] == {-1}


def test_a_document_or_web_page_is_one_page_but_prose_around_code_and_records_are_not(tmp_path, fast_settings):
    """Groups gives every chunk of a document (and of a web page) its document's page, so the page signal
    lets them reinforce each other; a README beside code, code and the records of a JSONL file get none (-1)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    section = "Each section of the long guide speaks of caching responses and their expiry times.\n\n"
    (docs / "guide.md").write_text("# Guide\n\n" + "".join(f"## Part {i}\n\n{section * 12}" for i in range(3)))
    (docs / "short.md").write_text("# Short\n\nOne section about something else.\n")
    repo = tmp_path / "pkg"
    repo.mkdir()
    (repo / "cache.py").write_text("def expire(entry):\n    return entry.age > entry.ttl\n")
    (repo / "README.md").write_text("# pkg\n\nCaches responses until they expire.\n")
    records = tmp_path / "notes.jsonl"
    records.write_text('{"_id": "a", "text": "Caching responses."}\n{"_id": "b", "text": "Expiry times."}\n')
    lake = Lake(fast_settings.lake)
    lake.update_sources(
        [
            Source("docs", "docs", str(docs)).to_row(),
            Source("pkg", "repo", str(repo)).to_row(),
            Source("notes", "jsonl", str(records)).to_row(),
        ]
    )
    assert all(report.status == "new" for report in pipeline.ingest(lake, fast_settings).sources)
    r = Retriever.open(lake, settings=fast_settings)
    table = r.dataset.to_table(columns=[S.SOURCE_ID, S.LOCATOR], with_row_id=True)
    rows = table.column("_rowid").to_pylist()
    places = [
        (s, loc.get("path"))
        for s, loc in zip(table.column(S.SOURCE_ID).to_pylist(), table.column(S.LOCATOR).to_pylist())
    ]
    _, pages = r.table.groups.of(rows)
    by_place: dict = {}
    for place, page in zip(places, pages.tolist()):
        by_place.setdefault(place, set()).add(page)
    guide = by_place[("docs", "guide.md")]
    assert sum(p == ("docs", "guide.md") for p in places) > 1 and len(guide) == 1 and -1 not in guide
    assert by_place[("docs", "short.md")] != guide and -1 not in by_place[("docs", "short.md")]
    assert by_place[("pkg", "README.md")] == {-1} and by_place[("pkg", "cache.py")] == {-1}
    assert {page for (source, _), page in zip(places, pages.tolist()) if source == "notes"} == {-1}
