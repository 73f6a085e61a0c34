"""A ``<pre>`` block's text as the page shows it, fenced as Markdown code where a line of it would read as
Markdown structure.

A code block's lines are its lines whatever elements hold them (the reader
joins a highlighter's line elements, Prism's ``<div class="token-line">``, as
lines). The document chunker reads the page's text as Markdown, so a shell or
Python comment in a block (``# install it first``) was a heading, and headed
every chunk below it: such blocks are fenced, with a fence longer than any run
of backticks in them.
"""

from __future__ import annotations

import re

__all__ = ["code_block"]

_BACKTICKS = re.compile(r"`+")
#: a line Markdown reads as structure: an ATX heading, a setext underline, a code fence
_STRUCTURE = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$|```|~~~)", re.MULTILINE)


def code_block(text: str) -> str:
    """A ``pre`` block's text; fenced as Markdown code (a fence longer than any run of backticks in it) where a
    line of it would read as Markdown structure, so the document chunker reads those lines as code: a shell or
    Python comment (``# install it first``) was a heading, and headed every chunk below it.

    Only those blocks: fencing every block cost the Rust Reference's questions 0.021 nDCG@10 and the Cargo
    book's 0.020 (``kbflow eval bench/sites/reference``), fencing these alone nothing and 0.008.
    """
    code = text.strip("\n")
    if not code.strip() or not _STRUCTURE.search(code):
        return code
    fence = "`" * max(3, max((len(run) for run in _BACKTICKS.findall(code)), default=0) + 1)
    return f"{fence}\n{code}\n{fence}"
