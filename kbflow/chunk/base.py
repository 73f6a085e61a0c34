"""The chunker interface, its registry, and the helpers every chunker shares.

A chunker turns one :class:`~kbflow.records.RawUnit` into spans of its text.
Each span is given back as a :class:`Piece`; :func:`chunk_unit` picks the
chunker for a unit and turns pieces into :class:`~kbflow.records.Chunk` records
with stable ids. The invariant every chunker keeps: a chunk's text is exactly
the unit text its locator points at (``text[char_start:char_end]``, or the
lines ``line_start..line_end``), which :mod:`kbflow.retrieve.resolver` checks.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from kbflow.config import ChunkSettings
from kbflow.config.registry import Registry
from kbflow.errors import ConfigError
from kbflow.records import Chunk, Locator, RawUnit, ids

log = logging.getLogger("kbflow")

__all__ = [
    "CHUNKERS",
    "Chunker",
    "Piece",
    "chunk_unit",
    "count_tokens",
    "line_span",
    "line_starts",
    "register_chunker",
]

# word pieces: runs of up to 8 word characters (long words cost more), or one punctuation mark
_TOKEN = re.compile(r"\w{1,8}|[^\w\s]")


def count_tokens(text: str) -> int:
    """A cheap estimate of the number of word-piece tokens in ``text``."""
    return _TOKEN.subn("", text)[1]  # the count, without a list of the matches


def line_starts(text: str) -> list[int]:
    """Char offset of the start of every line (lines end at ``\\n``, as tree-sitter counts rows)."""
    starts = [0]
    find = text.find
    i = find("\n")
    while i != -1:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def line_span(text: str, line_start: int, line_end: int, starts: Sequence[int] | None = None) -> str:
    """Lines ``line_start..line_end`` (1-based, inclusive) of ``text``, without the final line break."""
    starts = line_starts(text) if starts is None else starts
    if not 1 <= line_start <= line_end <= len(starts):
        raise ValueError(f"line span {line_start}-{line_end} outside 1-{len(starts)}")
    begin = starts[line_start - 1]
    end = starts[line_end] - 1 if line_end < len(starts) else len(text)
    out = text[begin:end]
    return out[:-1] if out.endswith("\r") else out


@dataclass(frozen=True)
class Piece:
    """A span of a unit chosen by a chunker, with its locator fields.

    ``context`` is what the chunker knows that the locator does not say and a
    reader of the chunk alone needs (a table's header row, the enclosing
    definition's first line); :func:`chunk_unit` puts it in the chunk's
    context header.
    """

    text: str
    locator: Locator
    context: str | None = None


class Chunker(ABC):
    """Cuts one unit into pieces. Subclasses set ``name`` and register themselves."""

    name: str = ""
    #: dispatch order: lower goes first; the line-window fallback goes last
    priority: int = 50

    def __init__(self, settings: ChunkSettings) -> None:
        self.settings = settings

    @abstractmethod
    def accepts(self, unit: RawUnit) -> bool:
        """Whether this chunker understands ``unit``."""

    @abstractmethod
    def pieces(self, unit: RawUnit) -> list[Piece]:
        """The unit's pieces, in text order, non-overlapping, none empty."""


#: every chunker, by name; a unit goes to the first (by ``priority``) that accepts it
CHUNKERS: Registry[Chunker] = Registry(
    "chunker", builtins=[f"kbflow.chunk.{m}" for m in ("code", "document", "lines", "structured", "table")]
)


def register_chunker(cls: type[Chunker]) -> type[Chunker]:
    """Class decorator: register ``cls`` under ``cls.name`` (duplicates are rejected)."""
    return CHUNKERS.register()(cls)


def chunkers_for(unit: RawUnit, settings: ChunkSettings) -> list[Chunker]:
    """Every registered chunker that accepts ``unit``, by priority (the first is the one that cuts it)."""
    ranked = sorted(CHUNKERS.classes(), key=lambda c: (c.priority, c.name))
    found = [chunker for chunker in (cls(settings) for cls in ranked) if chunker.accepts(unit)]
    if not found:
        raise ConfigError(f"no chunker accepts unit {unit.unit_key!r} of kind {unit.content_kind!r}")
    return found


def unit_pieces(unit: RawUnit, settings: ChunkSettings) -> list[Piece]:
    """``unit``'s pieces from the first chunker that accepts it and can walk it: a structure nested deeper than
    Python's stack allows (a JSON file of 5,000 nested lists) makes a chunker that recurses through it hand the
    unit to the next one (the document chunker then cuts at line ends, code ends at line windows: neither
    recurses), so one such file never fails its source."""
    deepest: RecursionError | None = None
    for chunker in chunkers_for(unit, settings):
        try:
            return chunker.pieces(unit)
        except RecursionError as exc:
            deepest = exc
            log.warning("%s: nested deeper than the %s chunker walks; cut by the next one", unit.unit_key, chunker.name)
    raise deepest or RecursionError(unit.unit_key)


def chunk_unit(unit: RawUnit, settings: ChunkSettings | None = None) -> list[Chunk]:
    """Cut ``unit`` into chunks with stable ids, positions and exact locators."""
    from kbflow.chunk.context import context_header

    settings = settings or ChunkSettings()
    pieces = unit_pieces(unit, settings)
    unit_hash = unit.unit_hash
    seen: dict[str, int] = {}
    out: list[Chunk] = []
    for position, piece in enumerate(pieces):
        chunk_hash = ids.text_hash(piece.text)
        occurrence = seen.get(chunk_hash, 0)
        seen[chunk_hash] = occurrence + 1
        out.append(
            Chunk(
                chunk_id=ids.digest(unit.source_id, unit.unit_key, chunk_hash, str(occurrence)),
                chunk_hash=chunk_hash,
                source_id=unit.source_id,
                unit_hash=unit_hash,
                content_kind=unit.content_kind,
                position=position,
                text=piece.text,
                locator=piece.locator,
                title=unit.title,
                context=context_header(unit, piece.locator, piece.text, piece.context) if settings.context else None,
            )
        )
    return out
