"""Documents and records: heading-aware sections, paragraphs packed under a token budget.

A Markdown file is cut into sections at its headings (ATX ``#`` and setext
underlines; ``#`` inside fenced code is not a heading); reStructuredText and
AsciiDoc at theirs (:mod:`kbflow.chunk.markup`). Chunks never cross a
section boundary. Within a section, blocks (paragraphs, lists, fenced code)
are packed greedily under ``max_tokens``; a block over the budget is split at
sentence ends, then at whitespace, never inside a word (fenced code: at line
ends). A section the model can read whole (up to ``whole_tokens``: by default
a fifth over the budget, 240, just under the default model's 256 word pieces)
stays one chunk: splitting it would only embed more texts, each with less of
the section to go on. A section holding nothing but its heading joins the
next section, or the section above it where no subsection of it follows and
that section lies under the same parent (TypeDoc's "Returns this" closing a
member's entry) or nothing follows at all, so no chunk is a bare heading.
Where a longer section is cut, a piece under ``small`` tokens
(``ChunkSettings.min_tokens``: a record's title over a long body, a last
sentence) joins its neighbour when the two stay within ``whole``, so no
chunk is a bare title either.
Each chunk records its ``heading_path`` (``Install > From source``) and its
char offsets into the unit text.
"""

from __future__ import annotations

import logging
import re

from kbflow.chunk.base import Chunker, Piece, count_tokens, register_chunker
from kbflow.chunk.layout import parse as parse_layout
from kbflow.chunk.layout import pdf_regions, web_css_path
from kbflow.chunk.markup import SYNTAXES, Block, lines, markup_blocks
from kbflow.records import RawUnit

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])[\"')\]]*\s+")
_WORD = re.compile(r"\S+")
_FRONT_TITLE = re.compile(r"^title[ \t]*[:=][ \t]*(\S.*?)[ \t]*$", re.MULTILINE)  # YAML's title:, TOML's title =
#: front matter closes within this many lines, or the file has none
_FRONT_MAX_LINES = 200

log = logging.getLogger("kbflow")


def front_matter(text: str) -> Block | None:
    """A Markdown file's front matter (YAML between ``---`` lines, as Jekyll, Hugo, Docusaurus and Quarto write
    it, or Hugo's TOML between ``+++`` lines): a level-1 heading named by its title (an ``# H1`` below takes its
    place), or a paragraph of its own where it has none; ``None`` where the file has none."""
    mark = text[:3]
    if mark not in ("---", "+++") or text[3:4] not in ("\n", "\r"):
        return None
    closing = ("---", "...") if mark == "---" else ("+++",)
    for i, (_start, end, line) in enumerate(lines(text)):
        if i and line.strip() in closing:
            title = _FRONT_TITLE.search(text, 0, end)
            if title is None:
                return Block(0, end, "para")
            return Block(0, end, "heading", 1, title.group(1).strip().strip("\"'").strip())
        if i >= _FRONT_MAX_LINES:
            return None
    return None


def parse_blocks(text: str, markdown: bool = True) -> list[Block]:
    """Split ``text`` into headings, paragraphs and fenced blocks with char spans (headings, fences and front
    matter: Markdown's, where ``markdown``)."""
    blocks: list[Block] = []
    para: Block | None = None
    fence: Block | None = None
    fence_mark = ""
    front = front_matter(text) if markdown else None
    blocks.extend([front] if front else [])
    for start, end, line in lines(text[front.end :] if front else text, front.end if front else 0):
        if fence is not None:
            fence.end = end
            if line.strip().startswith(fence_mark) and line.strip().strip(fence_mark[0]) == "":
                blocks.append(fence)
                fence = None
            continue
        stripped = line.strip()
        if markdown:
            m = _FENCE.match(line)
            if m:
                if para:
                    blocks.append(para)
                    para = None
                fence, fence_mark = Block(start, end, "fence"), m.group(1)
                continue
            m = _ATX.match(line)
            if m:
                if para:
                    blocks.append(para)
                    para = None
                blocks.append(Block(start, end, "heading", len(m.group(1)), (m.group(2) or "").strip()))
                continue
            if para is not None and _SETEXT.match(line) and "\n" not in text[para.start : para.end]:
                level = 1 if stripped.startswith("=") else 2
                blocks.append(Block(para.start, end, "heading", level, text[para.start : para.end].strip()))
                para = None
                continue
        if not stripped:
            if para:
                blocks.append(para)
                para = None
            continue
        if para is None:
            para = Block(start, end, "para")
        else:
            para.end = end
    if fence is not None:  # unclosed fence: keep what there is
        blocks.append(fence)
    if para:
        blocks.append(para)
    return blocks


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _pack(text: str, cuts: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
    """Greedily join consecutive spans while the joined span stays within ``budget`` tokens."""
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    cur_tokens = 0
    for start, end in cuts:
        tokens = count_tokens(text[start:end])
        if cur is not None and cur_tokens + tokens <= budget:
            cur, cur_tokens = (cur[0], end), cur_tokens + tokens
            continue
        if cur is not None:
            out.append(cur)
        cur, cur_tokens = (start, end), tokens
    if cur is not None:
        out.append(cur)
    return out


def split_span(text: str, start: int, end: int, budget: int, by_lines: bool = False) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into spans of at most ``budget`` tokens at natural boundaries.

    Prose splits at sentence ends, then at whitespace; ``by_lines`` splits at
    line ends, then at whitespace. Never inside a word: a single word longer
    than the budget stays whole.
    """
    if count_tokens(text[start:end]) <= budget:
        return [(start, end)]
    if by_lines:
        cuts, pos = [], start
        for m in re.finditer(r"\n", text[start:end]):
            cuts.append((pos, start + m.start()))
            pos = start + m.end()
        cuts.append((pos, end))
    else:
        cuts, pos = [], start
        for m in _SENTENCE_END.finditer(text, start, end):
            cuts.append((pos, m.start()))
            pos = m.end()
        cuts.append((pos, end))
    spans: list[tuple[int, int]] = []
    for s, e in cuts:
        s, e = _trim(text, s, e)
        if s >= e:
            continue
        if count_tokens(text[s:e]) <= budget:
            spans.append((s, e))
        else:  # one sentence/line over budget: words
            spans.extend(_pack(text, [m.span() for m in _WORD.finditer(text, s, e)], budget))
    return _pack(text, spans, budget)


def _merge_small(text: str, spans: list[tuple[int, int]], small: int, limit: int) -> list[tuple[int, int]]:
    """Consecutive spans of one section with each span under ``small`` tokens joined to its next neighbour,
    or else its previous one, where the joined span stays within ``limit`` tokens."""
    out = list(spans)
    i = 0
    while small and len(out) > 1 and i < len(out):
        start, end = out[i]
        if count_tokens(text[start:end]) < small:
            if i + 1 < len(out) and count_tokens(text[start : out[i + 1][1]]) <= limit:
                out[i : i + 2] = [(start, out[i + 1][1])]
                continue
            if i > 0 and count_tokens(text[out[i - 1][0] : end]) <= limit:
                out[i - 1 : i + 1] = [(out[i - 1][0], end)]
                i -= 1
                continue
        i += 1
    return out


def document_spans(
    text: str, budget: int, markdown: bool = True, whole: int | None = None, small: int = 0, syntax: str = ""
) -> list[tuple[int, int, str]]:
    """``(char_start, char_end, heading_path)`` of every chunk of a document, in order: sections of up to
    ``whole`` tokens (default: ``budget``) whole, longer ones packed under ``budget``, a piece of them under
    ``small`` tokens joined to a neighbour where the two fit in ``whole``. A ``syntax`` of
    :data:`~kbflow.chunk.markup.SYNTAXES` (``rst``, ``asciidoc``) reads its headings instead of Markdown's."""
    blocks = markup_blocks(text, syntax) if syntax in SYNTAXES else parse_blocks(text, markdown=markdown)
    # sections: (heading path, blocks); a heading opens a new one
    sections: list[tuple[str, list[Block]]] = []
    stack: list[tuple[int, str]] = []
    current: list[Block] = []
    path = ""
    for block in blocks:
        if block.kind == "heading":
            if current:
                sections.append((path, current))
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            path = " > ".join(t for _, t in stack if t)
            current = [block]
        else:
            current.append(block)
    if current:
        sections.append((path, current))
    # a bare heading joins the next section (its path is the deeper one), or the section above it where
    # no subsection of it follows and that section lies under its parent (TypeDoc's "Returns Command"
    # closing a member's entry, a last heading with nothing below it)
    merged: list[tuple[str, list[Block]]] = []
    carry: list[Block] = []
    for i, (path, blks) in enumerate(sections):
        blks = carry + blks
        carry = []
        if all(b.kind == "heading" for b in blks):
            below = sections[i + 1][0] if i + 1 < len(sections) else None
            parent = path.rpartition(" > ")[0]
            above = merged[-1][0] if merged else None
            beside = bool(parent) and above is not None and (above == parent or above.startswith(f"{parent} > "))
            if above is not None and (below is None or beside) and not (below or "").startswith(f"{path} > "):
                merged[-1] = (merged[-1][0], merged[-1][1] + blks)
                continue
            if below is not None:
                carry = blks
                continue
        merged.append((path, blks))

    out: list[tuple[int, int, str]] = []
    for path, blks in merged:
        start, end = _trim(text, blks[0].start, blks[-1].end)
        if start < end and count_tokens(text[start:end]) <= max(budget, whole or 0):
            out.append((start, end, path))
            continue
        cuts: list[tuple[int, int]] = []
        for b in blks:
            cuts.extend(split_span(text, b.start, b.end, budget, by_lines=b.kind == "fence"))
        for start, end in _merge_small(text, _pack(text, cuts, budget), small, max(budget, whole or 0)):
            start, end = _trim(text, start, end)
            if start < end:
                out.append((start, end, path))
    return out


@register_chunker
class DocumentChunker(Chunker):
    """Markdown/text documents (heading-aware), JSONL records, ticket posts, PDF pages and web pages.

    PDF chunks get their regions (and headline page box) and web chunks the css
    path of their enclosing element from the unit's layout.
    """

    name = "document"
    priority = 20

    def accepts(self, unit: RawUnit) -> bool:
        return unit.content_kind in ("doc", "record", "ticket", "pdf", "web")

    def pieces(self, unit: RawUnit) -> list[Piece]:
        markdown = unit.language == "markdown" and unit.content_kind in ("doc", "ticket", "web")
        syntax = (unit.language or "") if unit.content_kind == "doc" else ""
        base = unit.locator
        layout = parse_layout(unit.layout)
        out = []
        settings = self.settings
        try:
            spans = document_spans(
                unit.text, settings.max_tokens, markdown, settings.whole_budget, settings.min_tokens, syntax
            )
        except RecursionError:  # nested deeper than the stack (a quote 3,000 deep): cut at line ends instead
            log.warning("%s: nested too deep for its headings and paragraphs; cut at line ends", unit.unit_key)
            cuts = split_span(unit.text, 0, len(unit.text), settings.max_tokens, by_lines=True)
            spans = [(start, end, "") for start, end in cuts]
        for start, end, path in spans:
            context = None
            if base.kind == "doc":
                locator = base.replace(char_start=start, char_end=end, heading_path=path or None)
            elif base.kind == "pdf" and layout is not None:
                regions = pdf_regions(layout, start, end)
                locator = base.replace(
                    char_start=start, char_end=end, regions=regions, bbox=regions[0][1] if regions else None
                )
                # the page's title lines, for the chunks below them (kbflow.sources.pdf.heading)
                context = layout.get("heading")
            elif base.kind == "web" and layout is not None:
                css_path = web_css_path(layout, start, end)
                locator = base.replace(char_start=start, char_end=end, css_path=css_path, heading_path=path or None)
            else:
                locator = base.replace(char_start=start, char_end=end)
            out.append(Piece(unit.text[start:end], locator, context=context))
        return out
