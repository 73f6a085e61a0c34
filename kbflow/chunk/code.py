"""Code: one chunk per function, class or method, found with tree-sitter.

For each language a :class:`LangSpec` names the node types that are units
(functions, classes, methods) and those whose body holds nested units
(classes). A unit that fits the token budget becomes one chunk, its
decorators and the comments directly above it included. A unit over the
budget is split at its children: its header and the plain statements between
nested units are packed under the budget, nested units become chunks of their
own, and a single statement still over the budget falls back to line windows.
Module-level code between units is packed the same way, so no line of code is
lost. Every chunk records its 1-based inclusive line span, a qualified
``symbol`` (``Retriever.search``) and an ``ast_path``
(``module/class_definition:Retriever/function_definition:search``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from kbflow._lazy import require
from kbflow.chunk.base import Chunker, Piece, count_tokens, line_span, line_starts, register_chunker
from kbflow.chunk.lines import line_windows
from kbflow.records import RawUnit


@dataclass(frozen=True)
class LangSpec:
    """What a language's units look like in its tree-sitter grammar."""

    module: str  # the grammar wheel's import name
    units: frozenset[str]  # node types that are units
    containers: frozenset[str]  # unit types whose body may hold nested units
    comments: frozenset[str] = frozenset({"comment"})
    # wrapper node type -> the field or child that holds the real definition
    wrappers: dict[str, str] = field(default_factory=dict)
    body_fields: tuple[str, ...] = ("body",)


LANGUAGES: dict[str, LangSpec] = {
    "python": LangSpec(
        module="tree_sitter_python",
        units=frozenset({"function_definition", "class_definition", "decorated_definition"}),
        containers=frozenset({"class_definition"}),
        wrappers={"decorated_definition": "definition"},
    ),
    "javascript": LangSpec(
        module="tree_sitter_javascript",
        units=frozenset(
            {
                "function_declaration",
                "generator_function_declaration",
                "class_declaration",
                "method_definition",
                "export_statement",
                "lexical_declaration",
                "variable_declaration",
            }
        ),
        containers=frozenset({"class_declaration"}),
        wrappers={"export_statement": "declaration"},
    ),
}

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})


@functools.lru_cache(maxsize=None)
def _parser(language: str):
    ts = require("tree_sitter")
    grammar = require(LANGUAGES[language].module)
    return ts.Parser(ts.Language(grammar.language()))


def available(language: str | None) -> bool:
    """Whether a grammar for ``language`` is installed."""
    if language not in LANGUAGES:
        return False
    try:
        _parser(language)
    except ImportError:
        return False
    return True


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
        """The node that carries the name (unwraps decorators / export)."""
        seen = 0
        while node.type in self.spec.wrappers and seen < 4:
            inner = node.child_by_field_name(self.spec.wrappers[node.type])
            if inner is None:
                break
            node, seen = inner, seen + 1
        return node

    def is_unit(self, node) -> bool:
        if node.type not in self.spec.units:
            return False
        inner = self.definition(node)
        if inner.type in ("lexical_declaration", "variable_declaration"):
            # `const f = () => {...}` is a unit; `const x = 1` is plain code
            for decl in inner.named_children:
                value = decl.child_by_field_name("value")
                if value is not None and value.type in _FUNCTION_VALUES:
                    return True
            return False
        if node.type == "export_statement" and inner is node:
            return False
        return True

    def name_of(self, node) -> str:
        inner = self.definition(node)
        name = inner.child_by_field_name("name")
        if name is None and inner.type in ("lexical_declaration", "variable_declaration"):
            for decl in inner.named_children:
                name = decl.child_by_field_name("name")
                if name is not None:
                    break
        return name.text.decode("utf-8", "replace") if name is not None else "<anonymous>"

    def body_of(self, node):
        inner = self.definition(node)
        for fname in self.spec.body_fields:
            body = inner.child_by_field_name(fname)
            if body is not None:
                return body
        return None

    @staticmethod
    def rows(node) -> tuple[int, int]:
        start, end = node.start_point[0], node.end_point[0]
        if node.end_point[1] == 0 and end > start:
            end -= 1
        return start, end

    def tokens(self, start: int, end: int) -> int:
        return count_tokens("\n".join(self.lines[start : end + 1]))

    # --- cutting ------------------------------------------------------------
    def block(self, children, scope: list[str], path: str, header: tuple[int, int] | None = None) -> None:
        """Cut a sequence of sibling nodes; ``header`` is a row span to pack before them."""
        run: list[tuple[int, int]] = [header] if header else []
        pending: list[tuple[int, int]] = []  # comments that may belong to the next unit
        for child in children:
            start, end = self.rows(child)
            if child.type in self.spec.comments:
                if pending and start > pending[-1][1] + 1:
                    run.extend(pending)
                    pending = []
                pending.append((start, end))
                continue
            if self.is_unit(child):
                lead = start
                if pending and pending[-1][1] >= start - 1:  # doc comments directly above
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
        self.flush(run, scope, path)

    def flush(self, run: list[tuple[int, int]], scope: list[str], path: str) -> None:
        """Pack a run of plain statements (row spans) under the budget."""
        symbol = ".".join(scope) or None
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

    def unit(self, node, lead: int, scope: list[str], path: str) -> None:
        inner = self.definition(node)
        name = self.name_of(node)
        qual = [*scope, name]
        upath = f"{path}/{inner.type}:{name}"
        start, end = lead, self.rows(node)[1]
        if self.tokens(start, end) <= self.budget:
            self.segs.append(_Seg(start, end, ".".join(qual), upath))
            return
        body = self.body_of(node)
        children = list(body.named_children) if body is not None else []
        if not children:
            self.emit(start, end, ".".join(qual), upath)
            return
        header = (start, max(start, self.rows(children[0])[0] - 1))
        self.block(children, qual, upath, header=header)


def code_segments(text: str, language: str, budget: int, window_lines: int = 40) -> list[tuple[int, int, str | None, str]]:
    """``(line_start, line_end, symbol, ast_path)`` (1-based, inclusive) of every chunk, in order."""
    spec = LANGUAGES[language]
    tree = _parser(language).parse(text.encode("utf-8"))
    cutter = _Cutter(text, spec, budget, window_lines)
    root = tree.root_node
    cutter.block(list(root.named_children), [], root.type)
    out: list[tuple[int, int, str | None, str]] = []
    last_end = -1
    for seg in sorted(cutter.segs, key=lambda s: (s.start, s.end)):
        start = max(seg.start, last_end + 1)
        end = seg.end
        # trim blank edge lines
        while start <= end and not cutter.lines[start].strip():
            start += 1
        while end >= start and not cutter.lines[end].strip():
            end -= 1
        if start > end:
            continue
        out.append((start + 1, end + 1, seg.symbol, seg.ast_path))
        last_end = end
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
