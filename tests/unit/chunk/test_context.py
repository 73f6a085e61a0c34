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
