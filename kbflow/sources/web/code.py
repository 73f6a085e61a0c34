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
from typing import Any

__all__ = ["LINE_NUMBERS", "code_block", "is_code_block", "line_numbers"]

#: the classes of a code block's line numbers: Pygments' (Sphinx, MkDocs) ``linenos`` and ``linenodiv``,
#: Doxygen's ``lineno``, Chroma's (Hugo) ``ln`` and ``lnt``; gutters, no words of the code
LINE_NUMBERS = frozenset({"linenos", "linenodiv", "lineno", "ln", "lnt"})
_NUMBERS = re.compile(r"[\d\s]*")

_BACKTICKS = re.compile(r"`+")
#: a line Markdown reads as structure: an ATX heading, a setext underline, a code fence
_STRUCTURE = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$|```|~~~)", re.MULTILINE)


def is_code_block(node: Any) -> bool:
    """Whether the element ``node`` is a code block: a ``<pre>``, or Doxygen's ``<div class="fragment">`` of
    ``<div class="line">`` lines (monospaced and kept as written by its stylesheet)."""
    if node.tag == "pre":
        return True
    return (
        node.tag == "div"
        and "fragment" in node.attrs.get("class", "").split()
        and any(not isinstance(c, str) and "line" in c.attrs.get("class", "").split() for c in node.children)
    )


def line_numbers(node: Any) -> bool:
    """Whether ``node``'s text is only digits and whitespace (a gutter of line numbers, not a word of code)."""
    return all(_NUMBERS.fullmatch(c) if isinstance(c, str) else line_numbers(c) for c in node.children)


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
