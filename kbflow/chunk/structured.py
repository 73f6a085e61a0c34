"""Structured data files (JSON, YAML, TOML) as documents whose sections are their keys.

A config file cut into fixed line windows loses what each window is about; cut
at its keys, every chunk says where it sits (``heading_path`` ``jobs > test``).
The file is parsed with tree-sitter (``tree-sitter-json``, ``-yaml``,
``-toml``). Each mapping or list is cut into one span per entry, from the
entry's line (with the comments directly above it) to the next entry's;
consecutive entries are packed under the token budget, and an entry over the
budget is cut the same way one level down (its key line joins its first
child), or at line ends when it has no children. The spans tile the file, so no
character is lost. A chunk holding one entry is headed by that entry's key
path, a chunk packing several by their parent's. A file the grammar cannot
parse cleanly falls back to paragraph chunking.
"""

from __future__ import annotations

import bisect
import logging
import re
from typing import Any

from kbflow.chunk.base import Chunker, Piece, count_tokens, register_chunker
from kbflow.chunk.document import _trim, document_spans, split_span
from kbflow.chunk.grammars import grammar_installed, grammar_parser
from kbflow.records import RawUnit
from kbflow.text.languages import DATA_LANGUAGES

log = logging.getLogger("kbflow")
_GRAMMARS = {"json": "tree_sitter_json", "yaml": "tree_sitter_yaml", "toml": "tree_sitter_toml"}
_COMMENT_MARKS = ("#", "//")
#: tree-sitter-yaml 0.7 crashes the process (a segfault) on YAML nested about 255 levels deep (block mappings
#: or ``- - - x`` sequences); a line whose content starts this far right (indentation and ``-``/``?``/``:``
#: markers, at least a column a level) could be that deep, so such a file is cut as text, never parsed
_YAML_SAFE_COLUMN = 200
_YAML_LEAD = re.compile(r"^[ \t?:-]*", re.MULTILINE)
#: key paths deeper than this are cut at line ends (the chunker recurses a level a key)
MAX_KEY_DEPTH = 64


def _too_deep_to_parse(text: str, language: str) -> bool:
    return language == "yaml" and any(m.end() - m.start() >= _YAML_SAFE_COLUMN for m in _YAML_LEAD.finditer(text))


def available(language: str | None) -> bool:
    """Whether a grammar for the data ``language`` is installed."""
    return language in _GRAMMARS and grammar_installed(_GRAMMARS[language])


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _json_key(pair) -> str:
    key = pair.child_by_field_name("key")
    if key is None:
        return "?"
    inner = next((c for c in key.named_children if c.type == "string_content"), None)
    return _text(inner) if inner is not None else _text(key).strip("\"'")


def _mapping_entries(named: list) -> list[tuple[str, Any, Any]]:
    """A JSON object's or a YAML mapping's pairs."""
    out = []
    for pair in named:
        if pair.type == "pair":
            out.append((_json_key(pair), pair, pair.child_by_field_name("value")))
        elif pair.type in ("block_mapping_pair", "flow_pair"):
            key = pair.child_by_field_name("key")
            out.append((_text(key) if key is not None else "?", pair, pair.child_by_field_name("value")))
    return out


def _sequence_entries(named: list) -> list[tuple[str, Any, Any]]:
    """A JSON array's or a YAML sequence's items, keyed ``[i]``."""
    out = []
    for i, item in enumerate(named):
        value = item
        if item.type == "block_sequence_item":
            value = next((c for c in item.named_children if c.type != "comment"), None)
        out.append((f"[{i}]", item, value))
    return out


def _toml_entries(named: list) -> list[tuple[str, Any, Any]]:
    """A TOML document's or table's pairs and tables (``name[]`` for an array of tables)."""
    out: list[tuple[str, Any, Any]] = []
    for child in named:
        if child.type == "pair":
            out.append((_text(child.named_children[0]), child, None))
        elif child.type == "table":
            out.append((_text(child.named_children[0]), child, child))
        elif child.type == "table_array_element":
            out.append((_text(child.named_children[0]) + "[]", child, child))
    return out


def _entries(node) -> list[tuple[str, Any, Any]]:
    """``(key, entry node, value node to descend into)`` for every entry of a mapping or list."""
    kind = node.type
    named = [c for c in node.named_children if c.type != "comment"]
    if kind == "stream":  # YAML: one or more documents
        if len(named) > 1:
            return [(f"document {i + 1}", c, c) for i, c in enumerate(named)]
        return _entries(named[0]) if named else []
    if kind in ("block_node", "flow_node") or (kind == "document" and node.parent is not None):
        return _entries(named[0]) if len(named) == 1 else []  # YAML wrappers around one value
    if kind == "document" and named and named[0].type in ("object", "array"):  # JSON root
        return _entries(named[0])
    if kind in ("object", "block_mapping", "flow_mapping"):
        return _mapping_entries(named)
    if kind in ("array", "block_sequence", "flow_sequence"):
        return _sequence_entries(named)
    if kind in ("document", "table", "table_array_element"):  # TOML
        return _toml_entries(named)
    return []


class _Cutter:
    def __init__(self, text: str, data: bytes, budget: int) -> None:
        self.text = text
        self.budget = budget
        self.out: list[tuple[int, int, str]] = []
        # byte offset -> char offset, only needed when the text is not ASCII
        if len(data) != len(text):
            offsets, pos = [], 0
            for ch in text:
                offsets.append(pos)
                pos += len(ch.encode("utf-8"))
            self._bytes: list[int] | None = offsets
        else:
            self._bytes = None

    def char(self, byte: int) -> int:
        return byte if self._bytes is None else bisect.bisect_left(self._bytes, byte)

    def lead(self, start: int, floor: int) -> int:
        """Move ``start`` back to its line start and over comment lines directly above (not below ``floor``)."""
        text = self.text
        line = text.rfind("\n", 0, start) + 1
        if line < floor or text[line:start].strip():
            return max(start, floor)
        while line > floor:
            prev = text.rfind("\n", 0, line - 1) + 1
            if prev < floor or not text[prev : line - 1].strip().startswith(_COMMENT_MARKS):
                break
            line = prev
        return line

    def emit(self, start: int, end: int, path: list[str]) -> None:
        start, end = _trim(self.text, start, end)
        if start < end:
            self.out.append((start, end, " > ".join(path)))

    def leaf(self, start: int, end: int, path: list[str]) -> None:
        for s, e in split_span(self.text, start, end, self.budget, by_lines=True):
            self.emit(s, e, path)

    def cut(self, lo: int, hi: int, node, path: list[str]) -> None:
        entries = _entries(node) if node is not None and len(path) < MAX_KEY_DEPTH else []
        if not entries:
            self.leaf(lo, hi, path)
            return
        bounds = [lo]
        for _, entry, _ in entries[1:]:
            bounds.append(self.lead(self.char(entry.start_byte), bounds[-1]))
        bounds.append(hi)
        group: list[tuple[int, int, str]] = []
        group_tokens = 0

        def flush() -> None:
            nonlocal group, group_tokens
            if group:
                self.emit(group[0][0], group[-1][1], path + [group[0][2]] if len(group) == 1 else path)
            group, group_tokens = [], 0

        for (key, _, value), start, end in zip(entries, bounds, bounds[1:]):
            tokens = count_tokens(self.text[start:end])
            if tokens > self.budget:
                flush()
                self.cut(start, end, value, path + [key])
                continue
            if group and group_tokens + tokens > self.budget:
                flush()
            group.append((start, end, key))
            group_tokens += tokens
        flush()


def data_spans(text: str, language: str, budget: int, name: str = "") -> list[tuple[int, int, str]]:
    """``(char_start, char_end, key_path)`` of every chunk of a JSON/YAML/TOML file (``name``: for the warning
    that a file too deep to parse is cut as text), in order."""
    if count_tokens(text) <= budget:
        start, end = _trim(text, 0, len(text))
        return [(start, end, "")] if start < end else []
    if _too_deep_to_parse(text, language):
        log.warning("%s: YAML nested too deep for its grammar to parse safely; cut as text", name or "a file")
        return document_spans(text, budget, markdown=False)
    data = text.encode("utf-8")
    tree = grammar_parser(_GRAMMARS[language]).parse(data)
    if tree.root_node.has_error:
        return document_spans(text, budget, markdown=False)
    cutter = _Cutter(text, data, budget)
    cutter.cut(0, len(text), tree.root_node, [])
    return cutter.out


@register_chunker
class StructuredChunker(Chunker):
    """JSON, YAML and TOML files: chunks cut at keys, headed by their key path."""

    name = "structured"
    priority = 15

    def accepts(self, unit: RawUnit) -> bool:
        return unit.content_kind == "doc" and unit.language in DATA_LANGUAGES and available(unit.language)

    def pieces(self, unit: RawUnit) -> list[Piece]:
        out = []
        for start, end, path in data_spans(unit.text, unit.language or "", self.settings.max_tokens, unit.unit_key):
            locator = unit.locator.replace(char_start=start, char_end=end, heading_path=path or None)
            out.append(Piece(unit.text[start:end], locator))
        return out
