"""A page's heading: the title lines at its top that say what the page holds.

A financial statement's page is read in pieces: the statement's title, its
units and its periods sit in the first lines ("ADOBE INC." / "CONSOLIDATED
STATEMENTS OF INCOME" / "(In millions, except per share data)" / "Years
Ended"), the row labels and the columns of figures in later chunks that
name none of them. :func:`page_heading` takes those first lines while they
look like a title (short, not a sentence, not a continuation, not figures),
and the page's chunks and tables carry it in their context header
(:mod:`kbflow.chunk.context`), so a chunk of figures is found by the
statement it belongs to. The chunk text and its citation stay the source
text. Pure: text in, heading out.
"""

from __future__ import annotations

import re

__all__ = ["MAX_HEADING_CHARS", "MAX_HEADING_LINES", "page_heading"]

#: at most this many title lines are taken from the top of a page
MAX_HEADING_LINES = 4
#: and the heading is cut to this many characters
MAX_HEADING_CHARS = 160
#: a title line has at most this many characters and words
MAX_LINE_CHARS = 90
MAX_LINE_WORDS = 12

_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def _is_title(line: str) -> bool:
    """Whether a stripped, non-blank line reads as a title: short, starting with a capital, a digit, ``(`` or
    ``$``, ending without ``,``, ``;`` or ``:``, mostly letters, and not a sentence (a period after more than
    four words)."""
    words = line.split()
    if len(line) > MAX_LINE_CHARS or len(words) > MAX_LINE_WORDS or not _LETTER.search(line):
        return False
    first = line[0]
    if not (first.isupper() or first.isdigit() or first in "($"):
        return False
    if line[-1] in ",;:" or (line[-1] == "." and len(words) > 4):
        return False
    letters, digits = len(_LETTER.findall(line)), len(_DIGIT.findall(line))
    return digits <= letters


def page_heading(text: str) -> str | None:
    """The title lines at the top of a page's ``text``, joined by spaces (``None`` where the page starts with
    prose, a continued sentence or figures).

    Leading lines without a letter (a page number, a rule) are skipped; then
    title lines are taken up to :data:`MAX_HEADING_LINES`, stopping at the
    first line that is not one.
    """
    taken: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not taken and not _LETTER.search(line):
            continue
        if not _is_title(line):
            break
        taken.append(line)
        if len(taken) == MAX_HEADING_LINES:
            break
    if not taken:
        return None
    heading = " ".join(taken)
    return heading if len(heading) <= MAX_HEADING_CHARS else heading[: MAX_HEADING_CHARS - 1].rstrip() + "…"
