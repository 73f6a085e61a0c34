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
Python, JavaScript, TypeScript/TSX, Go, Rust, Java, C, C++, Ruby and Bash are
covered (see :mod:`kbflow.chunk.grammars`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kbflow.chunk.base import Chunker, Piece, count_tokens, line_span, line_starts, register_chunker
from kbflow.chunk.grammars import LANGUAGES, LangSpec, available, is_function_binding, parser, unit_name
from kbflow.chunk.lines import line_windows
from kbflow.records import RawUnit


@dataclass
class _Seg:
    start: int  # 0-based rows, inclusive
    end: int
    symbol: str | None
    ast_path: str


class _Cutter:
    def __init__(self, text: str, spec: LangSpec, budget: int, window_lines: int) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.spec = spec
        self.budget = budget
        self.window_lines = window_lines
        self.segs: list[_Seg] = []

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
        if inner is node and node.type in self.spec.wrappers:
            return False  # `export { a }`, a plain expression statement
        if inner.type in ("lexical_declaration", "variable_declaration"):
            return is_function_binding(inner)
        return True

    def body_of(self, node):
        inner = self.definition(node)
        for fname in self.spec.body_fields:
            body = inner.child_by_field_name(fname)
            if body is not None:
                return body
        return None

    def spliced(self, children):
        """``children`` with transparent nodes (``#ifdef`` blocks...) replaced by their own children."""
        for child in children:
            if child.type in self.spec.transparent:
                yield from self.spliced(child.children)
            else:
                yield child

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
    ) -> None:
        """Cut a sequence of sibling nodes; ``header``/``trailer`` are row spans packed before/after them."""
        run: list[tuple[int, int]] = [header] if header else []
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
                if pending and pending[-1][1] >= start - 1:  # doc comments / decorators directly above
                    lead = pending[0][0]
                else:
                    run.extend(pending)
                pending = []
                if header and run == [header] and self.tokens(header[0], end) <= self.budget:
                    lead = header[0]  # a bare `class X:` line joins its first member
                    run = []
                self.flush(run, scope, path)
                run = []
                self.unit(child, lead, scope, path)
            else:
                run.extend(pending)
                pending = []
                run.append((start, end))
        run.extend(pending)
        if trailer:
            run.append(trailer)
        self.flush(run, scope, path)

    def flush(self, run: list[tuple[int, int]], scope: str, path: str) -> None:
        """Pack a run of plain statements (row spans) under the budget."""
        symbol = scope or None
        cur: tuple[int, int] | None = None
        for start, end in sorted(run):
            if cur is not None and self.tokens(cur[0], end) <= self.budget:
                cur = (cur[0], max(cur[1], end))
                continue
            if cur is not None:
                self.emit(cur[0], cur[1], symbol, path)
            cur = (start, end)
        if cur is not None:
            self.emit(cur[0], cur[1], symbol, path)

    def emit(self, start: int, end: int, symbol: str | None, path: str) -> None:
        if self.tokens(start, end) <= self.budget or end == start:
            self.segs.append(_Seg(start, end, symbol, path))
            return
        for s, e in line_windows(self.lines, start + 1, end + 1, self.window_lines, self.budget):
            self.segs.append(_Seg(s - 1, e - 1, symbol, path))

    def unit(self, node, lead: int, scope: str, path: str) -> None:
        inner = self.definition(node)
        name = unit_name(inner)
        qual = self.spec.qualify(scope, name, inner.type)
        upath = f"{path}/{inner.type}:{name}"
        start, end = lead, self.rows(node)[1]
        if self.tokens(start, end) <= self.budget:
            self.segs.append(_Seg(start, end, qual, upath))
            return
        body = self.body_of(node)
        children = list(body.named_children) if body is not None else []
        if not children:
            self.emit(start, end, qual, upath)
            return
        header = (start, max(start, self.rows(children[0])[0] - 1))
        last = max(self.rows(c)[1] for c in children)
        trailer = (last + 1, end) if end > last else None  # a closing `}` / `end`
        self.block(children, qual, upath, header=header, trailer=trailer)


def code_segments(
    text: str, language: str, budget: int, window_lines: int = 40
) -> list[tuple[int, int, str | None, str]]:
    """``(line_start, line_end, symbol, ast_path)`` (1-based, inclusive) of every chunk, in order.

    Every non-blank line of ``text`` lies in exactly one segment.
    """
    spec = LANGUAGES[language]
    tree = parser(language).parse(text.encode("utf-8"))
    cutter = _Cutter(text, spec, budget, window_lines)
    root = tree.root_node
    cutter.block(list(root.children), "", root.type)
    lines = cutter.lines
    out: list[tuple[int, int, str | None, str]] = []
    last_end = -1

    def add(start: int, end: int, symbol: str | None, ast_path: str) -> None:
        nonlocal last_end
        while start <= end and not lines[start].strip():  # trim blank edge lines
            start += 1
        while end >= start and not lines[end].strip():
            end -= 1
        if start <= end:
            out.append((start + 1, end + 1, symbol, ast_path))
            last_end = end

    for seg in sorted(cutter.segs, key=lambda s: (s.start, s.end)):
        start = max(seg.start, last_end + 1)
        if start > last_end + 1:  # rows no node claimed (stray tokens): keep them, never drop code
            add(last_end + 1, start - 1, None, root.type)
        add(start, seg.end, seg.symbol, seg.ast_path)
    if last_end + 1 < len(lines):
        add(last_end + 1, len(lines) - 1, None, root.type)
    return out


@register_chunker
class CodeChunker(Chunker):
    name = "code"
    priority = 10

    def accepts(self, unit: RawUnit) -> bool:
        return unit.content_kind == "code" and available(unit.language)

    def pieces(self, unit: RawUnit) -> list[Piece]:
        starts = line_starts(unit.text)
        out = []
        segs = code_segments(unit.text, unit.language, self.settings.code_max_tokens, self.settings.window_lines)
        for s, e, symbol, ast_path in segs:
            locator = unit.locator.replace(line_start=s, line_end=e, symbol=symbol, ast_path=ast_path)
            out.append(Piece(line_span(unit.text, s, e, starts), locator))
        return out
