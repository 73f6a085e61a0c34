"""Code: one chunk per function, class or method, found with tree-sitter.

For each language a :class:`~kbflow.chunk.grammars.LangSpec` names the node
types that are units (functions, classes, methods, impls, namespaces). A
unit that fits the token budget becomes one chunk, its
decorators and the comments directly above it included. A unit over the
budget is split at its children: its header and the plain statements between
nested units are packed under the budget, nested units become chunks of their
own, and a single statement still over the budget falls back to line windows.
Module-level code between units is packed the same way, so no line of code is
lost. Every chunk records its 1-based inclusive line span, a qualified
``symbol`` (``Retriever.search``) and an ``ast_path``
(``module/class_definition:Retriever/function_definition:search``).

So that a chunk stands on its own:

- functions defined under a Python ``if``/``try``/``with`` are units like any
  other (``if sys.platform == "win32": def f(): ...``), and so are those a
  JavaScript library wraps in a function called at once (lodash's
  ``(function () { ... }.call(this))``, UMD's factory);
- plain code too small to be read alone (under ``ChunkSettings.min_tokens``
  words: a banner comment, an import, a bare ``class X:``) joins the unit
  below it, or the chunk above it at the end of a block;
- the file's leading comments and docstring are one chunk (up to twice the
  budget), labelled as the module's docstring;
- each piece of a split unit carries, for its context header
  (:mod:`kbflow.chunk.context`), the unit's signature when the piece does
  not show it, and a split class's body is labelled "class body without its
  methods".

Python, JavaScript, TypeScript/TSX, Go, Rust, Java, C, C++, Ruby, Bash, PHP,
C#, Kotlin, Scala, Swift and Lua are covered (see :mod:`kbflow.chunk.grammars`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kbflow.chunk.base import Chunker, Piece, count_tokens, line_span, line_starts, register_chunker
from kbflow.chunk.grammars import LANGUAGES, LangSpec, available, parser
from kbflow.chunk.lines import line_windows
from kbflow.chunk.unit_names import BINDINGS, bound_function, called_at_once, prototype_aliases, unit_name
from kbflow.records import RawUnit


@dataclass(frozen=True)
class _Owner:
    """The unit a split unit's plain segments belong to."""

    row: int  # 0-based row of its definition line (after decorators and comments)
    signature: str  # its definition line(s), up to its body
    label: str  # what a segment of it holds: "body of a class without its methods", ...


@dataclass
class _Seg:
    start: int  # 0-based rows, inclusive
    end: int
    symbol: str | None
    ast_path: str
    plain: bool = False  # statements between units (or a unit's windows), not a whole unit
    owner: _Owner | None = None
    note: str | None = None  # a label of its own (the module docstring)


#: the grammars whose binding statements (``exports.f = function``) are units
_JS_GRAMMARS = ("tree_sitter_javascript", "tree_sitter_typescript")
#: a ``/** ... */`` block holding one of these is a file's licence header, not the next unit's documentation
_LICENCE_WORDS = ("@license", "copyright", "licensed under", "@preserve")
#: a signature in a context header is cut to this many characters
MAX_SIGNATURE_CHARS = 200
_WORDS = re.compile(r"\w+")


class _Cutter:
    def __init__(self, text: str, spec: LangSpec, budget: int, window_lines: int, min_tokens: int = 0) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.spec = spec
        self.budget = budget
        self.min_tokens = min_tokens
        self.window_lines = window_lines
        self.segs: list[_Seg] = []
        self.binds = spec.module.startswith(_JS_GRAMMARS)  # `exports.f = function` is a unit
        #: each block's ``var _proto = Lake.prototype`` aliases, read once (by the block's start and end byte)
        self.aliases: dict[tuple[int, int], dict[str, str]] = {}

    # --- node helpers ---------------------------------------------------
    def definition(self, node):
        """The node that carries the name (unwraps decorators, ``export``, ``template<...>``)."""
        for _ in range(4):
            how = self.spec.wrappers.get(node.type)
            if how is None:
                break
            if how == "*":
                inner = next(
                    (c for c in node.named_children if c.type in self.spec.units and c.type not in self.spec.wrappers),
                    None,
                )
            else:
                inner = node.child_by_field_name(how)
            if inner is None:
                break
            node = inner
        return node

    def is_unit(self, node) -> bool:
        if node.type not in self.spec.units:
            return False
        inner = self.definition(node)
        if self.binds and inner.type in BINDINGS:
            return bound_function(inner) is not None  # `exports.f = function`, not `exports.x = 1`
        if inner is node and node.type in self.spec.wrappers:
            return False  # `export { a }`, a plain expression statement
        return True

    def body_of(self, node):
        inner = self.definition(node)
        if self.binds and inner.type in BINDINGS:  # the bound function's: `var Lake = function () {...}()`
            inner = bound_function(inner) or inner
        for fname in self.spec.body_fields:
            body = inner.child_by_field_name(fname)
            if body is not None:
                return body
        return next((c for c in inner.children if c.type in self.spec.body_types), None)

    def spliced(self, children):
        """``children`` with transparent nodes (``#ifdef`` blocks...), conditional ones holding a unit
        (``if ...: def f(): ...``) and a JavaScript file's wrapper function (:meth:`wrapped_body`) replaced by
        their own children."""
        for child in children:
            if child.type in self.spec.transparent or (child.type in self.spec.conditional and self.holds_unit(child)):
                yield from self.spliced(child.children)
            elif (body := self.wrapped_body(child)) is not None:
                yield from self.spliced(body.children)
            else:
                yield child

    def wrapped_body(self, node):
        """The body of the function a JavaScript file wraps its code in (:func:`called_at_once`), where that
        body holds a unit; else ``None``. Its functions are then units as at the top of a module
        (``debounce``, not lodash's 17,000 lines cut into windows)."""
        if not self.binds:
            return None
        for function in called_at_once(node):
            body = function.child_by_field_name("body")
            if body is not None and body.type == "statement_block" and self.holds_unit(body):
                return body
        return None

    def holds_unit(self, node) -> bool:
        """Whether a unit lies in ``node`` behind conditional nodes only (not inside another unit)."""
        for child in node.children:
            if self.is_unit(child) or (child.type in self.spec.conditional and self.holds_unit(child)):
                return True
        return False

    @staticmethod
    def rows(node) -> tuple[int, int]:
        start, end = node.start_point[0], node.end_point[0]
        if node.end_point[1] == 0 and end > start:
            end -= 1
        return start, end

    def tokens(self, start: int, end: int) -> int:
        return count_tokens("\n".join(self.lines[start : end + 1]))

    # --- cutting ------------------------------------------------------------
    def block(
        self,
        children,
        scope: str,
        path: str,
        header: tuple[int, int] | None = None,
        trailer: tuple[int, int] | None = None,
        owner: _Owner | None = None,
    ) -> None:
        """Cut a sequence of sibling nodes; ``header``/``trailer`` are row spans packed before/after them."""
        run: list[tuple[int, int]] = [header] if header else []
        first = len(self.segs)
        if not scope and header is None:
            children = self.docstring(list(children), path)
        pending: list[tuple[int, int]] = []  # comments and decorators that may lead into the next unit
        for child in self.spliced(children):
            start, end = self.rows(child)
            if child.type in self.spec.leading:
                if pending and start > pending[-1][1] + 1:
                    run.extend(pending)
                    pending = []
                pending.append((start, end))
                continue
            if self.is_unit(child):
                lead = start
                if pending and (pending[-1][1] >= start - 1 or self.doc_above(pending[-1], start)):
                    # doc comments / decorators directly above, or a `/** ... */` with blank lines between
                    lead = pending[0][0]
                else:
                    run.extend(pending)
                pending = []
                # a bare `class X:`, a comment line, an import joins the unit below: whole, or its
                # header when the unit is split anyway
                if (
                    run
                    and self.small(run)
                    and (self.tokens(min(run)[0], end) <= self.budget or self.tokens(lead, end) > self.budget)
                ):
                    lead = min(run)[0]
                    run = []
                self.flush(run, scope, path, owner)
                run = []
                self.unit(child, lead, scope, path)
            else:
                run.extend(pending)
                pending = []
                run.append((start, end))
        run.extend(pending)
        if trailer:
            run.append(trailer)
        if run and self.small(run) and len(self.segs) > first:
            last = self.segs[-1]  # the last chunk cut in this block
            if self.tokens(last.start, max(run)[1]) <= self.budget:
                self.segs[-1] = replace(last, end=max(last.end, max(run)[1]))
                return
        self.flush(run, scope, path, owner)

    def aliases_of(self, block) -> dict[str, str]:
        """The prototype aliases of ``block`` (:func:`~kbflow.chunk.unit_names.prototype_aliases`), once per block."""
        key = (block.start_byte, block.end_byte) if block is not None else (-1, -1)
        if key not in self.aliases:
            self.aliases[key] = prototype_aliases(block)
        return self.aliases[key]

    def doc_above(self, comment: tuple[int, int], start: int) -> bool:
        """Whether the comment on rows ``comment`` documents the unit on row ``start`` across blank lines: a
        JSDoc, TSDoc, Javadoc or Doxygen block (``/** ... */``), not a licence header."""
        first, last = comment
        if not self.lines[first].lstrip().startswith("/**"):
            return False
        if any(self.lines[row].strip() for row in range(last + 1, start)):
            return False
        text = "\n".join(self.lines[first : last + 1]).lower()
        return not any(word in text for word in _LICENCE_WORDS)

    def words(self, start: int, end: int) -> int:
        """Words (runs of letters, digits and ``_``) on rows ``start..end``: a ``# ---- Helpers ----``
        banner is one word, however many dashes."""
        return len(_WORDS.findall("\n".join(self.lines[start : end + 1])))

    def small(self, run: list[tuple[int, int]]) -> bool:
        """Whether a run of plain statements is too small to stand alone as a chunk."""
        return self.words(min(run)[0], max(run)[1]) < self.min_tokens

    def flush(self, run: list[tuple[int, int]], scope: str, path: str, owner: _Owner | None = None) -> None:
        """Pack a run of plain statements (row spans) under the budget."""
        symbol = scope or None
        cur: tuple[int, int] | None = None
        for start, end in sorted(run):
            if cur is not None and self.tokens(cur[0], end) <= self.budget:
                cur = (cur[0], max(cur[1], end))
                continue
            if cur is not None:
                self.emit(cur[0], cur[1], symbol, path, owner)
            cur = (start, end)
        if cur is not None:
            self.emit(cur[0], cur[1], symbol, path, owner)

    def emit(self, start: int, end: int, symbol: str | None, path: str, owner: _Owner | None = None) -> None:
        if self.tokens(start, end) <= self.budget or end == start:
            self.segs.append(_Seg(start, end, symbol, path, plain=True, owner=owner))
            return
        for s, e in line_windows(self.lines, start + 1, end + 1, self.window_lines, self.budget):
            self.segs.append(_Seg(s - 1, e - 1, symbol, path, plain=True, owner=owner))

    def docstring(self, children: list, path: str) -> list:
        """Module level: the file's leading comments and docstring cut as one chunk (up to twice the budget);
        the children left to cut."""
        kinds = self.spec.docstring
        i = 0
        while i < len(children) and children[i].type in self.spec.leading:
            i += 1
        if not kinds or i >= len(children):
            return children
        node = children[i]
        if node.type not in kinds or not node.named_children or node.named_children[0].type != "string":
            return children
        start, end = self.rows(children[0])[0], self.rows(node)[1]
        if self.tokens(start, end) > 2 * self.budget:
            return children
        self.segs.append(_Seg(start, end, None, path, plain=True, note="the module's docstring"))
        return children[i + 1 :]

    def owner(self, inner, body, children) -> _Owner:
        """What the plain segments of the split unit ``inner`` carry: its signature and a label."""
        row = inner.start_point[0]
        last = max(row, body.start_point[0] - 1) if body is not None else row
        if body is not None and body.start_point[0] == row:  # `def f(): ...` / `fn f() {` on one line
            head = self.lines[row][: body.start_point[1]]
        else:
            head = " ".join(line.strip() for line in self.lines[row : last + 1])
        signature = " ".join(head.split())[:MAX_SIGNATURE_CHARS]
        nested = any(self.is_unit(c) for c in self.spliced(children))
        if not nested:
            label = ""
        elif inner.type in self.spec.classes:
            label = "class body without its methods"
        else:
            label = "without its nested definitions"
        return _Owner(row, signature, label)

    def unit(self, node, lead: int, scope: str, path: str) -> None:
        inner = self.definition(node)
        name = unit_name(inner, self.aliases_of(inner.parent) if self.binds else None)
        qual = self.spec.qualify(scope, name, inner.type)
        upath = f"{path}/{inner.type}:{name}"
        start, end = lead, self.rows(node)[1]
        if self.tokens(start, end) <= self.budget:
            self.segs.append(_Seg(start, end, qual, upath))
            return
        body = self.body_of(node)
        children = list(body.named_children) if body is not None else []
        if not children:
            self.emit(start, end, qual, upath, self.owner(inner, body, children))
            return
        header = (start, max(start, self.rows(children[0])[0] - 1))
        last = max(self.rows(c)[1] for c in children)
        trailer = (last + 1, end) if end > last else None  # a closing `}` / `end`
        self.block(children, qual, upath, header=header, trailer=trailer, owner=self.owner(inner, body, children))


@dataclass(frozen=True)
class CodeSegment:
    """One chunk of a code file: its 1-based inclusive line span, symbol, AST path and context line(s)."""

    line_start: int
    line_end: int
    symbol: str | None
    ast_path: str
    #: what the chunk needs to be read alone: the enclosing definition's signature when the chunk does
    #: not hold it, and a label for a class body without its methods or the module's docstring
    context: str | None = None


def cut_code(text: str, language: str, budget: int, window_lines: int = 40, min_tokens: int = 0) -> list[CodeSegment]:
    """Every chunk of the code ``text``, in order.

    Every non-blank line of ``text`` lies in exactly one segment. A run of
    plain statements under ``min_tokens`` (a comment line, an import, a bare
    ``class X:``) joins the unit below it, or else the chunk above it, where
    the budget allows.
    """
    spec = LANGUAGES[language]
    tree = parser(language).parse(text.encode("utf-8"))
    cutter = _Cutter(text, spec, budget, window_lines, min_tokens)
    root = tree.root_node
    cutter.block(list(root.children), "", root.type)
    lines = cutter.lines
    out: list[_Seg] = []  # 0-based rows, blank edges trimmed
    last_end = -1

    def add(seg: _Seg, start: int) -> None:
        nonlocal last_end
        end = seg.end
        while start <= end and not lines[start].strip():  # trim blank edge lines
            start += 1
        while end >= start and not lines[end].strip():
            end -= 1
        if start <= end:
            out.append(replace(seg, start=start, end=end))
            last_end = end

    for seg in sorted(cutter.segs, key=lambda s: (s.start, s.end)):
        start = max(seg.start, last_end + 1)
        if start > last_end + 1:  # rows no node claimed (stray tokens): keep them, never drop code
            add(_Seg(last_end + 1, start - 1, None, root.type, plain=True), last_end + 1)
        add(seg, start)
    if last_end + 1 < len(lines):
        add(_Seg(last_end + 1, len(lines) - 1, None, root.type, plain=True), last_end + 1)
    return [
        CodeSegment(seg.start + 1, seg.end + 1, seg.symbol, seg.ast_path, _context(seg))
        for seg in _merge_small(out, cutter, min_tokens)
    ]


def code_segments(
    text: str, language: str, budget: int, window_lines: int = 40, min_tokens: int = 0
) -> list[tuple[int, int, str | None, str]]:
    """``(line_start, line_end, symbol, ast_path)`` (1-based, inclusive) of every chunk, in order (see
    :func:`cut_code`)."""
    return [
        (seg.line_start, seg.line_end, seg.symbol, seg.ast_path)
        for seg in cut_code(text, language, budget, window_lines, min_tokens)
    ]


def _context(seg: _Seg) -> str | None:
    if seg.note:
        return f"({seg.note})"
    owner = seg.owner
    if owner is None:
        return None
    label = f"({owner.label})" if owner.label else ""
    if seg.start > owner.row:  # the chunk does not show the definition it is part of
        return f"{owner.signature}\n{label}".strip() if owner.signature else label or None
    return label or None


def _merge_small(segs: list[_Seg], cutter: _Cutter, min_tokens: int) -> list[_Seg]:
    """Plain segments under ``min_tokens`` (the last lines of a split function, a stray comment) joined to
    the segment before them in the same scope, or else to the one after them, where the sum stays within
    the budget plus ``min_tokens``."""
    if not min_tokens:
        return segs
    limit = cutter.budget + min_tokens
    out: list[_Seg] = []
    i = 0
    while i < len(segs):
        seg = segs[i]
        if seg.plain and cutter.words(seg.start, seg.end) < min_tokens:
            if out and out[-1].ast_path == seg.ast_path and cutter.tokens(out[-1].start, seg.end) <= limit:
                out[-1] = replace(out[-1], end=seg.end)
                i += 1
                continue
            if i + 1 < len(segs) and cutter.tokens(seg.start, segs[i + 1].end) <= limit:
                out.append(replace(segs[i + 1], start=seg.start, note=seg.note or segs[i + 1].note))
                i += 2
                continue
        out.append(seg)
        i += 1
    return out


@register_chunker
class CodeChunker(Chunker):
    name = "code"
    priority = 10

    def accepts(self, unit: RawUnit) -> bool:
        return unit.content_kind == "code" and available(unit.language)

    def pieces(self, unit: RawUnit) -> list[Piece]:
        starts = line_starts(unit.text)
        settings = self.settings
        out = []
        for seg in cut_code(
            unit.text, unit.language or "", settings.code_max_tokens, settings.window_lines, settings.min_tokens
        ):
            locator = unit.locator.replace(
                line_start=seg.line_start, line_end=seg.line_end, symbol=seg.symbol, ast_path=seg.ast_path
            )
            out.append(Piece(line_span(unit.text, seg.line_start, seg.line_end, starts), locator, seg.context))
        return out
