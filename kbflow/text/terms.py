"""Identifiers as words: ``callHandlers`` is also ``call handlers``, for the keyword leg.

Lance's full-text tokenizer splits text at every character that is not a
letter or a digit, so ``_read_chunked`` and ``Task.cancel`` are already the
words a reader would type (``read``, ``chunked``; ``task``, ``cancel``). It
does not split at case changes: ``callHandlers`` is the single token
``callhandlers``, which a query for "call handlers" never matches. So the
text indexed for BM25 gets, after the chunk, the words of every identifier
with a case change in it (:func:`identifier_words`), and a query gets the
same words of the identifiers it names, at index and query time alike.
"""

from __future__ import annotations

import re

__all__ = [
    "ENGLISH_STOPWORDS",
    "LONE_HALF",
    "escaped_halves",
    "lone_half",
    "for_terminal",
    "identifier_words",
    "query_identifiers",
    "split_identifier",
    "symbol_name",
]

# a run of letters and digits, as Lance's tokenizer cuts words
_WORD = re.compile(r"[^\W_]+")

# the parts of a camelCase / PascalCase / HTTPServer / utf8Decode word
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# a word with a case change in it: a lower-case letter or digit before an upper-case one, or an
# upper-case run before a lower-case letter that does not start the word (HTTPServer, not Server)
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
# a whole word (as _WORD cuts them) with such a change: one scan of a text finds them all, where prose has few
_CAMEL_WORD = re.compile(r"(?<![^\W_])[^\W_]*?(?:[a-z0-9][A-Z]|[A-Z]{2}[a-z])[^\W_]*")

#: English function words (NLTK's list): not worth ranking by in short texts (claims), nor marking in a hit
ENGLISH_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves""".split()
)

#: identifier words added to one text at most (a generated file full of names stays bounded)
MAX_WORDS = 256


def split_identifier(word: str) -> list[str]:
    """The lower-case parts of one identifier with a case change (``makeRecord`` -> ``make``, ``record``);
    an empty list for a word without one."""
    if not _CAMEL.search(word):
        return []
    return [p.lower() for p in _PART.findall(word)]


def identifier_words(text: str) -> str:
    """The parts of every identifier in ``text`` with a case change, each once, in order of first use."""
    seen: dict[str, None] = {}
    if not _CAMEL.search(text):  # no case change anywhere (most prose): no word has one
        return ""
    for match in _CAMEL_WORD.finditer(text):
        for part in split_identifier(match.group()):
            if part not in seen:
                seen[part] = None
                if len(seen) >= MAX_WORDS:
                    return " ".join(seen)
    return " ".join(seen)


# a dotted / scoped name as code writes it: json.dumps, Task.cancel, Lake::open, Kb::Lake#open, _read_chunked()
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::?|#)[A-Za-z_][A-Za-z0-9_]*)*")
#: between a scope and a member: ``.``, ``::`` (C++, Rust, PHP), ``#`` (Ruby), ``:`` (a Lua method)
_SCOPE_SEP = re.compile(r"\.|::?|#")
#: a query of more names than this is read as prose
MAX_QUERY_NAMES = 3


def symbol_name(symbol: str | None) -> str | None:
    """The last part of a qualified symbol (``Retriever.search`` -> ``search``, ``impl Lake::open`` -> ``open``)."""
    if not symbol:
        return None
    return _SCOPE_SEP.split(symbol.split()[-1])[-1] or None


def query_identifiers(query: str) -> list[list[str]]:
    """The names a query made only of code names asks for, each as its parts (``json.dumps`` ->
    ``["json", "dumps"]``); an empty list for a query in prose.

    A query is read as names when it is at most :data:`MAX_QUERY_NAMES` words, each written as code writes
    names (with ``_``, ``.``, ``::``, ``#``, a case change or ``()``), or a single word (``urlsplit``).
    """
    words = query.split()
    if not 1 <= len(words) <= MAX_QUERY_NAMES:
        return []
    out = []
    for word in words:
        name = word.strip("`'\",;:?!").removesuffix("()")
        if not _NAME.fullmatch(name):
            return []
        coded = "_" in name or _SCOPE_SEP.search(name) or _CAMEL.search(name) or word.endswith("()")
        if not coded and len(words) > 1:
            return []
        out.append(_SCOPE_SEP.split(name))
    return out


#: how the keyword index splits text: runs of letters and digits (``\w`` would keep underscores)
TOKEN_PATTERN = r"(?u)[^\W_]+"


#: half of a UTF-16 surrogate pair alone in decoded text: a JSON escape of half a pair (``"\\ud83d"``), or a
#: byte of a file name that is not UTF-8 (Python keeps those as lone halves); no UTF-8 text can hold one
LONE_HALF = re.compile("[\ud800-\udfff]")


def lone_half(text: str) -> str | None:
    """Where ``text`` holds half of a UTF-16 surrogate pair (``"half of a UTF-16 surrogate pair (U+D83D at
    character 5), which is no character"``), or ``None``: what a refused query or claim field says."""
    half = LONE_HALF.search(text)
    if half is None:
        return None
    where = f"U+{ord(half.group()):04X} at character {half.start()}"
    return f"half of a UTF-16 surrogate pair ({where}), which is no character"


def escaped_halves(text: str) -> str:
    """``text`` printable and storable: a file name's bytes that are not UTF-8 as ``\\xe9``, any other lone
    UTF-16 half as the bytes it stands for (``\\xed\\xa0\\xbd``)."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


#: control characters but tab and newline (C0, DEL, C1) and the bidirectional overrides and isolates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: str) -> str:
    """``text`` from the lake made safe to print on a terminal: its control characters and bidirectional
    overrides written as escapes (``\\x1b``, ``\\u202e``). A file's ANSI sequences would otherwise be obeyed by
    the terminal (colours, cursor moves, a cleared screen, the window's title, a write to the clipboard), and
    an override would show code in another order than it runs (Trojan Source)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
