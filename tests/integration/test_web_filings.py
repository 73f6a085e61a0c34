"""Web pages as SEC filings and docs write them: rows as lines, blocks anywhere, bold and API headings, titles."""

from __future__ import annotations

import json

import pytest

from kbflow.sources.web.emphasis import bold_level
from kbflow.sources.web.extract import extract
from kbflow.sources.web.rows import MAX_CELL_CHARS, join_cells
from kbflow.sources.web.xbrl import cover_period, cover_title, filing_title

pytestmark = pytest.mark.unit
pytest.importorskip("html5lib")

# as an SEC filing writes a statement: the sign, the figure and the % in cells of their own, spacer cells between
STATEMENT = """<html><body>
<div><span style="font-weight:700">CONSOLIDATED STATEMENTS OF OPERATIONS</span></div>
<div>(In millions)</div>
<table>
<tr><td></td><td colspan="3">2024</td><td></td><td colspan="3">Change</td></tr>
<tr><td><span>Americas</span></td><td></td><td>$</td><td>167,045</td><td></td><td>3</td><td>%</td></tr>
<tr><td><span>Greater China</span></td><td></td><td>66,952</td><td></td><td>(8</td><td>)%</td></tr>
<tr><td></td><td></td><td></td></tr>
<tr><td>Total net sales</td><td>$</td><td>391,035</td><td>$</td><td>(1,234</td><td>)</td></tr>
</table>
<div>See accompanying Notes.</div>
</body></html>"""


def test_a_statement_row_is_one_line_with_signs_and_percents_joined_to_their_figures():
    page = extract(STATEMENT)
    lines = page.text.split("\n\n")
    assert lines == [
        "### CONSOLIDATED STATEMENTS OF OPERATIONS",  # bold, in a page with no heading element
        "(In millions)",
        "2024 | Change",
        "Americas | $167,045 | 3%",
        "Greater China | 66,952 | (8)%",
        "Total net sales | $391,035 | $(1,234)",
        "See accompanying Notes.",
    ]  # the row of empty cells is no line
    row = next(b for b in page.blocks if page.text[b[0] : b[1]].startswith("Americas"))
    assert row[2].endswith("table > tbody > tr:nth-of-type(2)")  # the row's element


def test_a_docs_option_table_keeps_each_option_with_its_description():
    html = """<html><body><main><h1>Profiles</h1><table>
    <thead><tr><th>Setting</th><th>Default</th><th>Meaning</th></tr></thead>
    <tbody><tr><td><code>opt-level</code></td><td>0</td><td><p>How much to optimize.</p><p>3 is the most.</p></td></tr>
    <tr><td><code>debug</code></td><td style="display:none">secret</td><td>Debug info, <em>full</em> or none.</td></tr>
    </tbody></table></main></body></html>"""
    lines = extract(html).text.split("\n\n")
    assert lines == [
        "# Profiles",
        "Setting | Default | Meaning",
        "opt-level | 0 | How much to optimize. 3 is the most.",  # a cell's paragraphs, a space apart
        "debug | Debug info, full or none.",  # the hidden cell is not read
    ]


def test_a_table_that_lays_out_a_page_is_read_as_blocks():
    html = """<html><body><table><tr>
    <td><h2>About tides</h2><p>Tides rise twice a day.</p><p>The moon pulls the sea.</p></td>
    <td><ul><li>menu one</li></ul></td></tr></table></body></html>"""
    assert extract(html).text.split("\n\n") == [
        "## About tides",
        "Tides rise twice a day.",
        "The moon pulls the sea.",
        "menu one",
    ]


def test_a_row_with_a_cell_of_prose_is_read_as_blocks():
    prose = "The sea is wide. " * (MAX_CELL_CHARS // 17 + 1)
    html = f"<html><body><table><tr><td>Note</td><td>{prose}</td></tr></table></body></html>"
    assert extract(html).text.split("\n\n") == ["Note", prose.strip()]


def test_a_nested_table_is_read_row_by_row_inside_its_cell():
    html = """<html><body><table><tr><td>
    <table><tr><td>Revenue</td><td>$</td><td>10</td></tr><tr><td>Costs</td><td>4</td></tr></table>
    </td></tr></table></body></html>"""
    assert extract(html).text.split("\n\n") == ["Revenue | $10", "Costs | 4"]


@pytest.mark.parametrize(
    ("cells", "line"),
    [
        (["Net income", "$", "93,736", "$", "96,995"], "Net income | $93,736 | $96,995"),
        (["Margin", "46.2", "%", "(1.5", ")%"], "Margin | 46.2% | (1.5)%"),
        (["%", "of sales"], "% | of sales"),  # a lone % first: nothing before it to join
        (["Total", "€"], "Total | €"),  # a sign with no figure after it stays
        (["Loss", "$", "(12", ")"], "Loss | $(12)"),
        ([], ""),
    ],
)
def test_join_cells(cells, line):
    assert join_cells(cells) == line


def test_an_unknown_or_inline_element_around_blocks_is_read_as_a_container():
    """Inline XBRL wraps a filing's notes in ``<ix:nonNumeric>``; a card is an ``<a>`` around ``<div>``s; a web
    component is a tag of its own: their blocks stay blocks, not one paragraph of words run together."""
    html = """<html><body>
    <ix:nonNumeric name="us-gaap:RevenueTextBlock"><div><span>Revenue Recognition</span></div>
    <div><span>Revenue is recognized when control passes.</span></div>
    <div><table><tr><td>Products</td><td>$</td><td>294,866</td></tr></table></div></ix:nonNumeric>
    <a href="/guide"><div>Guide</div><div>Start here.</div></a>
    <docs-note><p>A note inside a web component.</p><p>Its second paragraph.</p></docs-note>
    <p>An <span>inline <b>span</b></span> stays inline.</p>
    </body></html>"""
    assert extract(html).text.split("\n\n") == [
        "Revenue Recognition",
        "Revenue is recognized when control passes.",
        "Products | $294,866",
        "Guide",
        "Start here.",
        "A note inside a web component.",
        "Its second paragraph.",
        "An inline span stays inline.",
    ]


FILING = (
    """<html><body>
<div><span style="font-weight:700">PART II</span></div>
<table><tr><td><span style="font-weight:bold">ITEM 7.</span></td>
<td><b>MANAGEMENT'S DISCUSSION AND ANALYSIS</b></td></tr></table>
<div><span style="font-weight:700">Gross <span>Margin</span></span></div>
<div><span>Gross margin rose on <b>Services</b>.</span></div>
<div style="font-weight:700"><span style="font-weight:400">Not bold after all</span></div>
<table><tr><td><b>2024</b></td><td><b>2023</b></td></tr></table>
<ul><li><b>A bold list item</b></li></ul>
<div><b>______________</b></div>
<div><b>"""
    + "A bold paragraph far too long to be a heading. " * 5
    + """</b></div>
</body></html>"""
)


def test_a_page_without_heading_elements_takes_its_bold_lines_as_headings():
    lines = extract(FILING).text.split("\n\n")
    assert lines[:4] == [
        "# PART II",
        "## ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS",  # an item laid out as a row of bold cells
        "### Gross Margin",
        "Gross margin rose on Services.",  # only a word of it is bold
    ]
    assert lines[4:7] == ["Not bold after all", "2024 | 2023", "A bold list item"]  # a bold row of values stays a row
    assert lines[7] == "______________"  # a rule drawn in bold underscores names nothing
    assert not lines[8].startswith("#")


def test_a_page_with_heading_elements_keeps_only_those():
    html = FILING.replace("<body>", "<body><h1>Annual report</h1>")
    lines = extract(html).text.split("\n\n")
    assert lines[0] == "# Annual report"
    assert [line for line in lines if line.startswith("#")] == ["# Annual report"]


@pytest.mark.parametrize(
    ("text", "level"),
    [("PART I", 1), ("Part IV", 1), ("Item 7. Management's Discussion", 2), ("ITEM 1A: RISK FACTORS", 2),
     ("Gross Margin", 3), ("Partners", 3), ("Items sold", 3)],
)  # fmt: skip
def test_bold_level(text, level):
    assert bold_level(text) == level


COVER = """<html><head><title>ko-20241231</title></head><body>
<div style="display:none"><ix:header><ix:hidden>
<ix:nonNumeric name="dei:DocumentFiscalYearFocus" contextRef="c-1">2024</ix:nonNumeric>
<ix:nonNumeric name="dei:DocumentFiscalPeriodFocus" contextRef="c-1">{period}</ix:nonNumeric>
</ix:hidden></ix:header></div>
<div>FORM <ix:nonNumeric name="dei:DocumentType" contextRef="c-1">10-K</ix:nonNumeric></div>
<div>For the fiscal year ended <ix:nonNumeric name="dei:DocumentPeriodEndDate" contextRef="c-1">December&#160;31,
<span>2024</span></ix:nonNumeric></div>
<div><ix:nonNumeric name="dei:EntityRegistrantName" contextRef="c-1"><b>COCA COLA CO</b></ix:nonNumeric></div>
<div>Our Company had approximately 69,700 employees.</div>
</body></html>"""


def test_an_inline_xbrl_filing_is_titled_by_its_registrant_form_and_period():
    """EDGAR's <title> is the file's stem; the cover page's dei facts (some hidden) say who filed what, when."""
    page = extract(COVER.format(period="FY"))
    assert page.title == "COCA COLA CO 10-K FY2024, period ended December 31, 2024"
    assert page.text.startswith("FORM 10-K") and "FY" not in page.text  # the hidden facts are not read
    assert "Our Company had approximately 69,700 employees." in page.text
    assert extract(COVER.format(period="Q2")).title.startswith("COCA COLA CO 10-K Q2 FY2024")


def test_a_page_without_a_registrant_keeps_its_own_title():
    html = COVER.replace("dei:EntityRegistrantName", "dei:EntityCentralIndexKey").format(period="FY")
    assert extract(html).title == "ko-20241231"
    assert filing_title({"dei:DocumentType": "10-K"}) is None
    assert filing_title({"dei:EntityRegistrantName": "Tesla, Inc."}) == "Tesla, Inc."


SPHINX_API = """<html><body><main>
<h1>Developer Interface</h1><h2>Main Interface</h2>
<dl class="py function"><dt class="sig sig-object py" id="requests.get"><span class="sig-prename">requests.</span>
<span class="sig-name">get</span>(<em>url</em>, <em>params=None</em>)
<a class="headerlink" href="#requests.get">¶</a></dt>
<dd><p>Sends a GET request.</p><div class="highlight"><pre># install it first
pip install requests
```
</pre></div></dd></dl>
<h2>Request Sessions</h2>
<dl class="py class"><dt class="sig sig-object py" id="requests.Session">class requests.Session</dt>
<dd><p>A Requests session.</p>
<dl class="py method"><dt class="sig sig-object py" id="requests.Session.close">close()</dt>
<dd><p>Closes all adapters.</p><pre>s.close()</pre></dd></dl>
</dd></dl>
<dl class="function"><dt id="requests.utils.quote">requests.utils.quote(s)</dt><dd><p>Old Sphinx.</p></dd></dl>
<dl class="field-list"><dt>Parameters:</dt><dd><p>not an entry</p></dd></dl>
</main></body></html>"""


def test_an_api_references_entries_are_headings_below_their_section():
    """Sphinx writes a function's, class's and method's signature as a <dt>: each is a heading one level below
    its section, a class's members one more, so every entry is a section of its own."""
    headings = [line for line in extract(SPHINX_API).text.split("\n\n") if line.startswith("#")]
    assert headings == [
        "# Developer Interface",
        "## Main Interface",
        "### requests. get(url, params=None)",
        "## Request Sessions",
        "### class requests.Session",
        "#### close()",  # a method of the class
        "### requests.utils.quote(s)",  # older Sphinx: <dl class="function"><dt id>
    ]


def test_a_code_blocks_comments_are_no_headings(tmp_path):
    """A <pre> is fenced as Markdown code (a fence longer than any backtick run in it): its "# install it first"
    line was read as a heading, which then headed every chunk below it."""
    from kbflow.chunk.base import chunk_unit
    from kbflow.records import Source
    from kbflow.sources.web import page_unit

    page = extract(SPHINX_API)
    assert "````\n# install it first\npip install requests\n```\n````" in page.text
    assert "\n\ns.close()\n\n" in page.text  # a block no line of which reads as Markdown is left as it is
    path = tmp_path / "api.html"
    path.write_text(SPHINX_API)
    chunks = chunk_unit(page_unit(Source("s", "web", str(tmp_path)), "api.html", str(path), SPHINX_API.encode()))
    paths = [c.locator.heading_path or "" for c in chunks]
    assert not any("install it first" in p for p in paths)
    assert any(p.endswith("Request Sessions > class requests.Session > close()") for p in paths)


OLD_COVER = """<html><head><title>d10k.htm</title></head><body>
<p align="center"><font size="4"><b>UNITED STATES SECURITIES AND EXCHANGE COMMISSION</b></font></p>
<p align="center"><b>FORM 10-K</b></p>
<table><tr><td>[X]</td><td>ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d)</td></tr></table>
<p align="center">For the fiscal year ended December&nbsp;31, 2018</p>
<p align="center">Commission File No. 000-22513</p>
<p align="center"><b>AMAZON.COM, INC.</b></p>
<p align="center">(Exact name of registrant as specified in its charter)</p>
<p>We employed approximately 647,500 full-time and part-time employees.</p>
</body></html>"""


def test_a_filing_from_before_inline_xbrl_is_titled_by_its_cover_pages_lines():
    assert extract(OLD_COVER).title == "AMAZON.COM, INC. 10-K, fiscal year ended December 31, 2018"
    unnamed = OLD_COVER.replace("<b>AMAZON.COM, INC.</b>", "<img src=logo.png>")  # the name is a logo
    assert extract(unnamed).title == "d10k.htm"
    assert cover_title(["AMAZON.COM, INC. (Exact name of registrant as specified in its charter)"]) == (
        "AMAZON.COM, INC."
    )


def test_a_covers_period_is_read_without_the_registrants_name():
    # Microsoft's 10-Q cover names no "exact name of registrant" line: its period is still read
    cover = ["UNITED STATES", "FORM 10-Q", "For the Quarterly Period Ended September 30, 2023", "MICROSOFT CORPORATION"]
    assert cover_period(cover) == "10-Q, Quarterly Period Ended September 30, 2023"
    assert cover_period(["For the fiscal year ended January 28, 2023"]) == "fiscal year ended January 28, 2023"
    assert cover_period(["Consolidated Statements of Operations", "Year ended December 31, 2023"]) is None


PDOC = """<html><head><style>
.view-source-toggle-state, .view-source-toggle-state ~ .pdoc-code { display: none; }
.view-source-toggle-state:checked ~ .pdoc-code { display: block; }
section > .later ~ .late { display: none; }
</style></head><body><main><h1>requests.utils</h1>
<section id="super_len"><input class="view-source-toggle-state" type="checkbox">
<div class="attr function">def super_len(o) -> int:</div>
<div class="pdoc-code">161def super_len(o):\n162    total_length = None</div>
<div class="docstring"><p>Returns the length of an object.</p></div>
<div class="pdoc-code" style="display:block">shown by its own style</div></section>
<section><div class="pdoc-code">no toggle before it: shown</div>
<span class="later">a</span><p class="late">b</p></section>
</main></body></html>"""


def test_an_element_a_sibling_rule_hides_is_dropped():
    """pdoc hides each function's source behind a "View Source" checkbox (``.toggle ~ .pdoc-code``): a reader
    sees the signature and docstring, and the source only once they tick the box."""
    page = extract(PDOC)
    assert "def super_len(o) -> int:" in page.text and "Returns the length of an object." in page.text
    assert "161def" not in page.text  # hidden until the reader asks for it (a :checked rule is not their choice)
    assert "shown by its own style" in page.text and "no toggle before it: shown" in page.text
    assert "b" in page.text.split("\n\n")  # a rule with another combinator is not evaluated
    dropped = [d for d in json.loads(page.layout())["dropped"] if d["reason"] == "hidden: display:none"]
    assert [d["css_path"] for d in dropped] == [
        "html > body > main > section#super_len:nth-of-type(1) > div:nth-of-type(2)"
    ]
