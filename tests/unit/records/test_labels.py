"""Citation labels: one short line a person reads per locator kind (kbflow.records.labels)."""

from __future__ import annotations

import pytest

from kbflow.records import Citation, Locator
from kbflow.records.labels import MAX_LABEL_CHARS, citation_label, shorten

MDBOOK_TITLE = "References and Borrowing - The Rust Programming Language"


def _web(heading_path: str | None, title: str | None = MDBOOK_TITLE, url: str = "https://b/ch04-02.html") -> Citation:
    css = "html > body > div#mdbook-body-container:nth-of-type(2) > div#mdbook-page-wrapper > div > main"
    return Citation(
        "s",
        "web",
        url,
        Locator("web", url=url, css_path=css, heading_path=heading_path, char_start=2940, char_end=3490),
        title=title,
    )


def test_a_web_hit_reads_as_page_and_section_never_as_markup():
    label = citation_label(_web("References and Borrowing > Mutable References"))
    assert label == "References and Borrowing § Mutable References"
    assert citation_label(_web(None)) == MDBOOK_TITLE  # a chunk before the first heading: the page's title
    assert citation_label(_web("Other heading")) == f"{MDBOOK_TITLE} § Other heading"
    assert citation_label(_web(None, title=None)) == "ch04-02.html"  # no title: the URL's last part
    assert citation_label(_web(None, title=None, url="https://docs.example.org/")) == "docs.example.org"


def test_labels_of_every_kind():
    def label(kind: str, uri: str = "/r", **fields) -> str:
        return Citation("s", kind, uri, Locator(kind, **fields)).label()

    assert label("doc", path="a.md", heading_path="Install > From source", char_start=0, char_end=9) == (
        "a.md § Install > From source"
    )
    assert label("pdf", path="filings/10-K.pdf", page=87, page_label="85", bbox=(1, 2, 3, 4)) == "10-K.pdf p.87 (85)"
    assert label("pdf", path="10-K.pdf", page=3, page_label="3", table=2) == "10-K.pdf p.3 table 2"
    assert label("code", path="kb/r.py", line_start=4, line_end=9, symbol="R.search") == "kb/r.py:4-9 R.search"
    assert label("record", uri="/data/recs.jsonl", record_id="17", field="text") == "recs.jsonl record 17"
    assert label("ticket", ticket_id="42", comment_id="1001") == "ticket 42 comment 1001"


@pytest.mark.parametrize("size", [1, 30, 200])
def test_long_names_and_heading_paths_stay_within_the_limit(size):
    heading = " > ".join(f"Heading number {i} " + "word " * size for i in range(6))
    title = "A page title " + "long " * size
    for citation in (
        _web(heading, title=title),
        Citation("s", "docs", "/d", Locator("doc", path="d/" * size + "x.md", heading_path=heading)),
        Citation(
            "s",
            "repo",
            "/r",
            Locator("code", path="src/" * size + "m.py", line_start=1, line_end=2, symbol="Outer." * size + "method"),
        ),
        Citation("s", "pdf", "/p", Locator("pdf", path="long name " * size + ".pdf", page=1)),
    ):
        label = citation.label()
        assert 0 < len(label) <= MAX_LABEL_CHARS, label
        assert "\n" not in label
        if len(str(citation.locator.heading_path or "")) > MAX_LABEL_CHARS:
            assert "…" in label  # the middle went, not the end


def test_shorten_keeps_both_ends():
    assert shorten("src/" + "a/" * 100 + "module.py", 30).endswith("module.py")
    assert shorten("src/" + "a/" * 100 + "module.py", 30).startswith("src/")
    assert len(shorten("x" * 500, 30)) == 30
    assert shorten("short", 30) == "short"


def test_pdf_pages_get_the_section_the_outline_puts_them_in():
    from kbflow.sources.pdf.pdfium import outline_sections

    class Dest:
        def __init__(self, index):
            self.index = index

        def get_index(self):
            return self.index

    class Mark:
        def __init__(self, level, title, index):
            self.level, self.title, self.dest = level, title, Dest(index)

        def get_title(self):
            return self.title

        def get_dest(self):
            return self.dest

    class Doc:
        marks = [Mark(0, "Part I", 1), Mark(1, "Item 1. Business", 1), Mark(1, "Item 1A.  Risk Factors", 3),
                 Mark(0, "Part II", 5), Mark(1, "Item 7. MD&A", 6)]  # fmt: skip

        def __len__(self):
            return 8

        def get_toc(self, max_depth):
            return iter(self.marks)

    assert outline_sections(Doc()) == [
        None,
        "Part I > Item 1. Business",
        "Part I > Item 1. Business",
        "Part I > Item 1A. Risk Factors",
        "Part I > Item 1A. Risk Factors",
        "Part II",
        "Part II > Item 7. MD&A",
        "Part II > Item 7. MD&A",
    ]
    locator = Locator("pdf", path="10-K.pdf", page=7, heading_path="Part II > Item 7. MD&A")
    assert Citation("s", "pdf", "/f", locator).label() == "10-K.pdf p.7 § Part II > Item 7. MD&A"
