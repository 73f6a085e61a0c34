"""Names a question gives that the documents a search finds never mention (kbflow.retrieve.unnamed)."""

from __future__ import annotations

from kbflow.retrieve.unnamed import MAX_NAMES, proper_names, unknown_names


def test_a_possessive_or_a_capitalized_word_inside_the_sentence_is_a_name():
    assert proper_names("What were Tesla's automotive revenues in Q2 2023?") == ["Tesla"]
    assert proper_names("What was AMD’s data center revenue?") == ["AMD"]  # a possessive acronym, curly apostrophe
    assert proper_names("When did Broadcom complete its acquisition of VMware?") == ["Broadcom", "VMware"]
    assert proper_names("How much did Coca-Cola pay in dividends?") == ["Coca-Cola"]


def test_capitalized_words_in_a_row_are_one_name():
    assert proper_names("What was American Express's net interest income?") == ["American Express"]
    assert proper_names("What is Home Depot's return on assets?") == ["Home Depot"]
    assert proper_names("What was AMD's Data Center revenue?") == ["AMD", "Data Center"]  # a possessive ends one
    assert proper_names("Does Adobe have an improving margin?") == ["Adobe"]  # without the sentence's first word


def test_periods_acronyms_and_a_sentences_first_word_are_not_names():
    assert proper_names("What is the FY2017 DPO? DPO is defined as 365 times payables over COGS.") == []
    assert proper_names("How much in USD did it spend in Q3?") == []
    assert proper_names("Install the pump. Then run it.") == []  # each sentence's first word
    assert proper_names("install the pump") == []
    assert proper_names("Here's the question: what's the margin? Let's see") == []  # "'s" as "is" or "us"


def test_a_possessive_with_digits_is_a_name_unless_it_is_a_period():
    assert proper_names("What was 3M's total debt at the end of FY2018?") == ["3M"]
    assert proper_names("3M's revenue and 7-Eleven's stores") == ["3M", "7-Eleven"]  # a possessive may open a sentence
    assert proper_names("What was FY2018's revenue? How did 2019's sales and Q3's margin compare?") == []
    assert proper_names("What did 3M report in 2019?") == []  # without a possessive, a word with digits is no name


def test_each_name_is_checked_once_and_only_a_few_are():
    assert proper_names("Apple's and Apple's sales") == ["Apple"]
    many = " ".join(f"and Name{chr(97 + i)}x" for i in range(10))
    assert len(proper_names(f"compare {many}")) == MAX_NAMES


def test_a_word_written_as_code_is_no_name():
    """An identifier with an underscore, or called, is code: an answer may explain the call without spelling it."""
    assert proper_names("How do I catch the output from PyErr_Print() (or anything that prints to stderr)?") == []
    assert proper_names("When must I call Py_DECREF on a result?") == []
    assert proper_names("Why does Widget() fail in Flask's app?") == ["Flask"]
    assert proper_names("Does Node.js read it?") == ["Node.js"]  # a dot alone is no code


def test_function_words_alone_are_no_name_since_the_keyword_index_drops_them():
    """Rust's ``From`` and ``Into`` traits: capitalized, but the index keeps neither word, so no document could
    be found to write them; a name with a function word inside it stays one."""
    assert proper_names("how do I convert between my own types with From and Into") == []
    assert proper_names("what did Bank Of America report") == ["Bank Of America"]
    assert proper_names("when did The Walt Disney Company report") == ["The Walt Disney Company"]


def test_unknown_names_are_those_the_lake_holds_no_word_of():
    chunks = [{"nvidia", "intel", "vmware"}, {"american", "airlines"}, {"express", "delivery"}]

    def holds(name: str) -> bool:  # one chunk holds every word
        return any(set(name.lower().replace("-", " ").split()) <= chunk for chunk in chunks)

    assert unknown_names("When did Broadcom complete its acquisition of VMware?", holds) == ("Broadcom",)
    assert unknown_names("What was American Express's revenue?", holds) == ("American Express",)
    assert unknown_names("What was NVIDIA's revenue?", holds) == ()
    assert unknown_names("what was the revenue", holds) == ()
