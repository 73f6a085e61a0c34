"""Names a question gives that the documents it finds never mention: a sure sign of "no good match".

The flag reads a search's best cosine off a curve, and a near miss defeats
it: a question about a company or a library the lake does not hold, asked in
the lake's own vocabulary ("What was Tesla's automotive revenue in Q2
2023?" over NVIDIA's and Intel's quarterly reports; "How does Django's ORM
cache a query?" over Flask's code) finds pages that match every other word,
and their cosines are those of a right answer. But its subject is a name,
and the pages it finds never write that name. :func:`proper_names` reads the names a
question gives: a capitalized word with its possessive (``Tesla's``,
``AMD's``; not ``Here's``), or a capitalized word inside the sentence that is not all
capitals (``Broadcom`` in "When did Broadcom complete ..."; an acronym such
as ``USD`` or ``EBIT`` may be a term the question defines, and the first
word of a sentence is capitalized anyway). Words with digits (``FY2022``,
``Q3``) are periods, not names, but for a possessive that is not a period
(``3M's``). Capitalized words in a row are one name
(``Home Depot``, ``American Express``: each word is common, the two
together are not). A word written as code (``PyErr_Print()``,
``Py_DECREF``) is no name either: the answer to "How do I catch the output
from PyErr_Print()?" explains the call and never writes it. A run of
function words alone is no name: Rust's traits ``From`` and ``Into`` are
words the keyword index drops, so no document could be found to write
them. :func:`unknown_names` keeps those that no chunk of what
the search's first three hits stand for holds every word of (in its keyword
index's text or names field): their documents, and for a file of code its
whole repository, whose README names what the code serves. A name the lake
writes only elsewhere counts as unknown too: over six companies' filings,
"What was Walmart's capital expenditure?" finds CVS Health's 10-K naming
Walmart as a competitor, but its best pages are Block's and Best Buy's,
which never write the name. The search is flagged with them
(:class:`kbflow.records.FlagReason`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kbflow.text.terms import ENGLISH_STOPWORDS

__all__ = ["NAME_HITS", "proper_names", "unknown_names"]

#: a word (letters, with inner hyphens, ampersands, dots or apostrophes: ``Coca-Cola``, ``AT&T``; from a digit
#: too: ``3M``) and its possessive ending, if any
_WORD = re.compile(r"[^\W_](?:[\w&.-]*[^\W_])?(?P<poss>['’]s\b)?")
#: a period or a number, never a name, even in a possessive (``FY2022's``, ``Q3's``, ``2019's``)
_PERIOD = re.compile(r"(?:FY|CY|Q|H)\d{1,4}|\d+(?:s|th|st|nd|rd)?", re.IGNORECASE)
#: what ends a sentence before a word
_SENTENCE_END = re.compile(r"(?:^|[.?!:;]\s*)$")
#: words whose "'s" is "is" or "us" (``Here's the question``, ``Let's``), not a possessive
_CONTRACTED = frozenset(
    "here there what that it let who where how when why which this he she today everyone everything nothing "
    "something someone nobody".split()
)
#: at most this many names are checked per question
MAX_NAMES = 4
#: a name counts where the documents of a search's first this many hits write it
NAME_HITS = 3


def _code(question: str, found: re.Match[str]) -> bool:
    """Whether a word is written as code: with an underscore or called (``PyErr_Print()``). A question gives such
    a name where the answer explains the call without spelling it, so it says nothing of the question's
    subject."""
    return "_" in found.group(0) or question.startswith("(", found.end())


def _qualifies(word: str, possessive: bool, initial: bool) -> bool:
    """Whether a capitalized word (its possessive taken off) is a name: a possessive, or a word inside the
    sentence that is not all capitals."""
    return possessive or (not initial and any(c.islower() for c in word))


def proper_names(question: str) -> list[str]:
    """The names ``question`` gives, each once, in order (see the module's docs); capitalized words in a row
    are one name (``Home Depot``, ``American Express``)."""
    out: list[str] = []
    run: list[str] = []
    named, end = False, -1

    def close() -> None:
        name = " ".join(run)
        # ``From``, ``Into``: function words, nearly all of which the keyword index drops, so none could be found
        function_words = all(w.lower() in ENGLISH_STOPWORDS for w in run)
        if run and named and not function_words and name not in out:
            out.append(name)

    for found in _WORD.finditer(question):
        word, poss = found.group(0), found.group("poss")
        if poss:
            word = word[: -len(poss)]
        if any(c.isdigit() for c in word):  # a period (``FY2022``); a name only as a possessive (``3M's``)
            capital = bool(poss) and any(c.isupper() for c in word) and not _PERIOD.fullmatch(word)
        else:
            capital = len(word) >= 2 and word[0].isupper() and not _code(question, found)
        if poss and word.lower() in _CONTRACTED:
            capital = False
        initial = _SENTENCE_END.search(question[: found.start()]) is not None
        joined = run and question[end : found.start()] == " "
        if not capital or (initial and not poss):
            close()
            run, named = [], False
            end = found.end()
            continue
        if not joined:
            close()
            run, named = [], False
        run.append(word)
        named = named or _qualifies(word, bool(poss), initial)
        end = found.end()
        if poss:  # a possessive ends a name
            close()
            run, named = [], False
    close()
    return out[:MAX_NAMES]


def unknown_names(question: str, holds: Callable[[str], bool]) -> tuple[str, ...]:
    """The names ``question`` gives that ``holds(name)`` says are not written where it looks (one chunk with
    every word of the name: in the documents of a search's first hits, or anywhere in the lake)."""
    return tuple(name for name in proper_names(question) if not holds(name))
