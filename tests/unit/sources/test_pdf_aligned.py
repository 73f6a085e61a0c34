"""Unruled tables (kbflow.sources.pdf.aligned): columns of figures aligned by whitespace become table units,
with their period headers, while prose that holds numbers stays prose."""

import importlib.util
import json

import pytest
from conftest import SAMPLES

from kbflow import resolve
from kbflow.chunk.base import chunk_unit
from kbflow.config import ChunkSettings
from kbflow.records import Citation, Source
from kbflow.sources.base import get_loader
from kbflow.sources.pdf.aligned import aligned_tables, is_figure, with_aligned_tables
from kbflow.sources.pdf.layout import _raw_lines, split_tables

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)

#: Helvetica advance widths (per 1000 em) of the characters these pages use; the rest are taken as 556
_WIDTH = {" ": 278, ",": 278, ".": 278, "(": 333, ")": 333, "$": 556, "-": 333, ":": 278, "i": 222, "l": 222}
SIZE = 9
COLUMNS = (400, 466, 532)  # the right edges the figures are aligned on
STATEMENT = [
    ("Revenue:", ()),
    ("Subscription", ("$ 16,388", "$ 14,573", "$ 11,626")),
    ("Product", ("532", "555", "507")),
    ("Total revenue", ("17,606", "15,785", "12,868")),
    ("Operating expenses:", ()),
    ("Research and development", ("2,987", "2,540", "2,188")),
    ("Interest expense", ("(112)", "(113)", "(116)")),
    ("Other income, net", ("41", "—", "42")),
    ("Net income", ("$ 4,756", "$ 4,822", "$ 5,260")),
]


def width(text: str, size: float = SIZE) -> float:
    return sum(_WIDTH.get(c, 556) for c in text) * size / 1000


def word(text: str, x0: float, top: float) -> dict:
    return {"text": text, "x0": x0, "x1": x0 + width(text), "top": top, "bottom": top + SIZE}


def statement_words(top: float = 100.0) -> list[dict]:
    """A statement's words as the parser gives them: period headers, then labels at the left and figures
    right-aligned on :data:`COLUMNS`."""
    x = COLUMNS[1] - width("Years Ended")  # over the middle column, as a spanning header is printed
    words = [word("Years", x, top), word("Ended", x + width("Years "), top)]
    top += 13
    for right in COLUMNS:
        words += [word("December", right - width("December 31,"), top), word("31,", right - width("31,"), top)]
    top += 13
    for right, year in zip(COLUMNS, ("2022", "2021", "2020")):
        words.append(word(year, right - width(year), top))
    for label, figures in STATEMENT:
        top += 13
        x = 52.0
        for part in label.split():
            words.append(word(part, x, top))
            x += width(part + " ")
        for right, figure in zip(COLUMNS, figures):
            if figure.startswith("$ "):  # the currency sign stands apart, at the column's left
                words.append(word("$", right - 58, top))
                figure = figure[2:]
            words.append(word(figure, right - width(figure), top))
    return words


@pytest.mark.parametrize(
    "text, figure",
    [("16,388", True), ("$ 16,388", True), ("(1,084)", True), ("10.13", True), ("34.6%", True), ("—", True),
     ("2022", True), ("Revenue", False), ("12a", False), ("1,23,4", False), ("$", False), ("Q4", False)],
)  # fmt: skip
def test_a_figure_is_one_number_with_its_sign_currency_and_parentheses(text, figure):
    assert is_figure(text) is figure


def test_a_statement_without_lines_is_a_table_with_its_period_headers_and_row_labels():
    lines = _raw_lines(statement_words())
    found = aligned_tables(lines, 612)
    assert len(found) == 1
    table, held = found[0]
    assert table["ruled"] is False and len(held) == len(lines)
    prose, tables = split_tables([w for line in lines for w in line], [table])
    assert prose == [] and len(tables) == 1
    rows = tables[0].text.split("\n")
    assert rows[0] == "|  | December 31, 2022 | Years Ended December 31, 2021 | December 31, 2020 |"
    assert rows[1] == "| --- | --- | --- | --- |"
    assert rows[2] == "| Revenue: |  |  |  |"
    assert rows[3] == "| Subscription | $ 16,388 | $ 14,573 | $ 11,626 |"
    assert rows[8] == "| Interest expense | (112) | (113) | (116) |"
    assert rows[9] == "| Other income, net | 41 | — | 42 |"
    assert rows[-1] == "| Net income | $ 4,756 | $ 4,822 | $ 5,260 |"
    assert len(tables[0].rows) == 1 + len(STATEMENT)  # the header lines are one row


def test_prose_holding_numbers_and_figures_off_any_column_stay_prose():
    prose = []
    for i, sentence in enumerate(
        [
            "In 2022 revenue grew to 17,606 from 15,785 in 2021, and 12,868 in 2020.",
            "Operating margin fell from 36.8% to 34.6% as expenses of 9,343 rose by 15%.",
            "We repurchased 15.7 million shares for 6,500 during 2022 and 2021 combined.",
            "Capital expenditure was 442 in 2022 against 348 in 2021 and 419 in 2020.",
        ]
    ):
        x = 52.0
        for part in sentence.split():
            prose.append(word(part, x, 100 + 13 * i))
            x += width(part + " ")
    assert aligned_tables(_raw_lines(prose), 612) == []
    # figures in two wide-spaced cells a line, but never on the same column twice
    scattered = [
        w
        for i in range(5)
        for w in (
            word("Item", 52, 200 + 13 * i),
            word(f"{i + 1},000", 150 + 61 * i, 200 + 13 * i),
            word("12", 500 - 37 * i, 200 + 13 * i),
        )
    ]
    assert aligned_tables(_raw_lines(scattered), 612) == []


def test_a_ruled_table_holding_the_lines_stays_and_ruled_pieces_give_way():
    lines = _raw_lines(statement_words())
    table, _ = aligned_tables(lines, 612)[0]
    whole = {"bbox": table["bbox"], "rows": table["rows"]}  # the same table, drawn with lines
    assert with_aligned_tables(lines, 612, [whole]) == [whole]
    # a shaded band around two rows (a ruled table of its own) inside the statement: the statement wins
    band_rows = table["rows"][3:5]
    band = {
        "bbox": [band_rows[0]["bbox"][0], band_rows[0]["bbox"][1], band_rows[1]["bbox"][2], band_rows[1]["bbox"][3]],
        "rows": band_rows,
    }
    assert with_aligned_tables(lines, 612, [band]) == [table]
    # a frame drawn around the page (no two rows of two cells): no table, the statement is found
    frame = {"bbox": [40, 40, 580, 760], "rows": [{"bbox": [40, 40, 580, 760], "cells": [[40, 40, 580, 760]]}]}
    assert with_aligned_tables(lines, 612, [frame]) == [frame, table]


def test_an_unruled_statement_in_a_pdf_is_a_table_unit_whose_chunks_cite_their_rows(tmp_path):
    ops = []
    for w in statement_words(top=200):
        y = 792 - w["bottom"] + 2  # PDF space: the baseline, from the bottom
        ops.append(f"BT /F1 {SIZE} Tf {w['x0']:.2f} {y:.2f} Td ({make_pdf._escape(w['text'])}) Tj ET")
    title = [(13, "ACME INC."), (13, "CONSOLIDATED STATEMENTS OF INCOME"), (11, "(In millions)")]
    pdf = tmp_path / "acme.pdf"
    pdf.write_bytes(make_pdf.build(pages=[title], drawing=tuple(op.replace("—", "-") for op in ops)))
    loader, source = get_loader("pdf"), Source("s", "pdf", str(tmp_path))
    units = list(loader.load(source))
    tables = [u for u in units if u.content_kind == "table"]
    page = next(u for u in units if u.content_kind == "pdf")
    assert len(tables) == 1
    table = tables[0]
    assert "| Subscription | $ 16,388 | $ 14,573 | $ 11,626 |" in table.text
    assert "Research and development" not in page.text and "CONSOLIDATED STATEMENTS OF INCOME" in page.text
    layout = json.loads(table.layout)
    assert layout["heading"].startswith("ACME INC. CONSOLIDATED STATEMENTS OF INCOME (In millions)")
    chunks = chunk_unit(table, ChunkSettings(max_tokens=48, min_tokens=8))
    assert len(chunks) > 1
    header = table.text.split("\n")[0]
    for chunk in chunks:
        assert resolve(Citation("s", "pdf", source.uri, chunk.locator, chunk_hash=None)) == chunk.text
        assert chunk.locator.regions
    for chunk in chunks[1:]:  # a later chunk is read with the statement's title and its period headers
        assert chunk.context.endswith(header) and "CONSOLIDATED STATEMENTS OF INCOME" in chunk.context


def test_a_grid_of_figures_without_labels_stays_prose():
    """A tax table: rows of figures alone, nothing a question could name them by."""
    grid = [
        word(str(v), right - width(str(v)), 100 + 13 * i)
        for i in range(6)
        for right, v in zip(COLUMNS, (1000 + 25 * i, 1025 + 25 * i, 100 + i))
    ]
    assert aligned_tables(_raw_lines(grid), 612) == []
    names = ("Revenue", "Cost of sales", "Gross profit", "Selling expenses", "Interest", "Net income")
    labelled = grid + [word(name, 52, 100 + 13 * i) for i, name in enumerate(names)]
    assert len(aligned_tables(_raw_lines(labelled), 612)) == 1


def test_words_go_to_the_cells_their_centers_are_in_as_a_scan_of_every_word_would_put_them():
    """The row-by-row matching (a table's words narrowed to each row's band first) puts every word where a
    check of every word against every cell does, edges and empty cells included."""
    import random

    from kbflow.sources.pdf.aligned import _filled_rows
    from kbflow.sources.pdf.layout import _cell_text, _row_cells, center_in

    rng = random.Random(11)
    for _ in range(40):
        words = []
        for i in range(rng.randint(0, 60)):
            x, y = rng.choice([rng.uniform(0, 100), 50.0]), rng.choice([rng.uniform(0, 100), 40.0])
            words.append({"text": f"w{i}", "x0": x - 2, "x1": x + 2, "top": y - 3, "bottom": y + 3})
        rows = []
        for top in (0.0, 40.0, 70.0):  # rows sharing an edge at y=40 (a word centred there is in both)
            bottom = {0.0: 40.0, 40.0: 70.0, 70.0: 100.0}[top]
            cells = [[0.0, top, 50.0, bottom], [50.0, top, 100.0, bottom], None]
            rng.shuffle(cells)
            rows.append({"cells": cells, "bbox": [0.0, top, 100.0, bottom]})
        centers = [((w["x0"] + w["x1"]) / 2, (w["top"] + w["bottom"]) / 2, w) for w in words]
        for row in rows:
            brute = [_cell_text([w for w in words if center_in(w, c)]) if c is not None else "" for c in row["cells"]]
            assert _row_cells(row["cells"], centers) == brute
        table = {"bbox": [0.0, 0.0, 100.0, 100.0], "rows": rows}
        filled = [sum(1 for c in row["cells"] if c and any(center_in(w, c) for w in words)) >= 2 for row in rows]
        assert _filled_rows(table, words) == sum(filled)
