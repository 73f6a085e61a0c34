"""reStructuredText and AsciiDoc headings: sections and heading paths as their authors wrote them."""

from kbflow.chunk.base import chunk_unit
from kbflow.chunk.markup import asciidoc_blocks, rst_blocks
from kbflow.config import ChunkSettings
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import get_loader

RST = """==========
Quickstart
==========

.. module:: requests

Eager to get started?

Make a Request
--------------

Begin by importing the module::

    Not a title
    -----------

    >>> r = requests.get('https://example.org')

Timeouts
^^^^^^^^

Pass ``timeout``.

----

Errors
------

A paragraph of two lines, whose
last line is underlined
-----------------------
"""

ADOC = """= User Manual
:toc:

Intro text.

[[install]]
== Install

Run it:

----
== not a title inside a listing
gem install asciidoctor
----

=== From source

Clone it.

// a comment line
# Markdown-style section

Last words.
"""


def _titles(blocks):
    return [(b.level, b.title) for b in blocks if b.kind == "heading"]


def test_rst_titles_take_their_levels_from_the_order_styles_first_appear():
    blocks = rst_blocks(RST)
    # the transition (----) and the underlined indented line are no titles; a paragraph's last line is not either
    assert _titles(blocks) == [(1, "Quickstart"), (2, "Make a Request"), (3, "Timeouts"), (2, "Errors")]
    first = blocks[0]
    assert RST[first.start : first.end] == "==========\nQuickstart\n=========="


def test_asciidoc_titles_blocks_and_anchors():
    blocks = asciidoc_blocks(ADOC)
    assert _titles(blocks) == [(1, "User Manual"), (2, "Install"), (3, "From source"), (1, "Markdown-style section")]
    install = next(b for b in blocks if b.title == "Install")
    assert ADOC[install.start : install.end] == "[[install]]\n== Install"  # its anchor opens its section
    (listing,) = [b for b in blocks if b.kind == "fence"]
    assert ADOC[listing.start : listing.end].startswith("----\n== not a title")
    assert ADOC[listing.start : listing.end].endswith("gem install asciidoctor\n----")


def _doc(text, language, key):
    locator = Locator(kind="doc", path=key, char_start=0, char_end=len(text))
    return RawUnit("s", key, text, "doc", locator, title=key, file_hash="h", language=language)


def test_chunks_of_rst_and_asciidoc_carry_heading_paths():
    settings = ChunkSettings(max_tokens=200)
    rst = chunk_unit(_doc(RST, "rst", "quickstart.rst"), settings)
    assert [c.locator.heading_path for c in rst] == [
        "Quickstart",
        "Quickstart > Make a Request",
        "Quickstart > Make a Request > Timeouts",
        "Quickstart > Errors",
    ]
    adoc = chunk_unit(_doc(ADOC, "asciidoc", "manual.adoc"), settings)
    paths = [c.locator.heading_path for c in adoc]
    assert paths == [
        "User Manual",
        "User Manual > Install",
        "User Manual > Install > From source",
        "Markdown-style section",
    ]
    for c in rst + adoc:
        assert c.text == (RST if c in rst else ADOC)[c.locator.char_start : c.locator.char_end]


def test_asciidoc_files_are_documents_in_repos_and_docs_folders(tmp_path):
    (tmp_path / "manual.adoc").write_text(ADOC)
    (tmp_path / "guide.rst").write_text(RST)
    (tmp_path / "report.qmd").write_text("---\ntitle: Report\n---\n\n# Results\n\n```{r}\nsummary(x)\n```\n")
    for source_type in ("repo", "docs"):
        units = list(get_loader(source_type).load(Source("s", source_type, str(tmp_path))))
        assert sorted((u.unit_key, u.content_kind, u.language) for u in units) == [
            ("guide.rst", "doc", "rst"),
            ("manual.adoc", "doc", "asciidoc"),
            ("report.qmd", "doc", "markdown"),
        ]
