"""What the keyword leg indexes for a chunk: its header and text, its identifiers' words and, but in code, its
figures' values."""

from __future__ import annotations

import pyarrow as pa

from kbflow import schema as S
from kbflow.chunk.context import search_texts


def _rows(*rows: tuple[str, str | None, str]) -> pa.Table:
    kinds, contexts, texts = zip(*rows)
    return pa.table({S.CONTENT_KIND: list(kinds), S.CONTEXT: list(contexts), S.TEXT: list(texts)})


def test_a_page_is_indexed_with_its_figures_values_and_code_is_not():
    page, code = search_texts(
        _rows(
            ("pdf", "10-K > Statements of Operations", "Net income 11,588"),
            ("code", "lake.py", "LIMIT = 11,588  # callHandlers"),
        )
    )
    assert page == "10-K > Statements of Operations\nNet income 11,588\nn12x3"
    assert code == "lake.py\nLIMIT = 11,588  # callHandlers\ncall handlers"


def test_a_text_without_figures_or_identifiers_is_indexed_as_embedded():
    assert search_texts(_rows(("doc", None, "Plain prose, nothing more."))) == ["Plain prose, nothing more."]


def test_a_web_header_names_a_class_above_the_chunk_without_its_parameters_and_always_names_its_own_heading():
    """Sphinx heads a class by its whole signature: in front of each member's chunk it was most of the header, and
    the cut at MAX_HEADER_CHARS took the member's own name (``> ur`` for ``url_for``)."""
    from kbflow.chunk.context import MAX_HEADER_CHARS, context_header
    from kbflow.records import Locator, RawUnit

    cls = "class flask.Flask(" + ", ".join(f"option_{i}=None" for i in range(20)) + ")"
    own = "url_for(endpoint, *, _anchor=None, _method=None, **values)"
    unit = RawUnit("flask", "api.html", "x", "web", Locator(kind="web", url="api.html"), title="API — Flask")
    loc = Locator(kind="web", url="api.html", heading_path=f"Application Object > {cls} > {own}")
    assert context_header(unit, loc, "x") == f"API — Flask — Application Object > class flask.Flask > {own}"
    # a heading in words keeps its parentheses; a short signature stays whole
    prose = Locator(kind="web", url="a.html", heading_path="Installing the package (on Linux, macOS and Windows) > Pip")
    assert "(on Linux, macOS and Windows)" in context_header(unit, prose, "x")
    manual = Locator(kind="web", url="a.html", heading_path="semver(1) -- The semantic versioner for npm > Usage")
    assert "semver(1) -- The semantic versioner for npm > Usage" in context_header(unit, manual, "x")  # no signature
    short = Locator(kind="web", url="a.html", heading_path="class Group(Command): > add_command")
    assert context_header(unit, short, "x") == "API — Flask — class Group(Command): > add_command"
    # too long even so: middle headings go, the chunk's own heading stays
    deep = Locator(kind="web", url="a.html", heading_path=" > ".join(["A" * 90, "B" * 90, "C" * 90, "own heading"]))
    header = context_header(unit, deep, "x")
    assert len(header) <= MAX_HEADER_CHARS and header.endswith("> own heading") and header.startswith("API — Flask")
