"""The headings of reStructuredText and AsciiDoc, for the document chunker's sections.

Markdown's headings are read by :func:`kbflow.chunk.document.parse_blocks`;
these two syntaxes write theirs otherwise, and before, their files were read
as plain paragraphs: no section boundaries, no heading paths.

- **reStructuredText**: a one-line title under-, or over- and underlined by
  one punctuation character repeated (``Install``/``=======``), at the start
  of the line. As docutils does, levels follow the order in which each style
  (character, with or without an overline) first appears. A line of
  punctuation alone is a transition, and indented text (a literal block, a
  directive's body) holds no title.
- **AsciiDoc**: ``= Title`` (the document's), ``== Section`` to ``======``,
  and Markdown's ``#`` form that Asciidoctor also accepts. Lines inside
  delimited blocks (listing ``----``, literal ``....``, comment ``////``,
  passthrough ``++++``, fenced code) are never titles; those blocks are
  kept whole as code (cut at line ends).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Block", "SYNTAXES", "lines", "markup_blocks"]

#: the languages whose headings this module reads
SYNTAXES = frozenset({"rst", "asciidoc"})

_RST_RULE = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*")
_ADOC_HEADING = re.compile(r"(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?[ \t]*")
_ADOC_COMMENT = re.compile(r"//(?!//)")
_ADOC_DELIMITER = re.compile(r"(-{4,}|\.{4,}|/{4,}|\+{4,}|`{3,})[ \t]*")


@dataclass
class Block:
    """A heading, a paragraph or a block kept as code (``fence``), by its char span."""

    start: int
    end: int
    kind: str  # heading | para | fence
    level: int = 0
    title: str = ""


def lines(text: str, offset: int = 0) -> Iterator[tuple[int, int, str]]:
    """``(start, end-without-newline, line)`` for every line (positions ``offset`` on, for a slice of a text)."""
    pos = offset
    for line in text.split("\n"):
        yield pos, pos + len(line), line
        pos += len(line) + 1


class _Paragraphs:
    """Blocks as lines come: paragraphs split at blank lines, headings and fences put between them."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.para: Block | None = None

    def close(self) -> None:
        if self.para is not None:
            self.blocks.append(self.para)
            self.para = None

    def line(self, start: int, end: int, line: str) -> None:
        if not line.strip():
            self.close()
        elif self.para is None:
            self.para = Block(start, end, "para")
        else:
            self.para.end = end

    def add(self, block: Block) -> None:
        self.close()
        self.blocks.append(block)


def _rst_title(rows: list[tuple[int, int, str]], i: int) -> tuple[int, int, str, str] | None:
    """The title at ``rows[i]`` as ``(first row, last row, style, title)``, or ``None``."""
    title = rows[i][2]
    if not title.strip() or title[0] in " \t" or _RST_RULE.fullmatch(title):
        return None
    under = rows[i + 1][2] if i + 1 < len(rows) else ""
    if not _RST_RULE.fullmatch(under) or len(under.rstrip()) < min(len(title.rstrip()), 4):
        return None
    over = rows[i - 1][2] if i > 0 else ""
    if over.rstrip() == under.rstrip() and (i < 2 or not rows[i - 2][2].strip()):
        return i - 1, i + 1, "over" + under[0], title.strip()
    if i > 0 and over.strip():  # the last line of a paragraph: not a title
        return None
    return i, i + 1, under[0], title.strip()


def rst_blocks(text: str) -> list[Block]:
    """reStructuredText as headings and paragraphs (see the module's docstring)."""
    rows = list(lines(text))
    styles: list[str] = []
    out = _Paragraphs()
    i = 0
    while i < len(rows):
        found = _rst_title(rows, i)
        if found is None:
            out.line(*rows[i])
            i += 1
            continue
        first, last, style, title = found
        if first < i and out.para is not None and out.para.start == rows[first][0]:
            out.para = None  # the overline was taken for a paragraph's first line
        if style not in styles:
            styles.append(style)
        out.add(Block(rows[first][0], rows[last][1], "heading", styles.index(style) + 1, title))
        i = last + 1
    out.close()
    return out.blocks


def asciidoc_blocks(text: str) -> list[Block]:
    """AsciiDoc as headings, paragraphs and delimited blocks (see the module's docstring)."""
    out = _Paragraphs()
    fence: Block | None = None
    mark = ""
    attributes_only = False  # the paragraph so far is block attributes, anchors (``[[install]]``), comments
    for start, end, line in lines(text):
        if fence is not None:
            fence.end = end
            if line.rstrip() == mark:
                out.add(fence)
                fence = None
            continue
        delimiter = _ADOC_DELIMITER.fullmatch(line)
        heading = _ADOC_HEADING.fullmatch(line)
        if delimiter:
            out.close()
            fence, mark = Block(start, end, "fence"), delimiter.group(1)
        elif heading and (out.para is None or attributes_only):
            first = out.para.start if out.para is not None else start  # the title's attributes open its section
            out.para = None
            out.add(Block(first, end, "heading", len(heading.group(1)), heading.group(2).strip()))
        else:
            attribute = line.startswith("[") and line.rstrip().endswith("]") or _ADOC_COMMENT.match(line) is not None
            attributes_only = attribute and (out.para is None or attributes_only)
            out.line(start, end, line)
    if fence is not None:  # unclosed: keep what there is
        out.add(fence)
    out.close()
    return out.blocks


def markup_blocks(text: str, syntax: str) -> list[Block]:
    """The blocks of ``text`` written in ``syntax`` (one of :data:`SYNTAXES`)."""
    return rst_blocks(text) if syntax == "rst" else asciidoc_blocks(text)
