"""Figures as words that say their value: a question's "$1.2 billion" matches a table's "1,187" (in millions)."""

from __future__ import annotations

import pytest

from kbflow.text.figures import MAX_FIGURES, figure_words, query_figure_words


def test_a_table_figure_gives_its_value_at_two_significant_digits_once():
    assert figure_words("Net income 11,588 (1,187) 1,213 0.55").split() == ["n12x3", "n12x2", "n55xm2"]


def test_a_figure_with_a_scale_word_gives_its_value_in_units_too():
    assert figure_words("proceeds of $13.2 billion").split() == ["n13x0", "n13x9"]


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("net income of $11.6 billion", "11,588"),  # a table in millions
        ("capex of 1,200 million", "1,187"),
        ("about $10.4 billion", "10,417,614"),  # a table in thousands
        ("$439.5 million", "439,538"),
        ("$62 billion", "repurchased $62.0 billion"),  # prose that states its scale
        ("about 1.56 million people", "1,556,000"),
        ("$500K", "500,000"),
    ],
)
def test_a_figure_stated_in_another_scale_or_rounding_meets_the_page(query, page):
    assert set(query_figure_words(query).split()) & set(figure_words(page).split())


@pytest.mark.parametrize(
    ("query", "page"),
    [("$1.2 billion", "1,287"), ("$11.6 billion", "11,488"), ("$2.1 billion", "21,064")],
)
def test_other_values_do_not_meet(query, page):
    assert not set(query_figure_words(query).split()) & set(figure_words(page).split())


@pytest.mark.parametrize(
    "text",
    [
        "grew 30.8% in 2019",
        "FY2022",
        "the 10-K and 10-Q",
        "version v1.2.3 of 10.0.0.1",
        "see Note 5",
        "5 m long",
        "growth of 12 percent",
    ],
)
def test_percentages_years_digits_and_numbers_inside_words_are_no_figures(text):
    assert query_figure_words(text) == ""
    assert figure_words(text) == ""


def test_a_question_without_money_figures_adds_nothing():
    assert query_figure_words("What were Apple's net sales in Greater China in 2024?") == ""
    assert query_figure_words("How many of the 3 plans changed?") == ""


def test_a_currency_suffix_is_a_scale_only_after_a_currency_sign():
    assert "n5x6" in query_figure_words("$5M")
    assert query_figure_words("5M") == ""


def test_figure_words_are_bounded():
    text = " ".join(f"{digits}{'0' * zeros}" for digits in range(10, 100) for zeros in range(3, 12))
    assert len(figure_words(text).split()) == MAX_FIGURES


def test_figure_words_are_tokens_the_index_keeps_whole():
    # letters and digits only: Lance's tokenizer cuts at anything else
    for word in figure_words("0.55 (1,187) $13.2 billion 9,996").split():
        assert word.isalnum()


def test_a_text_of_one_figure_repeated_is_read_in_bounded_time():
    assert figure_words("$1.2 billion " * 100_000).split() == ["n12xm1", "n12x8"]
