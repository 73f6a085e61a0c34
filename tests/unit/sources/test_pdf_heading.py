"""A PDF page's heading (the title lines at its top) in the context header of every chunk below it."""

import importlib.util
import json

import pytest
from conftest import SAMPLES

from kbflow import resolve
from kbflow.chunk.base import chunk_unit
from kbflow.config import ChunkSettings
from kbflow.records import Citation, Source
from kbflow.sources.base import get_loader
from kbflow.sources.pdf.heading import MAX_HEADING_CHARS, page_heading

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)

STATEMENT = "ADOBE INC.\nCONSOLIDATED STATEMENTS OF INCOME\n(In millions, except per share data)\n\nYears Ended\n"


@pytest.mark.parametrize(
    "text, heading",
    [
        (
            STATEMENT + "December 2, December 3, November 27,\n2022\nRevenue:\nSubscription $ 16,388",
            "ADOBE INC. CONSOLIDATED STATEMENTS OF INCOME (In millions, except per share data) Years Ended",
        ),
        (
            "Consolidated Statements of Earnings\n$ and shares in millions, except per share amounts\n\n40\n",
            "Consolidated Statements of Earnings $ and shares in millions, except per share amounts",
        ),
        (
            "17\nNote 12—QUARTERLY RESULTS (UNAUDITED)\nThe following tables contain selected unaudited statement "
            "of operations information for each quarter of 2016 and 2017.",
            "Note 12—QUARTERLY RESULTS (UNAUDITED)",
        ),
        # prose, a continued sentence, a list, figures: no heading
        ("We believe that the principal competitive factors in our retail businesses include selection.", None),
        ("channels; (3) web search engines, comparison shopping websites", None),
        ("Notable comparable sales changes by revenue category were as follows:\nComputing", None),
        ("1,467,576\n266,206\n3,726,307", None),
        ("", None),
    ],
)
def test_the_heading_is_the_title_lines_at_the_top_of_the_page(text, heading):
    assert page_heading(text) == heading


def test_a_heading_takes_at_most_four_lines_and_is_cut_to_its_limit():
    assert page_heading("A\nB\nC\nD\nE") == "A B C D"
    long = "\n".join(["SEGMENT INFORMATION AND GEOGRAPHIC DATA BY REGION AND PRODUCT LINE"] * 4)
    heading = page_heading(long)
    assert len(heading) == MAX_HEADING_CHARS and heading.endswith("…")


def test_every_chunk_of_a_page_carries_its_heading_and_its_text_stays_the_source_text(tmp_path):
    body = [(11, f"Line {i}: the pump {i} was inspected and its seal replaced on schedule.") for i in range(40)]
    pdf = tmp_path / "acme.pdf"
    pdf.write_bytes(
        make_pdf.build(
            pages=[
                [(13, "ACME INC."), (13, "CONSOLIDATED STATEMENTS OF MAINTENANCE"), (11, "(In hours)"), *body],
                [(11, "continued from the page before, the pumps were checked again."), *body[:3]],
            ]
        )
    )
    loader, source = get_loader("pdf"), Source("s", "pdf", str(tmp_path))
    units = [u for u in loader.load(source) if u.content_kind == "pdf"]
    first, second = units
    assert json.loads(first.layout)["heading"] == "ACME INC. CONSOLIDATED STATEMENTS OF MAINTENANCE (In hours)"
    assert "heading" not in json.loads(second.layout)
    chunks = chunk_unit(first, ChunkSettings(max_tokens=64, min_tokens=8))
    assert len(chunks) > 2
    heading = "ACME INC. CONSOLIDATED STATEMENTS OF MAINTENANCE (In hours)"
    # the first chunk starts with the title lines themselves: its header does not repeat them
    assert chunks[0].context == "acme.pdf p.1"
    for chunk in chunks[1:]:
        assert chunk.context == f"acme.pdf p.1\n{heading}"
        assert resolve(Citation("s", "pdf", source.uri, chunk.locator, chunk_hash=None)) == chunk.text
        assert heading not in chunk.text
    assert all(c.context == "acme.pdf p.2" for c in chunk_unit(second))
