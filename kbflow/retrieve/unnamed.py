"""Names a question gives that the lake never mentions: a sure sign of "no good match".

The flag reads a search's best cosine off a curve, and a near miss defeats
it: a question about a company or a library the lake does not hold, asked in
the lake's own vocabulary ("What was Tesla's automotive revenue in Q2
2023?" over NVIDIA's and Intel's quarterly reports; "How does Django's ORM
cache a query?" over Flask's code) finds pages that match every other word,
and their cosines are those of a right answer. But its subject is a name,
and the lake never writes that name. :func:`proper_names` reads the names a
question gives: a capitalized word with its possessive (``Tesla's``,
``AMD's``; not ``Here's``), or a capitalized word inside the sentence that is not all
capitals (``Broadcom`` in "When did Broadcom complete ..."; an acronym such
as ``USD`` or ``EBIT`` may be a term the question defines, and the first
word of a sentence is capitalized anyway). Words with digits (``FY2022``,
``Q3``) are periods, not names. :func:`unknown_names` keeps those of which
no word is in the lake's keyword index (its text and its names field), and
the search is flagged with them (:class:`kbflow.records.FlagReason`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["proper_names", "unknown_names"]

#: a word (letters, with inner hyphens, ampersands, dots or apostrophes: ``Coca-Cola``, ``AT&T``) and its
#: possessive ending, if any
_WORD = re.compile(r"[^\W\d_](?:[\w&.-]*[^\W_])?(?P<poss>['’]s\b)?")
#: what ends a sentence before a word
_SENTENCE_END = re.compile(r"(?:^|[.?!:;]\s*)$")
#: words whose "'s" is "is" or "us" (``Here's the question``, ``Let's``), not a possessive
_CONTRACTED = frozenset(
    "here there what that it let who where how when why which this he she today everyone everything nothing "
    "something someone nobody".split()
)
#: at most this many names are checked per question
MAX_NAMES = 4


def proper_names(question: str) -> list[str]:
    """The names ``question`` gives, each once, in order (see the module's docs)."""
    out: list[str] = []
    for found in _WORD.finditer(question):
        word = found.group(0)
        if found.group("poss"):
            word = word[: -len(found.group("poss"))]
            if word.lower() in _CONTRACTED:
                continue
        if len(word) < 2 or not word[0].isupper() or any(c.isdigit() for c in word):
            continue
        possessive = bool(found.group("poss"))
        initial = _SENTENCE_END.search(question[: found.start()]) is not None
        if possessive or (not initial and any(c.islower() for c in word)):
            if word not in out:
                out.append(word)
    return out[:MAX_NAMES]


def unknown_names(question: str, holds: Callable[[str], bool]) -> tuple[str, ...]:
    """The names ``question`` gives of which the lake holds no word (``holds(name)``: whether the keyword index
    has any of its words)."""
    return tuple(name for name in proper_names(question) if not holds(name))
