"""Query expansion from a glossary (kbflow.retrieve.glossary): matching, user files, settings, and a search over a
lake."""

from __future__ import annotations

import json
import os

import pytest

from kbflow import Retriever, pipeline
from kbflow.config import RetrievalSettings, Settings
from kbflow.errors import ConfigError, QueryError
from kbflow.evaluate.configs import config_for
from kbflow.lake import Lake
from kbflow.records import Source
from kbflow.retrieve.glossary import expanded_query, load_glossary, parse_glossary


def test_a_term_adds_the_words_it_stands_for_and_other_queries_stay_as_written():
    text, added = expanded_query("Is the operating margin of ACME improving?", "finance")
    assert added == "operating income total revenue statements of operations"
    assert text == f"Is the operating margin of ACME improving? {added}"
    assert expanded_query("How do wings behave in a slipstream?", "finance") == (
        "How do wings behave in a slipstream?",
        "",
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Is CVS a capital-intensive business?", "capital expenditures"),  # a hyphen reads as a space
        ("capital  intensive", "capital expenditures"),
        ("worst topline performance", "revenue net sales"),
        ("Did Pfizer grow its PP&E?", "property plant and equipment"),
        ("What was the diluted EPS?", "earnings per share"),
        ("EBITDA by region", "depreciation and amortization"),
        ("the statement of financial position", "consolidated balance sheets"),  # IFRS's name
        ("from the consolidated statements of income", "statements of operations"),  # its other name
        ("FY2021 cash conversion cycle", "inventories accounts receivable accounts payable"),
    ],
)
def test_terms_match_as_whole_words_ignoring_case(query, expected):
    assert expected in expanded_query(query, "finance")[1]


@pytest.mark.parametrize(
    "query", ["the next steps", "rebitda", "a netmargin", "ebitdas", "eps1", "set eps for layer norm", "the top line"]
)
def test_a_term_inside_a_longer_word_is_not_matched(query):
    assert expanded_query(query, "finance")[1] == ""


def test_ebitda_does_not_also_read_as_ebit():
    added = expanded_query("EBITDA", "finance")[1]
    assert added == "operating income depreciation and amortization"  # the EBIT entry would add "operating income"


def test_each_expansion_is_added_once():
    added = expanded_query("cash flow statement and statement of cash flows", "finance")[1]
    assert added == "consolidated statements of cash flows"


@pytest.mark.parametrize("off", [None, "none", "None", ""])
def test_none_turns_expansion_off(off):
    assert load_glossary(off) is None
    assert expanded_query("operating margin", off) == ("operating margin", "")


def test_a_users_glossary_file_with_comments_and_its_changes(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text(
        "# churn and friends\nchurn|attrition\tcustomers lost  cancellations\n\n"
        "  # ARR:\nARR\tsubscription revenue\nC#\tdotnet\n"
    )
    added = expanded_query("What is the churn and ARR?", str(path))[1]
    assert added == "customers lost cancellations subscription revenue"
    assert expanded_query("a C# service", str(path))[1] == "dotnet"  # '#' inside a term is the term's
    path.write_text("churn\tcustomers lost\n")
    os.utime(path, (1, 1))  # a new version of the file, even within the clock's resolution
    assert expanded_query("What is the churn and ARR?", str(path))[1] == "customers lost"


def test_a_bad_glossary_names_the_file_line_and_reason(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("churn\tcustomers lost\nARR subscription revenue\n")
    with pytest.raises(ConfigError, match=r"bad\.tsv:2: expected 'terms<TAB>expansion'"):
        load_glossary(str(path))
    with pytest.raises(ConfigError, match=r":1: expected"):
        parse_glossary("|\tsomething\n", "x")
    with pytest.raises(ConfigError, match="neither a built-in glossary"):
        load_glossary(str(tmp_path / "missing.tsv"))
    with pytest.raises(ConfigError, match="glossary must be"):
        load_glossary(3)  # type: ignore[arg-type]


def test_the_glossary_is_a_checked_retrieval_setting_and_a_sweep_key(tmp_path, statements):
    assert RetrievalSettings().glossary == "finance"
    with pytest.raises(ConfigError, match="built-in name, a file path"):
        RetrievalSettings(glossary=" ")
    # the file or name is read where it is used: a retriever opening with it, a search naming it
    bad = statements.settings.to_dict() | {"retrieval": {"glossary": "medicine"}}
    with pytest.raises(ConfigError, match="neither a built-in glossary"):
        Retriever.open(statements.lake, settings=bad)
    with pytest.raises(QueryError, match="neither a built-in glossary"):
        statements.search("capex", glossary="medicine")
    path = tmp_path / "g.tsv"
    path.write_text("churn\tcustomers lost\n")
    settings = Settings.from_dict({"lake": str(tmp_path / "lake"), "retrieval": {"glossary": str(path)}})
    assert settings.retrieval.glossary == str(path)
    assert config_for(Settings.coerce(None, lake=str(tmp_path / "l")), glossary="none")["glossary"] == "none"


@pytest.fixture
def statements(tmp_path, fast_settings):
    """A lake of three records: a cash flow line item, a note that only names the term, and prose."""
    records = [
        {"_id": "cf", "title": "Cash flows", "text": "Purchases of property and equipment were 512 in fiscal 2022."},
        {"_id": "note", "title": "Glossary", "text": "Capex is what analysts call it, a word used in many reports."},
        {"_id": "prose", "title": "Stores", "text": "The company opened twelve stores in the northern region."},
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records))
    lake = Lake(fast_settings.lake)
    lake.register(Source("filing", "jsonl", str(corpus)))
    pipeline.ingest(lake, fast_settings)
    return Retriever.open(lake, settings=fast_settings)


def _records(hits) -> list[str]:
    return [h.citation.locator.record_id for h in hits]


def test_a_query_naming_a_term_finds_the_line_item_and_says_what_was_added(statements):
    off = statements.search("capex", k=3, mode="bm25", glossary="none")
    assert _records(off)[0] == "note" and off.expansion == ""  # only the word itself matches
    on = statements.search("capex", k=3, mode="bm25")
    assert _records(on)[0] == "cf"
    assert on.expansion.startswith("capital expenditures purchases of property and equipment")
    plain = statements.search("twelve stores", k=3, mode="bm25")
    assert plain.expansion == "" and _records(plain)[0] == "prose"
    # the dense leg embeds the expanded query too
    assert _records(statements.search("capex", k=3, mode="dense", glossary="none"))[0] != "cf"
    assert _records(statements.search("capex", k=3, mode="dense"))[0] == "cf"


def test_search_many_embeds_the_expanded_query_as_search_does(statements):
    queries = ["capex in fiscal 2022", "twelve stores"]
    for one, many in zip([statements.search(q, k=3) for q in queries], statements.search_many(queries, k=3)):
        assert [h.chunk_id for h in one] == [h.chunk_id for h in many]
        assert [h.score for h in one] == pytest.approx([h.score for h in many])
        assert one.expansion == many.expansion


def test_a_bad_glossary_option_is_a_query_error(statements):
    with pytest.raises(QueryError, match="neither a built-in glossary"):
        statements.search("capex", glossary="nope")
