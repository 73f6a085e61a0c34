"""Valid time read from words (kbflow.claims.periods) and facts read from claims (kbflow.claims.facts)."""

from __future__ import annotations

from datetime import date

import pytest

from kbflow.claims.facts import attribute_key, quantity, read_fact, same_value, subject_key
from kbflow.claims.periods import check_valid, holds_at, overlaps, parse_date, period_in, period_of
from kbflow.errors import ClaimError


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("revenue for the fiscal year ended December 31, 2022", date(2022, 1, 1), date(2022, 12, 31)),
        ("net sales for the year ended June 30, 2023", date(2022, 7, 1), date(2023, 6, 30)),
        ("three months ended March 31, 2023", date(2023, 1, 1), date(2023, 3, 31)),
        ("nine months ended September 30, 2022", date(2022, 1, 1), date(2022, 9, 30)),
        ("as of Q3 2023", date(2023, 7, 1), date(2023, 9, 30)),
        ("in the third quarter of 2021", date(2021, 7, 1), date(2021, 9, 30)),
        ("2020 Q4 bookings", date(2020, 10, 1), date(2020, 12, 31)),
        ("FY2022 revenue", date(2022, 1, 1), date(2022, 12, 31)),
        ("fiscal 2019", date(2019, 1, 1), date(2019, 12, 31)),
        ("as of September 30, 2023", date(2023, 9, 30), date(2023, 9, 30)),
        ("at 31 December 2021", date(2021, 12, 31), date(2021, 12, 31)),
    ],
)
def test_periods_are_read_as_analysts_write_them(text, start, end):
    assert period_in(text) == (start, end)


def test_a_year_ended_is_not_also_read_as_its_calendar_year():
    # "year ended June 30, 2023" names one period, not that and 2023
    assert period_in("for the year ended June 30, 2023", only=True) == (date(2022, 7, 1), date(2023, 6, 30))


def test_evidence_naming_two_periods_gives_no_valid_time_but_the_claims_text_wins():
    two = "Revenue was $1.2 billion in 2022 and $1.0 billion in 2021."
    assert period_of("Acme's revenue was $1.2 billion", [two]) is None
    assert period_of("Acme's revenue was $1.2 billion in FY2022", [two]) == (
        (date(2022, 1, 1), date(2022, 12, 31)),
        "text",
    )
    assert period_of("Acme's revenue", ["as of Q1 2024 ..."])[1] == "evidence"
    assert period_of("no time here", ["none here either"]) is None


def test_dates_given_are_parsed_or_refused_clearly():
    assert parse_date("2022-12-31") == date(2022, 12, 31)
    assert parse_date("2022-12") == date(2022, 12, 1)
    assert parse_date("2022") == date(2022, 1, 1)
    assert parse_date("December 31, 2022") == date(2022, 12, 31)
    with pytest.raises(ClaimError, match="cannot read 'last Tuesday' as a date"):
        parse_date("last Tuesday", "valid_from")
    with pytest.raises(ClaimError, match="valid_to 2021-01-01 is before valid_from 2022-01-01"):
        check_valid("2022-01-01", "2021-01-01")
    assert check_valid(None, "2022") == (None, date(2022, 1, 1))


def test_open_ends_hold_and_overlap():
    year = (date(2022, 1, 1), date(2022, 12, 31))
    assert holds_at(year, date(2022, 6, 1)) and not holds_at(year, date(2023, 1, 1))
    assert holds_at((None, None), date(1990, 1, 1))
    assert overlaps(year, (date(2023, 1, 1), None)) is None
    assert overlaps(year, (None, date(2022, 3, 31))) == (date(2022, 1, 1), date(2022, 3, 31))


@pytest.mark.parametrize(
    ("text", "subject", "attribute", "value"),
    [
        ("Acme's revenue was $1.2 billion in FY2022", "acme", "revenue", "$1.2 billion"),
        ("The revenue of Acme Corp for 2022 was 1,200 million", "acme", "revenue", "1,200 million"),
        ("Acme Inc. reported net sales of $1.2 billion for fiscal 2022", "acme", "revenue", "$1.2 billion"),
        ("Acme had 12,000 employees at December 31, 2022", "acme", "employees", "12,000"),
        ("Revenue (Acme, FY2022): $1.2 billion", "acme", "revenue", "$1.2 billion"),
        ("Acme's CEO is Jane Doe as of 2023", "acme", "chief executive officer", "Jane Doe"),
        (
            "Acme Corporation's total revenues were USD 1,213 million for the year ended December 31, 2022, up 8%",
            "acme",
            "revenue",
            "USD 1,213 million",
        ),
    ],
)
def test_facts_are_read_from_the_forms_claims_take(text, subject, attribute, value):
    fact = read_fact(text)
    assert fact is not None and fact.key == (subject, attribute) and fact.value == value


def test_a_claim_that_only_mentions_an_entity_states_no_fact():
    assert read_fact("Acme opened an office in Berlin in 2022") is None


def test_numbers_compare_after_scale_unit_and_rounding():
    assert same_value("$1.2 billion", "1,200 million")
    assert same_value("$1.2 billion", "$1,213 million")  # the same figure at the first's rounding
    assert same_value("$1.2 billion", "$1.5 billion") is False
    assert same_value("(1,200)", "-1,200")
    assert same_value("12%", "$12 million") is None  # two units: not compared
    assert same_value("Jane Doe", "jane doe") and same_value("Jane Doe", "John Roe") is False
    assert quantity("($45.2) million").value == pytest.approx(-45.2e6)
    assert quantity("1.2bn").value == pytest.approx(1.2e9)
    assert quantity("$3 and $4") is None


def test_names_are_compared_normalized():
    assert subject_key("The Acme Corporation") == subject_key("Acme Corp.") == "acme"
    assert attribute_key("Total Revenues") == attribute_key("net sales") == "revenue"
    assert attribute_key("operating expenses") == "operating expense"
