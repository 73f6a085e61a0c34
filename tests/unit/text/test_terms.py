import pytest

from kbflow.text.terms import identifier_words, query_identifiers, split_identifier, symbol_name


@pytest.mark.parametrize(
    "word, parts",
    [
        ("makeRecord", ["make", "record"]),
        ("HTTPServer", ["http", "server"]),
        ("JSONEncoder", ["json", "encoder"]),
        ("getLevelNamesMapping", ["get", "level", "names", "mapping"]),
        ("utf8Decode", ["utf", "8", "decode"]),
        ("Server", []),  # no case change: Lance's tokenizer already has it as one word
        ("HTML", []),
        ("read_chunked", []),  # Lance splits at "_" itself
    ],
)
def test_split_identifier(word, parts):
    assert split_identifier(word) == parts


def test_identifier_words_once_each_in_order():
    assert identifier_words("r = LogRecord(x); self.callHandlers(r); makeRecord(LogRecord)") == (
        "log record call handlers make"
    )
    assert identifier_words("plain prose, nothing to split") == ""


def _words_one_by_one(text: str) -> str:
    """identifier_words as first written: every word of the text, split where it has a case change."""
    import re

    seen: dict[str, None] = {}
    for word in re.findall(r"[^\W_]+", text):
        seen.update(dict.fromkeys(split_identifier(word)))
    return " ".join(list(seen)[:256])


def test_identifier_words_finds_the_words_a_word_by_word_scan_finds():
    import random

    rng = random.Random(7)
    alphabet = "aZbY9_ .(\n-ÄéÉßǅ" + "xyzXYZ019"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(2_000)]
    texts += ["aB" * 400, "x" * 5_000 + "Y", "__init__ _x_Y a_bC getURL2Path ABC DEF"]
    for text in texts:
        assert identifier_words(text) == _words_one_by_one(text), text


@pytest.mark.parametrize(
    "query, names",
    [
        ("makeRecord", [["makeRecord"]]),
        ("urlsplit", [["urlsplit"]]),  # one word: may name a symbol
        ("json.dumps()", [["json", "dumps"]]),
        ("Sniffer.has_header", [["Sniffer", "has_header"]]),
        ("Lake::open", [["Lake", "open"]]),
        ("Lake:table", [["Lake", "table"]]),  # a Lua method
        ("`_read_chunked` Task.cancel", [["_read_chunked"], ["Task", "cancel"]]),
        ("how does the rotating file handler roll over", []),
        ("the LogRecord", []),  # prose around a name: a question, not a lookup
        ("as_completed wait", []),
        ("a b c d", []),
    ],
)
def test_query_identifiers(query, names):
    assert query_identifiers(query) == names


def test_symbol_name_is_the_last_part():
    assert symbol_name("Retriever.search") == "search"
    assert symbol_name("impl Lake::open") == "open"
    assert symbol_name("Kb::Lake#open") == "open"
    assert symbol_name("Lake:table") == "table"
    assert symbol_name(None) is None
